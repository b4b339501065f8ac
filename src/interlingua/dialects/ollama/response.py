"""Ollama ``/api/chat`` responses: one JSON object (kind ``response``) or NDJSON
chunks (kind ``stream``), the last with ``"done": true``.

Decoding
--------
* ``message.content`` -> assistant-text, ``message.thinking`` ->
  assistant-reasoning; consecutive chunks continue the same block. Content
  written before thinking in one message (Go's order: the whole response, or
  one stream line that has both) goes after it -- the model thought first
  (``lifecycle.ReasoningFirst``, rule ``ollama:content-before-thinking``).
* ``message.tool_calls`` come whole: each is a tool-call block (``id`` when
  the server gave one -- the current one always does --, ``name``; the
  ``arguments`` object re-serialised and escaped as the payload); a call
  without id gets one from the encoder that needs it (``lifecycle.tool_id``).
  The name and the id ride on the first fragment: the arguments wait for a
  later ``name`` (``ollama:arguments-before-name``) and ``id``
  (``ollama:call-before-id``, sorted keys), or for the call's end.
  ``function.index`` is the call's position (Go always writes it): read, a
  recorded loss only when it is not that position.
* ``done_reason`` -> ``Finish`` (``stop`` with tool calls -> ``tool_use``;
  absent or null means ``stop``, as in Ollama's own openai layer, plus a
  lossless ``$.done_reason`` null extension so an ollama target leaves it out),
  ``prompt_eval_count`` / ``eval_count`` -> ``Usage`` (input / output),
  the ``*_duration`` fields -> ollama extensions (other dialects: a loss),
  ``created_at`` -> a lossless extension. ``{"error": ...}`` -> ``Error``.
* ``logprobs`` (each line's tokens) -> one ``Logprobs`` event per token entry.
* A stream without its ``done: true`` line raises ``TruncatedInputError``.

Encoding
--------
* Stream: one line per source frame and block (``done: false``); a tool call is
  held until complete (``ollama:whole-tool-call``: ollama sends whole calls);
  the final ``done: true`` line carries ``done_reason``, the counts and the
  durations. An error becomes an ``{"error": "..."}`` line and ends the stream.
* Every line has ``created_at``: the source's time (openai ``created``), else the
  clock at the response's start (``lifecycle``: response ids and times).
"""

from __future__ import annotations

from typing import Any, Callable

from ...decoding import BOOLEAN, NULL, OPT_INTEGER, OPT_STRING  # (types of members)
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
)
from ...decoding import Members, ResponseDecoderBase, index_at
from ...encoding import Encoder, MessageAssembler, HeldArguments
from ...errors import SchemaError, TruncatedInputError
from ...framing import FrameEnd, ndjson_line, ndjson_safe, one_line
from ..fields import check_logprob
from ...jsonwriter import JsonWriter, dumps
from ...lifecycle import (
    answer_after_error,
    lose_after_error,
    answer_and_error,
    AnswerOrError,
    lose_error_members, source_error_message,
    source_error_type,
    BlockStream,
    Deferred,
    OpenFrame,
    ReasoningFirst,
    Stamp,
    beyond_64_bits,
    finish_from,
    finish_to,
    merge_usage,
    ollama_created_at,
    skip_value,
    usage_from_ollama,
    usage_to_ollama,
)
from ...numbers import INT64_MAX, INT64_MIN
from ...session import Session

DIALECT = "ollama"
_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
_COUNTS = ("prompt_eval_count", "eval_count")
#: the reorder rules of a tool call's arguments held for what rides on their first fragment
ARGUMENTS_BEFORE_NAME = "ollama:arguments-before-name"
CALL_BEFORE_ID = "ollama:call-before-id"


def _call_rule(attrs: dict) -> str:
    """The rule a call's arguments wait under: its name first, then its id."""
    return ARGUMENTS_BEFORE_NAME if "name" not in attrs else CALL_BEFORE_ID



