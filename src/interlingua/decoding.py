"""The shared machinery of dialect decoders: a pushdown machine over tokens.

A decoder is a stack of handlers, one per JSON level it is inside; each
handler is a method ``(kind, value, offset)`` that consumes tokens and pushes
or pops handlers. The helpers here read the values every dialect needs:
a small value (parsed), a string streamed as fragments, and a value copied as
raw JSON text (streamed in fragments too, so nothing grows with the body).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import msgspec

from . import json as tok
from . import numbers
from .canonical import Block, End, Event, Extension, MessageStart, MessagesEnd, Section, SystemEnd
from .errors import BudgetExceededError, LoneSurrogateError, SchemaError
from .jsonwriter import LITERAL_TEXT, RawValue, dumps
from .session import Session

Handler = Callable[[int, Any, int], None]
FragmentSink = Callable[[bytes, bool, bool], None]  # (bytes, init, fin)

_SCALAR_KINDS = {tok.STRING, tok.NUMBER, tok.TRUE, tok.FALSE, tok.NULL}
_TYPE_NAMES = {
    tok.OBJECT_START: "object", tok.ARRAY_START: "array", tok.STRING: "string",
    tok.STRING_OPEN: "string", tok.NUMBER: "number", tok.TRUE: "boolean", tok.FALSE: "boolean",
    tok.NULL: "null",
}


def _refused_number(text: bytes) -> str:
    return "a number beyond a float's range" if numbers.overflows(text) else "a number with a fraction"


def type_name(kind: int) -> str:
    return _TYPE_NAMES.get(kind, tok.KIND_NAMES.get(kind, "?"))


def carries_nothing(raw: bytes) -> bool:
    """A message member's raw JSON that carries nothing: null, or an empty list or object
    (openai's ``annotations: []`` on every assistant message an SDK hands back)."""
    return raw in (b"null", b"[]", b"{}")


def index_at(value: Any, position: int) -> bool:
    """Whether a tool call's ``index`` member (as data) is the call's 0-based ``position``
    among its message's calls: an integer (not a boolean, not ``0.0``) equal to it
    (``losses.CALL_INDEX``)."""
    return type(value) is int and value == position


def keep_members(obj: dict, attrs: dict, extra_attr: str, carried=(), skipped=()) -> None:
    """An object's members into a block's ``attrs``: one of ``carried`` is the attribute of its
    name, one of ``skipped`` the reader's own (read apart), the others ``extra_attr`` -- their
    JSON text (``"k":v,...``), written back by their own dialect, a loss at their own path in
    another (a tool's members, those beside its function, a thinking block's)."""
    extra = []
    for key, value in obj.items():
        if key in carried:
            attrs[key] = value
        elif key not in skipped:
            extra.append(dumps(key) + b":" + dumps(value))
    if extra:
        attrs[extra_attr] = b",".join(extra).decode()


def beside_function(tool: dict, attrs: dict, extra_attr: str, carried: tuple[str, ...] = ()) -> None:
    """The members beside a wrapped tool's ``type`` and ``function`` (openai, ollama) into
    ``attrs`` (``keep_members``): one of ``carried`` is the tool's attribute of its name (openai
    ``cache_control``, as an anthropic tool's)."""
    keep_members(tool, attrs, extra_attr, carried, ("type", "function"))


class Expect:
    """What a member's value must be: the token kinds it may start with (so a wrong
    type is refused at its first token, with that token's offset and path, before
    anything is read or copied), and what errors call it. ``INTEGER`` also refuses
    a number with a fraction or beyond a float's range; an integral float (``100.0``,
    ``1e2``) is the integer it means (``numbers.integral``)."""

    __slots__ = ("kinds", "name", "integer")

    def __init__(self, kinds, name: str, integer: bool = False) -> None:
        self.kinds = frozenset(kinds)
        self.name = name
        self.integer = integer

    def __or__(self, other: "Expect") -> "Expect":
        return Expect(self.kinds | other.kinds, f"{self.name} or {other.name}", self.integer or other.integer)

    def refuses(self, kind: int, value: Any) -> bool:
        if kind not in self.kinds:
            return True
        return self.integer and kind == tok.NUMBER and numbers.integral(value) is None


STRING = Expect((tok.STRING, tok.STRING_OPEN), "a string")
INTEGER = Expect((tok.NUMBER,), "an integer", integer=True)
NUMBER = Expect((tok.NUMBER,), "a number")
BOOLEAN = Expect((tok.TRUE, tok.FALSE), "a boolean")
OBJECT = Expect((tok.OBJECT_START,), "an object")
ARRAY = Expect((tok.ARRAY_START,), "an array")
NULL = Expect((tok.NULL,), "null")
OPT_STRING, OPT_INTEGER, OPT_OBJECT, OPT_ARRAY = STRING | NULL, INTEGER | NULL, OBJECT | NULL, ARRAY | NULL
SCALAR = STRING | NUMBER | BOOLEAN | NULL
ANY = OBJECT | ARRAY | SCALAR


class Decoder:
    """Base of every dialect decoder. Subclasses push their first handler in ``__init__``."""

    dialect = "?"

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        self.emit = emit
        self.session = session
        self.tokenizer: tok.Tokenizer | None = None  # set by the pipeline, for paths
        self._stack: list[Handler] = []
        self._next: Handler | None = None  # reads the next token only (``then``)
        self._raw_streams: list[RawStream] = []
        self.at = 0  # offset of the token being read

    # -- driving ------------------------------------------------------------

    def on_token(self, kind: int, value: Any, offset: int) -> None:
        self.at = offset  # where an error raised past the tokenizer is (a budget, strict mode)
        reader = self._next
        if reader is None:
            self._stack[-1](kind, value, offset)
        else:  # the first token of a value announced by ``then``
            self._next = None
            reader(kind, value, offset)

    def flush(self) -> None:
        """Called after each fed chunk: hand on raw text gathered so far."""
        for raw in self._raw_streams:
            raw.flush()

    def finish(self) -> None:
        """Called after the tokenizer closed successfully."""

    def push(self, handler: Handler) -> None:
        self._stack.append(handler)

    def pop(self) -> None:
        self._stack.pop()

    def replace(self, handler: Handler) -> None:
        self._stack[-1] = handler

    def restart(self, handler: Handler) -> None:
        """A new document (a stream's next frame): ``handler`` reads its first token."""
        self._stack = [handler]
        self._next = None

    # -- structure ------------------------------------------------------------

    def then(self, reader: Handler) -> None:
        """Read the next value with ``reader(kind, value, offset)`` (after a key).

        ``reader`` gets the value's first token only, ahead of the handler on
        top of the stack: no stack entry, no closure per member."""
        assert self._next is None, "then() twice before a token"
        self._next = reader

    def then_value(self, done: Callable[[Any], None], expect: Expect | None = None, what: str = "") -> None:
        """Read the next value as small Python data and pass it to ``done``."""
        self.then(lambda kind, value, offset: self.read_value(kind, value, offset, done, expect, what))

    def each_member(self, kind: int, offset: int, what: str,
                    on_member: Callable[[str, int, Any, int], None],
                    on_end: Callable[[], None] | None = None) -> None:
        """The value must be an object: ``on_member(key, kind, value, offset)``
        reads each member's value from its first token; ``on_end`` runs after
        the closing brace."""
        Members(self, on_member, on_end).read(kind, offset, what)

    def each_element(self, kind: int, offset: int, what: str, on_element: Handler,
                     on_end: Callable[[], None] | None = None) -> None:
        """The value must be an array: ``on_element`` gets each element's first
        token (and reads the element), ``on_end`` runs after the closing bracket."""
        if kind != tok.ARRAY_START:
            raise self.wrong_type(kind, f"an array for {what}", offset)

        def element(kind: int, value: Any, offset: int) -> None:
            if kind == tok.ARRAY_END:
                self.pop()
                if on_end is not None:
                    on_end()
            else:
                on_element(kind, value, offset)
        self.push(element)

    def each_object(self, kind: int, offset: int, what: str, on_object: Callable[[int], Handler],
                    on_end: Callable[[], None] | None = None) -> None:
        """The value must be an array of objects: ``on_object(offset)`` returns the
        key handler of each one (popped at the object's end by that handler), or
        None when it installed its own reader."""
        if kind != tok.ARRAY_START:
            raise self.wrong_type(kind, f"an array for {what}", offset)

        def element(kind: int, value: Any, offset: int) -> None:  # its own handler: one call less per object
            if kind == tok.OBJECT_START:
                handler = on_object(offset)
                if handler is not None:
                    self.push(handler)
            elif kind == tok.ARRAY_END:
                self.pop()
                if on_end is not None:
                    on_end()
            else:
                raise self.wrong_type(kind, f"an object in {what}", offset)
        self.push(element)

    # -- errors ---------------------------------------------------------------

    def path(self) -> str:
        return self.tokenizer.path() if self.tokenizer is not None else "$"

    def refuse_overflow(self, tool: Any, offset: int) -> None:
        """A tool definition is written from its value: one holding an overflowed float
        (``1e400``) has no JSON text, so it is refused at the tool (``numbers``)."""
        if numbers.has_infinity(tool):
            raise self.error(numbers.TOOL_OVERFLOW, offset)

    def check_tool_attrs(self, attrs: dict, where: str, offset: int) -> None:
        """A tool definition's carried members (``fields.TOOL_MEMBERS``; ``where``: the object
        holding them, ``$.tools[0].function``): the first of the wrong type is a ``SchemaError``
        at its path, at the tool's first byte; an explicit null is dropped (absent)."""
        from .dialects.fields import TOOL_MEMBERS, refusal

        for key in [k for k in attrs if k in TOOL_MEMBERS]:
            message = refusal(TOOL_MEMBERS[key], f"{where[2:]}.{key}", attrs[key])
            if message is not None:
                raise SchemaError(message, dialect=self.dialect, offset=offset, path=f"{where}.{key}")
            if attrs[key] is None:
                del attrs[key]

    def error(self, message: str, offset: int, cls=SchemaError) -> Exception:
        return cls(message, dialect=self.dialect, offset=offset, path=self.path())

    def wrong_type(self, kind: int, expected: str, offset: int) -> Exception:
        return self.error(f"expected {expected}, got {type_name(kind)}", offset)

    def expect(self, kind: int, value: Any, offset: int, expect: Expect | None, what: str) -> None:
        """The one type check: a value (its first token) that ``expect`` refuses is a
        ``SchemaError`` naming ``what``, at the value's offset and path."""
        if expect is not None and expect.refuses(kind, value):
            got = _refused_number(value) if kind in expect.kinds else type_name(kind)  # (INTEGER's refusal)
            raise self.error(f"expected {expect.name} for {what}, got {got}", offset)

    def missing(self, member: str, what: str, offset: int) -> Exception:
        """A required member that is absent (raised when its object closes)."""
        return self.error(f"{what} has no {member!r} (required)", offset)

    # -- value readers -----------------------------------------------------------

    def read_value(self, kind: int, value: Any, offset: int, done: Callable[[Any], None],
                   expect: Expect | None = None, what: str = "") -> None:
        """Read a whole small value as Python data (bounded by ``max_value_bytes``);
        ``expect``: its type (checked first, see ``expect``)."""
        if expect is not None and expect.refuses(kind, value):
            self.expect(kind, value, offset, expect, what)
        if kind in _SCALAR_KINDS:
            self.bound_scalar(kind, value, offset)
            if kind == tok.STRING and b"\\u" in value:
                done(self._at(_scalar, kind, value, offset=offset))
            else:
                done(_scalar(kind, value))
            return
        self.read_raw(kind, value, offset, lambda raw: done(self._at(_data, raw, offset=offset)))

    def data(self, raw: bytes, offset: int) -> Any:
        """A small value's compact JSON (``read_raw``) as Python data, checked as
        ``read_value`` checks it (a lone surrogate: an error at ``offset``)."""
        return self._at(_data, raw, offset=offset)

    def _at(self, decode: Callable, *args: Any, offset: int) -> Any:
        """``decode(*args)``; its error (a lone surrogate) at the value's first byte."""
        try:
            return decode(*args)
        except LoneSurrogateError as exc:
            raise self.error(exc.reason, offset, LoneSurrogateError) from None

    def read_raw(self, kind: int, value: Any, offset: int, done: Callable[[bytes], None],
                 expect: Expect | None = None, what: str = "") -> None:
        """Read a whole value as compact JSON text (bounded by ``max_value_bytes``)."""
        if expect is not None and expect.refuses(kind, value):
            self.expect(kind, value, offset, expect, what)
        limit = self.session.options.max_value_bytes
        if kind in _SCALAR_KINDS:  # one token: its text as it came (most members of a stream frame)
            self.bound_scalar(kind, value, offset)
            done(b'"' + value + b'"' if kind == tok.STRING else value if kind == tok.NUMBER else LITERAL_TEXT[kind])
            return
        parts: list[bytes] = []
        size = [0]

        def write(data: bytes) -> None:
            size[0] += len(data)
            if size[0] > limit:
                raise self.error(f"value larger than max_value_bytes ({limit})", offset, BudgetExceededError)
            parts.append(data)

        raw = RawValue(write)
        if raw.feed(kind, value, offset):
            done(b"".join(parts))
            return

        first = offset

        def handler(kind: int, value: Any, offset: int) -> None:
            if raw.feed(kind, value, offset):
                self.pop()
                self.at = first  # (what the value makes fails at its first byte, however cut)
                done(b"".join(parts))

        self.push(handler)

    def bound_scalar(self, kind: int, value: Any, offset: int) -> None:
        """A scalar that came as one token under ``max_value_bytes``, as its text would be
        in fragments (a string cut by a chunk end is counted fragment by fragment): the
        same value passes or fails however the body was cut."""
        limit = self.session.options.max_value_bytes
        size = len(value) + 2 if kind == tok.STRING else len(value) if kind == tok.NUMBER else len(LITERAL_TEXT[kind])
        if size > limit:
            raise self.error(f"value larger than max_value_bytes ({limit})", offset, BudgetExceededError)

    def read_string(self, kind: int, value: Any, offset: int, sink: FragmentSink, what: str) -> None:
        """Stream a string value's escaped fragments to ``sink(bytes, init, fin)``."""
        if kind == tok.STRING:
            sink(value, True, True)
            return
        if kind != tok.STRING_OPEN:
            raise self.wrong_type(kind, f"a string for {what}", offset)
        sink(value, True, False)

        def handler(kind: int, value: Any, offset: int) -> None:
            if kind == tok.STRING_PART:
                sink(value, False, False)
            else:  # STRING_CLOSE: the tokenizer allows nothing else here
                self.pop()
                sink(value, False, True)

        self.push(handler)

    def stream_raw(self, kind: int, value: Any, offset: int, sink: FragmentSink) -> None:
        """Stream a value's compact JSON text to ``sink`` in fragments (one per fed chunk)."""
        stream = RawStream(sink)
        if stream.raw.feed(kind, value, offset):
            stream.finish()
            return
        self._raw_streams.append(stream)

        def handler(kind: int, value: Any, offset: int) -> None:
            if stream.raw.feed(kind, value, offset):
                self.pop()
                self._raw_streams.remove(stream)
                stream.finish()

        self.push(handler)

    # -- canonical output ---------------------------------------------------------

    def extension(self, path: str, raw: bytes, *, message: int | None = None, lossless: bool = False) -> None:
        self.emit(Extension(self.dialect, path, raw, message=message, lossless=lossless))




class MemberReader:
    """Reads the members of one object: push ``on_token`` after its ``{``.

    A key is remembered; the member's value -- its first token -- goes to
    ``member(key, kind, value, offset)``, which reads it (pushing a reader for a
    container or a string in fragments); the closing brace pops the reader and
    calls ``end(offset)``. One handler for the whole object and no closure per
    member: on a stream's small frames per-member closures were a good part of
    the decoding cost. ``Decoder.each_member`` is this with callbacks.
    """

    def __init__(self, d: Decoder) -> None:
        self.d = d
        self.key: Any = None

    def on_token(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.KEY:
            self.key = value
        elif kind == tok.OBJECT_END:
            self.d.pop()
            self.end(offset)
        else:
            self.member(self.key, kind, value, offset)

    def member(self, key: str, kind: int, value: Any, offset: int) -> None:
        raise NotImplementedError

    def end(self, offset: int) -> None:
        """Hook: the object ended."""


class Members(MemberReader):
    """A ``MemberReader`` with callbacks: ``member(key, kind, value, offset)``
    reads each member's value from its first token, ``on_end`` runs after the
    closing brace. ``Decoder.each_member`` makes one per object; a stream
    decoder builds one, once, for an object every frame has (the document, its
    ``delta``) and calls ``read`` at each."""

    def __init__(self, d: Decoder, member: Callable[[str, int, Any, int], None],
                 on_end: Callable[[], None] | None = None) -> None:
        super().__init__(d)
        self.member = member  # the caller's reader stands in for the method
        self.on_end = on_end
        self._handler = self.on_token  # bound once

    def read(self, kind: int, offset: int, what: str) -> None:
        """The object's first token: it must be ``{``; the members follow."""
        if kind != tok.OBJECT_START:
            raise self.d.wrong_type(kind, f"an object for {what}", offset)
        self.d.push(self._handler)

    def end(self, offset: int) -> None:
        if self.on_end is not None:
            self.on_end()


class RequestBodyDecoder(Decoder):
    """The frame every request decoder shares: a body object whose members the
    dialect reads (``_top_member``), a message list numbered by position, and the
    markers -- ``SystemEnd`` (at the body's start for dialects whose system is a
    list message, else when the dialect says), ``MessagesEnd``, ``End``.
    """

    system_in_list = True  # False: a top-level system may come anywhere (anthropic)

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self._message_index = -1
        self._system_done = False
        self._messages_done = False
        self._element_counts: dict[str, int] = {}
        self.then(self._body)

    def next_element_path(self, key: str) -> str:
        """``$.<key>[i]`` of the next element of a top-level array (a tool), counted as they
        come: a tool definition's source path, for its losses (attr ``path``)."""
        index = self._element_counts.get(key, 0)
        self._element_counts[key] = index + 1
        return f"$.{key}[{index}]"

    #: members the dialect's request cannot go without (``dialects/fields.REQUIRED``)
    required: tuple = ()

    def checked(self, control: Any, raw: bytes, offset: int) -> Any:
        """A control of the top-level field whose text is ``raw`` (at ``offset``), as it is
        emitted: an integer field's integral float as its integer (within 64 bits: the native
        core's canonical values are the same), and a number the target
        cannot take refused at the value (``numbers``; a control for its own dialect is
        copied as it came); a number outside the source's own range is refused for every
        target (``numbers.refusal``)."""
        from .dialects.fields import declared_integer

        key = control.key
        if key is None:
            return control
        integer = declared_integer(self.dialect, key)
        value = control.value
        if integer and type(value) is float and value.is_integer() and -(2.0**63) <= value < 2.0**63:
            control = msgspec.structs.replace(control, value=int(value))
        target = self.session.target
        if target and target != self.dialect and raw[:1] != b'"':
            why = numbers.fault(self.dialect, target, key, raw, control.value, integer)
            if why is not None:
                raise SchemaError(why, dialect=self.dialect, offset=offset, path="$." + key)
        why = numbers.refusal(self.dialect, key, raw, control.value)  # (the source's range: any target)
        if why is not None:
            raise SchemaError(why, dialect=self.dialect, offset=offset, path="$." + key)
        return control

    def _body(self, kind: int, value: Any, offset: int) -> None:
        self._seen_top: set = set()
        self.each_member(kind, offset, "the request body", self._top_seen, self._body_end)
        if self.system_in_list:
            self.system_end()

    def _top_seen(self, key: str, kind: int, value: Any, offset: int) -> None:
        self._seen_top.add(key)
        self._top_member(key, kind, value, offset)

    def _body_end(self) -> None:
        for member in self.required:
            if member not in self._seen_top:  # at the body's closing brace
                raise self.missing(member, "the request body", self.at)
        self.system_end()
        self.messages_end()
        self._body_ending()
        self.emit(End())

    def _body_ending(self) -> None:
        """Hook: events the dialect adds when the body ends (before ``End``)."""

    def _top_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        raise NotImplementedError

    def system_end(self) -> None:
        if not self._system_done:
            self._system_done = True
            self.emit(SystemEnd())

    def read_messages(self, kind: int, offset: int) -> None:
        self.each_object(kind, offset, "messages", self._message, self.messages_end)

    def _message(self, offset: int) -> Handler:
        self._message_index += 1
        return self._message_reader(self._message_index).on_key

    def _message_reader(self, index: int):
        """The dialect's reader of message ``index`` (it has ``on_key``)."""
        raise NotImplementedError

    def messages_end(self) -> None:
        if not self._messages_done:
            self._messages_done = True
            self.emit(MessagesEnd())


class MessageReaderBase:
    """What the request decoders' message readers share: a message's blocks wait
    for its ``role`` (sources that sort keys put it after ``content``).

    Until the role is known, blocks go into a ``Gate`` (reason
    ``<dialect>:content-before-role``); ``_resolve`` gives each block its role's
    form on the way out. Most sources put the role first: then no gate is made
    and blocks go straight out.
    """

    def __init__(self, decoder: Decoder, index: int, role: str | None = None) -> None:
        self.d = decoder
        self.index = index
        self.role = role
        self._gate: Gate | None = None  # only while blocks came before the role
        self._emitted = False  # a block of this message has gone out (or is held)

    def emit(self, block: Block) -> None:
        self._emitted = True
        gate = self.waiting()
        if gate is None:
            self.d.emit(self._resolve(block))
        else:
            gate(block)

    def waiting(self) -> Gate | None:
        """The gate this message's blocks would wait in now (``BlockBuilder.waiting``)."""
        if self.role is not None:
            return None
        if self._gate is None:
            self._gate = Gate(self._emit_resolved, self.d.session, f"{self.d.dialect}:content-before-role")
        return self._gate

    def _emit_resolved(self, block: Block) -> None:
        self.d.emit(self._resolve(block))

    def _resolve(self, block: Block) -> Block:
        """The block as its role makes it (text is built as provisional ``user-text``)."""
        return block

    #: the roles the dialect accepts (None: any string)
    known_roles: Any = None

    def _role(self, kind: int, value: Any, offset: int) -> None:
        """Reads the ``role`` member (a string, mostly: taken on the spot)."""
        if kind == tok.STRING:
            self.d.bound_scalar(kind, value, offset)
            self._set_role(_scalar(kind, value), offset)
        else:
            self.d.read_value(kind, value, offset, lambda role: self._set_role(role, offset))

    def _set_role(self, role: Any, offset: int) -> None:
        """The role is read: checked, then held blocks go out, later ones go straight."""
        if not isinstance(role, str):
            raise self.d.error("expected a string for role", offset)
        if self.known_roles is not None and role not in self.known_roles:
            raise self.d.error(f"unknown message role {role!r}", offset)
        self.role = role
        if self._gate is not None:
            self._gate.release()
            self._gate = None


class ResponseDecoderBase(Decoder):
    """What the response decoders share: content waits (``Gate``) until the message
    can start -- a source that sorts keys puts ``id``/``model`` after it -- and the
    ``MessageStart`` goes out first.
    """

    framing = "sse"  # or "ndjson": the pipeline's framing stage for the stream kind
    wait_for = "id"  # what the message start waits for, named in the hold's rule

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.gate = Gate(emit, session, f"{self.dialect}:content-before-{self.wait_for}")
        self.id: str | None = None
        self.model: str | None = None
        self.started = False
        self.errored = False

    def out(self, event: Event) -> None:
        """An event that must follow the message start."""
        self.gate(event)

    def start_message(self) -> None:
        if self.started:
            return
        self.started = True
        self._starting()
        self.emit(MessageStart(self.id, self.model))
        self.gate.release()

    def _starting(self) -> None:
        """Hook: what goes out just before ``MessageStart``."""

    def missing_terminator(self) -> bytes:
        """Hook: the frame a copy of this stream adds when the source ended without it."""
        return b""

    ended = False  # (a stream decoder's: the source's last event came)

    def source_done(self) -> bool:
        """The source's last event, or its error event, came: nothing after it belongs to the
        answer (a copy's abort adds no error event after it, as an encoder adds none after its end)."""
        return self.ended or self.errored

class RawStream:
    """Raw JSON text of one value, handed on as fragments: at each chunk end and at the end."""

    __slots__ = ("raw", "_sink", "_pending", "_started")

    def __init__(self, sink: FragmentSink) -> None:
        self._sink = sink
        self._pending: list[bytes] = []
        self._started = False
        self.raw = RawValue(self._pending.append)

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._sink(data, not self._started, False)
            self._started = True

    def finish(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._sink(data, not self._started, True)


def _scalar(kind: int, value: Any) -> Any:
    if kind == tok.STRING:
        if b"\\" not in value:
            return value.decode("utf-8")
        text = json.loads(b'"' + value + b'"')
        if b"\\u" in value and _LONE_SURROGATE.search(text):
            raise _lone_surrogate()
        return text
    if kind == tok.NUMBER:
        return int(value) if value.isdigit() else json.loads(value)  # indexes and counts: mostly digits
    return {tok.TRUE: True, tok.FALSE: False, tok.NULL: None}[kind]


# A value read as data (an id, a name, a type, a media type, a whole small object) is
# decoded to ``str``: an escaped lone surrogate (``"\\ud800"``) is not Unicode text
# there -- no UTF-8 output, hash or id can carry it -- so it is refused at that value.
# In text that is copied (content, arguments) it passes, as the escape it came as.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate() -> SchemaError:
    return LoneSurrogateError("lone surrogate escape in a value read as text (not Unicode)")


def _data(raw: bytes) -> Any:
    """A whole small value's compact JSON as Python data (see ``_LONE_SURROGATE``)."""
    value = json.loads(raw)
    if b"\\u" in raw:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _lone_surrogate() from None
    return value


class BlockBuilder:
    """Emits one block's fragments; the last is kept until ``close()``, but never the first:
    a payload that came whole (one fragment, also the last) goes out as it came, and
    ``close()`` adds an empty last fragment (with the late attributes). When a block's
    first event goes out is then where its payload begins, whatever the cut, as is what an
    encoder holds until it comes (the message before it: rpt/ollama-result-images-any-cut).
    An empty payload still waits for ``close()``: it is one fin fragment at every cut.

    Attributes set before the payload began ride on the first fragment; those
    set after it began (a ``detail`` after the ``url``, a ``name`` after
    ``arguments`` when keys are sorted) ride on the last one. "Began" is the
    source's key order, not the chunking: the events are the same however the
    input was cut. Keeping only the last fragment back costs at most one chunk
    and spares holding a whole payload for an attribute that may never come.

    While its events would wait (``waiting`` names the ``Gate`` they would wait in),
    what it keeps back counts there as held (``recount``: the fragment and, if none went
    out yet, the block's overhead, as the event it becomes will), so the reorder budget
    and strict order decide the same however the body was cut: whole, a text before its
    role is all one last fragment (rpt/reorder-kept-fragment).
    """

    __slots__ = ("emit", "section", "message", "attrs", "late", "started", "begun", "last", "done",
                 "waiting", "_keeper", "_counted")

    def __init__(self, emit: Callable[[Block], None], section: Section, message: int,
                 attrs: dict | None = None, done: Callable[[BlockBuilder], None] | None = None,
                 waiting: Callable[[], Gate | None] | None = None) -> None:
        self.emit = emit
        self.section = section
        self.message = message
        self.attrs = attrs if attrs is not None else {}
        self.late: dict = {}
        self.begun = False  # the payload has begun (in source order)
        self.started = False  # the first fragment has been emitted
        self.last: bytes | None = None
        # called with the builder after the last fragment: ``fragment`` can then be
        # a string's sink itself, with no wrapper called per fragment
        self.done = done
        self.waiting = waiting
        self._keeper: Gate | None = None  # the gate that counts what is kept back
        self._counted = 0

    def _uncount(self) -> None:
        """Give back what was counted (a gate that opened since released it with the rest)."""
        if self._keeper is not None:
            self._keeper.keep(-self._counted)
            self._keeper = None

    def recount(self) -> None:
        """Count what is kept back in the gate the events would wait in now (none: they
        go straight out)."""
        self._uncount()
        if self.last is not None and self.waiting is not None:
            gate = self.waiting()
            if gate is not None:
                self._counted = len(self.last) + (0 if self.started else EVENT_OVERHEAD)  # event_size
                gate.keep(self._counted)
                self._keeper = gate

    def fragment(self, data: bytes, init: bool, fin: bool) -> None:
        self.begun = True
        if fin:
            data = data if self.last is None else self.last + data
            first = None
            if data and not self.started:  # its start goes now, as it would in pieces
                first = Block(self.section, self.message, data, True, False, self.attrs or None)
                self.started = True
                data = b""
            self.last = data
            self.recount()
            if first is not None:
                self.emit(first)
            if self.done is not None:
                self.done(self)
            return
        if self.last is not None:  # a payload in several values (raw parts)
            data = self.last + data
            self.last = None
            self.recount()
        self.emit(Block(self.section, self.message, data, not self.started, False,
                        None if self.started else (self.attrs or None)))
        self.started = True

    def set(self, key: str, value: Any) -> None:
        (self.late if self.begun else self.attrs)[key] = value

    def close(self) -> None:
        self._uncount()  # the events emitted now count it, if they wait
        if not self.started and self.late:
            # Late attributes stay on a last fragment of their own, as they
            # would have had the payload arrived in pieces.
            self.emit(Block(self.section, self.message, self.last or b"", True, False, self.attrs or None))
            self.emit(Block(self.section, self.message, b"", False, True, self.late))
        elif not self.started:
            self.emit(Block(self.section, self.message, self.last or b"", True, True, self.attrs or None))
        else:
            self.emit(Block(self.section, self.message, self.last or b"", False, True, self.late or None))
        self.started = True


#: what a held event costs the reorder budget beyond its payload (a block's: once)
EVENT_OVERHEAD = 64


def event_size(event: Event) -> int:
    """What a held event counts against the reorder budget: its payload, and
    ``EVENT_OVERHEAD`` once per block -- at its first fragment -- so that smaller chunks,
    which cut a block into more fragments, do not make it cost more
    (rpt/reorder-budget-any-cut)."""
    if isinstance(event, Block) and not event.init:
        return len(event.payload)
    return len(getattr(event, "payload", b"")) + EVENT_OVERHEAD


class Gate:
    """Events that wait for what decides them: a message's ``role``, a
    response's ``id``/``model`` (sources that sort keys put them after the
    content). Until ``release()`` they go into a reorder-buffer hold, then
    straight through ``emit``.
    """

    def __init__(self, emit: Callable[[Event], None], session: Session, reason: str) -> None:
        self._emit = emit
        self._session = session
        self._reason = reason
        self.open = False
        self._hold = None

    def __call__(self, event: Event) -> None:
        if self.open:
            self._emit(event)
            return
        if self._hold is None:
            self._hold = self._session.reorder.hold(self._reason)
        self._hold.append(event, event_size(event))

    def keep(self, size: int) -> None:
        """Count (negative: uncount) bytes kept back for events that will come through
        here (a block builder's last fragment): while shut; released with the rest."""
        if self.open:
            return
        if self._hold is None:
            self._hold = self._session.reorder.hold(self._reason)
        self._hold.count(size)

    def release(self) -> None:
        if self.open:
            return
        self.open = True
        if self._hold is not None:
            for event in self._hold.drain():
                self._emit(event)
            self._hold = None
