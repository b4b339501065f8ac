"""The pipeline: framing -> tokenizer -> dialect decoder -> canonical events -> dialect encoder.

``Transcoder`` is the push object a proxy embeds: ``feed(bytes)`` returns the
output bytes that chunk made possible, ``close()`` the rest. ``Decoder`` stops
at the canonical events. Both are sans-IO: no I/O, no event loop.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from .canonical import Event
from .dialects import codecs
from .errors import TranscodeError
from .json import Tokenizer
from .session import Options, Session


class _Front:
    """Bytes in, canonical events out (through ``emit``)."""

    def __init__(self, source: str, kind: str, emit: Callable[[Event], None], session: Session) -> None:
        decoder_cls, _ = codecs(source, kind)
        self.source = source
        self.decoder = decoder_cls(emit, session)
        self.tokenizer = Tokenizer(self.decoder.on_token, max_depth=session.options.max_depth,
                                   dialect=source)
        self.decoder.tokenizer = self.tokenizer

    def feed(self, data: bytes) -> None:
        try:
            self.tokenizer.feed(data)
            self.decoder.flush()
        except TranscodeError as exc:
            raise exc.locate(dialect=self.source, path=self.tokenizer.path())

    def close(self) -> None:
        try:
            self.tokenizer.close()
            self.decoder.finish()
        except TranscodeError as exc:
            raise exc.locate(dialect=self.source, path=self.tokenizer.path())


class Transcoder:
    """Push-style transcoder from one dialect to another.

    >>> t = Transcoder("openai", "openai")
    >>> out = t.feed(b'{"model":"m","messages":[{"role":"user","content":"hi"}]}') + t.close()

    ``losses`` lists what could not be carried; ``reorder`` reports what was held.
    """

    def __init__(self, source: str, target: str, *, kind: str = "request",
                 options: Options | None = None) -> None:
        self.session = Session(options, source=source, target=target)
        _, encoder_cls = codecs(target, kind)
        self._out: list[bytes] = []
        self.encoder = encoder_cls(self._out.append, self.session)
        self._front = _Front(source, kind, self.encoder.on_event, self.session)

    @property
    def losses(self):
        return self.session.losses

    @property
    def reorder(self):
        return self.session.reorder

    def _take(self) -> bytes:
        out = b"".join(self._out)
        self._out.clear()
        return out

    def feed(self, data: bytes) -> bytes:
        """Feed a chunk; returns the output it made possible (maybe ``b""``)."""
        self._front.feed(data)
        return self._take()

    def close(self) -> bytes:
        """End of input; returns the rest of the output."""
        self._front.close()
        return self._take()

    def pending_output(self) -> bytes:
        """After an error: the output produced before it (a prefix of the full output)."""
        return self._take()


class Decoder:
    """Push-style decoder to canonical events: ``feed`` / ``close`` return the events they produced."""

    def __init__(self, source: str, *, kind: str = "request", options: Options | None = None) -> None:
        self.session = Session(options, source=source)
        self._events: list[Event] = []
        self._front = _Front(source, kind, self._events.append, self.session)

    def _take(self) -> list[Event]:
        events = self._events[:]
        self._events.clear()
        return events

    def feed(self, data: bytes) -> list[Event]:
        self._front.feed(data)
        return self._take()

    def close(self) -> list[Event]:
        self._front.close()
        return self._take()


def transcode(chunks: Iterable[bytes], *, source: str, target: str, kind: str = "request",
              options: Options | None = None, losses: list | None = None) -> Iterator[bytes]:
    """Transcode an iterable of byte chunks; yields output bytes as soon as they exist.

    Pass a list as ``losses`` to receive the loss records.
    """
    transcoder = Transcoder(source, target, kind=kind, options=options)
    for chunk in chunks:
        out = transcoder.feed(chunk)
        if out:
            yield out
    out = transcoder.close()
    if losses is not None:
        losses.extend(transcoder.losses)
    if out:
        yield out


def decode(chunks: Iterable[bytes], *, source: str, kind: str = "request",
           options: Options | None = None) -> Iterator[Event]:
    """Decode an iterable of byte chunks to canonical events."""
    decoder = Decoder(source, kind=kind, options=options)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()
