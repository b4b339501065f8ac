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

# Both backends (DESIGN §9): a test that takes ``backend`` runs once per backend; the
# native run is skipped, saying why, until the native core covers the pipeline.
@pytest.fixture(params=["python", "native"])
def backend(request):
    from interlingua import backend as backends
    if request.param == "native" and backends.PIPELINE not in backends.NATIVE_COVERS:
        pytest.skip("the native core does not cover the pipeline yet "
                    f"(covers: {', '.join(sorted(backends.NATIVE_COVERS)) or 'nothing'})")
    return request.param


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
