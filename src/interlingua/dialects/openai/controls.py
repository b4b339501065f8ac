"""OpenAI request fields <-> canonical controls and tool definitions.

Every parameter of ``openai ... chat.completions.create`` is classified here:
a control with a canonical name (``CONTROLS``), structural (``messages``,
``tools``, ``functions``), or an extension (``EXTENSIONS``: openai-only
fields, passed through to openai targets, a recorded loss elsewhere).
``tests/test_openai_params.py`` fails when the installed client has a
parameter that is in none of these.

Numbers: a control outside openai's own range (``numbers.RANGES``: max tokens and ``n`` at
least 1, temperature 0-2, top_p 0-1, penalties -2-2, top_logprobs 0-20) is a ``SchemaError``
at its path when openai is the source; another dialect's value that openai does not take
(ollama ``temperature: 3``, ``num_predict: 0``) is sent as openai's nearest bound, a recorded
loss (``numbers.clamp``).
"""

from __future__ import annotations

import json
from typing import Any

from ...canonical import Control
from ..anthropic.controls import thinking_to_canonical
from ..fields import check_members
from ...errors import SchemaError
from ...losses import INTERNAL_ATTRS, lacks, path_subject
from ...numbers import clamp, no_limit

STRUCTURAL = {"messages", "tools", "functions"}

#: openai key -> canonical control name
CONTROLS = {
    "model": "model",
    "max_completion_tokens": "max_output_tokens",
    "max_tokens": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "stop": "stop",
    "stream": "stream",
    "tool_choice": "tool_choice",
    "function_call": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "response_format": "response_format",
    "reasoning_effort": "reasoning",
    # LiteLLM's thinking: anthropic's setting, read as anthropic's is (an openai target gets
    # it back as it came; another takes its budget as it takes anthropic's)
    "thinking": "reasoning",
    # OpenRouter's reasoning: {effort | max_tokens, enabled, exclude}
    "reasoning": "reasoning",
    "user": "user",
    "seed": "seed",
    "n": "n",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "logprobs": "logprobs",
    "top_logprobs": "top_logprobs",
    "service_tier": "service_tier",
    "stream_options": "stream_options",
    "metadata": "metadata",
}

#: fields with no canonical meaning (openai-only)
EXTENSIONS = {
    "audio", "logit_bias", "modalities", "moderation", "prediction", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "store",
    "verbosity", "web_search_options",
}
#: client-side arguments of ``create`` that never reach the body
CLIENT_ONLY = {"extra_headers", "extra_query", "extra_body", "timeout"}


def decode(key: str, raw: bytes) -> Control | None:
    """A top-level field as a control, or None (the caller makes it an extension)."""
    name = CONTROLS.get(key)
    if name is None:
        return None
    value = json.loads(raw)
    check_members("openai", key, value)
    if key == "tool_choice" and _lenient_choice(value):
        # {"type": "auto"|"none"|"required"} (some editors send it; not openai's form): the
        # string it means, written so to openai targets too -- nothing is lost
        value = value["type"]
        raw = json.dumps(value).encode()
    return Control(name, _to_canonical(key, value), dialect="openai", key=key, raw=raw)


def _lenient_choice(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"type"} and value["type"] in ("auto", "none", "required")


def _to_canonical(key: str, value: Any) -> Any:
    if key == "stop" and isinstance(value, str):
        return [value]
    if key == "tool_choice" or key == "function_call":
        return tool_choice_to_canonical(value)
    if key == "reasoning_effort":
        return {"effort": value}
    if key == "thinking":
        return thinking_to_canonical(value, least_budget=False)
    if key == "reasoning":
        return openrouter_reasoning_to_canonical(value)
    if key == "response_format":
        return response_format_to_canonical(value)
    return value


