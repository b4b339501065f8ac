"""The pipeline: framing -> tokenizer -> dialect decoder -> canonical events -> dialect encoder.

``Transcoder`` is the push object a proxy embeds: ``feed(bytes)`` returns the
output bytes that chunk made possible, ``close()`` the rest. ``Decoder`` stops
at the canonical events. Both are sans-IO: no I/O, no event loop.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import msgspec

from . import backend
from .canonical import Control, Error, Event, error_kind
from .dialects import codecs
from .errors import BudgetExceededError, TranscodeError
from .framing import FrameEnd, NdjsonDecoder, SseDecoder
from .json import Tokenizer
from .passthrough import BodyCopy, FrameCopy
from .session import Clock, Entropy, Options, Session

_FRAME_END = FrameEnd()  # immutable: one marker serves every frame


class _Front:
    """Bytes in, canonical events out (through ``emit``)."""

    def __init__(self, source: str, kind: str, emit: Callable[[Event], None], session: Session,
                 copy=None) -> None:
        decoder_cls, _ = codecs(source, kind)
        self.source = source
        self.decoder = decoder_cls(emit, session)
        self.tokenizer = Tokenizer(self.decoder.on_token, max_depth=session.options.max_depth,
                                   dialect=source)
        self.decoder.tokenizer = self.tokenizer
        self.copy = copy  # passthrough.BodyCopy: gets each chunk the decoder accepted

    def feed(self, data: bytes) -> None:
        try:
            self.tokenizer.feed(data)
            self.decoder.flush()
        except TranscodeError as exc:
            # an error raised past the tokenizer (a budget, strict mode) is at the token being read
            raise exc.locate(dialect=self.source, path=self.tokenizer.path(), offset=self.decoder.at)
        if self.copy is not None:
            self.copy.data(data)

    def close(self) -> None:
        try:
            self.tokenizer.close()
            self.decoder.finish()
        except TranscodeError as exc:
            raise exc.locate(dialect=self.source, path=self.tokenizer.path(), offset=self.tokenizer.offset)


class _StreamFront:
    """Framed bytes in (SSE or NDJSON, per the decoder's ``framing``), canonical events out.

    Each frame's data is one JSON document, fed as the data arrives to the
    stream's one tokenizer, ``reset`` for each document: offsets in errors
    count from the document's first byte, and the error's ``frame_offset``
    says where in the stream that byte is. Data that does not start with ``{``
    (openai's ``[DONE]``) is held whole -- bounded by ``max_line`` -- and
    handed to the decoder's ``frame_text``. After each frame the decoder's
    ``end_frame`` runs and a ``FrameEnd`` marker follows (see ``framing.FrameEnd``).
    """

    def __init__(self, source: str, kind: str, emit: Callable[[Event], None], session: Session,
                 copy=None) -> None:
        decoder_cls, _ = codecs(source, kind)
        self.source = source
        self.emit = emit
        self.copy = copy  # passthrough.FrameCopy: gets each frame's data and end the decoder accepted
        self.decoder = decoder_cls(emit, session)
        self.max_line = session.options.max_value_bytes
        if decoder_cls.framing == "sse":
            self.framer = SseDecoder(self, max_line=self.max_line, dialect=source)
        else:
            self.framer = NdjsonDecoder(self, dialect=source)
        self.tokenizer = Tokenizer(self.decoder.on_token, max_depth=session.options.max_depth, dialect=source)
        self.decoder.tokenizer = self.tokenizer
        self._in_document = False  # the current frame's data is a JSON document (in the tokenizer)
        self._text: bytes | None = None  # non-JSON-object data being held (bounded)
        self._frame_at: int | None = None  # stream offset of the frame's JSON (or text) start

    # -- sink of the framer ------------------------------------------------------

    def frame_data(self, data: bytes) -> None:
        self._frame_data(data)
        if self.copy is not None:
            self.copy.frame_data(data, getattr(self.framer, "event", None))

    def _frame_data(self, data: bytes) -> None:
        if self._in_document:
            try:
                self.tokenizer.feed(data)
            except TranscodeError as exc:
                raise exc.locate(frame_offset=self._frame_at, offset=self.decoder.at)
            return
        if self._text is None:
            stripped = data.lstrip(b" \t\r\n")
            if not stripped:
                return  # leading whitespace: undecided yet
            self._frame_at = self.framer.data_at + len(data) - len(stripped)
            if stripped[:1] == b"{":
                self.tokenizer.reset()
                self._in_document = True
                self.decoder.begin_frame()
                self._frame_data(stripped)
                return
            self._text = b""
            data = stripped  # (blanks before the data are not in it, in whichever chunk they came)
        self._text += data
        if len(self._text) > self.max_line:
            # a budget, as the framer's limits: at the byte that broke it, counted from the data's start
            raise BudgetExceededError(f"non-JSON frame data longer than max_line ({self.max_line})",
                                      dialect=self.source, offset=self.max_line, frame_offset=self._frame_at)

    def frame_end(self, event: str | None) -> None:
        try:
            if self._in_document:
                self.tokenizer.close()
                self.decoder.flush()
                self.decoder.end_frame(event)
                self._in_document = False
            else:
                text, self._text = self._text, None
                self.decoder.frame_text(event, (text or b"").strip())
        except TranscodeError as exc:
            # (an error once the frame ended: at its end; for non-JSON data: at its start)
            raise exc.locate(frame_offset=self._frame_at, offset=self.tokenizer.offset if self._in_document else 0)
        self._frame_at = None
        if self.copy is not None:
            self.copy.frame_end(event)
        self.emit(_FRAME_END)

    # -- driving ------------------------------------------------------------------

    def _where(self) -> str | None:
        return self.tokenizer.path() if self._in_document else None

    def feed(self, data: bytes) -> None:
        try:
            self.framer.feed(data)
            if self._in_document:
                self._flush_document()
        except TranscodeError as exc:
            raise exc.locate(dialect=self.source, path=self._where())

    def _flush_document(self) -> None:
        try:
            self.decoder.flush()
        except TranscodeError as exc:
            raise exc.locate(frame_offset=self._frame_at, offset=self.decoder.at)

    def close(self) -> None:
        try:
            self.framer.close()
            self.decoder.finish()
        except TranscodeError as exc:  # (an error of the stream's end: at its last byte)
            raise exc.locate(dialect=self.source, path=self._where(), offset=self.framer.offset)


class _Backed(type):
    """Metaclass of ``Transcoder`` / ``Decoder`` / ``Encoder``: on the native backend the
    constructor returns the native object for a kind it runs (``interlingua.backend`` says
    why this way), and ``isinstance`` counts that object as one of the class's. A subclass
    is Python on both backends."""

    def __call__(cls, *args, kind: str = "request", **kwargs):
        # (one dict lookup: a small response's whole transcoding costs a few microseconds,
        # and Python frames here were a third of it)
        native = _NATIVE_CLASSES.get((cls, kind)) if backend.BACKEND == "native" else None
        if native is not None:
            return native(*args, kind=kind, **kwargs)
        return super().__call__(*args, kind=kind, **kwargs)

    def __instancecheck__(cls, obj) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        native = backend._native
        return native is not None and type(obj) is getattr(native, cls.__name__, None) and cls in _PUBLIC


def _front(source: str, kind: str, emit: Callable[[Event], None], session: Session, copy=None):
    return (_StreamFront if kind == "stream" else _Front)(source, kind, emit, session, copy)


class _BytesOut:
    """What a ``Transcoder`` and an ``Encoder`` share: the session's reports, and the
    output bytes the encoder wrote into ``self._out`` (taken by each call).
    The subclass sets ``session``, ``encoder`` and ``_out``."""

    @property
    def losses(self):
        return self.session.losses

    @property
    def reorder(self):
        return self.session.reorder

    @property
    def tool_names(self) -> dict[str, str]:
        """Tool names changed for the target (wire name -> source name); give them to the
        response's transcoder as ``Options(tool_names=...)`` (``interlingua.naming``)."""
        return self.session.tool_names

    @property
    def asks_stream(self) -> bool:
        """The request asks for a stream (its ``stream`` is true; ollama's absent one is): a proxy
        tells from it whether the upstream's answer has the form its client waits for."""
        return self.session.asks_stream

    @property
    def asks_stream_usage(self) -> bool:
        """An openai request's ``stream_options.include_usage`` is true: its response's
        transcoder gets ``Options(openai_stream_usage=...)`` from it (the usage chunk only when asked)."""
        return self.session.asks_stream_usage

    def _take(self) -> bytes:
        out = b"".join(self._out)
        self._out.clear()
        return out

    def abort(self, error: "BaseException | Error | None" = None) -> bytes:
        """End the output with the target's error event instead of a (truncated) success.

        For a source that failed or was cut mid-stream: returns the output
        produced so far plus the target dialect's error frame (anthropic
        ``event: error``, openai an error chunk then ``[DONE]``, ollama an
        ``{"error": ...}`` line; for a non-streaming body, an error body if
        nothing was written yet). ``error`` may be an exception (a
        ``TranscodeError`` keeps its kind and status) or a canonical ``Error``.
        """
        error = _abort_event(error)
        abort = getattr(self.encoder, "abort", None)
        if abort is not None:
            abort(error)
        return self._take()

    def pending_output(self) -> bytes:
        """After an error: the output produced before it (a prefix of the full output)."""
        return self._take()


class Transcoder(_BytesOut, metaclass=_Backed):
    """Push-style transcoder from one dialect to another.

    >>> t = Transcoder("openai", "openai")
    >>> out = t.feed(b'{"model":"m","messages":[{"role":"user","content":"hi"}]}') + t.close()

    ``losses`` lists what could not be carried; ``reorder`` reports what was held.
    ``model`` (requests) replaces the source's model name in the output: a
    name, or a function of the source's model value returning the name.

    ``clock`` (seconds since the epoch; default ``time.time``) and ``entropy``
    (``entropy(n)`` -> n random bytes; default ``os.urandom``; the native backend reads
    unset hooks in Rust: the wall clock, and a nonce no other response draws, with no
    system call) are read once, here, for a
    response or stream into another dialect: the time written where the source has none,
    and the nonce that makes a generated id unique (``interlingua.lifecycle``: response
    ids and times). Tests and replays pass fixed ones: the same input and hook readings
    give the same output.

    On the native backend a request transcoder is ``interlingua._native.Transcoder``
    (same arguments, errors and attributes; no ``session``): see ``interlingua.backend``.
    """

    def __init__(self, source: str, target: str, *, kind: str = "request",
                 options: Options | None = None, model: "str | Callable[[object], str] | None" = None,
                 clock: Clock | None = None, entropy: Entropy | None = None) -> None:
        self.session = Session(options, source=source, target=target, kind=kind, clock=clock, entropy=entropy)
        decoder_cls, encoder_cls = codecs(target, kind)
        self._out: list[bytes] = []
        copy = None
        if source == target and kind != "request":  # the input is the output (interlingua.passthrough)
            self.session.passthrough = True
            copy = (FrameCopy(self._out.append, self.session, decoder_cls.framing) if kind == "stream"
                    else BodyCopy(self._out.append, self.session))
            self.encoder = copy
        else:
            self.encoder = encoder_cls(self._out.append, self.session)
        self._copy = copy
        on_event = self.encoder.on_event
        if model is not None or kind == "request":  # (no response or stream event is a control)
            on_event = _controls_acted_on(on_event, self.session, model)
        self._front = _front(source, kind, on_event, self.session, copy)
        self._poison = _Poison()

    def feed(self, data: bytes) -> bytes:
        """Feed a chunk; returns the output it made possible (maybe ``b""``)."""
        self._poison.check()
        with self._poison:
            self._front.feed(data)
        return self._take()

    def close(self) -> bytes:
        """End of input; returns the rest of the output."""
        self._poison.check()
        with self._poison:
            self._front.close()
            if self._copy is not None:
                self._copy.finished(self._front.decoder)
        return self._take()

    def abort(self, error: "BaseException | Error | None" = None) -> bytes:
        """End the output with the target's error event instead of a (truncated) success (see
        ``Encoder.abort``). Input that is a whole answer already (its last event came, only its
        close did not) is closed instead: no error follows an end. After the source's own error
        event no second one is written. The output has ended: a later ``feed`` or ``close``
        raises ``TranscodeError`` (``ABORTED``), a later ``abort`` adds nothing."""
        error = _abort_event(error)
        if self._poison.error is None:
            try:
                out = self.close()
                self._poison.aborted()
                return out
            except Exception:  # (a model hook's error too: abort does not fail)
                self._poison.error = None  # (not whole: the error event ends it below)
        out = self._take()
        if self._copy is not None:
            decoder = self._front.decoder
            self._copy.abort(error, decoder.missing_terminator() if decoder.source_done() else None)
        elif (abort := getattr(self.encoder, "abort", None)) is not None:
            abort(error)
        self._poison.aborted()
        return out + self._take()

class Decoder(metaclass=_Backed):
    """Push-style decoder to canonical events: ``feed`` / ``close`` return the events they produced.

    On the native backend a request decoder is ``interlingua._native.Decoder`` (see
    ``interlingua.backend``)."""

    def __init__(self, source: str, *, kind: str = "request", options: Options | None = None) -> None:
        self.session = Session(options, source=source, kind=kind)
        self._events: list[Event] = []
        self._front = _front(source, kind, self._events.append, self.session)
        self._poison = _Poison()

    def _take(self) -> list[Event]:
        events = self._events[:]
        self._events.clear()
        return events

    def feed(self, data: bytes) -> list[Event]:
        self._poison.check()
        with self._poison:
            self._front.feed(data)
        return self._take()

    def close(self) -> list[Event]:
        self._poison.check()
        with self._poison:
            self._front.close()
        return self._take()


class Encoder(_BytesOut, metaclass=_Backed):
    """Push-style encoder: canonical events in, ``target``'s bytes out -- the second half
    of a ``Transcoder``, for events built in Python (the turn compiler, a program that
    makes its own requests).

    >>> from interlingua import Block, Control, End, MessagesEnd, Section, SystemEnd
    >>> e = Encoder("anthropic")
    >>> body = e.feed([SystemEnd(), Block(Section.USER_TEXT, 0, b"hi"), MessagesEnd(),
    ...                Control("model", "m"), End()]) + e.close()

    ``feed`` takes one event or an iterable of them and returns the bytes they made
    possible (maybe ``b""``); ``close()`` says the events ended (the encoder's ``finish``:
    after ``End`` nothing more) and returns the rest. ``source`` names the dialect the
    events come from ("" when none: losses then name no dialect unless the event does);
    it decides, as in a ``Transcoder``, whether tool names are renamed (not when it is the
    target) and which dialect a loss names. ``losses``, ``reorder``, ``tool_names``,
    ``pending_output``, ``abort``, ``clock`` / ``entropy``: as ``Transcoder``'s. After an
    error every later ``feed`` / ``close`` raises that same error; after ``close`` they
    raise ``TranscodeError``.

    On the native backend an encoder of a kind the native core covers (``backend.covers``:
    requests; responses and streams as issue 12 lands) is ``interlingua._native.Encoder``
    (the same arguments, errors and attributes; no ``session``): see ``interlingua.backend``.
    """

    def __init__(self, target: str, *, kind: str = "request", source: str = "",
                 options: Options | None = None, clock: Clock | None = None,
                 entropy: Entropy | None = None) -> None:
        _, encoder_cls = codecs(target, kind)
        if source:
            codecs(source, kind)  # (a known dialect: the same ValueError)
        self.session = Session(options, source=source, target=target, kind=kind, clock=clock, entropy=entropy)
        self._out: list[bytes] = []
        self.encoder = encoder_cls(self._out.append, self.session)
        self._poison = _Poison()
        self._closed = False

    def _check(self) -> None:
        self._poison.check()
        if self._closed:
            raise TranscodeError(f"the {self.session.target} encoder is closed: its events have ended",
                                 dialect=self.session.target)

    def feed(self, events: "Event | Iterable[Event]") -> bytes:
        """Feed one event or an iterable of events; returns the output they made possible."""
        self._check()
        with self._poison:
            if hasattr(events, "__struct_config__"):  # one event (a canonical Struct)
                self.encoder.on_event(events)
            else:
                for event in events:
                    self.encoder.on_event(event)
        return self._take()

    def close(self) -> bytes:
        """The events ended; returns the rest of the output."""
        self._check()
        self._closed = True
        with self._poison:
            self.encoder.finish()
        return self._take()


_PUBLIC = (Transcoder, Decoder, Encoder)  # a subclass is Python on both backends
#: (public class, kind) -> the native class built instead, for the kinds the native core runs
_NATIVE_CLASSES = {(cls, kind): getattr(backend._native, cls.__name__)
                   for cls in _PUBLIC for kind in ("request", "response", "stream") if backend.covers(kind)}


#: what ``feed`` / ``close`` raise after ``Transcoder.abort``
ABORTED = "abort() ended the output: feed and close take nothing more"


class _Poison:
    """After an error, every later ``feed``/``close`` raises that same error: the
    stages' state is undefined past it, so nothing more may come out. (Once
    closed, a ``close()`` again is an error too: the input has ended.)"""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def aborted(self) -> None:
        """``abort()`` ended the output (an earlier error stays the one raised)."""
        if self.error is None:
            self.error = TranscodeError(ABORTED)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, traceback) -> bool:
        if error is not None and isinstance(error, Exception):
            self.error = error
        return False


def transcode(chunks: Iterable[bytes], *, source: str, target: str, kind: str = "request",
              options: Options | None = None, losses: list | None = None,
              clock: Clock | None = None, entropy: Entropy | None = None) -> Iterator[bytes]:
    """Transcode an iterable of byte chunks; yields output bytes as soon as they exist.

    Pass a list as ``losses`` to receive the loss records; ``clock`` / ``entropy``: see
    ``Transcoder``.
    """
    transcoder = Transcoder(source, target, kind=kind, options=options, clock=clock, entropy=entropy)
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


def encode(events: Iterable[Event], *, target: str, kind: str = "request", source: str = "",
           options: Options | None = None, losses: list | None = None,
           clock: Clock | None = None, entropy: Entropy | None = None) -> bytes:
    """Encode canonical events as ``target``'s bytes (the whole output: a request body, a
    response, a stream's frames); ``Encoder`` for output as the events come.

    Pass a list as ``losses`` to receive the loss records."""
    encoder = Encoder(target, kind=kind, source=source, options=options, clock=clock, entropy=entropy)
    out = encoder.feed(events) + encoder.close()
    if losses is not None:
        losses.extend(encoder.losses)
    return out


def _controls_acted_on(on_event: Callable[[Event], None], session: Session, model) -> Callable[[Event], None]:
    """The controls the pipeline itself acts on, on their way to the encoder (the native core's
    ``Encoding`` sink, one place as here):

    * ``Transcoder(model=...)``: the target gets another model name than the source's. ``model``
      is the name, or a function of the source's model value that returns it (called once, when
      the model is read: a proxy learns the model and picks the backend's name for it in the same
      pass). A proxy routes a client's model name to a backend that knows it by another name. The
      replacement keeps the control's dialect and key with the new value as its raw JSON, so a
      same-dialect target writes it where the source had it, and other targets map it as any
      model control.
    * A request's ``stream`` is noted (``Transcoder.asks_stream``).
    """
    name_for = None if model is None else model if callable(model) else (lambda _value: model)

    def on_event_acted_on(event: Event) -> None:
        if event.__class__ is Control:
            if event.name == "model" and name_for is not None:
                name = name_for(event.value)
                event = Control("model", name, dialect=event.dialect, key=event.key,
                                raw=msgspec.json.encode(name) if event.raw is not None else None)
            elif event.name == "stream":
                session.asks_stream = event.value is True
        on_event(event)

    return on_event_acted_on


def _abort_event(error: "BaseException | Error | None") -> Error:
    """``abort``'s argument as the canonical ``Error`` the encoders write: an exception (or
    None) made into one; an ``Error`` whose type or message is not a str gets one (the type
    ``api_error``, the message its ``str``), so that what is written is the dialect's error
    object with text in it (``status`` is written nowhere)."""
    if not isinstance(error, Error):
        return _error_event(error)
    if isinstance(error.type, str) and isinstance(error.message, str):
        return error
    kind = error.type if isinstance(error.type, str) else "api_error"
    message = error.message if isinstance(error.message, str) else str(error.message)
    return Error(kind, message, error.status)


def _error_event(exc: BaseException | None) -> Error:
    """A canonical ``Error`` for an exception (or for an unexplained abort). An exception with
    an HTTP status (the official clients' ``APIStatusError``: ``status_code``; httpx's
    ``HTTPStatusError``: ``response.status_code``) gets that status's kind (``error_kind``: a
    429 stays a rate limit); any other is an API error."""
    if exc is None:
        return Error("api_error", "the upstream stream ended early", 502)
    if isinstance(exc, TranscodeError):
        return Error(exc.kind, str(exc), exc.status)
    status = _http_status(exc)
    if status is not None:
        return Error(error_kind(status), str(exc) or type(exc).__name__, status)
    return Error("api_error", str(exc) or type(exc).__name__, 502)


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (100-599), or None."""
    for status in (getattr(exc, "status_code", None), getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
            return status
    return None
