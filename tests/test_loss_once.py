"""A field the target cannot carry is one loss record, whatever the key order of its object (a request's
records are not deduplicated: two records are two things lost). Found: an openai image's ``detail``
before its ``url`` (sorted keys) was recorded twice into ollama; a tool the target has no such
tool of was named by its ``type`` only when that came first (else "tools entry")."""

from __future__ import annotations

import itertools
import json

import pytest

from interlingua import Transcoder

URL = "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
ORDERS = {"client": {"url": URL, "detail": "low"}, "sorted": {"detail": "low", "url": URL}}


def request(image_url: dict) -> bytes:
    return json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is it?"}, {"type": "image_url", "image_url": image_url}]}]}).encode()


@pytest.mark.parametrize("target", ["ollama", "anthropic"])
def test_an_image_detail_is_one_loss_in_any_key_order(target):
    seen = {}
    for order, image_url in ORDERS.items():
        body = request(image_url)
        for size in (1, 7, len(body)):
            t = Transcoder("openai", target)
            for i in range(0, len(body), size):
                t.feed(body[i:i + size])
            t.close()
            records = [(loss.path, loss.reason) for loss in t.losses]
            assert sum("detail" in reason for _, reason in records) == 1, (order, size, records)
            seen.setdefault(order, records)
    assert seen["client"] == seen["sorted"]


# a tool carried raw (an anthropic server tool, an openai tool of a type it does not know),
# its members in every order: the loss names its type
RAW_TOOLS = {
    "anthropic": {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    "openai": {"type": "custom", "custom": {"name": "grep"}},
}


def tool_request(source: str, tool: dict) -> bytes:
    body = {"model": "m", "tools": [tool], "messages": [{"role": "user", "content": "hi"}]}
    return json.dumps({**body, "max_tokens": 5} if source == "anthropic" else body).encode()


@pytest.mark.parametrize("source,target", [("anthropic", "openai"), ("anthropic", "ollama"),
                                           ("openai", "anthropic"), ("openai", "ollama")])
def test_a_raw_tool_loss_names_its_type_in_any_key_order(source, target):
    tool = RAW_TOOLS[source]
    for order in itertools.permutations(tool):
        t = Transcoder(source, target)
        t.feed(tool_request(source, {key: tool[key] for key in order}))
        t.close()
        assert [(loss.path, loss.reason) for loss in t.losses] == [
            ("$.tools", f"{tool['type']} tool: {target} has no such tool")], order