def openrouter_reasoning_to_canonical(value: Any) -> Any:
    """OpenRouter's ``reasoning`` as canonical reasoning: ``effort`` an effort, ``max_tokens`` a
    budget (reasoning on unless ``enabled`` says otherwise), ``enabled`` itself. ``exclude: true``
    (the reasoning left out of the response) and any other member are named in ``uncarried``
    (recorded by another target); ``exclude: false`` and nulls say the defaults. Its members'
    types were checked (``fields.MEMBER_FIELDS``); an integral float budget is its integer, one
    beyond 64 bits a ``SchemaError`` (as LiteLLM's ``thinking.budget_tokens``)."""
    if not isinstance(value, dict):
        return {"other": value}
    out: dict[str, Any] = {}
    if value.get("enabled") is not None:
        out["enabled"] = value["enabled"]
    if value.get("effort") is not None:
        out["effort"] = value["effort"]
    if value.get("max_tokens") is not None:
        budget = value["max_tokens"]
        if not -(2.0**63) <= budget < 2.0**63:
            raise SchemaError("number out of range for reasoning.max_tokens: beyond a 64-bit integer",
                              path="$.reasoning.max_tokens")
        out.setdefault("enabled", True)
        out["budget_tokens"] = int(budget)
    rest = [k for k, v in value.items() if k not in ("enabled", "effort", "max_tokens")
            and v is not None and not (k == "exclude" and v is False)]
    if rest:
        out["uncarried"] = rest
    return out


def tool_choice_to_canonical(value: Any) -> Any:
    """``{"type": "auto" | "none" | "required" | "tool", "name"?}``; other shapes kept as given."""
    if value in ("auto", "none", "required"):
        return {"type": value}
    if isinstance(value, dict):
        if value.get("type") == "function" and isinstance(value.get("function"), dict):
            return {"type": "tool", "name": value["function"].get("name")}
        if "name" in value and len(value) == 1:  # legacy function_call {"name": ...}
            return {"type": "tool", "name": value["name"]}
    return {"type": "other", "value": value}


def tool_choice_from_canonical(choice: Any) -> Any:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("auto", "none", "required"):
        return kind
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return None


