"""`import interlingua` on each backend, in fresh processes (the issue's bound: <= 50 ms).

Each figure is the cumulative time `python -X importtime` gives the `interlingua`
package (its own modules and what they import, msgspec, the extension), median of a
few fresh interpreters with `INTERLINGUA_BACKEND` set; bench/conftest.py prints it.

The interpreters may write and read the bytecode cache (``__pycache__``), as an installed
package's imports do: an environment that sets ``PYTHONDONTWRITEBYTECODE`` (these
workplaces' shells do) would otherwise time compiling every module from source. One
unmeasured import first writes the cache.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

import pytest

from contenders import backends

RUNS = 7


def import_us(backend: str) -> int:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["INTERLINGUA_BACKEND"] = backend
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import interlingua"], env=env, check=True,
                         capture_output=True, text=True).stderr
    # "import time: self [us] | cumulative | imported package"; the top-level package's line
    rows = [line.split("|") for line in err.splitlines() if line.startswith("import time:")]
    return next(int(cumulative) for _, cumulative, name in rows if name.strip() == "interlingua")


@pytest.mark.parametrize("backend", backends())
def test_import_time(benchmark, backend):
    times = []
    import_us(backend)  # writes the bytecode cache
    benchmark.group = "import:interlingua"
    benchmark.pedantic(lambda: times.append(import_us(backend)), rounds=RUNS, iterations=1)
    benchmark.extra_info.update(contender=f"import interlingua ({backend})", import_ms=statistics.median(times) / 1000,
                                runs=RUNS)
    assert times
