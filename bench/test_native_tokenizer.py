"""The native JSON tokenizer beside the Python one and orjson, on the request bodies.

Not the pipeline (the native codecs do not exist yet, issue 11): the headroom
the native core leaves for them. Each group is one body fed in frames of its
size (and in 64-byte frames): ``native tokenizer`` is ``_native.TokenCounter``
(the Rust tokenizer, a counting sink, one binding call per frame -- the cost
the native pipeline pays per ``feed`` before its codecs' own work), ``python
tokenizer`` is ``interlingua.json.Tokenizer`` with a handler that counts, and
``orjson loads+dumps`` the whole body at once (the ratio baseline). Tokens per
second and the cost per feed are printed after the table
(``bench/conftest.py``); bench/README.md has the figures.
"""

from __future__ import annotations

import pytest

from bodies import MIB, Body, huge_text, many_messages, rpt_bodies

from interlingua.backend import NATIVE_COVERS, native_module

pytestmark = pytest.mark.skipif("json-tokenizer" not in NATIVE_COVERS, reason="interlingua._native is not built")


def _bodies() -> list[Body]:
    bodies = []
    for scenario in ("large-10k", "large-100k"):
        data = rpt_bodies(scenario).get(("openai", "request"))
        if data:
            bodies += [Body(scenario, "openai", "request", data, frame) for frame in (8192, 64)]
    bodies.append(Body("many-1mb", "openai", "request", many_messages("openai"), 8192))
    bodies.append(Body("many-1mb", "openai", "request", many_messages("openai"), 64))
    bodies.append(Body("huge-1mb", "openai", "request", huge_text("openai", MIB), 65536))
    return bodies


def _frames(body: Body) -> list[bytes]:
    data, size = body.data, body.frame or 65536
    return [data[i:i + size] for i in range(0, len(data), size)]


def native_run(frames):
    counter_type = native_module().TokenCounter

    def run() -> int:
        counter = counter_type()
        feed = counter.feed
        count = 0
        for frame in frames:
            count += feed(frame)
        return count + counter.close()
    return run


def python_run(frames):
    from interlingua.json import Tokenizer

    def run() -> int:
        count = [0]

        def handler(kind, value, offset):
            count[0] += 1
        tokenizer = Tokenizer(handler)
        for frame in frames:
            tokenizer.feed(frame)
        tokenizer.close()
        return count[0]
    return run


def orjson_run(data):
    import orjson
    return lambda: len(orjson.dumps(orjson.loads(data)))


CONTENDERS = [("native tokenizer", native_run), ("python tokenizer", python_run)]
PARAMS = []
for _body in _bodies():
    _group = f"tokenizer:{_body.shape}/{_body.frame}B-frames:{_body.dialect}"
    for _name, _make in CONTENDERS:
        PARAMS.append(pytest.param(_body, _group, _name, _make, id=f"{_group}|{_name}"))
    PARAMS.append(pytest.param(_body, _group, "orjson loads+dumps", None, id=f"{_group}|orjson"))


@pytest.mark.parametrize("body,group,name,make", PARAMS)
def test_tokenizer(benchmark, body, group, name, make):
    frames = _frames(body)
    run = orjson_run(body.data) if make is None else make(frames)
    benchmark.group = group
    # tokens/s counts the Python tokenizer's tokens for every contender: the same unit of
    # work (the native one may cut a string into a different number of fragments)
    tokens = python_run(frames)()
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data), feeds=len(frames), tokens=tokens)
    assert benchmark(run) > 0
