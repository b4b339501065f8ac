"""Every field the installed ollama client can send is classified; a new one fails here until it is."""

from __future__ import annotations

import inspect

import ollama
from ollama import _types

from interlingua.dialects.ollama import controls

MESSAGE_KEYS = {"role", "content", "thinking", "images", "tool_calls", "tool_name"}  # request.MessageReader
TOOL_CALL_KEYS = {"function"}
TOOL_CALL_FUNCTION_KEYS = {"name", "arguments", "index"}
TOOL_KEYS = {"type", "function"}
TOOL_FUNCTION_KEYS = {"name", "description", "parameters"}


def test_chat_request_fields_are_classified():
    known = set(controls.CONTROLS) | controls.EXTENSIONS | controls.STRUCTURAL
    assert set(_types.ChatRequest.model_fields) - known == set()


def test_chat_arguments_are_classified():
    params = set(inspect.signature(ollama.Client.chat).parameters) - {"self"}
    known = set(controls.CONTROLS) | controls.EXTENSIONS | controls.STRUCTURAL
    assert params - known == set()


def test_options_fields_are_classified():
    known = set(controls.OPTION_CONTROLS) | controls.OPTION_EXTENSIONS
    assert set(_types.Options.model_fields) - known == set()
    assert set(controls.OPTION_CONTROLS).isdisjoint(controls.OPTION_EXTENSIONS)


def test_message_and_tool_fields_are_read():
    assert set(_types.Message.model_fields) - MESSAGE_KEYS == set()
    assert set(_types.Message.ToolCall.model_fields) - TOOL_CALL_KEYS == set()
    assert set(_types.Message.ToolCall.Function.model_fields) - TOOL_CALL_FUNCTION_KEYS == set()
    assert set(_types.Tool.model_fields) - TOOL_KEYS == set()
    assert set(_types.Tool.Function.model_fields) - TOOL_FUNCTION_KEYS == set()
