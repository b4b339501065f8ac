"""``interlingua.Encoder`` on the native core (``_native.Encoder``) against the Python class
(``pipeline.Encoder``, the specification): fed the same canonical events -- every rpt
request's events as Python's decoder makes them (every source dialect, key orders and
fuzz mutants too) and the turn compiler's events (tests/compiler's matrix) -- the same
bytes after each ``feed``, the same ``close``, losses, reorder report, renamed tools and
error (class, message, offset, path, dialect), and the same error object again after it.
Events are fed one by one, in slices of a few, and as one iterable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from interlingua import Options, TranscodeError
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS
from interlingua.pipeline import Encoder as PythonEncoder

from .differential import (
    non_finite_control,
    KEY_ORDERS, error_facts, fuzz_mutant, key_order, python_events, rpt_requests, skip_if_not_ported,
)

native = native_module()
PAIRS = [(source, target) for source in DIALECTS for target in DIALECTS]


def slices(events: list, step: int) -> list:
    """The events fed ``step`` at a time (0: all in one ``feed``; 1: one event per ``feed``,
    passed as the event itself, not a list)."""
    if step == 0:
        return [iter(events)]
    if step == 1:
        return list(events)
    return [events[i:i + step] for i in range(0, len(events), step)]


def run(encoder, feeds: list) -> dict:
    """Everything a caller can see of one encoder's run."""
    outs, error, again = [], None, None
    try:
        for piece in feeds:
            outs.append(encoder.feed(piece))
        outs.append(encoder.close())
    except TranscodeError as exc:
        error = exc
        outs.append(("pending", encoder.pending_output()))
        try:
            encoder.close()
        except TranscodeError as later:
            again = later
    try:
        encoder.close()  # closed or poisoned: raises
        closed_again = None
    except TranscodeError as exc:
        closed_again = error_facts(exc)
    return {
        "outs": outs,
        "error": error_facts(error),
        "same_error_again": again is error,
        "closed_again": closed_again,
        "losses": [(loss.dialect, loss.path, loss.reason) for loss in encoder.losses],
        "reorder": encoder.reorder.report(),
        "tool_names": dict(encoder.tool_names),
    }


def assert_encoder_class_parity(target: str, events: list, source: str = "", options=None, step: int = 1) -> dict:
    options = Options(**options) if isinstance(options, dict) else options
    if any(non_finite_control(event) for event in events):
        return {"error": None}  # (not compared: differential.non_finite_control says why)
    try:
        native_encoder = native.Encoder(target, source=source, options=options)
    except TranscodeError as exc:
        skip_if_not_ported(exc)
        raise
    native_run = run(native_encoder, slices(events, step))
    python_run = run(PythonEncoder(target, source=source, options=options), slices(events, step))
    for name in python_run:
        assert native_run[name] == python_run[name], f"{source} -> {target}: {name} differs (step {step})"
    assert python_run["same_error_again"] or python_run["error"] is None
    return python_run


@pytest.mark.parametrize("source,target", PAIRS)
@pytest.mark.parametrize("step", [0, 1, 3])
def test_rpt_request_events(source, target, step):
    for case in rpt_requests(source):
        events = python_events(source, case.body, case.options)
        assert_encoder_class_parity(target, events, source, case.options, step)


@pytest.mark.parametrize("source,target", [(s, t) for s, t in PAIRS if s != t])
def test_strict_losses_raise_and_poison(source, target):
    """Strict: the first loss is a LossError from ``feed``; the output before it stays
    pending, and every later call raises that same error."""
    raised = 0
    for case in rpt_requests(source):
        events = python_events(source, case.body, case.options)
        run = assert_encoder_class_parity(target, events, source, {**(case.options or {}), "strict": True}, 1)
        raised += run["error"] is not None
    assert raised, "some rpt request of every pair loses something"


@pytest.mark.parametrize("source,target", PAIRS)
@given(data=st.data())
def test_key_orders_and_mutants(source, target, data):
    if data.draw(st.booleans(), label="mutant"):
        case = data.draw(fuzz_mutant(source), label="mutant case")
    else:
        case = key_order(data.draw(st.sampled_from(rpt_requests(source)), label="case"),
                         data.draw(st.sampled_from(KEY_ORDERS), label="order"), data.draw(st.integers(0, 99)))
    events = python_events(source, case.body, case.options)
    assert_encoder_class_parity(target, events, source, case.options, data.draw(st.sampled_from([0, 1, 2, 5])))


def _compiler_cases():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compiler"))
    from compiler_cases import build_branch, build_request, load_case, matrix_case_paths
    from interlingua.compiler import compile_chat_request
    cases = []
    for path in matrix_case_paths():
        case = load_case(path)
        try:
            compiled = compile_chat_request(build_branch(case["branch"]), build_request(case["request"]))
        except Exception:  # (a matrix case that expects the compiler to refuse)
            continue
        cases.append((Path(path).stem, compiled))
    return cases


COMPILED = _compiler_cases()


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("name,compiled", COMPILED, ids=[name for name, _ in COMPILED])
def test_the_turn_compilers_events(target, name, compiled):
    from interlingua.compiler import compiled_events
    from interlingua.compiler.surfaces import CHAT_EXECUTION, RUN_EXECUTION
    for execution in (CHAT_EXECUTION, RUN_EXECUTION):
        try:
            events = list(compiled_events(compiled, execution))
        except ValueError:  # (provider kwargs that take the reserved messages key)
            continue
        for step in (0, 1):
            assert_encoder_class_parity(target, events, "openai", None, step)


def test_encode_compiled_runs_the_backends_encoder(monkeypatch):
    """The compiler's ``encode_compiled`` writes with ``interlingua.Encoder``: the native one
    on the native backend, the same bytes and losses as the Python one."""
    from interlingua import backend
    from interlingua.compiler import encode_compiled
    assert COMPILED
    for _, compiled in COMPILED:
        for target in DIALECTS:
            results = []
            for name in ("python", "native"):
                monkeypatch.setattr(backend, "BACKEND", name)
                body, encoder = encode_compiled(compiled, target)
                assert type(encoder).__module__ == ("interlingua._native" if name == "native" else "interlingua.pipeline")
                results.append((body, list(encoder.losses)))
            assert results[0] == results[1]


@pytest.mark.parametrize("target", DIALECTS)
def test_names_are_checked_as_python_checks_them(target):
    for args, kwargs in [(("gemini",), {}), ((target,), {"kind": "x"}), ((target,), {"source": "gemini"})]:
        with pytest.raises(ValueError) as python:
            PythonEncoder(*args, **kwargs)
        with pytest.raises(ValueError) as native_error:
            native.Encoder(*args, **kwargs)
        assert str(native_error.value) == str(python.value)
