"""Framing: SSE and NDJSON, push-style, for streamed responses.

A streamed response is a sequence of *frames* -- an SSE event, an NDJSON
line -- whose data is one JSON document each. The framing decoders split the
byte stream into frames without holding them: the data of a frame is handed on
(``sink.frame_data``) as it arrives, so a 100 KB ``data:`` line costs no more
memory than the chunk that carries it. Only the short things are held whole:
a field name, the value of an ``event:``/``id:``/``retry:`` line (bounded by
``max_line``).

The sink protocol (``pipeline`` implements it)::

    sink.frame_data(data: bytes)       # data bytes of the current frame
    sink.frame_end(event: str | None)  # the frame is complete (SSE: its event name)

During ``frame_data`` the framer's ``data_at`` is the stream offset of the
bytes handed on (for errors: where a frame's JSON starts in the stream).

SSE rules followed (WHATWG "event stream interpretation"): lines end with CR,
LF or CRLF (a CRLF cut between two chunks is one line end); a line starting
with ``:`` is a comment; ``field:value`` with one optional space after the
colon; several ``data:`` lines of one event are joined with ``\\n``; a blank
line dispatches the event, an event without data is not dispatched; ``id:``
and ``retry:`` are kept (``last_event_id``, ``retry``) and do not reach the
decoders; unknown fields are ignored. At end of input an event that has data
but no blank line yet is dispatched (the spec discards it; a proxy would
rather fail loudly in the dialect decoder than lose a frame silently).

The encoders (``sse_event`` / ``ndjson_line`` and the streaming
``SSE_DATA`` prefix) write compact JSON, which never holds a raw line break,
so one ``data:`` line per event is always enough. An NDJSON line also escapes
what Python's line readers end a line at (``ndjson_safe``).
"""

from __future__ import annotations

import re
from typing import Protocol

import msgspec

from .errors import BudgetExceededError

__all__ = ["FrameEnd", "SseDecoder", "NdjsonDecoder", "sse_event", "sse_open", "SSE_END",
           "ndjson_line", "ndjson_safe", "DEFAULT_MAX_LINE"]

DEFAULT_MAX_LINE = 1 << 20
_MAX_FIELD_NAME = 64
_NON_WS = re.compile(rb"[^ \t\r\n]")


class FrameEnd(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="frame-end"):
    """Canonical marker: the source frame (SSE event, NDJSON line) ended.

    Streaming encoders close the output frame they have open, so one source
    frame makes one output frame whatever the input's chunking was -- the
    output is byte-identical across chunk sizes. Non-streaming encoders
    ignore it.
    """


class FrameSink(Protocol):
    def frame_data(self, data: bytes) -> None: ...
    def frame_end(self, event: str | None) -> None: ...


# SSE line states
_FIELD = 0  # reading a field name (start of a line)
_DATA_SPACE = 1  # after "data:", an optional space may follow
_DATA = 2  # inside a data line: bytes go straight to the sink
_VALUE = 3  # inside the value of a field held whole (event, id, retry)
_COMMENT = 4  # inside a comment line (or an unknown field): skipped
_HELD_FIELDS = (b"event", b"id", b"retry")


#: a UTF-8 byte order mark: not part of an SSE stream that begins with one
_BOM = b"\xef\xbb\xbf"