class _Decoder(ResponseDecoderBase):
    dialect = DIALECT
    framing = "ndjson"
    wait_for = "model"  # ollama responses carry no id

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.block: BlockStream | None = None
        self.tools = 0
        self.ended = False
        self._reset()
        # readers of what every line has
        self._response = Members(self, self._member, self._document_end)
        self._message = Members(self, self._message_member, self._message_end)
        self._sinks: dict = {}  # Section -> fragment sink into its block (_string)
        # content before thinking (Go's order) goes after it: see lifecycle.ReasoningFirst
        self._text_first = ReasoningFirst(session, "ollama:content-before-thinking",
                                          self._section_sink(Section.ASSISTANT_TEXT, "content"))
        self._sinks[Section.ASSISTANT_TEXT] = self._text_first.text
        thinking = self._section_sink(Section.ASSISTANT_REASONING, "thinking")

        def thinking_sink(data: bytes, init: bool, fin: bool) -> None:
            thinking(data, init, fin)
            if fin:
                self._text_first.reasoning_end()
        self._sinks[Section.ASSISTANT_REASONING] = thinking_sink

    streams = False  # (a stream's lines go on after its error; a body's error is all it says)

    def _reset(self) -> None:
        self.done = False
        self.reason: Any = None
        self.counts: dict = {}


    # -- one document ---------------------------------------------------------------------

    def _document(self, kind: int, value: Any, offset: int) -> None:
        self.pop()  # the document's reader takes its place
        self._response.read(kind, offset, "the response")
        if self.ended:
            raise self.error("chunk after the done chunk", offset)
        self._reset()

    def _count(self, key: str, value: Any, offset: int) -> None:
        """A usage count, as lifecycle's ``_count`` reads one: an integral float (``30.0``) is
        that count (it was read as no count at all: the target got none, or openai's 0,
        unrecorded); a negative float (a fraction the type check refused), or a count beyond
        64 bits, is a ``SchemaError`` at its value."""
        if isinstance(value, float):
            if not (value.is_integer() and value >= 0):
                raise self.error(f"expected an integer for {key}", offset)
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            raise self.error(beyond_64_bits(key), offset)
        self.counts[key] = value

    def _member(self, key: str, kind: int, value: Any, offset: int) -> None:
        if key == "model":
            if self.started and (kind == tok.STRING or kind == tok.STRING_OPEN):  # (any cut alike)
                skip_value(self, kind, value, offset)
                return  # every line repeats it: once the message started it changes nothing
            self.read_value(kind, value, offset, self._model, OPT_STRING, key)
        elif key == "message":
            self._message.read(kind, offset, "message")
        elif key == "done":
            self.read_value(kind, value, offset, self._done, BOOLEAN | NULL, key)
        elif key == "done_reason":
            self.read_value(kind, value, offset, lambda v: setattr(self, "reason", v), OPT_STRING, key)
        elif key in _COUNTS:
            self.read_value(kind, value, offset, lambda v: self._count(key, v, offset), OPT_INTEGER, key)
        elif key == "error":
            self.read_value(kind, value, offset, self._error)
        elif key == "logprobs":
            if kind != tok.NULL:  # one token's entry at a time (bounded by the entry)
                self.each_element(kind, offset, "logprobs", self._logprob)
        elif key == "created_at":  # the response's time (carried): a string, checked in every line
            self.read_raw(kind, value, offset, lambda raw: self._extension(key, raw), OPT_STRING, key)
        elif key in _DURATIONS:
            self.read_raw(kind, value, offset, lambda raw: self._extension(key, raw))
        else:
            self.read_raw(kind, value, offset, lambda raw: raw != b"null" and self.session.lose_member("$." + key))

    def _logprob(self, kind: int, value: Any, offset: int) -> None:
        if kind != tok.OBJECT_START:
            raise self.wrong_type(kind, "an object for a logprobs entry", offset)
        path = self.path()
        self.read_raw(kind, value, offset, lambda raw: self._checked_logprob(raw, path, offset))

    def _checked_logprob(self, raw: bytes, path: str, offset: int) -> None:
        """An entry whose members are of their types (``fields.check_logprob``), else a
        ``SchemaError`` at the member's path, at the entry's first byte."""
        entry = self.data(raw, offset)  # (a lone surrogate: its own error, at the entry)
        try:
            check_logprob(entry, path)
        except SchemaError as exc:
            raise SchemaError(exc.reason, dialect=self.dialect, offset=offset, path=exc.path) from None
        self.out(Logprobs(raw))

    def _done(self, value: Any) -> None:
        self.done = bool(value)

    def _model(self, value: Any) -> None:
        self.model = value
        self.start_message()

    def _extension(self, key: str, raw: bytes) -> None:
        if key == "created_at":
            if getattr(self, "_created", None) is None:
                self._created = raw
                self.emit(Extension(DIALECT, "$.created_at", raw, lossless=True))
            return
        self.out(Extension(DIALECT, "$." + key, raw, lossless=raw == b"null"))  # (a duration; null: none)

    def _error(self, value: Any) -> None:
        if value is None:  # ("error": null, as a serializer that writes every field does: no error)
            return
        self.gate.release()
        self._close()  # every block gets its last fragment; the error follows it
        message = value.get("message") if isinstance(value, dict) else value
        lose_error_members(value, self.session)
        self.emit(Error("api_error", source_error_message(message)))
        self.errored = True

    def _message_end(self) -> None:
        self._text_first.release()

    def _message_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        if key != "content" and kind != tok.NULL:  # (a null member shows nothing: the text waits on)
            self._text_first.member(key == "thinking")
        if key == "content":
            self._string(kind, value, offset, Section.ASSISTANT_TEXT, key)
        elif key == "thinking":
            self._string(kind, value, offset, Section.ASSISTANT_REASONING, key)
        elif key == "tool_calls":
            if kind != tok.NULL:
                self._call_position = -1  # the element of this tool_calls array (for loss paths)
                self.each_object(kind, offset, "tool_calls", self._tool_call)
        elif key == "role":
            skip_value(self, kind, value, offset)
        else:
            self.read_raw(kind, value, offset, lambda raw: raw not in (b"null", b"[]") and self.session.lose_member(
                "$.message." + key))

    def _string(self, kind: int, value: Any, offset: int, section: Section, what: str) -> None:
        if kind == tok.NULL:
            return
        self.read_string(kind, value, offset, self._sinks[section], what)

    def _section_sink(self, section: Section, what: str):
        """The fragment sink into the open block of ``section`` (made once: every line has such a member)."""
        attrs = {"path": f"$.message.{what}"}

        def sink(data: bytes, init: bool, fin: bool) -> None:
            if data:
                self._open(section, attrs).fragment(data)
        return sink

    def _open(self, section: Section, attrs: dict | None = None) -> BlockStream:
        if self.block is not None and self.block.section is section and section is not Section.TOOL_CALL:
            return self.block
        self._close()
        self.block = BlockStream(self.out, section, 0, attrs)
        return self.block

    def _close(self) -> None:
        if self.block is not None:
            self.block.close()
            self.block = None

    def _tool_call(self, offset: int):
        self._close()
        self.tools += 1
        self._call_position += 1
        return self._tool_key({"attrs": {"path": f"$.message.tool_calls[{self._call_position}]"}, "block": None,
                               "args": False, "position": self._call_position})

    def _tool_key(self, call: dict):
        def handler(kind: int, value: Any, offset: int) -> None:
            if kind == tok.OBJECT_END:
                self.pop()
                self._tool_end(call)
                return
            key = value

            def member(kind: int, value: Any, offset: int) -> None:
                self.pop()
                if key == "function":
                    if kind != tok.OBJECT_START:
                        raise self.wrong_type(kind, "an object for function", offset)
                    self.push(self._function_key(call))
                elif key == "id":
                    self.read_value(kind, value, offset, lambda v: self._call_id(call, v),
                                    OPT_STRING, "a tool call's id")
                elif key == "type":  # ("function", where a server writes it: it carries nothing)
                    skip_value(self, kind, value, offset)
                else:  # (was dropped with nothing recorded)
                    self.read_raw(kind, value, offset, lambda raw: raw == b"null" or self.session.lose_member(
                        f"$.message.tool_calls[{call['position']}].{key}"))
            self.push(member)
        return handler

    def _function_key(self, call: dict):
        def handler(kind: int, value: Any, offset: int) -> None:
            if kind == tok.OBJECT_END:
                self.pop()
                return
            key = value

            def member(kind: int, value: Any, offset: int) -> None:
                self.pop()
                if key == "name":
                    self.read_value(kind, value, offset, lambda v: call["attrs"].__setitem__(
                        "name", self.session.tool_name_in(v)), OPT_STRING, "a tool call's name")
                elif key == "arguments":
                    # the name and the id must ride on the first fragment: hold the arguments
                    # until they came (or the call ends: an id-less call of an older server)
                    block = call["block"] = Deferred(self.session, lambda: _call_rule(call["attrs"]),
                                                     lambda: self._tool_open(call),
                                                     lambda: self._call_ready(call["attrs"]))
                    call["args"] = True
                    if kind == tok.STRING or kind == tok.STRING_OPEN:  # arguments given as JSON text
                        self.read_string(kind, value, offset, lambda d, i, f: block.fragment(d), key)
                    else:
                        self.stream_raw(kind, value, offset, lambda d, i, f: block.fragment(escape_raw_json(d)))
                elif key == "index":  # Go writes the call's position: nothing to carry when it is that
                    # (an integer, as a request's: ``decoding.index_at``; ``true`` or ``1.0`` says more)
                    self.read_value(kind, value, offset, lambda v: index_at(v, self.tools - 1) or self.session.lose_member(
                        f"$.message.tool_calls[{call['position']}].function.index",
                        f"tool-call index other than its position ({v!r})"))
                else:
                    self.read_raw(kind, value, offset, lambda raw: self.session.lose_member(
                        f"$.message.tool_calls[{call['position']}].function.{key}"))
            self.push(member)
        return handler

    def _call_ready(self, attrs: dict) -> bool:
        """The call's block can open: its name came, and its id (with reordering refused
        the id is not waited for: a late one is refused where it comes, ``_call_id``)."""
        return "name" in attrs and ("id" in attrs or self.session.reorder.refuse)

    def _call_id(self, call: dict, call_id: Any) -> None:
        if call.get("open") is not None:  # reordering refused, and the call went out without it
            raise self.session.reorder.refused(CALL_BEFORE_ID)
        call["attrs"]["id"] = call_id

    def _tool_open(self, call: dict) -> BlockStream:
        if call.get("open") is None:
            call["open"] = self._open(Section.TOOL_CALL, call["attrs"])
        return call["open"]

    def _tool_end(self, call: dict) -> None:
        block = call["block"].release() if call["block"] is not None else self._tool_open(call)
        if not call["args"]:
            block.fragment(b"{}")
        self._close()

    def _document_end(self) -> None:
        if not self.done or (self.errored and not self.streams):
            return  # (an error body: its done members say nothing more)
        if not self.errored:
            self._done_finish()
        elif self.reason is not None:  # a done line after a stream's error: it goes on, for the encoder to record
            self.out(Finish(finish_from(DIALECT, self.reason)))
        if self.counts:
            self.out(usage_from_ollama(self.counts))
        self.ended = True
        self.emit(End())

    def _done_finish(self) -> None:
        """The done line ends the message: its last block, and the finish."""
        self.start_message()
        self._close()
        if self.reason is None:
            # done without done_reason: a normal stop (what Ollama's own openai layer
            # says); the marker lets an ollama target leave it out again
            self.out(Extension(DIALECT, "$.done_reason", b"null", lossless=True))
        reason = finish_from(DIALECT, self.reason if self.reason is not None else "stop")
        if reason == "end_turn" and self.tools:
            reason = "tool_use"
        self.out(Finish(reason))

    def finish(self) -> None:
        if self.ended:
            return
        if self.errored:
            self._close()  # (an answer after the error opened a block: it gets its last fragment)
            self.ended = True
            self.emit(End())
            return
        raise TruncatedInputError("ollama response ended before its done chunk", dialect=DIALECT)


