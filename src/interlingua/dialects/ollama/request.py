"""Ollama chat requests (``POST /api/chat``): decoder (tokens -> canonical) and encoder.

Wire shape (the installed ``ollama`` client is the authority): a message is
``{"role", "content": str, "thinking": str, "images": [base64 str],
"tool_calls": [{"id"?, "function": {"index"?, "name", "arguments": {object}}}],
"tool_name": str, "tool_call_id"?: str}`` (the Go server's ``api.Message``; the
current API has the ids, the installed Python client does not declare them yet);
tools as openai's; sampling settings inside ``options``.

Decoder decisions:

* Message index = position in ``messages[]``. Role ``system`` / ``user`` /
  ``assistant`` / ``tool`` gives the text section; another role makes the
  content an ``unknown`` block (raw JSON string, attrs ``role``, ``dialect``,
  ``key``) and gives the message's other blocks a ``role`` attr.
* Blocks are emitted in wire order: content, then images (as the client
  writes them), thinking and tool calls where they come.
* User text always carries ``in_parts``: ``images`` may follow it (the
  client writes them after ``content``) and a message holding text and
  images is a content-part list in openai/anthropic. Marking every user
  text so, rather than holding it until the message's next key shows
  whether images follow, keeps the text streaming (the spike measured that
  hold at 100 % of a long-text body); the cost is that an openai target gets
  ``[{"type": "text", ...}]`` where a string would do. Content before
  ``role`` (sorted keys) is held (``ollama:content-before-role``).
* Images are ``user-image`` blocks, ``source: base64``; ``media_type`` is
  sniffed from the first bytes (png, jpeg, gif, webp) and absent otherwise.
* A tool call's ``id`` is carried when present (Go writes it first; after
  ``function`` -- sorted keys -- the call waits for it, ``ollama:call-before-id``);
  only a call without one gets a generated ``call_ollama_<message>_<position>``
  (deterministic). Arguments (a JSON
  object) become the canonical escaped JSON-string text, re-serialised
  compactly while streaming. ``index`` rides as attr ``index``.
* A tool message's ``tool_call_id`` links it to its call. Without one it is
  matched to the pending calls of the last assistant message: the first not
  yet answered with the same ``tool_name`` (or the first at all when
  ``tool_name`` is absent); that call's id becomes the result's
  ``tool_call_id`` (attr ``ollama_no_tool_call_id`` when the call's id was a
  given one, so an ollama target does not add it); ``tool_name`` rides as
  attr ``name`` (absent: attr ``ollama_no_tool_name``, so the ollama encoder
  does not add one). A message's own ``tool_calls`` are pending from its end: a
  tool message that carries calls answers the calls before it, and the results
  after it answer its calls (which other dialects send in an assistant message).
  In the middle of a run (a call of the batch before it is not answered yet) a tool
  message's calls wait: the results that follow answer the rest of the batch first;
  the calls of every tool message of the run, joined in order, are pending once the
  batch is all answered, or once an assistant message (or a message with calls of its own)
  comes: the run ended. A user or system message between tool messages does not end the
  run (Ollama takes one there; into anthropic it goes after the run's results).
* ``stream`` absent: an implied ``stream: true`` control (see controls.py).

Encoder decisions:

* Several text blocks of one message are joined into one ``content`` with
  ``"\\n\\n"`` between them (a recorded loss: the block boundaries go).
  Top-level system blocks (anthropic ``system`` as a list) become ONE system
  message, joined the same way (recorded), as Ollama's anthropic layer sends.
* Images go to ``images[]`` in their order; ollama has no position among
  the text, so a text block after an image is a recorded loss (the text
  moves before it). A
  ``url`` image cannot be carried without fetching it: a recorded loss,
  never fetched. ``media_type`` is not written (ollama reads the bytes); a declared
  type the first bytes do not show (png, jpeg, gif, webp) is a recorded loss.
* Tool-call ids are written (``id`` first in the call, ``tool_call_id`` after
  ``tool_name`` on the result, Go's order), except the ones the ollama decoder
  generated. Results get ``tool_name`` from the call their ``tool_call_id``
  names, or from an openai tool message's ``name``.
* A refusal (openai history) is carried as assistant ``content`` (recorded).
* Server tools (anthropic ``server_tool_use``, ``web_search_tool_result`` ...)
  are recorded losses naming the block type; ``messages`` is written even when
  nothing of the list could be carried.
* Documents, audio, video, citations, thinking signatures and redacted
  thinking: recorded losses.
"""

from __future__ import annotations

from ..fields import REQUEST_FIELDS, REQUIRED, sets_nothing

from typing import Any, Callable

from ... import json as tok
from ...canonical import (
    ASSISTANT_REASONING, ASSISTANT_REFUSAL, ASSISTANT_TEXT, REQUEST_LEVEL, SERVER_TOOL_RESULT, SYSTEM_INSTRUCTION, TOOL_CALL, TOOL_DEFINITION, TOOL_RESULT,
    TOP_LEVEL_SYSTEM, UNKNOWN, USER_DOCUMENT, USER_IMAGE, USER_TEXT, Block, Control, End, Event, Extension, MessagesEnd, Section,
    SystemEnd, escape_raw_json, unescape_json_text,
)
from ...decoding import OPT_STRING, BlockBuilder, Gate, MessageReaderBase, RequestBodyDecoder, carries_nothing, index_at
from ...encoding import (
    STRING_CONTENT, Encoder, HeldArguments, MessageAssembler, MessageListBody, TextCallOrder, first_member, late_only,
    lose_unknown_members, merged_reasoning, message_member,
)
from ...errors import SchemaError, TranscodeError
from ...images import IMAGE_TYPES, SNIFF_BYTES, UNNAMED_TYPES, keep_head, sniff_media_type, type_named
from ...jsonwriter import JsonWriter, dumps, key_bytes
from ...losses import CALL_INDEX, INTERNAL_ATTRS, article, lacks, path_subject, several_subject
from ...session import Session
from . import controls

DIALECT = "ollama"

