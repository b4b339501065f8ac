import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

# CI: few examples, no deadline (shared 2-core machines), derandomized so that a run is
# repeatable and CI cannot turn red on a new random draw. By hand before resolving an
# issue: HYPOTHESIS_PROFILE=deep (random, many more examples).
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Both backends (DESIGN §9): a test that takes ``backend`` runs once per backend, with
# ``interlingua.backend.BACKEND`` set for it (read at each Transcoder / Decoder construction:
# requests run natively on "native"; responses and streams are Python on both until issue 12).
# The native run is skipped, saying why, where the extension lacks the request pipeline.
@pytest.fixture(params=["python", "native"])
def backend(request, monkeypatch):
    import interlingua
    from interlingua import backend as backends
    if request.param == "native" and (backends.NATIVE_IMPORT_ERROR is not None
                                      or backends.REQUEST_PIPELINE not in backends.NATIVE_COVERS):
        pytest.skip("the native core does not cover the request pipeline "
                    f"(covers: {', '.join(sorted(backends.NATIVE_COVERS)) or 'nothing'})")
    monkeypatch.setattr(backends, "BACKEND", request.param)
    monkeypatch.setattr(interlingua, "BACKEND", request.param)
    return request.param


NATIVE_TESTS = Path(__file__).resolve().parent / "native"


# tests/native compare the native classes with interlingua's Python ones: there the public
# classes are Python whatever the default backend (a test may still switch it itself)
@pytest.fixture(autouse=True)
def _python_reference_in_native_parity_tests(request, monkeypatch):
    if Path(request.node.path).parent == NATIVE_TESTS:
        import interlingua
        from interlingua import backend as backends
        monkeypatch.setattr(backends, "BACKEND", "python")
        monkeypatch.setattr(interlingua, "BACKEND", "python")


# Parity gaps of the native request pipeline: the suite's tests whose native run differs from
# Python's (output, error or loss). On the native backend they are strict xfails, so the rest of
# the native run still holds, and a closed gap shows as XPASS (then delete its line here). Empty
# since issue 11's last gaps closed (lone-surrogate keys, re-raised error identity); keep it
# for the next gap found, with interlingua.backend.DEFAULT back to "python" while it is not empty.
# (id substring -> the gap)
NATIVE_GAPS: dict[str, str] = {}


def pytest_collection_modifyitems(config, items):
    from interlingua import backend as backends
    for item in items:
        if Path(item.path).parent == NATIVE_TESTS:
            continue
        runs_native = backends.BACKEND == "native" or "[native]" in item.nodeid
        for needle, gap in NATIVE_GAPS.items():
            if runs_native and needle in item.nodeid:
                item.add_marker(pytest.mark.xfail(reason=f"native parity gap: {gap}", strict=True))
                break


# every cross-dialect Transcoder output of the suite is checked against what its target API
# accepts beyond its client's types (tests/validity.py)
import validity  # noqa: E402

validity.install()

# responses whose source has no time or id: a fixed clock and entropy unless a test sets its
# own, so outputs compare across cuts and runs (tests/fixed_clock.py)
import fixed_clock  # noqa: E402

fixed_clock.install()


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"validity: {validity.CHECKED['outputs']} cross-dialect outputs passed the target API rules "
        f"(tests/validity.py), {validity.CHECKED['skipped']} not held to them (their input breaks its own "
        f"API's rules), {validity.CHECKED['unparsed']} not JSON (judged by the tests' own checks)")
    for (pair, broke_in, broke_out), count in sorted(validity.SKIPPED.items()):
        terminalreporter.write_line(f"  {pair}: input breaks {broke_in}, output {broke_out}: {count}")
