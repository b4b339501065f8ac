"""Writing JSON incrementally, for encoders; re-serialising tokens, for decoders.

``JsonWriter`` keeps only the separators' state (one flag per open
container), so an encoder can write a string it is still receiving fragment by
fragment. ``RawValue`` turns tokenizer events back into compact JSON text:
strings and numbers are copied as they arrived (escapes kept), so the result
is JSON-equal to the input and a string's bytes are never re-encoded.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable

from . import json as tok

Write = Callable[[bytes], None]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":")).encode


def dumps(value: Any) -> bytes:
    """Compact JSON of a small Python value (attributes, controls)."""
    try:
        return _dumps(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from a "\ud83d" escape): written escaped, as it came
        return _dumps_ascii(value).encode("ascii")


def key_bytes(key: str) -> bytes:
    """A member name (or a role) as a JSON string.

    Encoders write the same few names for every message: short ones come from
    a small cache. Long names (input keys may have up to ``max_key_bytes``) are
    encoded each time, so what the cache keeps stays small whatever the input."""
    if type(key) is str and len(key) <= 32:
        return _short_name(key)
    return dumps(key)


@lru_cache(maxsize=256)
def _short_name(key: str) -> bytes:
    return dumps(key)


class JsonWriter:
    """Writes one JSON document to ``write``, element by element."""

    __slots__ = ("write", "_first")

    def __init__(self, write: Write) -> None:
        self.write = write
        self._first: list[bool] = []  # per open container: nothing written in it yet

    def _sep(self) -> bytes:
        """What goes before the next item of the open container: ``,`` or nothing.

        Written with the item, in one call: writes may go into a hold, each counted."""
        first = self._first
        if first:
            if first[-1]:
                first[-1] = False
                return b""
            return b","
        return b""

    def _separate(self) -> None:
        sep = self._sep()
        if sep:
            self.write(sep)

    def begin_object(self, head: bytes = b"") -> None:
        """``{``, and ``head``: the object's first members as JSON text (``"k":v``), if any."""
        self.write(self._sep() + b"{" + head)
        self._first.append(not head)

    def end_object(self) -> None:
        self._first.pop()
        self.write(b"}")

    def end_array(self) -> None:
        self._first.pop()
        self.write(b"]")

    def raw_member(self, name: str, raw: bytes) -> None:
        self.write(self._sep() + key_bytes(name) + b":" + raw)

    def open_member(self, name: str, opener: bytes) -> None:
        """``"name":{`` / ``"name":[`` -- a container member written piecewise."""
        self.write(self._sep() + key_bytes(name) + b":" + opener)
        self._first.append(True)

    def raw_element(self, raw: bytes) -> None:
        """A whole JSON value as an array element."""
        self.write(self._sep() + raw)

    def string_member_open(self, name: str) -> None:
        """``"name":"`` -- a string member whose escaped fragments the caller writes."""
        self.write(self._sep() + key_bytes(name) + b':"')


class RawValue:
    """Feeds on tokenizer events of one JSON value; writes its compact text to ``write``.

    ``feed`` returns True once the value is complete.
    """

    __slots__ = ("write", "_depth", "_after_key", "_first")

    def __init__(self, write: Write) -> None:
        self.write = write
        self._depth = 0
        self._first = True  # nothing written at this level yet (no comma needed)

    def feed(self, kind: int, value: Any, offset: int) -> bool:
        write = self.write
        if kind == tok.KEY:
            write((b"" if self._first else b",") + key_bytes(value) + b":")
            self._first = True  # the member's value follows without a comma
            return False
        if kind == tok.OBJECT_END or kind == tok.ARRAY_END:
            write(b"}" if kind == tok.OBJECT_END else b"]")
            self._depth -= 1
            self._first = False
            return self._depth == 0
        if kind == tok.STRING_PART:
            write(value)
            return False
        if kind == tok.STRING_CLOSE:
            write(value + b'"')
            self._first = False
            return self._depth == 0
        sep = b"" if self._first else b","
        if kind == tok.OBJECT_START or kind == tok.ARRAY_START:
            write(sep + (b"{" if kind == tok.OBJECT_START else b"["))
            self._depth += 1
            self._first = True
            return False
        if kind == tok.STRING_OPEN:
            write(sep + b'"' + value)
            return False
        if kind == tok.STRING:
            write(sep + b'"' + value + b'"')
        elif kind == tok.NUMBER:
            write(sep + value)
        else:
            write(sep + LITERAL_TEXT[kind])
        self._first = False
        return self._depth == 0


LITERAL_TEXT = {tok.TRUE: b"true", tok.FALSE: b"false", tok.NULL: b"null"}
