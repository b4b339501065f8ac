"""LiteLLM's ``thinking`` in an openai body (its SDK's and proxy's own parameter: anthropic's thinking
setting as anthropic writes it) is read as anthropic's ``thinking`` is -- canonical reasoning -- so an
anthropic target thinks as asked, an ollama one thinks (its budget recorded), and an openai target
gets the field back as it came. Before, it was recorded as a field anthropic does not read from
another dialect's body, and the request went without thinking.

Decided: openai has no least budget, so a budget below anthropic's 1024 is not the body's fault: into
anthropic it is raised to 1024 (recorded), as another dialect's budget is; a budget beyond 64 bits, a
fraction or a member of the wrong type is a ``SchemaError`` at its path for every target, as for
anthropic's own field. Members the canonical value does not carry (``display``) are recorded at their
own path. rpt/request-openai-thinking pins one request (every cut); this table runs the class on
whichever backend the suite runs.

OpenRouter's ``reasoning`` (effort, max_tokens, enabled, exclude) is canonical reasoning the same way
(rpt/request-openrouter-reasoning); and where one body has two reasoning fields, they merge into one
setting the same for every target whatever their order: thinking off wins (an effort or budget beside
it recorded), an effort wins over a budget (the budget recorded), a member two fields set is the later
field's (the earlier recorded), each loss at its own field."""

from __future__ import annotations

import json

import pytest

import validity
from interlingua import SchemaError
from rpt import transcode_cut

_MESSAGES = [{"role": "user", "content": "Why is the sky blue?"}]

#: (thinking, max_tokens) -> (anthropic thinking written, anthropic's max_tokens, ollama's think,
#: the loss paths into anthropic, the loss paths into ollama)
CASES = [
    ({"type": "enabled", "budget_tokens": 2048}, 8192,
     {"type": "enabled", "budget_tokens": 2048}, 8192, True, [], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 2048.0}, 8192,
     {"type": "enabled", "budget_tokens": 2048}, 8192, True, [], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 500}, 8192,
     {"type": "enabled", "budget_tokens": 1024}, 8192, True, ["$.thinking.budget_tokens"], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 9000}, 8192,
     {"type": "enabled", "budget_tokens": 8191}, 8192, True, ["$.thinking.budget_tokens"], ["$.thinking.budget_tokens"]),
    ({"type": "enabled", "budget_tokens": 2048}, None,
     {"type": "enabled", "budget_tokens": 2048}, 4096 + 2048, True, [], ["$.thinking.budget_tokens"]),
    ({"type": "enabled"}, 8192,
     {"type": "enabled", "budget_tokens": 4096}, 8192, True, [], []),
    ({"type": "enabled", "budget_tokens": 2048, "display": "summarized"}, 8192,
     {"type": "enabled", "budget_tokens": 2048}, 8192, True, ["$.thinking.display"],
     ["$.thinking.budget_tokens", "$.thinking.display"]),
    ({"type": "adaptive"}, 8192, {"type": "enabled", "budget_tokens": 4096}, 8192, True, [], []),
    ({"type": "disabled"}, 8192, {"type": "disabled"}, 8192, False, [], []),
    ({"type": "enabled", "budget_tokens": 2048, "x": 1}, 8192,
     {"type": "enabled", "budget_tokens": 2048}, 8192, True, ["$.thinking.x"],
     ["$.thinking.budget_tokens", "$.thinking.x"]),
    ({"type": "other"}, 8192, None, 8192, None, ["$.thinking"], ["$.thinking"]),
    ({}, 8192, None, 8192, None, ["$.thinking"], ["$.thinking"]),
    (None, 8192, None, 8192, None, [], []),
]


def _body(thinking, max_tokens) -> bytes:
    request: dict = {"model": "claude-sonnet-4-5"}
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    request["thinking"] = thinking
    request["messages"] = _MESSAGES
    return json.dumps(request).encode()


@pytest.mark.parametrize("case", CASES, ids=[json.dumps(case[:2]) for case in CASES])
def test_litellm_thinking_is_read_as_anthropics(case):
    thinking, max_tokens, into_anthropic, anthropic_max, think, anthropic_losses, ollama_losses = case
    body = _body(thinking, max_tokens)
    for target, want_losses in (("anthropic", anthropic_losses), ("ollama", ollama_losses), ("openai", [])):
        whole, losses = transcode_cut("openai", target, body, [])
        assert transcode_cut("openai", target, body, list(range(1, len(body)))) == (whole, losses)
        assert [path for path, _ in losses] == want_losses, (target, losses)
        out = json.loads(whole)
        if target == "openai":
            assert out == json.loads(body)  # its own field, as it came
            continue
        assert validity.check(target, "request", whole, enforced_only=True) == [], whole
        if target == "anthropic":
            assert out.get("thinking") == into_anthropic
            assert out["max_tokens"] == anthropic_max
        else:
            assert out.get("think") == think


