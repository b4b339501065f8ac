"""The canonical event stream: the pivot between every pair of dialects.

The unit is the *block*, not the dialect message (DESIGN §3). An Anthropic
user message holding ``[text, image, tool_result]`` becomes three blocks that
share one ``message`` index; an encoder rebuilds its own messages from the
indexes and derives roles from the section types.

Payload bytes are kept in one of two forms, fixed per section (see
``PAYLOAD_FORM``):

* ``escaped`` -- the inside of a JSON string, still JSON-escaped, no quotes.
  Text moves between dialects as these bytes, copied, never re-encoded.
* ``raw`` -- the compact text of a JSON value (object, array, ...).

A large payload arrives as several blocks of the same block: the first has
``init=True`` and carries the attributes, the last has ``fin=True``; a small
one is a single event with both set. Fragments of an ``escaped`` payload never
split an escape sequence or a UTF-8 character, so each decodes on its own.
"""

from __future__ import annotations

import enum
import json
import re
from typing import Any, Union

import msgspec

__all__ = [
    "Section",
    "PayloadForm",
    "PAYLOAD_FORM",
    "REQUEST_LEVEL",
    "Block",
    "Control",
    "Extension",
    "MessagesEnd",
    "SystemEnd",
    "TOP_LEVEL_SYSTEM",
    "MessageStart",
    "Finish",
    "Usage",
    "Logprobs",
    "Error",
    "End",
    "Event",
    "decode_escaped",
    "unescape_json_text",
    "escape_text",
    "escape_raw_json",
]


class Section(str, enum.Enum):
    """The section taxonomy (DESIGN §3); anything else is ``unknown``."""

    SYSTEM_INSTRUCTION = "system-instruction"
    USER_TEXT = "user-text"
    USER_IMAGE = "user-image"
    USER_DOCUMENT = "user-document"
    USER_AUDIO = "user-audio"
    USER_VIDEO = "user-video"
    ASSISTANT_TEXT = "assistant-text"
    ASSISTANT_REASONING = "assistant-reasoning"
    ASSISTANT_REFUSAL = "assistant-refusal"
    TOOL_DEFINITION = "tool-definition"
    TOOL_CALL = "tool-call"
    TOOL_RESULT = "tool-result"
    SERVER_TOOL_RESULT = "server-tool-result"
    CITATIONS = "citations"
    UNKNOWN = "unknown"


# Every member also as a module constant (``canonical.USER_TEXT``), for the codecs
# that test a block's section several times per block: in Python 3.11 reading
# ``Section.USER_TEXT`` goes through EnumType.__getattr__'s Python-level hook,
# ~50 ns a read (a module constant: ~5 ns).
SYSTEM_INSTRUCTION = Section.SYSTEM_INSTRUCTION
USER_TEXT = Section.USER_TEXT
USER_IMAGE = Section.USER_IMAGE
USER_DOCUMENT = Section.USER_DOCUMENT
USER_AUDIO = Section.USER_AUDIO
USER_VIDEO = Section.USER_VIDEO
ASSISTANT_TEXT = Section.ASSISTANT_TEXT
ASSISTANT_REASONING = Section.ASSISTANT_REASONING
ASSISTANT_REFUSAL = Section.ASSISTANT_REFUSAL
TOOL_DEFINITION = Section.TOOL_DEFINITION
TOOL_CALL = Section.TOOL_CALL
TOOL_RESULT = Section.TOOL_RESULT
SERVER_TOOL_RESULT = Section.SERVER_TOOL_RESULT
CITATIONS = Section.CITATIONS
UNKNOWN = Section.UNKNOWN


class PayloadForm(str, enum.Enum):
    ESCAPED = "escaped"  # inside of a JSON string, escapes kept
    RAW = "raw"  # compact JSON value text


_RAW_SECTIONS = {
    Section.TOOL_DEFINITION,
    Section.SERVER_TOOL_RESULT,
    Section.CITATIONS,
    Section.UNKNOWN,
}
PAYLOAD_FORM: dict[Section, PayloadForm] = {
    s: (PayloadForm.RAW if s in _RAW_SECTIONS else PayloadForm.ESCAPED) for s in Section
}

#: ``message`` index of blocks that belong to the request, not to a message
#: (tool definitions).
REQUEST_LEVEL = -1
#: ``message`` index of a system instruction given outside the message list
#: (anthropic's top-level ``system``).
TOP_LEVEL_SYSTEM = -2


class Block(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="block"):
    """One fragment of one canonical block.

    ``attrs`` (tool id and name, media type, signature, cache control,
    ``is_error`` ...) is present on the first fragment only.
    """

    section: Section
    message: int
    payload: bytes = b""
    init: bool = True
    fin: bool = True
    attrs: dict[str, Any] | None = None

    @property
    def form(self) -> PayloadForm:
        return PAYLOAD_FORM[self.section]

    def text(self) -> str:
        """The payload decoded: a ``str`` for escaped payloads, else the JSON text."""
        if PAYLOAD_FORM[self.section] is PayloadForm.ESCAPED:
            return decode_escaped(self.payload)
        return self.payload.decode("utf-8")


class Control(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="control"):
    """A request-level setting under its canonical name; ``value`` is plain JSON data.

    Canonical names: model, max_output_tokens, temperature, top_p, top_k,
    stop, stream, tool_choice, parallel_tool_calls, response_format,
    reasoning, user, seed, n, ... (see ``interlingua.controls``).
    """

    name: str
    value: Any
    #: where it came from: the source dialect, its key and its raw JSON, so
    #: the encoder of the same dialect writes it back exactly.
    dialect: str | None = None
    key: str | None = None
    raw: bytes | None = None

    @property
    def place(self) -> str:
        """Where it was in the source, as a loss names it: ``$.<key>``, or its canonical name
        when it came from no field of its own."""
        return f"$.{self.key}" if self.key else self.name