class StreamDecoder(_Decoder):
    streams = True

    def begin_frame(self) -> None:
        self.restart(self._document)

    def end_frame(self, event: str | None) -> None:
        if not self.started and self.model is None and not self.errored:
            self.start_message()

    def frame_text(self, event: str | None, data: bytes) -> None:
        raise SchemaError(f"NDJSON line is not a JSON object: {data[:40]!r}", dialect=DIALECT)


class ResponseDecoder(_Decoder):
    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self.push(self._document)


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


class _EncoderBase(Encoder):
    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.model: str | None = None
        self.created: bytes | None = None  # an ollama source's created_at (raw): written as it came
        self.stamp = Stamp(session.start)  # else the source's time, or the clock (lifecycle)
        self.durations: dict[str, bytes] = {}
        self.usage: Usage | None = None
        # (not ``finish``: that is ``Encoder.finish()``, which ``close()`` calls)
        self.finish_event: Finish | None = None
        self.no_reason = False  # the ollama source's done line had no done_reason
        # token entries: a line's go on that line (stream), a response's after done_reason
        self.logprobs = session.reorder.hold("ollama:logprobs-after-message")
        self.done = False

    def _common(self, event: Event) -> bool:
        t = type(event)
        if t is MessageStart:
            if event.choice == 0:
                self.model = event.model
                if event.id is not None and self.session.source != DIALECT:
                    stream = self.session.source == "anthropic" and self.session.kind == "stream"
                    self.session.lose_member("$.message.id" if stream else "$.id", "response id")
        elif t is Extension:
            if self.stamp.source(event):  # a time field (lifecycle: response ids and times)
                if event.dialect == DIALECT and self.created is None:
                    self.created = event.raw
            elif event.dialect == DIALECT and event.path == "$.done_reason":
                self.no_reason = True
            elif event.dialect == DIALECT and event.path[2:] in _DURATIONS:
                self.durations[event.path[2:]] = event.raw
            else:
                self.foreign_extension(event)
        elif t is Usage:
            self.usage = merge_usage(self.usage, event)
        elif t is Finish:
            if event.choice == 0:
                self.finish_event = event
        elif t is Logprobs:
            if event.choice == 0:
                self.logprobs.append(event.raw, len(event.raw))
            else:
                self.session.lose(f"$.choices[{event.choice}].logprobs", "ollama has no choices (n > 1)")
        else:
            return False
        return True

    def _logprobs_member(self) -> bytes:
        """``,"logprobs":[...]`` of the entries held since the last line (or nothing)."""
        if not self.logprobs:
            return b""
        return b',"logprobs":[' + b",".join(self.logprobs.drain()) + b"]"

    def _head(self) -> bytes:
        if self.created is None:  # once written, every line has the same
            self.created = ollama_created_at(self.stamp.time_us)
        return b'{"model":' + dumps(self.model or "") + b',"created_at":' + self.created

    def _tail(self) -> bytes:
        """``"done":true`` and what comes with it."""
        reason = finish_to(DIALECT, self.finish_event.reason, self.session, self.finish_event.stop_sequence) if self.finish_event else None
        out = b',"done":true'
        if reason is not None and not self.no_reason:
            out += b',"done_reason":' + dumps(reason)
        out += self._logprobs_member()
        counts = usage_to_ollama(self.usage, self.session) if self.usage else {}
        for key in ("total_duration", "load_duration"):
            if key in self.durations:
                out += b"," + dumps(key) + b":" + self.durations[key]
        if "prompt_eval_count" in counts:
            out += b',"prompt_eval_count":' + dumps(counts["prompt_eval_count"])
        if "prompt_eval_duration" in self.durations:
            out += b',"prompt_eval_duration":' + self.durations["prompt_eval_duration"]
        if "eval_count" in counts:
            out += b',"eval_count":' + dumps(counts["eval_count"])
        if "eval_duration" in self.durations:
            out += b',"eval_duration":' + self.durations["eval_duration"]
        return out + b"}"

    def _classify(self, block: Block) -> str | None:
        s = block.section
        if s is Section.ASSISTANT_TEXT:
            return "content"
        if s is Section.ASSISTANT_REFUSAL:
            self._lose_block(block, "refusal field", "written as content")
            return "content"
        if s is Section.ASSISTANT_REASONING:
            attrs = block.attrs or {}
            if attrs.get("redacted"):
                self._lose_block(block, "field for encrypted thinking")
                return None
            self._lose_signature(block, attrs)
            return "thinking"
        if s is Section.TOOL_CALL:
            return "tool_calls"
        self._lose_unplaced(block)
        return None

    @staticmethod
    def _tool_json(attrs: dict, arguments: bytes) -> bytes:
        return (_call_head(attrs) + b'{"name":' + dumps(attrs.get("name", "")) + b',"arguments":'
                + (arguments or b"{}") + b"}}")