def test_anthropic_says_its_own_display_is_not_read_from_another_dialect():
    _, losses = transcode_cut("openai", "anthropic", _body({"type": "adaptive", "display": "omitted"}, 8192), [])
    assert losses == [("$.thinking.display", "thinking.display: anthropic has no such field of openai's (its own "
                                             "display is not read from another dialect's body)")]


@pytest.mark.parametrize("budget,message", [
    (2048.5, "got a number with a fraction"),
    ("2048", "got string"),
    (None, "got null"),
    (10**20, "beyond a 64-bit integer"),
    (-10**20, "beyond a 64-bit integer"),
    (1e300, "beyond a 64-bit integer"),
])
@pytest.mark.parametrize("target", ["anthropic", "ollama", "openai"])
def test_a_budget_no_api_takes_is_the_inputs_fault(budget, message, target):
    with pytest.raises(SchemaError, match=message) as raised:
        transcode_cut("openai", target, _body({"type": "enabled", "budget_tokens": budget}, 8192), [])
    assert (raised.value.dialect, raised.value.path) == ("openai", "$.thinking.budget_tokens")


#: the reasoning settings of an openai body with both fields, in either order, into each target:
#: the effort wins (a budget beside it recorded at its own field), thinking off wins over an
#: effort (never turn reasoning on: the effort recorded), whatever the order of the fields
BOTH = [
    ({"type": "enabled", "budget_tokens": 2048, "display": "summarized"}, "high",
     {"anthropic": ({"type": "enabled", "budget_tokens": 8999}, ["$.thinking.display", "$.thinking.budget_tokens",
                                                                 "$.reasoning_effort"]),
      "ollama": ("high", ["$.thinking.budget_tokens", "$.thinking.display"])}),
    ({"type": "disabled"}, "high",
     {"anthropic": ({"type": "disabled"}, ["$.reasoning_effort"]),
      "ollama": (False, ["$.reasoning_effort"])}),
    ({"type": "adaptive"}, "low",
     {"anthropic": ({"type": "enabled", "budget_tokens": 1024}, []), "ollama": ("low", [])}),
]


@pytest.mark.parametrize("effort_first", [False, True], ids=["thinking-first", "effort-first"])
@pytest.mark.parametrize("thinking,effort,want", BOTH, ids=[json.dumps(case[:2]) for case in BOTH])
def test_beside_reasoning_effort_each_loss_is_at_its_own_field(thinking, effort, want, effort_first):
    fields = [("reasoning_effort", effort), ("thinking", thinking)]
    request = {"model": "m", "max_tokens": 9000, "messages": _MESSAGES,
               **dict(fields if effort_first else fields[::-1])}
    body = json.dumps(request).encode()
    for target, (setting, paths) in want.items():
        whole, losses = transcode_cut("openai", target, body, [])
        out = json.loads(whole)
        assert out.get("thinking" if target == "anthropic" else "think") == setting, (target, out)
        assert sorted(path for path, _ in losses) == sorted(paths), (target, losses)


# -- OpenRouter's reasoning ---------------------------------------------------------------------

#: OpenRouter's reasoning -> (anthropic thinking, ollama think, loss paths into anthropic, into ollama)
#: (model "m": anthropic's budget mode; max_tokens 20000)
OPENROUTER = [
    ({"effort": "high"}, {"type": "enabled", "budget_tokens": 16384}, "high", [], []),
    ({"effort": "xhigh"}, {"type": "enabled", "budget_tokens": 19999}, "max", ["$.reasoning.effort"], ["$.reasoning.effort"]),
    ({"max_tokens": 3000}, {"type": "enabled", "budget_tokens": 3000}, True, [], ["$.reasoning.max_tokens"]),
    ({"max_tokens": 3000.0}, {"type": "enabled", "budget_tokens": 3000}, True, [], ["$.reasoning.max_tokens"]),
    ({"max_tokens": 500}, {"type": "enabled", "budget_tokens": 1024}, True, ["$.reasoning.max_tokens"],
     ["$.reasoning.max_tokens"]),
    ({"enabled": True}, {"type": "enabled", "budget_tokens": 4096}, True, [], []),
    ({"enabled": False}, {"type": "disabled"}, False, [], []),
    ({"enabled": False, "effort": "high"}, {"type": "disabled"}, False, ["$.reasoning.effort"], ["$.reasoning.effort"]),
    ({"enabled": False, "max_tokens": 3000}, {"type": "disabled"}, False, ["$.reasoning.max_tokens"],
     ["$.reasoning.max_tokens"]),
    ({"max_tokens": 3000, "effort": "low"}, {"type": "enabled", "budget_tokens": 1024}, "low",
     ["$.reasoning.max_tokens"], ["$.reasoning.max_tokens"]),
    ({"effort": "low", "exclude": True}, {"type": "enabled", "budget_tokens": 1024}, "low", ["$.reasoning.exclude"],
     ["$.reasoning.exclude"]),
    ({"effort": "medium", "exclude": False, "enabled": None}, {"type": "enabled", "budget_tokens": 4096}, "medium", [], []),
    ({"effort": "high", "summary": "auto"}, {"type": "enabled", "budget_tokens": 16384}, "high", ["$.reasoning.summary"],
     ["$.reasoning.summary"]),
    # (a settings map: {} or every member null sets nothing -- README "null means absent")
    ({}, None, None, [], []),
    ({"effort": None, "max_tokens": None}, None, None, [], []),
    # (nothing set but the defaults, or only members no target carries: those recorded, and no
    # "such reasoning setting" -- it asks for none)
    ({"exclude": False}, None, None, [], []),
    ({"exclude": True}, None, None, ["$.reasoning.exclude"], ["$.reasoning.exclude"]),
    ({"summary": "auto", "exclude": False}, None, None, ["$.reasoning.summary"], ["$.reasoning.summary"]),
]


