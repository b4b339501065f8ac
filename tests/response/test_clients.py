"""Every ordered pair, both kinds: the target's official client parses the transcoded
output and reports the same final message as the source's own client reports for the source."""

from __future__ import annotations

import json

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


@pytest.mark.parametrize("source,target,kind", PAIRS, ids=[f"{k}-{s}-{t}" for s, t, k in PAIRS])
def test_line_separators_reach_every_client(source, target, kind):
    """U+2028, U+2029 and U+0085 raw in the source's text and arguments: JSON allows them raw,
    but the ollama client's line reader (httpx ``iter_lines``, ``str.splitlines``) ends a line at
    them, so an ollama line writes them escaped (as Ollama's Go server does the first two).
    An ollama stream's copy is byte-identical: its own lines, which this client cannot read."""
    if source == target == "ollama" and kind == "stream":
        pytest.skip("a same-dialect copy passes the source's bytes through")
    text, args = "a\u2028b\u2029c\x85d é", {"note": "x\u2028y\x85"}
    body = SOURCES[source, kind](text=text, args=args, piece=3) if kind == "stream" else SOURCES[source, kind](text=text, args=args)
    for size in (1, 7, len(body)):
        out, _ = transcode(source, target, kind, body, size=size)
        got = FINALS[target](kind, out)
        assert (got.text, [a for _, _, a in got.tools]) == (text, [args]), size
        if target == "ollama" and kind == "stream":
            assert not any(c.encode() in out for c in "\u2028\u2029\x85"), size


@pytest.mark.parametrize("source", ["openai", "anthropic"])
def test_pretty_printed_arguments_reach_every_client(source):
    """Arguments a model pretty-printed (CRLF and LF between their tokens, one escaped in a
    string) reach every client; an ollama line stays one line (its raw line ends are spaces:
    they split the line, and the ollama client failed on it)."""
    args = {"city": "Paris", "note": "x\ny"}
    pretty = json.dumps(args, indent=2).replace("\n", "\r\n", 1)
    body = SOURCES[source, "stream"](args=args, arguments=pretty, piece=3)
    for target in DIALECTS:
        for size in (1, 7, len(body)):
            out, _ = transcode(source, target, "stream", body, size=size)
            got = FINALS[target]("stream", out)
            assert [a for _, _, a in got.tools] == [args], (target, size)
            if target == "ollama":
                assert all(json.loads(line) for line in out.split(b"\n") if line), size


def _legacy_openai(kind: str) -> bytes:
    """openai's legacy ``function_call`` (no id, finish ``function_call``), with text before it."""
    import json as _json
    from clients import ARGS, TEXT
    arguments = _json.dumps(ARGS)
    if kind == "response":
        return _json.dumps({"id": "chatcmpl-9", "object": "chat.completion", "created": 1700000000, "model": "gpt-x",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT,
                                                                 "function_call": {"name": "weather",
                                                                                   "arguments": arguments}},
                                         "finish_reason": "function_call"}],
                            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}).encode()
    deltas = [{"role": "assistant", "content": TEXT}, {"function_call": {"name": "weather", "arguments": ""}}]
    deltas += [{"function_call": {"arguments": arguments[i:i + 4]}} for i in range(0, len(arguments), 4)]
    chunks = [{"index": 0, "delta": d, "finish_reason": None} for d in deltas]
    chunks.append({"index": 0, "delta": {}, "finish_reason": "function_call"})
    frames = [{"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-x",
               "choices": [c]} for c in chunks]
    frames.append({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-x",
                   "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}})
    return b"".join(b"data: " + _json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("size", [1, 7, 1 << 20])
@pytest.mark.parametrize("target", ["anthropic", "ollama"])
@pytest.mark.parametrize("kind", ["response", "stream"])
def test_a_legacy_function_call_reaches_the_target_client_as_its_tool_call(kind, target, size, backend):
    from clients import ARGS, TEXT
    out, t = transcode("openai", target, kind, _legacy_openai(kind), size=size)
    got = FINALS[target](kind, out)
    assert got.text == TEXT
    assert [(name, args) for _, name, args in got.tools] == [("weather", ARGS)]
    assert got.finish == "tool_use"
    if target == "anthropic":  # a generated id (lifecycle.generated_tool_id)
        assert re.fullmatch("call_[0-9a-f]{24}", got.tools[0][0]), got.tools
    assert not [loss for loss in t.losses if "function_call" in loss.path]
