#!/usr/bin/env python3
"""Set up ./.venv on first use, then run the main job or the tests.

    python3 dev.py demo     # transcode the shipped sample request, show its canonical blocks
    python3 dev.py test     # the whole test suite
    python3 dev.py bench    # the benchmarks (bench/)
    python3 dev.py spike    # the buffering measurement (spike/REPORT.md)
    python3 dev.py proxy-bench [--quick]   # the proxy under load vs direct vs LiteLLM's proxy (bench/proxy/)
    python3 dev.py build    # set up .venv and (re)build the native extension only, run nothing
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
EXTRAS = {"demo": "[proxy,demo]", "test": "[test]", "bench": "[test,bench]", "spike": "[test,bench]",
          "proxy-bench": "[test,bench]", "build": "[test]"}


NATIVE = ROOT / "native"


def build_inputs() -> str:
    """A hash of what the install is built from (pyproject.toml, the native crate's
    sources): when it changes (a ``git merge main``), the install is redone, so the
    extension is rebuilt in every existing .venv."""
    digest = hashlib.sha256()
    files = [ROOT / "pyproject.toml", *sorted(NATIVE.glob("Cargo.*")), *sorted((NATIVE / "src").rglob("*.rs"))]
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def find_cargo() -> None:
    """maturin builds native/ with cargo: put rustup's default place on PATH, or say what is missing."""
    if shutil.which("cargo"):
        return
    cargo_bin = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin"
    if (cargo_bin / "cargo").exists():
        os.environ["PATH"] = f"{cargo_bin}{os.pathsep}{os.environ.get('PATH', '')}"
        return
    sys.exit("dev.py: building interlingua's native core (native/) needs a Rust toolchain: "
             "cargo is not on PATH (install it with rustup, https://rustup.rs)")


def create_venv() -> None:
    """A venv with pip. A python3 without ensurepip (Debian's without python3-venv)
    gets a venv without pip, and pip from the registry through the system's pip."""
    try:
        venv.EnvBuilder(with_pip=True).create(VENV)
        return
    except (subprocess.CalledProcessError, OSError):
        shutil.rmtree(VENV, ignore_errors=True)
    venv.EnvBuilder(with_pip=False).create(VENV)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, "pip"])
        wheel = next(Path(tmp).glob("pip-*.whl"))
        subprocess.check_call([str(PYTHON), f"{wheel}/pip", "install", "-q", str(wheel)])


def ensure_venv(extra: str) -> None:
    stamp = VENV / f".installed{extra or '[base]'}"
    inputs = build_inputs()
    if stamp.exists() and stamp.read_text() == inputs:
        return
    find_cargo()
    if not PYTHON.exists():
        create_venv()
    subprocess.check_call([str(PYTHON), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    # maturin (the build backend) compiles native/ in release and installs the
    # extension beside the sources (src/interlingua/_native*.so), editable.
    subprocess.check_call([str(PYTHON), "-m", "pip", "install", "-q", "-e", f"{ROOT}{extra}"])
    stamp.write_text(inputs)


def cargo_test() -> int:
    """The core's own tests (no Python in them), in the dev profile: quick to build."""
    find_cargo()
    return subprocess.call(["cargo", "test", "--quiet", "--locked", "--manifest-path", str(NATIVE / "Cargo.toml")])


def test_both_backends(args: list[str]) -> int:
    """The suite on each backend (DESIGN §9, issue 11): forced Python, then forced native (which
    fails loudly where the extension lacks the request pipeline); fails if either fails."""
    failed = 0
    for name in ("python", "native"):
        print(f"== pytest, INTERLINGUA_BACKEND={name} ==", flush=True)
        failed |= subprocess.call([str(PYTHON), "-m", "pytest", "tests", *args],
                                  env={**os.environ, "INTERLINGUA_BACKEND": name})
    return failed


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "demo"
    if command not in EXTRAS:
        print(__doc__)
        return 2
    ensure_venv(EXTRAS[command])
    os.chdir(ROOT)
    if command == "build":
        return 0
    if command == "demo":
        return subprocess.call([str(PYTHON), "-m", "interlingua", "demo"])
    if command == "test":
        return cargo_test() or test_both_backends(sys.argv[2:])
    if command == "proxy-bench":
        return subprocess.call([str(PYTHON), "-m", "bench.proxy.load", *sys.argv[2:]])
    if command == "spike":
        return subprocess.call([str(PYTHON), "-m", "spike", *sys.argv[2:]])
    return subprocess.call([str(PYTHON), "-m", "pytest", "bench", "--benchmark-only", *sys.argv[2:]])


if __name__ == "__main__":
    sys.exit(main())