def _openrouter_body(reasoning, **more) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 20000, "reasoning": reasoning, **more,
                       "messages": _MESSAGES}).encode()


@pytest.mark.parametrize("case", OPENROUTER, ids=[json.dumps(case[0]) for case in OPENROUTER])
def test_openrouter_reasoning_is_canonical_reasoning(case):
    reasoning, thinking, think, anthropic_losses, ollama_losses = case
    body = _openrouter_body(reasoning)
    for target, want_losses in (("anthropic", anthropic_losses), ("ollama", ollama_losses), ("openai", [])):
        whole, losses = transcode_cut("openai", target, body, [])
        assert transcode_cut("openai", target, body, list(range(1, len(body)))) == (whole, losses)
        assert sorted(path for path, _ in losses) == sorted(want_losses), (target, losses)
        out = json.loads(whole)
        if target == "openai":
            assert out == json.loads(body)
            continue
        assert validity.check(target, "request", whole, enforced_only=True) == [], whole
        assert out.get("thinking" if target == "anthropic" else "think") == (thinking if target == "anthropic" else think)


@pytest.mark.parametrize("budget,message", [
    ("3000", "got string"), (3000.5, "expected an integer"), (2**63, "beyond a 64-bit integer"),
    (-2**63 - 1, "beyond a 64-bit integer"), (1e300, "beyond a 64-bit integer"),
])
@pytest.mark.parametrize("target", ["anthropic", "ollama", "openai"])
def test_an_openrouter_budget_no_api_takes_is_the_inputs_fault(budget, message, target):
    with pytest.raises(SchemaError, match=message) as raised:
        transcode_cut("openai", target, _openrouter_body({"max_tokens": budget}), [])
    assert (raised.value.dialect, raised.value.path) == ("openai", "$.reasoning.max_tokens")


#: two fields setting one member: the later field's value is sent, the earlier one recorded at itself
OVERRIDDEN = [
    ({"reasoning": {"effort": "high"}, "reasoning_effort": "low"}, "low", ["$.reasoning.effort"]),
    ({"reasoning_effort": "low", "reasoning": {"effort": "high"}}, "high", ["$.reasoning_effort"]),
    ({"reasoning_effort": "low", "reasoning": {"effort": "low"}}, "low", []),
    ({"thinking": {"type": "enabled", "budget_tokens": 2048, "display": "omitted"},
      "reasoning": {"max_tokens": 3000, "exclude": True}}, True,
     ["$.thinking.budget_tokens", "$.thinking.display", "$.reasoning.max_tokens", "$.reasoning.exclude"]),
]


@pytest.mark.parametrize("fields,think,paths", OVERRIDDEN, ids=[json.dumps(case[0]) for case in OVERRIDDEN])
def test_a_member_two_fields_set_is_the_later_ones_the_earlier_recorded(fields, think, paths):
    body = json.dumps({"model": "m", "max_tokens": 20000, "messages": _MESSAGES, **fields}).encode()
    whole, losses = transcode_cut("openai", "ollama", body, [])
    assert json.loads(whole)["think"] == think
    assert sorted(path for path, _ in losses) == sorted(paths), losses
    whole, losses = transcode_cut("openai", "anthropic", body, [])
    assert validity.check("anthropic", "request", whole, enforced_only=True) == [], whole
