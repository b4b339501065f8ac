"""Responses and streams with every field the installed official clients declare, filled (not null).

Generated from the client models (``client_models.fill``), so they follow a
client upgrade: a field a release adds is in them. Overrides pin only what the
protocol demands (one choice at index 0, tool arguments that are JSON, a
stream's ``message_start`` without content, a tool block's input in deltas).
"""

from __future__ import annotations

import json

import anthropic.types as at
from ollama import ChatResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from client_models import OMIT, fill, type_tag, variant_models

ARGS = '{"a":1}'

OPENAI_RESPONSE_OVERRIDES = {
    "$.choices[].index": 0,
    "$.service_tier": "priority",  # a tier anthropic names too ("auto": a recorded loss, tested on its own)
    "$.usage.total_tokens": 2,  # input + output (1 + 1): a differing total is its own loss
    "$.choices[].message.tool_calls[]<function>.function.arguments": ARGS,
    "$.choices[].message.function_call.arguments": ARGS,  # (legacy: a tool call too)
}
OPENAI_STREAM_OVERRIDES = {
    "$.choices[].index": 0,
    "$.service_tier": "priority",
    "$.usage.total_tokens": 2,
    "$.choices[].delta.role": "assistant",
    "$.choices[].delta.tool_calls[].index": 0,
    "$.choices[].delta.tool_calls[].function.arguments": ARGS,
    "$.choices[].delta.function_call.arguments": ARGS,
}
OLLAMA_OVERRIDES = {
    "$.done_reason": "stop",
    "$.message.role": "assistant",
    "$.message.tool_calls[].function.arguments": {"a": 1},
}


def _sse(event: str | None, data) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (b"" if event is None else b"event: " + event.encode() + b"\n") + b"data: " + text.encode() + b"\n\n"


def openai_response() -> dict:
    return fill(ChatCompletion, OPENAI_RESPONSE_OVERRIDES)


def openai_stream() -> list:
    """One chunk with every field (content, refusal, a tool call, the finish, usage), then [DONE]."""
    return [(None, fill(ChatCompletionChunk, OPENAI_STREAM_OVERRIDES)), (None, "[DONE]")]


def anthropic_response() -> dict:
    return fill(at.Message)


# which delta continues which block (a delta type the client adds and this table lacks fails the test)
DELTAS_FOR = {
    "text": ("text_delta", "citations_delta"),
    "thinking": ("thinking_delta", "signature_delta"),
    "tool_use": ("input_json_delta",),
    "server_tool_use": ("input_json_delta",),
}


def _delta(model, index: int) -> dict:
    tag = type_tag(model)
    overrides = {"$.delta<input_json_delta>.partial_json": ARGS} if tag == "input_json_delta" else {}
    event = fill(at.RawContentBlockDeltaEvent, overrides)
    event["delta"] = fill(model, {"$.partial_json": ARGS})
    event["index"] = index
    return event


def anthropic_stream() -> list:
    """message_start, every content block (start, its deltas, stop), a ping, message_delta, message_stop."""
    deltas = {type_tag(m): m for m in variant_models(at.RawContentBlockDeltaEvent.model_fields["delta"].annotation)}
    events = [("message_start", fill(at.RawMessageStartEvent, {"$.message.content": []})), ("ping", {"type": "ping"})]
    blocks = variant_models(at.RawContentBlockStartEvent.model_fields["content_block"].annotation)
    for index, block in enumerate(blocks):
        tag = type_tag(block)
        start = fill(at.RawContentBlockStartEvent)
        start["index"] = index
        start["content_block"] = fill(block, {"$.input": {}} if tag in DELTAS_FOR and "input" in block.model_fields
                                      else {})
        events.append(("content_block_start", start))
        for name in DELTAS_FOR.get(tag, ()):
            events.append(("content_block_delta", _delta(deltas[name], index)))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", fill(at.RawMessageDeltaEvent)))
    events.append(("message_stop", fill(at.RawMessageStopEvent)))
    return events


def ollama_response() -> dict:
    return fill(ChatResponse, OLLAMA_OVERRIDES)


def ollama_stream() -> list:
    """Two full lines: one ``done: false``, the last ``done: true``."""
    first = fill(ChatResponse, {**OLLAMA_OVERRIDES, "$.done": False})
    return [(None, first), (None, fill(ChatResponse, OLLAMA_OVERRIDES))]


RESPONSES = {"openai": openai_response, "anthropic": anthropic_response, "ollama": ollama_response}
STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream, "ollama": ollama_stream}


def stream_bytes(dialect: str, events: list) -> bytes:
    if dialect == "ollama":
        return b"".join(json.dumps(data).encode() + b"\n" for _, data in events)
    return b"".join(_sse(event if dialect == "anthropic" else None, data) for event, data in events)
