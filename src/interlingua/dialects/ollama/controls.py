"""Ollama ``/api/chat`` fields <-> canonical controls and tool definitions.

Every field of the installed client's ``ChatRequest`` and every ``Options``
field is classified here: a control with a canonical name, structural
(``messages``, ``tools``, ``options`` itself) or an extension (ollama-only,
passed through to ollama targets, a recorded loss elsewhere).
``tests/ollama/test_client_fields.py`` fails when the client grows a field
that is in none of these.

Mapping decisions (documented, pinned by tests):

* ``options.num_predict`` <-> ``max_output_tokens``; ``options.temperature``,
  ``top_p``, ``top_k``, ``stop``, ``seed``, ``presence_penalty``,
  ``frequency_penalty`` keep their canonical names. Other options
  (``num_ctx``, ``mirostat`` ...) are extensions at ``$.options.<name>``.
* Integer fields (``options.num_predict``, ``top_k``, ``seed``; ``top_logprobs``: the
  client declares them ``int``) get another dialect's float as an integer: an integral
  float (openai ``max_completion_tokens: 256.0``, ``2.56e2``) is that integer (256), a
  fraction is rounded down (a recorded loss), as anthropic's ``max_tokens`` is written.
* ``format``: ``"json"`` <-> ``{"type": "json_object"}``; a JSON schema <->
  ``{"type": "json_schema", "schema": ...}`` (a schema's ``name``,
  ``description``, ``strict`` have no ollama field: recorded losses);
  ``""`` <-> ``{"type": "text"}``.
* ``think``: ``true``/``false`` <-> ``{"enabled": bool}``; a level string
  <-> ``{"effort": level}``. A canonical ``budget_tokens`` becomes
  ``think: true`` and the budget is a recorded loss. Ollama's levels are
  ``low``/``medium``/``high``/``max``; other efforts go to the nearest level
  as Ollama's own compatibility layers do (openai ``minimal`` -> ``low``,
  ``xhigh``/``ultra`` -> ``max``; anthropic ``xhigh`` -> ``high``), a recorded
  loss. Thinking disabled (``{"enabled": false}``, anthropic ``thinking:
  {"type": "disabled"}``) gives ``think: false`` whatever effort comes with it
  (the effort is a recorded loss).
* ``stream``: Ollama streams when ``stream`` is absent, the other dialects do
  not. The decoder therefore emits an *implied* ``stream: true`` control
  (``key=None``) when the body has no ``stream``; the ollama encoder writes
  nothing for it (round trip exact) while other encoders write
  ``stream: true``. Conversely the encoder writes ``"stream": false`` when the
  source carried no stream control at all (an openai/anthropic body without
  ``stream`` means a non-streaming request).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...canonical import Control
from ...errors import SchemaError
from ...jsonwriter import dumps
from ..fields import check_members
from ...encoding import reasoning_place
from ...losses import lacks, path_subject

DIALECT = "ollama"

STRUCTURAL = {"messages", "tools", "options"}

#: top-level key -> canonical control name
CONTROLS = {
    "model": "model",
    "stream": "stream",
    "format": "response_format",
    "think": "reasoning",
    "logprobs": "logprobs",
    "top_logprobs": "top_logprobs",
}
#: top-level ollama-only fields
EXTENSIONS = {"keep_alive"}

#: ``options`` key -> canonical control name
OPTION_CONTROLS = {
    "num_predict": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
#: ``options`` keys with no canonical meaning (runtime and sampler knobs of llama.cpp)
OPTION_EXTENSIONS = {
    "numa", "num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all",
    "vocab_only", "use_mmap", "use_mlock", "embedding_only", "num_thread", "num_keep", "tfs_z",
    "typical_p", "repeat_last_n", "repeat_penalty", "mirostat", "mirostat_tau", "mirostat_eta",
    "penalize_newline", "min_p",
}

_CANONICAL_TO_OPTION = {v: k for k, v in OPTION_CONTROLS.items()}
#: each source API's documented sampling defaults (``Options.ollama_sampling_defaults``)
SOURCE_SAMPLING_DEFAULTS = {"openai": {"temperature": 1.0, "top_p": 1.0}, "anthropic": {"temperature": 1.0}}
_CANONICAL_TO_TOP = {"model": "model", "stream": "stream", "logprobs": "logprobs",
                     "top_logprobs": "top_logprobs"}
#: the levels ollama's ``think`` takes (api.ThinkValue: low, medium, high, max)
_THINK_LEVELS = ("low", "medium", "high", "max")
#: efforts outside ollama's levels, per source scale -> the nearest level (a recorded
#: loss): openai's ``xhigh`` is its top (ollama's openai layer sends ``max``), anthropic's
#: sits between ``high`` and ``max`` (ollama's anthropic layer sends ``high``)
_NEAREST_LEVEL = {
    "openai": {"minimal": "low", "xhigh": "max", "ultra": "max"},
    "anthropic": {"minimal": "low", "xhigh": "high", "ultra": "max"},
}


def decode(key: str, raw: bytes) -> Control | None:
    """A top-level field as a control, or None (the caller makes it an extension)."""
    name = CONTROLS.get(key)
    if name is None:
        return None
    value = json.loads(raw)
    if key == "think" and isinstance(value, str) and value not in _THINK_LEVELS:
        # (ollama answers 400: a level it does not know is the input's fault, as openai's
        # unknown reasoning_effort is; another dialect's effort scale is mapped on encoding)
        raise SchemaError(f"unknown think level {raw.decode()} (one of {', '.join(_THINK_LEVELS)})", path="$.think")
    if key == "format":
        value = format_to_canonical(value)
    elif key == "think":
        value = think_to_canonical(value)
    return Control(name, value, dialect=DIALECT, key=key, raw=raw)


def decode_option(key: str, raw: bytes) -> Control | None:
    name = OPTION_CONTROLS.get(key)
    if name is None:
        return None
    value = json.loads(raw)
    check_members(DIALECT, "options." + key, value)
    if key == "stop" and isinstance(value, str):
        value = [value]
    return Control(name, value, dialect=DIALECT, key="options." + key, raw=raw)


def format_to_canonical(value: Any) -> Any:
    if value == "json":
        return {"type": "json_object"}
    if value == "" or value is None:
        return {"type": "text"}
    if isinstance(value, dict):
        return {"type": "json_schema", "schema": value}
    return {"type": "other", "value": value}


def think_to_canonical(value: Any) -> Any:
    if isinstance(value, bool):
        return {"enabled": value}
    if isinstance(value, str):
        return {"effort": value}
    return {"other": value}


#: settings that ask for what ollama does anyway (one answer; the model calls any tools, as many
#: as it likes): as compact JSON, so that ``n: 1.0`` or ``true`` is not ``1``
_OLLAMAS_OWN = {"n": b"1", "parallel_tool_calls": b"true", "tool_choice": b'{"type":"auto"}'}


def encode_control(control: Control, session) -> list[tuple[str, Any]]:
    """A canonical control as ollama ``(key, value)`` pairs; ``options.x`` keys go in ``options``.

    An empty list means nothing is written (a recorded loss where something was meant).
    """
    name, value = control.name, control.value
    where = control.place
    if name in _CANONICAL_TO_TOP:
        key = _CANONICAL_TO_TOP[name]
        return [(key, _integer(key, value, control, where, session))]
    if name in _CANONICAL_TO_OPTION:
        key = "options." + _CANONICAL_TO_OPTION[name]
        return [(key, _integer(key, value, control, where, session))]
    if name == "response_format":
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "json_object":
            return [("format", "json")]
        if kind == "text":
            return []  # no format is the default
        if kind == "json_schema":
            for extra in ("name", "description", "strict"):
                if extra in value:
                    _lose(session, where + (f".json_schema.{extra}" if control.dialect == "openai" else f".{extra}"),
                          "field for it", dialect=control.dialect)
            return [("format", value.get("schema"))]
    elif name == "reasoning":
        from ...encoding import lose_uncarried, sets_no_reasoning

        if sets_no_reasoning(value):
            lose_uncarried(control, DIALECT, session)
            return []
        think = reasoning_to_think(value, where, control.dialect, session)
        if think is not None:
            lose_uncarried(control, DIALECT, session)
        if think is not None:
            return [("think", think)]
        return []
    elif name == "stream_options" and isinstance(value, dict) and set(value) <= {"include_usage"}:
        return []  # ollama's last line always has its counts (it was a loss)
    elif dumps(value) == _OLLAMAS_OWN.get(name):
        return []  # what ollama does anyway: nothing is lost without it
    _lose(session, where, "such parameter", dialect=control.dialect)
    return []


#: the fields the ollama client declares ``int`` that a canonical control is written to
INTEGER_KEYS = ("options.num_predict", "options.top_k", "options.seed", "top_logprobs")


def _integer(key: str, value: Any, control: Control, where: str, session) -> Any:
    """Another dialect's float for an integer field as its integer: an integral float is that
    integer, a fraction rounded down (recorded). (A float beyond 64 bits cannot come: the
    decoder refuses it, ``numbers.fault``; it is left as it is.)"""
    if key not in INTEGER_KEYS or type(value) is not float or not math.isfinite(value) \
            or not -(2.0**63) <= value < 2.0**63:
        return value
    if not value.is_integer():
        field = key[8:] if key.startswith("options.") else key
        _lose(session, where, f"fractional {field} ({value!r})", "rounded down", dialect=control.dialect)
    return int(value)


def _lose(session, where: str, what: str, done: str | None = None, *, dialect: str | None) -> None:
    session.lose(where, lacks(path_subject(where), DIALECT, what, done), dialect=dialect)


def reasoning_to_think(value: Any, where: str, dialect: str | None, session) -> Any:
    """Canonical reasoning -> ollama ``think``; see the module docstring."""
    if not isinstance(value, dict):
        _lose(session, where, "such reasoning setting", dialect=dialect)
        return None
    if value.get("enabled") is False:
        # thinking disabled wins over an effort given beside it (anthropic
        # thinking.type disabled + output_config.effort): never turn reasoning on
        if value.get("effort") not in (None, "none"):
            _lose(session, reasoning_place(value, "effort", where), f"effort with thinking off (effort {value['effort']!r})",
                  "think is false", dialect=dialect)
        if "budget_tokens" in value:  # (OpenRouter's reasoning: enabled false beside a max_tokens)
            _lose(session, reasoning_place(value, "budget_tokens", where), "thinking budget with thinking off",
                  "think is false", dialect=dialect)
        return False
    if "effort" in value:
        think = _think_level(value["effort"], reasoning_place(value, "effort", where), dialect, session)
        if "budget_tokens" in value:  # (beside it: anthropic thinking + output_config.effort)
            _lose(session, reasoning_place(value, "budget_tokens", where), "thinking budget beside an effort",
                  "the effort decides think", dialect=dialect)
        return think
    if "enabled" in value:
        if "budget_tokens" in value:
            _lose(session, reasoning_place(value, "budget_tokens", where), "thinking budget", "think is on or off",
                  dialect=dialect)
        return bool(value["enabled"])
    if "budget_tokens" in value:
        _lose(session, reasoning_place(value, "budget_tokens", where), "thinking budget", "think is on", dialect=dialect)
        return True
    _lose(session, where, "such reasoning setting", dialect=dialect)
    return None


def _think_level(effort: Any, where: str, dialect: str | None, session) -> Any:
    """An effort as a think level; ``where``: the effort's place."""
    if effort in _THINK_LEVELS:
        return effort
    if effort == "none":
        return False
    nearest = _NEAREST_LEVEL.get(dialect or "", _NEAREST_LEVEL["openai"]).get(effort)
    if nearest is not None:
        _lose(session, where, f"think level for effort {effort!r}", f"sent as think {nearest!r}", dialect=dialect)
        return nearest
    _lose(session, where, f"think level for effort {effort!r}", dialect=dialect)
    return None


