"""The shared payload matrix (ADR-0007 D6 step 1): every case through both surfaces.

Expected payloads are hand-written data under fixtures/matrix/. The run
surface must produce the chat payload plus ``"stream": true`` and nothing
else, so one expectation per case serves both surfaces.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from compiler_cases import build_branch, build_request, load_case, matrix_case_paths

from interlingua.compiler import chat_request, run_request

SURFACES: dict[str, Callable[..., dict[str, Any]]] = {"chat": chat_request, "run": run_request}
ERROR_TYPES: dict[str, type[Exception]] = {"ValueError": ValueError, "TypeError": TypeError}

CASE_PATHS = matrix_case_paths()
PAYLOAD_CASE_PATHS = [p for p in CASE_PATHS if "payload" in load_case(p)["expect"]]


def _expected_payload(case: dict[str, Any], surface: str) -> dict[str, Any]:
    payload = case["expect"]["payload"]
    return {**payload, "stream": True} if surface == "run" else payload


def _run_case(case: dict[str, Any], surface: str) -> dict[str, Any]:
    # Building the request is part of the act: some cases are refused while
    # their ContextBlock values are constructed.
    branch = build_branch(case["branch"])
    request = build_request(case["request"])
    return SURFACES[surface](branch, request)


def test_matrix_is_present() -> None:
    # Guard against an empty glob turning the parametrised matrix into no tests.
    assert len(CASE_PATHS) >= 40
    assert PAYLOAD_CASE_PATHS and len(PAYLOAD_CASE_PATHS) < len(CASE_PATHS)


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("case_path", CASE_PATHS, ids=lambda p: Path(p).stem)
def test_payload_matrix(case_path: Path, surface: str) -> None:
    case = load_case(case_path)
    expected_error = case["expect"].get("error")
    if expected_error is None:
        assert _run_case(case, surface) == _expected_payload(case, surface)
        return
    with pytest.raises(ERROR_TYPES[expected_error["type"]]) as caught:
        _run_case(case, surface)
    assert str(caught.value) == expected_error["message"]


@pytest.mark.parametrize("case_path", PAYLOAD_CASE_PATHS, ids=lambda p: Path(p).stem)
def test_surfaces_differ_only_in_stream(case_path: Path) -> None:
    # Error cases are covered above: both surfaces must raise the same error.
    case = load_case(case_path)
    chat = _run_case(case, "chat")
    run = _run_case(case, "run")
    assert run.pop("stream") is True
    assert run == chat
