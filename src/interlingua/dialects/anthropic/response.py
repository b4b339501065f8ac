"""Anthropic Messages responses: the ``message`` body (kind ``response``) and the SSE
lifecycle (kind ``stream``: message_start, content_block_start / _delta / _stop,
message_delta, message_stop, ping, error).

Decoding
--------
* ``text`` -> assistant-text; ``thinking`` -> assistant-reasoning with its
  ``signature`` as a late attribute (on the last fragment; byte-for-byte);
  ``redacted_thinking`` -> assistant-reasoning, ``redacted: true``, payload the
  data; ``tool_use`` -> tool-call (``id``, ``name``; payload the escaped
  arguments text: ``input_json_delta.partial_json`` as it is on the wire, a
  whole ``input`` object re-serialised and escaped); any other block
  (``server_tool_use``, ``web_search_tool_result``, ...) -> server-tool-result
  whose raw payload is the block as anthropic JSON (``dialect: anthropic``).
* Citations of a text block (``citations`` or ``citations_delta``) follow the
  text block as one citations block (raw JSON array). Their objects are held
  (reorder buffer, ``anthropic:citations-after-text``) until the block stops.
* message_start usage -> a first ``Usage``; message_delta -> ``Finish`` and
  the final ``Usage`` (later counts win). ``input_tokens`` is converted to the
  canonical all-inclusive input count (see ``interlingua.lifecycle``).
* A stream that ends without message_stop (or an error event) raises
  ``TruncatedInputError``.

Encoding
--------
* Stream: message_start first (deferred until the first content so a first
  usage can ride on it; schema-required counts unknown by then are 0),
  content blocks strictly one after another with increasing indexes, one
  delta event per source frame, message_delta with stop_reason and usage --
  the finish is held (``anthropic:finish-before-usage``) until the usage or
  the end arrives; counts that come after it get another message_delta, which
  repeats the stop -- and message_stop. An error becomes ``event: error`` and
  the stream ends there.
* Only choice 0 is carried: blocks of other choices are recorded losses.
* A response without id gets a generated ``msg_<24 hex>``, a tool call without
  one ``call_<24 hex>`` (``lifecycle``: response ids and times; anthropic has no
  time field).
* Refusal text is written as text (a recorded loss: anthropic has no refusal block).
* Thinking whose source has no signature (ollama, openai-compatible
  reasoning) is written with ``"signature": ""`` (the schema wants the key), a
  recorded loss: anthropic cannot verify it, so it cannot be replayed.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ...decoding import INTEGER, OBJECT, OPT_ARRAY, OPT_OBJECT, OPT_STRING, STRING  # (types of members)
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
    escape_raw_json,
    escape_text,
    without_lone_surrogates,
    unescape_json_text,
)
from ...decoding import MemberReader, Members, ResponseDecoderBase
from ...encoding import Encoder, HeldArguments
from ...errors import SchemaError, TruncatedInputError
from ...framing import SSE_END, FrameEnd, sse_event, sse_open
from ...jsonwriter import dumps
from ...naming import anthropic_id, canonical_id
from ...lifecycle import (
    answer_after_error,
    lose_after_error,
    answer_and_error,
    AnswerOrError,
    lose_error_members, source_error_message,
    source_error_type,
    BlockStream,
    Deferred,
    KeyFirst,
    Stamp,
    generated_tool_id,
    OpenFrame,
    finish_from,
    finish_to,
    merge_anthropic_usage,
    merge_usage,
    skip_value,
    usage_from_anthropic,
    usage_to_anthropic,
)
from ...losses import finish_path, lacks
from ...session import Session

DIALECT = "anthropic"
_MESSAGE_START_READ = frozenset({"type", "role"})
_BLOCK_DELTA_KEYS = frozenset({"text", "thinking", "partial_json", "signature", "citation"})



# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


class _ContentBlock(MemberReader):
    """One content block being decoded (from a ``content`` element or a content_block_start)."""

    def __init__(self, d: "_Base", index: Any) -> None:
        super().__init__(d)
        self.index = index
        self.type: str | None = None
        self.block: BlockStream | None = None
        self.late: dict = {}
        self.citations = None  # Hold of citation JSON texts
        self.json_seen = False  # a tool_use got input (deltas or a non-empty object)
        self.deferred_input = False  # a server block whose input comes as deltas
        self.json_parts = False

    # -- reading the block object (after its "{") --------------------------------------------

    def read(self) -> None:
        KeyFirst(self.d, "type", self._typed, "anthropic:content-before-type", STRING)

    def _typed(self, value: Any) -> None:
        d = self.d
        self.type = value if isinstance(value, str) else None
        t = self.type
        at = f"$.content[{self.index}]"  # the block's source path (attrs "path": for loss records)
        if t == "text":
            self.block = BlockStream(d.out, Section.ASSISTANT_TEXT, 0, {"path": at + ".text"})
        elif t == "thinking":
            self.block = BlockStream(d.out, Section.ASSISTANT_REASONING, 0, {"path": at + ".thinking"})
        elif t == "redacted_thinking":
            self.block = BlockStream(d.out, Section.ASSISTANT_REASONING, 0, {"redacted": True, "path": at + ".data"})
        elif t == "tool_use":
            self.attrs: dict = {"path": at}
            self.block = None  # opened when id and name are known (or at the input)
        else:
            self.block = BlockStream(d.out, Section.SERVER_TOOL_RESULT, 0, {"dialect": DIALECT, "path": at})
            self.block.fragment(b'{"type":' + dumps(t))
        d.push(self.on_token)

    def _tool_block(self) -> BlockStream:
        if self.block is None:
            self.block = BlockStream(self.d.out, Section.TOOL_CALL, 0, self.attrs)
        return self.block

    def end(self, offset: int) -> None:
        if self.type == "tool_use":
            deferred = getattr(self, "deferred", None)
            (deferred.release() if deferred is not None else self._tool_block()).announce()
        self.d.block_read(self)

    def member(self, key: str, kind: int, value: Any, offset: int) -> None:
        d, t = self.d, self.type
        if t in ("text", "thinking") and key == t or t == "redacted_thinking" and key == "data":
            d.read_string(kind, value, offset, self.block.fragment, key)
        elif t == "thinking" and key == "signature":
            d.read_value(kind, value, offset, self._signature, OPT_STRING, key)
        elif t == "text" and key == "citations":
            d.read_value(kind, value, offset, self._citation_list, OPT_ARRAY, key)
        elif t == "tool_use" and key in ("id", "name"):
            d.read_value(kind, value, offset, lambda v: self.attrs.__setitem__(key, d.own(key, v)), STRING, key)
        elif t == "tool_use" and key == "input":
            # an object, as the client declares it (was: 5 became openai arguments "5")
            d.expect(kind, value, offset, OBJECT, key)
            # id and name must ride on the first fragment: hold the input until both came
            self.deferred = Deferred(d.session, "anthropic:input-before-name", self._tool_block,
                                     lambda: "id" in self.attrs and "name" in self.attrs)
            d.stream_raw(kind, value, offset, self._input_fragment(self.deferred))
        elif t in ("text", "thinking", "redacted_thinking", "tool_use"):
            # at its block, as the block's other losses (in a stream too: each block's own record)
            d.read_raw(kind, value, offset, lambda raw: raw != b"null" and d.session.lose_member(
                f"$.content[{self.index}].{key}"))
        else:  # a server block, copied member by member
            if key == "input" and kind == tok.OBJECT_START and t == "server_tool_use":
                # streams send input {} at the start and the JSON in deltas
                d.read_raw(kind, value, offset, self._server_input)
                return
            self.block.fragment(b"," + dumps(key) + b":")
            d.stream_raw(kind, value, offset, lambda data, i, f: self.block.fragment(data))

    def _input_fragment(self, block):
        head = [b""]  # the first bytes, kept while they may still be the "{}" placeholder

        def sink(data: bytes, init: bool, fin: bool) -> None:
            # "{}" alone is the stream's placeholder (deltas bring the input): not a payload
            if head[0] is not None:
                head[0] += data
                if len(head[0]) < 3 and not fin:
                    return
                data, head[0] = head[0], None
                if fin and data == b"{}":  # no input: the block stays empty
                    return
            self.json_seen = True
            block.fragment(escape_raw_json(data))
        return sink

    def _server_input(self, raw: bytes) -> None:
        if raw == b"{}":
            self.deferred_input = True
        else:
            self.block.fragment(b',"input":' + raw)

    def _signature(self, value: Any) -> None:
        if value:
            self.late["signature"] = value

    def _citation_list(self, value: Any) -> None:
        for citation in value or ():
            self.citation(json.dumps(citation, ensure_ascii=False, separators=(",", ":")).encode())

    def citation(self, raw: bytes) -> None:
        if self.citations is None:
            self.citations = self.d.session.reorder.hold("anthropic:citations-after-text")
        self.citations.append(raw, len(raw))

    # -- deltas -----------------------------------------------------------------------------

    def partial_json(self, data: bytes) -> None:
        if self.type == "tool_use":
            if data:
                self.json_seen = True
            self._tool_block().fragment(data)
        elif self.deferred_input:
            if not self.json_parts:
                self.block.fragment(b',"input":')
                self.json_parts = True
            self.block.fragment(unescape_json_text(data))
        else:
            raise SchemaError(f"input_json_delta on a {self.type} block", dialect=DIALECT)

    # -- the end -------------------------------------------------------------------------------

    def stop(self) -> None:
        t = self.type
        if t == "tool_use":
            block = self._tool_block()
            if not self.json_seen:
                block.fragment(b"{}")  # no input at all: an empty object
            block.close()
        elif t in ("text", "thinking", "redacted_thinking"):
            if self.late:  # a late signature names where it was
                self.late["path"] = f"$.content[{self.index}].{t}"
            self.block.close(self.late)
        else:
            if self.deferred_input:
                self.block.fragment(b"}" if self.json_parts else b',"input":{}}')
            else:
                self.block.fragment(b"}")
            self.block.close()
        if self.citations is not None:
            raw = b"[" + b",".join(self.citations.drain()) + b"]"
            self.citations = None
            self.d.out(Block(Section.CITATIONS, 0, raw, True, True,
                             {"dialect": DIALECT, "path": f"$.content[{self.index}].citations"}))


class _Base(ResponseDecoderBase):
    dialect = DIALECT

    def _id_model(self, key: str, value: Any) -> None:
        setattr(self, key, value)
        if self.id is not None and self.model is not None:
            self.start_message()

    def _error(self, value: Any) -> None:
        if value is None and self._typed_not_error():
            return  # ("error": null beside a type that says what the object is, as a serializer that writes every field)
        err = value if isinstance(value, dict) else {"message": value}
        lose_error_members(err, self.session)
        self.gate.release()
        self.close_open()  # every block gets its last fragment; the error follows it
        self.emit(Error(source_error_type(err.get("type")), source_error_message(err.get("message"))))
        self.errored = True

    def _typed_not_error(self) -> bool:
        """Whether the object being read has a ``type`` other than ``"error"`` (read so far:
        a null error before its type is still read as an error)."""
        return False

    def block_read(self, block: _ContentBlock) -> None:
        """A content block's object ended."""

    def own(self, key: str, value: Any) -> Any:
        """A tool_use ``id`` or ``name`` as the client knows it: an id anthropic was given
        in escaped form stands for another dialect's id; a name the request renamed gets
        the client's name back (``naming``)."""
        if key == "name":
            return self.session.tool_name_in(value)
        if isinstance(value, str) and self.session.target != DIALECT:
            return canonical_id(value)
        return value

    def close_open(self) -> None:
        block = getattr(self, "block", None)
        if isinstance(block, _ContentBlock):
            block.stop()
            self.block = None