def tool_to_canonical(tool: dict) -> tuple[dict, Any] | None:
    """``(attrs, parameters schema)`` of a function tool; None for other shapes.

    attrs: ``name``, ``description`` and, for other function keys,
    ``ollama_extra`` (their JSON members, spliced back for ollama targets); the members
    beside the function, ``ollama_tool_extra`` (spliced back beside it).
    A tool without ``type`` (the client always writes it) gets ``ollama_no_type``.
    """
    from ...decoding import beside_function, keep_members

    if tool.get("type", "function") != "function":
        return None
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    attrs: dict[str, Any] = {"name": function["name"]}
    keep_members(function, attrs, "ollama_extra", ("description",), ("name", "parameters"))
    beside_function(tool, attrs, "ollama_tool_extra")
    if "type" not in tool:
        attrs["ollama_no_type"] = True
    if "parameters" in function and function["parameters"] is None:
        attrs["ollama_null_parameters"] = True
    return attrs, function.get("parameters")


_TOOL_SHAPE_ATTRS = {"name", "description", "ollama_extra", "ollama_tool_extra", "ollama_no_type",
                     "ollama_null_parameters", "dialect", "path", "legacy"}


def tool_from_canonical(attrs: dict, schema_raw: bytes, session) -> bytes:
    """The ollama tool object for a canonical tool definition (compact JSON)."""
    from ...encoding import lose_tool_attr
    from ...jsonwriter import dumps

    body = b'{"name":' + dumps(attrs.get("name"))
    if "description" in attrs:
        body += b',"description":' + dumps(attrs["description"])
    if "ollama_extra" in attrs:
        body += b"," + attrs["ollama_extra"].encode()
    for key, value in attrs.items():
        if key not in _TOOL_SHAPE_ATTRS:
            lose_tool_attr(key, value, attrs, DIALECT, session)
    if schema_raw:
        body += b',"parameters":' + schema_raw
    elif attrs.get("ollama_null_parameters"):
        body += b',"parameters":null'
    body += b"}"
    if "ollama_tool_extra" in attrs:
        body += b"," + attrs["ollama_tool_extra"].encode()
    if attrs.get("ollama_no_type"):
        return b'{"function":' + body + b"}"
    return b'{"type":"function","function":' + body + b"}"
