"""PyYAML is the optional ``compiler`` extra, imported lazily; pydantic never."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )


def test_import_loads_neither_yaml_nor_pydantic() -> None:
    result = _run_isolated(
        """
        import sys
        import interlingua.compiler
        print("yaml" in sys.modules, "pydantic" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_without_pyyaml_plain_content_compiles_and_yaml_rendering_explains_the_extra() -> None:
    result = _run_isolated(
        """
        import sys
        sys.modules["yaml"] = None  # makes `import yaml` fail as if not installed
        from interlingua.compiler import (
            Branch, Instruction, InstructionContent, TurnRequest, chat_request,
        )

        plain = Instruction(content=InstructionContent(plain_content="hello"))
        print(chat_request(Branch(), TurnRequest(instruction=plain))["messages"][0]["content"])
        structured = Instruction(content=InstructionContent(instruction="hello"))
        try:
            chat_request(Branch(), TurnRequest(instruction=structured))
        except ImportError as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    first_line, second_line = result.stdout.splitlines()
    assert first_line == "hello"
    assert second_line == (
        "Rendering instruction text needs PyYAML; install the 'compiler' extra "
        "(pip install 'interlingua[compiler]')"
    )
