"""The native openai request encoder (native/src/dialects/openai/request.rs, on the framework
of native/src/encoding.rs) at parity with Python's (issue 11): fed the canonical events the
PYTHON decoders of every dialect make from every rpt request scenario, corpus request,
structural-fuzzer mutant and generated request, it writes the same bytes after every event,
the same tail, the same losses and the same error (tests/native/differential.py,
``assert_encoder_parity``). A rule not ported yet makes the native side say so: that example
is skipped, naming it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from interlingua.dialects import DIALECTS

from .differential import (
    assert_encoder_parity, corpus_requests, fuzz_mutant, python_events, request_bodies, rpt_requests,
)

TARGET = "openai"
BODIES = {dialect: request_bodies(dialect) for dialect in DIALECTS}  # (at import: not inside a @given)
CASES = [case for dialect in DIALECTS for case in rpt_requests(dialect) + corpus_requests(dialect)]

#: the Options every encoder rule reads, each alone: the reasoning field (both spellings),
#: strict (a loss is a LossError at the event that loses), a tiny reorder budget (the hold
#: that exceeds it fails at the same write) and refused reordering (the first held byte)
OPTION_VARIANTS = [
    {"openai_reasoning_field": "reasoning_content"},
    {"openai_reasoning_field": "reasoning"},
    {"strict": True},
    {"reorder_budget": 40},
    {"refuse_reorder": True},
]


def _parity(dialect: str, body: bytes, options=None) -> None:
    events = python_events(dialect, body, options)
    assert_encoder_parity(dialect, TARGET, events, options)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_every_scenario_and_corpus_request(case):
    _parity(case.dialect, case.body, case.options)


@pytest.mark.parametrize("variant", OPTION_VARIANTS, ids=lambda v: ",".join(f"{k}={v}" for k, v in v.items()))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_every_scenario_under_each_option(case, variant):
    _parity(case.dialect, case.body, {**(case.options or {}), **variant})


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DIALECTS).flatmap(lambda dialect: st.tuples(st.just(dialect), BODIES[dialect])))
def test_generated_requests(dialect_and_body):
    dialect, body = dialect_and_body
    _parity(dialect, body)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.sampled_from(DIALECTS).flatmap(fuzz_mutant))
def test_fuzz_mutants(case):
    """Mutants and cut bodies: the events up to the decoder's error (no End), or all of them."""
    _parity(case.dialect, case.body)
