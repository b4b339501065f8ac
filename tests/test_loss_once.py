"""A field the target cannot carry is one loss record, whatever the key order of its object (a request's
records are not deduplicated: two records are two things lost). Found: an openai image's ``detail``
before its ``url`` (sorted keys) was recorded twice into ollama."""

from __future__ import annotations

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
