"""Throughput: interlingua on every available ordered pair vs whole-body baselines, on the same bytes.

One benchmark group per body (shape, dialect, frame size); inside it, each
contender of ``contenders.contenders``. ``bench/conftest.py`` prints the
ratios to orjson after pytest-benchmark's own table.
"""

from __future__ import annotations

import pytest

from bodies import request_bodies, stream_bodies
from contenders import contenders


def _params(bodies):
    params = []
    for body in bodies:
        for name, run in contenders(body):
            params.append(pytest.param(body, name, run, id=f"{body.group}|{name}"))
    return params


REQUESTS = _params(request_bodies())
STREAMS = _params(stream_bodies())


@pytest.mark.parametrize("body,name,run", REQUESTS)
def test_request(benchmark, body, name, run):
    benchmark.group = body.group
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data))
    assert benchmark(run) > 0


@pytest.mark.skipif(not STREAMS, reason="no stream codec available yet: streamed responses not benchmarked")
@pytest.mark.parametrize("body,name,run", STREAMS or [pytest.param(None, None, None, id="none")])
def test_stream(benchmark, body, name, run):
    benchmark.group = body.group
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data))
    assert benchmark(run) > 0
