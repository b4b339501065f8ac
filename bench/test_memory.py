"""Peak memory and time to first output byte on the 10 MB one-text bodies, on each backend.

Peak RSS: one fresh process per measurement (``memory_worker.py``), read
with ``os.wait4`` like tests/test_cli.py, minus the peak of a process that
imports the same things and does nothing (its baseline; for interlingua the
same backend, ``INTERLINGUA_BACKEND``, and the same pair's ``Transcoder``).
Each figure is recorded in the benchmark's ``extra_info`` and printed by
bench/conftest.py. First byte: in this process, ``contenders.transcoder_class``
of each backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bodies import MIB, huge_text, targets
from contenders import backends, json_run, litellm_adapter, orjson_run, transcoder_class
from bodies import Body

WORKER = Path(__file__).resolve().parent / "memory_worker.py"
BODY_DIALECTS = ("openai", "anthropic")


def _peak_kib(*args: str, backend: str | None = None) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WORKER.parent), *sys.path])}
    if backend:
        env["INTERLINGUA_BACKEND"] = backend
    # through the worker's small launcher (see memory_worker.py: ru_maxrss crosses exec)
    out = subprocess.run([sys.executable, str(WORKER), "measure", *args], env=env, check=True,
                         capture_output=True).stdout
    return int(out.split()[-1])


@pytest.fixture(scope="module")
def body_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bodies")
    files = {}
    for dialect in BODY_DIALECTS:
        files[dialect] = folder / f"{dialect}-10mb.json"
        files[dialect].write_bytes(huge_text(dialect, 10 * MIB))
    return files


def _memory_cases():
    cases = []
    for dialect in BODY_DIALECTS:
        for target in targets(dialect, "request"):
            for backend in backends():
                cases.append(pytest.param(dialect, "interlingua", (dialect, target), "baseline-interlingua", backend,
                                          id=f"{dialect}|interlingua {dialect}->{target} ({backend})"))
        if targets(dialect, "request") or dialect == "anthropic":
            cases.append(pytest.param(dialect, "json", (), "baseline-json", None, id=f"{dialect}|json loads+dumps"))
            cases.append(pytest.param(dialect, "orjson", (), "baseline-orjson", None, id=f"{dialect}|orjson loads+dumps"))
        if dialect == "anthropic" and litellm_adapter() is not None:
            cases.append(pytest.param(dialect, "litellm", (), "baseline-litellm", None, id=f"{dialect}|litellm anthropic->openai"))
    return cases


@pytest.mark.parametrize("dialect,mode,pair,baseline,backend", _memory_cases())
def test_peak_memory_10mb(benchmark, body_files, dialect, mode, pair, baseline, backend):
    path = str(body_files[dialect])
    result = {}

    def measure():
        result["base"] = _peak_kib(baseline, path, *pair, backend=backend)
        result["peak"] = _peak_kib(mode, path, *pair, backend=backend)

    benchmark.group = f"memory:huge-10mb:{dialect}"
    benchmark.pedantic(measure, rounds=1, iterations=1)
    growth = (result["peak"] - result["base"]) / 1024
    contender = f"{mode} {'->'.join(pair)}".strip() + (f" ({backend})" if backend else "")
    benchmark.extra_info.update(contender=contender, peak_mib=result["peak"] / 1024,
                                baseline_mib=result["base"] / 1024, growth_mib=growth)


def _first_byte(run_body: Body, target: str, backend: str):
    data, frame, source = run_body.data, run_body.frame, run_body.dialect
    pieces = [data[i:i + frame] for i in range(0, len(data), frame)]
    cls = transcoder_class(backend)

    def first() -> int:
        transcoder = cls(source, target)
        for piece in pieces:
            out = transcoder.feed(piece)
            if out:
                return len(out)
        return len(transcoder.close())

    return first


def _ttfb_cases():
    cases = []
    for dialect in BODY_DIALECTS:
        body = Body("huge-10mb", dialect, "request", huge_text(dialect, 10 * MIB), 65536)
        for target in targets(dialect, "request"):
            for backend in backends():
                name = f"interlingua {dialect}->{target} ({backend})"
                cases.append(pytest.param(body, name, _first_byte(body, target, backend), id=f"{dialect}|{name}"))
        if targets(dialect, "request"):
            cases.append(pytest.param(body, "json loads+dumps", json_run(body), id=f"{dialect}|json loads+dumps"))
            orjson = orjson_run(body)
            if orjson:
                cases.append(pytest.param(body, "orjson loads+dumps", orjson, id=f"{dialect}|orjson loads+dumps"))
    return cases


@pytest.mark.parametrize("body,name,run", _ttfb_cases())
def test_time_to_first_byte_10mb(benchmark, body, name, run):
    """interlingua: until its first output bytes (64 KiB reads); baselines emit nothing before the end."""
    benchmark.group = f"first-byte:huge-10mb:{body.dialect}"
    benchmark.extra_info.update(contender=name, body_bytes=len(body.data))
    assert benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1) > 0
