"""The ADR-0007 D1 contract: typed inputs and outputs of the turn compiler.

Field names, types, defaults, frozenness and slots follow the ADR exactly,
with two substitutions that keep pydantic out of the runtime:
``response_format`` takes a dict, a msgspec.Struct/dataclass type or an
instance of one (see ``structure.py``), and ``structure`` takes our own
:class:`~interlingua.compiler.structure.Structure` subclasses.

Frozen fields cannot be reassigned, but nested dicts and lists stay mutable;
the compiler therefore deep-copies everything it keeps.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from uuid import UUID

from .messages import Instruction, MessageRole
from .structure import Structure

__all__ = (
    "RESERVED_MESSAGES_KEY_ERROR",
    "CompiledChatRequest",
    "CompiledMessage",
    "ContextBlock",
    "TurnRequest",
)

RESERVED_MESSAGES_KEY_ERROR = "provider_kwargs must not contain reserved key 'messages'"


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """One provider's retrieved text; data, never preformatted policy (D3).

    Empty fields are refused at construction: the provider registry is
    expected to omit empty results before it builds blocks.
    """

    provider_name: str
    content: str

    def __post_init__(self) -> None:
        for name in ("provider_name", "content"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"ContextBlock.{name} must be a str, got {type(value).__name__}")
        if not self.provider_name:
            raise ValueError("ContextBlock.provider_name must be a non-empty string")
        if not self.content:
            raise ValueError(
                f"ContextBlock.content must be a non-empty string (provider {self.provider_name!r})"
            )


@dataclass(frozen=True, slots=True)
class CompiledMessage:
    role: MessageRole
    content: str | list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    instruction: Instruction
    progression: tuple[UUID, ...] | None = None
    tool_schemas: tuple[dict[str, Any], ...] = ()
    response_format: dict[str, Any] | type | Any | None = None
    structure: type[Structure] | str | None = None
    context_blocks: tuple[ContextBlock, ...] = ()
    provider_kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class CompiledChatRequest:
    """The compiled turn: the record-ready instruction and neutral messages.

    ``provider_kwargs`` is always a read-only mapping over a private deep
    copy (a caller's MappingProxyType may still front a dict the caller
    mutates), and ``messages`` always a tuple.
    """

    instruction: Instruction
    messages: tuple[CompiledMessage, ...]
    provider_kwargs: Mapping[str, Any]

    def __post_init__(self) -> None:
        if "messages" in self.provider_kwargs:
            raise ValueError(RESERVED_MESSAGES_KEY_ERROR)
        owned = MappingProxyType(copy.deepcopy(dict(self.provider_kwargs)))
        object.__setattr__(self, "provider_kwargs", owned)
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
