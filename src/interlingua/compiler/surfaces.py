"""The two call surfaces of ADR-0007 D5 and the neutral-to-chat projection.

``chat_request`` and ``run_request`` share ONE ``compile_chat_request`` call
and differ only in execution settings merged after compilation (``run`` adds
``stream: True``); neither re-reads the branch or changes compiled messages.

``to_chat_payload`` is D4's default service projection: an OpenAI-chat-shaped
dict, content exactly as rendered (a string, or a text part followed by
``image_url`` parts). This dict is the seam to the transcoder: a later layer
turns it into canonical events so that any dialect encoder (openai,
anthropic, ollama) can emit a request body without re-compiling history.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .branch import Branch
from .compile import compile_chat_request
from .types import RESERVED_MESSAGES_KEY_ERROR, CompiledChatRequest, TurnRequest

__all__ = ("CHAT_EXECUTION", "RUN_EXECUTION", "chat_request", "run_request", "to_chat_payload")

# Execution settings per surface: the only place chat and run may differ.
CHAT_EXECUTION: Mapping[str, Any] = MappingProxyType({})
RUN_EXECUTION: Mapping[str, Any] = MappingProxyType({"stream": True})


def to_chat_payload(compiled: CompiledChatRequest) -> dict[str, Any]:
    """``{"messages": [{"role", "content"}, ...], **provider_kwargs}``, freshly copied."""
    kwargs = copy.deepcopy(dict(compiled.provider_kwargs))
    if "messages" in kwargs:
        raise ValueError(RESERVED_MESSAGES_KEY_ERROR)
    messages = [
        {"role": message.role.value, "content": copy.deepcopy(message.content)}
        for message in compiled.messages
    ]
    return {"messages": messages, **kwargs}


def chat_request(branch: Branch, request: TurnRequest) -> dict[str, Any]:
    """The plain chat payload for one turn."""
    return _surface_payload(branch, request, CHAT_EXECUTION)


def run_request(branch: Branch, request: TurnRequest) -> dict[str, Any]:
    """The streaming run payload: the chat payload plus ``stream: True``."""
    return _surface_payload(branch, request, RUN_EXECUTION)


def _surface_payload(
    branch: Branch, request: TurnRequest, execution: Mapping[str, Any]
) -> dict[str, Any]:
    payload = to_chat_payload(compile_chat_request(branch, request))
    # Execution settings win over same-named provider kwargs: a run streams.
    payload.update(execution)
    return payload
