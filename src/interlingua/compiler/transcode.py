"""Layering the compiler onto the transcoder (ADR-0007 on interlingua).

A compiled request is a non-streaming producer of the same canonical events a
dialect decoder yields: one block per text or image, blocks of one message
sharing its index, controls from ``provider_kwargs`` (read with the openai
names, the shape lionagi's provider kwargs have). Any dialect encoder then
writes the request body. ``chat_body`` and ``run_body`` share one compilation
and differ only in execution settings (``run`` adds ``stream: true``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..canonical import (
    Block, End, Event, Extension, MessagesEnd, Section, SystemEnd, escape_text,
)
from ..dialects.openai import controls as openai_controls
from ..jsonwriter import dumps
from ..pipeline import Encoder
from ..session import Options
from .branch import Branch
from .compile import compile_chat_request
from .surfaces import CHAT_EXECUTION, RUN_EXECUTION
from .types import RESERVED_MESSAGES_KEY_ERROR, CompiledChatRequest, TurnRequest

__all__ = ("compiled_events", "encode_compiled", "chat_body", "run_body")

_TEXT_SECTION = {"user": Section.USER_TEXT, "assistant": Section.ASSISTANT_TEXT}


def compiled_events(compiled: CompiledChatRequest,
                    execution: Mapping[str, Any] = CHAT_EXECUTION) -> Iterator[Event]:
    """The canonical event stream of a compiled request."""
    yield SystemEnd()  # the compiler folds system text into the first instruction
    for index, message in enumerate(compiled.messages):
        yield from _message_blocks(index, message.role.value, message.content)
    yield MessagesEnd()
    kwargs = {**compiled.provider_kwargs, **execution}
    if "messages" in kwargs:
        raise ValueError(RESERVED_MESSAGES_KEY_ERROR)
    for key, value in kwargs.items():
        raw = dumps(value)
        control = openai_controls.decode(key, raw)
        yield control if control is not None else Extension("openai", "$." + key, raw)
    yield End()


def _message_blocks(index: int, role: str, content: Any) -> Iterator[Block]:
    section = _TEXT_SECTION.get(role)
    if section is None:
        raise TypeError(f"compiled message with role {role!r} has no canonical section")
    if isinstance(content, str):
        yield Block(section, index, escape_text(content))
        return
    for part in content:
        if part.get("type") == "text":
            yield Block(section, index, escape_text(part["text"]), attrs={"in_parts": True})
        elif part.get("type") == "image_url":
            yield _image_block(index, part["image_url"])
        else:
            raise TypeError(f"compiled content part of type {part.get('type')!r} has no canonical section")


def _image_block(index: int, image: Mapping[str, Any]) -> Block:
    url = image["url"]
    attrs: dict[str, Any] = {"in_parts": True}
    head, comma, data = url.partition(",")
    if url.startswith("data:") and comma and head.endswith(";base64"):
        attrs.update(source="base64", media_type=head[5:-7], data_url=True)
        payload = data
    else:
        attrs["source"] = "url"
        payload = url
    if image.get("detail") is not None:
        attrs["detail"] = image["detail"]
    return Block(Section.USER_IMAGE, index, escape_text(payload), attrs=attrs)


def encode_compiled(compiled: CompiledChatRequest, target: str, *,
                    execution: Mapping[str, Any] = CHAT_EXECUTION,
                    options: Options | None = None) -> tuple[bytes, Encoder]:
    """The request body of ``target`` for a compiled request, and the encoder that wrote it
    (its ``losses``, ``reorder``, ``tool_names``). ``interlingua.Encoder``: native on the
    native backend. The events are read with the openai names (``source="openai"``)."""
    encoder = Encoder(target, source="openai", options=options)
    body = encoder.feed(compiled_events(compiled, execution)) + encoder.close()
    return body, encoder


def chat_body(branch: Branch, request: TurnRequest, target: str, *,
              options: Options | None = None) -> bytes:
    """Plain chat surface: compile once, encode for ``target``."""
    return encode_compiled(compile_chat_request(branch, request), target,
                           execution=CHAT_EXECUTION, options=options)[0]


def run_body(branch: Branch, request: TurnRequest, target: str, *,
             options: Options | None = None) -> bytes:
    """Streaming run surface: the same compilation, ``stream: true``."""
    return encode_compiled(compile_chat_request(branch, request), target,
                           execution=RUN_EXECUTION, options=options)[0]
