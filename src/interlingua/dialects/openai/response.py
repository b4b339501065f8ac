"""OpenAI Chat Completions responses: ``chat.completion`` (kind ``response``) and
``chat.completion.chunk`` SSE streams (kind ``stream``).

Decoding
--------
* Blocks carry the choice index as their ``message`` (n > 1 keeps them apart).
* ``delta.content`` / ``message.content`` -> assistant-text, ``refusal`` ->
  assistant-refusal, ``reasoning_content`` or ``reasoning`` -> assistant-reasoning
  (both are read whatever ``openai_reasoning_field`` says), ``tool_calls`` ->
  tool-call blocks (``id``, ``name``; payload = the escaped arguments text).
* Legacy ``function_call`` (``message.function_call`` / ``delta.function_call``,
  finish ``function_call``) is a tool-call block too: one per choice, keyed
  ``LEGACY_CALL`` (no index), without id (the target's encoder makes one, as
  for any call without).
* Streamed tool calls are keyed by ``index`` and may interleave: the call that
  opened first streams; fragments of another index are held (reorder buffer,
  ``openai:interleaved-tool-calls``) until the choice's tool calls end (its
  finish, or content after them), then follow in index order.
* ``finish_reason`` -> ``Finish`` (see ``interlingua.lifecycle``), ``usage``
  -> ``Usage`` (the usage chunk after the finish chunk included), ``data: [DONE]``
  -> ``End``; an ``error`` chunk -> ``Error``, its kind named by its code or type
  (``error_kind``). A stream that ends without a
  finish (or error) raises ``TruncatedInputError``; one that ends after its
  finish but without ``[DONE]`` ends normally; ``[DONE]`` ends a choice that had
  no ``finish_reason`` with none (a finish chunk's ``null``: what a source
  without a stop reason gives, and the openai client takes).
* ``created``, ``system_fingerprint``, ``service_tier`` are extensions (openai
  writes them back; other dialects record a loss).

Encoding
--------
* Stream: a role chunk first (``delta: {role, content: ""}``), one chunk per
  source frame and block, the finish chunk, the usage chunk (``choices: []``)
  when the source gave usage and ``Options.openai_stream_usage`` (else each count
  is a recorded loss, as OpenAI sends none unasked), ``data: [DONE]`` always -- after an error
  chunk too (``{"error": {"message", "type"}}``: an error's status is HTTP's, and
  openai's ``code`` is a string naming the error, so it has none). Reasoning goes into ``Options.openai_reasoning_field`` and
  nowhere else (no field configured: a recorded loss).
* Response: one ``chat.completion`` body, choices by block ``message``.
* ``created`` is the source's time (ollama ``created_at`` in seconds), else the
  clock at the response's start; a source without an id gets a generated
  ``chatcmpl-<24 hex>``, a tool call without one ``call_<24 hex>``
  (``lifecycle``: response ids and times).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from ...decoding import INTEGER, OPT_INTEGER, OPT_OBJECT, OPT_STRING  # (types of members)
from ... import json as tok
from ...canonical import (
    Block,
    End,
    Error,
    Event,
    Extension,
    Finish,
    Logprobs,
    MessageStart,
    Section,
    Usage,
)
from ...decoding import MemberReader, Members, ResponseDecoderBase
from ...encoding import Encoder, MessageAssembler, ignore
from ...errors import SchemaError, TranscodeError, TruncatedInputError
from ...numbers import INT64_MAX, INT64_MIN
from ...framing import SSE_END, FrameEnd, sse_event
from ...jsonwriter import JsonWriter, dumps
from ...lifecycle import (
    answer_after_error,
    lose_after_error,
    answer_and_error,
    AnswerOrError,
    lose_error_members, source_error_message,
    source_error_type,
    beyond_64_bits,
    BlockStream,
    KeyFirst,
    ReasoningFirst,
    OpenFrame,
    Stamp,
    finish_from,
    finish_to,
    logprob_to_openai,
    lose_unasked_usage,
    merge_usage,
    skip_value,
    tier_from,
    tier_to,
    generated_tool_id,
    openai_created,
    usage_from_openai,
    usage_to_openai,
)
from ...losses import lacks
from ...session import Session
from . import controls

DIALECT = "openai"
_REASONING_KEYS = ("reasoning_content", "reasoning")
_KEPT = ("created", "system_fingerprint", "service_tier")


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------



def _index_in_64_bits(index: int) -> int:
    """A choice's or a tool call's index, within a signed 64-bit integer (as a token count is,
    ``lifecycle.in_64_bits``): beyond it a ``SchemaError`` at the index, located by the decoder."""
    if INT64_MIN <= index <= INT64_MAX:
        return index
    raise SchemaError(beyond_64_bits("index", "an index"))

class _Choice:
    """What one choice has open across chunks."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.block: BlockStream | None = None
        self.held: dict[int, tuple[dict, Any]] = {}  # tool index -> (attrs, Hold of fragments)
        self.closed_tools: set[int] = set()
        self.sinks: dict = {}  # Section -> fragment sink into this choice's block (read_text)
        self.finished = False
        self.delta = None  # the reader of this choice's deltas (a stream)


