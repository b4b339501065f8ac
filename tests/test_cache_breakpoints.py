"""Another dialect's cache breakpoints into anthropic: anthropic refuses a request with more than
four ("A maximum of 4 blocks with cache_control may be provided. Found 5."). The anthropic request
encoder counts another dialect's breakpoints as it writes them -- parts, whole messages (a
message's last block), tool results, tools -- and from the fifth on does not write one, recorded
at its source path; the first four go (the output streams). An anthropic client's own go as they
came. The validity layer (``cache-breakpoints-at-most-4``) checks every anthropic output of the
suite; rpt/request-cache-breakpoints-beyond-four pins one request. Both backends."""

from __future__ import annotations

import json

import pytest

import validity
from rpt import transcode_cut

CC = {"type": "ephemeral"}
#: where an openai body can put a breakpoint (LiteLLM / OpenRouter spelling)
PLACES = ["system-part", "user-part", "user-message", "assistant-message", "tool-message", "tool"]


def _openai_body(places: list[str]) -> bytes:
    """A conversation with one breakpoint in each of ``places`` (in this order of the body)."""
    marked = lambda place, member: ({"cache_control": CC} if place in places else {})  # noqa: E731
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief.", **marked("system-part", 0)}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather?", **marked("user-part", 0)}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
         **marked("assistant-message", 0)},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C", **marked("tool-message", 0)},
        {"role": "user", "content": "And tomorrow?", **marked("user-message", 0)},
    ]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}},
              **marked("tool", 0)}]
    return json.dumps({"model": "m", "max_tokens": 50, "messages": messages, "tools": tools}).encode()


CASES = [PLACES[:n] for n in range(len(PLACES) + 1)] + [PLACES[::-1][:5], ["tool", "system-part"]]


@pytest.mark.parametrize("places", CASES, ids=["+".join(c) or "none" for c in CASES])
def test_at_most_four_breakpoints_go_into_anthropic(places):
    body = _openai_body(places)
    whole, losses = transcode_cut("openai", "anthropic", body, [])
    assert validity.check("anthropic", "request", whole, enforced_only=True) == [], whole
    out = json.loads(whole)
    written = validity._breakpoints(out)
    lost = [path for path, reason in losses if "cache breakpoint beyond the 4th" in reason]
    assert written == min(len(places), 4), whole
    assert len(lost) == max(len(places) - 4, 0), losses
    assert written + len(lost) == len(places)


def test_the_count_is_the_same_at_every_cut():
    body = _openai_body(PLACES)
    assert transcode_cut("openai", "anthropic", body, list(range(1, len(body)))) == \
        transcode_cut("openai", "anthropic", body, [])


def test_an_anthropic_clients_own_breakpoints_go_as_they_came():
    """Five are the client's own request (anthropic answers it as it would have anyway)."""
    content = [{"type": "text", "text": str(i), "cache_control": CC} for i in range(5)]
    body = json.dumps({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": content}]}).encode()
    out, losses = transcode_cut("anthropic", "anthropic", body, [])
    assert validity._breakpoints(json.loads(out)) == 5
    assert losses == []
