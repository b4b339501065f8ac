"""The shared machinery of dialect encoders.

An encoder is a sink of canonical events that writes the target's bytes as
soon as the target's order allows. What it must hold back goes into the
session's reorder buffer (``Hold``), never into an ad-hoc list.

``MessageAssembler`` writes one target message object whose members are fed
by blocks in whatever order they come: the first member streams straight to
the output; a block for another member is written into that member's hold,
and the held members are appended when the message closes. Member order in a
JSON object carries no meaning, so this is faithful and holds only what the
source put after the first member of the same message.
"""

from __future__ import annotations

from typing import Callable

from .canonical import Event, Extension
from .jsonwriter import JsonWriter
from .reorder import Hold
from .session import Session

Write = Callable[[bytes], None]

_CLOSERS = {b"[": b"]", b"{": b"}", b'"': b'"', b"": b""}
_CONTAINERS = (b"[", b"{")


class Encoder:
    """Base of every dialect encoder."""

    dialect = "?"

    def __init__(self, write: Write, session: Session) -> None:
        self.write = write
        self.session = session

    def on_event(self, event: Event) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """The source ended without an ``End`` event (an error was raised upstream)."""

    def foreign_extension(self, ext: Extension) -> None:
        """An extension of another dialect: lossless ones vanish, others are recorded losses."""
        if not ext.lossless:
            self.session.lose(ext.path, f"{ext.dialect} field has no equivalent in {self.dialect}",
                              dialect=ext.dialect)


class _Member:
    __slots__ = ("writer", "hold", "opener")

    def __init__(self, writer: JsonWriter, hold: Hold | None, opener: bytes) -> None:
        self.writer = writer
        self.hold = hold
        self.opener = opener


class MessageAssembler:
    """One target message object being written; see the module docstring."""

    def __init__(self, out: JsonWriter, session: Session, reason: str) -> None:
        self.out = out
        self.session = session
        self.reason = reason
        self._members: dict[str, _Member] = {}
        self._streaming: _Member | None = None
        self._late_scalars: Hold | None = None
        out.begin_object()

    def scalar(self, key: str, value: bytes) -> None:
        """A small member written whole (role, an id): now, or at close if a member is mid-stream."""
        if self._streaming is None:
            self.out.raw_member(key, value)
            return
        if self._late_scalars is None:
            self._late_scalars = self.session.reorder.hold(self.reason)
        self._late_scalars.append((key, value), len(key) + len(value))

    def trailing(self, key: str, value: bytes) -> None:
        """A small member written when the message closes, whatever else is streaming:
        its place then does not depend on how the input was cut."""
        if self._late_scalars is None:
            self._late_scalars = self.session.reorder.hold(self.reason)
        self._late_scalars.append((key, value), len(key) + len(value))

    def member(self, key: str, opener: bytes) -> JsonWriter:
        """The writer for member ``key`` (``opener`` is ``[``, ``{`` or ``"``), opened on first use.

        Arrays and objects: write elements/members with the writer's methods.
        Strings: write escaped fragments with ``writer.write``.
        """
        member = self._members.get(key)
        if member is None:
            if self._streaming is None:
                if opener in _CONTAINERS:
                    self.out.open_member(key, opener)
                else:  # a string (fragments follow) or a raw value
                    self.out.string_member_open(key) if opener else self.out.raw_member(key, b"")
                member = self._streaming = _Member(self.out, None, opener)
            else:
                hold = self.session.reorder.hold(self.reason)
                writer = JsonWriter(hold.write)
                if opener in _CONTAINERS:
                    writer._first.append(True)
                member = _Member(writer, hold, opener)
            self._members[key] = member
        return member.writer

    def has(self, key: str) -> bool:
        return key in self._members

    def close(self) -> None:
        out = self.out
        if self._streaming is not None:
            opener = self._streaming.opener
            if opener in _CONTAINERS:
                out._first.pop()
            out.write(_CLOSERS[opener])
        for key, member in self._members.items():
            if member.hold is not None:
                out.raw_member(key, member.opener + member.hold.take_bytes() + _CLOSERS[member.opener])
        if self._late_scalars is not None:
            for key, value in self._late_scalars.drain():
                out.raw_member(key, value)
        out.end_object()
