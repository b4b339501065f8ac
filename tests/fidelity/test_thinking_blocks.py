"""LiteLLM's signed thinking on an openai assistant message (``thinking_blocks``: anthropic's
``thinking`` / ``redacted_thinking`` blocks; README "Realistic provider traffic"), every member
order and cut, into every target: anthropic gets them first in the turn, signatures intact,
and thinking stays on; openai gets them back as they came; ollama its ``thinking`` (the
signature and the redacted block recorded). ``reasoning_content`` beside them is their text:
no loss. rpt/request-openai-thinking-blocks is the scenario."""

from __future__ import annotations

import itertools
import json

import pytest

from interlingua import Options, SchemaError, Transcoder

THINKING = [{"type": "thinking", "thinking": "Add them: \u00e9 \"4\".", "signature": "EqQBsig=="},
            {"type": "redacted_thinking", "data": "EmwKredacted=="}]
CALL = [{"id": "toolu_01", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
MEMBERS = {"content": "Calling f.", "role": "assistant", "tool_calls": CALL, "reasoning_content": "Add them",
           "thinking_blocks": THINKING}
#: member orders: LiteLLM's (thinking last), thinking first, role last, and a few more
ORDERS = [("content", "role", "tool_calls", "reasoning_content", "thinking_blocks"),
          ("role", "thinking_blocks", "content", "tool_calls", "reasoning_content"),
          ("thinking_blocks", "content", "tool_calls", "reasoning_content", "role"),
          ("role", "content", "thinking_blocks", "tool_calls", "reasoning_content"),
          ("tool_calls", "reasoning_content", "thinking_blocks", "role", "content")]


def _body(order, effort: bool = True) -> dict:
    assistant = {key: MEMBERS[key] for key in order}
    return {"model": "m", **({"reasoning_effort": "high"} if effort else {}), "messages": [
        {"role": "user", "content": "q"}, assistant, {"role": "tool", "tool_call_id": "toolu_01", "content": "ok"}]}


def _run(target: str, body: dict, cut: int | None = None, **options):
    data = json.dumps(body).encode()
    transcoder = Transcoder("openai", target, kind="request", options=Options(**options))
    pieces = [data] if cut is None else [data[i:i + cut] for i in range(0, len(data), cut)]
    out = b"".join(transcoder.feed(p) for p in pieces) + transcoder.close()
    return json.loads(out), [(loss.path, loss.reason) for loss in transcoder.losses]


@pytest.mark.parametrize("cut", [None, 1, 7])
@pytest.mark.parametrize("order", ORDERS, ids=lambda order: "-".join(k[:4] for k in order))
def test_into_anthropic_the_thinking_goes_first(order, cut):
    out, losses = _run("anthropic", _body(order), cut)
    assert losses == []
    content = out["messages"][1]["content"]
    assert content[:2] == [{"type": "thinking", "thinking": THINKING[0]["thinking"], "signature": "EqQBsig=="},
                           {"type": "redacted_thinking", "data": "EmwKredacted=="}]
    rest = [{"type": "text", "text": "Calling f."}, {"type": "tool_use", "id": "toolu_01", "name": "f", "input": {}}]
    # (the text and the call in the order they came)
    assert content[2:] == (rest if order.index("content") < order.index("tool_calls") else rest[::-1])
    assert out["thinking"]["type"] == "enabled"  # (on in the tool loop: the last turn begins with it)


@pytest.mark.parametrize("cut", [None, 7])
@pytest.mark.parametrize("order", ORDERS, ids=lambda order: "-".join(k[:4] for k in order))
def test_into_openai_they_go_back_as_they_came(order, cut):
    body = _body(order)
    out, losses = _run("openai", body, cut)
    assert losses == [] and out == body


@pytest.mark.parametrize("order", ORDERS[:2], ids=["litellm", "first"])
def test_into_ollama_the_thinking_text(order):
    out, losses = _run("ollama", _body(order))
    assert out["messages"][1]["thinking"] == THINKING[0]["thinking"]
    assert losses == [("$.messages[1]", "signature of a reasoning: ollama has no field for it; "
                                        "the thinking cannot be replayed"),
                      ("$.messages[1]", "reasoning: ollama has no field for encrypted thinking")]


@pytest.mark.parametrize("target", ["openai", "ollama"])
def test_with_reordering_refused_nothing_waits(target):
    """With reordering refused an assistant message is not held for thinking_blocks that may
    come (nor refused for it): the wire order goes on."""
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                                       {"role": "user", "content": "more"}]}
    assert _run(target, body, refuse_reorder=True) == _run(target, body)


