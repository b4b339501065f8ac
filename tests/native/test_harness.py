"""The differential harness of the codecs (tests/native/differential.py) and the binding's
codec entry points: Options cross field by field, names are checked as Python checks them,
a codec not ported yet is a skip naming it, the fragment rule joins only what it may, and
every dialect's inputs (rpt, corpus, fuzz, generated) are there and agree with themselves."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, strategies as st

from interlingua import Block, Options, Section, TranscodeError
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS, codecs

from .differential import (
    assert_decoder_parity, assert_encoder_parity, corpus_requests, cut_points, error_facts, fuzz_mutant,
    join_fragments, python_decode_events, python_encode_events, python_events, request_bodies, rpt_requests,
)

native = native_module()
BODIES = {dialect: request_bodies(dialect) for dialect in DIALECTS}  # (at import: not inside a @given)

OPTIONS = [
    None,
    {},
    {"strict": True, "reorder_budget": 10, "refuse_reorder": True, "openai_reasoning_field": "reasoning",
     "default_max_tokens": 7, "max_depth": 3, "max_value_bytes": 99, "tool_names": {"a_b": "a.b"},
     "anthropic_thinking": "budget", "anthropic_thinking_budgets": {"high": 9, "low": 1},
     "ollama_sampling_defaults": True},
    Options(openai_reasoning_field="reasoning_content", anthropic_thinking="adaptive"),
]


@pytest.mark.parametrize("options", OPTIONS)
def test_options_cross_field_by_field(options):
    python = Options(**options) if isinstance(options, dict) else options or Options()
    assert native.options_fields(options) == msgspec.structs.asdict(python)
    assert list(native.options_fields(options)) == list(msgspec.structs.asdict(python)), "every field, in order"


@pytest.mark.parametrize("dialect,kind", [("gemini", "request"), ("openai", "body")])
def test_unknown_names_are_pythons_value_errors(dialect, kind):
    with pytest.raises(ValueError) as python:
        codecs(dialect, kind)
    with pytest.raises(ValueError) as decoding:
        native.decode_events(dialect, kind, [b"{}"], None)
    with pytest.raises(ValueError) as encoding:
        native.encode_events("openai", dialect, kind, [], None)
    assert str(decoding.value) == str(python.value) == str(encoding.value)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_codec_not_ported_says_so(dialect):
    """Until its codec's arm is in pipeline::decoder / encoder, the entry points return a
    TranscodeError that names it (and the parity asserts skip on it); once it is, this
    test checks the entry point runs it."""
    per_piece, losses, error = native.decode_events(dialect, "stream", [b"{}"], None)
    if error is not None and "native core has no" in str(error):
        assert type(error) is TranscodeError
        assert (per_piece, losses) == ([], [])
    else:  # ported: it runs as Python's does
        _, p_losses, p_error = python_decode_events(dialect, "stream", [b"{}"])
        assert (losses, error_facts(error)) == (p_losses, error_facts(p_error))
    out, tail, losses, error = native.encode_events(dialect, dialect, "request", [], None)
    if error is not None:
        assert type(error) is TranscodeError and "native core has no" in str(error), error
    else:
        assert (out, losses) == ([], [])


def _block(payload: bytes, init: bool, fin: bool, attrs=None, message=0, section=Section.USER_TEXT):
    return Block(section, message, payload, init, fin, attrs)


def test_the_fragment_rule_joins_one_block_within_one_feed_only():
    a = _block(b"he", True, False, {"x": 1})
    b = _block(b"l", False, False)
    c = _block(b"lo", False, True, {"y": 2})
    assert join_fragments([a, b, c]) == [_block(b"hello", True, True, {"x": 1, "y": 2})]
    assert join_fragments([a, b]) == [_block(b"hel", True, False, {"x": 1})]
    # a new block, a finished one, another message: not joined
    new = _block(b"x", True, True)
    assert join_fragments([c, new]) == [c, new]
    other = _block(b"z", False, True, message=1)
    assert join_fragments([a, other]) == [a, other]


def test_the_python_runners_report_what_the_pipeline_does():
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"zz":1}'
    per_piece, losses, error = python_decode_events("openai", "request", [body[:20], body[20:]])
    assert error is None and len(per_piece) == 3
    events = [e for piece in per_piece for e in piece]
    assert events == python_events("openai", body)
    out, tail, losses, error = python_encode_events("openai", "anthropic", "request", events)
    assert error is None and len(out) == len(events)
    assert b"".join(out) + tail == b"".join(_transcode("openai", "anthropic", body))
    # an error: the pieces up to it, the error located as the pipeline locates it
    per_piece, _, error = python_decode_events("openai", "request", [b'{"model":"m",', b'"messages":3}'])
    assert len(per_piece) == 2 and error_facts(error)[0] == "SchemaError"
    assert (error.dialect, error.path, error.offset) == ("openai", "$.messages", 24)


def _transcode(source, target, body):
    from interlingua import Transcoder
    t = Transcoder(source, target)
    return [t.feed(body), t.close()]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_has_its_inputs(dialect):
    assert len(rpt_requests(dialect)) >= 10
    assert any(case.options for case in rpt_requests("openai"))
    assert len(corpus_requests(dialect)) >= 1


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_the_generated_inputs_decode_in_python(dialect, data):
    """The strategies give what the Python decoder reads (generated: valid; mutants: a
    result or a TranscodeError, never another exception)."""
    body = data.draw(BODIES[dialect], label="generated")
    assert python_decode_events(dialect, "request", [body])[2] is None
    case = data.draw(fuzz_mutant(dialect), label="mutant")
    python_decode_events(dialect, "request", [case.body])


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_decoder_parity_on_rpt_requests(dialect, data):
    """Each dialect's decoder (skipped while not ported), cut anywhere."""
    case = data.draw(st.sampled_from(rpt_requests(dialect)), label="case")
    assert_decoder_parity(dialect, case.body, data.draw(cut_points(case.body), label="cuts"), case.options)


@pytest.mark.parametrize("source", DIALECTS)
@pytest.mark.parametrize("target", DIALECTS)
@given(data=st.data())
def test_encoder_parity_on_rpt_requests(source, target, data):
    """Each dialect's encoder fed each source dialect's events (skipped while not ported)."""
    case = data.draw(st.sampled_from(rpt_requests(source)), label="case")
    assert_encoder_parity(source, target, python_events(source, case.body, case.options), case.options)