class _Base(ResponseDecoderBase):
    dialect = DIALECT

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.kept: dict[str, bytes] = {}
        self.choices: dict[int, _Choice] = {}

    def _starting(self) -> None:
        for key, raw in self.kept.items():  # created, system_fingerprint ... (openai only)
            self.emit(Extension(DIALECT, "$." + key, raw, lossless=key == "created" or raw == b"null"))

    def _id(self, value: Any) -> None:
        self.id = value
        self._maybe_start()

    def _model(self, value: Any) -> None:
        self.model = value
        self._maybe_start()

    def _maybe_start(self) -> None:
        if self.id is not None and self.model is not None and not self._preamble():
            self.start_message()

    def _preamble(self) -> bool:
        """A stream's chunk before its message: no choice yet, and id and model empty or absent
        (Azure's first chunk: its prompt's content-filter results, ``"id":""``, ``"model":""``).
        It does not start the message: the id and model of a chunk that follows do."""
        return self.streaming and not self.choices and not self.id and not self.model

    streaming = False

    def top_value(self, key: str, kind: int, value: Any, offset: int) -> None:
        """The value of a top-level member of a body or a chunk (same members)."""
        if key == "choices":
            self.choices_seen = True
            self.each_object(kind, offset, "choices", self._choice)
        elif key == "usage":
            self.read_value(kind, value, offset, self._usage, OPT_OBJECT, key)
        elif key == "id" or key == "model":
            if self.started and (kind == tok.STRING or kind == tok.STRING_OPEN):  # (any cut alike)
                skip_value(self, kind, value, offset)
                return  # every chunk repeats them: once the message started they change nothing
            self.read_value(kind, value, offset, self._id if key == "id" else self._model, OPT_STRING, key)
        elif key == "service_tier":
            self.read_value(kind, value, offset, self._tier, OPT_STRING, key)
        elif key == "object":
            skip_value(self, kind, value, offset)
        elif key == "created":  # the response's time (carried): an integer, checked in every chunk
            self.read_raw(kind, value, offset, lambda raw: self._keep(key, raw), OPT_INTEGER, key)
        elif key == "error":
            self.read_value(kind, value, offset, self._error)
        else:
            self.read_raw(kind, value, offset, lambda raw: self._keep(key, raw))

    def _choice(self, offset: int) -> None:
        reader = self._choice_reader
        if reader is None:
            reader = self._choice_reader = _ChoiceReader(self, streaming=self.streaming)
        reader.begin()  # installs its own reader

    _choice_reader = None

    def _keep(self, key: str, raw: bytes) -> None:
        """A top-level field without canonical meaning: an extension, once (every chunk repeats
        it; another dialect loses it once, the same dialect copies the stream)."""
        if key in self.kept:
            return
        self.kept[key] = raw
        if self.errored and not self.started:
            self._lose_kept(key, raw)
        if self.started:  # after id and model: it goes out now
            self.out(Extension(DIALECT, "$." + key, raw, lossless=key == "created" or raw == b"null"))

    def _lose_kept(self, key: str, raw: bytes) -> None:
        """A top-level member beside an error (openai's ``request_id``): no message carries it."""
        if key != "created" and raw != b"null":
            self.session.lose_member("$." + key)

    tier_seen = False

    def _tier(self, value: Any) -> None:
        """``service_tier`` -> the canonical usage's tier (anthropic holds it in its usage), once."""
        if value is not None and not self.tier_seen:
            self.tier_seen = True
            self.out(Usage(service_tier=tier_from(DIALECT, value)))

    def _error(self, value: Any) -> None:
        if value is None:
            return
        self.start_message_for_error()
        for c in self.choices.values():  # every block gets its last fragment; the error follows it
            self.close_block(c)
        err = value if isinstance(value, dict) else {"message": value}
        kind, code_named_it = error_kind(err)
        lose_error_members(err, self.session, carried=("code",) if code_named_it else ())
        for key, raw in self.kept.items():  # (top-level members: no message starts to carry them)
            self._lose_kept(key, raw)
        code = err.get("code")
        # (a code beyond 64 bits is no status: the native core holds one in 64 bits)
        status = code if isinstance(code, int) and not isinstance(code, bool) and INT64_MIN <= code <= INT64_MAX else None
        self.emit(Error(kind, source_error_message(err.get("message")), status))
        self.errored = True

    errored = False

    def start_message_for_error(self) -> None:
        self.gate.release()  # an error needs no id

    def choice(self, index: int) -> _Choice:
        c = self.choices.get(index)
        if c is None:
            c = self.choices[index] = _Choice(index)
        return c

    # -- blocks of a choice --------------------------------------------------------

    def open_block(self, c: _Choice, section: Section, attrs: dict | None = None, key: Any = None) -> BlockStream:
        """The choice's open block of ``section`` (and ``key``), or a new one with ``attrs``."""
        if c.block is not None and c.block.section is section and c.block.key == key:
            return c.block
        self.close_block(c)
        c.block = BlockStream(self.out, section, c.index, attrs, key)
        return c.block

    def close_block(self, c: _Choice) -> None:
        """Close the open block; held tool calls follow when the tool calls end."""
        if c.block is not None:
            was_tool = c.block.section is Section.TOOL_CALL
            if was_tool:
                c.closed_tools.add(c.block.key)
            c.block.close()
            c.block = None
            if was_tool:
                self._flush_held_tools(c)

    def _flush_held_tools(self, c: _Choice) -> None:
        for index in sorted(c.held):
            attrs, hold = c.held.pop(index)
            block = BlockStream(self.out, Section.TOOL_CALL, c.index, attrs, index)
            for data in hold.drain():
                block.fragment(data)
            block.close()
            c.closed_tools.add(index)

    def read_text(self, c: _Choice, section: Section, kind: int, value: Any, offset: int, what: str,
                  sink=None) -> None:
        """A string member (null: none) streamed into the choice's block of ``section``
        (or into ``sink``, which passes it on to that block)."""
        if kind == tok.NULL:
            return
        self.read_string(kind, value, offset, sink or self.block_sink(c, section, what), what)

    def block_sink(self, c: _Choice, section: Section, what: str):
        sink = c.sinks.get(section)
        if sink is None:  # one per choice and section: a stream has one such member a frame
            attrs = {"path": f"$.choices[{c.index}].{'delta' if self.streaming else 'message'}.{what}"}

            def sink(data: bytes, init: bool, fin: bool) -> None:
                if data:
                    self.open_block(c, section, attrs).fragment(data)
            c.sinks[section] = sink
        return sink

    def finish_choice(self, c: _Choice, reason: Any) -> None:
        if c.block is not None and c.block.section is Section.TOOL_CALL:
            self.close_block(c)
        self.close_block(c)
        self._flush_held_tools(c)
        c.finished = True
        self.out(Finish(finish_from(DIALECT, reason), choice=c.index))