class ResponseDecoder(_Base):
    """The ``message`` body -> canonical events."""

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.stop_reason: Any = None
        self.stop_sequence: Any = None
        self.usage: Usage | None = None
        self.position = 0
        self.body_type: Any = None
        self.then(lambda kind, value, offset: self.each_member(kind, offset, "the response body", self._member, self._end))

    def _typed_not_error(self) -> bool:
        return self.body_type is not None and self.body_type != "error"

    def _member(self, key: str, kind: int, value: Any, offset: int) -> None:
        if key in ("id", "model"):
            self.read_value(kind, value, offset, lambda v: self._id_model(key, v), OPT_STRING, key)
        elif key == "content":
            self.content_seen = True
            self.each_object(kind, offset, "content", self._content_block)
        elif key == "stop_reason":
            self.read_value(kind, value, offset, lambda v: setattr(self, "stop_reason", v), OPT_STRING, key)
        elif key == "stop_sequence":
            self.read_value(kind, value, offset, lambda v: setattr(self, "stop_sequence", v), OPT_STRING, key)
        elif key == "usage":
            self.read_value(kind, value, offset, self._usage, OPT_OBJECT, key)
        elif key == "type":  # "message" or "error" (its "error" member says it; a null one is none in a message)
            self.read_value(kind, value, offset, lambda v: setattr(self, "body_type", v))
        elif key == "role":
            skip_value(self, kind, value, offset)
        elif key == "error":
            self.read_value(kind, value, offset, self._error)
        else:
            self.read_raw(kind, value, offset, lambda raw: raw != b"null" and self.session.lose_member("$." + key))

    def _usage(self, value: Any) -> None:
        if isinstance(value, dict):
            self.usage = usage_from_anthropic(value, self.session)

    def _content_block(self, offset: int) -> None:
        _ContentBlock(self, self.position).read()  # installs its own reader
        self.position += 1

    def block_read(self, block: _ContentBlock) -> None:
        block.stop()

    content_seen = False

    def _end(self) -> None:
        if self.errored:
            self.emit(End())
            return
        if not self.content_seen:  # (`{}`, another dialect's body: not an empty answer)
            raise SchemaError("a message without content (and no error)", dialect=DIALECT, path="$.content")
        self.start_message()
        if self.stop_reason is not None or self.stop_sequence is not None:
            self.emit(Finish(finish_from(DIALECT, self.stop_reason), self.stop_sequence))
        if self.usage is not None:
            self.emit(self.usage)
        self.emit(End())


