"""An anthropic assistant message's text and tool calls into a target that keeps them in two members
(openai's and ollama's ``content`` and ``tool_calls``): their order comes back from the members'
order when they make at most two runs ([text, tool_use, tool_use]); a third run ([text, tool_use,
text]) goes with the first of its kind -- one recorded loss for the message, at any cut
(rpt/request-text-after-tool-call). Every sequence of up to five blocks, both targets."""

from __future__ import annotations

import itertools
import json

import pytest

from interlingua import Transcoder

ORDER_LOST = "order of text and tool calls"


def request(kinds: tuple[str, ...]) -> bytes:
    blocks, results = [], []
    for i, kind in enumerate(kinds):
        if kind == "text":
            blocks.append({"type": "text", "text": f"t{i}"})
        else:
            blocks.append({"type": "tool_use", "id": f"toolu_{i}", "name": "f", "input": {"i": i}})
            results.append({"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"})
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": blocks}]
    if results:
        messages.append({"role": "user", "content": results})
    return json.dumps({"model": "m", "max_tokens": 10, "messages": messages}).encode()


def runs(kinds: tuple[str, ...]) -> int:
    return sum(1 for _ in itertools.groupby(kinds))


SEQUENCES = [kinds for n in range(1, 6) for kinds in itertools.product(("text", "call"), repeat=n)]


@pytest.mark.parametrize("target", ["openai", "ollama"])
def test_a_third_run_is_one_loss(target: str):
    for kinds in SEQUENCES:
        body = request(kinds)
        records = set()
        for size in (7, len(body)):
            transcoder = Transcoder("anthropic", target)
            for at in range(0, len(body), size):
                transcoder.feed(body[at:at + size])
            transcoder.close()
            records.add(tuple((loss.path, loss.reason) for loss in transcoder.losses if ORDER_LOST in loss.reason))
        assert len(records) == 1, kinds  # the same at any cut
        lost = records.pop()
        assert len(lost) == (1 if runs(kinds) >= 3 else 0), (kinds, lost)
        assert all(path == "$.messages[1]" for path, _ in lost)


def test_anthropic_keeps_the_order():
    for kinds in SEQUENCES:
        transcoder = Transcoder("anthropic", "anthropic")
        out = transcoder.feed(request(kinds)) + transcoder.close()
        types = [block["type"] for block in json.loads(out)["messages"][1]["content"]]
        assert types == ["text" if kind == "text" else "tool_use" for kind in kinds]
        assert not [loss for loss in transcoder.losses if ORDER_LOST in loss.reason]
