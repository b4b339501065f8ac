"""Loss records in the user's language: one wording for every codec.

A loss record (``session.Loss``) names the source field that was not carried by
its JSON path *in the source dialect* (``path``) and says, in ``reason``, what
it is called there and what the target lacks. Every reason is built by
``lacks``, so the wording cannot drift between codecs::

    <source field, in the source dialect's words>: <target> has no <what>[; <what was done>]

    cache_control of a text block: openai has no field for it
    thinking block: openai has no reasoning field; option openai_reasoning_field
    image_url part with an http URL: ollama has no image URLs; not fetched

The canonical pivot's own names (section values such as ``assistant-reasoning``,
attributes that only shape the canonical events such as ``in_result``) are
never the subject: ``block_subject`` and ``field_subject`` translate a block or
an attribute back into the source dialect's vocabulary. ``INTERNAL_WORDS`` lists
what a reason must never contain (tests/test_loss_wording.py checks it over the
corpus and every rpt scenario).
"""

from __future__ import annotations

import json
from typing import Any

from .canonical import Section

#: a tool call's ``index`` member (openai ``tool_calls[i].index``, ollama ``function.index``) that
#: equals the call's 0-based position among its message's calls: it says nothing the order does
#: not (clients that accumulate streamed deltas leave it; ollama's responses carry it and clients
#: send them back), so it is no loss anywhere and only its own dialect writes it back
#: (``decoding.index_at``). Any other index says something: the source's own attribute, a loss.
CALL_INDEX = "call_index"

#: a reasoning block read from openai's ``thinking_blocks`` (LiteLLM's signed thinking), which
#: an openai target writes back into them
THINKING_BLOCK = "in_thinking_blocks"

#: an openai file's data URL label that named no type (``images.UNNAMED_TYPES``) where its bytes
#: named one (the block's ``media_type``): the label an openai target writes the URL back with
DATA_URL_TYPE = "data_url_type"

#: block attributes that shape canonical events (where a block goes, how it was
#: written) rather than being a field of any dialect: never reported as a loss
INTERNAL_ATTRS = frozenset({
    "in_parts", "in_result", "in_messages", "role", "dialect", "where", "empty", "legacy", "key",
    "data_url", "ollama_no_tool_name", "ollama_no_tool_call_id", "ollama_no_arguments",
    "path", "call_type", "ollama_call_type", "ollama_no_type", "ollama_null_parameters", CALL_INDEX,
    THINKING_BLOCK, DATA_URL_TYPE,
})

#: An anthropic ``tool_result``'s own members and its content's share the result's blocks, so
#: they are named apart: the result's ``cache_control`` that came after its content began rides on
#: the result's last block as ``result_cache_control``; the members of the leading text element
#: (whose text is the result's own block) are ``part_<member>``.
RESULT_CACHE_CONTROL = "result_cache_control"
#: An openai message's ``cache_control`` (LiteLLM's spelling) rides on the message's last block:
#: the breakpoint of that block, apart from the block's (a part's) own.
MESSAGE_CACHE_CONTROL = "message_cache_control"
PART_PREFIX = "part_"
PART_ATTRS = frozenset({PART_PREFIX + "cache_control", PART_PREFIX + "citations"})

#: words of the pivot a loss reason must not contain (the attribute names that are
#: also plain words -- role, key, empty -- are left out: they may describe a field)
INTERNAL_WORDS = tuple(sorted({s.value for s in Section} | {a for a in INTERNAL_ATTRS if "_" in a}
                              | {"canonical", "openai_extra", "openai_function_extra", "anthropic_extra",
                                 "ollama_extra", "ollama_call_extra", "source_extra", "openai_tool_extra",
                                 "ollama_tool_extra", RESULT_CACHE_CONTROL, MESSAGE_CACHE_CONTROL}
                              | PART_ATTRS))


#: what a target lacks when it has no place for a whole block of a section at all
NO_PLACE = {
    Section.SERVER_TOOL_RESULT: "server tools", Section.CITATIONS: "citations", Section.USER_AUDIO: "audio input",
    Section.USER_VIDEO: "video input", Section.USER_DOCUMENT: "documents", Section.ASSISTANT_REFUSAL: "refusal field",
    Section.UNKNOWN: "such content", Section.TOOL_DEFINITION: "such tool",
}


