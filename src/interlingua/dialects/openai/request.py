"""OpenAI Chat Completions requests: decoder (tokens -> canonical) and encoder (canonical -> bytes).

Decoder decisions (documented here and pinned by rpt scenarios):

* The message index is the position in ``messages[]``.
* A ``content`` that arrives before its message's ``role`` (clients that sort
  keys) is held in the reorder buffer, reason ``openai:content-before-role``,
  until the role is known; everything after it in that message is held too,
  so block order is kept. Every other attribute may come late: it rides on
  the block's last fragment (see ``BlockBuilder``).
* ``content: null`` is a lossless extension (absent means the same).
* ``name`` on a message, and any message key without canonical meaning, is
  an extension bound to the message.
* An unrecognised role: the message's content becomes ``unknown`` blocks
  (raw JSON of the content value, attrs ``role``); no content, ``null`` or ``[]``:
  one empty ``unknown`` block (attr ``empty``; ``in_parts`` for ``[]``), so the
  encoder writes back exactly what came (``content: null`` is its extension);
  an unrecognised content-part type: an ``unknown`` block holding the raw part.
* Data URLs (``data:<type>;base64,<data>``) in ``image_url.url`` and
  ``file.file_data`` become base64 payloads with ``media_type`` and
  ``data_url: true``; the encoder writes them back as data URLs.
* A ``file_data`` that is raw base64 (no data URL; OpenAI takes it) is a base64
  payload with ``data_url: false`` (written back without a prefix) and the
  ``media_type`` its first bytes show (``images.sniff_file_type``: a PDF, png,
  jpeg, gif or webp; none otherwise), read from the first 16 characters of the
  hold that looks for a data URL's comma.
* A ``file_data`` data URL labelled with no type (``images.UNNAMED_TYPES``:
  ``application/octet-stream``) is named by its bytes too: the hold goes on past
  the comma for the payload's first 16 characters; when they show a type it is
  the ``media_type`` (a PDF is a document into anthropic) and the label rides
  along as ``data_url_type``, which openai writes the URL back with.
"""

from __future__ import annotations

from ..fields import OPENAI_REASONING_EFFORTS as EFFORTS, REQUEST_FIELDS, REQUIRED, sets_nothing

import json
import re
from typing import Any, Callable

import msgspec

from ... import json as tok
from ...canonical import (
    ASSISTANT_REASONING, ASSISTANT_REFUSAL, ASSISTANT_TEXT, REQUEST_LEVEL, SYSTEM_INSTRUCTION, TOOL_CALL,
    TOOL_DEFINITION, TOOL_RESULT, TOP_LEVEL_SYSTEM, UNKNOWN, USER_AUDIO, USER_DOCUMENT, USER_IMAGE, USER_TEXT,
    Block, Control, End, Event, Extension, MessagesEnd, Section, SystemEnd, decode_escaped,
)
from ...decoding import OPT_STRING, STRING  # (types of members)
from ...decoding import (
    BlockBuilder, Gate, MessageReaderBase, RequestBodyDecoder, carries_nothing, index_at, keep_members,
)
from ...encoding import (
    PARTS_CONTENT, STRING_CONTENT, Encoder, MessageAssembler, MessageListBody, TextCallOrder, ignore, late_only,
    lose_unknown_members, merged_reasoning, message_member, choice_fate,
)
from ...images import SNIFF_BYTES, UNNAMED_TYPES, keep_head, sniff_file_type, type_named
from ...jsonwriter import JsonWriter, dumps, key_bytes
from ...losses import (
    CALL_INDEX, DATA_URL_TYPE, INTERNAL_ATTRS, MESSAGE_CACHE_CONTROL, RESULT_CACHE_CONTROL, THINKING_BLOCK, lacks,
    path_subject,
)
from ...naming import openai_id
from ...session import Session
from . import controls

DIALECT = "openai"

ROLE_TEXT_SECTION = {
    "system": SYSTEM_INSTRUCTION,
    "developer": SYSTEM_INSTRUCTION,
    "user": USER_TEXT,
    "assistant": ASSISTANT_TEXT,
    "tool": TOOL_RESULT,
    "function": TOOL_RESULT,
}
_DATA_URL_PREFIX_LIMIT = 256  # the most of a media URL held to find a data URL's header (up to its comma)


_FIELDS = REQUEST_FIELDS[DIALECT]

#: the sections whose text openai writes into a message's content: where a message "says json"
_SAYING_SECTIONS = frozenset({SYSTEM_INSTRUCTION, USER_TEXT, ASSISTANT_TEXT, TOOL_RESULT})
_JSON_WORD = re.compile(rb"json", re.IGNORECASE)  # (a bytes pattern: ASCII letters only)
_WORD_TAIL = len(b"json") - 1


def says_json(tail: bytes, payload: bytes) -> tuple[bool, bytes]:
    """Whether a text fragment says "json" (any case), with the last bytes of the block's
    fragments before it (``tail``); and the tail for the next fragment. Read in the escaped
    text: no escape holds these letters (nor a hex digit), so the word found is in the text;
    one written with ``\\u`` escapes is not seen -- the JSON mode is then sent in the form that
    needs no word (``RequestEncoder``), a valid request either way."""
    said = _JSON_WORD.search(payload) is not None or (
        bool(tail) and _JSON_WORD.search(tail + payload[:_WORD_TAIL]) is not None)
    return said, (tail + payload[-_WORD_TAIL:])[-_WORD_TAIL:]


#: the types of message members carried as extensions (the client's): a wrong one is a
#: SchemaError at the value (was: ``"name": 5`` copied into openai, a loss elsewhere)
_MESSAGE_MEMBER_TYPES = {"name": OPT_STRING}
#: a message's reasoning as text, read as a member of its own (no ``openai_reasoning_field``):
#: beside ``thinking_blocks`` it says what they say (``MessageReader._reasoning_text_end``)
_REASONING_TEXT_KEYS = ("reasoning_content", "reasoning")
#: the payload member of each thinking block type (``thinking_blocks``, LiteLLM's)
_THINKING_PAYLOAD = {"thinking": "thinking", "redacted_thinking": "data"}
#: the types of a media part's members besides its payload (``image_url.detail``,
#: ``input_audio.format``, ``file.file_id`` / ``filename``): strings, as the client declares
_MEDIA_MEMBER_TYPES = {"detail": STRING, "format": STRING, "file_id": STRING, "filename": STRING}


class RequestDecoder(RequestBodyDecoder):
    dialect = DIALECT
    required = REQUIRED[DIALECT]

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        self.reasoning_key = session.options.openai_reasoning_field
        # an assistant message's blocks wait for its thinking_blocks: a turn's thinking comes
        # first (as anthropic takes it), whatever the target -- the canonical events are the
        # same for every target (a Decoder's too) -- unless reordering is refused (the wire
        # order goes on, as ReasoningFirst's does)
        self.thinking_first = not session.options.refuse_reorder
        #: id -> type of the calls of a type other than function (custom tools): their results say so
        self.typed_calls: dict[str, str] = {}
        super().__init__(emit, session)

    # -- top level -----------------------------------------------------------

    def _top_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        self.expect(kind, value, offset, _FIELDS.get(key), key)
        if key == "messages":
            self.read_messages(kind, offset)
        elif key == "tools" or key == "functions":
            legacy = key == "functions"
            self.each_element(kind, offset, key, lambda k, v, o: self.read_value(
                k, v, o, lambda tool: self._tool(tool, legacy, o)))
        else:
            self.read_raw(kind, value, offset, lambda raw: self._top_field(key, raw, offset))

    def _top_field(self, key: str, raw: bytes, offset: int) -> None:
        if key == "reasoning_effort" and raw != b"null" and self.data(raw, offset) not in EFFORTS:
            raise self.error(f"unknown reasoning_effort {raw.decode()} (one of {', '.join(EFFORTS)})", offset)
        if sets_nothing(DIALECT, key, raw):  # the same as absent ("tool_choice": null, "metadata": {})
            self.emit(Extension(DIALECT, "$." + key, raw, lossless=True))
            return
        control = controls.decode(key, raw)
        if key == "stream_options" and control is not None:
            self.session.asks_stream_usage = isinstance(control.value, dict) and control.value.get("include_usage") is True
        if control is None:
            self.emit(Extension(DIALECT, "$." + key, raw))
        else:
            self.emit(self.checked(control, raw, offset))

    # -- messages --------------------------------------------------------------

    def _message_reader(self, index: int) -> "MessageReader":
        return MessageReader(self, index)

    def _tool(self, tool: Any, legacy: bool, offset: int) -> None:
        path = self.next_element_path("functions" if legacy else "tools")
        if not isinstance(tool, dict):
            raise self.error("expected an object for a tool", offset)
        self.refuse_overflow(tool, offset)
        canonical = controls.tool_to_canonical(tool, legacy)
        if canonical is None:
            self.emit(Block(UNKNOWN, REQUEST_LEVEL, dumps(tool), attrs={"dialect": DIALECT, "where": "tool"}))
            return
        attrs, schema = canonical
        self.check_tool_attrs(attrs, path if legacy else path + ".function", offset)
        attrs["path"] = path
        self.emit(Block(TOOL_DEFINITION, REQUEST_LEVEL, dumps(schema) if schema is not None else b"",
                        attrs=attrs))


