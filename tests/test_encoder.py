"""The public encoder (``interlingua.Encoder`` / ``interlingua.encode``): canonical events
built in Python in, a dialect's bytes out -- on both backends (the ``backend`` fixture)."""

from __future__ import annotations

import pytest

import interlingua
from interlingua import (
    Block, Control, Decoder, Encoder, End, Extension, MessagesEnd, Options, Section, SystemEnd,
    Transcoder, TranscodeError, encode,
)
from interlingua.dialects import DIALECTS
from interlingua.errors import LossError
from rpt import all_wire_scripts, parse_wire

EVENTS = [SystemEnd(), Block(Section.USER_TEXT, 0, b"hi \\u00e9"), MessagesEnd(), Control("model", "m"),
          Extension("openai", "$.user_tag", b'"x"'), End()]
REQUESTS = [script for script in map(parse_wire, all_wire_scripts()) if script.kind == "request"]


@pytest.mark.parametrize("target", DIALECTS)
def test_one_event_a_list_or_an_iterable_give_the_same_bytes(backend, target):
    whole = Encoder(target).feed(EVENTS)
    one_by_one = Encoder(target)
    pieces = b"".join(one_by_one.feed(event) for event in EVENTS) + one_by_one.close()
    from_iterator = Encoder(target)
    assert whole == pieces == from_iterator.feed(iter(EVENTS)) + from_iterator.close()
    assert encode(EVENTS, target=target) == whole
    assert isinstance(one_by_one, interlingua.Encoder)


@pytest.mark.parametrize("target", ["anthropic", "ollama"])
def test_losses_name_the_source_and_go_to_the_callers_list(backend, target):
    losses: list = []
    body = encode(EVENTS, target=target, source="openai", losses=losses)
    assert b"user_tag" not in body
    assert [(loss.dialect, loss.path) for loss in losses] == [("openai", "$.user_tag")]
    encoder = Encoder(target, source="openai")
    encoder.feed(EVENTS)
    assert list(encoder.losses) == losses
    with pytest.raises(LossError) as strict:
        Encoder(target, source="openai", options=Options(strict=True)).feed(EVENTS)
    assert strict.value.path == "$.user_tag"


def test_after_close_or_an_error_feed_and_close_raise(backend):
    encoder = Encoder("openai")
    encoder.feed(EVENTS)
    encoder.close()
    for call in (lambda: encoder.feed(End()), encoder.close):
        with pytest.raises(TranscodeError, match="encoder is closed"):
            call()
    strict = Encoder("anthropic", source="openai", options=Options(strict=True))
    with pytest.raises(LossError) as first:
        strict.feed(EVENTS)
    assert strict.pending_output().startswith(b"{")
    for call in (lambda: strict.feed(End()), strict.close, lambda: strict.feed([])):
        with pytest.raises(LossError) as again:
            call()
        assert again.value is first.value


@pytest.mark.parametrize("script", REQUESTS, ids=lambda s: f"{s.path.parent.name}/{s.path.name}")
def test_a_transcoder_is_a_decoder_then_an_encoder(backend, script):
    """Fed a source's decoded events, the target's encoder writes what the Transcoder writes
    (for the other targets the scenario itself holds, as tests/test_rpt.py's cross pairs; not
    the source itself: a decoder whose run has that target decodes some ids differently)."""
    options = script.make_options()
    try:
        decoder = Decoder(script.dialect, options=options)
        events = decoder.feed(script.body) + decoder.close()
    except TranscodeError:
        pytest.skip("an invalid request (its error is the decoder's)")
    for target in [d for d in DIALECTS if d != script.dialect and (script.path.parent / f"{d}.request.rpt").exists()]:
        transcoder = Transcoder(script.dialect, target, options=options)
        try:
            expected = transcoder.feed(script.body) + transcoder.close()
        except TranscodeError:
            continue  # (a strict scenario's loss: the encoder raises it too, tested in tests/native)
        encoder = Encoder(target, source=script.dialect, options=options)
        assert encoder.feed(events) + encoder.close() == expected, target
        assert list(encoder.losses) == list(transcoder.losses)
        assert dict(encoder.tool_names) == dict(transcoder.tool_names)
