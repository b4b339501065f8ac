"""Same-dialect responses and streams: the input is the output.

A response or stream transcoded into its own dialect is copied, not
re-encoded: every member of the body and of every frame passes through as it
came -- fields no canonical event holds (``logprobs``, ``system_fingerprint``,
``usage.server_tool_use`` ...), pings, empty deltas, interleaved tool-call
deltas, and fields a future API release adds. The dialect decoder still reads
every byte, so bad input raises the same typed ``TranscodeError`` (dialect,
offset, path) as any other pair, and nothing is emitted past the point the
decoder accepted: the output is a prefix of the input that the decoder has
validated.

* **Body** (kind ``response``): each chunk is written once the decoder has
  consumed it -- streaming, memory bounded by the chunk. An abort before any
  byte went out writes the dialect's error body; after that the body cannot
  be mended (as for the re-encoding encoders).
* **Stream**: frames are re-framed from what the framer hands on (the data
  bytes and the event name), so each source frame makes one output frame
  with the same event name and the same data bytes. Not copied: SSE comments,
  ``id:``/``retry:`` lines, blank NDJSON lines and line-end styles (framing,
  not content). A frame is written when the decoder accepted its end, so an
  abort adds the dialect's error frame after whole frames. Frame data beyond
  ``FRAME_HOLD`` bytes is written as it arrives (bounded memory); an abort
  inside such a frame ends it (``_BROKEN_END``: its line and frame end, so the
  error frame after it is read as a frame of its own), then adds the error frame.
  After the source's last event (or its own error event) an abort adds no error event:
  the output has ended, as a re-encoding encoder's has after its end.

``Session.passthrough`` is set: nothing can be lost, so the decoder's loss
records (fields other dialects cannot hold) are not made.
"""

from __future__ import annotations

from .canonical import Error, Event
from .dialects import codecs
from .session import Session

#: frame data held until the frame's end (for a clean abort); longer frames stream
FRAME_HOLD = 64 * 1024

#: How an abort ends a frame already partly on the wire, by dialect. Its data
#: cannot be mended, so its line (and SSE frame) is ended: the error frame that
#: follows is a frame of its own. Anthropic's renames it ``ping``, which the
#: anthropic client skips unread, so the client raises the error event's API
#: error; the openai and ollama clients parse every frame's data, so they fail
#: on the broken one (a JSON decode error) before the error frame.
_BROKEN_END = {"anthropic": b"\nevent: ping\n\n", "openai": b"\n\n", "ollama": b"\n"}


class _Copy:
    def __init__(self, write, session: Session) -> None:
        self.write = write
        self.session = session
        self.done = False  # the source ended normally (or an abort was written)

    def on_event(self, event: Event) -> None:
        """The decoder's canonical events: the copy needs none of them."""

    def finished(self, decoder) -> None:
        """The source ended and the decoder accepted it."""
        self.done = True

    def _error_output(self, error: Error, kind: str) -> None:
        """The dialect's own error output, from its encoder (which has written nothing)."""
        _, encoder_cls = codecs(self.session.target, kind)
        encoder_cls(self.write, self.session).abort(error)


class BodyCopy(_Copy):
    """A response body, chunk by chunk."""

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.written = False

    def data(self, chunk: bytes) -> None:
        if chunk:
            self.written = True
            self.write(chunk)

    def abort(self, error: Error, source_end: bytes | None = None) -> None:
        if self.done:
            return
        self.done = True
        if not self.written:
            self._error_output(error, "response")


class FrameCopy(_Copy):
    """A stream, frame by frame (SSE or NDJSON, as the source)."""

    def __init__(self, write, session: Session, framing: str) -> None:
        super().__init__(write, session)
        self.sse = framing == "sse"
        self.held: list[bytes] = []  # the current frame's output, until its end
        self.held_size = 0
        self.open = False  # a frame has started (its head is held or written)
        self.streaming = False  # the current frame is past FRAME_HOLD: written as it comes
        self.head_event: str | None = None  # the event name its head carried

    def frame_data(self, data: bytes, event: str | None) -> None:
        """Data of the current frame, as the framer handed it on; ``event`` the name seen so far."""
        if not self.open:
            self.open = True
            self.head_event = event
            head = b"data: " if event is None else b"event: " + event.encode() + b"\ndata: "
            self._out(head if self.sse else b"")
        if self.sse and b"\n" in data:  # the framer joins data lines with LF: a new data line
            data = data.replace(b"\n", b"\ndata: ")
        self._out(data)

    def _out(self, data: bytes) -> None:
        if self.streaming:
            self.write(data)
            return
        self.held.append(data)
        self.held_size += len(data)
        if self.held_size > FRAME_HOLD:
            self.streaming = True
            self._release()

    def _release(self) -> None:
        if self.held:
            self.write(b"".join(self.held))
            self.held.clear()
            self.held_size = 0

    def frame_end(self, event: str | None) -> None:
        """The decoder accepted the frame: it goes out whole."""
        if not self.open:
            return
        tail = b"\n"
        if self.sse:
            tail = (b"\nevent: " + event.encode() if event != self.head_event and event is not None else b"") \
                + b"\n\n"
        self._out(tail)
        self._release()
        self.open = self.streaming = False
        self.head_event = None

    def finished(self, decoder) -> None:
        super().finished(decoder)
        self.write(decoder.missing_terminator())  # openai: [DONE] when the source had none

    def abort(self, error: Error, source_end: bytes | None = None) -> None:
        """``source_end``: None while the source has not said all; after its last event or its
        error event, what a copy adds at its end (``missing_terminator``: openai's ``[DONE]``)."""
        if self.done:
            return
        self.done = True
        if self.streaming:  # inside a frame already on the wire: end it, broken
            self.write(_BROKEN_END[self.session.target])
            self.streaming = False
        self.held.clear()  # a frame the decoder did not accept whole is not written
        self.held_size = 0
        self.open = False
        if source_end is None:
            self._error_output(error, "stream")
        else:  # (after the source's end, or its error event, no error event follows)
            self.write(source_end)
