"""Responses and streams: the native Transcoder beside the Python one, orjson and json (issue 12).

For every ordered pair whose native response / stream codecs exist (the native constructor
says which: a pair not ported yet is left out, so a codec that lands is benchmarked without
edits here; a same-dialect pair is a copy), one group per body: ``native transcoder`` is
``interlingua._native.Transcoder``, ``python transcoder`` the Python pipeline on the same
pieces, ``orjson loads+dumps`` / ``json loads+dumps`` every frame's JSON document (a stream)
or the whole body (a response) -- the ratio baseline and the stdlib. A stream is fed **one
frame per ``feed``** (what a proxy sees from its upstream); the cost per frame is printed
after the table (``us/feed``, bench/conftest.py). The bodies (tests/corpus's writers, as the
backends send them):

* ``text-deltas-1000``: a streamed answer of 1,000 small text deltas (4 characters each);
* ``tools-stream-100k``: the spike's interleaved parallel tool-call deltas (spike/corpus.py);
* ``response-1k`` / ``response-100k``: a non-streaming answer of ~1 kB / ~100 kB, fed whole.
"""

from __future__ import annotations

import json

import pytest

from bodies import Body

from interlingua import TranscodeError, Transcoder
from interlingua.backend import NATIVE_COVERS, native_module
from interlingua.dialects import DIALECTS

pytestmark = pytest.mark.skipif("json-tokenizer" not in NATIVE_COVERS, reason="interlingua._native is not built")


class PythonTranscoder(Transcoder):
    """The Python pipeline on either backend (a subclass is never dispatched to the native one)."""


def ported(source: str, target: str, kind: str) -> bool:
    try:
        native_module().Transcoder(source, target, kind=kind)
    except (TranscodeError, ImportError):
        return False
    return True


def _text_turn(words: int, chars: int, piece: int):
    from corpus import backends as B
    from corpus.text import prose
    text = prose("bench-stream", words)[:chars]
    return B.Turn(text=text, finish="stop", usage=B._USAGE, piece=piece)


def _bodies(dialect: str) -> list[Body]:
    from corpus import backends as B
    from spike.corpus import STREAMS
    stream, response = B.WRITERS[dialect, "stream"], B.WRITERS[dialect, "response"]
    return [
        Body("text-deltas-1000", dialect, "stream", stream(_text_turn(1500, 4000, 4), "bench1"), None),
        Body("tools-stream-100k", dialect, "stream", STREAMS[dialect](100, "client"), None),
        Body("response-1k", dialect, "response", response(_text_turn(150, 700, 40), "bench2"), None),
        Body("response-100k", dialect, "response", response(_text_turn(20000, 100_000, 40), "bench3"), None),
    ]


def pieces(body: Body) -> list[bytes]:
    """A stream's frames (one per feed), or the whole response."""
    from rpt import split_frames
    return split_frames(body.dialect, body.data) if body.kind == "stream" else [body.data]


def documents(body: Body) -> list[bytes]:
    """The JSON documents the baselines parse and write: each frame's (a stream), the body (a response)."""
    if body.kind == "response":
        return [body.data]
    docs = []
    for frame in pieces(body):
        start, end = frame.find(b"{"), frame.rfind(b"}")
        if 0 <= start < end:
            docs.append(frame[start:end + 1])
    return docs


def transcoder_run(cls, source: str, target: str, kind: str, feeds: list[bytes]):
    def run() -> int:
        # no clock / entropy hooks: what a proxy runs (the defaults, read once per response)
        transcoder = cls(source, target, kind=kind)
        feed = transcoder.feed
        n = 0
        for piece in feeds:
            n += len(feed(piece))
        return n + len(transcoder.close())
    return run


def _tokens(docs: list[bytes]) -> int:
    from interlingua.json import Tokenizer

    count = [0]

    def handler(kind, value, offset):
        count[0] += 1
    tokenizer = Tokenizer(handler)
    for doc in docs:
        tokenizer.reset()
        tokenizer.feed(doc)
        tokenizer.close()
    return count[0]


def _baselines(docs: list[bytes]) -> list[tuple[str, object]]:
    runs = [("json loads+dumps", lambda: sum(len(json.dumps(json.loads(d), ensure_ascii=False)) for d in docs))]
    try:
        import orjson
    except ImportError:  # (the [bench] extra has it: `python3 dev.py bench`)
        return runs
    return [("orjson loads+dumps", lambda: sum(len(orjson.dumps(orjson.loads(d))) for d in docs)), *runs]


def _params() -> list:
    params = []
    if "json-tokenizer" not in NATIVE_COVERS:
        return params
    for source in DIALECTS:
        for body in _bodies(source):
            targets = [target for target in DIALECTS if ported(source, target, body.kind)]
            feeds, docs = pieces(body), documents(body)
            for target in targets:
                group = f"native-{body.kind}:{body.shape}:{source}->{target}"
                for name, cls in (("native transcoder", native_module().Transcoder), ("python transcoder", PythonTranscoder)):
                    run = transcoder_run(cls, source, target, body.kind, feeds)
                    params.append(pytest.param(body, group, name, run, feeds, docs, id=f"{group}|{name}"))
                for name, run in _baselines(docs):
                    params.append(pytest.param(body, group, name, run, feeds, docs, id=f"{group}|{name}"))
    return params


PARAMS = _params()


@pytest.mark.skipif(not PARAMS, reason="no response or stream pair is ported to the native core yet")
@pytest.mark.parametrize("body,group,name,run,feeds,docs",
                         PARAMS or [pytest.param(None, None, None, None, [], [], id="none")])
def test_native_stream(benchmark, body, group, name, run, feeds, docs):
    benchmark.group = group
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data))
    if "transcoder" in name:  # the cost per feed: per frame for a stream (bench/conftest.py prints it)
        benchmark.extra_info.update(feeds=len(feeds), tokens=_tokens(docs))
    assert benchmark(run) > 0