def lacks(subject: str, target: str, what: str, done: str | None = None) -> str:
    """The one wording of a loss: ``<subject>: <target> has no <what>[; <done>]``."""
    text = f"{subject}: {target} has no {what}"
    return f"{text}; {done}" if done else text


# -- the source dialect's names -------------------------------------------------------------------

_S = Section
_BLOCK_NAMES: dict[str, dict[Section, str]] = {
    "anthropic": {
        _S.SYSTEM_INSTRUCTION: "system text block", _S.USER_TEXT: "text block", _S.ASSISTANT_TEXT: "text block",
        _S.USER_IMAGE: "image block", _S.USER_DOCUMENT: "document block", _S.ASSISTANT_REASONING: "thinking block",
        _S.TOOL_CALL: "tool_use block", _S.TOOL_RESULT: "tool_result block", _S.CITATIONS: "citations of a text block",
        _S.SERVER_TOOL_RESULT: "server tool block", _S.TOOL_DEFINITION: "tool", _S.UNKNOWN: "content block",
    },
    "openai": {
        _S.SYSTEM_INSTRUCTION: "system message", _S.USER_TEXT: "user text", _S.ASSISTANT_TEXT: "assistant content",
        _S.USER_IMAGE: "image_url part", _S.USER_DOCUMENT: "file part", _S.USER_AUDIO: "input_audio part",
        _S.ASSISTANT_REASONING: "reasoning", _S.ASSISTANT_REFUSAL: "refusal", _S.TOOL_CALL: "tool call",
        _S.TOOL_RESULT: "tool message", _S.TOOL_DEFINITION: "tool", _S.UNKNOWN: "content part",
    },
    "ollama": {
        _S.SYSTEM_INSTRUCTION: "system message", _S.USER_TEXT: "user content", _S.ASSISTANT_TEXT: "assistant content",
        _S.USER_IMAGE: "image", _S.ASSISTANT_REASONING: "thinking", _S.TOOL_CALL: "tool call",
        _S.TOOL_RESULT: "tool message", _S.TOOL_DEFINITION: "tool", _S.UNKNOWN: "message",
    },
}


#: the roles each dialect's request decoder knows; a message of any other role is carried raw
KNOWN_ROLES = {
    "openai": frozenset({"system", "developer", "user", "assistant", "tool", "function"}),
    "ollama": frozenset({"system", "user", "assistant", "tool"}),
}


def unknown_role(dialect: str, attrs: dict[str, Any] | None) -> bool:
    """Whether a block came from a message whose role ``dialect`` does not know (the whole
    message is carried raw: its ``role`` attribute is one no canonical section has)."""
    role = (attrs or {}).get("role")
    return dialect in KNOWN_ROLES and isinstance(role, str) and role not in KNOWN_ROLES[dialect]


def role_subject(role: str) -> str:
    """A message of an unknown role, by its role (``""`` is a role too, an empty one)."""
    return f"{role} message" if role else "message with an empty role"


def raw_block_type(payload: bytes) -> str | None:
    """The ``type`` of a block carried raw (anthropic server tool blocks, unknown blocks):
    the anthropic decoders write it first (``{"type":"server_tool_use",...``)."""
    head = b'{"type":"'
    if payload.startswith(head):
        end = payload.find(b'"', len(head))
        if end > 0:
            return payload[len(head):end].decode("utf-8", "replace")
    return None


def raw_tool_member(payload: bytes, key: str) -> str | None:
    """A string member of a tool carried raw (an anthropic server tool, an openai tool of a type
    it does not know): its ``type``, its ``name``; the client's own object, its keys in any order."""
    tool = json.loads(payload)  # (a decoder's compact JSON, read whole and bounded)
    value = tool.get(key) if isinstance(tool, dict) else None
    return value if isinstance(value, str) else None