class StreamDecoder(_Base):
    """The SSE lifecycle -> canonical events; one event per frame."""

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.blocks_seen = 0
        self.usage: Usage | None = None
        self.block: _ContentBlock | None = None
        self.ended = False
        self._reset_frame()
        # readers of what every event has
        self._event = Members(self, self._member)
        self._delta = Members(self, self._delta_member)

    def _typed_not_error(self) -> bool:
        return self.f_type is not None and self.f_type != "error"

    def _reset_frame(self) -> None:
        self.f_type: str | None = None
        self.f_index: Any = None
        self.f_usage: Usage | None = None
        self.f_stop: tuple | None = None

    def begin_frame(self) -> None:
        self._reset_frame()
        self.restart(self._document)

    def frame_text(self, event: str | None, data: bytes) -> None:
        raise SchemaError(f"SSE data is not a JSON object: {data[:40]!r}", dialect=DIALECT)

    def _document(self, kind: int, value: Any, offset: int) -> None:
        self.pop()  # the event's reader takes its place
        self._event.read(kind, offset, "an event")
        if self.ended:
            raise self.error("event after message_stop", offset)

    def _member(self, key: str, kind: int, value: Any, offset: int) -> None:
        if key == "type":
            self.read_value(kind, value, offset, self._type, STRING, key)
        elif key == "index":
            self.read_value(kind, value, offset, self._index, INTEGER, key)
        elif key == "message":
            self.each_member(kind, offset, "message", self._message_member)
        elif key == "content_block":
            if kind != tok.OBJECT_START:
                raise self.wrong_type(kind, "an object for content_block", offset)
            self._close_block()
            # numbered by arrival, not by its index member (which may come after it)
            self.block = _ContentBlock(self, self.blocks_seen)
            self.blocks_seen += 1
            self.block.read()
        elif key == "delta":
            self._delta.read(kind, offset, "delta")
        elif key == "usage":
            self.read_value(kind, value, offset, self._delta_usage, OPT_OBJECT, key)
        elif key == "error":
            self.read_value(kind, value, offset, self._error)
        else:
            self.read_raw(kind, value, offset, lambda raw: self.session.lose_member("$." + key))

    def _type(self, value: Any) -> None:
        self.f_type = value

    def _index(self, value: Any) -> None:
        self.f_index = value

    # message_start -------------------------------------------------------------------------

    def _message_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        if key in ("id", "model"):
            self.read_value(kind, value, offset, lambda v: setattr(self, key, v), OPT_STRING, key)
        elif key == "usage":
            self.expect(kind, value, offset, OPT_OBJECT, key)
            self.read_value(kind, value, offset, lambda v: setattr(
                self, "f_usage", usage_from_anthropic(v, self.session, "$.message.usage")
                if isinstance(v, dict) else None))
        elif key == "content":
            self.read_raw(kind, value, offset, lambda raw: raw != b"[]" and self.session.lose_member(
                "$.message.content", "content in a stream's first event", "the content blocks that follow are read"))
        elif key in ("stop_reason", "stop_sequence"):  # null here: message_delta carries the stop
            self.read_raw(kind, value, offset, lambda raw: raw != b"null" and self.session.lose_member(
                "$.message." + key, "place for a stop in message_start", "message_delta's stop is used"))
        elif key in _MESSAGE_START_READ:  # the shape
            skip_value(self, kind, value, offset)
        else:  # container, diagnostics ...: no canonical field
            self.read_raw(kind, value, offset, lambda raw: raw != b"null" and self.session.lose_member(
                "$.message." + key))

    # deltas ------------------------------------------------------------------------------------

    def _delta_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        b = self.block
        if key == "type":
            skip_value(self, kind, value, offset)
        elif key in ("stop_reason", "stop_sequence"):
            self.read_value(kind, value, offset, lambda v: self._stop(key, v), OPT_STRING, key)
        elif key not in _BLOCK_DELTA_KEYS:  # message_delta's container, stop_details ...: no canonical field
            self.read_raw(kind, value, offset, lambda raw: raw != b"null" and self.session.lose_member("$.delta." + key))
        elif b is None:
            raise self.error(f"{key} delta outside a content block", offset)
        elif key in ("text", "thinking"):
            if b.type != key:
                raise self.error(f"{key} delta on a {b.type} block", offset)
            self.read_string(kind, value, offset, b.block.fragment, key)
        elif key == "partial_json":
            self.read_string(kind, value, offset, lambda data, i, f: b.partial_json(data), key)
        elif key == "signature":
            self.read_value(kind, value, offset, b._signature, OPT_STRING, key)
        else:  # citation: an object, as the client declares it
            self.read_raw(kind, value, offset, b.citation, OBJECT, key)

    def _stop(self, key: str, value: Any) -> None:
        reason, seq = self.f_stop or (None, None)
        self.f_stop = (value, seq) if key == "stop_reason" else (reason, value)

    def _delta_usage(self, value: Any) -> None:
        if isinstance(value, dict):
            self.f_usage = usage_from_anthropic(value, self.session)

    def _close_block(self) -> None:
        if self.block is not None:
            self.block.stop()
            self.block = None

    def end_frame(self, event: str | None) -> None:
        t = self.f_type
        self._check_order(t)
        if t == "message_start":
            self.start_message()
            if self.f_usage is not None:
                self.usage = self.f_usage
                self.emit(self.f_usage)
        elif t == "content_block_stop":
            self._close_block()
        elif t == "message_delta":
            self._close_block()
            reason, seq = self.f_stop or (None, None)
            self.out(Finish(finish_from(DIALECT, reason), seq))
            if self.f_usage is not None:
                self.usage = merge_anthropic_usage(self.usage, self.f_usage)
                self.out(self.usage)
        elif t == "message_stop":
            self._close_block()
            self.ended = True
            self.gate.release()
            self.emit(End())
        elif t in ("content_block_start", "content_block_delta", "ping", "error"):
            pass
        elif t is None:
            raise SchemaError("event without type", dialect=DIALECT)
        else:
            self.session.lose("$.type", lacks(f"{t} event", self.session.target or "the target", "such event"))

    def _check_order(self, t: Any) -> None:
        """The stream's grammar: message_start first (once); a block's deltas and stop
        name the open block's index (a delta for another block was applied to it)."""
        if t == "message_start":
            if self.message_seen:
                raise SchemaError("a second message_start", dialect=DIALECT)
            self.message_seen = True
        elif t in ("content_block_start", "content_block_delta", "content_block_stop", "message_delta") \
                and not self.message_seen:
            raise SchemaError(f"{t} before message_start", dialect=DIALECT)
        if t in ("content_block_delta", "content_block_stop"):
            block = self.block
            if block is None or block.index != self.f_index:
                open_one = "no block is open" if block is None else f"block {block.index} is open"
                raise SchemaError(f"{t} for block {self.f_index!r}, but {open_one}", dialect=DIALECT)

    message_seen = False

    def finish(self) -> None:
        if self.ended:
            return
        if self.errored:
            self.ended = True
            self.emit(End())
            return
        raise TruncatedInputError("stream ended before message_stop", dialect=DIALECT)


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

