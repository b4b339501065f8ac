"""The native request Decoder (``interlingua._native.Decoder``) against ``interlingua.Decoder``:
the same events out of every ``feed`` and of ``close`` (a block's fragments joined per feed,
differential.py's rule), the same error at the same call and again after it, for every rpt
request scenario (with its Options) and fuzz mutants, cut at random points. A dialect
whose decoder is not ported yet is skipped, naming it."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua import Decoder, Options, TranscodeError
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS

from .differential import (
    not_ported_here,
    error_facts, feed_cuts, feeds, fuzz_mutant, join_fragments, rpt_requests, skip_if_not_ported,
    response_mutant, rpt_responses, rpt_streams, stream_cuts, stream_mutant,
)

native = native_module()


def run(decoder, pieces: list[bytes]) -> tuple:
    per_call, error, again = [], None, None
    try:
        for piece in pieces:
            per_call.append(join_fragments(decoder.feed(piece)))
        per_call.append(join_fragments(decoder.close()))
    except TranscodeError as exc:
        error = exc
        try:
            decoder.close()
        except TranscodeError as later:
            again = error_facts(later)
    return per_call, error_facts(error), again


def assert_decoder_class_parity(dialect: str, body: bytes, cuts, options=None, kind: str = "request") -> None:
    options = Options(**options) if isinstance(options, dict) else options
    try:
        native_decoder = native.Decoder(dialect, kind=kind, options=options)
    except TranscodeError as exc:
        skip_if_not_ported(exc)
        raise
    pieces = feeds(body, sorted(cuts))
    native_run = run(native_decoder, pieces)
    if native_run[1] is not None and "not ported yet" in native_run[1][1]:
        not_ported_here(native_run[1][1])
    python_run = run(Decoder(dialect, kind=kind, options=options), pieces)
    assert native_run == python_run, f"{dialect}, cuts {cuts[:20]}"
    assert python_run[2] == python_run[1], "an error poisons the decoder"


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_rpt_requests(dialect, data):
    case = data.draw(st.sampled_from(rpt_requests(dialect)), label="case")
    assert_decoder_class_parity(dialect, case.body, data.draw(feed_cuts(case.body), label="cuts"), case.options)


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_fuzz_mutants(dialect, data):
    case = data.draw(fuzz_mutant(dialect), label="mutant")
    assert_decoder_class_parity(dialect, case.body, data.draw(feed_cuts(case.body), label="cuts"))


# -- responses and streams ---------------------------------------------------------------

INPUTS = {"response": rpt_responses, "stream": rpt_streams}
MUTANTS = {"response": response_mutant, "stream": stream_mutant}


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_rpt_responses_and_streams(dialect, kind, data):
    """The class over the stream front (framing, one document per frame, FrameEnd) and
    the response front: every rpt scenario, cut inside frames, in 7-byte pieces, per frame."""
    case = data.draw(st.sampled_from(INPUTS[kind](dialect)), label="case")
    assert_decoder_class_parity(dialect, case.body, data.draw(stream_cuts(case.body, dialect), label="cuts"),
                                case.options, kind=kind)


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_invalid_responses_and_streams(dialect, kind, data):
    case = data.draw(MUTANTS[kind](dialect), label="mutant")
    assert_decoder_class_parity(dialect, case.body, data.draw(stream_cuts(case.body, dialect), label="cuts"),
                                kind=kind)