class SseDecoder:
    """Server-sent events -> frames. ``feed(bytes)``, then ``close()``."""

    def __init__(self, sink: FrameSink, *, max_line: int = DEFAULT_MAX_LINE, dialect: str | None = None) -> None:
        self.sink = sink
        self.max_line = max_line
        self.dialect = dialect
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self.offset = 0  # bytes consumed, for errors
        self.data_at = 0  # stream offset of the data being handed on (see the module docstring)
        self._state = _FIELD
        self._name = b""  # field name being read (bounded)
        self._value = b""  # value of a held field (bounded)
        self._skip_lf = False  # the last line ended with CR: a following LF belongs to it
        self._event: str | None = None
        self._has_data = False  # the current event has had a data line
        self._line_empty = True  # nothing but the line end so far on this line
        self._first: bytes | None = b""  # the stream's first bytes while they may be its BOM (None: past)

    @property
    def event(self) -> str | None:
        """The current event's name as far as read (an ``event:`` line may also follow its data)."""
        return self._event

    def feed(self, data: bytes) -> None:
        if self._first is not None:
            data = self._past_bom(data)
        i, n = 0, len(data)
        base = self.offset
        lf = -1  # the next LF at or after i (n: none in the chunk)
        has_cr = b"\r" in data  # most streams end lines with LF alone
        while i < n:
            if self._skip_lf:
                self._skip_lf = False
                if data[i] == 10:
                    i += 1
                    continue
            state = self._state
            # j: the line's end, the first CR or LF (n: the chunk ends first). Two finds
            # cost less than a regex search; the LF is searched again only once passed,
            # so lines ended by CR alone stay linear.
            if lf < i:
                lf = data.find(b"\n", i)
                if lf < 0:
                    lf = n
            if not has_cr and lf < n and state == _FIELD and self._line_empty:
                i = self._lf_lines(data, i, lf, base)  # the usual case: whole lines, one after another
                continue
            cr = data.find(b"\r", i, lf)
            j = lf if cr < 0 else cr
            if j < n and state == _FIELD and self._line_empty:
                # The usual case: a whole line in this chunk, handled in one step.
                self._whole_line(data, i, j, base)
                self._skip_lf = data[j] == 13
                i = j + 1
                continue
            if state == _DATA:
                if j > i:
                    self.data_at = base + i
                    self.sink.frame_data(data[i:j])
            elif state == _DATA_SPACE:
                if j > i:
                    start = i + 1 if data[i] == 32 else i
                    self._state = _DATA
                    if j > start:
                        self.data_at = base + start
                        self.sink.frame_data(data[start:j])
            elif state == _VALUE:
                self._value += data[i:j]
                if len(self._value) > self.max_line:  # the line began len(_value) bytes before j
                    self._line_too_long(base + j - len(self._value))
            elif state == _FIELD:
                colon = data.find(b":", i, j)
                end = colon if colon >= 0 else j
                if end > i:
                    self._line_empty = False
                self._name += data[i:end]
                if len(self._name) > _MAX_FIELD_NAME:  # the name began len(_name) bytes before end
                    self._name_too_long(base + end - len(self._name))
                if colon >= 0:
                    self._line_empty = False
                    self._field_started()
                    i = colon + 1
                    continue
            # _COMMENT: skip
            if j == n:
                break
            self._line_end()
            if data[j] == 13:
                self._skip_lf = True
            i = j + 1
        self.offset = base + n

    def _past_bom(self, data: bytes) -> bytes:
        """``data`` without the stream's leading UTF-8 BOM, which the SSE standard decodes
        away (it was read as part of the first field's name, and that event dropped with
        nothing said). The first bytes are held while they may still be one."""
        first = self._first + data if self._first else data  # (the first chunk is not copied)
        if len(first) < len(_BOM) and _BOM.startswith(first):
            self._first = first
            return b""
        self._first = None
        if first.startswith(_BOM):
            self.offset = len(_BOM)  # (offsets stay the stream's: its data begins after the BOM)
            return first[len(_BOM):]
        return first

    def _lf_lines(self, data: bytes, i: int, j: int, base: int) -> int:
        """The whole lines from ``i`` (a line start; ``j`` its LF) of a chunk without
        CR; returns where the unfinished line after them begins. What the loop of
        ``feed`` does line by line, with less bookkeeping: the state stays _FIELD."""
        while j >= 0:
            if j == i:
                self._dispatch()  # a blank line
            else:
                self._whole_line(data, i, j, base)
            i = j + 1
            j = data.find(b"\n", i)
        return i

    def _whole_line(self, data: bytes, i: int, j: int, base: int) -> None:
        """The line ``data[i:j]`` (its end in this chunk): what the states would do, in one step."""
        if i == j:
            self._dispatch()
            return
        colon = data.find(b":", i, j)
        end = colon if colon >= 0 else j
        if end - i > _MAX_FIELD_NAME:
            self._name_too_long(base + i)
        name = data[i:end]
        if name == b"data":
            self._data_line()
            start = colon + 1 if colon >= 0 else j
            if start < j and data[start] == 32:
                start += 1
            if j > start:
                self.data_at = base + start
                self.sink.frame_data(data[start:j])
        elif name in _HELD_FIELDS:
            if j - i > self.max_line:
                self._line_too_long(base + i)
            self._held_field(name, data[end + 1:j])
        # else a comment (empty name) or an unknown field: ignored

    # Errors name the byte that broke the limit, counted from the line's start:
    # the same wherever the chunks were cut. Every framing limit is a budget (413).

    def _name_too_long(self, line_start: int) -> None:
        raise BudgetExceededError("SSE field name too long", dialect=self.dialect,
                              offset=line_start + _MAX_FIELD_NAME)

    def _line_too_long(self, line_start: int) -> None:
        raise BudgetExceededError(f"SSE field line longer than max_line ({self.max_line})",
                                  dialect=self.dialect, offset=line_start + self.max_line)

    def _field_started(self) -> None:
        name = self._name
        self._name = b""
        if name == b"data":
            self._data_line()
            self._state = _DATA_SPACE
        elif name in _HELD_FIELDS:
            self._state = _VALUE
            self._value = name + b":"
        else:  # a comment (empty name) or an unknown field: ignored
            self._state = _COMMENT

    def _data_line(self) -> None:
        if self._has_data:
            self.sink.frame_data(b"\n")  # data lines of one event are joined with LF
        self._has_data = True

    def _line_end(self) -> None:
        state = self._state
        if state == _FIELD:
            if self._line_empty:
                self._dispatch()
            elif self._name:  # a field name without colon: the whole line is the name, value ""
                self._field_started()
                if self._state == _DATA_SPACE:
                    pass  # an empty data line: contributes "" (the join LF was written)
                elif self._state == _VALUE:
                    self._held_field(*self._held_value())
        elif state == _VALUE:
            self._held_field(*self._held_value())
        self._state = _FIELD
        self._name = b""
        self._line_empty = True

    def _held_value(self) -> tuple[bytes, bytes]:
        name, _, value = self._value.partition(b":")
        self._value = b""
        return name, value

    def _held_field(self, name: bytes, value: bytes) -> None:
        if value.startswith(b" "):
            value = value[1:]
        text = value.decode("utf-8", "replace")
        if name == b"event":
            self._event = text
        elif name == b"id":
            if "\x00" not in text:
                self.last_event_id = text
        elif text.isascii() and text.isdigit():  # ASCII digits only (WHATWG; int() refuses '²')
            self.retry = int(text)

    def _dispatch(self) -> None:
        if self._has_data:
            event, self._event = self._event, None
            self._has_data = False
            self.sink.frame_end(event)
        else:
            self._event = None

    def close(self) -> None:
        """End of input: a pending line ends; an event with data is dispatched."""
        if self._first:  # (the stream ended inside what could have been a BOM: its bytes are data)
            first, self._first = self._first, None
            self.feed(first)
        if not self._line_empty or self._state != _FIELD:
            self._line_end()
        self._dispatch()