_TEXTUAL = {Section.ASSISTANT_TEXT, Section.ASSISTANT_REFUSAL}


class _EncoderBase(Encoder):
    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.id: str | None = None
        self.model: str | None = None
        self.usage: Usage | None = None
        self.tool_count = 0
        self.stamp = Stamp(session.start)  # the source's time; a generated id
        self.kind: str | None = None  # what the open block is (text, thinking, ...)
        self.thinking_block: Block | None = None  # the open thinking block's first fragment

    def _stop_reason(self, finish: Finish | None) -> str | None:
        """``finish_to``'s stop reason, but ``tool_use`` only when a tool_use block was written:
        a turn whose every tool call anthropic could not carry (an openai custom call, each
        recorded; or a source that said so with none) has nothing for the client to answer --
        ``tool_use`` with no block sends an agent loop round with no result to give.
        Recorded, sent as ``end_turn``."""
        reason = finish_to(DIALECT, finish.reason, self.session) if finish else None
        if reason == "tool_use" and not self.tool_count:
            path = finish_path(self.session.source, self.session.kind)
            self.session.lose(path, lacks(path.rsplit(".", 1)[-1], DIALECT, "tool_use block to stop for (no tool call "
                                          "was carried)", "sent as 'end_turn'"))
            return "end_turn"
        return reason

    def _classify(self, block: Block) -> str | None:
        """The anthropic block type for a canonical block (None: lost)."""
        s = block.section
        attrs = block.attrs or {}
        if s is Section.ASSISTANT_TEXT:
            return "text"
        if s is Section.ASSISTANT_REFUSAL:
            self._lose_block(block, "refusal block", "written as text")
            return "text"
        if s is Section.ASSISTANT_REASONING:
            return "redacted_thinking" if attrs.get("redacted") else "thinking"
        if s is Section.TOOL_CALL:
            return "tool_use"
        if s is Section.SERVER_TOOL_RESULT and attrs.get("dialect") == DIALECT:
            return "server"
        if s is Section.CITATIONS and attrs.get("dialect") == DIALECT:
            return "citations"
        self._lose_unplaced(block)
        return None

    def _lose_logprobs(self) -> None:
        if not self.logprobs_lost:  # once per response: anthropic has none at all
            self.logprobs_lost = True
            self.session.lose("$.logprobs", "token logprobs: anthropic has no logprobs")

    logprobs_lost = False

    def _lose_unsigned(self, block: Block) -> None:
        """A thinking block whose source gave no signature (ollama, openai-compatible
        reasoning): written with ``"signature": ""`` as the schema wants, a recorded
        loss -- anthropic cannot verify it, so the client cannot replay it."""
        self._lose_block(block, 'thinking without a signature: written with "signature": "" '
                                "(anthropic cannot replay it)")

    def _tool_head(self, block: Block) -> bytes:
        attrs = block.attrs or {}
        call_id = attrs.get("id") or generated_tool_id(self._message_id(), self.tool_count)
        self.tool_count += 1
        if self.session.source != DIALECT and isinstance(call_id, str):
            call_id = anthropic_id(call_id)  # another dialect's id may not fit (``naming``)
        return b'{"type":"tool_use","id":' + dumps(call_id) + b',"name":' + dumps(self._tool_name(block))

    def _message_id(self) -> str:
        return self.stamp.response_id("msg_", self.id, self.model)

    def _message_head(self) -> bytes:
        return (b'{"id":' + dumps(self._message_id()) + b',"type":"message","role":"assistant","model":'
                + dumps(self.model or ""))

    def _extension(self, event: Extension) -> None:
        if not self.stamp.source(event) and event.dialect != DIALECT:  # (times: lifecycle)
            self.foreign_extension(event)


