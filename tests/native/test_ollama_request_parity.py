"""The native ollama request codecs against Python's (the specification): the decoder
gives the same events (fragments joined per feed), losses and error for every ollama
request input cut anywhere; the encoder, fed the events Python's decoders of every
dialect make, writes the same bytes after every event, the same tail, losses and error.

Inputs: every ollama rpt request scenario (``rpt/ollama-parity-*`` among them), the
corpus's ollama requests, the Go-shaped bodies of ``tests/ollama/test_ollama_parity.py``,
structural-fuzzer mutants and generated requests (hypothesis); for the encoder also
every openai and anthropic rpt request and corpus item (the ``* -> ollama`` legs).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from interlingua.dialects import DIALECTS

from .differential import (
    Case, _load_test_module, assert_decoder_parity, assert_encoder_parity, corpus_requests, cut_points, feeds,
    fuzz_mutant, python_decode_events, request_bodies, rpt_requests,
)

OLLAMA_BODIES = request_bodies("ollama")  # (at import: not inside a @given)
#: bodies up to this size are also fed one byte at a time
EVERY_BYTE = 3000


def _go(obj) -> bytes:
    """JSON as Go's encoding/json writes it (tests/ollama/test_ollama_parity.go)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _go_shaped() -> tuple[Case, ...]:
    """The request bodies of tests/ollama/test_ollama_parity.py (Go's struct order), by
    source dialect: its module's GO_HISTORY and its tests' parametrized request bodies."""
    module = _load_test_module("ollama/test_ollama_parity.py")
    cases = [Case("go GO_HISTORY", "ollama", _go(module.GO_HISTORY))]
    for name in dir(module):
        test = getattr(module, name)
        for mark in getattr(test, "pytestmark", []):
            if mark.name != "parametrize" or "body" not in mark.args[0].split(","):
                continue
            fields = [f.strip() for f in mark.args[0].split(",")]
            for n, values in enumerate(mark.args[1]):
                values = dict(zip(fields, values if len(fields) > 1 else [values]))
                body = values["body"]
                if isinstance(body, dict) and "model" in body:
                    source = values.get("source") or ("anthropic" if "max_tokens" in body else "openai")
                    cases.append(Case(f"go {name}[{n}]", source, _go(body)))
    return tuple(cases)


def _cases(dialect: str) -> tuple[Case, ...]:
    go = tuple(case for case in _go_shaped() if case.dialect == dialect)
    return rpt_requests(dialect) + corpus_requests(dialect) + go


def _cut_sets(body: bytes) -> list[list[int]]:
    """Whole, one byte at a time (small bodies), and a few fixed strides."""
    sets = [[]]
    if len(body) <= EVERY_BYTE:
        sets.append(list(range(1, len(body))))
    for stride in (7, 61, 1024):
        if stride < len(body):
            sets.append(list(range(stride, len(body), stride)))
    return sets


# -- the decoder ------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases("ollama"), ids=repr)
def test_decoder_is_at_parity_at_every_cut(case):
    for cuts in _cut_sets(case.body):
        assert_decoder_parity("ollama", case.body, cuts, case.options)


@settings(max_examples=60)
@given(case=fuzz_mutant("ollama"), data=st.data())
def test_decoder_is_at_parity_on_fuzz_mutants(case, data):
    assert_decoder_parity("ollama", case.body, data.draw(cut_points(case.body)), case.options)


@settings(max_examples=60)
@given(body=OLLAMA_BODIES, data=st.data())
def test_decoder_is_at_parity_on_generated_requests(body, data):
    assert_decoder_parity("ollama", body, data.draw(cut_points(body)))


@pytest.mark.parametrize("options", [{"max_value_bytes": 8}, {"reorder_budget": 16}, {"refuse_reorder": True},
                                     {"strict": True}])
def test_decoder_is_at_parity_under_tight_options(options):
    """Budgets and refusals raised past the tokenizer: the same error at the same token."""
    body = _go({"messages": [{"content": "a long text held for its role", "role": "user",
                              "tool_name": {"a": [1, 2, 3]}}], "keep_alive": "5m", "model": "m"})
    for cuts in _cut_sets(body):
        assert_decoder_parity("ollama", body, cuts, options)


# -- the encoder ------------------------------------------------------------------------


def _events_at(source: str, body: bytes, cuts, options) -> list:
    """The Python decoder's events for ``body`` fed in pieces (a cut changes the fragments)."""
    per_piece, _, _ = python_decode_events(source, "request", feeds(body, cuts), options)
    return [event for events in per_piece for event in events]


ENCODER_CASES = [case for source in DIALECTS for case in _cases(source)]


@pytest.mark.parametrize("case", ENCODER_CASES, ids=lambda c: f"{c.dialect}: {c!r}")
def test_encoder_is_at_parity_on_every_source(case):
    for cuts in _cut_sets(case.body)[:1] + _cut_sets(case.body)[2:3]:  # whole, and a small stride
        events = _events_at(case.dialect, case.body, cuts, case.options)
        assert_encoder_parity(case.dialect, "ollama", events, case.options)


@settings(max_examples=40)
@given(source=st.sampled_from(DIALECTS), data=st.data())
def test_encoder_is_at_parity_on_fuzz_mutants(source, data):
    case = data.draw(fuzz_mutant(source))
    events = _events_at(source, case.body, data.draw(cut_points(case.body)), case.options)
    assert_encoder_parity(source, "ollama", events, case.options)


@settings(max_examples=40)
@given(body=OLLAMA_BODIES, data=st.data())
def test_encoder_is_at_parity_on_generated_requests(body, data):
    events = _events_at("ollama", body, data.draw(cut_points(body)), None)
    assert_encoder_parity("ollama", "ollama", events)
