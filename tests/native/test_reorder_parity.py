"""The native reorder buffer against reorder.py: same drains, report and errors for any
sequence of holds, appends, writes and drains under any budget, refusing or not."""

from __future__ import annotations

from hypothesis import given, strategies as st

from interlingua.backend import native_module
from interlingua.reorder import ReorderBuffer

from .differential import error_facts

native = native_module()
REASONS = ["system-first", "tool-args", "late-attrs", "it's"]


def python_ops(budget: int, refuse: bool, kinds: list, ops):
    buffer = ReorderBuffer(budget, refuse=refuse)
    holds, drained, error = [], [], None
    try:
        for op in ops:
            if op[0] in ("hold", "byte_hold"):
                holds.append(buffer.hold(op[1]))
            elif op[0] == "append":
                holds[op[1]].append(op[2], op[3])
            elif op[0] == "write":
                holds[op[1]].write(op[2])
            else:
                hold = holds[op[1]]
                drained.append(hold.take_bytes() if kinds[op[1]] == "byte_hold" else list(hold.drain()))
    except Exception as exc:  # noqa: BLE001 - the error is part of the result
        error = exc
    return drained, buffer.report(), error


@st.composite
def programs(draw):
    ops, kinds_ = [], []
    for _ in range(draw(st.integers(0, 25))):
        choice = draw(st.integers(0, 3)) if kinds_ else 0
        if choice == 0:
            kind = draw(st.sampled_from(["hold", "byte_hold"]))
            kinds_.append(kind)
            ops.append((kind, draw(st.sampled_from(REASONS))))
            continue
        k = draw(st.integers(0, len(kinds_) - 1))
        if choice == 3:
            ops.append(("drain", k))
        elif kinds_[k] == "hold":
            ops.append(("append", k, draw(st.integers(0, 99)), draw(st.integers(0, 40))))
        else:
            ops.append(("write", k, draw(st.binary(max_size=30))))
    return kinds_, ops


@given(programs(), st.sampled_from([0, 10, 64, 1 << 26]), st.booleans())
def test_same_drains_report_and_errors(program, budget, refuse):
    kinds, ops = program
    n_drained, n_report, n_error = native.reorder_ops(budget, refuse, ops)
    p_drained, p_report, p_error = python_ops(budget, refuse, kinds, ops)
    assert error_facts(n_error) == error_facts(p_error)
    assert n_drained == p_drained
    assert n_report == p_report
    assert list(n_report["by_reason"]) == list(p_report["by_reason"])  # (in the same order)
