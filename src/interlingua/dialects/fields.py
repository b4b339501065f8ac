"""The JSON type of each top-level request field, per dialect (issue 15, class 5).

A decoder checks a field's first token against this table before it reads the
field (``Decoder.expect``): a wrong type is a ``SchemaError`` at that token's
offset and path, never passed through to break the target (``"stream": 7``,
``"max_tokens": "big"``, ``"model": {"a": 1}``). ``null`` is accepted where the
official client lets a caller send it (an optional field; absent means the
same); ``model`` (and anthropic's ``max_tokens``) are required and never null, and
openai's ``tools``/``functions`` (``Iterable[...]`` in the client, not ``Optional``) and
anthropic's ``tools`` take no null either: ``"tools": null`` is a ``SchemaError`` there,
as the decoders always raised (the table said nullable for openai: rpt/openai-tools-null).
Fields not listed (extensions) are copied as they came, any type.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .. import json as tok
from ..decoding import ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING
from ..errors import SchemaError

_INT, _NUM, _BOOL, _STR, _OBJ, _ARR = (t | NULL for t in (INTEGER, NUMBER, BOOLEAN, STRING, OBJECT, ARRAY))

REQUEST_FIELDS = {
    "openai": {
        # tools/functions: the client declares them Iterable, not Optional: null is a SchemaError
        "model": STRING, "messages": ARRAY, "tools": ARRAY, "functions": ARRAY,
        # max tokens: an integral float is taken (rpt validity-max-tokens-float)
        "max_completion_tokens": _NUM, "max_tokens": _NUM, "temperature": _NUM, "top_p": _NUM,
        "stop": STRING | ARRAY | NULL, "stream": _BOOL, "tool_choice": STRING | OBJECT | NULL,
        "function_call": STRING | OBJECT | NULL, "parallel_tool_calls": _BOOL, "response_format": _OBJ,
        "reasoning_effort": _STR, "user": _STR, "seed": _INT, "n": _INT, "frequency_penalty": _NUM,
        "presence_penalty": _NUM, "logprobs": _BOOL, "top_logprobs": _INT, "service_tier": _STR,
        "stream_options": _OBJ, "metadata": _OBJ,
        # LiteLLM's (and other gateways'): anthropic's thinking setting in an openai body
        "thinking": _OBJ,
        # OpenRouter's (and other gateways'): one reasoning setting for every model
        "reasoning": _OBJ,
    },
    "anthropic": {
        "model": STRING, "max_tokens": INTEGER, "messages": ARRAY, "system": STRING | ARRAY,
        "tools": ARRAY, "temperature": _NUM, "top_p": _NUM, "top_k": _INT, "stop_sequences": _ARR,
        "stream": _BOOL, "tool_choice": _OBJ, "thinking": _OBJ, "output_config": _OBJ, "metadata": _OBJ,
        "service_tier": _STR,
    },
    "ollama": {
        "model": STRING, "messages": ARRAY, "tools": _ARR, "options": _OBJ, "stream": _BOOL,
        "format": STRING | OBJECT | NULL, "think": BOOLEAN | STRING | NULL, "logprobs": _BOOL,
        "top_logprobs": _INT, "keep_alive": STRING | NUMBER | NULL,
    },
    "ollama.options": {
        "num_predict": _INT, "temperature": _NUM, "top_p": _NUM, "top_k": _INT, "stop": _ARR,
        "seed": _INT, "presence_penalty": _NUM, "frequency_penalty": _NUM,
    },
}

#: openai's reasoning_effort values (the official client's ``ReasoningEffort``)
OPENAI_REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

#: what each dialect's request cannot go without: a missing one is a ``SchemaError``
#: naming it, at the body's closing brace (the API answers 400; a default would change
#: what the request means -- anthropic without max_tokens would generate without limit).
#: ollama's ``messages`` may be absent (the server then only loads the model).
REQUIRED = {
    "openai": ("model", "messages"),
    "anthropic": ("model", "max_tokens", "messages"),
    "ollama": ("model",),
}


def declared_integer(dialect: str, key: str) -> bool:
    """Whether the source declares the field at ``key`` (``options.x`` for ollama's options)
    an integer (``numbers``: its integral float is taken as the integer)."""
    table = REQUEST_FIELDS.get(dialect, {})
    if dialect == "ollama" and key.startswith("options."):
        table, key = REQUEST_FIELDS["ollama.options"], key[8:]
    expect = table.get(key)
    return expect is not None and expect.integer


# -- inside a control's value ------------------------------------------------------------
#
# A control's value is read whole (``decode(key, raw)`` of each dialect's controls), so its
# members are checked on the value, not token by token: a member of the wrong type would
# otherwise be carried into the target, which rejects it (anthropic ``metadata.user_id: [1]``
# became openai ``"user": [1]``; ``stop_sequences: ["a", 5]`` openai ``"stop": ["a", 5]``) or
# be read as something else (``disable_parallel_tool_use: "no"`` as true, ``budget_tokens:
# true`` as 1, ``"x"`` as no budget). Each entry names a member by its dotted path inside
# the field (checked where every step is an object that has it) or ``[]`` for every element
# of an array value. The error is a ``SchemaError`` at ``$.<field>.<member>`` (an element:
# ``$.<field>[i]``), located at the field's first byte (the value is read whole), for every
# target, the source's own too. The first wrong member in the input's order is the one named.

MEMBER_FIELDS = {
    "openai": {
        "stop": {"[]": STRING},
        "stream_options": {"include_usage": _BOOL, "include_obfuscation": _BOOL},
        "tool_choice": {"type": STRING, "function.name": STRING},
        "function_call": {"name": STRING},
        "response_format": {"type": STRING, "json_schema.name": STRING, "json_schema.strict": _BOOL,
                            "json_schema.description": _STR},
        "thinking": {"type": STRING, "budget_tokens": INTEGER, "display": _STR},
        "reasoning": {"effort": _STR, "max_tokens": _INT, "enabled": _BOOL, "exclude": _BOOL},
    },
    "anthropic": {
        "stop_sequences": {"[]": STRING},
        "tool_choice": {"type": STRING, "name": STRING, "disable_parallel_tool_use": _BOOL},
        "thinking": {"type": STRING, "budget_tokens": INTEGER, "display": _STR},
        "metadata": {"user_id": _STR},
        "output_config": {"effort": _STR, "format": _OBJ, "format.type": STRING, "format.schema": OBJECT},
    },
    "ollama": {
        "options.stop": {"[]": STRING},
    },
}

#: members a control's value cannot go without, by the value's ``type`` (``*``: any type):
#: the official client marks them ``Required`` and the API answers 400 without them.
#: A missing one is a ``SchemaError`` naming it (``thinking has no 'budget_tokens'
#: (required)``) at ``$.<field>``, located at the field's first byte.
REQUIRED_MEMBERS = {
    "anthropic": {
        "tool_choice": {"*": ("type",), "tool": ("name",)},
        "thinking": {"*": ("type",), "enabled": ("budget_tokens",)},
    },
}


#: the members of a control's value its decoder knows, by field (a dict: the members of an
#: object member; None: a member taken as it is -- a schema, a string): any other member, not
#: null, no other dialect carries -- each target writes the control its own way -- so into
#: another dialect it is a recorded loss at ``$.<field>.<member>`` (``encoding.lose_unknown_members``);
#: was dropped with nothing recorded (anthropic ``metadata.session``, openai
#: ``json_schema.x``). ``thinking`` names its own (canonical ``uncarried``).
KNOWN_MEMBERS = {
    "openai": {
        "tool_choice": {"type": None, "function": {"name": None}, "allowed_tools": None, "custom": None},
        "function_call": {"name": None},
        "response_format": {"type": None, "json_schema": {"name": None, "schema": None, "strict": None,
                                                          "description": None}},
    },
    "anthropic": {
        "tool_choice": {"type": None, "name": None, "disable_parallel_tool_use": None},
        "metadata": {"user_id": None},
        "output_config": {"effort": None, "format": {"type": None, "schema": None}},
    },
}


#: control fields that are maps of settings: ``{}``, or every member null, sets nothing
#: (``web_search_options`` is not one: ``{}`` turns search on)
SETTING_MAPS = {"openai": ("metadata", "logit_bias", "reasoning"), "anthropic": ("metadata", "output_config")}


#: members of a settings map whose value says the default, as null does: OpenRouter's
#: ``reasoning.exclude: false`` (the reasoning kept in the response)
SETTING_DEFAULTS = {("openai", "reasoning"): {"exclude": False}}


def sets_nothing(dialect: str, key: str, raw: bytes) -> bool:
    """A top-level field's raw JSON that means the same as the field absent (README "null
    means absent"): ``null``, or a settings map (``SETTING_MAPS``) with no member but nulls
    and defaults (``SETTING_DEFAULTS``). A decoder makes it a lossless extension: no control,
    so no target records a loss."""
    if raw == b"null":
        return True
    if key not in SETTING_MAPS.get(dialect, ()) or not raw.startswith(b"{"):
        return False
    defaults = SETTING_DEFAULTS.get((dialect, key), {})
    return all(value is None or (member in defaults and value is defaults[member])
               for member, value in json.loads(raw).items())


def unknown_members(dialect: str, key: str, raw: bytes) -> list[str]:
    """The dotted paths, inside the field, of a control value's members no target carries
    (``KNOWN_MEMBERS``), in the input's order; ``raw``: the field's JSON, read only for a
    field that has a table."""
    spec = KNOWN_MEMBERS.get(dialect, {}).get(key)
    return [] if spec is None else list(_unknown(spec, json.loads(raw), ""))


def _unknown(spec: dict, value: Any, prefix: str):
    if not isinstance(value, dict):
        return
    for member, item in value.items():
        if member not in spec:
            if item is not None:
                yield prefix + member
        elif spec[member] is not None:
            yield from _unknown(spec[member], item, prefix + member + ".")


#: a tool definition's members that every dialect carries (canonical tool attrs): checked on
#: the tool, read whole (``Decoder.check_tool_attrs``): a wrong type is a ``SchemaError`` at the
#: member's path (``$.tools[0].function.description``), at the tool's first byte -- was written
#: into the target as it came (``"description": 5``); an explicit null is absent, not written
#: (openai's ``"strict": null`` became anthropic ``"strict": null``, which takes a boolean).
TOOL_MEMBERS = {"description": _STR, "strict": _BOOL}


#: an ollama ``logprobs`` entry (Go's ``Logprob``: a ``TokenLogprob`` -- token, logprob, bytes
#: -- and its ``top_logprobs``, each a ``TokenLogprob``), checked on the entry, read whole: a
#: wrong type is a ``SchemaError`` at the member's path (``$.logprobs[0].top_logprobs[1].token``),
#: at the entry's first byte -- was written into an openai target as it came (``"token": 5``),
#: which its ``ChatCompletionTokenLogprob`` refuses. ``token`` and ``logprob`` are required (Go
#: always writes them; openai requires them); ``bytes`` holds integers.
TOKEN_LOGPROB = {"token": STRING, "logprob": NUMBER, "bytes": _ARR}
LOGPROB_ENTRY = {**TOKEN_LOGPROB, "top_logprobs": _ARR}
LOGPROB_REQUIRED = ("token", "logprob")


def check_logprob(entry: Any, path: str) -> None:
    """An ollama logprobs entry (``LOGPROB_ENTRY``) at ``path``: a ``SchemaError`` at the first
    member that is wrong, else nothing."""
    _check_token_logprob(entry, path, LOGPROB_ENTRY)
    for i, top in enumerate(entry.get("top_logprobs") or ()):
        if not isinstance(top, dict):
            raise SchemaError(f"expected an object for {path[2:]}.top_logprobs[{i}], got {value_type(top)}",
                              path=f"{path}.top_logprobs[{i}]")
        _check_token_logprob(top, f"{path}.top_logprobs[{i}]", TOKEN_LOGPROB)


def _check_token_logprob(entry: dict, path: str, spec: dict) -> None:
    for member, item in entry.items():
        if member in spec:
            message = refusal(spec[member], f"{path[2:]}.{member}", item)
            if message is not None:
                raise SchemaError(message, path=f"{path}.{member}")
    for member in LOGPROB_REQUIRED:
        if member not in entry:
            raise SchemaError(f"{path[2:]} has no {member!r} (required)", path=path)
    for i, byte in enumerate(entry.get("bytes") or ()):
        message = refusal(INTEGER, f"{path[2:]}.bytes[{i}]", byte)
        if message is not None:
            raise SchemaError(message, path=f"{path}.bytes[{i}]")


#: a value's type -> the first tokens it may have been read from (``Expect.kinds``)
_TOKEN_KINDS = {"null": {tok.NULL}, "boolean": {tok.TRUE, tok.FALSE}, "number": {tok.NUMBER},
                "string": {tok.STRING, tok.STRING_OPEN}, "array": {tok.ARRAY_START}, "object": {tok.OBJECT_START}}


def value_type(value: Any) -> str:
    """A JSON value's type as ``decoding.type_name`` names a token's."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _refusal(expect, value: Any) -> str | None:
    """What ``expect`` refuses in a value read as data (``Expect.refuses`` on its first
    token, in the words of ``Decoder.expect``), or None."""
    kind = value_type(value)
    if not expect.kinds & _TOKEN_KINDS[kind]:
        return kind
    if expect.integer and isinstance(value, float) and not value.is_integer():
        return "a number beyond a float's range" if math.isinf(value) else "a number with a fraction"
    return None


def refusal(expect, what: str, value: Any) -> str | None:
    """The message a value of the wrong type for ``what`` gets, or None."""
    got = _refusal(expect, value)
    return None if got is None else f"expected {expect.name} for {what}, got {got}"


def check_members(dialect: str, key: str, value: Any) -> None:
    """The members of a control's value (``MEMBER_FIELDS``, ``REQUIRED_MEMBERS``): a
    ``SchemaError`` at the first one that is wrong, else nothing."""
    spec = MEMBER_FIELDS.get(dialect, {}).get(key)
    if spec is not None:
        _check(spec, key, "", value)
    required = REQUIRED_MEMBERS.get(dialect, {}).get(key)
    if required is not None and isinstance(value, dict):
        kind = value.get("type")
        for member in required["*"] + (required.get(kind, ()) if isinstance(kind, str) else ()):
            if member not in value:
                raise SchemaError(f"{key} has no {member!r} (required)", path=f"$.{key}")


def _check(spec: dict, key: str, prefix: str, value: Any) -> None:
    if isinstance(value, list) and not prefix and "[]" in spec:
        for i, item in enumerate(value):
            _wrong(spec["[]"], f"{key}[{i}]", item)
        return
    if not isinstance(value, dict):
        return
    for member, item in value.items():
        path = prefix + member
        if path in spec:
            _wrong(spec[path], f"{key}.{path}", item)
        if isinstance(item, dict) and any(p.startswith(path + ".") for p in spec):
            _check(spec, key, path + ".", item)


def _wrong(expect, what: str, value: Any) -> None:
    message = refusal(expect, what, value)
    if message is not None:
        raise SchemaError(message, path=f"$.{what}")