class StreamEncoder(_EncoderBase):
    """Canonical events -> the anthropic SSE lifecycle."""

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.frame = OpenFrame(write)
        self.started = False  # message_start written
        self.index = -1
        self.block_open = False
        self.held = None  # Hold of a block written whole at its end (redacted, server)
        self.signature: str | None = None
        self.finish_hold = None  # Hold with the Finish waiting for usage
        self.unsent_usage: Usage | None = None  # counts merged since message_start / message_delta
        self.done = False
        self.errored = False
        self.lost = False  # the current block is not carried

    def _start(self) -> None:
        if self.started:
            return
        self.started = True
        usage = usage_to_anthropic(self.usage or Usage(), self.session, require_input=True)
        data = (b'{"type":"message_start","message":' + self._message_head()
                + b',"content":[],"stop_reason":null,"stop_sequence":null,"usage":' + dumps(usage) + b"}}")
        self.write(sse_event("message_start", data))

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block and self.errored:  # the error event ended the target's stream
            raise answer_after_error()
        if t is FrameEnd:
            self.frame.close()
        elif t is Block:
            if not self.done:
                self._block(event)
        elif t is MessageStart:
            if event.choice == 0:
                self.id, self.model = event.id, event.model
        elif t is Extension:
            self._extension(event)
        elif self.errored and (t is Usage or t is Finish and event.choice == 0):
            lose_after_error(event, self.session, DIALECT)  # (its error event ended the stream)
        elif t is Usage:
            self.usage = merge_usage(self.usage, event)
            self.unsent_usage = merge_usage(self.unsent_usage, event) if self.started else None
            if self.finish_hold is not None or self.delta_written and not self.done:
                self._message_delta()  # (after one was written: another, with the counts it lacked)
        elif t is Finish:
            if event.choice == 0 and not self.done:
                self._start()
                self._close_block()
                if self.finish_hold is None:
                    self.finish_hold = self.session.reorder.hold("anthropic:finish-before-usage")
                self.finish_hold.append(event, 64)
        elif t is Logprobs:
            self._lose_logprobs()
        elif t is Error:
            self.abort(event)
        elif t is End:
            self._end()

    # -- blocks ----------------------------------------------------------------------------------

    def _open(self, content_block: bytes) -> None:
        self._close_block()
        self.index += 1
        self.block_open = True
        self.write(sse_event("content_block_start", b'{"type":"content_block_start","index":'
                             + str(self.index).encode() + b',"content_block":' + content_block + b"}"))

    def _close_block(self) -> None:
        self.frame.close()
        if not self.block_open:
            return
        if self.signature is not None:
            self._delta(b'{"type":"signature_delta","signature":' + dumps(self.signature) + b"}")
            self.signature = None
        elif self.kind == "thinking":
            self._lose_unsigned(self.thinking_block)
        self.block_open = False
        self.kind = None
        self.write(sse_event("content_block_stop", b'{"type":"content_block_stop","index":'
                             + str(self.index).encode() + b"}"))

    def _delta(self, delta: bytes) -> None:
        self.frame.close()
        self.write(sse_event("content_block_delta", b'{"type":"content_block_delta","index":'
                             + str(self.index).encode() + b',"delta":' + delta + b"}"))

    def _block(self, block: Block) -> None:
        if self._other_choice(block):
            return
        if block.init:
            self._start()
            self.lost = False
            kind = self._classify(block)
            if kind is None:
                self.lost = True
                return
            if kind == "citations":
                self._citations(block)
                return
            attrs = block.attrs or {}
            if kind in ("redacted_thinking", "server"):
                self._close_block()
                self.held = self.session.reorder.hold(f"anthropic:whole-{kind}")
                self.kind = kind
            elif kind == "text":
                self._open(b'{"type":"text","text":""}')
            elif kind == "thinking":
                self._open(b'{"type":"thinking","thinking":"","signature":""}')
                self.thinking_block = block
            else:
                self._open(self._tool_head(block) + b',"input":{}}')
            self.kind = kind
            self.signature = attrs.get("signature")
        if self.lost:
            return
        kind = self.kind
        if self.held is not None:
            self.held.write(block.payload)
            if block.fin:
                payload = self.held.take_bytes()
                self.held = None
                if kind == "server":
                    self._open(payload)
                else:
                    self._open(b'{"type":"redacted_thinking","data":"' + payload + b'"}')
                self.kind = kind
        elif kind == "text":
            self._fragment(b'{"type":"text_delta","text":"', block.payload)
        elif kind == "thinking":
            self._fragment(b'{"type":"thinking_delta","thinking":"', block.payload)
        elif kind == "tool_use":
            self._tool_arguments(block)
        if block.fin and block.attrs and "signature" in block.attrs:
            self.signature = block.attrs["signature"]

    def _tool_arguments(self, block: Block) -> None:
        """``input_json_delta``: held until the call ends (clients parse the partial
        JSON): the text if it is one JSON object, else ``{"_raw_arguments": ...}``
        (``HeldArguments``); empty arguments send no delta (``input`` stays ``{}``)."""
        if block.init:
            self.args = (HeldArguments(self.session, "anthropic:tool-arguments"), block)
        args, first = self.args
        args.feed(block.payload)
        if block.fin:
            self.args = None
            data, replaced = without_lone_surrogates(self._arguments_object(args, first))
            if replaced:  # (its clients' parser refuses one: the whole call's input was lost)
                self._lose(first, f"a lone surrogate in the arguments of a {self._subject(first)}",
                           "lone surrogate its stream clients can parse", "written as U+FFFD")
            if data != b"{}":  # (the JSON text as a string: any whitespace in it escaped too)
                self._fragment(b'{"type":"input_json_delta","partial_json":"', escape_text(data.decode("utf-8")))

    args = None  # (HeldArguments, the call's first block) while a call's arguments come

    def _fragment(self, delta_head: bytes, payload: bytes) -> None:
        index = self.index
        self.frame.fragment(index, lambda: (sse_open("content_block_delta")
                                            + b'{"type":"content_block_delta","index":' + str(index).encode()
                                            + b',"delta":' + delta_head),
                            b'"}}' + SSE_END, payload)

    def _citations(self, block: Block) -> None:
        if self.kind != "text" or not self.block_open:
            self._lose_block(block, "text block for these citations", "a citation needs the text it cites")
            self.lost = True
            return
        for citation in json.loads(block.payload or b"[]"):
            self._delta(b'{"type":"citations_delta","citation":' + dumps(citation) + b"}")
        self.lost = True  # nothing more to write for this block

    # -- the end -------------------------------------------------------------------------------

    def _message_delta(self) -> None:
        finish = self.delta_finish  # a later one repeats the stop (the client keeps each delta's)
        if self.finish_hold is not None:
            for finish in self.finish_hold.drain():
                pass
            self.finish_hold = None
        reason = self._stop_reason(finish)
        delta = {"stop_reason": reason, "stop_sequence": finish.stop_sequence if finish else None}
        usage = usage_to_anthropic(self.usage or Usage(), self.session, require_input=False)
        self.write(sse_event("message_delta", b'{"type":"message_delta","delta":' + dumps(delta)
                             + b',"usage":' + dumps(usage) + b"}"))
        self.delta_written = True
        self.delta_finish = finish
        self.unsent_usage = None

    delta_written = False
    delta_finish: Finish | None = None  # the stop the last message_delta carried

    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        if self.errored:
            return
        self._start()
        self._close_block()
        if self.finish_hold is not None or not self.delta_written:
            self._message_delta()
        self.write(sse_event("message_stop", b'{"type":"message_stop"}'))

    def abort(self, error: Error) -> None:
        if self.done or self.errored:
            return
        self.frame.close()
        self.errored = True
        self.write(sse_event("error", b'{"type":"error","error":' + dumps(
            {"type": _error_type(error), "message": error.message}) + b"}"))
        # its error event ends the stream: the message_delta's finish and counts are not sent
        for finish in self.finish_hold.drain() if self.finish_hold is not None else ():
            lose_after_error(finish, self.session, DIALECT)
        self.finish_hold = None
        lose_after_error(self.unsent_usage if self.started else self.usage, self.session, DIALECT)


