"""Backend selection (interlingua.backend) and the binding's safety edges."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import interlingua
from interlingua import backend as backends

SAMPLE = Path(interlingua.__file__).parent / "samples" / "openai-request.json"


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60)


REPORT = "import interlingua, interlingua.backend as b; print(interlingua.BACKEND, sorted(b.NATIVE_COVERS))"
HIDE_NATIVE = "import sys; sys.modules['interlingua._native'] = None\n"  # the import then fails


def test_backend_is_python_while_the_native_core_lacks_the_pipeline():
    # The extension is built (dev.py) and covers stages, not the pipeline: the
    # pipeline that runs is the Python one, and BACKEND says so.
    assert backends.native_module().COVERS
    assert backends.PIPELINE not in backends.NATIVE_COVERS
    assert interlingua.BACKEND == "python"


@pytest.mark.parametrize("env, expected", [
    ({}, "python"),
    ({"INTERLINGUA_BACKEND": "python"}, "python"),
    ({"INTERLINGUA_BACKEND": " Python "}, "python"),
])
def test_selection(env, expected):
    done = run_python(REPORT, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == expected
    assert "json-tokenizer" in done.stdout


def test_native_requested_fails_loudly_while_it_does_not_cover_the_pipeline():
    done = run_python(REPORT, {"INTERLINGUA_BACKEND": "native"})
    assert done.returncode != 0
    assert "ImportError: INTERLINGUA_BACKEND=native: the native core covers only" in done.stderr


def test_native_requested_fails_loudly_when_the_extension_is_missing():
    done = run_python(HIDE_NATIVE + REPORT, {"INTERLINGUA_BACKEND": "native"})
    assert done.returncode != 0
    assert "interlingua._native is not built" in done.stderr


def test_missing_extension_falls_back_to_python():
    done = run_python(HIDE_NATIVE + REPORT, {})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "[]"]


def test_unknown_backend_is_refused():
    done = run_python(REPORT, {"INTERLINGUA_BACKEND": "rust"})
    assert done.returncode != 0
    assert "INTERLINGUA_BACKEND='rust': expected one of python, native" in done.stderr


def test_the_backend_fixture_runs_the_pipeline(backend):
    # Runs on both backends; the native run is skipped (saying why) until it covers the pipeline.
    out = b"".join(interlingua.transcode([SAMPLE.read_bytes()], source="openai", target="anthropic"))
    assert out.startswith(b"{")


def test_a_panic_in_the_core_is_a_transcode_error():
    native = backends.native_module()
    with pytest.raises(interlingua.TranscodeError, match="internal error in the native core: boom"):
        native._panic_for_test("boom")


def test_no_unsafe_of_our_own_in_the_core():
    import re
    native_src = Path(__file__).resolve().parents[2] / "native" / "src"
    found = [f"{path.name}:{n}" for path in sorted(native_src.rglob("*.rs"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bunsafe\s*(\{|fn\b|impl\b|trait\b)", line.split("//")[0])]
    assert not found
    core = [p for p in native_src.rglob("*.rs") if p.name not in ("lib.rs", "python.rs")]
    assert core and all("#![forbid(unsafe_code)]" in p.read_text() for p in core)