ROLE_TEXT_SECTION = {
    "system": SYSTEM_INSTRUCTION,
    "user": USER_TEXT,
    "assistant": ASSISTANT_TEXT,
    "tool": TOOL_RESULT,
}
#: the role a section naturally belongs to (the ``role`` attr marks exceptions)
SECTION_ROLE = {
    SYSTEM_INSTRUCTION: "system",
    USER_TEXT: "user",
    USER_IMAGE: "user",
    USER_DOCUMENT: "user",  # (only an image file has a place: ``_place``)
    ASSISTANT_TEXT: "assistant",
    ASSISTANT_REFUSAL: "assistant",
    ASSISTANT_REASONING: "assistant",
    TOOL_CALL: "assistant",
    TOOL_RESULT: "tool",
}
GENERATED_ID_PREFIX = "call_ollama_"
_EXTRA_ATTR = "ollama_extra"


def generated_call_id(message: int, position: int) -> str:
    """The id of the ``position``-th tool call of ollama message ``message`` (deterministic)."""
    return f"{GENERATED_ID_PREFIX}{message}_{position}"


# ---------------------------------------------------------------------------
# Decoder
# ---------------------------------------------------------------------------


_FIELDS = REQUEST_FIELDS[DIALECT]
_OPTION_FIELDS = REQUEST_FIELDS["ollama.options"]

class RequestDecoder(RequestBodyDecoder):
    dialect = DIALECT
    required = REQUIRED[DIALECT]

    def __init__(self, emit: Callable[[Event], None], session: Session) -> None:
        super().__init__(emit, session)
        self._stream_seen = False
        #: [id, name, answered] of the last assistant message's tool calls
        self.pending_calls: list[list] = []
        #: the calls of the message being read: they become ``pending_calls`` at its end, so
        #: a tool message's own result answers the calls before it, not its own
        self.new_calls: list[list] | None = None
        #: the calls of a run's tool messages while the batch before them is not all answered:
        #: pending once it is, or once an assistant message (or one with calls of its own) comes
        self.waiting_calls: list[list] = []

    # -- top level -----------------------------------------------------------

    def _body_ending(self) -> None:
        if not self._stream_seen:  # ollama streams by default
            self.emit(Control("stream", True, dialect=DIALECT))

    def _top_member(self, key: str, kind: int, value: Any, offset: int) -> None:
        self.expect(kind, value, offset, _FIELDS.get(key), key)
        if key == "messages":
            self.read_messages(kind, offset)
        elif key == "tools":
            self._tools(kind, offset)
        elif key == "options":
            self._options(kind, offset)
        else:
            self.read_raw(kind, value, offset, lambda raw: self._top_field(key, raw, offset))

    def _top_field(self, key: str, raw: bytes, offset: int) -> None:
        absent = sets_nothing(DIALECT, key, raw)  # ("stream": null streams: ollama's default)
        control = None if absent else controls.decode(key, raw)
        if control is None:
            self.emit(Extension(DIALECT, "$." + key, raw, lossless=absent))
            return
        self._stream_seen |= key == "stream"
        self.emit(self.checked(control, raw, offset))

    # -- options -------------------------------------------------------------

    def _options(self, kind: int, offset: int) -> None:
        if kind == tok.NULL:
            self.extension("$.options", b"null", lossless=True)
            return
        self._options_empty = True
        self.each_member(kind, offset, "options", self._option, self._options_end)

    def _option(self, key: str, kind: int, value: Any, offset: int) -> None:
        self.expect(kind, value, offset, _OPTION_FIELDS.get(key), "options." + key)
        self._options_empty = False
        self.read_raw(kind, value, offset, lambda raw: self._option_field(key, raw, offset))

    def _options_end(self) -> None:
        if self._options_empty:  # keep "options": {} for the round trip
            self.extension("$.options", b"{}", lossless=True)

    def _option_field(self, key: str, raw: bytes, offset: int) -> None:
        absent = sets_nothing(DIALECT, key, raw)  # (null: absent)
        control = None if absent else controls.decode_option(key, raw)
        if control is None:
            self.extension("$.options." + key, raw, lossless=absent)
            return
        self.emit(self.checked(control, raw, offset))

    # -- messages ------------------------------------------------------------

    def _message_reader(self, index: int) -> "MessageReader":
        return MessageReader(self, index)

    # -- tools ---------------------------------------------------------------

    def _tools(self, kind: int, offset: int) -> None:
        if kind == tok.NULL:
            self.extension("$.tools", b"null", lossless=True)
            return
        self._tools_empty = True
        self.each_element(kind, offset, "tools", self._tool_element, self._tools_end)

    def _tool_element(self, kind: int, value: Any, offset: int) -> None:
        self._tools_empty = False
        # A tool definition is small; read it whole and map it.
        self.read_value(kind, value, offset, lambda tool: self._tool(tool, offset))

    def _tools_end(self) -> None:
        if self._tools_empty:
            self.extension("$.tools", b"[]", lossless=True)

    def _tool(self, tool: Any, offset: int) -> None:
        path = self.next_element_path("tools")
        if not isinstance(tool, dict):
            raise self.error("expected an object for a tool", offset)
        self.refuse_overflow(tool, offset)
        canonical = controls.tool_to_canonical(tool)
        if canonical is None:
            self.emit(Block(UNKNOWN, REQUEST_LEVEL, dumps(tool), attrs={"dialect": DIALECT, "where": "tool"}))
            return
        attrs, schema = canonical
        self.check_tool_attrs(attrs, path + ".function", offset)
        attrs["path"] = path
        self.emit(Block(TOOL_DEFINITION, REQUEST_LEVEL,
                        dumps(schema) if schema is not None else b"", attrs=attrs))


