"""Anthropic request fields <-> canonical controls and tool definitions.

Every parameter of ``anthropic ... messages.create`` is classified here: a
control (``CONTROLS``), structural (``STRUCTURAL``), or an extension
(``EXTENSIONS``: anthropic-only, passed through to anthropic targets, a
recorded loss elsewhere). ``tests/anthropic/test_params.py`` fails when the
installed client has a parameter in none of these.

One anthropic field may carry several canonical controls
(``tool_choice.disable_parallel_tool_use`` is ``parallel_tool_calls``;
``output_config`` is reasoning effort and response format). The first control
carries the field's raw JSON (``key``/``raw``: the anthropic encoder writes it
back verbatim); the others are *derived*: ``raw is None``, skipped by the
anthropic encoder, mapped by every other one.

Canonical ``reasoning`` values: ``{"effort": e}`` (output_config.effort,
openai reasoning_effort), ``{"enabled": true, "budget_tokens": n}``,
``{"enabled": true, "adaptive": true}``, ``{"enabled": false}`` (thinking).
Reasoning on without a budget (ollama ``think: true``) is adaptive thinking.

Numbers: ``thinking.budget_tokens`` is an integer of at least 1024 (an integral float is that
integer); a fraction or less is a ``SchemaError`` at ``$.thinking.budget_tokens``, as is any
control outside anthropic's range (``numbers.RANGES``: max_tokens at least 1, temperature and
top_p 0-1, top_k at least 0). Another dialect's max tokens below 1 (ollama ``num_predict: 0``)
is sent as 1, a recorded loss (``numbers.clamp``); a budget made from an effort is fitted to
1024 <= budget < max_tokens (``_fit_budget``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...canonical import Control
from ..fields import check_members
from ...errors import SchemaError
from ...encoding import (blank_text, choice_fate, lose_tool_attr, lose_uncarried, merged_reasoning, object_schema,
                         reasoning_place, sets_no_reasoning)
from ...jsonwriter import dumps
from ...losses import INTERNAL_ATTRS, lacks, path_subject
from ...numbers import INT64_MAX, INT64_MIN, RANGES, clamp, no_limit

DIALECT = "anthropic"

STRUCTURAL = {"messages", "system", "tools"}
CONTROLS = {
    "model": "model",
    "max_tokens": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop_sequences": "stop",
    "stream": "stream",
    "tool_choice": "tool_choice",
    "thinking": "reasoning",
    "output_config": "reasoning",  # and response_format
    "metadata": "user",
    "service_tier": "service_tier",
}
EXTENSIONS = {
    "cache_control", "container", "diagnostics", "inference_geo", "speed", "user_profile_id",
    "workspace_id",
}
CLIENT_ONLY = {"extra_headers", "extra_query", "extra_body", "timeout"}


def decode(key: str, raw: bytes) -> list[Control] | None:
    """The controls a top-level field means (first carries the raw), or None (an extension)."""
    if key not in CONTROLS:
        return None
    value = json.loads(raw)
    check_members(DIALECT, key, value)
    pairs = _to_canonical(key, value)
    if not pairs:  # nothing canonical in it (e.g. empty metadata): still written back verbatim
        return [Control("anthropic:" + key, value, dialect=DIALECT, key=key, raw=raw)]
    out = []
    for i, (name, canonical) in enumerate(pairs):
        if i == 0:
            out.append(Control(name, canonical, dialect=DIALECT, key=key, raw=raw))
        else:  # derived from one member of the field: a loss of it names that member
            out.append(Control(name, canonical, dialect=DIALECT, key=f"{key}.{DERIVED_MEMBER[name]}"))
    return out


#: the member of a field that a second control of it comes from
DERIVED_MEMBER = {"parallel_tool_calls": "disable_parallel_tool_use", "response_format": "format"}


def _to_canonical(key: str, value: Any) -> list[tuple[str, Any]]:
    if key == "stop_sequences":
        return [("stop", value)]
    if key == "tool_choice":
        return tool_choice_to_canonical(value)
    if key == "thinking":
        return [("reasoning", thinking_to_canonical(value))]
    if key == "output_config":
        pairs = []
        if isinstance(value, dict):
            if value.get("effort") is not None:
                pairs.append(("reasoning", {"effort": value["effort"]}))
            fmt = value.get("format")
            if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
                pairs.append(("response_format", {"type": "json_schema", "schema": fmt.get("schema")}))
        return pairs
    if key == "metadata":
        if isinstance(value, dict) and value.get("user_id") is not None:
            return [("user", value["user_id"])]
        return []
    if key == "service_tier":
        return [("service_tier", "default" if value == "standard_only" else value)]
    return [(CONTROLS[key], value)]


def tool_choice_to_canonical(value: Any) -> list[tuple[str, Any]]:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "auto" or kind == "none":
        choice = {"type": kind}
    elif kind == "any":
        choice = {"type": "required"}
    elif kind == "tool":
        choice = {"type": "tool", "name": value.get("name")}
    else:
        choice = {"type": "other", "value": value}
    pairs = [("tool_choice", choice)]
    if isinstance(value, dict) and value.get("disable_parallel_tool_use") is not None:
        pairs.append(("parallel_tool_calls", not value["disable_parallel_tool_use"]))
    return pairs


#: the members of each thinking type the canonical reasoning carries
_THINKING_CARRIED = {"enabled": ("type", "budget_tokens"), "disabled": ("type",), "adaptive": ("type",)}


def thinking_to_canonical(value: Any, least_budget: bool = True) -> Any:
    """``thinking`` as canonical reasoning. Members it does not carry (``display``, any
    other) are named in ``uncarried``, so another target records each as a loss.
    ``least_budget``: a budget below anthropic's least is the input's fault (anthropic's own
    body); LiteLLM's ``thinking`` in an openai body passes ``False`` -- openai has no such
    rule, and an anthropic target raises the budget to its least, a recorded loss."""
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "enabled":
        out = {"enabled": True}
        if "budget_tokens" in value:
            out["budget_tokens"] = _budget(value["budget_tokens"], least_budget)
    elif kind == "disabled":
        out = {"enabled": False}
    elif kind == "adaptive":
        out = {"enabled": True, "adaptive": True}
    else:
        return {"other": value}
    # an explicit null is absent (display: null is the model's default)
    rest = [k for k, v in value.items() if k not in _THINKING_CARRIED[kind] and v is not None]
    if rest:
        out["uncarried"] = rest
    return out


_BUDGET_PATH = "$.thinking.budget_tokens"


def _budget(budget: Any, least_budget: bool = True) -> Any:
    """``thinking.budget_tokens`` as anthropic takes it: an integer (an integral float is
    that integer, ``2048.0``), at least 1024; a fraction or a smaller one is the input's
    fault (a ``SchemaError`` at its path, located by the pipeline at the field's first byte).
    Its type was checked before (``fields.check_members``: an integer, or an integral float)."""
    if isinstance(budget, float):
        if not budget.is_integer():
            raise SchemaError("expected an integer for budget_tokens, got a number with a fraction", path=_BUDGET_PATH)
        if not -(2.0**63) <= budget < 2.0**63:
            raise SchemaError("number out of range for thinking.budget_tokens: beyond a 64-bit integer",
                              path=_BUDGET_PATH)
        budget = int(budget)
    elif not least_budget and not INT64_MIN <= budget <= INT64_MAX:
        # (openai's: beyond 64 bits no API takes it -- as a float one is for anthropic's own)
        raise SchemaError("number out of range for thinking.budget_tokens: beyond a 64-bit integer", path=_BUDGET_PATH)
    least = RANGES[DIALECT]["thinking.budget_tokens"][0]
    if least_budget and budget < least:
        raise SchemaError(f"number out of range for thinking.budget_tokens: {budget} (anthropic takes {least} or more)",
                          path=_BUDGET_PATH)
    return budget


# -- encoding: canonical controls of another dialect -> anthropic fields ----------------

_SAME = {"model": "model", "max_output_tokens": "max_tokens", "stream": "stream"}
#: sampling fields older anthropic bodies carry (decoded, passed through anthropic -> anthropic)
#: that the installed client's ``messages.create`` no longer declares: a recorded loss
#: when another dialect's request is encoded (output has only declared keys).
_UNDECLARED = {"temperature", "top_p", "top_k"}
#: anthropic's effort scale; openai's other values map as documented in ``encode``
_EFFORTS = {"low", "medium", "high", "xhigh", "max"}
#: controls whose canonical default value means "not given": dropped without a loss
_DEFAULTS = {"n": 1, "frequency_penalty": 0, "presence_penalty": 0, "logprobs": False,
             "parallel_tool_calls": True}


def encode(controls: dict[str, list[Control]], session, unthought_tool_turn: bool = False,
           tools_sent: set | None = None) -> list[tuple[str, bytes]]:
    """All foreign controls at once (they merge): ``[(anthropic key, raw JSON)]``.

    Mapping decisions:
    * ``stop`` -> ``stop_sequences`` (a string becomes a one-element list); a sequence
      without a non-whitespace character is not sent, recorded (``_stop_sequences``);
    * ``tool_choice`` ``required`` -> ``any``; ``parallel_tool_calls: false`` ->
      ``disable_parallel_tool_use: true`` on the tool choice (``auto`` if none);
    * ``reasoning``: ``{"effort": e}`` -> ``output_config.effort`` (``minimal`` ->
      ``low``, a recorded loss) plus ``thinking: {"type": "adaptive"}``; effort
      ``none`` -> ``thinking: {"type": "disabled"}``; a budget ->
      ``thinking: {"type": "enabled", "budget_tokens": n}``;
    * ``response_format`` ``json_schema`` -> ``output_config.format`` (the
      schema's ``name``/``description``/``strict`` are recorded losses);
      ``text`` is the default (dropped); ``json_object`` is a loss;
    * ``user`` -> ``metadata.user_id``; ``service_tier`` ``default`` ->
      ``standard_only``, ``auto`` -> ``auto``, others are losses;
    * ``temperature``, ``top_p``, ``top_k``: not declared by the installed client
      (``messages.create`` has no such parameter): recorded losses;
    * ``max_tokens`` is required: ``Options.default_max_tokens`` when absent.
    * a control given twice (openai ``max_completion_tokens`` and the legacy
      ``max_tokens``): the first value wins, another value is a recorded loss
      (as in the ollama encoder); ``reasoning`` values merge instead.
    """
    out: list[tuple[str, bytes]] = []
    given = {name: _first(items, session) for name, items in controls.items() if name != "reasoning"}
    max_tokens = _max_tokens(given, session)
    for name, control in given.items():
        key = _SAME.get(name)
        if key is None or name == "max_output_tokens":
            continue
        out.append((key, dumps(control.value)))
    if "stop" in given:
        _stop_sequences(given["stop"], session, out)
    forced = _tool_choice(given, session, out, tools_sent)
    max_tokens = _reasoning(controls.get("reasoning", []), given, session, out, max_tokens, forced,
                            unthought_tool_turn)
    out.insert(0, ("max_tokens", dumps(max_tokens)))
    if "user" in given:
        out.append(("metadata", dumps({"user_id": given["user"].value})))
    if "service_tier" in given:
        tier = {"default": "standard_only", "auto": "auto"}.get(given["service_tier"].value)
        if tier is None:
            _lose(session, given["service_tier"], f"service tier {given['service_tier'].value!r}")
        else:
            out.append(("service_tier", dumps(tier)))
    handled = set(_SAME) | {"stop", "tool_choice", "parallel_tool_calls", "reasoning", "response_format",
                            "user", "service_tier"}
    for name, control in given.items():
        if name in handled:
            continue
        if name in _UNDECLARED:
            _lose(session, control, "such parameter", "the client's messages.create does not declare it")
            continue
        if name in _DEFAULTS and control.value == _DEFAULTS[name]:
            continue
        if name == "stream_options" and set(control.value or {}) <= {"include_usage"}:
            continue  # anthropic streams always report usage
        _lose(session, control, "such parameter")
    return out


def _stop_sequences(control: Control, session, out: list) -> None:
    """``stop_sequences`` of the canonical stop list. anthropic refuses a stop sequence that is
    empty or whitespace only ("stop_sequences: each stop sequence must contain non-whitespace";
    openai's ``stop: ["\\n"]`` is common): such a one is not sent, recorded at its element
    (``$.stop[1]``; the field itself when it came as a string); none left, no field.
    Whitespace is ``encoding.blank``'s: spaces, newlines, tabs, carriage returns."""
    stop = control.value
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list):
        out.append(("stop_sequences", dumps(stops)))
        return
    listed = control.raw[:1] == b"[" if control.raw is not None else isinstance(stop, list)
    kept = []
    for i, sequence in enumerate(stops):
        if isinstance(sequence, str) and blank_text(sequence):
            _lose(session, control, f"stop sequence {sequence!r} without a non-whitespace character (it refuses one)",
                  "not sent", sub=f"[{i}]" if listed else "")
        else:
            kept.append(sequence)
    if kept or not stops:
        out.append(("stop_sequences", dumps(kept)))


def _first(items: list[Control], session) -> Control:
    """The control written of several with one name; the others are losses unless equal."""
    for other in items[1:]:
        if other.value != items[0].value:
            _lose(session, other, f"second value for {other.name}", "the first is kept")
    return items[0]


def _lose(session, control: Control, what: str, done: str | None = None, sub: str = "") -> None:
    """``control`` (or its member ``sub``) has no anthropic form: named by its source path."""
    where = control.place + sub
    session.lose(where, lacks(path_subject(where), DIALECT, what, done), dialect=control.dialect)


def _lose_member(session, items: list[Control], merged: dict, member: str, what: str, done: str | None = None) -> None:
    """A loss about ``member`` of the reasoning settings merged (``merged_reasoning``'s value): at
    the field it came from (``encoding.reasoning_place``), the last field when none has it."""
    last = items[-1]
    where = reasoning_place(merged, member, last.place)
    session.lose(where, lacks(path_subject(where), DIALECT, what, done), dialect=last.dialect)


def _max_tokens(given: dict, session) -> int | None:
    """anthropic's required ``max_tokens`` (an integer): the source's, an integral float
    as its integer, another number rounded down (recorded); ``None``: the source gave
    none (``_reasoning`` settles it)."""
    control = given.get("max_output_tokens")
    if control is None:
        return None
    value = control.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _lose(session, control, f"max_tokens that is not a number ({value!r})", "Options.default_max_tokens is written")
        return None
    if no_limit(control):
        _lose(session, control, f"max_tokens for no limit (num_predict {value!r})", "Options.default_max_tokens is written")
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            _lose(session, control, f"max_tokens that is not a number ({value!r})",
                  "Options.default_max_tokens is written")
            return None
        if not value.is_integer():
            _lose(session, control, f"fractional max_tokens ({value!r})", "rounded down")
        if not -(2.0**63) <= value < 2.0**63:
            raise _beyond_64_bits(control)
        value = int(value)
    elif not INT64_MIN <= value <= INT64_MAX:
        raise _beyond_64_bits(control)
    return clamp(control, DIALECT, "max_tokens", session, value)  # (ollama num_predict 0: 1)


def _beyond_64_bits(control: Control) -> SchemaError:
    """Max tokens an encoder is given beyond 64 bits (a Transcoder's decoder refuses it first,
    at the value: ``numbers``): the same wording, at its source path."""
    key = control.key or control.name
    return SchemaError(f"number out of range for {key}: {control.value!r} is beyond a 64-bit integer "
                       f"(what converting it for anthropic takes)", path=f"$.{key}")


def _tool_choice(given: dict, session, out: list, tools_sent: set | None = None) -> bool:
    """Writes ``tool_choice``; returns whether it forces tool use (``any``/``tool``).
    ``tools_sent``: the tools the request carries (None: not known): with none, a choice is
    not written (anthropic refuses one without tools) -- a forced one is a recorded loss, the
    others say nothing then; a named tool that is not sent is a recorded loss
    (``encoding.choice_fate``)."""
    choice = None
    if "tool_choice" in given:
        value = given["tool_choice"].value or {}
        kind = value.get("type")
        goes, loss = choice_fate(value, tools_sent) if tools_sent is not None else (True, None)
        if loss is not None:
            _lose(session, given["tool_choice"], loss, "not sent")
        elif not goes:
            pass  # auto / none without tools: nothing to choose, nothing lost
        elif kind in ("auto", "none"):
            choice = {"type": kind}
        elif kind == "required":
            choice = {"type": "any"}
        elif kind == "tool":
            choice = {"type": "tool", "name": session.tool_name_out(value.get("name"), "$.tool_choice")}
        else:
            _lose(session, given["tool_choice"], "such tool choice")
    parallel = given.get("parallel_tool_calls")
    if parallel is not None and parallel.value is False and tools_sent != set():
        if choice is None:
            choice = {"type": "auto"}
        if choice["type"] == "none":
            pass  # no tool use at all: nothing to disable
        else:
            choice["disable_parallel_tool_use"] = True
    if choice is not None:
        out.append(("tool_choice", dumps(choice)))
    return choice is not None and choice["type"] in ("any", "tool")


#: ``Options.anthropic_thinking="auto"``: models that take adaptive thinking and
#: ``output_config.effort`` (Claude 4.6 and later, every 5.x and later family);
#: any other model -- older Claude models, anthropic-compatible servers -- gets
#: manual thinking with a budget.
ADAPTIVE_MODELS = re.compile(
    r"(?:.*[/.:])?claude-(?:(?:opus|sonnet|haiku)-4-(?:[6-9]|[1-9]\d)|[a-z]+-(?:[5-9]|[1-9]\d)|mythos|fable)(?!\d)",
    re.ASCII)  # a model name's version digits are ASCII ones (``\d`` would take "٦")
#: default ``Options.anthropic_thinking_budgets``: each effort's thinking budget; the
#: openai decoder's reverse table (< 2048 low, < 8192 medium, else high) gives each back
THINKING_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768, "max": 65536}
_MIN_BUDGET = 1024  # anthropic's least budget_tokens


def thinking_mode(session, model: Any) -> str:
    """``adaptive`` or ``budget``: ``Options.anthropic_thinking``, ``auto`` decided by the model name."""
    mode = session.options.anthropic_thinking
    if mode != "auto":
        return mode
    return "adaptive" if isinstance(model, str) and ADAPTIVE_MODELS.match(model) else "budget"


def _reasoning(items: list[Control], given: dict, session, out: list, max_tokens: int | None,
               forced: bool, unthought_tool_turn: bool = False) -> int:
    """Writes ``thinking`` / ``output_config``; returns the ``max_tokens`` to write.

    * effort (openai ``reasoning_effort``, ollama think levels) in ``adaptive``
      mode: ``thinking: adaptive`` plus ``output_config.effort``; in ``budget``
      mode: ``thinking: enabled`` with the effort's budget
      (``Options.anthropic_thinking_budgets``) and no effort field;
    * a budget must be below ``max_tokens``: when the source gave no max tokens,
      ``max_tokens`` is ``Options.default_max_tokens`` plus the budget (thinking
      counts toward it); when it did, a budget that does not fit is cut to
      ``max_tokens - 1`` (recorded), and when not even 1024 fits, thinking is off
      (recorded);
    * a forced tool choice (openai ``required`` or a named function) and thinking
      cannot go together (anthropic rejects it): the tool choice is kept -- the
      caller's control flow depends on it -- and thinking is a recorded loss
      (in adaptive mode ``output_config.effort`` stays: it is not thinking);
    * ``unthought_tool_turn``: the request's last assistant message calls tools and does not
      begin with a thinking block (another dialect's client cannot send the signed thinking
      back): anthropic refuses thinking then ("a final assistant message must start with a
      thinking block"), so thinking is a recorded loss, as with a forced tool choice.
    """
    merged: dict = {}
    if items:  # one setting, as every target merges it (each member's field in its ``at``)
        merged_control = merged_reasoning(items, DIALECT, session)
        lose_uncarried(merged_control, DIALECT, session)  # (LiteLLM's thinking.display of an openai body)
        merged = merged_control.value
    model = given["model"].value if "model" in given else None
    mode = thinking_mode(session, model)
    budgets = session.options.anthropic_thinking_budgets or THINKING_BUDGETS
    output_config: dict = {}
    thinking = None
    effort = merged.get("effort")
    decided_by = "enabled"  # the member the thinking is made of: its losses are at its field
    if merged.get("enabled") is False and effort not in (None, "none"):
        # never turn reasoning on (as ollama's think and openai's effort do)
        _lose_member(session, items, merged, "effort", f"effort with thinking off (effort {effort!r})", "thinking is off")
        effort = None
    if effort is not None:
        decided_by = "effort"
        if effort == "none":
            thinking = {"type": "disabled"}
        else:
            if effort not in _EFFORTS:
                _lose_member(session, items, merged, "effort", f"effort level {effort!r}", "approximated as 'low'")
                effort = "low"
            if mode == "adaptive":
                output_config["effort"] = effort
                thinking = {"type": "adaptive"}
            else:
                thinking = {"type": "enabled", "budget_tokens": budgets.get(effort, THINKING_BUDGETS[effort])}
            if "budget_tokens" in merged:  # (beside it: LiteLLM's thinking + reasoning_effort)
                _lose_member(session, items, merged, "budget_tokens", "thinking budget beside an effort",
                             "the effort decides the thinking")
    elif merged.get("enabled") is False:
        thinking = {"type": "disabled"}
        if "budget_tokens" in merged:  # (OpenRouter's reasoning: enabled false beside a max_tokens)
            _lose_member(session, items, merged, "budget_tokens", "thinking budget with thinking off", "thinking is off")
    elif merged.get("adaptive") or (merged.get("enabled") is True and "budget_tokens" not in merged):
        # on, no budget given (ollama think: true): the model decides, or openai's default depth
        thinking = {"type": "adaptive"} if mode == "adaptive" else {
            "type": "enabled", "budget_tokens": budgets.get("medium", THINKING_BUDGETS["medium"])}
    elif isinstance(merged.get("budget_tokens"), int):
        thinking = {"type": "enabled", "budget_tokens": merged["budget_tokens"]}
        decided_by = "budget_tokens"
    elif items and not sets_no_reasoning(merged):
        _lose(session, items[-1], "such reasoning setting")
    if forced and thinking is not None and thinking["type"] != "disabled":
        _lose(session, items[-1], "thinking together with a forced tool choice",
              "the tool choice is kept, thinking is off")
        thinking = None
    if unthought_tool_turn and thinking is not None and thinking["type"] != "disabled":
        _lose(session, items[-1], "thinking in a tool loop whose last assistant turn does not begin with its thinking",
              "thinking is off")
        thinking = None
    if thinking is not None and thinking["type"] == "enabled":
        thinking, max_tokens = _fit_budget(thinking, max_tokens, items, merged, decided_by, session)
    if max_tokens is None:
        max_tokens = session.options.default_max_tokens
    if "response_format" in given:
        fmt = given["response_format"].value or {}
        kind = fmt.get("type")
        if kind == "json_schema":
            output_config["format"] = {"type": "json_schema", "schema": fmt.get("schema")}
            for extra in ("name", "description", "strict"):
                if extra in fmt:
                    control = given["response_format"]
                    _lose(session, control, "field for it",
                          sub=f".json_schema.{extra}" if control.dialect == "openai" else f".{extra}")
        elif kind != "text":
            _lose(session, given["response_format"], f"response format {kind!r}")
    if thinking is not None:
        out.append(("thinking", dumps(thinking)))
    if output_config:
        out.append(("output_config", dumps(output_config)))
    return max_tokens


def _fit_budget(thinking: dict, max_tokens: int | None, items: list[Control], merged: dict, decided_by: str, session):
    """``(thinking or None, max_tokens)`` with ``1024 <= budget_tokens < max_tokens``; its losses
    are at the field of ``decided_by``, the member the budget came from."""
    def lose(what: str, done: str) -> None:
        _lose_member(session, items, merged, decided_by, what, done)

    budget = thinking["budget_tokens"]
    if budget < _MIN_BUDGET:
        lose(f"thinking budget below {_MIN_BUDGET} ({budget})", f"raised to {_MIN_BUDGET}")
        budget = _MIN_BUDGET
    if max_tokens is None:
        return {"type": "enabled", "budget_tokens": budget}, session.options.default_max_tokens + budget
    if budget < max_tokens:
        return {"type": "enabled", "budget_tokens": budget}, max_tokens
    if max_tokens - 1 >= _MIN_BUDGET:
        lose(f"thinking budget of max_tokens or more ({budget})", f"cut to {max_tokens - 1}")
        return {"type": "enabled", "budget_tokens": max_tokens - 1}, max_tokens
    lose(f"room below max_tokens {max_tokens} for the least thinking budget ({_MIN_BUDGET})", "thinking is off")
    return None, max_tokens


# -- tools ------------------------------------------------------------------------

#: keys of a custom tool that are canonical tool-definition attrs
_TOOL_ATTRS = ("description", "strict", "cache_control")


def tool_to_canonical(tool: dict) -> tuple[dict, Any] | None:
    """``(attrs, input_schema)`` of a custom tool; None for server tools (carried raw)."""
    from ...decoding import keep_members

    if tool.get("type") not in (None, "custom") or not isinstance(tool.get("name"), str):
        return None
    if "input_schema" not in tool:
        return None
    attrs: dict[str, Any] = {"name": tool["name"]}
    # (type: "custom" or null, absent's meaning)
    keep_members(tool, attrs, "anthropic_extra", _TOOL_ATTRS, ("name", "input_schema", "type"))
    return attrs, tool["input_schema"]


def tool_from_canonical(attrs: dict, schema_raw: bytes, session) -> bytes:
    """The anthropic custom tool for a canonical tool definition (compact JSON).

    A tool without a parameter schema gets ``{"type": "object", "properties": {}}``
    (anthropic requires ``input_schema``)."""
    body = b'{"name":' + dumps(session.tool_name_out(attrs.get("name"), "$.tools"))
    for key, value in attrs.items():
        if key in _TOOL_ATTRS:
            body += b"," + dumps(key) + b":" + dumps(value)
        elif key == "anthropic_extra":
            body += b"," + value.encode()
        elif key != "name" and key not in INTERNAL_ATTRS:  # (ollama's tool shape: nothing lost)
            lose_tool_attr(key, value, attrs, DIALECT, session)
    if schema_raw and session.source != DIALECT:
        schema_raw = flat_schema(object_schema(schema_raw, session, attrs.get("name")), session, attrs.get("name"))
    body += b',"input_schema":' + (schema_raw or b'{"type":"object","properties":{}}')
    return body + b"}"


#: the combining keywords anthropic refuses at the top of a tool schema
COMBINATORS = ("allOf", "anyOf", "oneOf")


def flat_schema(schema_raw: bytes, session, name: object) -> bytes:
    """Another dialect's object schema without ``allOf`` / ``anyOf`` / ``oneOf`` at its top:
    anthropic refuses such a tool ("input_schema does not support oneOf, allOf, or anyOf at
    the top level"), and with it the whole request -- what an MCP tool whose parameters are a
    union (zod's ``z.union``) gets through an openai client. Their branches' ``properties`` are
    merged into the schema's (a name it has already keeps its own; keywords and branches in
    the schema's order); an ``allOf`` branch's ``required`` names are required (an ``anyOf`` /
    ``oneOf`` branch's are not: the others' would not hold); the rest of the branches (their
    own constraints, the choice among them) is lost, recorded. A ``properties`` or ``required`` that is not an
    object / list is left as it is, and nothing merged into it."""
    if not any(b'"' + key.encode() + b'"' in schema_raw for key in COMBINATORS):
        return schema_raw  # (the usual schema: no need to parse it)
    schema = json.loads(schema_raw)
    found = [key for key in schema if key in COMBINATORS]
    if not found:
        return schema_raw
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    merged = dict(properties) if isinstance(properties, dict) else None
    needed = list(required) if isinstance(required, list) else None
    for key in found:
        branches = schema[key]
        for branch in branches if isinstance(branches, list) else []:
            if not isinstance(branch, dict):
                continue
            if merged is not None and isinstance(branch.get("properties"), dict):
                for prop, value in branch["properties"].items():
                    merged.setdefault(prop, value)
            if key == "allOf" and needed is not None and isinstance(branch.get("required"), list):
                for required_name in branch["required"]:
                    if required_name not in needed:  # (each once: a branch may name one twice)
                        needed.append(required_name)
    flat = {key: value for key, value in schema.items() if key not in COMBINATORS}
    if merged is not None and (merged or "properties" in schema):
        flat["properties"] = merged
    if needed is not None and (needed or "required" in schema):
        flat["required"] = needed
    session.lose("$.tools", lacks(f"parameters of tool {name!r}, with {' and '.join(found)} at the top level",
                                  DIALECT, "tool schema with allOf, anyOf or oneOf at its top (it refuses one)",
                                  "their branches' properties are merged into the object schema, the rest is not sent"))
    return dumps(flat)