def _call_head(attrs: dict) -> bytes:
    """A tool call's opening up to its function object: the id first (Go's order)
    when the source has one (the current API carries ids)."""
    call_id = attrs.get("id")
    return b'{"id":' + dumps(call_id) + b',"function":' if call_id else b'{"function":'


def _error_object(error: Error) -> bytes:
    """``{"error": message}``; an empty message is the error's type (then ``"error"``): the
    ollama client raises ``ResponseError`` only for a non-empty ``error``, and read an empty
    one as a chat response, which failed its validation."""
    return dumps({"error": error.message or error.type or "error"})


class StreamEncoder(_EncoderBase):
    def __init__(self, write, session: Session) -> None:
        write = (lambda data, write=write: write(ndjson_safe(data)))  # every line, its text included
        super().__init__(write, session)
        self.frame = OpenFrame(write)
        self.kind: str | None = None
        self.seq = 0
        self.tool = None  # (the call's first block, its HeldArguments)
        self.errored = False

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block and self.errored:  # the error event ended the target's stream
            raise answer_after_error()
        if t is FrameEnd:
            if self.logprobs and self.frame.key is not None:  # on the line of the content they score
                self.frame._tail = self.frame._tail[:-2] + self._logprobs_member() + b"}\n"
            elif self.logprobs and not self.done:  # a line without streamed text (a whole tool call)
                self.logprobs.drain()
                self.session.lose("$.logprobs", "token logprobs of a line without text: not carried")
            self.frame.close()
        elif type(event) is Block:
            if not self.done:
                self._block(event)
        elif type(event) is Error:
            self.abort(event)
        elif type(event) is End:
            self._end()
        elif self.errored and (t is Usage or t is Finish and event.choice == 0):
            lose_after_error(event, self.session, DIALECT)  # (its error line ended the stream)
        elif type(event) is Finish:
            self.frame.close()
            self._common(event)
        else:
            self._common(event)

    def _block(self, block: Block) -> None:
        if self._other_choice(block):
            return
        if block.init:
            self.frame.close()
            self.seq += 1
            self.kind = self._classify(block)
            if self.kind == "tool_calls":
                self.tool = (block, HeldArguments(self.session, "ollama:whole-tool-call"))
            elif self.kind is not None:
                self._lose_joined(block, self.kind)
        kind = self.kind
        if kind is None:
            return
        if kind == "tool_calls":
            first, args = self.tool
            args.feed(block.payload)
            if block.fin:
                self.tool = None
                self.write(self._head() + b',"message":{"role":"assistant","content":"","tool_calls":['
                           + self._tool_json(first.attrs or {}, one_line(self._arguments_object(args, first)))
                           + b']},"done":false}\n')
            return
        seq = self.seq
        if kind == "content":
            head = b',"message":{"role":"assistant","content":"'
        else:
            head = b',"message":{"role":"assistant","content":"","thinking":"'
        self.frame.fragment(seq, lambda: self._head() + head, b'"},"done":false}\n', block.payload)
        if block.fin and not block.init:
            self._lose_signature(block, block.attrs or {})

    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        if self.errored:
            return
        self.frame.close()
        self.write(self._head() + b',"message":{"role":"assistant","content":""}' + self._tail() + b"\n")

    def abort(self, error: Error) -> None:
        if self.done or self.errored:
            return
        self.frame.close()
        self.errored = True
        self.write(ndjson_line(_error_object(error)))
        # its error line ends the stream: the done line's finish and counts are not sent
        lose_after_error(self.finish_event, self.session, DIALECT)
        lose_after_error(self.usage, self.session, DIALECT)


