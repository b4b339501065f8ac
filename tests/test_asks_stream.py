"""``Transcoder.asks_stream``: the request asks for a stream -- its canonical ``stream`` control is true
(ollama's absent ``stream`` is: Ollama streams by default). A proxy tells from it whether the upstream's
answer has the form its client waits for (tests/proxy/test_proxy_upstream_http.py)."""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder

DIALECTS = ("openai", "anthropic", "ollama")
#: the request's ``stream`` member (absent: no member) -> asks_stream, per source dialect
CASES = [(source, stream, stream is True or stream is None and source == "ollama")
         for source in DIALECTS for stream in (None, True, False)]


def body(source: str, stream) -> bytes:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if source == "anthropic":
        request["max_tokens"] = 5
    if stream is not None:
        request["stream"] = stream
    return json.dumps(request).encode()


@pytest.mark.parametrize("source,stream,asked", CASES)
@pytest.mark.parametrize("target", DIALECTS)
def test_asks_stream_reads_the_request_stream(source, stream, asked, target):
    data = body(source, stream)
    for size in (1, 7, len(data)):
        t = Transcoder(source, target)
        assert t.asks_stream is False  # (nothing read yet)
        for i in range(0, len(data), size):
            t.feed(data[i:i + size])
        t.close()
        assert t.asks_stream is asked, (size, stream)
