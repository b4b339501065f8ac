"""Tool calls and their results, every shape of each source into every target (both
backends, cut 1 / 7 / whole, client and sorted key order): the target body passes its
API's rules (tests/validity.py, tolerated ones too: pairing), each result stays linked
to its call, every member not carried is recorded once, and bytes and losses do not
depend on the cut. Pins the audit of issue "tool calls that fall through the cracks":
openai custom calls, multi-part tool messages, anthropic ``is_error``, and the two
controls of anthropic's ``tool_choice``."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import validity
from interlingua import Transcoder

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
FUNCTION = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}
CUSTOM = {"id": "call_9", "type": "custom", "custom": {"name": "sql", "input": "select 1"}}


def _openai(call: dict, result: dict | None) -> dict:
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    if result is not None:
        messages.append({"role": "tool", "tool_call_id": call["id"], **result})
    return {"model": "m", "messages": messages}


def _anthropic(result: dict) -> dict:
    return {"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", **result}]}]}


def _ollama(result: dict) -> dict:
    return {"model": "m", "stream": False, "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_name": "f", "tool_call_id": "c1", **result}]}


TEXTS = [{"type": "text", "text": "25C"}, {"type": "text", "text": "windy"}]
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}

#: name -> (source, body, {target: reasons that must be among the losses})
SHAPES = {
    "openai-string": ("openai", _openai(FUNCTION, {"content": "25C"}), {}),
    "openai-parts": ("openai", _openai(FUNCTION, {"content": TEXTS}),
                     {"ollama": ["several text parts of a tool message: ollama has no second content in a message"]}),
    "openai-one-part": ("openai", _openai(FUNCTION, {"content": TEXTS[:1]}), {}),
    "openai-empty": ("openai", _openai(FUNCTION, {"content": ""}), {}),
    "openai-custom-string": ("openai", _openai(CUSTOM, {"content": "1"}), {
        t: [f"custom tool call: {t} has no such tool; not sent, nor its result",
            f"tool message answering a custom tool call: {t} has no such tool; not sent"]
        for t in ("anthropic", "ollama")}),
    "openai-custom-parts": ("openai", _openai(CUSTOM, {"content": TEXTS}), {
        t: [f"tool message answering a custom tool call: {t} has no such tool; not sent"]
        for t in ("anthropic", "ollama")}),
    "openai-custom-unanswered": ("openai", _openai(CUSTOM, None), {
        t: [f"custom tool call: {t} has no such tool; not sent, nor its result"] for t in ("anthropic", "ollama")}),
    "anthropic-string": ("anthropic", _anthropic({"content": "25C"}), {}),
    "anthropic-parts": ("anthropic", _anthropic({"content": TEXTS}),
                        {"ollama": ["several tool_result blocks: ollama has no second content in a message"]}),
    "anthropic-image": ("anthropic", _anthropic({"content": [TEXTS[0], IMAGE]}),
                        {t: ["image block in a tool_result block"] for t in ("openai", "ollama")}),
    "anthropic-empty": ("anthropic", _anthropic({}), {}),
    "anthropic-error-first": ("anthropic", _anthropic({"is_error": True, "content": "boom"}),
                              {t: [f"is_error of a tool_result block: {t} has no field for it"]
                               for t in ("openai", "ollama")}),
    "anthropic-error-last": ("anthropic", _anthropic({"content": "boom", "is_error": True}),
                             {t: [f"is_error of a tool_result block: {t} has no field for it"]
                              for t in ("openai", "ollama")}),
    "anthropic-error-image": ("anthropic", _anthropic({"content": [TEXTS[0], IMAGE], "is_error": True}),
                              {t: [f"is_error of a tool_result block: {t} has no field for it"]
                               for t in ("openai", "ollama")}),
    "anthropic-error-empty": ("anthropic", _anthropic({"is_error": True}),
                              {t: [f"is_error of a tool_result block: {t} has no field for it"]
                               for t in ("openai", "ollama")}),
    "ollama-string": ("ollama", _ollama({"content": "25C"}), {}),
    "ollama-empty": ("ollama", _ollama({"content": ""}), {}),
    "anthropic-choice-parallel": ("anthropic", {
        "model": "m", "max_tokens": 5, "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "messages": [{"role": "user", "content": "q"}]}, {"ollama": [
            # (auto is what ollama does anyway: no loss; parallel use refused is one)
            "tool_choice.disable_parallel_tool_use: ollama has no such parameter"]}),
}
ORDERS = {"client": lambda body: json.dumps(body).encode(),
          "sorted": lambda body: json.dumps(body, sort_keys=True).encode()}
CUTS = (1, 7, None)


def _run(source: str, target: str, data: bytes, cut: int | None):
    t = Transcoder(source, target)
    step = cut or len(data)
    out = b"".join(t.feed(data[i:i + step]) for i in range(0, len(data), step)) + t.close()
    return out, [(x.dialect, x.path, x.reason) for x in t.losses]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("target", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("shape", SHAPES)
def test_tool_shape(shape, target, order):
    source, body, wanted = SHAPES[shape]
    data = ORDERS[order](body)
    runs = [_run(source, target, data, cut) for cut in CUTS]
    out, losses = runs[-1]
    assert all(r == runs[-1] for r in runs), "output or losses depend on the cut"
    if validity.check(source, "request", data) == []:  # an input that breaks its own rules is not held to them
        assert validity.check(target, "request", out) == []
    repeated = [loss for loss, n in Counter(losses).items() if n > 1]
    assert repeated == []
    reasons = [reason for _, _, reason in losses]
    for want in wanted.get(target, []):
        assert any(r.startswith(want) for r in reasons), (want, reasons)
    if source == target:
        assert json.loads(out) == body and losses == []  # a round trip is exact