class MessageReader(MessageReaderBase):
    """Reads one message object.

    While the role is unknown, blocks are held (text is provisionally
    ``user-text`` and gets its real section when the role arrives). The last
    block of the message is closed only at the message's end, so a late
    ``tool_call_id`` can still ride on its last fragment.
    """

    def __init__(self, decoder: RequestDecoder, index: int) -> None:
        super().__init__(decoder, index)
        self.tool_call_id: str | None = None
        self._open: BlockBuilder | None = None  # finished payload, not yet closed
        self._call_position = 0  # (of the next call in ``tool_calls``: ``losses.CALL_INDEX``)

    def _resolve(self, block: Block) -> Block:
        """Give text (built as provisional ``user-text``) the section its role says.

        An unrecognised role makes its text ``unknown`` blocks whose payload is
        the raw JSON the text came in (a string, or a text part)."""
        role = self.role
        if block.section is not USER_TEXT:
            if block.init and block.section is UNKNOWN and "role" not in (block.attrs or {}):
                return Block(block.section, block.message, block.payload, True, block.fin,
                             {**(block.attrs or {}), "role": role})
            return block
        if role == "user":
            return block
        section = ROLE_TEXT_SECTION.get(role, UNKNOWN)
        attrs = block.attrs
        payload = block.payload
        if block.init:
            attrs = dict(attrs or {})
            if role in ("developer", "function"):
                attrs["role"] = role
            if section is TOOL_RESULT:  # a further text part is more of the same result
                if self._results:
                    attrs["in_result"] = True
                self._results += 1
                call_type = self.d.typed_calls.get(self.tool_call_id)
                if call_type is not None:  # it answers a custom tool's call
                    attrs["call_type"] = call_type
        if section is UNKNOWN:
            in_parts = block.init and attrs.get("in_parts")
            if block.init:
                attrs.update(role=role, dialect=DIALECT)
                self._unknown_parts = bool(in_parts)
            if block.init and attrs.get("empty"):  # no content, null or []: nothing to carry raw
                return Block(section, block.message, b"", True, block.fin, attrs)
            head, tail = (b'{"type":"text","text":"', b'"}') if self._unknown_parts else (b'"', b'"')
            payload = (head if block.init else b"") + payload + (tail if block.fin else b"")
        return Block(section, block.message, payload, block.init, block.fin, attrs or None)

    _unknown_parts = False
    _results = 0  # tool-result text blocks of this message so far

    def text_section(self) -> Section:
        """Text is built as ``user-text``; ``_resolve`` gives it the role's section."""
        return USER_TEXT

    def text_attrs(self, attrs: dict | None = None) -> dict:
        """Attributes of a text block: a ``tool_call_id`` already read goes on the first one."""
        attrs = dict(attrs or {})
        if self.tool_call_id is not None and not self._id_given:
            attrs["tool_call_id"] = self.tool_call_id
            self._id_given = True
        return attrs

    _id_given = False
    _awaited_gate: Gate | None = None
    _ended = False
    _thinking_read = False  # its ``thinking_blocks`` went out (``_awaits``)

    def waiting(self) -> Gate | None:
        """The role's gate while the role is unknown; then the gate of what the message
        awaits (``_awaits``), if anything."""
        gate = super().waiting()
        if gate is not None:
            return gate
        reason = self._awaits()
        if reason is None:
            return None
        if self._awaited_gate is None:
            self._awaited_gate = Gate(self._out, self.d.session, reason)
        return self._awaited_gate

    def _awaits(self) -> str | None:
        """What the message's blocks wait for, as the gate's rule: in a tool message of a
        request with custom tool calls, its ``tool_call_id`` (``openai:result-before-call-id``:
        whether it answers one decides whether a target without custom tools sends it; sorted
        keys put the id after the content); in an assistant message, its ``thinking_blocks``
        (``openai:thinking-before-content``: a turn's thinking comes first -- anthropic takes
        it so -- and LiteLLM's ``Message.model_dump()`` writes it after the content and the
        tool calls). None: nothing."""
        if self._ended:
            return None
        if self.role == "tool" and self.tool_call_id is None and self.d.typed_calls:
            return "openai:result-before-call-id"
        if self.role == "assistant" and not self._thinking_read and self.d.thinking_first:
            return "openai:thinking-before-content"
        return None

    def _emit_resolved(self, block: Block) -> None:
        """Out of the role's gate: the block may wait for the call id now."""
        gate = self.waiting()
        if gate is None:
            self._out(block)
        else:
            gate(block)

    def _out(self, block: Block) -> None:
        self.d.emit(self._resolve(block))

    def _set_role(self, role: Any, offset: int) -> None:
        if self._thinking_blocks_read and role != "assistant" and isinstance(role, str):
            raise self.d.error(f"thinking_blocks in a message of role {role!r} (an assistant's only)", offset)
        super()._set_role(role, offset)
        if self._open is not None:
            self._open.recount()  # what it keeps back now waits where the message's blocks do

    def _release_awaited(self) -> None:
        """What the message awaited came (or its end): the blocks held for it go out."""
        if self._awaited_gate is not None:
            self._awaited_gate.release()
            self._awaited_gate = None
        if self._open is not None:
            self._open.recount()

    def builder(self, section: Section, attrs: dict | None = None, done=None) -> BlockBuilder:
        """A new block of this message; the previous one is closed first."""
        self.close_open()
        return BlockBuilder(self.emit, section, self.index, attrs, done, self.waiting)

    def finished(self, builder: BlockBuilder) -> None:
        """The block's payload is complete; it closes when the next block starts or the message ends."""
        self.close_open()
        self._open = builder

    def close_open(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None

    # -- keys of the message object --------------------------------------------

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            if self.role is None:
                self.close_open()
                raise d.error("message without role", offset)
            self._place_cache_control()
            self.close_open()
            self._ended = True
            self._release_awaited()
            self._reasoning_text_end()
            if not self._emitted:  # e.g. {"role": "assistant", "content": null}: still a message
                attrs = {"empty": True, **({"in_parts": True} if self._empty_parts else {})}
                if self.tool_call_id is not None and not self._id_given:  # a result without content
                    attrs["tool_call_id"] = self.tool_call_id
                self.emit(Block(USER_TEXT, self.index, b"", attrs=attrs))
            return
        if value == "role":
            reader = self._role
        elif value == "content":
            reader = self._content
        elif value == "tool_calls":
            reader = self._tool_calls
        elif value == "refusal":
            reader = self._string_member(ASSISTANT_REFUSAL, "refusal")
        elif value == "function_call":
            reader = self._function_call
        elif value == "tool_call_id":
            reader = self._tool_call_id
        elif value == "cache_control":
            reader = self._cache_control
        elif value == "thinking_blocks" and self.role in (None, "assistant"):
            reader = self._thinking_blocks
        elif d.reasoning_key is not None and value == d.reasoning_key:
            reader = self._string_member(ASSISTANT_REASONING, value)
        else:
            reader = self._extension(value)
        d.then(reader)

    def _null(self, key: str) -> None:
        self.d.extension(f"$.messages[{self.index}].{key}", b"null", message=self.index, lossless=True)

    def _extension(self, key: str):
        path = f"$.messages[{self.index}].{key}"
        expect = _MESSAGE_MEMBER_TYPES.get(key)

        def done(raw: bytes) -> None:
            if key in _REASONING_TEXT_KEYS and self.role in (None, "assistant"):
                self._reasoning_text = (path, raw)  # (said by the thinking_blocks? known at the end)
            else:
                self.d.extension(path, raw, message=self.index, lossless=carries_nothing(raw))

        def reader(kind: int, value: Any, offset: int) -> None:
            self.d.read_raw(kind, value, offset, done, expect, key)
        return reader

    _reasoning_text: tuple[str, bytes] | None = None  # an assistant's reasoning_content, until its end
    _thinking_blocks_read = 0  # blocks of its thinking_blocks

    def _reasoning_text_end(self) -> None:
        """The message's ``reasoning_content`` (or ``reasoning``) read as a member of its own:
        beside ``thinking_blocks`` it is their thinking as text (LiteLLM writes both), carried
        by them -- no loss; else the message's extension, as any other member."""
        if self._reasoning_text is not None:
            path, raw = self._reasoning_text
            self._reasoning_text = None
            said = carries_nothing(raw) or self._thinking_blocks_read > 0
            self.d.extension(path, raw, message=self.index, lossless=said)

    def _tool_call_id(self, kind: int, value: Any, offset: int) -> None:
        def done(call_id: Any) -> None:
            if not isinstance(call_id, str):
                raise self.d.error("expected a string for tool_call_id", offset)
            self.tool_call_id = call_id
            if self._open is not None and not self._id_given:  # after the content: a late attribute
                self._open.set("tool_call_id", call_id)
                self._id_given = True
            self._release_awaited()
        self.d.read_value(kind, value, offset, done)

    def _thinking_blocks(self, kind: int, value: Any, offset: int) -> None:
        """LiteLLM's signed thinking on an assistant message: anthropic's ``thinking`` /
        ``redacted_thinking`` blocks in an openai body. Reasoning blocks, ahead of the
        message's other blocks (``_awaits``), each read whole (bounded by
        ``max_value_bytes``); null or ``[]``: nothing."""
        if kind == tok.NULL:
            self._null("thinking_blocks")
            self._thinking_end()
            return
        self.close_open()  # (a block before them ends here: the thinking goes on its own)
        self.d.each_element(kind, offset, "thinking_blocks", self._thinking_element, self._thinking_list_end)

    def _thinking_element(self, kind: int, value: Any, offset: int) -> None:
        self.d.read_value(kind, value, offset, lambda data: self._thinking_block(data, offset))

    def _thinking_block(self, data: Any, offset: int) -> None:
        if not isinstance(data, dict):
            raise self.d.error("expected an object for a thinking block", offset)
        kind = data.get("type")
        payload_key = _THINKING_PAYLOAD.get(kind) if isinstance(kind, str) else None
        if payload_key is None:
            raise self.d.error(f"unknown thinking block type {kind!r} (thinking or redacted_thinking)", offset)
        text = data.get(payload_key)
        if not isinstance(text, str):
            raise self.d.error(f"expected a string for {payload_key}", offset)
        attrs: dict[str, Any] = {THINKING_BLOCK: True}
        own = {"type", payload_key}
        if kind == "redacted_thinking":
            attrs["redacted"] = True
        else:
            own.add("signature")
            signature = data.get("signature")
            if signature is not None and not isinstance(signature, str):
                raise self.d.error("expected a string for signature", offset)
            if signature is not None:
                attrs["signature"] = signature
        # (LiteLLM's cache_control, any other: the block's, back into openai only)
        keep_members(data, attrs, EXTRA_ATTR, skipped=own)
        self._emitted = True
        self._thinking_blocks_read += 1
        # past every gate, the role's too: the thinking goes ahead of the blocks held (a role
        # that comes later must be assistant: ``_set_role``)
        self._out(Block(ASSISTANT_REASONING, self.index, dumps(text)[1:-1], True, True, attrs))

    def _thinking_list_end(self) -> None:
        if not self._thinking_blocks_read:  # ``[]``: nothing, kept for openai
            self.d.extension(f"$.messages[{self.index}].thinking_blocks", b"[]", message=self.index, lossless=True)
        self._thinking_end()

    def _thinking_end(self) -> None:
        self._thinking_read = True
        self._release_awaited()

    _cache_raw: bytes | None = None  # the message's cache_control (LiteLLM's spelling), placed at its end

    def _cache_control(self, kind: int, value: Any, offset: int) -> None:
        def done(raw: bytes) -> None:
            self._cache_raw = raw
        self.d.read_raw(kind, value, offset, done)

    def _place_cache_control(self) -> None:
        """A message's ``cache_control`` (LiteLLM's openai-format spelling) is the breakpoint of
        its last block, known at the message's end whatever the key order: a late attribute of
        the block kept open until then -- ``result_cache_control`` in a tool message (the
        result's own, as an anthropic tool_result's), ``message_cache_control`` elsewhere. One
        that is not an object with members, in a message of a role openai does not know, or of
        a message with no block, stays the message's extension (kept for openai, a loss
        elsewhere)."""
        raw = self._cache_raw
        if raw is None:
            return
        self._cache_raw = None
        if (raw.startswith(b"{") and raw != b"{}" and self.role in ROLE_TEXT_SECTION
                and self._open is not None):
            key = RESULT_CACHE_CONTROL if self.role in ("tool", "function") else MESSAGE_CACHE_CONTROL
            self._open.set(key, json.loads(raw))
            return
        self.d.extension(f"$.messages[{self.index}].cache_control", raw, message=self.index,
                         lossless=carries_nothing(raw))

    _empty_parts = False  # content was an array (it may be empty)

    def _content(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self._null("content")
        elif kind == tok.ARRAY_START:
            self._empty_parts = True
            self.d.each_object(kind, offset, "content", lambda o: PartReader(self).on_key)
        else:
            self.string_block(kind, value, offset, self.text_section(), self.text_attrs(), "content")

    def string_block(self, kind: int, value: Any, offset: int, section: Section, attrs: dict | None,
                     what: str) -> BlockBuilder:
        builder = self.builder(section, attrs, self.finished)
        self.d.read_string(kind, value, offset, builder.fragment, what)
        return builder

    def _string_member(self, section: Section, key: str):
        def reader(kind: int, value: Any, offset: int) -> None:
            if kind == tok.NULL:
                self._null(key)
            else:
                self.string_block(kind, value, offset, section, None, key)
        return reader

    def _tool_calls(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self._null("tool_calls")
        else:
            self.d.each_object(kind, offset, "tool_calls", self._tool_call)

    def _tool_call(self, offset: int):
        position = self._call_position
        self._call_position += 1
        return ToolCallReader(self, legacy=False, position=position).on_key

    def _function_call(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self._null("function_call")
        elif kind == tok.OBJECT_START:
            self.d.push(ToolCallReader(self, legacy=True).on_function_key)
        else:
            raise self.d.wrong_type(kind, "an object for function_call", offset)


#: openai-only members kept as JSON text (``add_extra``) for an openai target: of a part or a
#: tool call (the legacy ``function_call`` too), and of a tool call's ``function``
EXTRA_ATTR = "openai_extra"
FUNCTION_EXTRA_ATTR = "openai_function_extra"


class ToolCallReader:
    """``{"id", "type": "function", "function": {"name", "arguments"}}`` -> a tool-call block.

    The payload is ``arguments`` as it is on the wire: the escaped text of a
    JSON string that itself holds JSON. ``id`` and ``name`` coming after the
    arguments ride on the last fragment. Legacy ``function_call`` has no id
    (attr ``legacy: true``).
    """

    def __init__(self, message: MessageReader, legacy: bool, position: int = 0) -> None:
        self.m = message
        self.d = message.d
        self.legacy = legacy
        self.position = position  # among the message's tool_calls
        self.block = message.builder(TOOL_CALL, {"legacy": True} if legacy else {})
        self.has_arguments = False

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            self._end()
            return
        if value == "id":
            d.then_value(lambda x: self.block.set("id", x), STRING, "a tool call's id")
        elif value == "function":
            d.then(self._function)
        elif value == "type":
            d.then_value(self._type)
        elif value == "index":
            d.then(self._index)
        else:
            d.then(self._extra(value))

    def _index(self, kind: int, value: Any, offset: int) -> None:
        """The call's ``index`` (a client that accumulated streamed deltas left it): at the
        call's position it says nothing (``losses.CALL_INDEX``), else an openai-only member."""
        def done(raw: bytes) -> None:
            if index_at(json.loads(raw), self.position):
                self.block.set(CALL_INDEX, self.position)
            else:
                add_extra(self.block, "index", raw)
        self.d.read_raw(kind, value, offset, done)

    def _type(self, value: Any) -> None:
        if value != "function":
            self.block.set("type", value)

    def _extra(self, key: str, attr: str = EXTRA_ATTR):
        def reader(kind: int, value: Any, offset: int) -> None:
            self.d.read_raw(kind, value, offset, lambda raw: add_extra(self.block, key, raw, attr))
        return reader

    def _function(self, kind: int, value: Any, offset: int) -> None:
        if kind != tok.OBJECT_START:
            raise self.d.wrong_type(kind, "an object for function", offset)
        self.d.push(self.on_function_key)

    def on_function_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            if self.legacy:
                self._end()
            return
        if value == "name":
            d.then_value(lambda x: self.block.set("name", x), STRING, "a tool call's name")
        elif value == "arguments":
            d.then(self._arguments)
        else:  # a member of ``function`` (of ``function_call`` itself, for the legacy form)
            d.then(self._extra(value, EXTRA_ATTR if self.legacy else FUNCTION_EXTRA_ATTR))

    def _arguments(self, kind: int, value: Any, offset: int) -> None:
        self.has_arguments = True
        self.d.read_string(kind, value, offset, self.block.fragment, "arguments")

    def _end(self) -> None:
        every = {**self.block.attrs, **self.block.late}
        if isinstance(every.get("type"), str) and isinstance(every.get("id"), str):
            self.d.typed_calls[every["id"]] = every["type"]  # its result will say so
        self.m.finished(self.block)


_PART_SECTIONS = {
    "text": None,  # the message's text section
    "refusal": ASSISTANT_REFUSAL,
    "image_url": USER_IMAGE,
    "file": USER_DOCUMENT,
    "input_audio": USER_AUDIO,
}


class PartReader:
    """One content part. Its kind is known from ``type`` or from its payload key,
    whichever comes first (sorted keys put ``text`` before ``type``)."""

    def __init__(self, message: MessageReader) -> None:
        self.m = message
        self.d = message.d
        self.type: str | None = None
        self.block: BlockBuilder | None = None
        self.raw_parts: list[tuple[str, bytes]] = []  # members besides type and payload: (key, raw JSON)

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            self._end(offset)
            return
        key = value
        if key == "type":
            d.then_value(lambda t: self._set_type(t, offset), STRING, "a content part's type")
        elif self.type is None or self.type == key:
            if key in _PART_SECTIONS and (self.type is None or self.type == key):
                self.type = self.type or key
                d.then(self._payload(key))
            else:
                d.then(self._raw_member(key))
        else:
            d.then(self._raw_member(key))

    def _set_type(self, part_type: Any, offset: int) -> None:
        if self.type is not None and self.type != part_type:
            raise self.d.error(f"content part of type {part_type!r} carries a {self.type!r} payload", offset)
        self.type = part_type

    def _raw_member(self, key: str):
        def reader(kind: int, value: Any, offset: int) -> None:
            self.d.read_raw(kind, value, offset, lambda raw: self.raw_parts.append((key, raw)))
        return reader

    def _payload(self, key: str):
        m = self.m

        def reader(kind: int, value: Any, offset: int) -> None:
            if key == "text":
                attrs = m.text_attrs({"in_parts": True})
                self.block = m.string_block(kind, value, offset, m.text_section(), attrs, "text")
            elif key == "refusal":
                self.block = m.string_block(kind, value, offset, ASSISTANT_REFUSAL, {"in_parts": True}, key)
            else:
                if kind != tok.OBJECT_START:
                    raise self.d.wrong_type(kind, f"an object for {key}", offset)
                media = MediaReader(self, key)
                self.d.push(media.on_key)
        return reader

    def _end(self, offset: int) -> None:
        if self.type is None:
            raise self.d.error("content part without type", offset)
        if self.type not in _PART_SECTIONS or self.block is None:
            # Unknown part type (or a known type without its payload): carried raw.
            raw = b"{" + b",".join([b'"type":' + dumps(self.type)]
                                   + [dumps(key) + b":" + value for key, value in self.raw_parts]) + b"}"
            attrs = {"dialect": DIALECT, "in_parts": True}
            if self.m.role is not None:
                attrs["role"] = self.m.role
            builder = self.m.builder(UNKNOWN, attrs)
            builder.fragment(raw, True, True)
            self.m.finished(builder)
            return
        for key, raw in self.raw_parts:  # extra keys on a known part (kept apart: a key may hold ':')
            if key == "cache_control" and (raw == b"null" or raw.startswith(b"{")):
                # the part's breakpoint, before or after its payload: the block's attribute (an
                # anthropic block's); another value stays the part's extra member
                self.block.set(key, json.loads(raw))
            else:
                add_extra(self.block, key, raw)


def add_extra(block: BlockBuilder, key: str, raw: bytes, attr: str = EXTRA_ATTR) -> None:
    """Keep an openai-only member of a part or tool call: ``openai_extra`` holds
    the members' JSON text (``"k":v,...``), spliced back by the openai encoder
    (``openai_function_extra``: the members of a tool call's ``function``)."""
    members = block.late.get(attr) or block.attrs.get(attr)
    text = dumps(key).decode() + ":" + raw.decode()
    block.set(attr, members + "," + text if members else text)


_MEDIA_PAYLOAD_KEY = {"image_url": "url", "file": "file_data", "input_audio": "data"}


def _data_url_label(head: bytes) -> str | None:
    """The label of a data URL's header -- ``head``, the text before its comma, is
    ``data:<label>;base64`` -- or None: not one. (A comma past the limit is one a cut body
    never waits for: not a data URL either way.)"""
    if len(head) > _DATA_URL_PREFIX_LIMIT:
        return None
    meta = decode_escaped(head)
    return meta[5:-7] if meta.startswith("data:") and meta.endswith(";base64") else None


class MediaReader:
    """The object of an ``image_url`` / ``file`` / ``input_audio`` part.

    The payload string streams; a data URL's prefix is parsed from its first
    bytes (held back until the comma, at most 256 bytes).
    """

    def __init__(self, part: PartReader, key: str) -> None:
        self.part = part
        self.m = part.m
        self.d = part.d
        self.key = key
        self.payload_key = _MEDIA_PAYLOAD_KEY[key]
        section = _PART_SECTIONS[key]
        self.block = self.m.builder(section, {"in_parts": True})
        part.block = self.block
        self._prefix = b""  # start of a possible data URL
        self._prefix_done = key == "input_audio"

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            if not self._prefix_done and self._prefix:
                self._flush_prefix(final=True)
            self.m.finished(self.block)
            return
        if value == self.payload_key:
            d.then(lambda k, v, o: d.read_string(k, v, o, self._fragment, value))
        else:  # (detail, format, file_id, filename: strings, as the client declares them)
            d.then_value(lambda x: self.block.set(value, x), _MEDIA_MEMBER_TYPES.get(value), value)

    def _fragment(self, data: bytes, init: bool, fin: bool) -> None:
        if self._prefix_done:
            self.block.fragment(data, init, fin)
            return
        self._prefix += data
        if fin or self._prefix_complete():
            self._flush_prefix(final=fin)

    def _prefix_complete(self) -> bool:
        """Whether the held start of the payload says what it is: a data URL's header ends
        at its comma (past the limit there is none); a file's data URL labelled with no type
        is held on until its first ``SNIFF_BYTES`` characters, which name one."""
        head, comma, rest = self._prefix.partition(b",")
        if not comma:
            return len(self._prefix) > _DATA_URL_PREFIX_LIMIT
        if not self._unnamed(_data_url_label(head)):
            return True
        sniffed = bytearray()
        keep_head(sniffed, rest)  # (a comma is never inside an escape: rest starts at a character)
        return len(sniffed) >= SNIFF_BYTES

    def _unnamed(self, label: str | None) -> bool:
        """Whether a data URL's ``label`` (None: not a data URL) is a file's that names no type."""
        return self.key == "file" and label is not None and type_named(label) in UNNAMED_TYPES

    def _flush_prefix(self, final: bool) -> None:
        data, self._prefix = self._prefix, b""
        self._prefix_done = True
        head, comma, rest = data.partition(b",")
        label = _data_url_label(head) if comma else None
        if label is not None:
            shown = None
            if self._unnamed(label):  # its type is the one its first bytes show, if any
                sniffed = bytearray()
                keep_head(sniffed, rest)
                shown = sniff_file_type(bytes(sniffed))
            self.block.set("source", "base64")
            self.block.set("media_type", shown or label)
            self.block.set("data_url", True)
            if shown is not None:
                self.block.set(DATA_URL_TYPE, label)  # (written back as it came)
            self.block.fragment(rest, True, final)
            return
        if self.key == "image_url":
            self.block.set("source", "url")
        else:  # file_data that is not a data URL: base64 as given, written back without a prefix
            self.block.set("source", "base64")
            self.block.set("data_url", False)
            # its type is the one its first bytes show (a PDF, an image), as a data URL's header
            # says it; read before any comma, which the hold ends at (the same at every cut)
            sniffed = bytearray()
            keep_head(sniffed, head)
            media_type = sniff_file_type(bytes(sniffed))
            if media_type is not None:
                self.block.set("media_type", media_type)
        self.block.fragment(data, True, final)


# ---------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------

_USER_SECTIONS = {USER_TEXT, USER_IMAGE, USER_DOCUMENT, USER_AUDIO}
_NO_ATTRS: frozenset = frozenset()
_OWN_PART_ATTRS = frozenset({"cache_control"})  # (written into openai from openai only)
#: block attributes an openai part or tool call can carry (others are losses)
_PART_ATTRS = {"detail", "filename", "file_id", "format"}


def _title(attrs: dict) -> str | None:
    """A document's title that can name its file (a non-empty string)."""
    title = attrs.get("title")
    return title if isinstance(title, str) and title else None


def _filename(attrs: dict) -> str:
    """A file part's name where the source gave none (anthropic's document): its title (carried
    so: not a loss), else ``document.pdf`` (a PDF) or ``document``."""
    return _title(attrs) or ("document.pdf" if attrs.get("media_type") == "application/pdf" else "document")


class RequestEncoder(Encoder):
    """Canonical events -> an OpenAI Chat Completions request body.

    Order rules it enforces (the holds are the reorder buffer's):
    * system first: until ``SystemEnd``, messages are written into a hold
      (``openai:messages-before-system``); top-level system blocks open the
      list, then the held messages follow.
    * tool messages directly after the assistant's tool calls: the user
      message that follows tool calls is written into a hold
      (``openai:user-before-tool-result``) and placed after the tool messages
      made from the same source message. Blocks moved out of tool messages (an
      ollama tool message's images), or out of the tool_calls message after its
      calls (an ollama assistant image), wait in that hold until the run of tool
      messages ends: a user message between two tool messages, or between the
      calls and their results, is refused. So does a user or system message of another dialect
      that comes while calls of the batch await their tool messages (Ollama takes one between
      tool messages; ``_waits_for_results``): it follows the run, in the order it came, a
      system message still one. Nothing new is recorded (as into anthropic's user hold): only
      its place among the results moves, one openai has not; the message stays in the
      conversation after the same turns (unlike an openai system message moved into
      anthropic's top-level system, whose place is recorded lost).
    * calls moved out of a tool message (ollama ``tool_calls`` on a tool message, role attr)
      while the batch of the calls before it is not all answered wait in a hold
      (``openai:calls-after-run``): every such call of the run in ONE assistant message (two
      tool_calls messages in a row would leave the first unanswered), written when the run of
      results answering the batch ends -- before a tool result that comes once every call of the
      batch is answered (it answers the new calls), before any block of another message that
      is not a tool result, and at the end of the messages -- after the run's held user
      message (its images). A user or system message between the run's tool messages while
      the batch is open does not end the run (the ollama decoder's rule): it waits in the run
      hold, after the batch's tool messages, then the calls.
    * another dialect's JSON mode (canonical ``json_object``: ollama ``format: "json"``) waits
      for the end of the messages (``openai:json-mode-after-messages``; it is not held when it
      comes after them, as ollama's clients send it): openai refuses ``json_object`` unless a
      message says "json" ("'messages' must contain the word 'json' in some form"), so it is
      sent as ``json_object`` when a message's text says it (``says_json``) and otherwise as
      the same request in the form that has no such rule, a ``json_schema`` of any object
      (``JSON_OBJECT_SCHEMA``) -- nothing is lost: both ask for one JSON object.
    * another dialect's ``top_logprobs`` (ollama's) goes only with ``logprobs: true``: openai refuses
      it otherwise ("logprobs must be set to true if top_logprobs is used"). One that comes before
      its ``logprobs`` waits for it (``openai:top-logprobs-after-logprobs``); with none true by the
      end it is not sent, recorded (ollama returns no log probabilities without ``logprobs``).
    """

    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self._text_call_order = TextCallOrder()  # (content and tool_calls are two members)
        self.foreign = session.source != DIALECT
        # a part's cache_control is written back into openai from openai (openai-compatible
        # upstreams -- OpenRouter, LiteLLM -- take it); another dialect's is a recorded loss: the
        # official API refuses members it does not declare
        self._part_own = _NO_ATTRS if self.foreign else _OWN_PART_ATTRS
        self.out = JsonWriter(write)
        self.body = MessageListBody(self.out, session, DIALECT, self._close_message)
        self.reasoning_key = session.options.openai_reasoning_field
        self._msg: MessageAssembler | None = None
        self._carried = False  # a message was opened in the output (``require_a_message``)
        self._msg_index: int | None = None
        self._msg_role: str | None = None
        self._msg_has_result_id = False
        self._msg_had_tool_calls = False
        self._msg_needs_content = False  # an empty tool result: content "" unless parts follow
        self._after_tool_calls = False  # the next source message may hold tool results
        self._tool_calls_index: int | None = None  # source index of the last message with tool calls
        self._user_hold = None  # Hold of a user message waiting for tool messages
        self._user_index: int | None = None
        self._user_writer: JsonWriter | None = None
        self._run_hold = False  # the user hold holds only blocks moved out of tool messages
        #: the ids of the calls of the last tool_calls message written, and those answered so far
        self._batch: list = []
        self._batch_msg: MessageAssembler | None = None
        self._answered: set = set()
        #: the assistant message of calls moved out of a run's tool messages (its hold), and their ids
        self._held_calls: MessageAssembler | None = None
        self._held_calls_hold = None
        self._held_ids: list = []
        # the user message that takes a tool result's images/documents while the tool
        # message (its texts) stays open: written into the user hold
        self._moved: MessageAssembler | None = None
        self._pending_ext: list[Extension] = []
        # reasoning controls of other dialects: one source may carry several
        # (anthropic thinking + output_config.effort); merged into one key at the end
        self._reasoning = session.reorder.hold("openai:merge-reasoning")
        # another dialect's tool choice waits for the tools: one with no tool sent to choose is
        # not written (openai refuses it), a forced one a recorded loss
        self._tool_controls = session.reorder.hold("openai:tool-choice-after-tools")
        # another dialect's json_object response format waits for the messages: sent as is only
        # when a message says "json"
        self._json_mode = session.reorder.hold("openai:json-mode-after-messages")
        self._said_json = False
        self._text_tail = b""  # the open text block's last bytes (a word cut between fragments)
        # another dialect's top_logprobs waits for logprobs: true (openai refuses it without)
        self._top_logprobs = session.reorder.hold("openai:top-logprobs-after-logprobs")
        self._asks_logprobs = False

    def on_event(self, event: Event) -> None:
        if type(event) is Block:
            self._on_block(event)
        elif type(event) is Control:
            self._on_control(event)
        elif type(event) is Extension:
            self._on_extension(event)
        elif type(event) is SystemEnd:
            self.body.system_end()
        elif type(event) is MessagesEnd:
            self.body.messages_end()
            self._write_json_mode()
        elif type(event) is End:
            self.body.end()
            self.require_a_message(self._carried)
            self._write_json_mode()
            self._write_top_logprobs()
            self._write_tool_controls()
            self._write_reasoning()
            self.body.finish()

    def _on_block(self, block: Block) -> None:
        """An openai message's ``cache_control`` rides on its last block (``message_cache_control``,
        ``result_cache_control`` in a tool message): written back as the message's member."""
        if not self._said_json and block.section in _SAYING_SECTIONS:
            self._said_json, self._text_tail = says_json(b"" if block.init else self._text_tail, block.payload)
        attrs = block.attrs
        if self.foreign or not block.fin or not attrs or (
                MESSAGE_CACHE_CONTROL not in attrs and RESULT_CACHE_CONTROL not in attrs):
            super()._on_block(block)
            return
        attrs = dict(attrs)
        cache = attrs.pop(MESSAGE_CACHE_CONTROL, None)
        cache = attrs.pop(RESULT_CACHE_CONTROL, cache)
        super()._on_block(Block(block.section, block.message, block.payload, block.init, block.fin,
                                attrs or None))
        if self._msg is not None and self._msg_index == block.message:
            self._msg.trailing("cache_control", dumps(cache))

    def _on_control(self, control: Control) -> None:
        if control.dialect == DIALECT and control.key is not None:
            self.body.member(control.key, control.raw)
            return
        lose_unknown_members(control, DIALECT, self.session)
        if control.name == "reasoning":
            self._reasoning.append(control, len(dumps(control.value)))
            return
        json_mode = control.name == "response_format" and controls.json_mode(control.value)
        if json_mode and self.body.messages_ended:
            self._write_json_object(control)
            return
        hold = self._hold_for(control, json_mode)
        if hold is not None:
            hold.append(control, len(dumps(control.value)) + len(control.name))
            return
        self._write_control(control)
        if control.name == "logprobs" and control.value is True and not self._asks_logprobs:
            self._asks_logprobs = True
            self._write_top_logprobs()

    def _hold_for(self, control: Control, json_mode: bool):
        """The hold another dialect's control waits in until what decides it is known, or None."""
        if control.name in ("tool_choice", "parallel_tool_calls"):
            return self._tool_controls  # the tools sent
        if json_mode:
            return self._json_mode  # the messages' words
        if control.name == "top_logprobs" and not self._asks_logprobs:
            return self._top_logprobs  # logprobs: true
        return None

    def _write_control(self, control: Control) -> None:
        key, value = controls.encode_control(control, self.session)
        if key is not None:
            self.body.member(key, dumps(value))
            if key == "stream" and value is True and control.name == "stream":
                # another dialect's client gets usage at a stream's end (anthropic message_delta,
                # ollama's done line); an openai backend sends it only when asked
                self.body.member("stream_options", b'{"include_usage":true}')

    def _on_extension(self, ext: Extension) -> None:
        if ext.dialect != DIALECT:
            self.foreign_extension(ext)
        elif ext.message is None:
            self.body.member(ext.path[2:], ext.raw)
        elif self._msg is not None and ext.message == self._msg_index:
            self._msg.trailing(message_member(ext), ext.raw)
        else:  # a field of a message whose first block has not come yet
            self._pending_ext.append(ext)

    def _write_tool_controls(self) -> None:
        """The tool choice and ``parallel_tool_calls``, now that the tools sent are known: with no
        tool sent they are not written (openai refuses them without tools; a forced choice is a
        recorded loss), nor a choice naming a tool that is not sent (recorded)."""
        for control in (self._tool_controls.drain() if self._tool_controls else ()):
            goes, loss = choice_fate(control.value if control.name == "tool_choice" else None, self.tools_sent)
            if loss is not None:
                self._lose_control(control, loss)
            elif goes:
                self._write_control(control)

    def _write_top_logprobs(self) -> None:
        """The held ``top_logprobs``: written once ``logprobs: true`` came; at the end without it,
        not sent, recorded."""
        for control in self._top_logprobs.drain():
            if self._asks_logprobs:
                self._write_control(control)
            else:
                self._lose_control(control, "top_logprobs without logprobs: true")

    def _lose_control(self, control: Control, what: str) -> None:
        """A control of another dialect not sent: recorded at its key (or its name)."""
        where = control.place
        self.session.lose(where, lacks(path_subject(where), DIALECT, what, "not sent"), dialect=control.dialect)

    def _write_json_mode(self) -> None:
        """The JSON mode held for the end of the messages."""
        for control in self._json_mode.drain():
            self._write_json_object(control)

    def _write_json_object(self, control: Control) -> None:
        """Another dialect's JSON mode, the messages known: ``json_object`` when a message says
        "json", else a ``json_schema`` of any object (openai refuses the first)."""
        if not self._said_json:
            control = msgspec.structs.replace(control, value=controls.JSON_OBJECT_SCHEMA)
        self._write_control(control)

    def _write_reasoning(self) -> None:
        """One ``reasoning_effort`` from every reasoning control: an effort wins over a budget."""
        if not self._reasoning:
            return
        items = list(self._reasoning.drain())
        key, value = controls.encode_control(merged_reasoning(items, DIALECT, self.session), self.session)
        if key is not None:
            self.body.member(key, dumps(value))

    # -- messages ------------------------------------------------------------

    def _messages_writer(self, index: int, role: str, from_tool: bool = False) -> JsonWriter:
        """Where the next message element goes (the output, or a hold). ``from_tool``: a
        user message for blocks moved out of a tool message."""
        if index == TOP_LEVEL_SYSTEM:
            return self.body.messages_writer(system=True)
        if self._after_tool_calls and ((role == "user" and self._user_index in (None, index))
                                       or (from_tool and (self._run_hold or self._user_hold is None))):
            return self._user_hold_writer(index, from_tool)
        return self.body.messages_writer()

    def _user_hold_writer(self, index: int, run_hold: bool) -> JsonWriter:
        """The user hold's writer, the hold opened for message ``index`` if none is open
        (``run_hold``: it waits for the whole run of tool messages)."""
        if self._user_hold is None:
            self._user_hold = self.session.reorder.hold("openai:user-before-tool-result")
            self._user_writer = JsonWriter(self._user_hold.write)
            self._user_writer._first.append(True)
            self._user_index, self._run_hold = index, run_hold
        return self._user_writer

    def _close_moved(self) -> None:
        if self._moved is not None:
            self._moved.close()
            self._moved = None

    def _moved_media_message(self, index: int) -> MessageAssembler:
        """The user message for a tool result's media, beside the result's open tool message."""
        if self._moved is None:
            self._carried = True
            self._moved = MessageAssembler(self._messages_writer(index, "user"), self.session,
                                           "openai:member-order", b'"role":"user"')
        return self._moved

    def _after_own_calls(self, block: Block, attrs: dict) -> bool:
        """Media moved out of the open assistant message after its tool calls (an ollama image)."""
        return (attrs.get("role") == "assistant" and self._msg is not None and self._msg_role == "assistant"
                and self._msg_index == block.message and self._msg_had_tool_calls)

    def _held_media_message(self, index: int) -> MessageAssembler:
        """The user message for the media of the open assistant message after its tool calls: it
        waits, as the message's tool messages will, for the run of results to end (in the run
        hold), while the assistant message stays open for the rest of its members."""
        if self._moved is None:
            self._carried = True
            self._moved = MessageAssembler(self._user_hold_writer(index, True), self.session,
                                           "openai:member-order", b'"role":"user"')
        return self._moved

    def _flush_user_hold(self) -> None:
        self._close_moved()
        if self._user_hold is not None:
            if self._user_hold:
                self.body.messages_writer().raw_element(self._user_hold.take_bytes())
            self._user_hold = None
            self._user_writer = None
            self._user_index = None
            self._run_hold = False
            self._after_tool_calls = False

    def _open_message(self, index: int, role: str, attrs: dict | None,
                      first: tuple[str, bytes, bytes] | None = None) -> None:
        """``first``: the member that streams first, opened with the message (``MessageAssembler``)."""
        self._close_message()
        self._close_moved()
        # blocks moved out of a tool message, or out of the tool_calls message after its calls
        # (an ollama assistant image): they wait for the run of tool messages to end
        moved = (attrs or {}).get("role")
        from_tool = role == "user" and (moved == "tool" or (
            isinstance(moved, str) and moved != "user" and self._after_tool_calls
            and index == self._tool_calls_index))
        # a user or system message of another dialect while calls await their results waits too
        from_tool = from_tool or self._waits_for_results(index, role, moved)
        if self._user_hold is not None and (index != self._user_index or self._run_hold) \
                and not self._continues_run(role, from_tool):
            self._flush_user_hold()
        if (index != self._msg_index and role != "tool" and self._user_hold is None and not from_tool
                and self._msg_index != self._tool_calls_index):
            # a message that does not directly follow the tool calls: nothing to hold.
            # (The one that does may start with user text and hold tool results after
            # it -- anthropic [text, tool_result] -- so its user blocks are held.)
            self._after_tool_calls = False
        writer = self._messages_writer(index, role, from_tool)
        self._carried = True
        self._msg = MessageAssembler(writer, self.session, "openai:member-order", b'"role":' + key_bytes(role),
                                     first)
        self._msg_index = index
        self._msg_role = role
        self._msg_has_result_id = False
        self._msg_had_tool_calls = False
        if self._pending_ext:
            for ext in [e for e in self._pending_ext if e.message == index]:
                self._msg.trailing(message_member(ext), ext.raw)
            self._pending_ext = [e for e in self._pending_ext if e.message != index]

    def _waits_for_results(self, index: int, role: str, moved) -> bool:
        """A user or system message of another dialect (not blocks moved out of an assistant or
        tool message) that comes while calls of the batch await their results (Ollama takes one
        between tool messages; openai takes none between the calls and their tool messages):
        it waits in the run hold and follows the run of tool messages. Not recorded: nothing is
        dropped, and its place among the results is one openai has not (as into anthropic)."""
        return (self.foreign and role in ("user", "system", "developer") and moved not in ("assistant", "tool")
                and self._after_tool_calls and index != self._tool_calls_index and self._batch_open()
                and (self._user_hold is None or self._run_hold))

    def _batch_open(self) -> bool:
        """A call of the last tool_calls message is not answered yet (the run goes on)."""
        return any(call_id not in self._answered for call_id in self._batch)

    def _moved_call(self, block: Block, attrs: dict) -> bool:
        """A tool call of a tool message (ollama), to send in an assistant message after the run."""
        return block.section is TOOL_CALL and attrs.get("role") == "tool" and not attrs.get("legacy")

    def _ends_run(self, block: Block, attrs: dict) -> bool:
        """Whether the held calls go before ``block``: it is not a block of the open tool
        message, nor another moved call, nor a result of the run (one that comes while a call of
        the batch is unanswered)."""
        if self._moved_call(block, attrs) or (self._msg is not None and block.message == self._msg_index
                                              and self._msg_role == "tool"):
            return False
        if self._batch_open() and (block.section in _USER_SECTIONS or block.section is SYSTEM_INSTRUCTION) \
                and attrs.get("role") not in ("assistant", "tool"):
            return False  # a user or system message between the run's tool messages: the run goes on
        return not (block.section is TOOL_RESULT and attrs.get("role", "tool") == "tool" and self._batch_open())

    def _held_calls_message(self) -> MessageAssembler:
        if self._held_calls is None:
            self._held_calls_hold = self.session.reorder.hold("openai:calls-after-run")
            writer = JsonWriter(self._held_calls_hold.write)
            writer._first.append(True)
            self._held_calls = MessageAssembler(writer, self.session, "openai:member-order", b'"role":"assistant"')
        return self._held_calls

    def _flush_held_calls(self) -> None:
        """The run of results answering the batch ended: its held user message (images), then
        the moved calls' assistant message, whose calls are the batch the next results answer."""
        held, hold, ids = self._held_calls, self._held_calls_hold, self._held_ids
        self._held_calls = self._held_calls_hold = None
        self._held_ids = []
        self._close_message()
        if self._run_hold:
            self._flush_user_hold()
        self._close_moved()
        held.close()
        self._carried = True
        self.body.messages_writer().raw_element(hold.take_bytes())
        self._batch, self._batch_msg, self._answered = ids, None, set()
        self._after_tool_calls = True
        self._tool_calls_index = self._msg_index

    def _continues_run(self, role: str, from_tool: bool) -> bool:
        """Whether a message keeps the run hold waiting: the next tool message of the run,
        or more blocks moved out of one (a message of any other role ends the run)."""
        return self._run_hold and (role == "tool" or from_tool)

    def _close_message(self) -> None:
        if self._msg is not None:
            if self._msg_needs_content and not self._msg.has("content") and not (
                    self._msg_role == "assistant" and (self._msg_had_tool_calls or self._msg.has("function_call")
                                                       or self._msg.has("refusal"))):
                self._msg.scalar("content", b'""')
            elif self._msg_role == "assistant" and self.session.source != DIALECT and not any(
                    self._msg.has(k) for k in ("content", "tool_calls", "function_call", "refusal")):
                # another dialect's empty assistant turn (ollama {"role": "assistant"}): openai
                # rejects an assistant message with nothing in it; its empty text is ""
                self._msg.scalar("content", b'""')
            self._msg_needs_content = False
            self._msg.close()
            if self._msg_had_tool_calls:
                self._after_tool_calls = True
                self._tool_calls_index = self._msg_index
            self._msg = None
            if self._user_hold is not None and self.body.messages_ended:
                self._flush_user_hold()
        if self._held_calls is not None and self.body.messages_ended:
            self._flush_held_calls()

    def _starts_message(self, block: Block, role: str) -> bool:
        """Whether ``block`` goes into a new message rather than the open one."""
        starts_result = (role == "tool" and block.init and block.attrs is not None
                         and "tool_call_id" in block.attrs and self._msg_has_result_id)
        return (self._msg is None or block.message != self._msg_index or role != self._msg_role
                or starts_result)

    def _message_for(self, block: Block, role: str) -> MessageAssembler:
        if self._starts_message(block, role):
            self._open_message(block.message, role, block.attrs)
        return self._msg

    # -- blocks ------------------------------------------------------------------


    def _place(self, block: Block):
        """Open the block in the right message and member; returns (write, close) or None (lost)."""
        s = block.section
        attrs = block.attrs or {}
        if self._held_calls is not None and self._ends_run(block, attrs):
            self._flush_held_calls()
        if s is SYSTEM_INSTRUCTION:
            return self._text(block, attrs.get("role", "system"))
        if s in _USER_SECTIONS:
            if s is USER_TEXT:
                return self._text(block, "user")
            return self._media(block, attrs)
        if s is ASSISTANT_TEXT:
            return self._text(block, "assistant")
        if s is ASSISTANT_REFUSAL:
            if attrs.get("in_parts"):
                return self._text(block, "assistant", part_type="refusal")
            return self._string_member(block, "assistant", "refusal")
        if s is ASSISTANT_REASONING:
            if attrs.get(THINKING_BLOCK):
                return self._thinking_block(block, attrs)
            why = controls.reasoning_loss(attrs, self.reasoning_key)
            if why is not None:
                self._lose_block(block, *why)
                return None
            self._lose_signature(block, attrs)
            write, _ = self._string_member(block, "assistant", self.reasoning_key)
            return write, lambda late: self._lose_signature(block, late)
        if s is TOOL_CALL:
            return self._tool_call(block, attrs)
        if s is TOOL_RESULT:
            return self._tool_result(block, attrs)
        if s is UNKNOWN and attrs.get("dialect") == DIALECT:
            return self._unknown(block, attrs)
        self._lose_unplaced(block)
        return None

    def _extra_attrs(self, block: Block, attrs: dict, allowed: set) -> bytes:
        """Members for the part attributes openai knows; the rest are recorded losses."""
        out = b""
        for key, value in attrs.items():
            if key in allowed:
                out += b"," + dumps(key) + b":" + dumps(value)
            elif key == EXTRA_ATTR:
                out += b"," + value.encode()
            elif key not in _STRUCTURE_ATTRS:
                self._lose_field(block, key, attrs)
        return out

    def _text(self, block: Block, role: str, part_type: str = "text"):
        attrs = block.attrs or {}
        in_parts = attrs.get("in_parts")
        if role != "tool" and not attrs.get("empty") and self._starts_message(block, role):
            # the common case, a text that starts its message: "content" opens with the message
            self._open_message(block.message, role, None, PARTS_CONTENT if in_parts else STRING_CONTENT)
            msg = self._msg
            if not in_parts:
                return msg.out.write, ignore
        else:
            msg = self._message_for(block, role)
        if role == "tool":
            self._result_id(msg, attrs)
        if attrs.get("empty"):
            if self.session.source != DIALECT:
                # openai rejects a user, system or tool message whose content is [] or missing
                # (ollama {"role": "user"}), and an assistant message with nothing in it: the
                # empty content is "" -- written when the message
                # closes, since further parts (anthropic [image, text] in a result: the head is
                # empty, the text follows) make it a list, and tool calls make it unneeded
                self._msg_needs_content = True
            elif attrs.get("in_parts"):
                msg.member("content", b"[")
            return (lambda data: None), (lambda late: self._result_close(block, msg, role, attrs, late))
        if not in_parts and not msg.has("content"):
            w = msg.member("content", b'"')
            if role != "tool":
                return w.write, ignore
            return w.write, (lambda late: self._result_close(block, msg, role, attrs, late))
        w = msg.member("content", b"[")
        name = key_bytes(part_type)
        w.write(w._sep() + b'{"type":' + name + self._extra_attrs(block, attrs, self._part_own) + b"," + name + b':"')

        def close(late: dict) -> None:
            w.write(b'"' + self._extra_attrs(block, late, self._part_own) + b"}")
            if role == "tool":
                self._result_id(msg, late)
        return w.write, close

    def _thinking_block(self, block: Block, attrs: dict):
        """A block of openai's own ``thinking_blocks`` (LiteLLM's), back into them as it came."""
        w = self._message_for(block, "assistant").member("thinking_blocks", b"[")
        w._separate()
        redacted = attrs.get("redacted")
        w.write(b'{"type":"redacted_thinking","data":"' if redacted else b'{"type":"thinking","thinking":"')

        def close(late: dict) -> None:
            merged = {**attrs, **late}
            signature = b',"signature":' + dumps(merged["signature"]) if "signature" in merged and not redacted else b""
            w.write(b'"' + signature + _members(merged, EXTRA_ATTR) + b"}")
        return w.write, close

    def _string_member(self, block: Block, role: str, key: str):
        msg = self._message_for(block, role)
        w = msg.member(key, b'"')
        return w.write, (lambda late: None)

    def _call_id(self, call_id):
        """Another dialect's tool-call id as openai accepts it (``naming.openai_id``)."""
        return openai_id(call_id) if self.foreign and isinstance(call_id, str) else call_id

    def _result_id(self, msg: MessageAssembler, attrs: dict) -> None:
        call_id = attrs.get("tool_call_id")
        if call_id is not None and not self._msg_has_result_id:
            self._answered.add(call_id)
            msg.scalar("tool_call_id", dumps(self._call_id(call_id)))
            self._msg_has_result_id = True

    def _result_close(self, block: Block, msg: MessageAssembler, role: str, attrs: dict, late: dict) -> None:
        """A result's call id may come late (ollama links results when they end); its tool
        name (ollama tool_name) is carried by that id, and lost without one."""
        if role != "tool":
            return
        self._result_id(msg, late)
        merged = {**attrs, **late}
        # a string (or empty) result has no part to carry attributes: each one (cache_control,
        # another dialect's extra members) is a recorded loss, as for every other block
        self._extra_attrs(block, {k: v for k, v in merged.items() if k != EXTRA_ATTR}, _NO_ATTRS)
        if merged.get("name") is not None and merged.get("tool_call_id") is None:
            self._lose(block, f"tool_name of a {self._subject(block, merged)} that answers no call",
                       "field for a result's tool name", "a tool message needs the call's tool_call_id")

    def _tool_result(self, block: Block, attrs: dict):
        role = attrs.get("role", "tool")
        self._lose_is_error(block, attrs)
        placed = self._text(block, role)
        if placed is None:
            return None
        write, close = placed

        def close_checked(late: dict) -> None:  # is_error may come after the content
            self._lose_is_error(block, late)
            close(late)
        return write, close_checked

    def _media(self, block: Block, attrs: dict):
        s = block.section
        if self.foreign and s is not USER_AUDIO and attrs.get("source") is None and block.fin and not block.payload:
            # (another dialect's image or document with no source at all: nothing to send)
            self._lose_block(block, "source it can take", attrs=attrs)
            return None
        if s is USER_IMAGE and attrs.get("source") == "base64" and attrs.get("media_type") is None:
            # openai takes png, jpeg, gif and webp images only ("You uploaded an unsupported
            # image"); an image with no media type (ollama's bytes that show none of them) is not one
            self._lose_block(block, "base64 image without a media type (png, jpeg, gif or webp)", "not sent",
                             attrs=attrs)
            return None
        data_prefix = b""
        if attrs.get("source") == "base64" and attrs.get("data_url", True) and s is not USER_AUDIO:
            # openai takes inline images and files only as data URLs
            # (a label that named no type, where the bytes named one: the URL as it came)
            label = attrs.get(DATA_URL_TYPE, attrs.get("media_type", "application/octet-stream"))
            data_prefix = b"data:" + _in_string(label) + b";base64,"
        elif attrs.get("source") not in (None, "url", "base64") or (
                s is USER_DOCUMENT and attrs.get("source") == "url"):  # a file has no URL form
            self._lose_block(block, f"{attrs.get('source')} source for it", attrs=attrs)
            return None
        if attrs.get("in_result"):
            self._lose_block(block, "media in tool messages", "moved to a user message after the tool messages",
                             attrs=attrs)
        if attrs.get("in_result") and self._msg is not None and self._msg_role == "tool" \
                and self._msg_index == block.message and self._after_tool_calls:
            msg = self._moved_media_message(block.message)  # the result's texts go on in its tool message
        elif self._after_own_calls(block, attrs):
            self._lose_moved(block, attrs, "user")
            msg = self._held_media_message(block.message)  # the message's text may follow: it stays open
        else:
            self._lose_moved(block, attrs, "user")
            msg = self._message_for(block, "user")
        w = msg.member("content", b"[")
        w._separate()
        if s is USER_IMAGE:
            head, key, inner = b'{"type":"image_url","image_url":{', "url", {"detail"}
        elif s is USER_DOCUMENT:
            head, key, inner = b'{"type":"file","file":{', "file_data", {"filename", "file_id"}
        else:
            head, key, inner = b'{"type":"input_audio","input_audio":{', "data", {"format"}
        early = self._extra_attrs(block, {k: v for k, v in attrs.items() if k in inner}, inner)
        has_payload = s is USER_AUDIO or attrs.get("source") is not None
        body = early[1:]
        if has_payload:
            body += (b"," if body else b"") + dumps(key) + b':"' + data_prefix
        w.write(head + body)
        outer = {k: v for k, v in attrs.items() if k not in inner}

        def close(late: dict) -> None:
            self._lose_is_error(block, late)
            tail = b'"' if has_payload else b""
            tail += self._extra_attrs(block, {k: v for k, v in late.items() if k in inner}, inner)
            rest = {**outer, **{k: v for k, v in late.items() if k not in inner}}
            if s is USER_DOCUMENT and has_payload and self.foreign and "filename" not in attrs \
                    and "filename" not in late:
                # openai refuses file_data without a filename ("Missing required parameter: file_id");
                # an openai body's own part stays as it came (a same-dialect request round-trips)
                every = {**attrs, **late}
                tail += b',"filename":' + dumps(_filename(every))
                if _title(every) is not None:
                    del rest["title"]  # (carried: it names the file)
            tail += b"}" + self._extra_attrs(block, rest, self._part_own) + b"}"
            w.write(tail)
        return w.write, close

    def _tool_call(self, block: Block, attrs: dict):
        if self._typed_call(block, attrs):
            return self._write_typed_call(block, attrs)
        self._foreign_call_attrs(block, attrs)  # the late ones at the close: each recorded once
        self._lose_moved(block, attrs, "assistant")
        if self._moved_call(block, attrs) and (self._held_calls is not None or (
                self._after_tool_calls and self._batch_open())):
            msg = self._held_calls_message()  # sent when the run answering the batch ends
            ids = self._held_ids
        else:
            msg = self._message_for(block, "assistant")
            if self._batch_msg is not msg:  # a new tool_calls message: the batch results answer
                self._batch, self._batch_msg, self._answered = [], msg, set()
            ids = self._batch
        if attrs.get("legacy"):  # function_call: {"name", "arguments"}, no id
            w = msg.member("function_call", b"{")
            name = b'"name":' + self._name(block, attrs["name"]) + b"," if "name" in attrs else b""
            w.write(name + b'"arguments":"')

            def close_legacy(late: dict) -> None:
                self._foreign_call_attrs(block, late_only(attrs, late))
                w.write(b'"' + self._late_name(block, attrs, late) + _members({**attrs, **late}, EXTRA_ATTR))
            return w.write, close_legacy
        if msg is self._msg:
            self._msg_had_tool_calls = True
        w = msg.member("tool_calls", b"[")
        w._separate()
        head = b"{"
        if "id" in attrs:
            head += b'"id":' + dumps(self._call_id(attrs["id"])) + b","
        head += b'"type":"function","function":{'
        if "name" in attrs:
            head += b'"name":' + self._name(block, attrs["name"]) + b","
        w.write(head + b'"arguments":"')

        def close(late: dict) -> None:
            self._foreign_call_attrs(block, late_only(attrs, late))
            merged = {**attrs, **late}
            ids.append(merged.get("id"))
            tail = b'"' + self._late_name(block, attrs, late) + _members(merged, FUNCTION_EXTRA_ATTR) + b"}"
            if "id" in late:
                tail += b',"id":' + dumps(self._call_id(late["id"]))
            w.write(tail + self._call_index(merged) + _members(merged, EXTRA_ATTR) + b"}")
        return w.write, close

    def _call_index(self, attrs: dict) -> bytes:
        """``,"index":N`` for an openai call's index at its position, back to openai only
        (``losses.CALL_INDEX``: another dialect's says nothing openai keeps)."""
        return b',"index":' + dumps(attrs[CALL_INDEX]) if CALL_INDEX in attrs and not self.foreign else b""

    def _typed_call(self, block: Block, attrs: dict) -> bool:
        """An openai call of another type than function (a custom tool's ``{"id", "type":
        "custom", "custom": {"name", "input"}}``): it has no function, so it is written as it
        came, its members from ``openai_extra``."""
        return (not self.foreign and isinstance(attrs.get("type"), str) and block.fin and not block.payload
                and "name" not in attrs)

    def _write_typed_call(self, block: Block, attrs: dict):
        msg = self._message_for(block, "assistant")
        self._msg_had_tool_calls = True
        w = msg.member("tool_calls", b"[")
        w._separate()
        head = b"{" + (b'"id":' + dumps(attrs["id"]) + b"," if "id" in attrs else b"")
        w.write(head + b'"type":' + dumps(attrs["type"]) + self._call_index(attrs) + _members(attrs, EXTRA_ATTR) + b"}")
        return ignore, ignore

    def _name(self, block: Block, name) -> bytes:
        """A tool call's name as openai accepts it (``naming``: another dialect's may not fit)."""
        return dumps(self.session.tool_name_out(name, self._where(block)) if self.foreign else name)

    def _late_name(self, block: Block, attrs: dict, late: dict) -> bytes:
        """``,"name":...`` for a name that came late, or for none at all (openai requires one)."""
        if "name" in late:
            return b',"name":' + self._name(block, late["name"])
        if "name" not in attrs and self.foreign:
            return b',"name":' + self._name(block, None)
        return b""

    def _foreign_call_attrs(self, block: Block, attrs: dict) -> None:
        """A tool call's fields openai does not write (another dialect's: ollama ``index``,
        ``ollama_extra`` ...; a ``type`` other than function) are recorded losses -- the
        early attributes when the call opens, the late ones when it closes."""
        for key in attrs:
            if key not in _STRUCTURE_ATTRS and key not in (EXTRA_ATTR, FUNCTION_EXTRA_ATTR):
                self._lose_field(block, key, attrs)

    def _unknown(self, block: Block, attrs: dict):
        if attrs.get("empty"):  # a message of an unknown role with no content, null or []
            msg = self._message_for(block, attrs.get("role", "user"))
            if attrs.get("in_parts"):
                msg.member("content", b"[")
            return ignore, ignore
        if attrs.get("in_parts"):
            msg = self._message_for(block, attrs.get("role", "user"))
            w = msg.member("content", b"[")
            w._separate()
            return w.write, (lambda late: None)
        role = attrs.get("role", "user")
        msg = self._message_for(block, role)
        w = msg.member("content", b"")
        return w.write, (lambda late: None)

    def _tools_key(self, attrs: dict) -> str:
        return "functions" if attrs.get("legacy") else "tools"

    def _tool_json(self, attrs: dict, schema: bytes) -> bytes:
        return controls.tool_from_canonical(attrs, schema, self.session)

    def _tool_element(self, key: str, raw: bytes) -> None:
        self.body.element(key, raw)


def _members(attrs: dict, key: str) -> bytes:
    """``,<members>``: the openai members a tool call kept as JSON text (``add_extra``), if any."""
    members = attrs.get(key)
    return b"," + members.encode() if isinstance(members, str) and members else b""


def _in_string(text) -> bytes:
    """A decoded text spliced into a JSON string the encoder is writing (a data URL's media
    type): escaped as ``dumps`` writes it -- a ``"`` or ``\\`` in it would end the string or
    start an escape, a lone surrogate cannot be UTF-8. Not a string: the data URL has no type."""
    return dumps(text)[1:-1] if isinstance(text, str) else b""


#: attributes that shape the output rather than being output fields
_STRUCTURE_ATTRS = INTERNAL_ATTRS | {"source", "media_type", "tool_call_id", "id", "name", "is_error"}
