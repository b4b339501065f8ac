"""Message storage (records by id, order, the system message) and the branch.

The manager owns membership and order only (ADR-0006 boundary): it knows
nothing about prompts, tool schemas or providers. The compiler reads a branch
through ``branch.msgs.messages``, ``branch.msgs.system`` and
``branch.progression``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from .messages import Message, System

__all__ = ("Branch", "MessageManager")


class MessageManager:
    """Records by id, the stored progression, and at most one system message.

    The system message, when present, sits at progression index 0.
    """

    __slots__ = ("messages", "progression", "system")

    def __init__(self, system: System | None = None) -> None:
        self.messages: dict[UUID, Message] = {}
        self.progression: list[UUID] = []
        self.system: System | None = None
        if system is not None:
            self.set_system(system)

    def add_message(self, message: Message) -> Message:
        """Append a record; a System replaces the canonical system message."""
        if not isinstance(message, Message):
            raise TypeError(f"expected a Message, got {type(message).__name__}")
        if isinstance(message, System):
            return self.set_system(message)
        if message.id in self.messages:
            raise ValueError(f"message {message.id} is already in this branch")
        self.messages[message.id] = message
        self.progression.append(message.id)
        return message

    def set_system(self, system: System) -> System:
        """Install ``system`` as the branch's system message at index 0."""
        if self.system is not None:
            del self.messages[self.system.id]
            self.progression.remove(self.system.id)
        self.system = system
        self.messages[system.id] = system
        self.progression.insert(0, system.id)
        return system

    def __contains__(self, message_id: object) -> bool:
        return message_id in self.messages

    def __len__(self) -> int:
        return len(self.messages)


class Branch:
    """A conversation: a message manager plus branch metadata.

    ``metadata["current_progression"]``, when set (present and not None),
    overrides the stored progression as the branch's effective history view
    (ADR-0006); an empty override is an empty view.
    """

    __slots__ = ("metadata", "msgs")

    def __init__(
        self,
        *,
        system: System | None = None,
        messages: Iterable[Message] = (),
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.msgs = MessageManager(system=system)
        self.metadata: dict[str, Any] = {} if metadata is None else metadata
        for message in messages:
            self.msgs.add_message(message)

    @property
    def progression(self) -> tuple[UUID, ...]:
        """The effective progression: the override when set, else the stored one."""
        override = self.metadata.get("current_progression")
        if override is None:
            return tuple(self.msgs.progression)
        return tuple(_as_uuid(item) for item in override)

    def add_message(self, message: Message) -> Message:
        return self.msgs.add_message(message)


def _as_uuid(value: Any) -> UUID:
    # Metadata often comes back from JSON, where ids are strings.
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        return UUID(value)
    raise TypeError(f"current_progression items must be UUIDs, got {type(value).__name__}")
