"""Typed errors. Each names the dialect, the byte offset and the JSON path.

In a stream, an error inside a frame's JSON counts its offset from that JSON's
first byte and names its path inside it; ``frame_offset`` is where that first
byte is in the stream (one-line ``data:`` frames, the usual kind: the error's
byte is at ``frame_offset + offset``). Errors of the framing itself count from
the stream's start.

A proxy turns a ``TranscodeError`` into the caller's dialect error body; the
``status`` attribute is the HTTP status that fits (400 for bad input, 413 for
budgets).
"""

from __future__ import annotations


class TranscodeError(Exception):
    """Base of every error interlingua raises for bad input or exceeded budgets."""

    status = 400
    kind = "invalid_request_error"

    def __init__(self, message: str, *, dialect: str | None = None, offset: int | None = None,
                 path: str | None = None, frame_offset: int | None = None) -> None:
        self.reason = message
        self.dialect = dialect
        self.offset = offset
        self.path = path
        self.frame_offset = frame_offset
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.dialect:
            where.append(self.dialect)
        if self.frame_offset is not None:
            inside = f"byte {self.offset} of " if self.offset is not None else "in "
            where.append(f"{inside}the frame at stream byte {self.frame_offset}")
        elif self.offset is not None:
            where.append(f"byte {self.offset}")
        if self.path:
            where.append(f"at {self.path}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def locate(self, *, dialect: str | None = None, path: str | None = None,
               frame_offset: int | None = None, offset: int | None = None) -> "TranscodeError":
        """Fill in what the raising stage did not know; returns ``self``."""
        if dialect and not self.dialect:
            self.dialect = dialect
        if offset is not None and self.offset is None:
            self.offset = offset
        if path and not self.path:
            self.path = path
        if frame_offset is not None and self.frame_offset is None:
            self.frame_offset = frame_offset
        self.args = (self._render(),)
        return self

    def to_dict(self) -> dict:
        return {
            "error": type(self).__name__,
            "message": self.reason,
            "dialect": self.dialect,
            "offset": self.offset,
            "path": self.path,
            "frame_offset": self.frame_offset,
        }


class JsonSyntaxError(TranscodeError):
    """Malformed JSON: an unexpected byte, a bad escape, trailing garbage."""


class InvalidUtf8Error(JsonSyntaxError):
    """Bytes that are not UTF-8 (incl. overlong forms and encoded surrogates)."""


class ControlCharacterError(JsonSyntaxError):
    """A raw control character (< 0x20) inside a string."""


class TruncatedInputError(JsonSyntaxError):
    """Input ended (``close()``) before the JSON value was complete."""


class NestingTooDeepError(TranscodeError):
    """Containers nested deeper than the configured limit."""

    status = 413


class SchemaError(TranscodeError):
    """Valid JSON of the wrong shape: wrong type, missing required field."""


class DuplicateKeyError(SchemaError):
    """An object has the same key twice (any object of the input, at any depth)."""


class LoneSurrogateError(SchemaError):
    """An escaped lone surrogate (``"\\ud800"``) in a value that must be Unicode text
    (an id, a name, a type): valid JSON, but no UTF-8 output can carry it."""


class LossError(TranscodeError):
    """Strict mode: a field could not be carried into the target dialect."""


class NoMessageError(LossError):
    """A request's messages were all lost on the way (or all moved out of the list: openai
    system messages go to anthropic's top-level ``system``): raised at the body's end, the
    losses recorded, instead of writing a request the target API rejects (openai, anthropic)
    or reads as another request (ollama loads the model for an empty list, and answers
    nothing). (A source whose list was empty already gets its empty list: the target answers
    it as the source's API would.)"""


class BudgetExceededError(TranscodeError):
    """Something had to be held (reordering, a key, a number) beyond its byte budget."""

    status = 413
    kind = "request_too_large"


class ReorderRefusedError(BudgetExceededError):
    """Strict ordering: the input needs reordering and reordering is refused."""
