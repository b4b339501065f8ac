"""Target limits and loss wording, by class (brief d): every source x target x cut x backend.

* a list a target caps (openai ``stop``: up to 4) keeps its first items, each one after is a
  loss at its own source path (strict: the error);
* a thinking budget mapped to a coarse effort is a loss at ``$.thinking.budget_tokens``
  unless the effort's budget is that budget; every thinking member canonical reasoning does
  not carry (``display``) is a loss at its own path;
* a tool's members another dialect has no field for are one loss each, at their own path,
  by their own name -- never the attribute that kept them;
* openai ``tools``/``functions``: ``null`` is a ``SchemaError`` (the client: not Optional).
"""

from __future__ import annotations

import json

import pytest

from interlingua import Options, SchemaError, LossError, Transcoder
from interlingua.losses import INTERNAL_WORDS

CUTS = (1, 7, None)
_HI = [{"role": "user", "content": "hi"}]


def _run(source: str, target: str, body: dict | bytes, cut: int | None, **options):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    t = Transcoder(source, target, kind="request", options=Options(**options))
    step = cut or len(data)
    out = b"".join(t.feed(data[i:i + step]) for i in range(0, len(data), step)) + t.close()
    return json.loads(out), [(loss.path, loss.reason) for loss in t.losses]


def _bodies(source: str, stops: list[str]) -> dict:
    if source == "anthropic":
        return {"model": "m", "max_tokens": 10, "stop_sequences": stops, "messages": _HI}
    return {"model": "m", "stream": False, "options": {"stop": stops}, "messages": _HI}


_STOP_AT = {"anthropic": "$.stop_sequences", "ollama": "$.options.stop"}


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("count", [1, 4, 5, 9])
@pytest.mark.parametrize("source", sorted(_STOP_AT))
def test_openai_gets_at_most_four_stop_sequences(backend, source, count, cut):
    stops = [f"s{i}" for i in range(count)]
    out, losses = _run(source, "openai", _bodies(source, stops), cut)
    assert out["stop"] == stops[:4]
    assert [path for path, _ in losses] == [f"{_STOP_AT[source]}[{i}]" for i in range(4, count)]
    assert all("openai has no room for more than 4 stop sequences" in reason for _, reason in losses)


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("source", sorted(_STOP_AT))
def test_a_fifth_stop_sequence_is_the_error_when_strict(backend, source, cut):
    with pytest.raises(LossError) as info:
        _run(source, "openai", _bodies(source, list("abcde")), cut, strict=True)
    assert info.value.path == f"{_STOP_AT[source]}[4]"


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("target", ["anthropic", "ollama"])
@pytest.mark.parametrize("source", sorted(_STOP_AT))
def test_other_targets_take_every_stop_sequence(backend, source, target, cut):
    if source == target:
        return
    out, losses = _run(source, target, _bodies(source, list("abcdef")), cut)
    stops = out["stop_sequences"] if target == "anthropic" else out["options"]["stop"]
    assert stops == list("abcdef") and not losses


#: anthropic thinking -> the losses expected in (openai, ollama)
THINKING = [
    ({"type": "enabled", "budget_tokens": 2048}, ["$.thinking.budget_tokens"], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 4096}, [], ["$.thinking.budget_tokens"]),  # exactly medium's
    ({"type": "enabled", "budget_tokens": 1024}, [], ["$.thinking.budget_tokens"]),  # exactly low's
    ({"type": "enabled", "budget_tokens": 20000}, ["$.thinking.budget_tokens"], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 2048, "display": "omitted"},
     ["$.thinking.budget_tokens", "$.thinking.display"], ["$.thinking.budget_tokens", "$.thinking.display"]),
    ({"type": "enabled", "budget_tokens": 4096, "display": None}, [], ["$.thinking.budget_tokens"]),
    ({"type": "adaptive", "display": "summarized"}, ["$.thinking.display"], ["$.thinking.display"]),
    ({"type": "adaptive"}, [], []),
    ({"type": "disabled"}, [], []),
]


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("target", ["openai", "ollama"])
@pytest.mark.parametrize("thinking,into_openai,into_ollama", THINKING, ids=[json.dumps(t[0]) for t in THINKING])
def test_every_thinking_member_is_carried_or_recorded(backend, thinking, into_openai, into_ollama, target, cut):
    body = {"model": "m", "max_tokens": 32000, "thinking": thinking, "messages": _HI}
    _, losses = _run("anthropic", target, body, cut)
    assert [path for path, _ in losses] == (into_openai if target == "openai" else into_ollama)


def test_a_budget_is_exact_by_the_configured_table(backend):
    body = {"model": "m", "max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": _HI}
    _, losses = _run("anthropic", "openai", body, None, anthropic_thinking_budgets={"medium": 2048})
    assert losses == []
    _, losses = _run("anthropic", "openai", body, None)
    assert losses == [("$.thinking.budget_tokens",
                       "thinking.budget_tokens: openai has no thinking budget; sent as reasoning_effort 'medium'")]


#: source -> (a body whose tools carry members no other dialect has, the expected loss paths)
TOOL_EXTRAS = {
    "anthropic": ({"model": "m", "max_tokens": 10, "messages": _HI, "tools": [
        {"name": "a", "input_schema": {"type": "object"}},
        {"name": "b", "input_schema": {"type": "object"}, "defer_loading": True, "eager_input_streaming": True,
         "allowed_callers": ["direct"], "input_examples": [{}]}]},
        ["$.tools[1].defer_loading", "$.tools[1].eager_input_streaming", "$.tools[1].allowed_callers",
         "$.tools[1].input_examples"]),
    "openai": ({"model": "m", "messages": _HI, "tools": [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "x_y": 1, "x_w": 2}}],
        "functions": [{"name": "c", "parameters": {"type": "object"}, "x_v": 3}]},
        ["$.tools[0].function.x_y", "$.tools[0].function.x_w", "$.functions[0].x_v"]),
    "ollama": ({"model": "m", "stream": False, "messages": _HI, "tools": [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}, "x_z": 3}}]},
        ["$.tools[1].function.x_z"]),
}


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("target", ["anthropic", "openai", "ollama"])
@pytest.mark.parametrize("source", sorted(TOOL_EXTRAS))
def test_each_tool_member_is_its_own_loss(backend, source, target, cut):
    if source == target:
        return
    body, paths = TOOL_EXTRAS[source]
    _, losses = _run(source, target, body, cut)
    assert [path for path, _ in losses] == paths
    for path, reason in losses:
        member = path.split("].", 1)[1]
        assert reason == f"{member} of a tool: {target} has no field for it"
        assert not any(word in reason for word in INTERNAL_WORDS), reason


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("target", ["anthropic", "openai", "ollama"])
@pytest.mark.parametrize("key", ["tools", "functions"])
def test_openai_tools_null_is_a_schema_error(backend, key, target, cut):
    body = b'{"model": "m", "' + key.encode() + b'": null, "messages": [{"role": "user", "content": "hi"}]}'
    with pytest.raises(SchemaError) as info:
        _run("openai", target, body, cut)
    assert info.value.path == f"$.{key}" and info.value.offset == body.index(b"null")