class ResponseEncoder(AnswerOrError, _EncoderBase):
    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.msg: MessageAssembler | None = None
        self.placed = None
        self.lost = False

    def on_event(self, event: Event) -> None:
        if type(event) is Block:
            self._block(event)
        elif type(event) is Error:
            self._error(event)
        elif type(event) is End:
            self._end()
        elif type(event) is not FrameEnd:
            self._common(event)

    @property
    def begun(self) -> bool:
        """The answer's head is written (``AnswerOrError``): its message is open, or was."""
        return self.msg is not None

    def _message(self) -> MessageAssembler:
        if self.msg is None:
            if self.errored:
                raise answer_and_error()
            self.write(self._head() + b',"message":')
            self.msg = MessageAssembler(JsonWriter(self.write), self.session, "ollama:member-order")
            self.msg.scalar("role", b'"assistant"')
        return self.msg

    def _block(self, block: Block) -> None:
        if self._other_choice(block):
            return
        if block.init:
            kind = self._classify(block)
            self.lost = kind is None
            if self.lost:
                return
            msg = self._message()
            if kind == "tool_calls":
                w = msg.member("tool_calls", b"[")
                w._separate()
                attrs = block.attrs or {}
                w.write(_call_head(attrs) + b'{"name":' + dumps(attrs.get("name", "")) + b',"arguments":')
                args = HeldArguments(self.session, "ollama:tool-arguments")
                self.placed = (args.feed, lambda: w.write(self._arguments_object(args, block) + b"}}"))
            else:
                self._lose_joined(block, kind)
                w = msg.member(kind, b'"')
                self.placed = (w.write, lambda: None)
        if self.lost:
            return
        write, close = self.placed
        write(block.payload)
        if block.fin:
            close()
            self.placed = None
            if not block.init:
                self._lose_signature(block, block.attrs or {})

    def _end(self) -> None:
        if self.done:
            return
        self.done = True
        msg = self._message()
        if not msg.has("content"):
            msg.scalar("content", b'""')
        msg.close()
        self.write(self._tail())

    def abort(self, error: Error) -> None:
        if self.done:
            return
        self.done = True
        if self.msg is None:
            self.write(_error_object(error))
