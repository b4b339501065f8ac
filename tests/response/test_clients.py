"""Every ordered pair, both kinds: the target's official client parses the transcoded
output and reports the same final message as the source's own client reports for the source."""

from __future__ import annotations

import re

import pytest

from interlingua import Transcoder

from clients import FINALS, SOURCES, anthropic_stream

DIALECTS = ("openai", "anthropic", "ollama")
PAIRS = [(s, t, k) for k in ("stream", "response") for s in DIALECTS for t in DIALECTS]


def transcode(source: str, target: str, kind: str, body: bytes, size: int = 7, options=None):
    t = Transcoder(source, target, kind=kind, options=options)
    out = b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close()
    return out, t


@pytest.mark.parametrize("source,target,kind", PAIRS, ids=[f"{k}-{s}-{t}" for s, t, k in PAIRS])
def test_target_client_reports_the_source_message(source, target, kind):
    body = SOURCES[source, kind]()
    want = FINALS[source](kind, body)
    out, t = transcode(source, target, kind, body)
    got = FINALS[target](kind, out)
    assert got.text == want.text
    assert [(name, args) for _, name, args in got.tools] == [(name, args) for _, name, args in want.tools]
    assert got.finish == want.finish == "tool_use"
    assert (got.input, got.output) == (want.input, want.output)
    # ids: passed unchanged where the source has them; ollama's get call_ + 24 hex digits of the
    # response's id and the call's index (lifecycle); ollama carries none
    if target != "ollama":
        ids = [i for i, _, _ in got.tools]
        if source != "ollama":
            assert ids == [i for i, _, _ in want.tools]
        else:
            assert len(ids) == 1 and re.fullmatch("call_[0-9a-f]{24}", ids[0]), ids
    # the output does not depend on how the input was cut
    whole, _ = transcode(source, target, kind, body, size=len(body))
    assert whole == out


def test_100k_anthropic_stream_to_openai_7_byte_writes_equal_whole():
    text = ("lorem ipsum \"q\" é😀 \\ " * 5000)[:100_000]
    body = anthropic_stream(text=text, piece=100)
    assert len(body) > 100_000
    seven, _ = transcode("anthropic", "openai", "stream", body, size=7)
    whole, _ = transcode("anthropic", "openai", "stream", body, size=len(body))
    assert seven == whole
    got = FINALS["openai"]("stream", seven)
    assert got.text == text


@pytest.mark.parametrize("kind", ["stream", "response"])
def test_100k_text_in_one_string_reaches_every_client(kind):
    text = ("abc \"q\" é😀\n" * 10000)[:100_000]
    for source in DIALECTS:
        body = SOURCES[source, kind](text=text, piece=50_000) if kind == "stream" else SOURCES[source, kind](text=text)
        for target in DIALECTS:
            out, _ = transcode(source, target, kind, body, size=8192)
            assert FINALS[target](kind, out).text == text, (source, target)