def _error_type(error: Error) -> str:
    return {"invalid_request_error": "invalid_request_error", "request_too_large": "request_too_large",
            "overloaded_error": "overloaded_error", "rate_limit_error": "rate_limit_error",
            "authentication_error": "authentication_error", "permission_error": "permission_error",
            "not_found_error": "not_found_error", "timeout_error": "timeout_error",
            "billing_error": "billing_error"}.get(error.type, "api_error")


class ResponseEncoder(AnswerOrError, _EncoderBase):
    """Canonical events -> one ``message`` body."""

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.begun = False
        self.count = 0
        self.tail = b""  # what closes the open block (written when the next event shows no citations follow)
        # (not ``finish``: that is ``Encoder.finish()``, which ``close()`` calls)
        self.finish_event: Finish | None = None
        self.done = False
        self.lost = False

    def _begin(self) -> None:
        if not self.begun:
            if self.errored:
                raise answer_and_error()
            self.begun = True
            self.write(self._message_head() + b',"content":[')

    def _seal(self) -> None:
        if self.tail:
            self.write(self.tail)
            self.tail = b""

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block:
            self._block(event)
        elif t is MessageStart:
            if event.choice == 0:
                self.id, self.model = event.id, event.model
        elif t is Extension:
            self._extension(event)
        elif t is Usage:
            self.usage = merge_usage(self.usage, event)
        elif t is Finish:
            if event.choice == 0:
                self.finish_event = event
        elif t is Logprobs:
            self._lose_logprobs()
        elif t is Error:
            self._error(event)
        elif t is End:
            self._end()

    def _block(self, block: Block) -> None:
        if self._other_choice(block):
            return
        if block.init:
            self.lost = False
            kind = self._classify(block)
            if kind is None:
                self.lost = True
                return
            self._begin()
            if kind == "citations":
                if self.kind == "text" and self.tail:
                    self.write(b',"citations":' + (block.payload or b"[]"))
                else:
                    self._lose_block(block, "text block for these citations", "a citation needs the text it cites")
                self.lost = True
                return
            self._seal()
            if self.count:
                self.write(b",")
            self.count += 1
            self.kind = kind
            attrs = block.attrs or {}
            if kind == "text":
                self.write(b'{"type":"text","text":"')
            elif kind == "thinking":
                self.thinking_block = block  # the first fragment: its attrs name the source path
                self.write(b'{"type":"thinking","thinking":"')
                self.signature = attrs.get("signature")
            elif kind == "redacted_thinking":
                self.write(b'{"type":"redacted_thinking","data":"')
            elif kind == "tool_use":
                self.write(self._tool_head(block) + b',"input":')
                self.args = (HeldArguments(self.session, "anthropic:tool-arguments"), block)
        if self.lost:
            return
        kind = self.kind
        payload = block.payload
        if kind == "tool_use":
            self.args[0].feed(payload)
        else:
            self.write(payload)
        if block.fin:
            if kind == "text":
                self.write(b'"')
                self.tail = b"}"
            elif kind == "thinking":
                sig = (block.attrs or {}).get("signature") or self.signature or ""
                if not sig:
                    self._lose_unsigned(self.thinking_block or block)
                self.write(b'","signature":' + dumps(sig) + b"}")
            elif kind == "redacted_thinking":
                self.write(b'"}')
            elif kind == "tool_use":
                args, first = self.args
                self.args = None
                self.write(self._arguments_object(args, first) + b"}")

    signature = None

    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        self._begin()
        self._seal()
        f = self.finish_event
        reason = self._stop_reason(f)
        usage = usage_to_anthropic(self.usage or Usage(), self.session, require_input=True)
        self.write(b'],"stop_reason":' + dumps(reason) + b',"stop_sequence":'
                   + dumps(f.stop_sequence if f else None) + b',"usage":' + dumps(usage) + b"}")

    def abort(self, error: Error) -> None:
        if self.done:
            return
        self.done = True
        if not self.begun:
            self.write(dumps({"type": "error", "error": {"type": _error_type(error), "message": error.message}}))