def block_subject(dialect: str, section: Section, attrs: dict[str, Any] | None = None,
                  payload: bytes = b"") -> str:
    """What ``dialect`` calls the block a canonical block came from."""
    attrs = attrs or {}
    if dialect == "anthropic":
        if section is _S.ASSISTANT_REASONING and attrs.get("redacted"):
            return "redacted_thinking block"
        if section in (_S.SERVER_TOOL_RESULT, _S.UNKNOWN):
            kind = raw_block_type(payload)
            if kind:
                return f"{kind} block"
    if dialect == "openai":
        if section is _S.SYSTEM_INSTRUCTION and attrs.get("role") == "developer":
            return "developer message"
        if section is _S.UNKNOWN and isinstance(attrs.get("role"), str) and not unknown_role(dialect, attrs):
            kind = raw_block_type(payload)  # a part of an unknown type in a message of a known role
            return f"{kind + ' part' if kind else 'content part'} of {role_article(attrs['role'])} {attrs['role']} message"
    if section is _S.UNKNOWN and unknown_role(dialect, attrs):
        return role_subject(attrs["role"])
    if attrs.get("in_result") and section is not _S.TOOL_RESULT:
        return f"{block_subject(dialect, section)} in a {block_subject(dialect, _S.TOOL_RESULT)}"
    return _BLOCK_NAMES.get(dialect, {}).get(section) or f"{dialect} content"


_PART_ROLES = {_S.SYSTEM_INSTRUCTION: "system", _S.USER_TEXT: "user", _S.ASSISTANT_TEXT: "assistant",
               _S.TOOL_RESULT: "tool"}


def several_subject(dialect: str, section: Section, attrs: dict[str, Any] | None = None) -> str:
    """Texts of one source message joined into one (ollama's single ``content``), by what the
    source called them: an openai message's text parts, not several messages."""
    attrs = attrs or {}
    if dialect == "openai" and section is _S.ASSISTANT_REFUSAL and not attrs.get("in_parts"):
        return "refusal beside the content of an assistant message"
    role = _PART_ROLES.get(section)
    if dialect == "openai" and attrs.get("in_parts") and role is not None:
        role = attrs.get("role") or role
        return f"several text parts of {role_article(role)} {role} message"
    return f"several {block_subject(dialect, section, attrs)}s"


#: a block attribute -> the field's name in the source dialect, where it differs from the key
_FIELD_NAMES: dict[str, dict[str, str]] = {
    "openai": {"detail": "image_url.detail", "filename": "file.filename", "file_id": "file.file_id"},
    "anthropic": {"signature": "signature", "file_id": "source.file_id"},
    "ollama": {"index": "function.index"},
}


#: the attributes that keep source members as JSON text (``"k":v,...``) -> where they sat
_EXTRA_FIELDS = {"openai_extra": "", "openai_function_extra": "function.", "anthropic_extra": "",
                 "ollama_extra": "function.", "ollama_call_extra": "", "source_extra": "source.",
                 "openai_tool_extra": "", "ollama_tool_extra": ""}


def member_names(text: Any) -> list[str]:
    """The names of the members an extras attribute's JSON text (``"k":v,...``) holds."""
    try:
        return list(json.loads("{" + text + "}")) if isinstance(text, str) else []
    except ValueError:
        return []


#: a member at its API's default says nothing: anthropic's ``caller: {"type": "direct"}`` on a
#: tool_use block (the model called the tool itself, as every call of another dialect is)
MEMBER_DEFAULTS = {"caller": {"type": "direct"}}


#: the block attributes whose value can say what their absence says (``attr_says_nothing``)
_DEFAULTED_ATTRS = frozenset({"citations", PART_PREFIX + "citations"})


def attr_says_nothing(key: str, value: Any) -> bool:
    """A block attribute at its API's default, what its absence says: anthropic's ``citations``
    -- a text block's ``[]`` (it cites nothing), a document's ``{"enabled": false}`` (citing is
    off unless asked for; ``{}`` and ``{"enabled": null}`` leave it off too). ``{"enabled":
    true}`` and a list of citations say something."""
    if key not in _DEFAULTED_ATTRS:
        return False
    if isinstance(value, dict):
        return all(k == "enabled" and (v is False or v is None) for k, v in value.items())
    return value == []


def extras_said(key: str, attrs: dict[str, Any]) -> dict[str, Any] | None:
    """``attrs`` with the extras attribute ``key`` holding only the members that say something
    (not null, not at their default: ``MEMBER_DEFAULTS``); None when none does (nothing to
    lose: ``caller: null``, as an anthropic SDK's ``model_dump()`` writes on every tool_use).
    Any other key: ``attrs`` as they are."""
    text = attrs.get(key)
    if key not in _EXTRA_FIELDS or not isinstance(text, str):
        return attrs
    try:
        members = json.loads("{" + text + "}")
    except ValueError:
        return attrs
    said = [json.dumps(name) + ":" + json.dumps(value) for name, value in members.items()
            if value is not None and MEMBER_DEFAULTS.get(name, ...) != value]
    return {**attrs, key: ",".join(said)} if said else None


