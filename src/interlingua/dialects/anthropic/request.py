"""Anthropic Messages requests: decoder (tokens -> canonical) and encoder (canonical -> bytes).

Decoder decisions (pinned by tests and rpt scenarios):

* The message index is the position in ``messages[]``. Top-level ``system``
  blocks use ``TOP_LEVEL_SYSTEM``; ``SystemEnd`` follows the ``system`` value
  (or comes at the end of the body when there is none). A ``role: "system"``
  message inside ``messages`` gives ``system-instruction`` blocks with attr
  ``in_messages``.
* ``content`` before ``role`` (sorted keys): blocks are held in the reorder
  buffer (``anthropic:content-before-role``) until the role is known.
* A content block's ``type`` may come after its payload (sorted keys). The
  payload keys ``text``, ``thinking`` and ``data`` name their type and stream
  at once; other members seen before ``type`` are read whole (bounded by
  ``max_value_bytes``) and replayed when ``type`` arrives, small attributes
  first.
* Block mapping: text -> user-/assistant-text (``citations``,
  ``cache_control`` attrs); image/document -> user-image/-document (source
  ``base64``/``url``/``file``/``text``/``content``; payload = ``data`` or
  ``url``; ``media_type``, ``file_id``, ``title``, ``context``, ``citations``
  attrs); thinking -> assistant-reasoning (``signature``), redacted_thinking
  -> assistant-reasoning (``redacted``, payload = the opaque ``data``, byte
  for byte); tool_use -> tool-call (payload = the ``input`` object's compact
  text, JSON-string-escaped, streamed); tool_result -> see ``ResultReader``;
  server_tool_use and ``*_tool_result`` -> server-tool-result, and every other
  type -> unknown: payload the block's raw JSON, attrs ``dialect``, ``role``.
* Keys without canonical meaning on a block go to ``anthropic_extra``; on a
  message, to a message-bound extension.
"""

from __future__ import annotations

from ..fields import REQUEST_FIELDS, REQUIRED, sets_nothing

import json
from typing import Any, Callable

from ... import json as tok
from ...canonical import (
    ASSISTANT_REASONING, ASSISTANT_REFUSAL, ASSISTANT_TEXT, REQUEST_LEVEL, SERVER_TOOL_RESULT, SYSTEM_INSTRUCTION,
    TOOL_CALL, TOOL_DEFINITION, TOOL_RESULT, TOP_LEVEL_SYSTEM, UNKNOWN, USER_DOCUMENT, USER_IMAGE, USER_TEXT,
    Block, Control, End, Event, Extension, MessagesEnd, Section, escape_raw_json,
    unescape_json_text,
)
from ...decoding import BOOLEAN, NULL, OBJECT, OPT_OBJECT, OPT_STRING, STRING  # (types of members)
from ...decoding import BlockBuilder, MessageReaderBase, RequestBodyDecoder, carries_nothing
from ...encoding import (
    BLANK_HELD, PARTS_CONTENT, STRING_CONTENT, Encoder, HeldArguments, MessageAssembler, blank_tail, held_blank,
    ignore, lose_unknown_members, message_member,
)
from ...errors import TranscodeError
from ...images import IMAGE_TYPES, keep_head, sniff_media_type  # (IMAGE_TYPES: the four anthropic takes)
from ...jsonwriter import JsonWriter, dumps, key_bytes
from ...naming import anthropic_id, canonical_id
from ...losses import (
    INTERNAL_ATTRS, MESSAGE_CACHE_CONTROL, PART_ATTRS, PART_PREFIX, RESULT_CACHE_CONTROL, article, block_path,
    block_subject, field_subject, lacks, path_subject,
)
from ...session import Session
from . import controls

#: the most cache breakpoints (``cache_control``) anthropic takes in one request
MAX_BREAKPOINTS = 4
BREAKPOINT_LACK = f"cache breakpoint beyond the {MAX_BREAKPOINTS}th"
BREAKPOINT_DONE = f"not sent (it takes at most {MAX_BREAKPOINTS})"

DIALECT = "anthropic"
EXTRA_ATTR = "anthropic_extra"

_ROLE_TEXT_SECTION = {
    "user": USER_TEXT,
    "assistant": ASSISTANT_TEXT,
    "system": SYSTEM_INSTRUCTION,
}
SERVER_RESULT_TYPES = {
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
}
#: block payload keys that tell the block type on their own
_TYPE_OF_PAYLOAD = {"text": "text", "thinking": "thinking", "data": "redacted_thinking"}
#: members replayed last when ``type`` comes late (the big ones)
_PAYLOAD_KEYS = {"text", "thinking", "data", "source", "input", "content"}
_BLOCK_ATTRS = {
    "text": {"cache_control", "citations"},
    "image": {"cache_control"},
    "document": {"cache_control", "citations", "title", "context"},
    "thinking": {"signature"},
    "redacted_thinking": set(),
    "tool_use": {"id", "name", "cache_control"},
    "tool_result": {"cache_control", "is_error"},
}


def _extra(builder: BlockBuilder, key: str, raw: bytes) -> None:
    members = builder.late.get(EXTRA_ATTR) or builder.attrs.get(EXTRA_ATTR)
    text = dumps(key).decode() + ":" + raw.decode()
    builder.set(EXTRA_ATTR, members + "," + text if members else text)



_FIELDS = REQUEST_FIELDS[DIALECT]

#: the types of block attributes (decoding.Expect); others (cache_control, citations ...) any
_ATTR_TYPES = {"name": STRING, "id": STRING, "media_type": STRING, "title": OPT_STRING, "context": OPT_STRING,
               "signature": STRING, "cache_control": OPT_OBJECT, "is_error": BOOLEAN | NULL}

#: a tool_use block of a request cannot go without these (the API answers 400): SchemaError
_TOOL_USE_REQUIRED = ("id", "name", "input")


class RequestDecoder(RequestBodyDecoder):
    dialect = DIALECT
    required = REQUIRED[DIALECT]
    system_in_list = False  # top-level ``system``: SystemEnd after it, or at the body's end

    def _top_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        self.expect(kind, value, offset, _FIELDS.get(key), key)
        if key == "messages":
            self.read_messages(kind, offset)
        elif key == "system":
            self._system(kind, value, offset)
        elif key == "tools":
            self.each_element(kind, offset, "tools",
                              lambda k, v, o: self.read_raw(k, v, o, lambda raw: self._tool(raw, o)))
        else:
            self.read_raw(kind, value, offset, lambda raw: self._top_field(key, raw, offset))

    def _top_field(self, key: str, raw: bytes, offset: int) -> None:
        if sets_nothing(DIALECT, key, raw):  # the same as absent ("thinking": null, "metadata": {})
            self.emit(Extension(DIALECT, "$." + key, raw, lossless=True))
            return
        found = controls.decode(key, raw)
        if found is None:
            self.emit(Extension(DIALECT, "$." + key, raw))
            return
        for control in [self.checked(control, raw, offset) for control in found]:
            self.emit(control)

    # -- system -------------------------------------------------------------

    def _system(self, kind: int, value: Any, offset: int) -> None:
        reader = MessageReader(self, TOP_LEVEL_SYSTEM, role="system")
        if kind == tok.ARRAY_START:
            reader.content_blocks(kind, offset, then=self.system_end)
        elif kind == tok.STRING and not value:  # (an empty string is never cut: one token)
            self.empty_system(b'""')
        else:
            reader.string_content(kind, value, offset, then=self.system_end)

    def empty_system(self, raw: bytes) -> None:
        """``"system": ""`` or ``[]`` says what no system says: no system block (another dialect
        writes no empty system message), a lossless extension anthropic writes back."""
        self.emit(Extension(DIALECT, "$.system", raw, lossless=True))
        self.system_end()


    # -- messages -------------------------------------------------------------

    def _message_reader(self, index: int) -> "MessageReader":
        return MessageReader(self, index)

    # -- tools --------------------------------------------------------------------

    def _tool(self, raw: bytes, offset: int) -> None:
        path = self.next_element_path("tools")
        tool = self.data(raw, offset)
        if not isinstance(tool, dict):
            raise self.error("expected an object for a tool", offset)
        canonical = controls.tool_to_canonical(tool)
        if canonical is None:  # a server tool: carried as it is
            self.emit(Block(UNKNOWN, REQUEST_LEVEL, raw, attrs={"dialect": DIALECT, "where": "tool"}))
            return
        self.refuse_overflow(tool, offset)
        attrs, schema = canonical
        self.check_tool_attrs(attrs, path, offset)
        attrs["path"] = path
        self.emit(Block(TOOL_DEFINITION, REQUEST_LEVEL, dumps(schema), attrs=attrs))

    def own_id(self, call_id: Any) -> Any:
        """A tool-call id for another dialect: what an id anthropic was given stands for
        (``naming.canonical_id``); anthropic -> anthropic keeps it as it is."""
        if isinstance(call_id, str) and self.session.target != DIALECT:
            return canonical_id(call_id)
        return call_id

    # -- replay --------------------------------------------------------------------

    def held_at(self, offset: int) -> tuple[int, str]:
        """Where a value about to be held starts in the body (for ``replay``'s errors)."""
        return offset, self.path()

    def replay(self, reader, raw: bytes, at: tuple[int, str]) -> None:
        """Feed a value read earlier (``raw``, held from ``at``) to ``reader(kind, value, offset)`` now."""
        depth = len(self._stack)
        outer_at = self.at  # the held copy's tokens set ``at`` to their offsets in it
        self.then(reader)
        inner = tok.Tokenizer(self.on_token, max_depth=self.session.options.max_depth, dialect=DIALECT)
        try:
            inner.feed(raw)
            inner.close()
        except TranscodeError as exc:
            # the held text is compact JSON, not the body's bytes: its offsets mean nothing to
            # the sender. The error is at the held value's first byte and path in the body, and
            # says where inside the value (an outer replay says it again, for its own value)
            exc.held_reason = getattr(exc, "held_reason", exc.reason)
            exc.reason = f"{exc.held_reason} (inside the value, at {inner.path()} of it)"
            exc.offset, exc.path = at
            exc.args = (exc._render(),)
            raise
        finally:
            # an error raised after the replay (a budget, at the chunk's end) is at the body's
            # token being read, not at an offset inside the held copy
            self.at = outer_at
        self.flush()
        assert len(self._stack) == depth, "replayed value left handlers behind"