class NdjsonDecoder:
    """Newline-delimited JSON -> frames: one non-blank line, one frame.

    Whitespace before a line's first byte is skipped, so blank lines (and CRLF
    line ends) make no frames; a last line without its newline is a frame.
    """

    def __init__(self, sink: FrameSink, *, dialect: str | None = None) -> None:
        self.sink = sink
        self.dialect = dialect
        self.offset = 0
        self.data_at = 0  # stream offset of the data being handed on (see the module docstring)
        self._in_line = False  # a non-blank line has started

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        base = self.offset
        while i < n:
            if not self._in_line:
                m = _NON_WS.search(data, i)
                if m is None:
                    break
                i = m.start()
                self._in_line = True
            j = data.find(b"\n", i)
            self.data_at = base + i
            if j < 0:
                self.sink.frame_data(data[i:])
                break
            if j > i:
                self.sink.frame_data(data[i:j])
            self._in_line = False
            self.sink.frame_end(None)
            i = j + 1
        self.offset += n

    def close(self) -> None:
        if self._in_line:
            self._in_line = False
            self.sink.frame_end(None)


# -- encoders ---------------------------------------------------------------------

SSE_END = b"\n\n"


def sse_open(event: str | None) -> bytes:
    """The head of an SSE event up to the start of its data (data and ``SSE_END`` follow)."""
    if event is None:
        return b"data: "
    return b"event: " + event.encode() + b"\ndata: "


def sse_event(event: str | None, data: bytes) -> bytes:
    """One whole SSE event; ``data`` is compact JSON (no line breaks)."""
    return sse_open(event) + data + SSE_END


def ndjson_line(data: bytes) -> bytes:
    return data + b"\n"


#: Characters JSON may hold raw in a string but Python's line readers end a line at
#: (``str.splitlines``, so httpx's ``iter_lines``, which the ollama client reads NDJSON with).
#: Ollama's server (Go) writes U+2028 and U+2029 escaped; an NDJSON encoder writes all three so.
_LINE_BREAKERS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"), (b"\xc2\x85", b"\\u0085"))


def one_line(text: bytes) -> bytes:
    """A JSON text as part of one NDJSON line: its raw CR and LF -- whitespace between its tokens
    (a model's pretty-printed tool arguments, carried as they came), since a string holds them
    escaped -- as spaces."""
    if b"\n" in text or b"\r" in text:
        return text.replace(b"\n", b" ").replace(b"\r", b" ")
    return text


def ndjson_safe(data: bytes) -> bytes:
    """``data`` (compact JSON of whole characters) with U+2028, U+2029 and U+0085 escaped."""
    if b"\xe2\x80" in data or b"\xc2\x85" in data:
        for raw, escaped in _LINE_BREAKERS:
            data = data.replace(raw, escaped)
    return data