class MessageReader(MessageReaderBase):
    """Reads one message object; see the module docstring for the decisions.

    The last block is closed only when the next one starts or the message
    ends, so late attributes (``tool_call_id`` of a result, a tool call's
    ``name`` after its arguments) ride on its last fragment.
    """

    def __init__(self, decoder: RequestDecoder, index: int) -> None:
        super().__init__(decoder, index)
        self._open: BlockBuilder | None = None
        self._content: BlockBuilder | None = None
        self._tool_name: str | None = None
        self._tool_name_raw: bytes | None = None
        self._tool_call_id: str | None = None  # the current API's link of a result to its call
        self._tool_call_id_raw: bytes | None = None
        self._call_position = 0
        #: the content of a message that may be a tool result, kept open after another block
        #: began (``images`` come before ``tool_name`` / ``tool_call_id`` in Go's order, and
        #: before ``role`` when keys are sorted): its link to the call rides on its last fragment
        self._result: BlockBuilder | None = None
        self._after_result: Gate | None = None  # the blocks that began meanwhile, held

    def _resolve(self, block: Block) -> Block:
        """Content is built as provisional ``user-text``; give it the role's section,
        and mark blocks whose natural role is not the message's."""
        role = self.role
        section = block.section
        if section is USER_TEXT:
            section = ROLE_TEXT_SECTION.get(role, UNKNOWN)
            payload = block.payload
            attrs = block.attrs
            if section is UNKNOWN:  # raw JSON of the content string
                payload = (b'"' if block.init else b"") + payload + (b'"' if block.fin else b"")
                if block.init:
                    attrs = {**(attrs or {}), "role": role, "dialect": DIALECT, "key": "content"}
            elif block.init and section is USER_TEXT:
                attrs = {**(attrs or {}), "in_parts": True}
            return Block(section, block.message, payload, block.init, block.fin, attrs or None)
        if block.init and SECTION_ROLE.get(section, role) != role:
            return Block(section, block.message, block.payload, True, block.fin,
                         {**(block.attrs or {}), "role": role})
        return block

    def emit(self, block: Block) -> None:
        if self._after_result is not None:
            self._emitted = True
            self._after_result(block)
        else:
            super().emit(block)

    def waiting(self) -> Gate | None:
        return self._after_result if self._after_result is not None else super().waiting()

    def builder(self, section: Section, attrs: dict | None = None, done=None) -> BlockBuilder:
        if self._open is not None:
            if self._open is self._content and self.role in (None, "tool"):
                self._keep_result_open()
            else:
                self.close_open()
        return BlockBuilder(self.emit, section, self.index, attrs, done, self.waiting)

    def _keep_result_open(self) -> None:
        """A block begins after a result's content, before its link may have come: the
        content stays open (to the message's end, or its role, if that is not ``tool``),
        what follows it waits (``ollama:blocks-before-result-link``)."""
        self._result, self._open = self._open, None
        self._after_result = Gate(super().emit, self.d.session, f"{DIALECT}:blocks-before-result-link")

    def _close_result(self) -> None:
        if self._result is None:
            return
        result, held = self._result, self._after_result
        self._result = self._after_result = None
        if self.role == "tool":
            self._match_result(result)
        result.close()
        held.release()

    def _set_role(self, role: Any, offset: int) -> None:
        super()._set_role(role, offset)
        if role != "tool":
            self._close_result()

    def finished(self, builder: BlockBuilder) -> None:
        if self._open is not None:
            self.close_open()
        self._open = builder

    def close_open(self) -> None:
        if self._open is not None:
            if self._open is self._content and self.role == "tool":
                self._match_result(self._open)
            self._open.close()
            self._open = None

    def _match_result(self, builder: BlockBuilder) -> None:
        """Link a tool message to the call it answers: by its ``tool_call_id`` when
        given (the current API), else by order and ``tool_name``."""
        name = self._tool_name
        call_id = self._tool_call_id
        # (a given id may name a waiting call: it is answered, not linked again by order)
        for call in self.d.pending_calls + self.d.waiting_calls if call_id is not None else self.d.pending_calls:
            if not call[2] and (call[0] == call_id if call_id is not None else name is None or call[1] == name):
                call[2] = True
                if call_id is None:  # linked by order and name
                    builder.set("tool_call_id", call[0])
                    if _carried_id(call[0]) is not None:  # a given call id an ollama target must not add here
                        builder.set("ollama_no_tool_call_id", True)
                if name is None:  # nor is a name taken from the call
                    builder.set("ollama_no_tool_name", True)
                break
        if call_id is not None:
            builder.set("tool_call_id", call_id)
        if name is not None:
            builder.set("name", name)

    # -- keys ----------------------------------------------------------------------

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            self._end(offset)
            return
        if value == "role":
            reader = self._role
        elif value == "content":
            reader = self._content_member
        elif value == "thinking":
            reader = self._thinking_member
        elif value == "images":
            reader = self._images
        elif value == "tool_calls":
            reader = self._tool_calls
        elif value == "tool_name":
            reader = self._tool_name_member
        elif value == "tool_call_id":
            reader = self._tool_call_id_member
        else:
            reader = self._extension(value)
        d.then(reader)

    def _end(self, offset: int) -> None:
        if self.role is None:
            raise self.d.error("message without role", offset)
        if self.role == "tool" and self._content is None:
            # A result without content: still a block, so it links to its call.
            builder = self.builder(USER_TEXT, {"empty": True})
            self._content = builder
            builder.fragment(b"", True, True)
            self.finished(builder)
        self.close_open()
        self._close_result()
        d = self.d
        if self.role == "tool":
            if d.new_calls is not None:  # pending once the batch before them is answered
                d.waiting_calls += d.new_calls
                d.new_calls = None
            if d.waiting_calls and all(call[2] for call in d.pending_calls):
                d.pending_calls, d.waiting_calls = d.waiting_calls, []
        else:
            # the run ended (an assistant message, or a message with calls of its own): the results
            # that follow answer these. A user or system message between tool messages does not
            # end it (Ollama takes one there; the anthropic encoder sends it after the results)
            if d.waiting_calls and (self.role not in ("user", "system") or d.new_calls is not None):
                d.pending_calls, d.waiting_calls = d.waiting_calls, []
            if d.new_calls is not None:  # a new batch of calls: the results that follow answer these
                d.pending_calls, d.new_calls = d.new_calls, None
        if self.role != "tool":
            for key, raw in (("tool_name", self._tool_name_raw), ("tool_call_id", self._tool_call_id_raw)):
                if raw is not None:  # (null: absent)
                    self.d.extension(f"$.messages[{self.index}].{key}", raw, message=self.index, lossless=raw == b"null")
        if not self._emitted:  # e.g. {"role": "assistant"}: the message must still exist
            section = ROLE_TEXT_SECTION.get(self.role, UNKNOWN)
            if section is UNKNOWN:
                self.d.emit(Block(section, self.index, b"", attrs={"role": self.role, "dialect": DIALECT,
                                                                   "empty": True}))
            else:
                self.d.emit(Block(section, self.index, b"", attrs={"empty": True}))

    def _extension(self, key: str):
        path = f"$.messages[{self.index}].{key}"

        def reader(kind: int, value: Any, offset: int) -> None:
            self.d.read_raw(kind, value, offset, lambda raw: self.d.extension(
                path, raw, message=self.index, lossless=carries_nothing(raw)))
        return reader

    def _tool_name_member(self, kind: int, value: Any, offset: int) -> None:
        def done(raw: bytes) -> None:
            self._tool_name_raw = raw
            name = self.d.data(raw, offset)  # (a lone surrogate: an error at the value)
            self._tool_name = name if isinstance(name, str) else None
        # (a string or null, as the client declares it: a number was carried as the name)
        self.d.read_raw(kind, value, offset, done, OPT_STRING, "tool_name")

    def _tool_call_id_member(self, kind: int, value: Any, offset: int) -> None:
        def done(raw: bytes) -> None:
            self._tool_call_id_raw = raw
            call_id = self.d.data(raw, offset)
            self._tool_call_id = call_id if isinstance(call_id, str) and call_id else None
        self.d.read_raw(kind, value, offset, done, OPT_STRING, "tool_call_id")

    def _content_member(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self._null_member("content")
            return
        builder = self._content = self.builder(USER_TEXT, None, self.finished)
        self.d.read_string(kind, value, offset, builder.fragment, "content")

    def _thinking_member(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self._null_member("thinking")
            return
        builder = self.builder(ASSISTANT_REASONING, None, self.finished)
        self.d.read_string(kind, value, offset, builder.fragment, "thinking")

    def _null_member(self, key: str) -> None:
        self.d.extension(f"$.messages[{self.index}].{key}", b"null", message=self.index, lossless=True)

    # -- images ----------------------------------------------------------------------

    def _images(self, kind: int, value: Any, offset: int) -> None:
        path = f"$.messages[{self.index}].images"
        if kind == tok.NULL:
            self.d.extension(path, b"null", message=self.index, lossless=True)
            return
        self._image_count = 0
        self.d.each_element(kind, offset, "images", self._image_element, self._images_end)

    def _images_end(self) -> None:
        if self._image_count == 0:
            self.d.extension(f"$.messages[{self.index}].images", b"[]", message=self.index, lossless=True)

    def _image_element(self, kind: int, value: Any, offset: int) -> None:
        self._image_count += 1
        image = ImageReader(self)
        self.d.read_string(kind, value, offset, image.fragment, "an image (base64)")

    # -- tool calls ------------------------------------------------------------------

    def _tool_calls(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.NULL:
            self.d.extension(f"$.messages[{self.index}].tool_calls", b"null", message=self.index, lossless=True)
            return
        self.d.new_calls = []  # pending from the message's end (``_end``)
        self.d.each_object(kind, offset, "tool_calls", self._tool_call)

    def _tool_call(self, offset: int):
        call_id = generated_call_id(self.index, self._call_position)
        self._call_position += 1
        return ToolCallReader(self, call_id, self._call_position - 1).on_key


class ImageReader:
    """One base64 string of ``images[]``: its first fragments are held until they hold
    16 characters (``SNIFF_BYTES``, unescaped: ``images.keep_head``) to sniff the media
    type, then fragments stream."""

    def __init__(self, message: MessageReader) -> None:
        self.m = message
        self.block = message.builder(USER_IMAGE, {"source": "base64"})
        self._prefix: bytes | None = b""
        self._head = bytearray()

    def fragment(self, data: bytes, init: bool, fin: bool) -> None:
        if self._prefix is None:
            self.block.fragment(data, False, fin)
        else:
            self._prefix += data
            keep_head(self._head, data)
            if len(self._head) < SNIFF_BYTES and not fin:
                return
            media_type = sniff_media_type(bytes(self._head))
            if media_type is not None:
                self.block.set("media_type", media_type)
            data, self._prefix = self._prefix, None
            self.block.fragment(data, True, fin)
        if fin:
            self.m.finished(self.block)


#: the reorder rule of a tool call's fragments held until its ``id`` (or its end)
CALL_BEFORE_ID = f"{DIALECT}:call-before-id"


class ToolCallReader:
    """``{"id"?, "function": {"name", "arguments": {...}, "index"?}}`` -> a tool-call block.

    The id rides on the first fragment, where every encoder writes it. Go writes it
    first; a source that sorts keys puts it after ``function``: the call's fragments
    wait for it, or for the call's end (then the generated id stands), in a hold
    (``ollama:call-before-id``) -- a late id would otherwise be written beside the
    generated one, or contradict it. With reordering refused nothing is held: the
    call streams with the generated id and a late id is refused at its value.
    """

    def __init__(self, message: MessageReader, call_id: str, position: int = 0) -> None:
        self.m = message
        self.d = message.d
        self.position = position  # among the message's tool_calls
        self.block = message.builder(TOOL_CALL, {"id": call_id})
        self.call = [call_id, None, False]
        self.d.new_calls.append(self.call)
        self.has_arguments = False
        self.id_settled = False  # the id is known: the generated one stands, or the given one came
        if not self.d.session.reorder.refuse:
            # the fragments that come before the id wait for it
            self._before_id = Gate(self._settled, self.d.session, CALL_BEFORE_ID)
            self.block.emit = self._before_id
            self.block.waiting = lambda: self._before_id

    def _settled(self, block: Block) -> None:
        """A held fragment goes out, the first one with the id."""
        if block.init:
            block = Block(block.section, block.message, block.payload, True, block.fin,
                          {**block.attrs, "id": self.call[0]})
        self.m.emit(block)

    def _settle(self) -> None:
        """The id is known: the held fragments go out (the first one with it), later ones straight."""
        if self.id_settled:
            return
        self.id_settled = True
        self.block.emit = self.m.emit
        self.block.waiting = self.m.waiting
        if not self.d.session.reorder.refuse:
            self._before_id.release()
            self.block.recount()  # what the builder keeps back now waits where the message's blocks do

    def on_key(self, kind: int, value: Any, offset: int) -> None:
        if kind == tok.OBJECT_END:
            self.d.pop()
            if not self.has_arguments:
                self.block.set("ollama_no_arguments", True)
            self._settle()
            self.m.finished(self.block)
            return
        if value == "function":
            self.d.then(self._function)
        elif value == "id":
            self.d.then_value(self._id)
        elif value == "type":  # ("function", where a client writes it: carried to an ollama target,
            # nothing to another, which writes its own)
            self.d.then(self._extra(value, "ollama_call_type"))
        else:  # carried to an ollama target; another records it (``losses``: not internal)
            self.d.then(self._extra(value, "ollama_call_extra"))

    def _id(self, call_id: Any) -> None:
        """The current API's call id: it replaces the generated one on the first
        fragment (not out yet: the call waits for its id, see the class)."""
        if not isinstance(call_id, str) or not call_id:
            raise SchemaError("tool call id is not a non-empty string", dialect=DIALECT)
        if self.block.begun and self.d.session.reorder.refuse:  # the call is out (source order)
            raise self.d.session.reorder.refused(CALL_BEFORE_ID)
        self.block.attrs["id"] = call_id  # the generated id's place: still first
        self.call[0] = call_id
        self._settle()

    def _function(self, kind: int, value: Any, offset: int) -> None:
        if kind != tok.OBJECT_START:
            raise self.d.wrong_type(kind, "an object for function", offset)
        self.d.push(self.on_function_key)

    def on_function_key(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if kind == tok.OBJECT_END:
            d.pop()
            return
        if value == "name":
            d.then_value(self._name, OPT_STRING, "a tool call's name")  # (as in a response)
        elif value == "arguments":
            d.then(self._arguments)
        elif value == "index":  # at the call's position it says nothing (``losses.CALL_INDEX``)
            d.then_value(lambda x: self.block.set(CALL_INDEX, x) if index_at(x, self.position) else self.block.set("index", x))
        else:
            d.then(self._extra(value, _EXTRA_ATTR))

    def _name(self, name: Any) -> None:
        self.block.set("name", name)
        self.call[1] = name

    def _extra(self, key: str, attr: str):
        def reader(kind: int, value: Any, offset: int) -> None:
            def done(raw: bytes) -> None:
                members = self.block.late.get(attr) or self.block.attrs.get(attr)
                text = dumps(key).decode() + ":" + raw.decode()
                self.block.set(attr, members + "," + text if members else text)
            self.d.read_raw(kind, value, offset, done)
        return reader

    def _arguments(self, kind: int, value: Any, offset: int) -> None:
        if kind != tok.OBJECT_START:
            raise self.d.wrong_type(kind, "an object for arguments", offset)
        self.has_arguments = True
        block = self.block

        def sink(data: bytes, init: bool, fin: bool) -> None:
            block.fragment(escape_raw_json(data), init, fin)
        self.d.stream_raw(kind, value, offset, sink)


# ---------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------

_TEXT_SECTIONS = {SYSTEM_INSTRUCTION, USER_TEXT, ASSISTANT_TEXT, TOOL_RESULT}
#: attributes that shape the output (or are handled where they matter)
_QUIET_ATTRS = INTERNAL_ATTRS | {"source", "media_type", "tool_call_id", "id", "name", "index", _EXTRA_ATTR,
                                 "ollama_call_extra", "signature", "redacted", "is_error"}
_TEXT_MEMBERS = {"content": STRING_CONTENT, "thinking": first_member("thinking", b'"')}
_SEPARATOR = b"\\n\\n"  # between joined text blocks (escaped form)
_UNNAMED = "application/octet-stream"  # what openai writes for an image nobody named


class _Message:
    """One ollama message being written."""

    __slots__ = ("asm", "index", "role", "texts", "has_result", "has_image", "named")

    def __init__(self, asm: MessageAssembler, index: int, role: str) -> None:
        self.asm = asm
        self.index = index
        self.role = role
        self.texts: dict[str, int] = {}  # member -> blocks written into it
        self.has_result = False
        self.has_image = False
        self.named = False  # tool_name written


class RequestEncoder(Encoder):
    """Canonical events -> an Ollama ``/api/chat`` request body.

    Holds (reorder buffer): messages before ``SystemEnd``
    (``ollama:messages-before-system``, anthropic's system after messages);
    ``options`` members until the end (``ollama:options``; sources scatter
    sampling settings across the body, ollama groups them); message members
    after the first (``ollama:member-order``, MessageAssembler).

    Images never wait for the text: the first image ends ``content`` (it is
    complete when images follow it in every source's order) and the images
    stream. Text after an image (an openai/anthropic part list ``[text,
    image, text]``) goes on in a following message of the same role, a
    recorded loss; text that comes only after the images (``[image, text]``)
    is held instead -- it is usually the smaller of the two.
    """

    dialect = DIALECT

    def __init__(self, write, session: Session) -> None:
        super().__init__(write, session)
        self._text_call_order = TextCallOrder()  # (content and tool_calls are two members)
        self.out = JsonWriter(write)
        self.body = MessageListBody(self.out, session, DIALECT, self._close_message)
        self._msg: _Message | None = None
        self._options = None  # Hold of "k":v option members
        self._options_empty = False
        self._stream_seen = False
        self._carried = False  # a message was opened in the output (``require_a_message``)
        self._call_names: dict[str, str] = {}
        self._control_keys: set[str] = set()  # ollama keys written for other dialects' controls
        self._pending_ext: list[Extension] = []
        #: openai ``name`` of a message whose blocks have not come: a tool message's becomes tool_name
        self._openai_names: dict[int, Extension] = {}
        self._calls_at: int | None = None  # source index of the last message with tool calls
        self._user_hold = None  # Hold of the user message waiting for the tool messages after it
        self._user_writer: JsonWriter | None = None
        self._user_index: int | None = None
        self._moved: _Message | None = None  # the user message of the open tool message's images
        self._reasoning = session.reorder.hold("ollama:merge-reasoning")

    def _top_member(self, key: str, raw: bytes) -> None:
        if key.startswith("options."):
            if self._options is None:
                self._options = self.session.reorder.hold("ollama:options")
            item = dumps(key[8:]) + b":" + raw
            self._options.append(item, len(item))
            return
        self.body.member(key, raw)

    def on_event(self, event: Event) -> None:
        t = type(event)
        if t is Block:
            self._on_block(event)
        elif t is Control:
            self._on_control(event)
        elif t is Extension:
            self._on_extension(event)
        elif t is SystemEnd:
            self.body.system_end()
        elif t is MessagesEnd:
            self.body.messages_end()
        elif t is End:
            for ext in self._openai_names.values():
                self.foreign_extension(ext)
            self._openai_names.clear()
            self.body.end()
            # (an empty list asks Ollama to load the model, not to answer: no such request
            # from a source that listed messages)
            self.require_a_message(self._carried)
            if self._reasoning:
                self._write_control(merged_reasoning(list(self._reasoning.drain()), DIALECT, self.session))
            if self.session.options.ollama_sampling_defaults:
                self._source_sampling_defaults()
            if self._options is not None or self._options_empty:
                body = b",".join(self._options.drain()) if self._options is not None else b""
                self.out.raw_member("options", b"{" + body + b"}")
                self._options = None
            if not self._stream_seen:
                # No stream control: the source meant a non-streaming request,
                # ollama would stream without this.
                self.out.raw_member("stream", b"false")
            self.body.finish()

    def _source_sampling_defaults(self) -> None:
        """``Options.ollama_sampling_defaults``: what the source left unset samples as
        its own API would (openai's 1.0 temperature and top_p), not as the model's
        Modelfile says."""
        for key, value in controls.SOURCE_SAMPLING_DEFAULTS.get(self.session.source, {}).items():
            if "options." + key not in self._control_keys:
                self._control_keys.add("options." + key)
                self._top_member("options." + key, dumps(value))

    def _on_control(self, control: Control) -> None:
        if control.name == "stream":
            self._stream_seen = True
        if control.dialect == DIALECT:
            if control.key is None:
                return  # the implied stream: true of an ollama body without stream
            self._top_member(control.key, control.raw)
            return
        lose_unknown_members(control, DIALECT, self.session)
        if control.name == "reasoning":  # merged with its siblings at the end (one think)
            self._reasoning.append(control, len(dumps(control.value)))
            return
        self._write_control(control)

    def _write_control(self, control: Control) -> None:
        for key, value in controls.encode_control(control, self.session):
            if key in self._control_keys:  # e.g. openai max_tokens beside max_completion_tokens
                where = control.place
                self.session.lose(where, lacks(path_subject(where), DIALECT, f"second value for {key}",
                                               "the first is kept"), dialect=control.dialect)
                continue
            self._control_keys.add(key)
            self._top_member(key, dumps(value))

    def _on_extension(self, ext: Extension) -> None:
        if ext.dialect == "openai" and ext.message is not None and ext.path.endswith(".name"):
            self._openai_name(ext)
        elif ext.dialect != DIALECT:
            self.foreign_extension(ext)
        elif ext.message is None:
            if ext.path == "$.options":
                if ext.raw == b"{}":
                    self._options_empty = True
                else:
                    self._top_member("options", ext.raw)
            elif ext.path.startswith("$.options."):
                self._top_member("options." + ext.path[10:], ext.raw)
            else:
                self._top_member(ext.path[2:], ext.raw)
        elif self._msg is not None and ext.message == self._msg.index:
            # written when the message closes: whether the message's first block
            # came before or after it depends on the cut, its place must not
            self._msg.asm.trailing(message_member(ext), ext.raw)
        else:  # a field of a message whose first block has not come yet
            self._pending_ext.append(ext)

    def _openai_name(self, ext: Extension) -> None:
        """An openai message's ``name``: on a tool message (answering by name, no
        ``tool_call_id``) it is ollama's ``tool_name``; elsewhere a recorded loss."""
        msg = self._msg
        if msg is None or msg.index != ext.message:
            self._openai_names[ext.message] = ext  # its message comes later
        elif msg.role == "tool" and msg.has_result and not msg.named and isinstance(ext.value(), str):
            msg.named = True
            msg.asm.trailing("tool_name", ext.raw)
        else:
            self.foreign_extension(ext)

    # -- messages --------------------------------------------------------------

    def _open_message(self, index: int, role: str, first: tuple[str, bytes, bytes] | None = None) -> _Message:
        """``first``: the member that streams first, opened with the message (``MessageAssembler``)."""
        self._close_message()
        if self._user_hold is not None and index != self._user_index:
            self._flush_user_hold()
        self._carried = True
        writer = self._messages_writer(index, role)
        asm = MessageAssembler(writer, self.session, "ollama:member-order", b'"role":' + key_bytes(role), first)
        self._msg = _Message(asm, index, role)
        if role != "tool" and index in self._openai_names:
            self.foreign_extension(self._openai_names.pop(index))
        if self._pending_ext:
            for ext in [e for e in self._pending_ext if e.message == index]:
                asm.trailing(message_member(ext), ext.raw)
            self._pending_ext = [e for e in self._pending_ext if e.message != index]
        return self._msg

    def _close_message(self) -> None:
        if self._msg is not None:
            self._msg.asm.close()
            self._msg = None
            if self._moved is not None:
                self._moved.asm.close()
                self._moved = None
            if self._user_hold is not None and self.body.messages_ended:
                self._flush_user_hold()

    def _moved_images(self, block: Block) -> _Message | None:
        """The user message for the images of the open tool message's result, beside it (held
        after the tool messages): the result's further texts go on in its tool message (a new
        one would be a second tool message linked to no call). None: the tool message is not
        open, or its user messages do not wait (``_messages_writer``)."""
        msg, calls_at = self._msg, self._calls_at
        if msg is None or msg.role != "tool" or msg.index != block.message or calls_at is None \
                or block.message != calls_at + 1:
            return None
        if self._moved is None:
            asm = MessageAssembler(self._messages_writer(block.message, "user"), self.session, "ollama:member-order",
                                   b'"role":"user"')
            self._moved = _Message(asm, block.message, "user")
        return self._moved

    def _messages_writer(self, index: int, role: str) -> JsonWriter:
        """Where a new message goes. The user message right after the tool calls may
        start with text and hold the results after it (anthropic ``[text,
        tool_result]``): it is held (``ollama:user-before-tool-result``) and placed
        after the tool messages made from the same source message, as ollama wants
        the results right after the calls (as the openai encoder does)."""
        if role == "user" and self._calls_at is not None and index == self._calls_at + 1:
            if self._user_hold is None:
                self._user_hold = self.session.reorder.hold("ollama:user-before-tool-result")
                self._user_writer = JsonWriter(self._user_hold.write)
                self._user_writer._first.append(True)  # its elements sit inside the list
                self._user_index = index
            return self._user_writer
        return self.body.messages_writer(system=index == TOP_LEVEL_SYSTEM)

    def _flush_user_hold(self) -> None:
        hold, self._user_hold, self._user_writer, self._user_index = self._user_hold, None, None, None
        self._calls_at = None
        if hold:
            self.body.messages_writer().raw_element(hold.take_bytes())

    def _starts_message(self, block: Block, role: str) -> bool:
        """Whether ``block`` goes into a new message rather than the open one."""
        msg = self._msg
        # a tool result's further text blocks (attr in_result) stay in its tool message
        new_result = (block.section is TOOL_RESULT and msg is not None and msg.has_result
                      and not (block.attrs or {}).get("in_result"))
        return msg is None or block.message != msg.index or role != msg.role or new_result

    def _message_for(self, block: Block, role: str) -> _Message:
        if self._starts_message(block, role):
            return self._open_message(block.message, role)
        return self._msg

    # -- blocks ----------------------------------------------------------------


    def _check_attrs(self, block: Block, attrs: dict) -> None:
        for key in attrs:
            if key not in _QUIET_ATTRS:
                self._lose_field(block, key, attrs)

    _developer_lost: int | None = None  # the source message whose developer role was recorded

    def _role_of(self, block: Block, attrs: dict) -> str | None:
        natural = SECTION_ROLE.get(block.section)
        role = attrs.get("role")
        if role is None or role == natural:
            return natural
        if role == "developer" and block.section is SYSTEM_INSTRUCTION:
            if block.message != self._developer_lost:  # the message's role: one loss, however many parts
                self._developer_lost = block.message
                self._lose_block(block, "developer role", "sent as a system message", attrs=attrs)
            return "system"
        if role == "function" and block.section is TOOL_RESULT:
            self._lose(block, "function message", "function role", "sent as a tool message")
            return "tool"
        return role  # ollama takes any role string; an ollama body's own odd roles come back

    def _place(self, block: Block):
        s = block.section
        attrs = block.attrs or {}
        if self._drops_typed_call(block, attrs):
            return None
        self._check_attrs(block, attrs)
        if s is UNKNOWN:
            if attrs.get("dialect") == DIALECT and "role" in attrs:
                return self._unknown(block, attrs)
            self._lose_unplaced(block)
            return None
        if s is SERVER_TOOL_RESULT:
            self._lose_server_block(block)
            return None
        role = self._role_of(block, attrs)
        if role is None:
            self._lose_unplaced(block)
            return None
        if s in _TEXT_SECTIONS:
            return self._text(block, attrs, role, "content")
        if s is ASSISTANT_REFUSAL:  # the assistant's turn stays: its refusal is what it said
            self._lose_block(block, "refusal field", "carried as assistant text", attrs=attrs)
            return self._text(block, attrs, role, "content")
        if s is ASSISTANT_REASONING:
            if attrs.get("redacted"):
                self._lose_block(block, "field for encrypted thinking", attrs=attrs)
                return None
            self._lose_signature(block, attrs)
            return self._text(block, attrs, role, "thinking")
        if s is USER_IMAGE:
            return self._image(block, attrs, role)
        if s is USER_DOCUMENT and attrs.get("source") == "base64" and attrs.get("media_type") in IMAGE_TYPES:
            # an image sent as a file (openai file_data): ollama's images take its bytes
            self._lose_block(block, f"file of type {attrs['media_type']!r} as a document", "sent as an image",
                             attrs=attrs)
            return self._image(block, attrs, role)
        if s is TOOL_CALL:
            return self._tool_call(block, attrs, role)
        # a section ollama has no member for (document, audio, video, citations) that came
        # with a role of its own: as without one, a recorded loss
        self._lose_unplaced(block)
        return None

    def _arguments(self, w: JsonWriter):
        """An ollama source's arguments are an object already: they stream. Another
        dialect's are a JSON text that may not be one (a call cut off at max_tokens):
        held per call until known (``encoding.HeldArguments``, as for anthropic)."""
        if self.session.source == DIALECT:
            return ArgumentsWriter(w.write)
        return HeldArguments(self.session, "ollama:tool-arguments")

    def _lose_server_block(self, block: Block) -> None:
        """A server tool's call or result (anthropic ``server_tool_use``,
        ``web_search_tool_result`` ...): the server ran it; ollama can neither run nor
        replay it. Recorded, named by its block type; the message's other blocks stay."""
        self._lose_block(block, "server tools", "not carried")

    def _text(self, block: Block, attrs: dict, role: str, key: str):
        if self._starts_message(block, role) and not attrs.get("empty"):
            msg = self._open_message(block.message, role, _TEXT_MEMBERS[key])  # the text opens with it
        else:
            msg = self._message_for(block, role)
        if block.section is TOOL_RESULT:
            msg.has_result = True
            self._lose_is_error(block, attrs)
        if attrs.get("empty"):
            return (lambda data: None), (lambda late: self._text_close(block, msg, attrs, late))
        if key == "content" and msg.asm.ended("content"):
            # content ended when the images began (so that they stream): more text
            # goes on in a following message of the same role
            self._lose(block, f"{self._subject(block, attrs)} after an image", "text after images in a message",
                       "moved to a following message")
            msg = self._open_message(block.message, role)
        elif msg.has_image and key == "content" and self.session.source != DIALECT:
            self._lose(block, f"{self._subject(block, attrs)} after an image", "order of text and images",
                       "the images follow the text")
        count = msg.texts.get(key, 0)
        w = msg.asm.member(key, b'"')
        if count == 1:  # the joining is one loss, however many texts are joined
            self._lose(block, several_subject(self.session.source, block.section, attrs), f"second {key} in a message",
                       "joined with a blank line")
        if count:
            w.write(_SEPARATOR)
        msg.texts[key] = count + 1
        return w.write, (lambda late: self._text_close(block, msg, attrs, late))

    def _text_close(self, block: Block, msg: _Message, attrs: dict, late: dict) -> None:
        # tool_name is written at the block's end whether it came early or late,
        # so the output bytes do not depend on how the input was cut.
        if late:
            self._check_attrs(block, late_only(attrs, late))
            self._lose_signature(block, late)
            self._lose_is_error(block, late_only(attrs, late))
        if block.section is TOOL_RESULT:
            self._result_name(block, msg, {**attrs, **late})

    def _result_name(self, block: Block, msg: _Message, attrs: dict) -> None:
        if block.section is not TOOL_RESULT:
            return
        name = attrs.get("name")
        call_id = attrs.get("tool_call_id")
        named = self._openai_names.pop(block.message, None)
        if name is None and named is not None and isinstance(named.value(), str):
            name = named.value()
        elif named is not None:
            self.foreign_extension(named)
        if msg.named:
            name = None
        elif name is None and call_id is not None and not attrs.get("ollama_no_tool_name"):
            name = self._call_names.get(call_id)
            if name is None:
                self._lose(block, f"{self._subject(block)} for the unknown call {call_id!r}",
                           "tool_name to give it", "sent without tool_name")
        if name is not None:
            msg.named = True
            msg.asm.scalar("tool_name", dumps(name))
        carried = _carried_id(call_id) if not attrs.get("ollama_no_tool_call_id") else None
        if carried is not None:
            msg.asm.scalar("tool_call_id", dumps(carried))

    def _image(self, block: Block, attrs: dict, role: str):
        if attrs.get("source") is None and block.fin and not block.payload:
            self._lose_block(block, "source it can take", attrs=attrs)  # (an image with no source at all)
            return None
        if attrs.get("source", "base64") != "base64":
            source = attrs.get("source")
            self._lose_block(block, "image URLs" if source == "url" else f"{source} images", "not fetched", attrs=attrs)
            return None
        # (an early detail is recorded by _place's _check_attrs, a late one at the close: once)
        if attrs.get("in_result"):
            self._lose_block(block, "images in tool messages", "carried in a user message after the tool messages",
                             attrs=attrs)
            self._lose_is_error(block, attrs)
        msg = (attrs.get("in_result") and self._moved_images(block)) or self._message_for(block, role)
        if not msg.has_image:
            msg.asm.end_member("content")  # the text is complete: let the images stream
        msg.has_image = True
        w = msg.asm.member("images", b"[")
        w._separate()
        w.write(b'"')
        head = bytearray()  # the first base64 characters: do they show the declared type?

        def write(data: bytes) -> None:
            keep_head(head, data)
            w.write(data)

        def close(late: dict) -> None:
            w.write(b'"')
            if late:  # e.g. openai's detail after the url
                self._check_attrs(block, late_only(attrs, late))
                self._lose_is_error(block, late_only(attrs, late))
            declared = {**attrs, **late}.get("media_type", _UNNAMED)
            shown = sniff_media_type(bytes(head)) or _UNNAMED
            named = type_named(declared)
            # ("image/jpg" of JPEG bytes: nothing lost; nor a label that names no type --
            # application/octet-stream, what a browser gives a file it does not know)
            if named != shown and named not in UNNAMED_TYPES:
                self._lose(block, f"media type {declared!r} of {article(self._subject(block, attrs))} "
                                  f"{self._subject(block, attrs)}", "media type field",
                           f"the bytes show {shown!r}")
        return write, close

    def _tool_call(self, block: Block, attrs: dict, role: str):
        msg = self._message_for(block, role)
        self._calls_at = block.message
        w = msg.asm.member("tool_calls", b"[")
        w._separate()
        # the id first (Go's order) when the source gave it first; name (and the
        # rest) after the arguments whether they came early or late, so the output
        # bytes do not depend on how the input was cut.
        call_id = _carried_id(attrs.get("id"))
        w.write(b'{"id":' + dumps(call_id) + b',"function":{' if call_id is not None else b'{"function":{')
        args = self._arguments(w) if not attrs.get("ollama_no_arguments") else None
        if args is not None:
            w.write(b'"arguments":')

        def write(data: bytes) -> None:
            if args is not None:
                args.feed(data)

        def close(late: dict) -> None:
            if isinstance(args, HeldArguments):
                data, faithful = args.result()
                if not faithful:
                    self._lose_raw_arguments(block)
                w.write(data)
            elif args is not None:
                args.close()
            merged = {**attrs, **late}
            tail = b""
            members = []
            if "name" in merged:
                members.append(b'"name":' + dumps(merged["name"]))
                if merged.get("id") is not None:
                    self._call_names[merged["id"]] = merged["name"]
            if "index" in merged:
                members.append(b'"index":' + dumps(merged["index"]))
            elif CALL_INDEX in merged and self.session.source == DIALECT:  # (another's says nothing)
                members.append(b'"index":' + dumps(merged[CALL_INDEX]))
            if _EXTRA_ATTR in merged:
                members.append(merged[_EXTRA_ATTR].encode())
            if members:
                tail += (b"," if args is not None else b"") + b",".join(members)
            tail += b"}"
            for key in ("ollama_call_type", "ollama_call_extra"):
                if key in merged:
                    tail += b"," + merged[key].encode()
            late_id = _carried_id(late.get("id"))
            if late_id is not None and late_id != call_id:  # an id after the arguments (sorted keys)
                tail += b',"id":' + dumps(late_id)
            w.write(tail + b"}")
            if late:
                self._check_attrs(block, late_only(attrs, late))
        return write, close

    def _unknown(self, block: Block, attrs: dict):
        msg = self._message_for(block, attrs["role"])
        if attrs.get("empty"):
            return (lambda data: None), (lambda late: None)
        w = msg.asm.member(attrs.get("key", "content"), b"")
        return w.write, (lambda late: None)

    def _tool_json(self, attrs: dict, schema: bytes) -> bytes:
        return controls.tool_from_canonical(attrs, schema, self.session)

    def _tool_element(self, key: str, raw: bytes) -> None:
        self.body.element(key, raw)


def _carried_id(call_id: Any) -> str | None:
    """A tool-call id the ollama output carries: any the source gave (the current
    API has ``id`` on calls, ``tool_call_id`` on results), not one the ollama
    decoder generated for a source without them."""
    if isinstance(call_id, str) and call_id and not call_id.startswith(GENERATED_ID_PREFIX):
        return call_id
    return None


class ArgumentsWriter:
    """Tool-call arguments: canonical escaped JSON-string text -> the JSON object ollama wants.

    Each fragment is unescaped on its own (fragments never split an escape) and
    checked by a push tokenizer as it goes, so text that is not a JSON object
    fails clearly instead of producing a broken body. Empty arguments are ``{}``.
    """

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write
        self.started = False
        self._first = True
        self._check = tok.Tokenizer(self._token, dialect=DIALECT)

    def _token(self, kind: int, value: Any, offset: int) -> None:
        if self._first:
            self._first = False
            if kind != tok.OBJECT_START:
                raise SchemaError("tool-call arguments are not a JSON object; ollama needs one",
                                  dialect=DIALECT)

    def feed(self, escaped: bytes) -> None:
        if not escaped:
            return
        data = unescape_json_text(escaped) if b"\\" in escaped else escaped
        if not self.started:
            data = data.lstrip()
            if not data:
                return
            self.started = True
        self._check.feed(data)
        self.write(data)

    def close(self) -> None:
        if not self.started:
            self.write(b"{}")
            return
        try:
            self._check.close()
        except TranscodeError as exc:
            raise SchemaError(f"tool-call arguments are not valid JSON: {exc.reason}", dialect=DIALECT) from None
