"""Issue 11's side-by-side run: the native request Transcoder, the Python one, json, orjson
and LiteLLM on the same bytes, one group per body, frame size and pair.

For every ordered request pair whose native codecs exist (the native constructor says
which: a pair not ported yet is left out, so a codec that lands is benchmarked without
edits here): ``native transcoder`` is ``interlingua._native.Transcoder`` (one binding call
per frame, no Python object per token), ``python transcoder`` the pure-Python pipeline's
(whatever ``INTERLINGUA_BACKEND`` says: ``contenders.transcoder_class``) on the same
frames, ``orjson loads+dumps`` / ``json loads+dumps`` the whole body at once (the ratio
baseline and the stdlib), and in the anthropic -> openai groups ``litellm
anthropic->openai`` (LiteLLM's adapter, json in and out: ``contenders.litellm_run``).
The bodies: the 10 kB conversation (several messages, a tool definition, a tool call and
its result: the per-token cost), an agent's request with twelve tool definitions
(agent-tools-5k: JSON schemas, many small strings and objects), rpt large-10k / large-100k (one long text), 1 MB of
~1,250 messages -- at 8 KiB frames, and at 64-byte frames for the cost per ``feed``
(printed after the table, ``bench/conftest.py``, with tokens/s counted in the Python
tokenizer's tokens). The 10 MB body's memory and first byte: test_memory.py; import
time: test_import.py.
"""

from __future__ import annotations

import json

import pytest

from bodies import Body, agent_tools, conversation, many_messages, rpt_bodies
from contenders import litellm_run, transcoder_class

from interlingua import TranscodeError
from interlingua.backend import NATIVE_COVERS, native_module
from interlingua.dialects import DIALECTS

pytestmark = pytest.mark.skipif("json-tokenizer" not in NATIVE_COVERS, reason="interlingua._native is not built")


def ported(source: str, target: str) -> bool:
    try:
        native_module().Transcoder(source, target)
    except (TranscodeError, ImportError):
        return False
    return True


def _bodies(dialect: str) -> list[Body]:
    bodies = [Body("conversation-10k", dialect, "request", conversation(dialect), frame) for frame in (8192, 64)]
    bodies.append(Body("agent-tools-5k", dialect, "request", agent_tools(dialect), 8192))
    for scenario in ("large-10k", "large-100k"):
        data = rpt_bodies(scenario).get((dialect, "request"))
        if data:
            bodies += [Body(scenario, dialect, "request", data, frame) for frame in (8192, 64)]
    bodies += [Body("many-1mb", dialect, "request", many_messages(dialect), frame) for frame in (8192, 64)]
    return bodies


def _frames(body: Body) -> list[bytes]:
    data, size = body.data, body.frame or 65536
    return [data[i:i + size] for i in range(0, len(data), size)]


def transcoder_run(cls, source: str, target: str, frames: list[bytes]):
    def run() -> int:
        transcoder = cls(source, target)
        feed = transcoder.feed
        n = 0
        for frame in frames:
            n += len(feed(frame))
        return n + len(transcoder.close())
    return run


def _tokens(frames: list[bytes]) -> int:
    from interlingua.json import Tokenizer

    count = [0]

    def handler(kind, value, offset):
        count[0] += 1
    tokenizer = Tokenizer(handler)
    for frame in frames:
        tokenizer.feed(frame)
    tokenizer.close()
    return count[0]


def _baselines(data: bytes) -> list[tuple[str, object]]:
    runs = [("json loads+dumps", lambda: len(json.dumps(json.loads(data), ensure_ascii=False).encode()))]
    try:
        import orjson
    except ImportError:  # (the [bench] extra has it: `python3 dev.py bench`)
        return runs
    return [("orjson loads+dumps", lambda: len(orjson.dumps(orjson.loads(data)))), *runs]


def _params() -> list:
    params = []
    if "json-tokenizer" not in NATIVE_COVERS:
        return params
    for source in DIALECTS:
        targets = [target for target in DIALECTS if ported(source, target)]
        if not targets:
            continue
        for body in _bodies(source):
            frames = _frames(body)
            for target in targets:
                group = f"native-request:{body.shape}/{body.frame}B-frames:{source}->{target}"
                for backend in ("native", "python"):
                    name = f"{backend} transcoder"
                    params.append(pytest.param(body, group, name, transcoder_run(transcoder_class(backend), source,
                                                                                 target, frames),
                                               len(frames), id=f"{group}|{name}"))
                baselines = _baselines(body.data)
                litellm = litellm_run(body) if target == "openai" else None
                if litellm is not None:
                    baselines.append(("litellm anthropic->openai", litellm))
                for name, run in baselines:
                    params.append(pytest.param(body, group, name, run, len(frames), id=f"{group}|{name}"))
    return params


PARAMS = _params()


@pytest.mark.skipif(not PARAMS, reason="no request pair is ported to the native core yet")
@pytest.mark.parametrize("body,group,name,run,feeds", PARAMS or [pytest.param(None, None, None, None, 0, id="none")])
def test_native_request(benchmark, body, group, name, run, feeds):
    benchmark.group = group
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data))
    if "transcoder" in name:  # the cost per feed (bench/conftest.py prints it)
        benchmark.extra_info.update(feeds=feeds, tokens=_tokens(_frames(body)))
    assert benchmark(run) > 0