#: the block key of a choice's legacy ``function_call`` (``tool_calls`` indexes are >= 0)
LEGACY_CALL = -1


class _ToolCallReader(MemberReader):
    """One ``tool_calls`` element (a whole call, or a stream delta of one), or a
    legacy ``function_call`` (``legacy``: its members are the function's)."""

    def __init__(self, d: _Base, c: _Choice, streaming: bool, position: int, legacy: bool = False) -> None:
        super().__init__(d)
        self.c = c
        self.streaming = streaming
        member = "delta" if streaming else "message"
        if legacy:
            self.index: int | None = LEGACY_CALL
            self.attrs: dict = {"path": f"$.choices[{c.index}].{member}.function_call"}
            self.member = self._function_member
        else:
            self.index = None if streaming else position
            self.attrs = {"path": f"$.choices[{c.index}].{member}.tool_calls[{position}]"}
        self.pending = None  # Hold of argument fragments while the call's place is unknown
        self.sink = None
        d.push(self.on_token)

    def member(self, key: str, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if key == "index":
            d.read_value(kind, value, offset, self._index, INTEGER, "a tool call's index")
        elif key == "id":
            d.read_value(kind, value, offset, lambda v: self._attr("id", v), OPT_STRING, "a tool call's id")
        elif key == "type":
            skip_value(d, kind, value, offset)
        elif key == "function":
            if kind != tok.NULL:
                d.each_member(kind, offset, "function", self._function_member)
        elif key == "custom":  # a custom tool's call (free-form input): no canonical tool call
            self.custom = True
            d.read_raw(kind, value, offset, ignore)
        else:
            d.read_raw(kind, value, offset, lambda raw: d.session.lose_member(
                f"{self.attrs['path']}.{key}"))

    custom = False

    def _index(self, value: Any) -> None:
        self.index = _index_in_64_bits(value)
        if self.streaming:  # a delta names its call by index
            self.attrs["path"] = f"$.choices[{self.c.index}].delta.tool_calls[{value}]"

    def _attr(self, key: str, value: Any) -> None:
        if value is not None:
            self.attrs[key] = value

    def _function_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if key == "name":
            d.read_value(kind, value, offset, lambda v: self._attr("name", d.session.tool_name_in(v)),
                         OPT_STRING, "a tool call's name")
        elif key == "arguments":
            if kind != tok.NULL:
                d.read_string(kind, value, offset, self._arguments, "arguments")
        else:  # (was dropped with nothing recorded; a legacy function_call's members are the function's)
            where = self.attrs["path"] + ("" if self.index == LEGACY_CALL else ".function")
            d.read_raw(kind, value, offset, lambda raw: raw == b"null" or d.session.lose_member(f"{where}.{key}"))

    def _arguments(self, data: bytes, init: bool, fin: bool) -> None:
        if not data:
            return
        # (a call opens once its name is known: the target writes it first, and a body in the
        # openai client's field order -- function: arguments, then name -- gives it last)
        if self.sink is None and self.index is not None and ("name" in self.attrs
                                                               or self.index in self.c.held
                                                               or self._is_current()):
            self.sink = self._route()
        if self.sink is not None:
            self.sink(data)
            return
        if self.pending is None:  # arguments before index/name: hold till the element ends
            self.pending = self.d.session.reorder.hold("openai:arguments-before-index")
        self.pending.append(data, len(data))

    def _is_current(self) -> bool:
        b = self.c.block
        return b is not None and b.section is Section.TOOL_CALL and b.key == self.index

    def _route(self):
        """Where this call's fragments go: the open block, a held call, or a new block."""
        d, c, index = self.d, self.c, self.index
        if self._is_current():
            return c.block.fragment
        if index in c.closed_tools:
            raise SchemaError(f"tool call index {index} continued after it ended", dialect=DIALECT)
        if index in c.held:
            hold = c.held[index][1]
            return lambda data: hold.append(data, len(data))
        if c.block is not None and c.block.section is Section.TOOL_CALL:
            hold = d.session.reorder.hold("openai:interleaved-tool-calls")
            c.held[index] = (dict(self.attrs), hold)
            return lambda data: hold.append(data, len(data))
        return d.open_block(c, Section.TOOL_CALL, dict(self.attrs), index).fragment

    def end(self, offset: int) -> None:
        if self.custom:
            self.d.session.lose_member(self.attrs["path"], "custom tool calls", "only function calls are carried")
            return
        if self.index is None:
            raise self.d.error("tool call delta without index", offset)
        if self.sink is None:
            self.sink = self._route()
        if self.pending is not None:
            for data in self.pending.drain():
                self.sink(data)
            self.pending = None
        if not self.streaming:
            self.d.close_block(self.c)
            return
        self._late_identity()
        if self._is_current():
            self.c.block.announce()  # id and name go out with the frame that brought them

    def _late_identity(self) -> None:
        """An id or name a call's later delta brings (a provider that splits them): a call not
        yet written takes it; one whose head went out with an earlier delta cannot, a loss."""
        c = self.c
        if self._is_current():
            block_attrs, written = c.block.attrs, c.block.started
        elif self.index in c.held:
            block_attrs, written = c.held[self.index][0], False
        else:
            return
        for key, member in (("id", "id"), ("name", "function.name")):
            value = self.attrs.get(key)
            if not value or block_attrs.get(key) == value:
                continue  # (DashScope's later deltas: "id":"", "name":"")
            if not written and not block_attrs.get(key):
                block_attrs[key] = value
            else:
                self.d.session.lose_member(f"{self.attrs['path']}.{member}",
                                           "place for a tool call's " + key + " after its first delta", "not sent")


class _ChoiceReader(MemberReader):
    """One element of ``choices``; ``delta`` (stream) or ``message`` (response).

    ``index`` decides where the content goes: read at once when it is the
    first member (the usual order); a source that puts it after the content
    (sorted keys) has the content's tokens held until it comes (``KeyFirst``).
    One reader serves every element, one after another (``begin``).
    """

    def __init__(self, d: _Base, streaming: bool) -> None:
        super().__init__(d)
        self.streaming = streaming
        self._handlers = (self._first, self.on_token)  # bound once

    def begin(self) -> None:
        self.c: _Choice | None = None
        self.finish: Any = None
        self.has_finish = False
        self.d.push(self._handlers[0])

    def _first(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.KEY and value == "index":
            d.replace(self._handlers[1])
            d.then(self._index)
        else:
            d.pop()
            KeyFirst(d, "index", self._start, "openai:content-before-index", INTEGER)
            d.on_token(kind, value, offset)

    def _index(self, kind: int, value: Any, offset: int) -> None:
        KeyFirst.read_key(self.d, "index", kind, value, offset, self._choose, INTEGER)

    def _choose(self, index: Any) -> None:
        self.c = self.d.choice(_index_in_64_bits(index) if isinstance(index, int) else 0)

    def _start(self, index: Any) -> None:
        self._choose(index)
        self.d.push(self._handlers[1])

    def end(self, offset: int) -> None:
        if self.has_finish and self.finish is not None:
            self.d.finish_choice(self.c, self.finish)

    def member(self, key: str, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if key in ("delta", "message"):
            if kind != tok.OBJECT_START:
                raise d.wrong_type(kind, f"an object for {key}", offset)
            c = self.c
            if not self.streaming:
                d.push(_MessageReader(d, c, False).on_token)
            else:  # every chunk has a delta: one reader per choice (its state is per member)
                if c.delta is None:
                    c.delta = _MessageReader(d, c, True).on_token
                d.push(c.delta)
        elif key == "finish_reason":
            if kind == tok.NULL:  # every chunk but the last: _finish(None), inline
                self.has_finish = True
                self.finish = None
            else:
                d.read_value(kind, value, offset, self._finish, OPT_STRING, key)
        elif key == "logprobs":
            d.read_raw(kind, value, offset, lambda raw: raw != b"null" and d.session.lose_member(
                f"$.choices[{self.c.index}].logprobs", "log probabilities"))
        else:
            d.read_raw(kind, value, offset, lambda raw: d.session.lose_member(f"$.choices[{self.c.index}].{key}"))

    def _finish(self, value: Any) -> None:
        self.has_finish = True
        self.finish = value


class _MessageReader(MemberReader):
    def __init__(self, d: _Base, c: _Choice, streaming: bool) -> None:
        super().__init__(d)
        self.c = c
        self.streaming = streaming
        self.tool_position = 0
        # content before reasoning_content in one message (or delta) goes after it
        self.text_first = ReasoningFirst(d.session, "openai:content-before-reasoning",
                                         d.block_sink(c, Section.ASSISTANT_TEXT, "content"))
        self._reasoning_sink = None  # made at the first reasoning member (its key names the path)

    def reasoning_sink(self, key: str):
        if self._reasoning_sink is None:
            reasoning = self.d.block_sink(self.c, Section.ASSISTANT_REASONING, key)

            def sink(data: bytes, init: bool, fin: bool) -> None:
                reasoning(data, init, fin)
                if fin:
                    self.text_first.reasoning_end()
            self._reasoning_sink = sink
        return self._reasoning_sink

    def end(self, offset: int) -> None:
        self.text_first.release()

    def member(self, key: str, kind: int, value: Any, offset: int) -> None:
        d, c = self.d, self.c
        if c.finished and key != "role" and kind != tok.NULL and not (kind == tok.STRING and not value):
            raise d.error(f"{key} after choice {c.index} finished (its finish_reason came)", offset)
        if key != "content" and kind != tok.NULL:  # (a null member shows nothing: the text waits on)
            self.text_first.member(key in _REASONING_KEYS)
        if key == "content":
            if c.block is not None and c.block.section is Section.TOOL_CALL and kind != tok.NULL \
                    and value:
                d.close_block(c)  # text after tool calls: the calls are complete
            d.read_text(c, Section.ASSISTANT_TEXT, kind, value, offset, key, self.text_first.text)
        elif key == "refusal":
            d.read_text(c, Section.ASSISTANT_REFUSAL, kind, value, offset, key)
        elif key in _REASONING_KEYS:
            d.read_text(c, Section.ASSISTANT_REASONING, kind, value, offset, key, self.reasoning_sink(key))
        elif key == "tool_calls":
            if kind != tok.NULL:
                d.each_object(kind, offset, "tool_calls", self._tool_call)
        elif key == "function_call":  # legacy: the choice's one call
            if kind != tok.NULL:
                if kind != tok.OBJECT_START:
                    raise d.wrong_type(kind, "an object for function_call", offset)
                _ToolCallReader(d, c, self.streaming, 0, legacy=True)
        elif key == "role":
            skip_value(d, kind, value, offset)
        else:
            d.read_raw(kind, value, offset, lambda raw: raw not in (b"null", b"[]") and d.session.lose_member(
                f"$.choices[{c.index}].{'delta' if self.streaming else 'message'}.{key}"))

    def _tool_call(self, offset: int) -> None:
        _ToolCallReader(self.d, self.c, self.streaming, self.tool_position)  # installs its own reader
        self.tool_position += 1


class StreamDecoder(_Base):
    """``chat.completion.chunk`` SSE stream -> canonical events (one chunk per frame)."""

    streaming = True

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.usage: Usage | None = None
        self.ended = False
        self.frames = 0
        self._chunk = Members(self, self.top_value)  # reads every chunk

    def begin_frame(self) -> None:
        self.restart(self._document)

    def _document(self, kind: int, value: Any, offset: int) -> None:
        self.pop()  # the chunk's reader takes its place
        self._chunk.read(kind, offset, "a chunk")
        if self.ended:
            raise self.error("chunk after [DONE]", offset)

    def _usage(self, value: Any) -> None:
        if isinstance(value, dict):
            self.out(usage_from_openai(value, self.session))

    def end_frame(self, event: str | None) -> None:
        self.frames += 1
        if self.started or self.errored:
            return
        if self._preamble():
            self.id = self.model = None  # (its empty ones, and its created 0, are not the message's)
            self.kept.pop("created", None)
        else:
            self.start_message()  # the first chunk ended without id or model

    def frame_text(self, event: str | None, data: bytes) -> None:
        if data != b"[DONE]":
            raise SchemaError(f"SSE data is neither a JSON object nor [DONE]: {data[:40]!r}", dialect=DIALECT)
        self.terminated = True
        self._end()

    terminated = False  # the stream's own data: [DONE] came

    def missing_terminator(self) -> bytes:
        """What a copy of this stream (``interlingua.passthrough``) adds at its end:
        ``[DONE]`` when the source ended without it (every openai stream gets one)."""
        return b"" if self.terminated else sse_event(None, b"[DONE]")

    def _end(self) -> None:
        if self.ended:
            return
        self.ended = True
        if not self.started and not self.errored:
            self.start_message()  # (only preamble chunks came)
        self.gate.release()
        for c in self.choices.values():
            if not c.finished:
                if self.errored:  # (an answer after the error opened a block: it gets its last fragment)
                    self.close_block(c)
                    continue
                if self.terminated:  # [DONE] ended it without a finish_reason: no reason given
                    self.finish_choice(c, None)
                    continue
                raise TruncatedInputError(f"stream ended before choice {c.index} finished", dialect=DIALECT)
        self.emit(End())

    def finish(self) -> None:
        if self.ended:
            return
        if not self.errored and (not self.choices or not all(c.finished for c in self.choices.values())):
            raise TruncatedInputError("stream ended before its finish_reason", dialect=DIALECT)
        self._end()  # a finish without [DONE] ends normally


class ResponseDecoder(_Base):
    """``chat.completion`` body -> canonical events."""

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.usage: Usage | None = None
        self.then(lambda kind, value, offset: self.each_member(kind, offset, "the response body", self.top_value, self._body_end))

    choices_seen = False

    def _body_end(self) -> None:
        if not self.errored and not self.choices_seen:  # (`{}`, another dialect's body: not an empty answer)
            raise SchemaError("a chat.completion without choices (and no error)", dialect=DIALECT, path="$.choices")
        if not self.errored:
            self.start_message()
        for c in self.choices.values():  # a choice without finish_reason (null): its blocks end here
            if not c.finished:
                self.close_block(c)
                self._flush_held_tools(c)
        self.gate.release()
        if self.usage is not None:
            self.emit(self.usage)
        self.emit(End())

    def _usage(self, value: Any) -> None:
        if isinstance(value, dict):
            self.usage = usage_from_openai(value, self.session)


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


class _EncoderBase(Encoder):
    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.reasoning_key = session.options.openai_reasoning_field
        self.id: str | None = None
        self.model: str | None = None
        self.kept: dict[str, bytes] = {}
        self.usage: Usage | None = None
        self.tool_count = 0
        self.stamp = Stamp(session.start)  # the source's time, or the clock; a generated id
        self._head: bytes | None = None  # _head_members(), until id, model or a kept field changes

    def _message_start(self, event: MessageStart) -> None:
        if event.choice == 0:
            self.id, self.model = event.id, event.model
            self._head = None

    def _usage_event(self, event: Usage) -> None:
        """Counts merge into the usage object; the service tier goes to the body's top."""
        if event.service_tier is not None:
            tier = tier_to(DIALECT, event, self.session)
            if tier is not None and "service_tier" not in self.kept:
                self.kept["service_tier"] = dumps(tier)
                self._head = None
            if event == Usage(service_tier=event.service_tier):
                return  # no counts: no usage object
        self.usage = merge_usage(self.usage, event)

    def _extension(self, ext: Extension) -> None:
        if self.stamp.source(ext):  # a time field (lifecycle: response ids and times)
            self._head = None
        if ext.dialect == DIALECT and ext.path[2:] in _KEPT:
            self.kept[ext.path[2:]] = ext.raw
            self._head = None
        elif not (ext.dialect == "ollama" and ext.path == "$.created_at"):
            self.foreign_extension(ext)

    def _response_id(self) -> str:
        return self.stamp.response_id("chatcmpl-", self.id, self.model)

    def _head_members(self) -> bytes:
        """``"id":...,"object":...,"created":...,"model":...``: every chunk starts with them."""
        if self._head is None:
            created = self.kept.get("created") or openai_created(self.stamp.time_us)
            out = (b'"id":' + dumps(self._response_id()) + b',"object":' + dumps(self.object)
                   + b',"created":' + created + b',"model":' + dumps(self.model or ""))
            for key in ("service_tier", "system_fingerprint"):
                if key in self.kept:
                    out += b"," + dumps(key) + b":" + self.kept[key]
            self._head = out
        return self._head

    def _tool_attrs(self, block: Block) -> tuple[str, str]:
        attrs = block.attrs or {}
        call_id = attrs.get("id")
        if call_id is None:
            call_id = generated_tool_id(self._response_id(), self.tool_count)
        self.tool_count += 1
        return call_id, self._tool_name(block)

    def _section_key(self, block: Block) -> str | None:
        """The delta/message member for a block's section, or None (lost)."""
        s = block.section
        attrs = block.attrs or {}
        if s is Section.ASSISTANT_TEXT:
            return "content"
        if s is Section.ASSISTANT_REFUSAL:
            return "refusal"
        if s is Section.ASSISTANT_REASONING:
            why = controls.reasoning_loss(attrs, self.reasoning_key)
            self._lose_signature(block, attrs)  # its own field: lost with the block or alone
            if why is not None:
                self._lose_block(block, *why)
                return None
            return self.reasoning_key
        if s is Section.TOOL_CALL:
            return "tool_calls"
        self._lose_unplaced(block)
        return None


# an escape of JSON text is one character (a surrogate pair one too); UTF-8 continuation bytes are none
_ESCAPE = re.compile(rb'\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.')
_CONTINUATION = re.compile(rb"[\x80-\xbf]")


def _chars(escaped: bytes) -> int:
    """The characters (code points) of an escaped JSON text fragment: openai's annotation indexes."""
    plain = _ESCAPE.sub(b"x", escaped)
    return len(plain) - len(_CONTINUATION.findall(plain))


#: openai's error ``type`` for a canonical kind (anthropic's names): its API says
#: ``server_error`` for a server's fault and ``insufficient_quota`` for an account out of
#: credit (``ERROR_TYPE_KINDS`` back); any other kind is written as it is
ERROR_TYPES = {"api_error": "server_error", "overloaded_error": "server_error", "timeout_error": "server_error",
               "billing_error": "insufficient_quota"}

#: openai's error ``code`` for a canonical kind that has one whatever caused it (``ERROR_CODE_KINDS``
#: back); the other kinds' codes name a cause (``invalid_api_key``, ``model_not_found``) only a
#: caller that knows it can give
ERROR_CODES = {"rate_limit_error": "rate_limit_exceeded", "billing_error": "insufficient_quota"}

#: the canonical kind of an openai error's ``code`` (OpenAI's error codes guide and its
#: bodies): the code is the finer word -- a wrong API key is type ``invalid_request_error``,
#: code ``invalid_api_key`` (a 401), an unknown model code ``model_not_found`` (a 404)
ERROR_CODE_KINDS = {
    "rate_limit_exceeded": "rate_limit_error", "slow_down": "rate_limit_error",
    "insufficient_quota": "billing_error", "invalid_api_key": "authentication_error",
    "model_not_found": "not_found_error", "unsupported_country_region_territory": "permission_error",
    "server_is_overloaded": "overloaded_error",
}
#: the canonical kind of an openai error's ``type`` (when its code names none): a rate limit on
#: ``requests`` or ``tokens``; ``insufficient_quota`` (429: no credit left, a retry does not
#: help) anthropic's ``billing_error``, the closest kind (its own is a 402); ``server_error``
#: ``api_error``. A type not listed is its own kind: ``invalid_request_error``,
#: ``authentication_error``, ``permission_error``, ``not_found_error``, ``rate_limit_error`` are
#: anthropic's names already, and an unknown one goes on (into anthropic: ``api_error``)
ERROR_TYPE_KINDS = {
    "requests": "rate_limit_error", "tokens": "rate_limit_error", "insufficient_quota": "billing_error",
    "server_error": "api_error", "service_unavailable_error": "overloaded_error",
    "request_forbidden": "permission_error",
}


def error_kind(err: dict) -> tuple[str, bool]:
    """The canonical kind of an openai error object (``ERROR_CODE_KINDS``, else
    ``ERROR_TYPE_KINDS``), and whether its code named it: then the kind carries the code,
    which is no loss; any other code says more than the kind and stays a recorded loss."""
    code = err.get("code")
    if isinstance(code, str) and code in ERROR_CODE_KINDS:
        return ERROR_CODE_KINDS[code], True
    kind = source_error_type(err.get("type"))
    return ERROR_TYPE_KINDS.get(kind, kind), False


def error_type(kind: str) -> str:
    """The ``type`` of an openai error body or in-stream error for a canonical kind (the
    proxy's error bodies use it too: one vocabulary for one failure)."""
    return ERROR_TYPES.get(kind, kind)


def _error_body(error: Error) -> bytes:
    """``{"error": {"message", "type"}}``. No ``code``: openai's is a string naming the error
    (client ``ErrorObject.code: Optional[str]``) or null, never the HTTP status."""
    return dumps({"error": {"message": error.message, "type": error_type(error.type)}})


_TEXT_TAIL = b'"},"finish_reason":null}]}' + SSE_END  # closes a chunk of a text delta
_TOOL_TAIL = b'"}}]},"finish_reason":null}]}' + SSE_END  # closes a chunk of a tool-call delta


class StreamEncoder(_EncoderBase):
    """Canonical events -> ``chat.completion.chunk`` SSE."""

    object = "chat.completion.chunk"

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.logprobs: dict[int, list] = {}  # choice -> token entries of the current source frame
        self.frame = OpenFrame(write)
        self.started = False  # the role chunk is written
        self.done = False
        self.block: tuple | None = None  # (seq, key or None if lost, tool index)
        self.seq = 0
        self.roles: set[int] = set()
        self._tool_counts: dict[int, int] = {}  # tool calls so far, per choice (their delta index)
        self._finished: dict[int, str | None] = {}  # choice -> the finish_reason written

    def _chunk(self, choice_json: bytes, extra: bytes = b"") -> bytes:
        return b"data: {" + self._head_members() + b',"choices":[' + choice_json + b"]" + extra + b"}" + SSE_END

    def _ensure_role(self, choice: int) -> None:
        if choice not in self.roles:
            self.roles.add(choice)
            self.frame.close()
            self.write(self._chunk(b'{"index":' + str(choice).encode()
                                   + b',"delta":{"role":"assistant","content":""},"finish_reason":null}'))

    def _logprobs_chunk(self) -> None:
        """The token entries of one source frame (``Logprobs``): one chunk with an empty
        delta after that frame's content (the client's accumulator appends them)."""
        if self.logprobs:
            self.frame.close()
            for choice, entries in sorted(self.logprobs.items()):
                self._ensure_role(choice)
                self.write(self._chunk(b'{"index":' + str(choice).encode() + b',"delta":{},"logprobs":'
                                       + dumps({"content": entries, "refusal": None}) + b',"finish_reason":null}'))
            self.logprobs = {}

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block and self.errored:  # the error event ended the target's stream
            raise answer_after_error()
        if self.logprobs and t is not Logprobs and t is not Block:
            self._logprobs_chunk()
        if t is Block:
            self._block(event)
        elif t is Logprobs and self.errored:  # (its error chunk ended the stream)
            lose_after_error(event, self.session, DIALECT)
        elif t is Logprobs:
            self.logprobs.setdefault(event.choice, []).append(logprob_to_openai(event.raw))
        elif t is FrameEnd:
            self.frame.close()
        elif t is MessageStart:
            self._message_start(event)
        elif t is Extension:
            self._extension(event)
        elif t is Finish:
            if self.errored:  # (its error chunk ended the stream)
                lose_after_error(event, self.session, DIALECT)
                return
            self.frame.close()
            self._ensure_role(event.choice)
            reason = finish_to(DIALECT, event.reason, self.session, event.stop_sequence)
            # a repeated stop (anthropic's message_delta that brings later counts) is one finish chunk
            if event.choice not in self._finished or self._finished[event.choice] != reason:
                self._finished[event.choice] = reason
                self.write(self._chunk(b'{"index":' + str(event.choice).encode()
                                       + b',"delta":{},"finish_reason":' + dumps(reason) + b"}"))
        elif t is Usage:
            self._usage_event(event)
        elif t is Error:
            self._error(event)
        elif t is End:
            self._end()

    def _block(self, block: Block) -> None:
        if block.init:
            self.frame.close()
            self.seq += 1
            key = self._section_key(block)
            if key is None:
                self.block = (self.seq, None, None)
                return
            self._ensure_role(block.message)
            if key == "tool_calls":
                call_id, name = self._tool_attrs(block)
                index = self._tool_index(block.message)
                self.block = (self.seq, key, index, block.message,
                              b'"tool_calls":[{"index":' + str(index).encode() + b',"function":{"arguments":"',
                              _TOOL_TAIL)
                head = self._delta_head(block.message) + (
                    b'"tool_calls":[{"index":' + str(index).encode() + b',"id":' + dumps(call_id)
                    + b',"type":"function","function":{"name":' + dumps(name) + b',"arguments":"')
                self.frame.close()
                self.write(head)
                self.frame.key = (self.seq, 0)
                self.frame._tail = _TOOL_TAIL
                self.write(block.payload)
                return
            self._lose_joined(block, key)
            self.block = (self.seq, key, None, block.message, dumps(key) + b':"', _TEXT_TAIL)
        if self.block is None or self.block[1] is None:
            if block.fin and not block.init:  # a lost block's late signature is lost too
                self._lose_signature(block, block.attrs or {})
            return
        # member: what follows the delta head in a frame that continues the block
        seq, key, index, choice, member, tail = self.block
        # a tool call continues the frame its head opened (key (seq, 0)), else it opens (seq, 1)
        frame_key = (seq, 0) if key == "tool_calls" and self.frame.key == (seq, 0) else (seq, 1)
        self.frame.fragment(frame_key, lambda: self._delta_head(choice) + member, tail, block.payload)
        if block.fin:
            self.block = None
            if not block.init:
                self._lose_signature(block, block.attrs or {})

    def _tool_index(self, choice: int) -> int:
        counts = self._tool_counts
        n = counts.get(choice, 0)
        counts[choice] = n + 1
        return n

    def _delta_head(self, choice: int) -> bytes:
        return (b"data: {" + self._head_members() + b',"choices":[{"index":' + str(choice).encode()
                + b',"delta":{')

    def _error(self, error: Error) -> None:
        self.frame.close()
        self.write(sse_event(None, _error_body(error)))
        self.errored = True

    errored = False

    def _end(self) -> None:
        if self.done:
            return
        self.frame.close()
        if self.usage is not None:
            if not self.session.options.openai_stream_usage:
                lose_unasked_usage(self.usage, self.session)
            elif self.errored:
                lose_after_error(self.usage, self.session, DIALECT)
            else:
                usage = usage_to_openai(self.usage, self.session)
                if usage is not None:
                    self.write(self._chunk(b"", b',"usage":' + usage))
        self.write(sse_event(None, b"[DONE]"))
        self.done = True

    def abort(self, error: Error) -> None:
        if self.done:
            return
        if not self.errored:  # (after the source's own error event: only the stream's end)
            self._error(error)
        self._end()


class ResponseEncoder(AnswerOrError, _EncoderBase):
    """Canonical events -> one ``chat.completion`` body."""

    object = "chat.completion"

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.out = JsonWriter(write)
        self.begun = False
        self.choice: int | None = None
        self.msg: MessageAssembler | None = None
        # (not ``finish``: that is ``Encoder.finish()``, which ``close()`` calls)
        self.finish_reasons: dict[int, str | None] = {}
        self.closed: set[int] = set()  # the choices written whole (their finish came)
        self.block = None  # (write, close) of the block in progress
        self.logprobs: dict[int, list] = {}  # choice -> its token entries (written when it closes)
        self.content_chars = 0  # characters of the open choice's content so far (citation spans)
        self.text_span = (0, 0)  # the span of its last text block: what a citations block that follows cites
        self.annotations: list = []  # the open choice's url_citation annotations (written when it closes)
        self.done = False

    def _begin(self) -> None:
        if not self.begun:
            if self.errored:
                raise answer_and_error()
            self.begun = True
            self.tier_written = "service_tier" in self.kept
            self.write(b"{" + self._head_members() + b',"choices":[')

    def _open_choice(self, index: int) -> MessageAssembler:
        if index in self.closed:
            # its finish_reason is written: a block (or annotations) for it has no place left
            raise TranscodeError(f"an event of choice {index} after its finish (the choice is written)",
                                 dialect=DIALECT)
        if self.choice != index:
            self._close_choice()
            self._begin()
            if self.choice is not None:
                self.write(b",")
            self.write(b'{"index":' + str(index).encode() + b',"message":')
            self.msg = MessageAssembler(JsonWriter(self.write), self.session, "openai:member-order")
            self.msg.scalar("role", b'"assistant"')
            self.choice = index
        return self.msg

    def _close_choice(self, reason: str | None = None) -> None:
        if self.msg is not None:
            if not self.msg.has("content"):
                self.msg.scalar("content", b"null")
            if self.annotations:
                self.msg.trailing("annotations", dumps(self.annotations))
                self.annotations = []
            self.msg.close()
            self.msg = None
            self.closed.add(self.choice)
            reason = self.finish_reasons.pop(self.choice, reason)
            self.content_chars, self.text_span = 0, (0, 0)
            entries = self.logprobs.pop(self.choice, None)
            if entries:  # choices[].logprobs after the message (its content may have streamed)
                self.write(b',"logprobs":' + dumps({"content": [logprob_to_openai(e) for e in entries.drain()],
                                                    "refusal": None}))
            self.write(b',"finish_reason":' + dumps(reason) + b"}")

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block:
            self._block(event)
        elif t is MessageStart:
            self._message_start(event)
        elif t is Extension:
            self._extension(event)
        elif t is Finish:
            reason = finish_to(DIALECT, event.reason, self.session, event.stop_sequence)
            if self.choice == event.choice:
                self._close_choice(reason)
            else:  # a finish for a choice not written yet
                self._open_choice(event.choice)
                self._close_choice(reason)
        elif t is Logprobs:
            hold = self.logprobs.get(event.choice)
            if hold is None:
                hold = self.logprobs[event.choice] = self.session.reorder.hold("openai:logprobs-after-message")
            hold.append(event.raw, len(event.raw))
        elif t is Usage:
            self._usage_event(event)
        elif t is Error:
            self._error(event)
        elif t is End:
            self._end()

    def _block(self, block: Block) -> None:
        if not block.init:
            if self.block is not None:
                self.block[0](block.payload)
                if block.fin:
                    self.block[1]()
                    self.block = None
                    self._lose_signature(block, block.attrs or {})
            elif block.fin:  # a lost block's late signature is lost too
                self._lose_signature(block, block.attrs or {})
            return
        if block.section is Section.CITATIONS and (block.attrs or {}).get("dialect") == "anthropic":
            self._open_choice(block.message)
            self._annotations(block)
            return
        key = self._section_key(block)
        if key is None:
            self.block = None
            return
        msg = self._open_choice(block.message)
        if key == "tool_calls":
            call_id, name = self._tool_attrs(block)
            w = msg.member("tool_calls", b"[")
            w._separate()
            w.write(b'{"id":' + dumps(call_id) + b',"type":"function","function":{"name":' + dumps(name)
                    + b',"arguments":"')
            placed = (w.write, lambda: w.write(b'"}}'))
        else:
            self._lose_joined(block, key)
            w = msg.member(key, b'"')
            placed = (self._counted(w.write), lambda: None) if key == "content" else (w.write, lambda: None)
        placed[0](block.payload)
        if block.fin:
            placed[1]()
        else:
            self.block = placed

    def _counted(self, write):
        """``write`` for a text block of the content, keeping its span (in characters)."""
        self.text_span = (self.content_chars, self.content_chars)

        def counted(payload: bytes) -> None:
            self.content_chars += _chars(payload)
            self.text_span = (self.text_span[0], self.content_chars)
            write(payload)
        return counted

    def _annotations(self, block: Block) -> None:
        """Anthropic citations of the text block before: each web search result an url_citation over
        that block's span; what openai has no field for is recorded, per citation."""
        at = (block.attrs or {}).get("path") or "$.content[].citations"
        start, end = self.text_span
        for n, citation in enumerate(json.loads(block.payload or b"[]")):
            here = f"{at}[{n}]"
            kind = citation.get("type") if isinstance(citation, dict) else None
            if kind != "web_search_result_location" or not isinstance(citation.get("url"), str):
                self.session.lose(here, lacks(f"{kind or 'a'} citation", DIALECT, "such citation"))
                continue
            title = citation.get("title")
            if title is not None and not isinstance(title, str):  # (openai's title is a string)
                self.session.lose(f"{here}.title", lacks("title of a web search citation", DIALECT,
                                                         "title that is not a string", "written as \"\""))
            found = {"url": citation["url"], "title": title if isinstance(title, str) else "",
                     "start_index": start, "end_index": end}
            self.annotations.append({"type": "url_citation", "url_citation": found})
            for key in citation:
                if key not in ("type", "url", "title") and citation[key] is not None:
                    self.session.lose(f"{here}.{key}", lacks(f"{key} of a web search citation", DIALECT, "field for it"))

    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        self._begin()
        self._close_choice()
        # (made before the body's tail is written: its sum may be beyond 64 bits, an error)
        usage = usage_to_openai(self.usage, self.session) if self.usage is not None else None
        self.write(b"]")
        if usage is not None:
            self.write(b',"usage":' + usage)
        if not self.tier_written and "service_tier" in self.kept:  # told after the head went out
            self.write(b',"service_tier":' + self.kept["service_tier"])
        self.write(b"}")

    def abort(self, error: Error) -> None:
        """Nothing written yet: an openai error body; otherwise the body cannot be mended."""
        if self.done:
            return
        self.done = True
        if not self.begun:
            self.write(_error_body(error))