def _extra_fields(key: str, attrs: dict[str, Any] | None) -> str:
    """The source members an extras attribute holds, by their names (``y``, ``function.x``),
    not the attribute's own name, which no dialect has."""
    names = member_names((attrs or {}).get(key))
    prefix = "function_call." if key == "openai_extra" and (attrs or {}).get("legacy") else _EXTRA_FIELDS[key]
    return ", ".join(prefix + name for name in names) or "members"


def field_subject(dialect: str, key: str, section: Section, attrs: dict[str, Any] | None = None) -> str:
    """``<field> of a <block>`` in the source dialect's words."""
    if key == RESULT_CACHE_CONTROL:  # (on whichever block of the result it rode)
        return field_subject(dialect, "cache_control", _S.TOOL_RESULT)
    if key == MESSAGE_CACHE_CONTROL:  # (on the message's last block)
        return f"cache_control of {message_subject(dialect, section, attrs)}"
    if key in PART_ATTRS:  # (the leading text of the result's content)
        return f"{key[len(PART_PREFIX):]} of a text block in a {block_subject(dialect, _S.TOOL_RESULT)}"
    if key in _EXTRA_FIELDS:
        field = _extra_fields(key, attrs)
    else:
        field = _FIELD_NAMES.get(dialect, {}).get(key, key)
    block = block_subject(dialect, section, attrs)
    return f"{field} of {article(block)} {block}"


def message_subject(dialect: str, section: Section, attrs: dict[str, Any] | None = None) -> str:
    """The message a block came from, by its role: "a user message", "an assistant message"."""
    role = (attrs or {}).get("role")
    if not isinstance(role, str):
        role = _PART_ROLES.get(section) or ("assistant" if section in (
            _S.ASSISTANT_REASONING, _S.ASSISTANT_REFUSAL, _S.TOOL_CALL) else "user")
    return f"{role_article(role)} {role} message"


def article(noun: str) -> str:
    """``a`` or ``an`` by the noun's sound: "an image", "a user text", "a url citation"."""
    if noun.startswith(("us", "ur", "uni")):
        return "a"
    return "an" if noun[:1] in "aeiou" else "a"


def role_article(role: str) -> str:
    """The article of a role's name: "a user message", "an assistant message"."""
    return "a" if role.startswith("u") else article(role)


def path_subject(path: str) -> str:
    """A source path as the subject of a reason: ``$.options.num_ctx`` -> ``options.num_ctx``."""
    return path[2:] if path.startswith("$.") else path


# -- where a canonical thing sits in the source ---------------------------------------------------

def finish_path(dialect: str, kind: str, choice: int = 0) -> str:
    """The source path of the finish reason."""
    if dialect == "openai":
        return f"$.choices[{choice}].finish_reason" if kind != "stream" else "$.choices[0].finish_reason"
    if dialect == "anthropic":
        return "$.delta.stop_reason" if kind == "stream" else "$.stop_reason"
    return "$.done_reason"


def block_path(dialect: str, kind: str, message: int) -> str:
    """The source path of the message (request) or choice (response) a block came from."""
    if kind == "request":
        from .canonical import TOP_LEVEL_SYSTEM

        return "$.system" if message == TOP_LEVEL_SYSTEM else f"$.messages[{message}]"
    if dialect == "openai":
        return f"$.choices[{message}].message" if kind == "response" else "$.choices[0].delta"
    if dialect == "anthropic":
        return "$.content" if kind == "response" else "$.content_block"
    return "$.message"


#: the members that hold a block's payload: a field of the block is their sibling
_PAYLOAD_MEMBERS = {"text", "thinking", "content", "refusal", "arguments", "input", "reasoning_content", "reasoning",
                    "data", "partial_json"}


def field_path(block_path: str, key: str) -> str:
    """The path of the block's field ``key``, from the path of the block or of its payload
    (``$.content[0].thinking`` -> ``$.content[0].signature``)."""
    head, _, last = block_path.rpartition(".")
    if head and last in _PAYLOAD_MEMBERS:
        return f"{head}.{key}"
    return f"{block_path}.{key}"