class MessageReader(MessageReaderBase):
    """One message object (or the top-level ``system``, ``role="system"``).

    Blocks are held while the role is unknown; text is built as provisional
    ``user-text`` and gets its role's section when emitted."""

    known_roles = _ROLE_TEXT_SECTION

    def _resolve(self, block: Block) -> Block:
        if not block.init:
            if block.section is USER_TEXT:
                return Block(_ROLE_TEXT_SECTION[self.role], block.message, block.payload, False,
                             block.fin, block.attrs)
            return block
        attrs = block.attrs
        section = block.section
        if section is USER_TEXT:
            section = _ROLE_TEXT_SECTION[self.role]
            if section is SYSTEM_INSTRUCTION and self.index != TOP_LEVEL_SYSTEM:
                attrs = {**(attrs or {}), "in_messages": True}
        elif section in (UNKNOWN, SERVER_TOOL_RESULT) or (section in (USER_IMAGE, USER_DOCUMENT)
                                                          and self.role != "user"):
            # (media of an assistant message: a target without a place for it there records its move)
            attrs = {**(attrs or {}), "role": self.role}
        if section is block.section and attrs is block.attrs:
            return block
        return Block(section, block.message, block.payload, True, block.fin, attrs or None)

    def builder(self, section: Section, attrs: dict | None = None, done=None) -> BlockBuilder:
        return BlockBuilder(self.emit, section, self.index, attrs, done, self.waiting)

    # -- keys ----------------------------------------------------------------------

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            if self.role is None:
                raise d.error("message without role", offset)
            return
        if value == "role":
            d.then(self._role)
        elif value == "content":
            d.then(self._content)
        else:
            path = f"$.messages[{self.index}].{value}"
            d.then(lambda k, v, o: d.read_raw(
                k, v, o, lambda raw: d.extension(path, raw, message=self.index, lossless=carries_nothing(raw))))

    def _content(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.ARRAY_START:
            self.content_blocks(kind, offset)
        else:
            self.string_content(kind, value, offset)

    def string_content(self, kind: int, value: Any, offset: int,
                       then: Callable[[], None] | None = None) -> None:
        if then is None:  # a message's content: the block closes at its end (no closure per message)
            done = BlockBuilder.close
        else:
            def done(builder: BlockBuilder) -> None:
                builder.close()
                then()

        self.d.read_string(kind, value, offset, self.builder(USER_TEXT, None, done).fragment, "content")

    def content_blocks(self, kind: int, offset: int, then: Callable[[], None] | None = None) -> None:
        """A list of content blocks; ``then`` runs after it."""
        count = 0

        def block(offset: int):
            nonlocal count
            count += 1
            return BlockReader(self, MessageSlot(self)).on_key

        def end() -> None:
            if not count and self.index == TOP_LEVEL_SYSTEM:
                self.d.empty_system(b"[]")
                return
            if not count:  # ``[]``: an empty block keeps the message (and its form)
                self.emit(Block(USER_TEXT, self.index, b"", attrs={"in_parts": True, "empty": True}))
            if then is not None:
                then()

        self.d.each_object(kind, offset, "content", block, end)


class MessageSlot:
    """Where a top-level content block's canonical block goes: its own block, closed at its end."""

    in_result = False

    def __init__(self, message: MessageReader) -> None:
        self.m = message

    def make(self, section: Section, attrs: dict) -> BlockBuilder:
        return self.m.builder(section, attrs)

    def done(self, builder: BlockBuilder) -> None:
        builder.close()


class BlockReader:
    """One content block object; see the module docstring for the mapping."""

    def __init__(self, message: MessageReader, slot) -> None:
        self.m = message
        self.d = message.d
        self.slot = slot
        self.type: str | None = None
        self.block: BlockBuilder | None = None
        # members seen before the type (sorted keys), held until it comes
        self.deferred = self.d.session.reorder.hold("anthropic:members-before-type")
        self.raw_members: list[bytes] = []  # members of a block carried raw
        self.result: ResultReader | None = None

    # -- the block ---------------------------------------------------------------

    def _builder(self) -> BlockBuilder:
        if self.block is None:
            section, attrs = self._section()
            self.block = self.slot.make(section, attrs)
        return self.block

    def _section(self) -> tuple[Section, dict]:
        t = self.type
        attrs: dict = {"in_parts": True}
        if self.slot.in_result:
            attrs["in_result"] = True
        if t == "text":
            return (TOOL_RESULT if self.slot.in_result else USER_TEXT), attrs
        if t == "image":
            return USER_IMAGE, attrs
        if t == "document":
            return USER_DOCUMENT, attrs
        if t == "thinking":
            return ASSISTANT_REASONING, attrs
        if t == "redacted_thinking":
            return ASSISTANT_REASONING, {**attrs, "redacted": True}
        if t == "tool_use":
            return TOOL_CALL, attrs
        raise AssertionError(t)

    tool_keys: frozenset | set = frozenset()  # a tool_use's members so far (its own set once it has one)

    def is_raw(self) -> bool:
        t = self.type
        return t not in _BLOCK_ATTRS or (t == "tool_result" and self.slot.in_result)

    # -- keys ------------------------------------------------------------------------

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            self._end(offset)
            return
        key = value
        if key == "type":
            d.then(lambda k, v, o: d.read_value(k, v, o, lambda t: self._set_type(t, o), STRING, "a content block's type"))
            return
        if self.type is None and key in _TYPE_OF_PAYLOAD and not self.deferred:
            self.type = _TYPE_OF_PAYLOAD[key]
        if self.type is None:
            d.then(lambda k, v, o: d.read_raw(
                k, v, o, lambda raw, at=d.held_at(o): self.deferred.append((key, raw, at), len(raw))))
        elif self.result is not None and key == "content":
            if self.result.has_id:
                d.then(self.result.on_content)
            else:  # the id must be on the result's first block: content waits for it (bounded)
                d.then(lambda k, v, o: d.read_raw(k, v, o, self.result.defer(d.held_at(o))))
        else:
            d.then(self.member(key))

    def _set_type(self, block_type: Any, offset: int) -> None:
        if not isinstance(block_type, str):
            raise self.d.error("expected a string for a content block type", offset)
        if self.type is not None and self.type != block_type:
            raise self.d.error(f"content block of type {block_type!r} carries a {self.type!r} payload", offset)
        self.type = block_type
        if self.type == "tool_result" and not self.slot.in_result:
            self.result = ResultReader(self)
        if self.type == "tool_use":
            self.tool_keys = set()
        # small members first: attributes must ride on the first fragment where possible
        for key, raw, at in sorted(self.deferred.drain(), key=lambda item: item[0] in _PAYLOAD_KEYS):
            if key == "content" and self.result is not None:
                self.d.replay(self.result.on_content, raw, at)
            else:
                self.d.replay(self.member(key), raw, at)

    def member(self, key: str):
        """The reader of member ``key`` of a block whose type is known."""
        d = self.d
        t = self.type
        if t == "tool_use":
            if type(self.tool_keys) is frozenset:  # (the type came from its payload's key)
                self.tool_keys = set()
            self.tool_keys.add(key)
        if self.is_raw():
            return lambda k, v, o: d.read_raw(k, v, o, lambda raw: self.raw_members.append(
                dumps(key) + b":" + raw))
        if key in ("text", "thinking", "data") and t in ("text", "thinking", "redacted_thinking"):
            # an explicit null means the same as absent: the block has no payload (it ends empty)
            return lambda k, v, o: None if k == tok.NULL else d.read_string(k, v, o, self._builder().fragment, key)
        if key == "source" and t in ("image", "document"):
            return self._source
        if key == "input" and t == "tool_use":
            return self._input_start
        if t == "tool_result" and key == "tool_use_id":
            return lambda k, v, o: d.read_value(k, v, o, lambda x: self.result.set_id(self.d.own_id(x)), STRING, key)
        if t == "tool_use" and key == "id":
            return lambda k, v, o: d.read_value(k, v, o, lambda x: self._builder().set(key, self.d.own_id(x)),
                                                STRING, key)
        if t == "tool_result" and key in ("is_error", "cache_control"):
            return lambda k, v, o: d.read_value(k, v, o, lambda x: self.result.set(key, x), _ATTR_TYPES[key], key)
        if t == "tool_result":
            return lambda k, v, o: d.read_raw(k, v, o, lambda raw: self.result.extra(key, raw))
        if key in _BLOCK_ATTRS[t]:
            return lambda k, v, o: d.read_value(k, v, o, lambda x: self._set_attr(key, x), _ATTR_TYPES.get(key), key)
        return lambda k, v, o: d.read_raw(k, v, o, lambda raw: _extra(self._builder(), key, raw))

    def _set_attr(self, key: str, value: Any) -> None:
        builder = self._builder()
        if self.slot.in_result and builder is self.slot.head:
            key = PART_PREFIX + key  # the leading text of a tool_result: the result's own block
        builder.set(key, value)

    def _input_start(self, kind: int, value: Any, offset: int) -> None:
        """An object, as the client declares it (was: 5 became openai arguments "5")."""
        self.d.expect(kind, value, offset, OBJECT, "input")
        self.d.stream_raw(kind, value, offset, self._input)

    def _input(self, data: bytes, init: bool, fin: bool) -> None:
        self._builder().fragment(escape_raw_json(data), init, fin)

    def _source(self, kind: int, value: Any, offset: int) -> None:
        if kind != tok.OBJECT_START:
            raise self.d.wrong_type(kind, "an object for source", offset)
        self.d.push(SourceReader(self, self._builder()).on_key)

    def _end(self, offset: int) -> None:
        if self.type is None:
            raise self.d.error("content block without type", offset)
        if self.is_raw():
            raw = b"{" + b",".join([b'"type":' + dumps(self.type)] + self.raw_members) + b"}"
            section = SERVER_TOOL_RESULT if self.type in SERVER_RESULT_TYPES else UNKNOWN
            attrs = {"dialect": DIALECT}
            if self.slot.in_result:
                attrs["in_result"] = True
            builder = self.slot.make(section, attrs)
            builder.fragment(raw, True, True)
            self.slot.done(builder)
            return
        if self.result is not None:
            if not self.result.has_id:  # (a result that answers no call: required, as a tool_use's id)
                raise self.d.missing("tool_use_id", "a tool_result block", offset)
            if self.result.deferred is not None:
                self.d.replay(self.result.on_content, self.result.deferred.take_bytes(), self.result.deferred_at)
            self.result.end()
            return
        if self.type == "tool_use":
            for member in _TOOL_USE_REQUIRED:  # (no made-up id: results must answer it)
                if member not in self.tool_keys:
                    raise self.d.missing(member, "a tool_use block", offset)
        builder = self._builder()
        if not builder.started and builder.last is None:
            builder.fragment(b"", True, True)  # a block without payload (a file source)
        self.slot.done(builder)


class SourceReader:
    """An image/document ``source``: ``data``/``url`` is the payload; the rest are attrs.

    ``type`` -> attr ``source``; ``media_type``, ``file_id`` as they are;
    a ``content`` source's block list -> attr ``content`` (JSON data)."""

    def __init__(self, block: BlockReader, builder: BlockBuilder) -> None:
        self.b = block
        self.d = block.d
        self.builder = builder

    deferred = None  # Hold of ``data`` seen before the source's type / media type
    has_type = False  # the source's ``type`` member was read

    def _defer(self, at: tuple[int, str]):
        def hold(raw: bytes) -> None:
            self.deferred = self.d.session.reorder.hold("anthropic:data-before-media-type")
            self.deferred_at = at
            self.deferred.write(raw)
        return hold

    def _known(self) -> bool:
        attrs = self.builder.attrs
        return "source" in attrs and ("media_type" in attrs or attrs["source"] in ("url", "file"))

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            if not self.has_type:  # (required for every source kind: it says what the payload is)
                raise d.missing("type", "a source", offset)
            d.pop()
            if self.deferred is not None:
                # sorted keys put data before type and media_type; every target needs those
                # first (a data URL prefix), so the data waits (in the reorder buffer)
                d.replay(lambda k, v, o: d.read_string(k, v, o, self.builder.fragment, "data"),
                         self.deferred.take_bytes(), self.deferred_at)
            return
        key = value
        if key == "data" and not self._known():
            d.then(lambda k, v, o: d.read_raw(k, v, o, self._defer(d.held_at(o))))
        elif key in ("data", "url"):
            if key == "url" and "source" not in self.builder.attrs and "source" not in self.builder.late:
                self.builder.set("source", "url")  # tells the encoder the payload key early
            d.then(lambda k, v, o: d.read_string(k, v, o, self.builder.fragment, key))
        elif key == "type":
            self.has_type = True
            d.then_value(lambda x: self.builder.set("source", x), STRING, "a source's type")
        elif key in ("media_type", "file_id"):
            d.then_value(lambda x: self.builder.set(key, x), STRING, key)
        elif key == "content":
            d.then_value(lambda x: self.builder.set(key, x))
        else:
            d.then(lambda k, v, o: d.read_raw(k, v, o, lambda raw: self.builder.set(
                "source_extra", (self.builder.late.get("source_extra") or self.builder.attrs.get("source_extra")
                                 or "") + ("," if (self.builder.late.get("source_extra")
                                                   or self.builder.attrs.get("source_extra")) else "")
                + dumps(key).decode() + ":" + raw.decode())))


class ResultReader:
    """A ``tool_result``: always a leading ``tool-result`` block carrying
    ``tool_call_id``, ``is_error``, ``cache_control``:

    * ``content`` a string: its payload;
    * ``content`` an array: a leading text element is its payload (``in_parts``);
      otherwise it is empty (``in_parts``, ``empty``); every further element is
      its own block with attr ``in_result`` (text -> ``tool-result``, image,
      document, others unknown/raw);
    * no ``content``: empty (``empty``).

    Attributes that come after blocks started ride on the last block's last
    fragment (encoders gather them over the whole result)."""

    in_result = True
    has_id = False
    deferred = None  # Hold of the content read before tool_use_id

    def defer(self, at: tuple[int, str]):
        def hold(raw: bytes) -> None:
            self.deferred = self.d.session.reorder.hold("anthropic:content-before-tool-use-id")
            self.deferred_at = at
            self.deferred.write(raw)
        return hold

    def set_id(self, call_id: Any) -> None:
        self.has_id = True
        self.set("tool_call_id", call_id)

    def __init__(self, block: BlockReader) -> None:
        self.b = block
        self.d = block.d
        self.m = block.m
        self.head = self.m.builder(TOOL_RESULT, {})
        self.current = self.head  # the block late attributes go to

    def set(self, key: str, value: Any) -> None:
        if key == "cache_control" and self.current is not self.head:
            key = RESULT_CACHE_CONTROL  # (riding on a content block, apart from that block's own)
        self.current.set(key, value)

    def extra(self, key: str, raw: bytes) -> None:
        _extra(self.current, key, raw)

    def on_content(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.ARRAY_START:
            self.head.set("in_parts", True)
            self.d.each_object(kind, offset, "tool_result content", lambda o: BlockReader(self.m, self).on_key)
        else:
            self.d.read_string(kind, value, offset, self.head.fragment, "content")

    # -- slot protocol (for the content elements) --------------------------------------

    def make(self, section: Section, attrs: dict) -> BlockBuilder:
        head = self.head
        if section is TOOL_RESULT and not head.started and head.last is None:
            return head  # the leading text element is the head's payload
        self._close_head_if_empty()
        if self.current is not head or head.started or head.last is not None:
            self.current.close()
        self.current = self.m.builder(section, attrs)
        return self.current

    def _close_head_if_empty(self) -> None:
        head = self.head
        if not head.started and head.last is None:
            head.set("empty", True)
            head.fragment(b"", True, True)

    def done(self, builder: BlockBuilder) -> None:
        pass  # closed when the next one starts or the result ends

    def end(self) -> None:
        if self.current is self.head and not self.head.started and self.head.last is None:
            self.head.set("empty", True)
            self.head.fragment(b"", True, True)
        self.current.close()


# ---------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------

#: block attributes written as members of each anthropic block type
_OUT_ATTRS = {
    "text": {"cache_control", "citations"},
    "image": {"cache_control"},
    "document": {"cache_control", "citations", "title", "context"},
    "thinking": {"signature"},
    "redacted_thinking": set(),
    "tool_use": {"cache_control"},
    "tool_result": {"cache_control", "is_error"},
}
#: attributes that shape the output rather than being members

_STRUCTURE_ATTRS = INTERNAL_ATTRS | {"source", "media_type", "tool_call_id", "id", "name", "redacted", "file_id",
                                    "content", "is_error", "source_extra"}
_TEXT_HEAD = b'{"type":"text","text":"'
#: the sections whose empty text of another dialect is not written (``_place_block``)
_DROPPED_WHEN_EMPTY = frozenset({SYSTEM_INSTRUCTION, USER_TEXT, ASSISTANT_TEXT, ASSISTANT_REFUSAL})
#: the sections of an assistant message's blocks (``_note_turn``)
_ASSISTANT_SECTIONS = frozenset({ASSISTANT_TEXT, ASSISTANT_REASONING, ASSISTANT_REFUSAL, TOOL_CALL})
#: the attributes a ``tool_result`` writes as its members (the rest of its first part's are losses)
_RESULT_MEMBERS = frozenset({"is_error", "cache_control", EXTRA_ATTR})
#: the result's members a block of its content may carry (they came after it began)
_RIDING = frozenset({"is_error", "tool_call_id", RESULT_CACHE_CONTROL})
_EMPTY_TEXT = object()  # ``_place_block``: an empty text of another dialect, not written
_ROLE_OF_TEXT = {USER_TEXT: "user", ASSISTANT_TEXT: "assistant", ASSISTANT_REFUSAL: "assistant"}
_TEXT_TAIL = b'"}'
_USER_SECTIONS = {USER_TEXT, USER_IMAGE, USER_DOCUMENT, TOOL_RESULT}
_ASSISTANT_SECTIONS = {ASSISTANT_TEXT, ASSISTANT_REASONING, TOOL_CALL,
                       ASSISTANT_REFUSAL}


class _Result:
    """An open ``tool_result`` being written."""

    __slots__ = ("index", "id", "id_written", "attrs", "array", "writer", "parts", "opened")

    def __init__(self, index: int, attrs: dict, array: bool, writer: JsonWriter, opened: bool = True) -> None:
        self.index = index
        self.id = attrs.get("tool_call_id")
        self.id_written = self.id is not None
        self.attrs = dict(attrs)
        self.array = array
        self.writer = writer
        self.parts = 0 if attrs.get("empty") else 1  # elements in the content array so far
        # the content array is written (an ollama tool message's result opens it with its
        # first element: without one, it has no ``content``)
        self.opened = opened

    def separator(self) -> bytes:
        """``,`` when the content array has an element already (``,"content":[`` before the
        first one of a result that has none yet); counts the next one."""
        self.parts += 1
        if not self.opened:
            self.opened = True
            return b',"content":['
        return b"," if self.parts > 1 else b""


class _ResultText:
    """A text block in a ``tool_result``'s content, opened by its first byte -- an empty text
    of another dialect is not written (anthropic rejects it) -- or at once (``eager``: a copy
    from anthropic writes what came)."""

    __slots__ = ("result", "eager", "started")

    def __init__(self, result: _Result, eager: bool) -> None:
        self.result = result
        self.eager = eager
        self.started = False

    def write(self, data: bytes) -> None:
        if not self.started and (data or self.eager):
            self.started = True
            self.result.writer.write(self.result.separator() + _TEXT_HEAD)
        self.result.writer.write(data)


class RequestEncoder(Encoder):
    """Canonical events -> an Anthropic Messages request body.

    Decisions (documented, pinned by tests):
    * top-level ``system`` blocks (``TOP_LEVEL_SYSTEM``) are written in place
      (as a string if they came as one); ``in_messages`` system blocks become
      a ``role: "system"`` message in place; system blocks of other dialects
      (openai system/developer messages, anywhere) are gathered into the
      top-level ``system`` array: held (``anthropic:system-to-top-level``)
      until the message list ends. A single plain one is written as a string.
    * messages of other dialects: a new anthropic message per source message,
      except that tool results of consecutive source messages, and the user
      message that follows them, merge into one user message (anthropic wants
      every tool_result of a turn in the next user message). Other consecutive
      same-role messages are kept apart (the API merges them itself).
    * an empty or blank (whitespace only) text of another dialect (openai
      ``content: ""`` or ``"\\n\\n"`` next to tool_calls) is not written (anthropic
      rejects empty text blocks and blank ones; a blank one is recorded). A message
      of another dialect with nothing in it (ollama ``{"role": "assistant"}``,
      openai ``content: null`` without tool calls) is not written either, a
      recorded loss: anthropic rejects a message without content (``content: []``,
      ``""``), and filling it would put words in a turn that had none; the
      messages around it stay (the API joins consecutive same-role turns).
    * the final assistant content of another dialect does not end in whitespace:
      anthropic refuses it ("final assistant content cannot end with trailing
      whitespace": a prefill that came with a newline or a space). An assistant text's
      trailing blank run is held back (``_trailing_text``) until what follows it is
      known; at the end of the message list it is not sent, recorded. Earlier texts,
      and a final one whose run is over ``BLANK_HELD`` bytes, keep their whitespace.
    * an ollama tool message's images go inside its ``tool_result`` (content
      blocks), not in a user message between results (anthropic wants every
      tool_result of a user message first); its text streams before they are
      known, so its result is always a content list (``_tool_message``).
      User blocks of another dialect that come while its tool calls await
      results wait and follow the results (``_user_hold``).
    * reasoning of another dialect without a signature cannot be replayed:
      a recorded loss. A refusal becomes assistant text plus a recorded loss.
    * tool-call arguments of another dialect: see ``encoding.HeldArguments``. A call
      without id (openai legacy ``function_call``) gets a made-up id (a
      recorded loss); a result without id answers the oldest such call.
    * controls of other dialects are gathered (held) and mapped at the end:
      see ``controls.encode``.
    * calls moved out of a tool message (ollama ``tool_calls`` on a tool message) while the
      batch of the calls before it is not all answered wait in a hold
      (``anthropic:calls-after-run``), every such call of the run in ONE assistant message,
      written when the run of results answering the batch ends (as the openai encoder does:
      before a result that comes once the batch is answered, before a block of another
      message that is not a result, at the end of the messages). The field of its writer is
      ``_calls_writer`` (``_held_writer`` is the user hold's).
    * both holds at once (an ollama assistant image after its tool_calls, or a user message
      between tool messages, in a run whose tool message carries calls): the user hold
      (``anthropic:user-before-tool-result``) goes first, into the user message of the batch's
      results, then the held calls' assistant message. The other order would put the user
      blocks after the new calls, before their results (a ``tool_use`` not answered in the next
      message, or a ``tool_result`` after a text: both rejected). A moved call that is held
      keeps the user hold waiting (``_keeps_held``); calls held in calls-after-run do not count
      in ``_awaiting`` until they are written, and then they do (user blocks that come after
      them wait for their results). A user or system message between the run's tool messages
      while the batch is open does not end the run (``_waits_with_results``; the ollama
      decoder's rule too): it waits in the user hold, after the batch's results.
    """

    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self.out = JsonWriter(self._emit)
        self.foreign = session.source != DIALECT
        self._top: str | None = None
        self._msg: MessageAssembler | None = None
        self._msg_index: int | None = None
        self._msg_role: str | None = None
        self._msg_string = False
        self._msg_has_result = False
        self._content: JsonWriter | None = None
        self._result: _Result | None = None
        self._system_string = False
        self._system_hold = None
        self._system_writer: JsonWriter | None = None
        self._system_count = 0
        self._system_plain = True
        self._controls = session.reorder.hold("anthropic:foreign-controls")
        self._breakpoints = 0  # the cache breakpoints of another dialect written (``_breakpoint``)
        # the last assistant message written: its source index, whether it began with thinking,
        # whether it calls tools (``controls.encode``: thinking in a tool loop)
        self._turn: int | None = None
        self._turn_thinks_first = False
        self._turn_calls = False
        self._pending_ext: list[Extension] = []
        self._unanswered: list[str] = []  # ids made up for calls without one, not yet answered
        self._late_system: set[int] = set()  # source messages of late system texts (recorded once)
        # another dialect's tool calls of the last assistant message that no tool_result
        # answered yet: user blocks meanwhile wait in the user hold (``_message_for``)
        self._awaiting = 0
        self._held = None  # Hold of user blocks that wait for the tool_results
        self._held_writer: JsonWriter | None = None
        self._held_block: Block | None = None  # the first of them (the message it opens)
        #: the ids of the calls of the last assistant message with calls, and those answered
        self._batch: list = []
        self._batch_msg: MessageAssembler | None = None
        self._answered: set = set()
        #: the held assistant message of calls moved out of a run's tool messages, and their ids
        self._held_calls: MessageAssembler | None = None
        self._held_calls_hold = None
        self._calls_writer: JsonWriter | None = None  # (not ``_held_writer``: the user hold's)
        self._held_ids: list = []
        self._ended = False
        # the end of the last assistant text written (``_trailing_text``): its trailing blank
        # run, and once it ended, the bytes that close it and the block, held back from the output
        self._run = b""
        self._run_close: bytes | None = None
        self._run_block: Block | None = None
        self._run_long = False  # the text's run so far is over BLANK_HELD: written as it comes
        self.out.begin_object()

    def _emit(self, data: bytes) -> None:
        """Every write to the output: what was held back at the last assistant text's end goes
        first (something follows the text: it is not the final content). An empty write is
        nothing that follows."""
        if not data:
            return
        if self._run or self._run_close is not None:
            held = self._run + (self._run_close or b"")
            self._run, self._run_close, self._run_block = b"", None, None
            self.write(held)
        self.write(data)

    # -- top level ---------------------------------------------------------------

    def _open_top(self, name: str) -> None:
        if self._top == name:
            return
        self._close_top()
        self.out.open_member(name, b"[")
        self._top = name
        if name == "messages":
            self._messages_written = True

    _messages_written = False  # "messages" is required: an empty list is written when none came

    def _close_top(self) -> None:
        if self._top is not None:
            if self._top == "messages":
                self._flush_held()
                if self._held_calls is None:  # the last thing written is the last message's
                    self._drop_trailing_run()
                self._close_message()
                if self._held_calls is not None:  # calls pending at the end: after the last message
                    self._flush_held_calls()
            if self._top == "system" and self._system_string:
                self.out.write(b'"')
                self.out._first.pop()
            else:
                self.out.end_array()
            self._top = None

    def _top_member(self, key: str, raw: bytes) -> None:
        self._close_top()
        self.out.raw_member(key, raw)

    def on_event(self, event: Event) -> None:
        kind = type(event)
        if kind is Block:
            self._on_block(event)
        elif kind is Control:
            self._on_control(event)
        elif kind is Extension:
            self._on_extension(event)
        elif kind is MessagesEnd:
            self._end_source_message()
            if self._top == "messages":
                self._close_top()
            else:
                self._close_message()
                if not self._messages_written:  # an empty list stays a list (the field is required)
                    self._open_top("messages")
                    self._close_top()
            self._flush_system()
        elif kind is End:
            self.require_a_message(self._carried)
            self._close_top()
            self._flush_system()
            self._write_controls()
            self.out.end_object()
            self._ended = True

    def _on_control(self, control: Control) -> None:
        if control.dialect == DIALECT:
            if control.raw is not None and control.key is not None:
                self._top_member(control.key, control.raw)
            return  # a derived control: its field is written with the first one
        lose_unknown_members(control, DIALECT, self.session)
        self._controls.append(control, len(dumps(control.value)) + len(control.name))

    def _write_controls(self) -> None:
        gathered: dict[str, list[Control]] = {}
        for control in (self._controls.drain() if self._controls else ()):
            gathered.setdefault(control.name, []).append(control)
        if not self.foreign and not gathered:
            return
        unthought = self._turn_calls and not self._turn_thinks_first
        for key, raw in controls.encode(gathered, self.session, unthought_tool_turn=unthought,
                                        tools_sent=self.tools_sent):
            self.out.raw_member(key, raw)

    def _on_extension(self, ext: Extension) -> None:
        self._note_message(ext.message)
        if ext.dialect != DIALECT:
            self.foreign_extension(ext)
        elif ext.message is None:
            self._top_member(ext.path[2:], ext.raw)
        elif self._msg is not None and ext.message == self._msg_index:
            self._msg.trailing(message_member(ext), ext.raw)  # chunking-invariant place
        else:
            self._pending_ext.append(ext)

    # -- system -------------------------------------------------------------------

    def _system_target(self, block: Block, attrs: dict):
        """The writer a system block's text object goes to (None: written as the string)."""
        if block.message == TOP_LEVEL_SYSTEM:
            if self._top != "system" and not attrs.get("in_parts"):
                self._close_top()
                self.out.string_member_open("system")
                self.out._first.append(True)  # so _close_top pops symmetrically
                self._top = "system"
                self._system_string = True
                return None
            self._open_top("system")
            return self.out
        if self._msg_index is not None and block.message > self._msg_index \
                and block.message not in self._late_system:
            # anthropic has one system prompt, before the conversation (no system role in
            # messages): a system message that came after a conversation message moves there
            self._late_system.add(block.message)
            self._lose_block(block, "system message after the conversation began",
                             "moved into the top-level system (its place is lost)")
        if self._system_hold is None:
            self._system_hold = self.session.reorder.hold("anthropic:system-to-top-level")
            self._system_writer = JsonWriter(self._system_hold.write)
            self._system_writer._first.append(True)
        self._system_count += 1
        if attrs.get("in_parts") or set(attrs) - {"role"}:
            self._system_plain = False
        return self._system_writer

    def _flush_system(self) -> None:
        if self._system_hold is None:
            return
        held = self._system_hold.take_bytes()
        self._system_hold = None
        if self._system_count == 1 and self._system_plain and held.startswith(_TEXT_HEAD) \
                and held.endswith(_TEXT_TAIL):
            self._top_member("system", b'"' + held[len(_TEXT_HEAD):-len(_TEXT_TAIL)] + b'"')
        else:
            self._top_member("system", b"[" + held + b"]")

    # -- messages ---------------------------------------------------------------------

    _carried = False  # a message was opened in the output (``require_a_message``)

    def _open_message(self, block: Block, role: str, string: bool) -> None:
        self._close_message()
        self._open_top("messages")
        self._carried = True
        head = b'"role":' + key_bytes(role)
        if self._pending_ext:  # fields of this message that came before its first block
            for ext in [e for e in self._pending_ext if e.message == block.message]:
                head += b"," + key_bytes(message_member(ext)) + b":" + ext.raw
            self._pending_ext = [e for e in self._pending_ext if e.message != block.message]
        self._msg = MessageAssembler(self.out, self.session, "anthropic:member-order", head,
                                     first=STRING_CONTENT if string else PARTS_CONTENT)
        self._msg_index = block.message
        self._msg_role = role
        self._msg_string = string
        self._msg_has_result = False
        self._content = self.out  # the first member streams straight to the output
        if role == "assistant":
            self._awaiting = 0  # (calls of an earlier message left unanswered: not these)

    def _close_message(self) -> None:
        self._close_result()
        if self._msg is not None:
            self._msg.close()
            self._msg = None
            self._content = None

    def _message_for(self, block: Block, role: str, attrs: dict, text: bool, result: bool = False) -> JsonWriter:
        """The content writer for a block of ``role``; opens a message when needed. A user
        block (not a ``result``) while tool calls await their results goes into the user hold."""
        if role == "user" and not result and self.foreign and self._awaiting:
            return self._user_hold(block)
        if self._msg is not None and self._msg_role == role and not self._msg_string:
            if block.message == self._msg_index:
                return self._content
            if role == "user" and self.foreign and self._msg_has_result:
                self._msg_index = block.message  # tool results and what follows merge
                return self._content
        string = text and not attrs.get("in_parts") and (not self.foreign or role != "assistant")
        self._open_message(block, role, string)
        return self._content

    # -- user blocks before tool results -----------------------------------------------
    #
    # anthropic wants every tool_result of a turn first in the user message after the
    # calls. Another dialect's user blocks that come while calls await their results --
    # an ollama assistant image after its tool_calls (sent in a user message), a user or
    # system message between tool messages (ollama takes them) -- wait in a hold
    # (``anthropic:user-before-tool-result``) and go after the results, in their user
    # message, when the run of results ends: at the first block that is not a result nor
    # such a user block, or when no call awaits one. Nothing is lost: their place among
    # the results is one anthropic has not.

    def _user_hold(self, block: Block) -> JsonWriter:
        if self._held is None:
            self._held = self.session.reorder.hold("anthropic:user-before-tool-result")
            self._held_writer = JsonWriter(self._held.write)
            self._held_writer._first.append(True)
            self._held_block = block
        return self._held_writer

    def _keeps_held(self, block: Block, attrs: dict, tool_image: bool) -> bool:
        """Whether the held user blocks go on waiting at ``block``: a block of the open assistant
        message, a result (or part of one), a system text (it goes to the top-level system), or a
        user block while calls await."""
        s = block.section
        if self._msg is not None and self._msg_role == "assistant" and block.message == self._msg_index:
            return True  # the rest of the message whose calls await (ollama: its image, then its text)
        return (s is TOOL_RESULT or tool_image or bool(attrs.get("in_result"))
                or (s is SYSTEM_INSTRUCTION and not attrs.get("in_messages"))
                or (s in (USER_TEXT, USER_IMAGE, USER_DOCUMENT) and self._awaiting > 0)
                or self._holds_call(block, attrs))  # a moved call held in calls-after-run

    def _flush_held(self) -> None:
        """The held user blocks, after the results: in their user message, or one of their own."""
        hold, block = self._held, self._held_block
        if hold is None:
            return
        self._held = self._held_writer = self._held_block = None
        data = hold.take_bytes()
        if not data:
            return
        self._close_result()
        if not (self._msg is not None and self._msg_role == "user" and not self._msg_string):
            self._open_message(block, "user", False)
        w = self._content
        w._separate()
        w.write(data)

    # -- blocks -------------------------------------------------------------------------


    def _members(self, block: Block, kind: str, attrs: dict) -> bytes:
        """``,"k":v`` for the attributes the anthropic block ``kind`` has; others are losses."""
        allowed = _OUT_ATTRS.get(kind, set())
        out = b""
        for key, value in attrs.items():
            if key == MESSAGE_CACHE_CONTROL and "cache_control" in allowed:
                # an openai message's breakpoint, on its last block: the block's own wins (the
                # same one adds nothing; another is a recorded loss)
                own = attrs.get("cache_control")
                if own is None:
                    if self._breakpoint(value):
                        out += b',"cache_control":' + dumps(value)
                    else:
                        self._lose_field(block, key, attrs, BREAKPOINT_DONE, BREAKPOINT_LACK)
                elif own != value:
                    self._lose_field(block, key, attrs, "the block's own cache_control is kept")
            elif key == "cache_control" and key in allowed and not self._breakpoint(value):
                self._lose_field(block, key, attrs, BREAKPOINT_DONE, BREAKPOINT_LACK)
            elif key in allowed:
                out += b"," + dumps(key) + b":" + dumps(value)
            elif key == EXTRA_ATTR:
                out += b"," + value.encode()
            elif key not in _STRUCTURE_ATTRS:
                self._lose_field(block, key, attrs)
        return out

    # -- a message of another dialect with nothing in it ----------------------------
    #
    # Its empty texts are not written (anthropic rejects them), so a message whose every
    # block is one is not sent: one loss, recorded when the message is known to have
    # nothing else -- at the next message's first event or the list's end, which come
    # at the same place however the body is cut.

    _src_index: int | None = None  # the source message the last block or member came from
    _src_empty_role: str | None = None  # the role of its empty texts, while it has nothing else
    _src_has_more = False  # a block of it that is not an empty text came

    def _note_message(self, index: int | None) -> None:
        if index is not None and index != self._src_index:
            self._end_source_message()
            self._src_index = index

    def _end_source_message(self) -> None:
        if self._src_empty_role is not None and not self._src_has_more:
            self.session.lose(block_path(self.session.source, self.session.kind, self._src_index),
                              lacks(f"empty {self._src_empty_role} message", DIALECT, "message without content",
                                    "the message is not sent"))
        self._src_empty_role = None
        self._src_has_more = False

    def _place(self, block: Block):
        self._note_message(block.message)
        if self._held_calls is not None and self._ends_run(block, block.attrs or {}):
            self._flush_held_calls()
        had_more, self._src_has_more = self._src_has_more, True
        placed = self._place_block(block)
        if placed is _EMPTY_TEXT:
            self._src_has_more = had_more
            self._src_empty_role = self._src_empty_role or _ROLE_OF_TEXT[block.section]
            return None
        if placed is not None and block.section in _ASSISTANT_SECTIONS:
            self._note_turn(block)
        return placed

    def _note_turn(self, block: Block) -> None:
        if block.message != self._turn:
            self._turn, self._turn_thinks_first, self._turn_calls = (
                block.message, block.section is ASSISTANT_REASONING, False)
        if block.section is TOOL_CALL:
            self._turn_calls = True

    def _defers(self, block: Block) -> bool:
        """A blank first fragment of another dialect's text waits: it may stay empty (its
        member after the text came on a last fragment of its own) or blank, and such a text
        is not written (``_drops_blank``). Was placed at once: anthropic got an empty text
        block, which it rejects."""
        return self.foreign and block.section in _DROPPED_WHEN_EMPTY

    def _lose_attrs(self, block: Block, attrs: dict, written: frozenset = frozenset()) -> None:
        """A loss for each attribute that is neither structure nor ``written`` as a member: an
        empty text not written (all of them; were not recorded), the first part of a tool
        result (``_RESULT_MEMBERS`` go on the ``tool_result``; were dropped unrecorded)."""
        for key in attrs:
            if key not in written and key not in _STRUCTURE_ATTRS:
                self._lose_field(block, key, attrs)

    def _place_block(self, block: Block):
        s = block.section
        attrs = block.attrs or {}
        tool_image = self._in_tool_message(block, attrs)
        if self._held is not None and not self._keeps_held(block, attrs, tool_image):
            self._flush_held()
        if s is not TOOL_RESULT and not attrs.get("in_result") and not tool_image:
            self._close_result()
        if self._drops_typed_call(block, attrs):
            return None
        if s is SYSTEM_INSTRUCTION:
            if self._drops_blank(block, attrs):
                return None
            if attrs.get("in_messages"):
                return self._text(block, attrs, self._message_for(block, "system", attrs, True))
            target = self._system_target(block, attrs)
            if target is None:
                return self.out.write, (lambda late: None)
            return self._text(block, attrs, target)
        if tool_image:  # in its message's result; before its text, it opens the result
            if self._result is not None and self._result.index == block.message:
                return self._in_result(block, attrs)
            return self._media(block, attrs, None, result_of=True)
        if attrs.get("in_result") and self._result is not None and s is not TOOL_RESULT:
            return self._in_result(block, attrs)
        if s is TOOL_RESULT:
            return self._tool_result(block, attrs)
        if s is USER_TEXT or s is ASSISTANT_TEXT or s is ASSISTANT_REFUSAL:
            role = "user" if s is USER_TEXT else "assistant"
            if s is ASSISTANT_REFUSAL:
                self._lose_block(block, "refusal block", "written as assistant text")
            if self._drops_blank(block, attrs):
                return _EMPTY_TEXT
            return self._text(block, attrs, self._message_for(block, role, attrs, True))
        if s is USER_IMAGE or s is USER_DOCUMENT:
            return self._media(block, attrs, None)
        if s is ASSISTANT_REASONING:
            return self._reasoning(block, attrs)
        if s is TOOL_CALL:
            return self._tool_call(block, attrs)
        if s in (UNKNOWN, SERVER_TOOL_RESULT) and attrs.get("dialect") == DIALECT:
            if block.message == TOP_LEVEL_SYSTEM:  # an unknown block of the top-level system stays there
                w = self._system_target(block, {**attrs, "in_parts": True})
            else:
                w = self._message_for(block, attrs.get("role", "user"), attrs, False)
            w._separate()
            return w.write, (lambda late: None)
        self._lose_unplaced(block)
        return None

    def _drops_blank(self, block: Block, attrs: dict) -> bool:
        """Another dialect's text that is empty or whitespace only (``encoding.held_blank``), whole
        (its fragments joined: ``Encoder._on_block``), is not written: anthropic refuses an
        empty text block ("text content blocks must be non-empty") and one of whitespace only
        ("text content blocks must contain non-whitespace text"; it takes one beside other
        text, but whether other text follows is not known when the block is placed). An
        empty one means what absent means; a blank one is recorded. Its attributes are lost."""
        if not (self.foreign and block.fin and held_blank(block.payload)):
            return False
        if block.payload:
            self._lose_block(block, "text of whitespace only (it refuses a text block without other characters)",
                             "not sent", attrs=attrs)
        self._lose_attrs(block, attrs)
        return True

    def _text(self, block: Block, attrs: dict, w: JsonWriter | None):
        if w is self._content and self._msg_string:
            return w.write, (lambda late: self._lose_string_cache(block, late))
        if attrs.get("empty"):
            return (lambda data: None), (lambda late: None)
        w.write(w._sep() + _TEXT_HEAD)

        def closing(late: dict) -> bytes:
            return b'"' + self._members(block, "text", {**attrs, **late}) + b"}"
        if self.foreign and w is self.out and self._msg_role == "assistant":
            return self._trailing_text(block, closing)
        return w.write, lambda late: w.write(closing(late))

    # -- the final assistant content ---------------------------------------------------
    #
    # Whether an assistant text is the request's final content is known only when the message
    # list ends after it. So another dialect's assistant text holds its trailing blank run
    # (``blank_tail``: spaces, newlines, tabs; at most ``BLANK_HELD`` bytes, the same at every
    # cut) back from the output, and at its end the bytes that close it too: the next write to
    # the output (``_emit``) puts them first; the list's end (``_close_top``) drops the run.

    def _trailing_text(self, block: Block, closing: Callable[[dict], bytes]):
        self._run_long = False

        def write(data: bytes) -> None:
            cut = blank_tail(data)
            if cut is None:  # a run too long to hold: the text keeps it
                self.out.write(data)
                self._run_long = True
            elif cut == 0:  # blank: the run goes on
                if self._run_long or len(self._run) + len(data) > BLANK_HELD:
                    self.out.write(data)  # (after what was held: ``_emit``)
                    self._run_long = True
                else:
                    self._run += data
            else:
                self.out.write(data[:cut])
                self._run, self._run_long = data[cut:], False

        def close(late: dict) -> None:
            if self._run:
                self._run_close, self._run_block = closing(late), block
            else:
                self.out.write(closing(late))
        return write, close

    def _drop_trailing_run(self) -> None:
        """The message list ends: an assistant text whose end was held back is the final content,
        and its trailing whitespace is not sent (recorded)."""
        if self._run_close is None:
            return
        closing, block = self._run_close, self._run_block
        self._run, self._run_close, self._run_block = b"", None, None
        self._lose_block(block, "final assistant text that ends in whitespace (it refuses one)",
                         "its trailing whitespace is not sent")
        self.write(closing)

    def _lose_string_cache(self, block: Block, late: dict) -> None:
        """An openai message's breakpoint that came after its string content (written as
        anthropic's string content as it streamed, before the breakpoint was known): a string
        content has no cache_control; recorded."""
        if late.get(MESSAGE_CACHE_CONTROL) is not None:
            self._lose(block, field_subject(self.session.source, MESSAGE_CACHE_CONTROL, block.section, late),
                       "cache_control on a string content", "the text was sent as one before it came")

    def _reasoning(self, block: Block, attrs: dict):
        if attrs.get("redacted"):
            w = self._message_for(block, "assistant", attrs, False)
            w._separate()
            w.write(b'{"type":"redacted_thinking","data":"')
            return w.write, (lambda late: w.write(b'"' + self._members(block, "redacted_thinking",
                                                                        {**attrs, **late}) + b"}"))
        if self.foreign and "signature" not in attrs:
            self._lose_block(block, "thinking without a signature", "it cannot be replayed, so it is not sent")
            return None
        w = self._message_for(block, "assistant", attrs, False)
        w._separate()
        w.write(b'{"type":"thinking","thinking":"')
        return w.write, (lambda late: w.write(b'"' + self._members(block, "thinking", {**attrs, **late}) + b"}"))

    def _batch_open(self) -> bool:
        """A call of the last assistant message with calls is not answered yet."""
        return any(call_id not in self._answered for call_id in self._batch)

    def _moved_call(self, block: Block, attrs: dict) -> bool:
        return block.section is TOOL_CALL and attrs.get("role") == "tool"

    def _ends_run(self, block: Block, attrs: dict) -> bool:
        """Whether the held calls go before ``block`` (``RequestEncoder``'s docstring)."""
        if self._moved_call(block, attrs) or (self._msg is not None and block.message == self._msg_index
                                              and self._msg_has_result):
            return False
        if self._batch_open() and self._waits_with_results(block, attrs):
            return False  # a user or system message between the run's tool messages
        return not (block.section is TOOL_RESULT and self._batch_open())

    def _waits_with_results(self, block: Block, attrs: dict) -> bool:
        """A block of a user or system message (not one moved out of an assistant or tool
        message) between tool messages while calls await their results: it goes to the user
        hold (or the top-level system), and the run goes on (the ollama decoder's rule)."""
        s = block.section
        return self.foreign and attrs.get("role") not in ("assistant", "tool") and (
            (s is SYSTEM_INSTRUCTION and not attrs.get("in_messages"))
            or (s in (USER_TEXT, USER_IMAGE, USER_DOCUMENT) and self._awaiting > 0))

    def _holds_call(self, block: Block, attrs: dict) -> bool:
        """Whether ``block`` is a moved call that waits in ``anthropic:calls-after-run``."""
        return self._moved_call(block, attrs) and (self._held_calls is not None or self._batch_open())

    def _flush_held_calls(self) -> None:
        """The run answering the batch ended: first the held user blocks (``_flush_held``: they
        go after the batch's results, in their user message), then the held calls' assistant
        message, whose calls are the batch (and the calls awaiting results) from now on."""
        self._flush_held()
        self._close_message()
        self._held_calls.close()
        self._open_top("messages")
        self._carried = True
        self.out.raw_element(self._held_calls_hold.take_bytes())
        self._held_calls = self._held_calls_hold = self._calls_writer = None
        self._batch, self._batch_msg, self._answered, self._held_ids = self._held_ids, None, set(), []
        self._awaiting = len(self._batch)  # user blocks that come now wait for these calls' results

    def _tool_call(self, block: Block, attrs: dict):
        self._lose_moved(block, attrs, "assistant")
        held = self._holds_call(block, attrs)
        if held:  # sent when the run answering the batch ends
            if self._held_calls is None:
                self._close_result()
                self._held_calls_hold = self.session.reorder.hold("anthropic:calls-after-run")
                self._calls_writer = JsonWriter(self._held_calls_hold.write)
                self._calls_writer._first.append(True)
                self._held_calls = MessageAssembler(self._calls_writer, self.session, "anthropic:member-order",
                                                    b'"role":"assistant"', first=PARTS_CONTENT)
            w = self._calls_writer
            ids = self._held_ids
        else:
            w = self._message_for(block, "assistant", attrs, False)
            if self.foreign:
                self._awaiting += 1
            if self._batch_msg is not self._msg:  # a new message of calls: the batch results answer
                self._batch, self._batch_msg, self._answered = [], self._msg, set()
            ids = self._batch
        w._separate()
        w.write(b'{"type":"tool_use","input":')
        if not self.foreign:
            write = lambda data: w.write(unescape_json_text(data)) if data else None  # noqa: E731
            args = None
        else:
            args = HeldArguments(self.session, "anthropic:tool-arguments")
            write = args.feed

        def close(late: dict) -> None:
            every = {**attrs, **late}
            if args is not None:
                w.write(self._arguments_object(args, block))
            tail = b""
            if "id" in every:
                tail += b',"id":' + dumps(self._id(every["id"]))
            else:
                self._lose(block, f"{self._subject(block)} without an id", "tool_use without an id", "an id is made up")
                made_up = f"toolu_missing_{block.message}"
                self._unanswered.append(made_up)
                tail += b',"id":' + dumps(made_up)
            ids.append(every.get("id"))
            name = every.get("name")
            tail += b',"name":' + dumps(self.session.tool_name_out(name, self._where(block)) if self.foreign
                                        else name or "")
            w.write(tail + self._members(block, "tool_use", every) + b"}")
        return write, close

    def _id(self, call_id):
        """Another dialect's tool-call id as anthropic accepts it (``naming.anthropic_id``)."""
        return anthropic_id(call_id) if self.foreign and isinstance(call_id, str) else call_id

    # -- tool results ---------------------------------------------------------------------

    def _close_result(self) -> None:
        result = self._result
        if result is None:
            return
        self._result = None
        w = result.writer
        tail = b"]" if result.array and result.opened else b""
        attrs = result.attrs
        if result.id is None and self._unanswered:
            # a result without id (openai legacy function message) answers the
            # oldest call without id (legacy function_call): anthropic links by id
            result.id = self._unanswered.pop(0)
        elif result.id is None:
            # anthropic requires tool_use_id: write a placeholder, and say so
            result.id = f"toolu_unlinked_{result.index}"
            self.session.lose(f"$.messages[{result.index}]", lacks(
                f"{block_subject(self.session.source, TOOL_RESULT)} linked to no call", DIALECT,
                "tool_result without a tool_use_id", "a placeholder id is written"))
        if not result.id_written:
            tail += b',"tool_use_id":' + dumps(self._id(result.id))
        w.write(tail + self._members_result(attrs, result.index) + b"}")

    def _members_result(self, attrs: dict, index: int) -> bytes:
        out = b""
        for key in ("is_error", "cache_control"):
            if key == "cache_control" and key in attrs and not self._breakpoint(attrs[key]):
                where = f"$.messages[{index}].cache_control"
                self.session.lose(where, lacks(path_subject(where), DIALECT, BREAKPOINT_LACK, BREAKPOINT_DONE))
            elif key in attrs:
                out += b"," + dumps(key) + b":" + dumps(attrs[key])
        if EXTRA_ATTR in attrs:
            out += b"," + attrs[EXTRA_ATTR].encode()
        return out

    def _tool_message(self, block: Block) -> bool:
        """Whether ``block`` is the text of an ollama tool message: its ``images`` come after
        it (the text streams before they are known), and anthropic takes them inside the
        ``tool_result`` (content blocks), so its result is always a list of content blocks."""
        return self.foreign and self.session.source == "ollama" and block.section is TOOL_RESULT

    def _in_tool_message(self, block: Block, attrs: dict) -> bool:
        """Whether ``block`` is an image of an ollama tool message (attr ``role``: ``tool``):
        it goes inside that message's ``tool_result``, as an anthropic ``[text, image]``
        result's image does (``_in_result``), not in a user message of its own."""
        return (self.foreign and block.section is USER_IMAGE and attrs.get("role") == "tool"
                and self.session.source == "ollama")

    def _open_result(self, block: Block, attrs: dict, call_id, array: bool, lazy: bool) -> tuple[_Result, bytes]:
        """A new ``tool_result`` in the user message (merged after results): its head."""
        self._close_result()
        w = self._message_for(block, "user", {"in_parts": True}, False, result=True)
        self._msg_has_result = True
        self._awaiting = max(0, self._awaiting - 1)
        w._separate()
        head = b'{"type":"tool_result"'
        if call_id is not None:
            self._answered.add(call_id)
            head += b',"tool_use_id":' + dumps(self._id(call_id))
        if array and not lazy:
            head += b',"content":['
        self._result = _Result(block.message, attrs, array, w, not lazy)
        return self._result, head

    def _tool_result(self, block: Block, attrs: dict):
        result = self._result
        call_id = attrs.get("tool_call_id")
        if result is not None and result.index == block.message and (call_id is None or call_id == result.id):
            return self._in_result(block, attrs)  # another part of the same result
        self._lose_attrs(block, attrs, _RESULT_MEMBERS | PART_ATTRS)
        if self._tool_message(block) or (self.foreign and attrs.get("in_parts") and not attrs.get("empty")):
            # its content array opens with its first element: the text, unless it is empty
            # (anthropic rejects an empty text block), or the next part (an ollama result's
            # first image)
            result, head = self._open_result(block, {**attrs, "empty": True}, call_id, True, True)
            result.writer.write(head)
            return self._lazy_text(block, result)
        result, head = self._open_result(block, attrs, call_id, bool(attrs.get("in_parts")), False)
        w = result.writer
        if attrs.get("empty"):
            w.write(head)
            return (lambda data: None), (lambda late: self._result_late(result, late, block))
        if not result.array:
            w.write(head + b',"content":"')
            return w.write, (lambda late: (w.write(b'"'), self._result_late(result, late, block)))
        w.write(head + _TEXT_HEAD)

        def close(late: dict) -> None:
            every = {**attrs, **late}  # the leading text's own members: its part_ ones
            own = {k[len(PART_PREFIX):]: v for k, v in every.items() if k in PART_ATTRS}
            w.write(b'"' + self._members(block, "text", own) + b"}")
            self._result_late(result, late, block)
        return w.write, close

    def _lazy_text(self, block: Block, result: _Result):
        """The first text of another dialect's tool result (an ollama tool message's, also after
        its images), a text block of its content: written from its first byte (none: not
        written -- anthropic rejects an empty text block; a text streams as it comes, so whether
        it is empty is known at its end), its link to the call with its end."""
        text = _ResultText(result, eager=False)

        def close(late: dict) -> None:
            if text.started:
                result.writer.write(_TEXT_TAIL)
            self._result_late(result, late, block)
        return text.write, close

    def _part_text(self, block: Block, attrs: dict, result: _Result):
        """A further text part of the open result: written at once from anthropic (a copy), from
        its first byte from another dialect -- an empty text is not written (anthropic rejects
        it; was written), its members recorded."""
        text = _ResultText(result, eager=not self.foreign)

        def close(late: dict) -> None:
            every = {**attrs, **late}
            members = {k: v for k, v in every.items() if k not in _RIDING}
            if text.started:
                result.writer.write(b'"' + self._members(block, "text", members) + b"}")
            else:
                self._lose_attrs(block, members)
            self._result_late(result, {k: v for k, v in every.items() if k in _RIDING})
        return text.write, close

    def _result_late(self, result: _Result, late: dict, block: Block | None = None) -> None:
        """The result's attributes that came after its first part started; with ``block`` (its
        first part) the others are recorded (``_lose_attrs``)."""
        for key, value in late.items():
            if key == "tool_call_id":
                if result.id is None:
                    result.id = value
                    self._answered.add(value)
            elif key in _RESULT_MEMBERS:
                result.attrs[key] = value
            elif key == RESULT_CACHE_CONTROL:
                result.attrs["cache_control"] = value
        if block is not None:  # (the result's riding cache_control is written above: not lost)
            self._lose_attrs(block, late, _RESULT_MEMBERS | PART_ATTRS | {RESULT_CACHE_CONTROL})

    def _in_result(self, block: Block, attrs: dict):
        """A further part of the open tool result."""
        result = self._result
        w = result.writer
        if not result.array:  # cannot happen from our decoders; keep the text
            self._lose_block(block, "second part of a string tool_result content")
            return None
        s = block.section
        if s is TOOL_RESULT and self._tool_message(block):
            return self._lazy_text(block, result)  # an ollama tool message's text after its images
        if s is TOOL_RESULT:
            return self._part_text(block, attrs, result)
        if s in (USER_IMAGE, USER_DOCUMENT):
            return self._media(block, attrs, result)
        if s in (UNKNOWN, SERVER_TOOL_RESULT) and attrs.get("dialect") == DIALECT:
            w.write(result.separator())
            return w.write, (lambda late: self._result_late(result, late))  # (carried whole: late ones ride)
        self._lose_block(block, "such content in a tool_result")
        return None

    # -- media ----------------------------------------------------------------------------------

    def _media(self, block: Block, attrs: dict, result: _Result | None, result_of: bool = False):
        """``result_of``: an image of an ollama tool message before its text (or of one
        without text): it opens the message's ``tool_result`` (its link comes with the text)."""
        kind = "image" if block.section is USER_IMAGE else "document"
        source = attrs.get("source")
        if source is None and not (block.fin and not block.payload) and not self.foreign:
            source = "data"  # sorted keys: the source type follows its data (a late attr)
        if source is None:
            if attrs.get("file_id") is not None:
                self._lose_block(block, "access to another provider's file ids", attrs=attrs)
            else:
                self._lose_block(block, "source it can take", attrs=attrs)
            return None
        if self.foreign and source == "file":
            self._lose_block(block, "access to another provider's file ids", attrs=attrs)
            return None
        if self.foreign and kind == "image" and source == "base64" and attrs.get("media_type") is None:
            # anthropic requires a base64 image's media_type (png, jpeg, gif or webp); another
            # dialect's image without one (ollama's bytes that show none of them) is not one it takes
            self._lose_block(block, "base64 image without a media type (png, jpeg, gif or webp)", "not sent",
                             attrs=attrs)
            return None
        if self.foreign and kind == "document" and source == "base64":
            kind = self._base64_document(block, attrs)
            if kind is None:
                return None
        if result is None and result_of:
            result, head = self._open_result(block, {"empty": True}, None, True, True)
            result.writer.write(head)
        if result is None:
            role = attrs.get("role") if not self.foreign and attrs.get("role") == "assistant" else "user"
            if role == "user":  # (an anthropic body's own assistant media stays where it came)
                self._lose_moved(block, attrs, "user")
            w = self._message_for(block, role, attrs, False)
            w._separate()
        else:
            w = result.writer
            w.write(result.separator())
        payload_key = b'"url"' if source == "url" else b'"data"'
        has_payload = not (block.fin and not block.payload) or source in ("base64", "url", "text", "data")
        if source in ("file", "content"):
            has_payload = False
        w.write(b'{"type":' + dumps(kind) + b',"source":{' + (payload_key + b':"' if has_payload else b""))
        write = w.write
        # another dialect's image may be labelled with a type anthropic does not take (openai
        # takes "image/jpg" data URLs): its first characters show what it is
        head = bytearray() if self.foreign and kind == "image" and source == "base64" else None
        if head is not None:
            def write(data: bytes) -> None:
                keep_head(head, data)
                w.write(data)

        def close(late: dict) -> None:
            every = {**attrs, **late}
            if self.foreign and kind == "document" and "filename" in every and every.get("title") is None:
                # openai's file name is the document's title (and a title the file name, back)
                every.pop("title", None)
                every["title"] = every.pop("filename")
            src = [b'"type":' + dumps(every.get("source"))]
            media_type = every.get("media_type")
            shown = sniff_media_type(bytes(head)) if head is not None else None
            if shown is not None and shown != media_type:
                if media_type in IMAGE_TYPES:  # (a type anthropic does not take is relabelled silently)
                    self._lose(block, f"media type {media_type!r} of {article(self._subject(block, every))} "
                                      f"{self._subject(block, every)}", "image whose bytes are not its media type",
                               f"sent as {shown!r}, the type its bytes show")
                media_type = shown  # anthropic refuses an image whose bytes are not its media_type
            if media_type is not None and source != "url":
                src.append(b'"media_type":' + dumps(media_type))
            for key in ("file_id", "content"):
                if key == "file_id" and key in every and self.foreign:
                    self._lose_field(block, key, every)  # (beside data: another provider's id, no source of it)
                elif key in every:
                    src.append(dumps(key) + b":" + dumps(every[key]))
            if every.get("source_extra"):
                src.append(every["source_extra"].encode())
            tail = (b'",' if has_payload else b"") + b",".join(src) + b"}"
            w.write(tail + self._members(block, kind, {k: v for k, v in every.items()
                                                       if k not in ("is_error", RESULT_CACHE_CONTROL)}) + b"}")
            if result is not None:
                self._result_late(result, {k: v for k, v in every.items() if k in _RIDING})
        return write, close

    def _base64_document(self, block: Block, attrs: dict) -> str | None:
        """Another dialect's base64 file (openai ``file_data``) as anthropic takes one: a PDF
        a ``document``, an image (png, jpeg, gif, webp) an ``image`` block (recorded: its file
        name goes); any other type, or none, is not sent (recorded): anthropic's base64 document
        is a PDF only."""
        media_type = attrs.get("media_type")
        if media_type == "application/pdf":
            return "document"
        if media_type in IMAGE_TYPES:
            self._lose_block(block, f"file of type {media_type!r} as a document", "sent as an image block",
                             attrs=attrs)
            return "image"
        what = f"base64 file of type {media_type!r}" if media_type is not None else "base64 file without a media type"
        self._lose_block(block, f"{what} (a document is a PDF)", "not sent", attrs=attrs)
        return None

    # -- tools ------------------------------------------------------------------------------------

    def _tool_json(self, attrs: dict, schema: bytes) -> bytes:
        if "cache_control" in attrs and not self._breakpoint(attrs["cache_control"]):
            where = f"{attrs['path']}.cache_control" if attrs.get("path") else "$.tools"
            self.session.lose(where, lacks("cache_control of a tool", DIALECT, BREAKPOINT_LACK, BREAKPOINT_DONE))
            attrs = {k: v for k, v in attrs.items() if k != "cache_control"}
        return controls.tool_from_canonical(attrs, schema, self.session)

    def _breakpoint(self, value: Any) -> bool:
        """Whether a cache breakpoint goes: anthropic refuses a request with more than
        ``MAX_BREAKPOINTS`` ("A maximum of 4 blocks with cache_control may be provided"), so
        another dialect's are counted as they are written and the fifth and later are not
        (the first ones are out when a later one comes). A null one is none; an anthropic
        client's own go as they came."""
        if value is None or not self.foreign:
            return True
        self._breakpoints += 1
        return self._breakpoints <= MAX_BREAKPOINTS

    def _tool_element(self, key: str, raw: bytes) -> None:
        self._open_top(key)
        self.out.raw_element(raw)
