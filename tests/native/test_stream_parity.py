"""The response and stream side of the differential harness (tests/native/differential.py)
and the native fronts behind ``_native.decode_events`` / ``encode_events`` for kinds
"response" and "stream": every dialect's rpt response and stream scenarios, corpus items and
invalid streams (the structural fuzzer's mutants, framing faults), cut inside frames'
``data:`` lines, in 7-byte pieces, one frame per feed and at every byte, give the same
events per feed (``FrameEnd`` after each frame), losses and error (``frame_offset``
included) as the Python pipeline; each dialect's encoders, fed each source's events, the
same bytes after each event. A dialect whose codec is not ported yet is skipped, naming it."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua import TranscodeError
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS

from .differential import (
    assert_stream_decoder_parity, assert_stream_encoder_parity, corpus_responses, corpus_streams, feeds,
    frame_bounds, python_decode_events, python_events, response_mutant, rpt_responses, rpt_streams,
    STREAM_CUTS, stream_cuts, stream_mutant,
)

native = native_module()
INPUTS = {"response": rpt_responses, "stream": rpt_streams}
CORPUS = {"response": corpus_responses, "stream": corpus_streams}
MUTANTS = {"response": response_mutant, "stream": stream_mutant}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_has_its_response_and_stream_inputs(dialect):
    assert len(rpt_responses(dialect)) >= 10 and len(rpt_streams(dialect)) >= 10
    assert all(case.kind == "response" for case in rpt_responses(dialect))
    assert len(corpus_responses(dialect)) >= 1 and len(corpus_streams(dialect)) >= 1
    assert any(case.start for case in rpt_streams(dialect)), "a scenario with its own clock"
    assert not any("clock" in (case.options or {}) for case in rpt_streams(dialect)), "hooks are not Options"


@pytest.mark.parametrize("mode", STREAM_CUTS)
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_stream_cuts_fall_where_they_say(dialect, mode, data):
    case = data.draw(st.sampled_from(rpt_streams(dialect)), label="case")
    bounds = frame_bounds(dialect, case.body)
    assert b"".join(case.body[start:end] for start, _, end in bounds) == case.body
    cuts = data.draw(stream_cuts(case.body, dialect, mode), label="cuts")
    pieces = feeds(case.body, cuts)
    assert b"".join(pieces) == case.body
    if mode == "frames":  # one frame per feed
        assert pieces == [case.body[start:end] for start, _, end in bounds]
    elif mode == "seven":
        assert all(len(piece) == 7 for piece in pieces[:-1]) and 0 < len(pieces[-1]) <= 7
    elif mode == "inside-data":  # each frame's data line split once, inside it
        long_enough = [(data_start, end) for _, data_start, end in bounds if end - data_start > 1]
        assert len(cuts) == len(long_enough)
        assert all(data_start < cut < end for cut, (data_start, end) in zip(cuts, long_enough))
    elif mode == "every":
        assert cuts == list(range(1, len(case.body)))
    elif mode == "none":
        assert cuts == []


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_the_invalid_inputs_run_in_python(dialect, kind, data):
    """A mutant gives the Python pipeline's events or a TranscodeError, never another exception;
    a stream's error inside a frame's JSON names the frame (``frame_offset``)."""
    case = data.draw(MUTANTS[kind](dialect), label="mutant")
    _, _, error = python_decode_events(dialect, kind, [case.body])
    assert error is None or isinstance(error, TranscodeError)
    if kind == "response" and error is not None:
        assert error.frame_offset is None


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_decoder_parity_on_rpt_scenarios(dialect, kind, data):
    case = data.draw(st.sampled_from(INPUTS[kind](dialect)), label="case")
    assert_stream_decoder_parity(dialect, case.body, data.draw(stream_cuts(case.body, dialect), label="cuts"),
                                 case.options, kind=kind)


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_decoder_parity_on_invalid_inputs(dialect, kind, data):
    case = data.draw(MUTANTS[kind](dialect), label="mutant")
    assert_stream_decoder_parity(dialect, case.body, data.draw(stream_cuts(case.body, dialect), label="cuts"),
                                 kind=kind)


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_decoder_parity_on_the_corpus(dialect, kind):
    for case in CORPUS[kind](dialect):
        for frame in (7, 1021):
            assert_stream_decoder_parity(dialect, case.body, list(range(frame, len(case.body), frame)), kind=kind)
        if kind == "stream":
            bounds = frame_bounds(dialect, case.body)
            assert_stream_decoder_parity(dialect, case.body, [end for _, _, end in bounds], kind=kind)


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("source", DIALECTS)
@pytest.mark.parametrize("target", DIALECTS)
@given(data=st.data())
def test_encoder_parity_on_rpt_scenarios(source, target, kind, data):
    """Each dialect's response / stream encoder fed each source's events (with the
    scenario's clock and entropy, else the suite's fixed ones)."""
    case = data.draw(st.sampled_from(INPUTS[kind](source)), label="case")
    events = python_events(source, case.body, case.options, kind=kind)
    assert_stream_encoder_parity(source, target, events, case.options, kind=kind, **case.hooks())


def test_the_entry_points_read_the_hooks_as_python_does():
    """``encode_events`` of a response or stream reads ``clock`` / ``entropy`` when the
    encoder is made (Python's ``Session.start``): their errors are Python's."""
    for kind in ("response", "stream"):
        with pytest.raises(ValueError, match="clock"):
            native.encode_events("openai", "anthropic", kind, [], None, clock=lambda: -1.0)
        with pytest.raises(ValueError, match="entropy"):
            native.encode_events("openai", "anthropic", kind, [], None, entropy=lambda n: b"short")
    # a request encoder reads neither
    native.encode_events("openai", "anthropic", "request", [], None, clock=lambda: -1.0)