class Extension(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="extension"):
    """A dialect field without canonical meaning, kept with where it was found.

    ``path`` is a JSON path (``$.metadata.foo``); ``raw`` its compact JSON text.
    ``message`` is set when the field sits on a conversation message (the
    encoder of the same dialect puts it back there). ``lossless`` marks a field
    whose absence means the same (an explicit ``null``): other dialects drop it
    without recording a loss.
    """

    dialect: str
    path: str
    raw: bytes
    message: int | None = None
    lossless: bool = False

    def value(self) -> Any:
        return json.loads(self.raw)


class SystemEnd(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="system-end"):
    """No ``TOP_LEVEL_SYSTEM`` block follows.

    Dialects with system messages inside the list emit it first thing;
    anthropic emits it after its ``system`` key or at the end of the body.
    Encoders whose system must come first hold messages until they see it.
    """


class MessagesEnd(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="messages-end"):
    """No block of a conversation message follows (the source's message list closed)."""


# --- response lifecycle -----------------------------------------------------


class MessageStart(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="message-start"):
    id: str | None = None
    model: str | None = None
    choice: int = 0


class Finish(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="finish"):
    """Why generation stopped, as a canonical reason (see the response table)."""

    reason: str | None
    stop_sequence: str | None = None
    choice: int = 0


class Usage(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="usage", omit_defaults=True):
    """Token counts. ``None`` means the source did not say -- absent is not zero.

    ``service_tier`` is the tier that served them (anthropic reports it in its
    usage, openai at the top of the body), canonical names: ``standard``
    (openai ``default``), ``priority``, ``batch``, ``flex``, ``scale``,
    ``auto``, ``fast`` (see ``lifecycle.SERVICE_TIERS``)."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    total: int | None = None
    service_tier: str | None = None


class Logprobs(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="logprobs"):
    """Log probabilities of generated tokens, one token's entry per event, in
    generation order. ``raw``: the entry as compact JSON, ``{"token", "logprob",
    "bytes"?, "top_logprobs"?: [{"token", "logprob", "bytes"?}]}`` (openai's
    ``ChatCompletionTokenLogprob``; ollama's ``api.Logprob`` is the same with the
    optional members left out)."""

    raw: bytes
    choice: int = 0


#: canonical error kind per HTTP status (anthropic's names, which the other dialects map from)
ERROR_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               502: "api_error", 503: "overloaded_error", 504: "timeout_error", 529: "overloaded_error"}


def error_kind(status: int) -> str:
    """The canonical error kind of an HTTP status (``ERROR_KINDS``; another 4xx is an invalid
    request, another 5xx an API error)."""
    return ERROR_KINDS.get(status, "invalid_request_error" if status < 500 else "api_error")


class Error(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="error"):
    type: str
    message: str
    status: int | None = None


class End(msgspec.Struct, frozen=True, gc=False, tag_field="event", tag="end"):
    """The source ended (request body closed, or response/stream complete)."""


Event = Union[Block, Control, Extension, SystemEnd, MessagesEnd, MessageStart, Finish, Usage, Logprobs, Error, End]


def decode_escaped(payload: bytes) -> str:
    """Decode the inside of a JSON string (escapes kept) to ``str``."""
    if b"\\" not in payload:
        return payload.decode("utf-8")
    return json.loads(b'"' + payload + b'"')


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def unescape_json_text(payload: bytes) -> bytes:
    """The text an escaped payload holds, as UTF-8 bytes: a tool call's arguments
    (JSON inside a JSON string) on their way to a dialect that carries them as an
    object. An escaped lone surrogate cannot be UTF-8: it is written back as its
    ``\\uXXXX`` escape (inside an inner string that is the same text; anywhere
    else the inner JSON was broken already)."""
    text = decode_escaped(payload)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), text).encode("utf-8")


#: an escaped backslash, or an escaped surrogate: a high one (with the low one after it: a pair), a low one
_SURROGATE_ESCAPE = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def without_lone_surrogates(json_text: bytes) -> tuple[bytes, bool]:
    """JSON text with each escaped lone surrogate written ``\\ufffd`` (U+FFFD), for a client
    whose parser refuses one (anthropic's stream clients parse ``input_json_delta``), and
    whether there was one. A pair, and an escaped backslash before a ``u``, stay."""
    if b"\\u" not in json_text:
        return json_text, False
    found = False

    def replace(match: re.Match) -> bytes:
        nonlocal found
        if len(match.group()) != 6:
            return match.group()
        found = True
        return b"\\ufffd"
    return _SURROGATE_ESCAPE.sub(replace, json_text), found


_ESCAPE_ENCODER = json.JSONEncoder(ensure_ascii=False)


def escape_text(text: str) -> bytes:
    """``str`` -> inside of a JSON string (the ``escaped`` payload form)."""
    return _ESCAPE_ENCODER.encode(text)[1:-1].encode("utf-8")


def escape_raw_json(data: bytes) -> bytes:
    """Compact JSON text -> the inside of a JSON string holding it: the tool-call
    payload form of arguments a dialect carries as an object. Compact JSON has
    no control characters, so only ``\\`` and ``"`` need escaping; each byte maps
    on its own, so fragments can be escaped one at a time.
    """
    return data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