def test_a_decoder_gives_the_thinking_first_too():
    """The order is the canonical events', whatever the target (a Decoder's as a Transcoder's)."""
    from interlingua import Decoder
    decoder = Decoder("openai", kind="request")
    events = decoder.feed(json.dumps(_body(ORDERS[0])).encode()) + decoder.close()
    sections = [e.section.value for e in events if type(e).__name__ == "Block" and e.message == 1 and e.init]
    assert sections[:2] == ["assistant-reasoning", "assistant-reasoning"], sections


@pytest.mark.parametrize("value", [None, []])
def test_no_thinking_says_nothing(value):
    order = ("content", "role", "tool_calls", "thinking_blocks")
    body = _body(order, effort=False)
    body["messages"][1]["thinking_blocks"] = value
    for target in ("anthropic", "ollama"):
        out, losses = _run(target, body)
        assert losses == [] and "thinking" not in json.dumps(out["messages"][1])
    out, losses = _run("openai", body)
    assert losses == [] and out == body


def test_reasoning_content_without_thinking_blocks_is_still_recorded():
    body = _body(("content", "role", "tool_calls", "reasoning_content"))
    _, losses = _run("anthropic", body)
    assert ("$.messages[1].reasoning_content", "messages[1].reasoning_content: anthropic has no such field") in losses


def test_a_thinking_block_s_other_members():
    """LiteLLM's thinking block may carry cache_control: kept back into openai; anthropic has no
    such member on a thinking block (recorded); a null one says nothing."""
    for cache, lost in (({"type": "ephemeral"}, True), (None, False)):
        body = _body(ORDERS[0])
        body["messages"][1]["thinking_blocks"] = [{**THINKING[0], "cache_control": cache}]
        out, losses = _run("openai", body)
        assert out == body and losses == []
        out, losses = _run("anthropic", body)
        assert out["messages"][1]["content"][0]["signature"] == "EqQBsig=="
        assert bool(losses) is lost, losses


def test_thinking_blocks_before_a_role_other_than_assistant_are_a_schema_error():
    body = b'{"model": "m", "messages": [{"thinking_blocks": [{"type": "thinking", "thinking": "x"}], "role": "user"}]}'
    with pytest.raises(SchemaError, match="thinking_blocks in a message of role 'user'"):
        transcoder = Transcoder("openai", "anthropic", kind="request")
        transcoder.feed(body)
        transcoder.close()


def test_a_user_message_s_thinking_blocks_stay_a_member():
    body = {"model": "m", "messages": [{"role": "user", "content": "q", "thinking_blocks": THINKING}]}
    out, losses = _run("anthropic", body)
    assert out["messages"] == [{"role": "user", "content": "q"}]
    assert losses == [("$.messages[0].thinking_blocks", "messages[0].thinking_blocks: anthropic has no such field")]


@pytest.mark.parametrize("element, message", [
    ("1", "expected an object for a thinking block"),
    ('{"type": "text", "text": "x"}', "unknown thinking block type 'text' (thinking or redacted_thinking)"),
    ('{"thinking": "x"}', "unknown thinking block type None (thinking or redacted_thinking)"),
    ('{"type": "thinking", "thinking": 5}', "expected a string for thinking"),
    ('{"type": "redacted_thinking"}', "expected a string for data"),
    ('{"type": "thinking", "thinking": "x", "signature": 5}', "expected a string for signature"),
])
def test_a_wrong_thinking_block_is_a_schema_error(element, message):
    body = (b'{"model": "m", "messages": [{"role": "assistant", "content": "a", "thinking_blocks": [' +
            element.encode() + b"]}]}")
    at = body.index(element.encode())
    for target, cut in itertools.product(("openai", "anthropic", "ollama"), (None, 3)):
        transcoder = Transcoder("openai", target, kind="request")
        pieces = [body] if cut is None else [body[i:i + cut] for i in range(0, len(body), cut)]
        with pytest.raises(SchemaError) as info:
            for piece in pieces:
                transcoder.feed(piece)
            transcoder.close()
        assert (info.value.reason, info.value.path, info.value.offset) == (
            message, "$.messages[0].thinking_blocks[0]", at), target
