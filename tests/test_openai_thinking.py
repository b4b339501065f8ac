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
whichever backend the suite runs."""

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
