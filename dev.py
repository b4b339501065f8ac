#!/usr/bin/env python3
"""Set up ./.venv on first use, then run the main job or the tests.

    python3 dev.py demo     # transcode the shipped sample request, show its canonical blocks
    python3 dev.py test     # the whole test suite
    python3 dev.py bench    # the benchmarks (bench/)
    python3 dev.py spike    # the buffering measurement (spike/REPORT.md)
"""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
EXTRAS = {"demo": "[proxy,demo]", "test": "[test]", "bench": "[test,bench]", "spike": "[test,bench]"}


def ensure_venv(extra: str) -> None:
    # the stamp names pyproject.toml's digest: a dependency added on main is installed on the next run
    digest = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    stamp = VENV / f".installed{extra or '[base]'}-{digest}"
    if stamp.exists():
        return
    if not PYTHON.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    subprocess.check_call([str(PYTHON), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    subprocess.check_call([str(PYTHON), "-m", "pip", "install", "-q", "-e", f"{ROOT}{extra}"])
    stamp.touch()


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "demo"
    if command not in EXTRAS:
        print(__doc__)
        return 2
    ensure_venv(EXTRAS[command])
    os.chdir(ROOT)
    if command == "demo":
        return subprocess.call([str(PYTHON), "-m", "interlingua", "demo"])
    if command == "test":
        return subprocess.call([str(PYTHON), "-m", "pytest", "tests", *sys.argv[2:]])
    if command == "spike":
        return subprocess.call([str(PYTHON), "-m", "spike", *sys.argv[2:]])
    return subprocess.call([str(PYTHON), "-m", "pytest", "bench", "--benchmark-only", *sys.argv[2:]])


if __name__ == "__main__":
    sys.exit(main())
