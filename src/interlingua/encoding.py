"""The shared machinery of dialect encoders.

An encoder is a sink of canonical events that writes the target's bytes as
soon as the target's order allows. What it must hold back goes into the
session's reorder buffer (``Hold``), never into an ad-hoc list.

``MessageAssembler`` writes one target message object whose members are fed
by blocks in whatever order they come: the first member streams straight to
the output; a block for another member is written into that member's hold,
and the held members are appended when the message closes. Member order in a
JSON object carries no meaning, so this is faithful and holds only what the
source put after the first member of the same message.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from . import json as tok
from .canonical import REQUEST_LEVEL, TOP_LEVEL_SYSTEM, Block, Control, Event, Extension, Section, unescape_json_text
from .errors import NoMessageError, TranscodeError
from .jsonwriter import JsonWriter, dumps, key_bytes
from .losses import (
    MESSAGE_CACHE_CONTROL, NO_PLACE, RESULT_CACHE_CONTROL, article, attr_says_nothing, block_path, block_subject,
    extras_said, field_path, field_subject, lacks, member_names, path_subject, raw_tool_member, unknown_role,
)
from .reorder import Hold
from .session import Session

Write = Callable[[bytes], None]

_CLOSERS = {b"[": b"]", b"{": b"}", b'"': b'"', b"": b""}
_CONTAINERS = (b"[", b"{")
_NONE_ENDED: frozenset = frozenset()  # shared until a message ends a member early
_SENT_IN = {"user": "sent in a user message", "assistant": "sent in an assistant message"}  # (_lose_moved)


class TextCallOrder:
    """A target whose message has its text and its tool calls in two members (openai's and
    ollama's ``content`` and ``tool_calls``) keeps their order by the members' order, so a
    third run of them in one message (anthropic ``[text, tool_use, text]``) goes with the first
    run of its kind, before the other: ``moved`` says so once per message (the section of the
    run it was after), and the encoder records it (it was lost unrecorded)."""

    __slots__ = ("message", "last", "runs")

    def __init__(self) -> None:
        self.message: int | None = None
        self.last: Section | None = None
        self.runs = 0

    def moved(self, block: Block) -> Section | None:
        if block.section is not Section.ASSISTANT_TEXT and block.section is not Section.TOOL_CALL:
            return None
        if block.message != self.message:
            self.message, self.last, self.runs = block.message, block.section, 1
            return None
        if block.section is self.last:
            return None
        before, self.last = self.last, block.section
        self.runs += 1
        return before if self.runs == 3 else None


#: what a target makes of a request without a message (``require_a_message``)
_NO_MESSAGE = "takes no request without a message"
_NO_MESSAGE_MEANS = {"ollama": "reads a request without a message as loading the model, not as a question"}


#: the most bytes of blank text a deferred first fragment gathers (``Encoder._on_block``);
#: a longer blank text is placed as it came (a bound on what waits, the same at every cut)
BLANK_HELD = 4096
#: the whitespace ``blank`` counts, as text and as the letters of its escapes (``\\n``...)
BLANK_CHARACTERS = " \n\t\r"
_BLANK_ESCAPE_LETTERS = b"ntr"


def blank(payload: bytes) -> bool:
    """Whether escaped JSON string text is empty or whitespace only: spaces and the escapes
    ``\\n``, ``\\t``, ``\\r`` (a fragment never ends inside an escape). Other spaces
    (``\\u0020``, U+00A0) count as text: which of them an API refuses is not said."""
    at = 0
    while at < len(payload):
        if payload[at] == 0x20:  # " "
            at += 1
        elif payload[at] == 0x5C and at + 1 < len(payload) and payload[at + 1] in _BLANK_ESCAPE_LETTERS:  # "\\n"
            at += 2
        else:
            return False
    return True


def held_blank(payload: bytes) -> bool:
    """``blank``, and short enough to be held whole (``BLANK_HELD``): what waits, and what a
    dialect may then leave out, is decided by this one test."""
    return len(payload) <= BLANK_HELD and blank(payload)


def blank_tail(payload: bytes) -> int | None:
    """Where the blank run that ends escaped JSON string text begins (``blank``'s characters;
    ``len(payload)``: it ends in none), or None when the run is longer than ``BLANK_HELD``
    (too long to hold). Read from the end, so a long text costs its run only: a ``\\n``
    there is an escape when the backslashes before it are even in number (``\\\\n`` is a
    backslash and an ``n``)."""
    at = len(payload)
    while at:
        if payload[at - 1] == 0x20:
            at -= 1
        elif at >= 2 and payload[at - 2] == 0x5C and payload[at - 1] in _BLANK_ESCAPE_LETTERS:
            before = at - 2
            while before and payload[before - 1] == 0x5C:
                before -= 1
            if (at - 2 - before) % 2:  # (the backslash is escaped: a text character follows it)
                break
            at -= 2
        else:
            break
        if len(payload) - at > BLANK_HELD:
            return None
    return at


def blank_text(text: str) -> bool:
    """``blank`` of decoded text (a control's string): empty or ``BLANK_CHARACTERS`` only."""
    return not text.strip(BLANK_CHARACTERS)


class Encoder:
    """Base of every dialect encoder."""

    dialect = "?"

    def __init__(self, write: Write, session: Session) -> None:
        self.write = write
        self.session = session
        #: the names (the source's) of the tools sent: a tool choice names one of them
        self.tools_sent: set[str] = set()

    def on_event(self, event: Event) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """The source ended without an ``End`` event (an error was raised upstream)."""

    def require_a_message(self, carried: bool) -> None:
        """At a request's end: ``NoMessageError`` when the source listed messages and none was
        ``carried`` into the target's list (``errors.NoMessageError``). openai and anthropic
        take no request without a message; ollama takes one as "load the model", which is not
        what a source that listed messages asked for."""
        if self._listed and not carried:
            raise NoMessageError(f"{self.dialect} {_NO_MESSAGE_MEANS.get(self.dialect, _NO_MESSAGE)}, and none of the "
                                 f"source's messages is left for its list (see the losses)",
                                 dialect=self.session.source, path="$.messages")

    # -- blocks (request encoders) ---------------------------------------------
    #
    # A block's first fragment is placed by ``_place(block)``, which opens what
    # it needs in the output and returns ``(write, close)``: ``write(payload)``
    # for every fragment, ``close(late_attrs)`` after the last. None means the
    # block is not carried (the loss is recorded by ``_place``).
    #
    # A first fragment that is blank (empty, or whitespace only: ``blank``) and not the last
    # (a decoder's block whose late attributes ride on a last fragment of their own:
    # ``BlockBuilder.close``; a text cut by the chunks) waits when ``_defers`` says its placing
    # depends on what comes: blank fragments join it (at most ``BLANK_HELD`` bytes); the
    # first other fragment places it as it came, with what joined it; if the last is blank
    # too, the block is placed whole, every attribute with it (an empty or whitespace-only
    # text anthropic does not write). So the placing reads the same however the text is cut.

    _block = None  # (write, close) of the block in progress
    _deferred: Block | None = None  # a first fragment whose placing waits (``_defers``)
    #: a target whose message has text and tool calls in two members (``TextCallOrder``)
    _text_call_order: TextCallOrder | None = None
    _listed = False  # a block of the source's message list came (``require_a_message``)

    def _defers(self, block: Block) -> bool:
        """Whether an empty first fragment's placing waits for the next fragment."""
        return False

    def _on_block(self, block: Block) -> None:
        if not block.init:
            first = self._deferred
            if first is not None:
                self._deferred = None
                payload = first.payload + block.payload
                if held_blank(payload):  # (the first was blank: the joined text is, when this is)
                    if block.fin:  # it stayed blank: one whole block
                        self._on_block(Block(first.section, first.message, payload, True, True,
                                             {**(first.attrs or {}), **(block.attrs or {})} or None))
                    else:
                        self._deferred = Block(first.section, first.message, payload, True, False, first.attrs)
                    return
                self._on_block(Block(first.section, first.message, payload, True, False, first.attrs))
                block = Block(block.section, block.message, b"", False, block.fin, block.attrs)
            if self._block is not None:
                write, close = self._block
                write(block.payload)
                if block.fin:
                    self._block = None
                    self.session.release_losses()
                    close(block.attrs or {})
            return
        if self._deferred is not None:  # (no last fragment came for it: placed as it came)
            first, self._deferred = self._deferred, None
            self._on_block(first)
        if not block.fin and self._defers(block) and held_blank(block.payload):
            self._deferred = block
            return
        if block.message == REQUEST_LEVEL:
            self._tool_definition(block)
            return
        if block.message >= 0:
            self._listed = True
        if self._text_call_order is not None:
            self._lose_text_call_order(block)
        if block.fin:
            placed = self._place(block)
        else:  # its losses are recorded at its last fragment (``Session.hold_losses``)
            self.session.hold_losses()
            try:
                placed = self._place(block)
            finally:
                self.session.hold_losses(False)
        if placed is None:
            self._block = (ignore, self._riding_lost(block)) if not block.fin else None
            return
        write, close = placed
        write(block.payload)
        if block.fin:
            close({})
        else:
            self._block = (write, close)

    def _place(self, block: Block):
        raise NotImplementedError

    # -- loss records (wording: interlingua.losses) -------------------------------

    def _where(self, block: Block) -> str:
        """The source path of the message (request) or response choice a block came from."""
        return block_path(self.session.source, self.session.kind, block.message)

    def _tool_name(self, block: Block) -> str:
        """A response's tool-call name: the source's; a missing or empty one as the request
        side writes it (``Session.tool_name_out``: ``_`` + a hash into openai and anthropic,
        whose names need a character; recorded at the source's tool call: the name member
        may not exist)."""
        name = (block.attrs or {}).get("name")
        if name:
            return name
        return self.session.tool_name_out(name, self._path(block))

    def _path(self, block: Block) -> str:
        """Where a block was in the source: its ``path`` attribute (response decoders give
        the block's field, ``$.content[2].thinking``), else ``_where``."""
        attrs = block.attrs
        if attrs and "path" in attrs:
            return attrs["path"]
        return self._where(block)

    def _subject(self, block: Block, attrs: dict | None = None) -> str:
        """What the source dialect calls the block (attrs: the first fragment's)."""
        return block_subject(self.session.source, block.section, block.attrs if attrs is None else attrs,
                             block.payload)

    def _lose(self, block: Block, subject: str, what: str, done: str | None = None, path: str | None = None) -> None:
        self.session.lose(path or self._path(block), lacks(subject, self.dialect, what, done))

    def _lose_block(self, block: Block, what: str, done: str | None = None, attrs: dict | None = None) -> None:
        """The block (or something about it) is not carried: ``<block>: <target> has no <what>``."""
        self._lose(block, self._subject(block, attrs), what, done)

    def _lose_moved(self, block: Block, attrs: dict, role: str) -> None:
        """A block sent in a ``role`` message whose source message had another role
        (attr ``role``: ollama takes ``images`` and ``tool_calls`` on any message): its
        place is lost."""
        source_role = attrs.get("role")
        if isinstance(source_role, str) and source_role != role:
            self._lose_block(block, f"place for it in its {source_role} message", _SENT_IN[role], attrs=attrs)

    def _other_choice(self, block: Block) -> bool:
        """A block of another choice than the first (openai ``n > 1``) into a target with one
        answer: recorded at its first fragment, not carried. It is checked before anything of
        the open block is touched: a stream interleaves the choices' deltas, and the first
        choice's block goes on after it (it was cut, or crashed the encoder)."""
        if block.message == 0:
            return False
        if block.init:
            self._lose_block(block, "choices (n > 1)", "only the first choice is sent")
        return True

    def _lose_unplaced(self, block: Block) -> None:
        """A block the target has no place for at all (server tools, audio, unknown content).
        A message of a role the source knows and the target does not is one loss, however
        many parts it has."""
        if block.section is Section.UNKNOWN and unknown_role(self.session.source, block.attrs):
            if block.message == self._lost_message:
                return
            self._lost_message = block.message
            self._lose_block(block, NO_PLACE[block.section], "the message is not sent")
            return
        self._lose_block(block, NO_PLACE.get(block.section, "such content"))

    _lost_message: int | None = None  # the source message of an unknown role last lost whole

    def _lose_field(self, block: Block, key: str, attrs: dict | None = None, done: str | None = None,
                    what: str = "field for it") -> None:
        """A block attribute the target has no member for (``cache_control`` of a text block; or,
        ``what``, no more of), at the field's own path where the block has one (``$.content[0].signature``). A null
        one is nothing lost (``citations: null``, as a response's ``model_dump()`` has it), nor
        one at its default (``citations: []``, ``losses.attr_says_nothing``), nor an extras
        member that says nothing (``losses.extras_said``)."""
        attrs = block.attrs if attrs is None else attrs
        if attrs and key in attrs:
            if attrs[key] is None or attr_says_nothing(key, attrs[key]):
                return
            attrs = extras_said(key, attrs)  # (extras members that say nothing: none is lost)
            if attrs is None:
                return
        path = (attrs or {}).get("path") or (block.attrs or {}).get("path")
        if key == MESSAGE_CACHE_CONTROL:  # (named by its message's role: the block's first attributes)
            attrs = {**(block.attrs or {}), **(attrs or {})}
        self._lose(block, field_subject(self.session.source, key, block.section, attrs), what, done,
                   field_path(path, key) if path else None)

    def _drops_typed_call(self, block: Block, attrs: dict) -> bool:
        """Whether ``block`` is an openai tool call of a type other than function (a custom
        tool's free-form call), or a result answering one, going to a target that has no such
        tools (their definitions are lost as ``custom tool``): not sent, one loss per call and
        per result. Carried, the call would name a tool the target was never given, and a
        result without its call is one the API rejects."""
        kind = attrs.get("type")
        if block.section is Section.TOOL_CALL and isinstance(kind, str) and self.session.source != self.dialect:
            self._lose(block, f"{kind} tool call", "such tool", "not sent, nor its result")
            return True
        if block.section is Section.TOOL_RESULT and "call_type" in attrs:
            if not attrs.get("in_result"):
                self._lose(block, f"{self._subject(block, attrs)} answering a {attrs['call_type']} tool call",
                           "such tool", "not sent")
            return True
        return False

    _fields_written: set | None = None  # (choice, field) a response block went into

    def _lose_joined(self, block: Block, key: str) -> None:
        """A response's second block into the one field ``key`` of its choice (openai's and
        ollama's content, reasoning): joined to the first, a recorded loss -- in a stream too,
        whose client concatenates the deltas. Only anthropic's content is a list of blocks:
        another source's text is one field there too (its stream's pieces split by a tool call
        are not two blocks)."""
        if self.session.source != "anthropic":
            return
        if self._fields_written is None:
            self._fields_written = set()
        if (block.message, key) in self._fields_written:
            self._lose_block(block, "second field for it", "joined to the first")
        else:
            self._fields_written.add((block.message, key))

    def _lose_text_call_order(self, block: Block) -> None:
        before = self._text_call_order.moved(block)
        if before is not None:
            other = block_subject(self.session.source, before)
            self._lose(block, f"{self._subject(block)} after {article(other)} {other}", "order of text and tool calls",
                       "moved before it")

    def _riding_lost(self, block: Block):
        """The close of a block not placed: the members of its tool_result that came after the
        block began ride on it (anthropic ``is_error``, ``cache_control``), and are the result's
        losses, not the block's (they were dropped unrecorded)."""
        def close(late: dict) -> None:
            self._lose_is_error(block, late)
            for key in (RESULT_CACHE_CONTROL, MESSAGE_CACHE_CONTROL):
                if late.get(key) is not None:
                    self._lose_field(block, key, late)
        return close

    def _lose_is_error(self, block: Block, attrs: dict) -> None:
        """A result's error flag (anthropic ``is_error``; after the content it rides on the
        result's last block, an image too): the target has no field for it. Named as the
        tool_result's, whichever block brought it."""
        if attrs.get("is_error"):
            self._lose(block, field_subject(self.session.source, "is_error", Section.TOOL_RESULT), "field for it")

    def _lose_raw_arguments(self, block: Block) -> None:
        """Tool-call arguments that are not a JSON object, for a target whose arguments are one
        (``HeldArguments``)."""
        self._lose(block, f"arguments of a {self._subject(block)} that are not a JSON object", self._ARGS_LACK,
                   'carried as {"_raw_arguments": "<the text>"}')

    _ARGS_LACK = "tool arguments other than a JSON object"

    def _arguments_object(self, args: "HeldArguments", block: Block) -> bytes:
        """The JSON object a call's held arguments become (``HeldArguments``), the loss recorded."""
        data, faithful = args.result()
        if not faithful:
            self._lose_raw_arguments(block)
        return data

    def _lose_signature(self, block: Block, attrs: dict) -> None:
        """A reasoning block's signature, for a target with no field for it. Sources
        may send it after the text (anthropic does), so encoders check the first
        fragment's attributes and the last's (late attributes)."""
        if block.section is Section.ASSISTANT_REASONING and attrs.get("signature"):
            self._lose_field(block, "signature", attrs, "the thinking cannot be replayed")

    def _tool_definition(self, block: Block) -> None:
        """A tool definition (or a tool of this dialect carried raw) -> an element of the tools array."""
        attrs = block.attrs or {}
        if block.section is Section.UNKNOWN and attrs.get("dialect") == self.dialect:
            self._tool_element("tools", block.payload)
            self.tools_sent.add(raw_tool_member(block.payload, "name"))
        elif block.section is Section.UNKNOWN:
            kind = raw_tool_member(block.payload, "type")
            self.session.lose("$.tools", lacks(f"{kind} tool" if kind else "tools entry", self.dialect,
                                               "such tool"))
        elif block.section is not Section.TOOL_DEFINITION:
            self._lose_block(block, "place for it among the tools")
        elif not block.fin:  # decoders read a definition whole (bounded); never in fragments
            raise TranscodeError("tool definition in fragments", dialect=self.dialect)
        else:
            self._tool_element(self._tools_key(attrs), self._tool_json(attrs, block.payload))
            self.tools_sent.add(attrs.get("name"))

    def _tools_key(self, attrs: dict) -> str:
        return "tools"

    def _tool_json(self, attrs: dict, schema: bytes) -> bytes:
        """The dialect's tool object for a canonical definition (its controls module)."""
        raise NotImplementedError

    def _tool_element(self, key: str, raw: bytes) -> None:
        """Write ``raw`` as an element of the top-level array ``key``."""
        raise NotImplementedError

    def foreign_extension(self, ext: Extension) -> None:
        """An extension of another dialect: lossless ones vanish, others are recorded losses."""
        if not ext.lossless:
            self.session.lose(ext.path, lacks(path_subject(ext.path), self.dialect,
                                              foreign_field(ext, self.dialect, self.session.kind)),
                              dialect=ext.dialect)


def foreign_field(ext: Extension, target: str, kind: str) -> str:
    """What the target lacks of another dialect's field: "such field"; a request's top-level field
    that the target has under the same name -- LiteLLM's ``thinking`` (anthropic's value) in an
    openai body, a ``system`` member there -- is not its field either, and the reason says so
    (was "anthropic has no such field": it has one)."""
    from .dialects.fields import REQUEST_FIELDS  # (the dialects import this module)
    name = ext.path[2:] if ext.message is None and ext.path.startswith("$.") else None
    if kind == "request" and name in REQUEST_FIELDS.get(target, {}):
        return f"such field of {ext.dialect}'s (its own {name} is not read from another dialect's body)"
    return "such field"


def choice_fate(choice: Any, tools_sent: set) -> tuple[bool, str | None]:
    """Whether a tool choice (canonical; None for ``parallel_tool_calls``) goes to a target, and
    the loss to record when it does not. It has no tool to choose when none is sent (the
    source's tools were all lost) or not the one it names, and the APIs refuse it then ("tool_choice
    is only allowed when tools are specified"): a forced or named choice is a loss; ``auto``,
    ``none`` and ``parallel_tool_calls`` with no tool say nothing."""
    kind = choice.get("type") if isinstance(choice, dict) else None
    if not tools_sent:
        return False, "tool to choose (no tool is sent)" if kind in ("required", "tool") else None
    if kind == "tool" and choice.get("name") not in tools_sent:
        return False, "tool to choose (the one it names is not sent)"
    return True, None


class HeldArguments:
    """Tool-call arguments of another dialect (canonical escaped text), held until they
    are known to be a JSON object, for a target that carries arguments as an object
    (anthropic ``input``, ollama ``arguments``).

    Outcome (documented): a JSON object is written as it is; empty text becomes
    ``{}``; anything else (invalid JSON -- a call cut off at ``max_tokens`` --, or
    JSON that is not an object) becomes ``{"_raw_arguments": "<the text>"}``, and
    the encoder records the loss. One call is held at a time (rule ``reason``).
    """

    def __init__(self, session: Session, reason: str) -> None:
        self.hold = session.reorder.hold(reason)
        self.first: int | None = None
        self.bad = False
        self.tokenizer = tok.Tokenizer(self._token, max_depth=session.options.max_depth)

    def _token(self, kind: int, value: Any, offset: int) -> None:
        if self.first is None:
            self.first = kind

    def feed(self, escaped: bytes) -> None:
        data = unescape_json_text(escaped)
        self.hold.write(data)
        if not self.bad:
            try:
                self.tokenizer.feed(data)
            except TranscodeError:  # not JSON, a duplicate key, too deep: not one object
                self.bad = True

    def result(self) -> tuple[bytes, bool]:
        """(the object's JSON, whether it is faithful)."""
        text = self.hold.take_bytes()
        if not text.strip():
            return b"{}", True
        if not self.bad:
            try:
                self.tokenizer.close()
            except TranscodeError:
                self.bad = True
        if not self.bad and self.first == tok.OBJECT_START:
            return text, True
        return b'{"_raw_arguments":' + dumps(text.decode("utf-8")) + b"}", False


def merged_reasoning(items: list[Control], target: str, session) -> Control:
    """One ``reasoning`` control from several: a source may say it in two fields
    (anthropic ``thinking`` and ``output_config.effort``). Their values merge; each
    target's mapping then decides (an effort wins over a budget). The merged control is
    named by the last one's key; ``at`` names, for each member, the key of the field it came
    from, so that a loss about it is recorded at that field (``reasoning_place``): they were
    recorded at the last one's (a budget at ``$.output_config``, anthropic's
    ``thinking.display`` at ``$.output_config.display``). A member two fields set differently
    (openai ``reasoning_effort`` and OpenRouter's ``reasoning.effort``) is the later one's, the
    earlier recorded (``lose_overridden``)."""
    lose_overridden(items, target, session)
    merged: dict = {}
    at: dict = {}
    for control in items:
        if isinstance(control.value, dict):
            merged.update(control.value)
            at.update(dict.fromkeys(control.value, control.key))
    merged["at"] = at
    return Control("reasoning", merged, dialect=items[-1].dialect, key=items[-1].key)


def lose_overridden(items: list[Control], target: str, session) -> None:
    """Each member of a reasoning field that a later field sets too, to another value (openai
    ``reasoning_effort`` and OpenRouter's ``reasoning.effort``): the later one is sent, this one
    recorded at its own field; an earlier field's uncarried members are recorded as its own (the
    merged value keeps the later field's)."""
    for i, control in enumerate(items):
        if not isinstance(control.value, dict):
            continue
        for member, value in control.value.items():
            later = [c.value[member] for c in items[i + 1:] if isinstance(c.value, dict) and member in c.value]
            if not later:
                continue
            if member == "uncarried":
                lose_uncarried(control, target, session)
            elif dumps(later[-1]) != dumps(value):
                where = reasoning_place(control.value, member, control.place)
                session.lose(where, lacks(path_subject(where), target, f"second {member} for the reasoning ({value!r})",
                                          "the later field's is sent"), dialect=control.dialect)


#: the member of its source field a canonical reasoning member is, where the field is an
#: object: anthropic's thinking and output_config, OpenRouter's reasoning
_REASONING_MEMBERS = {("$.thinking", "budget_tokens"): "budget_tokens", ("$.output_config", "effort"): "effort",
                      ("$.reasoning", "budget_tokens"): "max_tokens", ("$.reasoning", "effort"): "effort",
                      ("$.reasoning", "enabled"): "enabled"}


def reasoning_place(value: Any, member: str, where: str) -> str:
    """Where ``member`` of a reasoning value was in the source. ``where``: the control's place
    (its field, ``$.reasoning_effort``; a merged one's is its last field's, and its ``at`` names
    the field each member came from). A member of an object field is its own path there:
    ``$.thinking.budget_tokens``, ``$.output_config.effort``, ``$.reasoning.max_tokens``."""
    at = value.get("at") if isinstance(value, dict) else None
    if isinstance(at, dict) and at.get(member) is not None:
        where = f"$.{at[member]}"
    own = _REASONING_MEMBERS.get((where, member))
    return f"{where}.{own}" if own else where


_EMPTY_OBJECT_SCHEMA = b'{"type":"object","properties":{}}'


#: schema keywords whose value is a schema, a list of schemas or a map of them (JSON Schema
#: 2020-12 and draft 7; ``defs`` is the ollama client's ``model_dump()`` name for ``$defs``)
_SUBSCHEMA = frozenset({"items", "additionalItems", "additionalProperties", "not", "if", "then", "else",
                        "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"})
_SUBSCHEMA_LISTS = frozenset({"items", "anyOf", "oneOf", "allOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "defs"})
#: keywords whose null is a value (the instance must be null, or defaults to it)
_NULL_IS_A_VALUE = frozenset({"const", "default"})


def without_null_keywords(schema: Any) -> Any:
    """``schema`` without its keywords whose value is null, in it and in every schema it
    holds: a ``model_dump()`` of a typed tool writes every keyword it left unset as null (the
    ollama client's ``Tool``: ``"enum": null``, ``"items": null``, ``"required": null``),
    which says what absence says, and openai and anthropic refuse the schema for it ("None
    is not of type 'array'"). ``const`` and ``default`` keep a null (it is the value), and
    values that are data (``enum``'s, ``examples``) are not looked into."""
    if not isinstance(schema, dict):
        return schema
    return {key: _subschemas(key, value) for key, value in schema.items()
            if value is not None or key in _NULL_IS_A_VALUE}


def _subschemas(key: str, value: Any) -> Any:
    """A keyword's value, null keywords gone from the schemas it holds."""
    if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
        return {name: without_null_keywords(v) for name, v in value.items()}
    if key in _SUBSCHEMA_LISTS and isinstance(value, list):
        return [without_null_keywords(v) for v in value]
    if key in _SUBSCHEMA:
        return without_null_keywords(value)
    return value


def object_schema(schema_raw: bytes, session: Session, name: object) -> bytes:
    """A tool's parameter schema as openai and anthropic take it: a JSON Schema of type
    object (both reject any other), without null keywords (``without_null_keywords``: no
    loss). Another dialect's schema without ``type`` (ollama takes one) gets
    ``"type":"object"`` -- what it can only mean -- with no loss; one of another type, or
    not an object, is replaced by an empty object schema (recorded). Tool definitions are
    read whole (bounded by ``max_value_bytes``), so this parses."""
    read = json.loads(schema_raw)
    schema = without_null_keywords(read)
    if schema != read:
        schema_raw = dumps(schema)
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema_raw
    if isinstance(schema, dict) and "type" not in schema:
        return b'{"type":"object"' + (b"," + schema_raw[1:] if len(schema) else b"}")
    session.lose("$.tools", lacks(f"parameters of tool {name!r}, not an object schema", session.target,
                                  "tool parameters other than an object schema", "an empty object schema is written"))
    return _EMPTY_OBJECT_SCHEMA




def message_member(ext: Extension) -> str:
    """The member of a message an extension names: its path after ``$.messages[<i>].``,
    whole -- a key may hold ``.`` (``{"a.b": 1}`` is member ``a.b``, not ``b``): the path is
    never split. Another path (an event producer's own): its last segment."""
    prefix = f"$.messages[{ext.message}]."
    if ext.path.startswith(prefix):
        return ext.path[len(prefix):]
    return ext.path.rsplit(".", 1)[1]


def late_only(attrs: dict, late: dict) -> dict:
    """The late attributes of a block that were not among its first fragment's: an encoder
    that records the losses of the early ones when the block opens records only these at
    its close. (A decoder may set a key early and again late -- kept members' text grows
    with each one -- and a field is one loss; but kept members whose early ones said nothing,
    ``losses.extras_said``, are recorded at the close, or the late ones would go unrecorded.)"""
    if not late:
        return late
    return {k: v for k, v in late.items() if k not in attrs or (v != attrs[k] and extras_said(k, attrs) is None)}


def ignore(_) -> None:
    """A write or close with nothing to do (shared: no closure made per block)."""


class _Member:
    __slots__ = ("writer", "hold", "opener")

    def __init__(self, writer: JsonWriter, hold: Hold | None, opener: bytes) -> None:
        self.writer = writer
        self.hold = hold
        self.opener = opener


def first_member(key: str, opener: bytes) -> tuple[str, bytes, bytes]:
    """The ``first`` of a ``MessageAssembler``: key, opener and their JSON text
    (``"content":"``); encoders make the ones they use once."""
    return key, opener, key_bytes(key) + b":" + opener


#: the usual first members: a string content, a content-part list
STRING_CONTENT = first_member("content", b'"')
PARTS_CONTENT = first_member("content", b"[")


class MessageAssembler:
    """One target message object being written; see the module docstring."""

    __slots__ = ("out", "session", "reason", "_members", "_streaming", "_ended", "_late_scalars", "_held")

    def __init__(self, out: JsonWriter, session: Session, reason: str, head: bytes = b"",
                 first: tuple[str, bytes, bytes] | None = None) -> None:
        """``head``: the first members as JSON text (``"role":"user"``), written with the brace.

        ``first``: the member that streams first (``first_member``), when the
        encoder knows it already: opened with the brace, in the same write (one
        write per message less; a message's writes may each go into a hold)."""
        self.out = out
        self.session = session
        self.reason = reason
        self._ended: set[str] = _NONE_ENDED  # members closed early (end_member)
        self._late_scalars: Hold | None = None
        self._held = False  # a member is written into a hold (close appends it)
        if first is None:
            self._members: dict[str, _Member] = {}
            self._streaming: _Member | None = None
            out.begin_object(head)
            return
        key, opener, opening = first
        self._streaming = _Member(out, None, opener)
        self._members = {key: self._streaming}
        out.begin_object(head + b"," + opening if head else opening)
        if opener in _CONTAINERS:
            out._first.append(True)

    def scalar(self, key: str, value: bytes) -> None:
        """A small member written whole (role, an id): now, or at close if a member is mid-stream."""
        if self._streaming is None:
            self.out.raw_member(key, value)
            return
        if self._late_scalars is None:
            self._late_scalars = self.session.reorder.hold(self.reason)
        self._late_scalars.append((key, value), len(key) + len(value))

    def trailing(self, key: str, value: bytes) -> None:
        """A small member written when the message closes, whatever else is streaming:
        its place then does not depend on how the input was cut."""
        if self._late_scalars is None:
            self._late_scalars = self.session.reorder.hold(self.reason)
        self._late_scalars.append((key, value), len(key) + len(value))

    def member(self, key: str, opener: bytes) -> JsonWriter:
        """The writer for member ``key`` (``opener`` is ``[``, ``{`` or ``"``), opened on first use.

        Arrays and objects: write elements/members with the writer's methods.
        Strings: write escaped fragments with ``writer.write``.
        """
        if key in self._ended:
            raise RuntimeError(f"member {key!r} was ended; the encoder must not write to it again")
        member = self._members.get(key)
        if member is None:
            if self._streaming is None:
                if opener in _CONTAINERS:
                    self.out.open_member(key, opener)
                else:  # a string (fragments follow) or a raw value
                    self.out.string_member_open(key) if opener else self.out.raw_member(key, b"")
                member = self._streaming = _Member(self.out, None, opener)
            else:
                hold = self.session.reorder.hold(self.reason)
                writer = JsonWriter(hold.write)
                if opener in _CONTAINERS:
                    writer._first.append(True)
                member = _Member(writer, hold, opener)
                self._held = True
            self._members[key] = member
        return member.writer

    def has(self, key: str) -> bool:
        return key in self._members

    def ended(self, key: str) -> bool:
        return key in self._ended

    def end_member(self, key: str) -> None:
        """No more data goes to ``key``: if it is the streaming member, close it
        now, so that the next member streams instead of being held."""
        member = self._members.get(key)
        if member is None or member is not self._streaming:
            return
        if member.opener in _CONTAINERS:
            self.out._first.pop()
        self.out.write(_CLOSERS[member.opener])
        self._streaming = None
        if self._ended is _NONE_ENDED:
            self._ended = set()
        self._ended.add(key)

    def close(self) -> None:
        """The rest of the object -- the streaming member's closer, the held members,
        the brace -- written in one piece."""
        out = self.out
        closer = b""
        if self._streaming is not None:
            opener = self._streaming.opener
            if opener in _CONTAINERS:
                out._first.pop()
            closer = _CLOSERS[opener]
        if not self._held and self._late_scalars is None:  # the common case: nothing held
            out._first.pop()
            out.write(closer + b"}")
            return
        tail = [closer]
        for key, member in self._members.items():
            if member.hold is not None:
                tail += (out._sep(), key_bytes(key), b":", member.opener, member.hold.take_bytes(),
                         _CLOSERS[member.opener])
        if self._late_scalars is not None:
            for key, value in self._late_scalars.drain():
                tail += (out._sep(), key_bytes(key), b":", value)
        out._first.pop()
        tail.append(b"}")
        out.write(b"".join(tail))


class MessageListBody:
    """The top level of a request body whose system prompt is a message of the
    list (openai, ollama), written as events come.

    * One top-level array is open at a time (``messages``, ``tools``); writing
      any other member closes it.
    * System first: until ``SystemEnd`` (anthropic writes ``system`` after
      ``messages``), conversation messages go into a hold
      (``<dialect>:messages-before-system``); top-level system messages open the
      list and the held ones follow.
    * A top-level system that opened the list before other fields came (an
      anthropic body with ``system`` first): those fields wait
      (``<dialect>:fields-inside-messages``) until the list is complete, since
      closing it would make a second ``messages`` key.

    ``close_message`` is the encoder's: it closes the message being written.
    """

    def __init__(self, out: JsonWriter, session: Session, dialect: str,
                 close_message: Callable[[], None]) -> None:
        self.out = out
        self.session = session
        self.dialect = dialect
        self._close_message = close_message
        self.top: str | None = None  # the top-level array open on ``out``
        self.messages_opened = False
        self.system_final = False
        self.messages_ended = False
        self._pending: Hold | None = None  # messages written before SystemEnd
        self._pending_writer: JsonWriter | None = None
        self._later = session.reorder.hold(f"{dialect}:fields-inside-messages")
        out.begin_object()

    # -- top-level members ----------------------------------------------------

    def open_array(self, name: str) -> None:
        if self.top == name:
            return
        self.close_array()
        self.out.open_member(name, b"[")
        self.top = name
        self.messages_opened |= name == "messages"

    def close_array(self) -> None:
        if self.top is not None:
            if self.top == "messages":
                self._close_message()
            self.out.end_array()
            self.top = None

    def _list_unfinished(self) -> bool:
        return self.top == "messages" and not self.messages_ended

    def member(self, key: str, raw: bytes) -> None:
        """A top-level member written whole."""
        if self._list_unfinished():
            self._later.append(("member", key, raw), len(key) + len(raw))
            return
        self.close_array()
        self.out.raw_member(key, raw)

    def element(self, name: str, raw: bytes) -> None:
        """An element of the top-level array ``name`` (tools, functions)."""
        if self._list_unfinished():
            self._later.append(("element", name, raw), len(name) + len(raw))
            return
        self.open_array(name)
        self.out.raw_element(raw)

    # -- the message list ---------------------------------------------------------

    def messages_writer(self, system: bool = False) -> JsonWriter:
        """Where the next message goes: the list on the output, or the hold of
        messages that wait for the system prompt."""
        if system or self.system_final:
            self.open_array("messages")
            return self.out
        if self._pending is None:
            self._pending = self.session.reorder.hold(f"{self.dialect}:messages-before-system")
            self._pending_writer = JsonWriter(self._pending.write)
            self._pending_writer._first.append(True)  # its elements sit inside the list
        return self._pending_writer

    def _flush_pending(self) -> None:
        if self._pending is not None and self.system_final:
            self._close_message()  # a held message, or the last top-level system one
            if self._pending:
                self.open_array("messages")
                self.out.raw_element(self._pending.take_bytes())
            self._pending = None
            self._pending_writer = None

    def _flush_later(self) -> None:
        if self._later:
            for kind, key, raw in self._later.drain():
                (self.member if kind == "member" else self.element)(key, raw)

    # -- lifecycle ------------------------------------------------------------------

    def system_end(self) -> None:
        self.system_final = True
        self._flush_pending()
        if self.messages_ended:
            self._list_exists()

    def messages_end(self) -> None:
        self.messages_ended = True
        self._close_message()
        if self.system_final:
            self._flush_pending()
            self._list_exists()
        self._flush_later()

    def _list_exists(self) -> None:
        """The source had a message list: the output has one, even if nothing was
        carried into it (an empty list is still a list)."""
        if not self.messages_opened:
            self.open_array("messages")

    def end(self) -> None:
        """The source ended: everything held is written; trailing members may follow."""
        self.system_final = self.messages_ended = True
        self._close_message()
        self._flush_pending()
        self._flush_later()
        self.close_array()

    def finish(self) -> None:
        self.out.end_object()


def sets_no_reasoning(value: Any) -> bool:
    """Whether a canonical reasoning value holds only members no target carries (``uncarried``,
    and their places, ``at``): OpenRouter's ``{"exclude": true}`` alone. A target records those
    members, and no "such reasoning setting" for a setting that asks for no reasoning. (One
    that sets nothing at all -- ``{}``, nulls, ``exclude: false`` -- is no control:
    ``fields.sets_nothing``; a value that is no object is "such reasoning setting".)"""
    return isinstance(value, dict) and "uncarried" in value and set(value) <= {"uncarried", "at"}


def lose_uncarried(control: Control, target: str, session) -> None:
    """A loss for each source member of a reasoning setting its canonical value did not carry
    (anthropic ``thinking.display``), at its own path. Into anthropic (LiteLLM's ``thinking`` of
    an openai body) a member anthropic's thinking has is not its field either, and the reason
    says so, as ``foreign_field``'s does."""
    value = control.value
    at = value.get("at") if isinstance(value, dict) else None
    key = at["uncarried"] if isinstance(at, dict) and at.get("uncarried") is not None else control.key
    for member in value.get("uncarried", ()) if isinstance(value, dict) else ():
        where = f"$.{key}.{member}"
        what = "field for it"
        if target == "anthropic" and member in _ANTHROPIC_THINKING_MEMBERS:
            what = f"such field of {control.dialect}'s (its own {member} is not read from another dialect's body)"
        session.lose(where, lacks(path_subject(where), target, what), dialect=control.dialect)


#: the members of anthropic's ``thinking`` (``fields.MEMBER_FIELDS``)
_ANTHROPIC_THINKING_MEMBERS = ("type", "budget_tokens", "display")


def lose_unknown_members(control: Control, target: str, session) -> None:
    """A loss for each member of another dialect's control field that no target carries
    (``fields.KNOWN_MEMBERS``: anthropic ``metadata.session``), at its own path; read off the
    field's raw JSON, which the field's first control carries (a derived one has none)."""
    from .dialects.fields import unknown_members

    if control.raw is None or control.key is None or control.dialect is None:
        return
    for member in unknown_members(control.dialect, control.key, control.raw):
        where = f"$.{control.key}.{member}"
        session.lose(where, lacks(path_subject(where), target, "such field"), dialect=control.dialect)


#: a tool definition's attributes that keep its source members as JSON text
TOOL_EXTRAS = ("anthropic_extra", "openai_extra", "ollama_extra", "openai_tool_extra", "ollama_tool_extra")
#: a tool definition's attributes of members beside its function (an anthropic tool's are all)
TOOL_OWN = ("anthropic_extra", "openai_tool_extra", "ollama_tool_extra", "cache_control")


def lose_tool_attr(key: str, value: Any, attrs: dict, target: str, session) -> None:
    """A tool-definition attribute ``target`` has no field for: one loss per source member
    at its own path (``$.tools[0].defer_loading``, ``$.tools[1].function.strict``), named
    as the source names it -- an extras attribute holds several, its own name none. A null
    one is nothing lost (``"cache_control": null``)."""
    if value is None:
        return
    inner = "" if attrs.get("legacy") or key in TOOL_OWN or session.source == "anthropic" else "function."
    where = attrs.get("path")
    for name in member_names(value) if key in TOOL_EXTRAS else [key]:
        field = inner + name
        session.lose(f"{where}.{field}" if where else "$.tools", lacks(f"{field} of a tool", target, "field for it"))