def response_format_to_canonical(value: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "json_schema":
        spec = value.get("json_schema") or {}
        if not isinstance(spec, dict):
            raise SchemaError("expected an object for json_schema", path="$.response_format.json_schema")
        if spec.get("schema") is None:
            return {"type": "json_object"}  # (no schema: JSON of any shape, which json_object asks)
        out = {"type": "json_schema", "schema": spec["schema"]}
        for extra in ("name", "strict", "description"):
            if spec.get(extra) is not None:  # (a null one carries nothing)
                out[extra] = spec[extra]
        return out
    if isinstance(value, dict) and value.get("type") in ("text", "json_object"):
        return {"type": value["type"]}
    return {"type": "other", "value": value}


#: the canonical JSON mode openai has no rule for the messages of: a ``json_schema`` of any
#: object (``RequestEncoder``: sent for a ``json_object`` no message says "json" for)
JSON_OBJECT_SCHEMA = {"type": "json_schema", "schema": {"type": "object"}}


def json_mode(fmt: Any) -> bool:
    """A canonical response format that is openai's ``json_object``."""
    return isinstance(fmt, dict) and fmt.get("type") == "json_object"


def response_format_from_canonical(fmt: Any) -> Any:
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        spec = {"name": fmt.get("name", "response")}
        for extra in ("description", "strict"):
            if extra in fmt:
                spec[extra] = fmt[extra]
        spec["schema"] = fmt.get("schema")
        return {"type": "json_schema", "json_schema": spec}
    return None


#: canonical control -> openai key, for controls that keep their value as is
_SAME_VALUE = {
    "model": "model", "max_output_tokens": "max_completion_tokens", "temperature": "temperature",
    "top_p": "top_p", "stop": "stop", "stream": "stream", "parallel_tool_calls": "parallel_tool_calls",
    "user": "user", "seed": "seed", "n": "n", "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty", "logprobs": "logprobs", "top_logprobs": "top_logprobs",
    "service_tier": "service_tier", "stream_options": "stream_options", "metadata": "metadata",
}


def reasoning_loss(attrs: dict, reasoning_key: str | None) -> tuple[str, str | None] | None:
    """What openai lacks for a reasoning block that cannot go there at all
    (``(what, done)`` for ``Encoder._lose_block``), or None: it goes to
    ``reasoning_key`` (``Options.openai_reasoning_field``). Its signature is lost
    on its own (``Encoder._lose_signature``)."""
    if reasoning_key is None:
        return "reasoning field", "Options.openai_reasoning_field chooses one a compatible server reads"
    if attrs.get("redacted"):
        return "field for encrypted reasoning", None
    return None


def reasoning_effort(reasoning: Any) -> str | None:
    """Canonical reasoning -> an openai effort. A token budget maps by a documented
    table: < 2048 low, < 8192 medium, else high; ``enabled: false`` -> none, an effort
    beside it too (never turn reasoning on: anthropic thinking disabled + output_config.effort);
    ``enabled: true`` without a budget (ollama ``think: true``: "think, at the
    model's default depth") -> ``medium``, openai's own default effort."""
    if not isinstance(reasoning, dict):
        return None
    if reasoning.get("enabled") is False:
        return "none"
    if "effort" in reasoning:
        return reasoning["effort"]
    budget = reasoning.get("budget_tokens")
    if isinstance(budget, int):
        return "low" if budget < 2048 else "medium" if budget < 8192 else "high"
    if reasoning.get("enabled") is True:
        return "medium"
    return None


#: "Up to 4 sequences" (the client's ``stop`` docstring; the API rejects more)
STOP_MAX = 4


def capped_stop(control: Control, session) -> Any:
    """The first ``STOP_MAX`` stop sequences; each one after is a recorded loss at its
    source path (anthropic ``stop_sequences``, ollama ``options.stop`` take more)."""
    value = control.value
    if not isinstance(value, list) or len(value) <= STOP_MAX:
        return value
    for index in range(STOP_MAX, len(value)):
        where = f"$.{control.key}[{index}]"
        session.lose(where, lacks(path_subject(where), "openai", f"room for more than {STOP_MAX} stop sequences",
                                  "not sent"), dialect=control.dialect)
    return value[:STOP_MAX]


def _lose_reasoning_detail(control: Control, effort: str, session) -> None:
    """What an effort level cannot say: an effort beside thinking off (``none`` is sent), a
    token budget, unless the effort's budget (``Options.anthropic_thinking_budgets``, which an
    anthropic target reads back) is that very budget, and the source members canonical
    reasoning did not carry. Each at its own field (``encoding.reasoning_place``)."""
    from ...encoding import lose_uncarried, reasoning_place
    from ..anthropic.controls import THINKING_BUDGETS

    value = control.value
    place = control.place
    if value.get("enabled") is False and value.get("effort") not in (None, "none"):
        where = reasoning_place(value, "effort", place)
        session.lose(where, lacks(path_subject(where), "openai", f"effort with thinking off (effort {value['effort']!r})",
                                  "reasoning_effort is 'none'"), dialect=control.dialect)
    budget = value.get("budget_tokens")
    budgets = session.options.anthropic_thinking_budgets or THINKING_BUDGETS
    exact = isinstance(effort, str) and budgets.get(effort, THINKING_BUDGETS.get(effort)) == budget
    if isinstance(budget, int) and not exact:
        where = reasoning_place(value, "budget_tokens", place)
        session.lose(where, lacks(path_subject(where), "openai", "thinking budget",
                                  f"sent as reasoning_effort {effort!r}"), dialect=control.dialect)
    lose_uncarried(control, "openai", session)


def encode_control(control: Control, session) -> tuple[str | None, Any]:
    """A canonical control as an openai ``(key, value)``; ``(None, None)`` and a recorded loss if none."""
    name, value = control.name, control.value
    key = _SAME_VALUE.get(name)
    mapped: Any = value
    if name == "max_output_tokens" and no_limit(control):
        session.lose(f"$.{control.key}", lacks(path_subject(f"$.{control.key}"), "openai",
                     f"max_completion_tokens for no limit (num_predict {value!r})",
                     "none is written: the model's own limit applies"), dialect=control.dialect)
        return None, None
    if name == "tool_choice":
        key, mapped = "tool_choice", tool_choice_from_canonical(value)
        if isinstance(mapped, dict):  # a named tool: named as its definition is
            mapped["function"]["name"] = session.tool_name_out(value.get("name"), f"$.{control.key}")
    elif name == "response_format":
        key, mapped = "response_format", response_format_from_canonical(value)
    elif name == "reasoning":
        key, mapped = "reasoning_effort", reasoning_effort(value)
        if mapped is not None:
            _lose_reasoning_detail(control, mapped, session)
    elif name == "stop":
        mapped = capped_stop(control, session)
    elif key is not None:  # a number the source takes, outside openai's range: its nearest bound
        mapped = clamp(control, "openai", key, session)
    if key is None or mapped is None:
        where = control.place
        session.lose(where, lacks(path_subject(where), "openai", "such parameter"), dialect=control.dialect)
        return None, None
    return key, mapped


def tool_to_canonical(tool: dict, legacy: bool) -> tuple[dict, Any] | None:
    """``(attrs, parameters schema)`` of a function tool; None for other tool types.

    attrs: ``name``, ``description``, ``strict`` and, for other function keys,
    ``openai_extra`` (their JSON members, spliced back for openai targets); beside the
    function, ``cache_control`` (an anthropic tool's attribute) and ``openai_tool_extra``
    (the other members, spliced back beside it).
    """
    from ...decoding import beside_function, keep_members

    if legacy:
        function = tool
    else:
        if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            return None
        function = tool["function"]
    if not isinstance(function.get("name"), str):
        return None
    attrs: dict[str, Any] = {"name": function["name"]}
    keep_members(function, attrs, "openai_extra", ("description", "strict"), ("name", "parameters"))
    if legacy:
        attrs["legacy"] = True
    else:
        beside_function(tool, attrs, "openai_tool_extra", carried=("cache_control",))
    return attrs, function.get("parameters")


def tool_from_canonical(attrs: dict, schema_raw: bytes, session) -> bytes:
    """The openai tool object for a canonical tool definition (compact JSON)."""
    from ...encoding import lose_tool_attr, object_schema
    from ...jsonwriter import dumps

    body = b'{"name":' + dumps(session.tool_name_out(attrs.get("name"), "$.tools"))
    # an openai tool's cache_control (beside its function: LiteLLM's spelling) is written back
    # there into openai from openai (openai-compatible upstreams -- OpenRouter, LiteLLM -- take
    # it, as a part's and a message's); another dialect's is a recorded loss: the official API
    # refuses members it does not declare
    own_cache = session.source == "openai" and not attrs.get("legacy") and "cache_control" in attrs
    for key, value in attrs.items():
        if key == "cache_control" and own_cache:
            pass
        elif key in ("description", "strict"):
            body += b"," + dumps(key) + b":" + dumps(value)
        elif key == "openai_extra":
            body += b"," + value.encode()
        elif key not in ("name", "openai_tool_extra") and key not in INTERNAL_ATTRS:  # (ollama's tool shape: nothing lost)
            lose_tool_attr(key, value, attrs, "openai", session)
    if schema_raw and session.source != "openai":
        schema_raw = object_schema(schema_raw, session, attrs.get("name"))
    if schema_raw:
        body += b',"parameters":' + schema_raw
    body += b"}"
    if attrs.get("legacy"):
        return body
    beside = b',"cache_control":' + dumps(attrs["cache_control"]) if own_cache else b""
    extra = attrs.get("openai_tool_extra")
    return b'{"type":"function","function":' + body + beside + (b"," + extra.encode() if extra else b"") + b"}"
