"""A tool's ``cache_control`` (rpt/request-openai-tool-cache-control), over the class: source
dialect (openai, anthropic) x target (openai, anthropic, ollama) x where the member sits x cuts.

* openai: beside the function tool's ``function`` (LiteLLM's openai-format spelling), in any
  member order, among other members beside it; anthropic: on the tool.
* Into anthropic it is the tool's ``cache_control`` (no loss).
* Into openai from openai it is written back beside the function, as a part's and a message's
  are (openai-compatible upstreams -- OpenRouter, LiteLLM -- take it); it was a recorded loss.
* Into openai from anthropic it stays a recorded loss (the official API refuses members it does
  not declare), as a block's does; into ollama a recorded loss from either.
"""

from __future__ import annotations

import pytest

from test_message_cache_control import CC, _run  # (the same runner: (output, losses), cut in size-byte pieces)

TTL = {"type": "ephemeral", "ttl": "1h"}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def _openai_tool(name: str, cc, where: str) -> dict:
    function = ("function", {"name": name, "parameters": SCHEMA})
    members = {"first": [("cache_control", cc), ("type", "function"), function],
               "before": [("type", "function"), ("cache_control", cc), function],
               "after": [("type", "function"), function, ("cache_control", cc)]}[where]
    return dict(members)


def _body(source: str, where: str, cc=CC) -> dict:
    """Two tools, the last one cached (an agent caches the prefix up to its last tool)."""
    if source == "openai":
        tools = [{"type": "function", "function": {"name": "a", "parameters": SCHEMA}}, _openai_tool("b", cc, where)]
        return {"model": "m", "max_completion_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
                "tools": tools}
    tools = [{"name": "a", "input_schema": SCHEMA}, {"name": "b", "cache_control": cc, "input_schema": SCHEMA}]
    return {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": tools}


def _cached(target: str, out: dict) -> list:
    """Each output tool's cache_control (None: none), in order."""
    return [tool.get("cache_control") for tool in out["tools"]]


def _names(target: str, out: dict) -> list:
    return [tool["name"] if target == "anthropic" else tool["function"]["name"] for tool in out["tools"]]


#: (source, target) -> whether the tool's cache_control reaches the target (else a recorded loss)
CARRIED = {
    ("openai", "openai"): True,
    ("openai", "anthropic"): True,
    ("openai", "ollama"): False,
    ("anthropic", "openai"): False,
    ("anthropic", "anthropic"): True,
    ("anthropic", "ollama"): False,
}


#: where the member sits: an openai tool's in any member order beside the function; an
#: anthropic tool's on the tool (no other place)
CASES = [(source, target, where) for source, target in CARRIED
         for where in (("first", "before", "after") if source == "openai" else ("on-tool",))]


@pytest.mark.parametrize("size", [1, 7, None])
@pytest.mark.parametrize("cc", [CC, TTL], ids=["ephemeral", "ttl"])
@pytest.mark.parametrize("source,target,where", CASES, ids=[f"{s}->{t}-{w}" for s, t, w in CASES])
def test_tool_cache_control(source: str, target: str, where: str, cc, size):
    body = _body(source, where, cc)
    out, losses = _run(source, target, body, size)
    assert _names(target, out) == ["a", "b"]  # the tools kept, in order
    ours = [loss for loss in losses if "cache_control" in loss[0] or "cache_control" in loss[1]]
    if CARRIED[source, target]:
        assert _cached(target, out) == [None, cc]
        assert ours == []
        if target == "openai":  # beside the function (the wire shape openai-compatible upstreams read)
            assert set(out["tools"][1]) == {"type", "function", "cache_control"}
    else:
        assert _cached(target, out) == [None, None]
        assert ours == [("$.tools[1].cache_control", f"cache_control of a tool: {target} has no field for it")]
    if source == target:
        assert out == body and losses == []  # the round trip: nothing lost, JSON-equal


@pytest.mark.parametrize("target", ["openai", "anthropic", "ollama"])
def test_tool_cache_control_among_other_members(target: str):
    """Beside the function with another member: the cache_control is carried (or lost) as alone;
    the other member is kept for openai and a loss of its own elsewhere."""
    tool = {"type": "function", "x_member": [1], "function": {"name": "f", "parameters": SCHEMA},
            "cache_control": CC}
    body = {"model": "m", "max_completion_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
            "tools": [tool]}
    out, losses = _run("openai", target, body)
    if target == "openai":
        assert out == body and losses == []
        return
    cc_losses = [loss for loss in losses if loss[0] == "$.tools[0].cache_control"]
    assert cc_losses == ([] if target == "anthropic" else
                         [("$.tools[0].cache_control", "cache_control of a tool: ollama has no field for it")])
    assert ("$.tools[0].x_member", f"x_member of a tool: {target} has no field for it") in losses
    assert out["tools"][0].get("cache_control") == (CC if target == "anthropic" else None)


def test_a_null_tool_cache_control_is_nothing_lost():
    """``cache_control: null`` beside the function: written back as it came into openai, no loss
    anywhere (test_null_is_absent holds the cross-dialect outputs to the member absent)."""
    tool = {"type": "function", "function": {"name": "f", "parameters": SCHEMA}, "cache_control": None}
    body = {"model": "m", "max_completion_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
            "tools": [tool]}
    for target in ("openai", "anthropic", "ollama"):
        out, losses = _run("openai", target, body)
        assert losses == [], target
        if target == "openai":
            assert out == body
