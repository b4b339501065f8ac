"""The native openai response and stream codecs (native/src/dialects/openai/response.rs)
against Python's (dialects/openai/response.py, the specification).

Decoders: the same events (fragments joined per feed; ``FrameEnd`` after each frame),
losses and error (class, message, offset, path, dialect, ``frame_offset``) for every openai
rpt response and stream scenario and corpus item, whole, one frame per feed, in 7-byte
pieces, cut inside each frame's ``data:`` line, at random points and (small ones) at every
byte, in four key orders (sorted keys put ``index`` after ``delta`` and ``arguments``
before ``name``), structural-fuzzer mutants and framing faults, under the Options that
change the decoder. Encoders: fed the events of every source dialect's Python decoder of
the rpt responses and streams (and any prefix of them ending in an error or the end), the
same bytes after each event, tail, losses and error.

Where a rule is not ported the native side says so and the example is skipped, naming it
(``differential.skip_if_not_ported``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, reject, settings, strategies as st

from .differential import (
    Case, assert_stream_decoder_parity, assert_stream_encoder_parity, corpus_responses, corpus_streams,
    frame_bounds, key_order, python_events, response_mutant, rpt_responses, rpt_streams, stream_cuts, stream_mutant,
)

DIALECT = "openai"
SLOW = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

RESPONSES = rpt_responses(DIALECT) + corpus_responses(DIALECT)
STREAMS = rpt_streams(DIALECT) + corpus_streams(DIALECT)
CASES = {"response": RESPONSES, "stream": STREAMS}
SMALL = {kind: [case for case in cases if len(case.body) <= 4096] for kind, cases in CASES.items()}
ORDERS = ("sorted", "reversed", "shuffled")

#: Options that change a decoder (tool names: a response's calls get the client's names back)
OPTIONS = [
    None,
    {"max_value_bytes": 24},
    {"reorder_budget": 200},
    {"refuse_reorder": True},
    {"strict": True},
    {"tool_names": {"get_weather": "weather", "lookup": "look_up"}},
]


def merged(case, options):
    return {**(case.options or {}), **(options or {})} or None


def drawn(check, *args, **kwargs):
    """A parity check inside a @given: an input the native side does not port (it says so)
    is a rejected example, not a skip of the whole test."""
    try:
        check(*args, **kwargs)
    except pytest.skip.Exception:
        reject()


# -- the decoders -----------------------------------------------------------------------


@pytest.mark.parametrize("case", RESPONSES, ids=repr)
def test_every_response_whole_and_in_pieces(case):
    assert_stream_decoder_parity(DIALECT, case.body, (), case.options, kind="response")
    step = max(1, len(case.body) // 7)
    assert_stream_decoder_parity(DIALECT, case.body, range(step // 2, len(case.body), step), case.options,
                                 kind="response")
    assert_stream_decoder_parity(DIALECT, case.body, range(7, len(case.body), 7), case.options, kind="response")


@pytest.mark.parametrize("case", SMALL["response"], ids=repr)
def test_every_small_response_byte_by_byte(case):
    assert_stream_decoder_parity(DIALECT, case.body, range(1, len(case.body)), case.options, kind="response")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", SMALL["response"], ids=repr)
def test_every_response_in_other_key_orders(case, order):
    """Sorted keys put a choice's ``index`` after its ``message`` (KeyFirst), ``content``
    after ``annotations``, ``arguments`` before ``name`` / ``id``; all orders at every byte."""
    try:
        reordered = key_order(case, order)
    except ValueError:  # an error scenario whose body is not JSON
        pytest.skip("not JSON")
    assert_stream_decoder_parity(DIALECT, reordered.body, (), reordered.options, kind="response")
    assert_stream_decoder_parity(DIALECT, reordered.body, range(1, len(reordered.body)), reordered.options,
                                 kind="response")


@pytest.mark.parametrize("case", STREAMS, ids=repr)
def test_every_stream_whole_per_frame_and_in_seven_byte_pieces(case):
    assert_stream_decoder_parity(DIALECT, case.body, (), case.options)
    frames = [end for _, _, end in frame_bounds(DIALECT, case.body)[:-1]]
    assert_stream_decoder_parity(DIALECT, case.body, frames, case.options)
    assert_stream_decoder_parity(DIALECT, case.body, range(7, len(case.body), 7), case.options)


def stream_in_key_order(case: Case, order: str) -> Case:
    """Every frame's JSON with its objects' members sorted, reversed or shuffled."""
    import random

    import fuzz
    from rpt import split_frames

    from .differential import _reordered
    rng = random.Random(0)
    frames = []
    for frame in split_frames(DIALECT, case.body):
        parts = fuzz.frame_json(frame)
        if parts is not None:
            before, doc, after = parts
            frame = before + fuzz.dump(_reordered(fuzz.parse(doc), order, rng)).encode("utf-8") + after
        frames.append(frame)
    return Case(f"{case.name} (keys {order})", DIALECT, b"".join(frames), case.options, "stream", case.start)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", SMALL["stream"], ids=repr)
def test_every_stream_in_other_key_orders(case, order):
    """Sorted keys put a choice's ``index`` after its ``delta``, a call's ``arguments``
    before its ``index`` and ``name``, ``model`` after the content."""
    reordered = stream_in_key_order(case, order)
    assert_stream_decoder_parity(DIALECT, reordered.body, (), reordered.options)
    assert_stream_decoder_parity(DIALECT, reordered.body, range(1, len(reordered.body)), reordered.options)


@pytest.mark.parametrize("case", SMALL["stream"], ids=repr)
def test_every_small_stream_byte_by_byte(case):
    assert_stream_decoder_parity(DIALECT, case.body, range(1, len(case.body)), case.options)


@pytest.mark.parametrize("options", OPTIONS[1:], ids=json.dumps)
@pytest.mark.parametrize("kind", ("response", "stream"))
def test_every_scenario_under_each_option(kind, options):
    for case in SMALL[kind]:
        assert_stream_decoder_parity(DIALECT, case.body, (), merged(case, options), kind=kind)


@SLOW
@given(st.data())
def test_streams_cut_anywhere_inside_data_lines_too(data):
    case = data.draw(st.sampled_from(STREAMS), label="case")
    cuts = data.draw(stream_cuts(case.body, DIALECT), label="cuts")
    options = data.draw(st.sampled_from(OPTIONS), label="options")
    drawn(assert_stream_decoder_parity, DIALECT, case.body, cuts, merged(case, options))


@SLOW
@given(st.data())
def test_responses_cut_anywhere(data):
    case = data.draw(st.sampled_from(RESPONSES), label="case")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(case.body)), max_size=8), label="cuts"))
    options = data.draw(st.sampled_from(OPTIONS), label="options")
    drawn(assert_stream_decoder_parity, DIALECT, case.body, cuts, merged(case, options), kind="response")


@SLOW
@given(st.data())
def test_invalid_streams(data):
    """The structural fuzzer's stream mutants and framing faults, cut anywhere."""
    case = data.draw(stream_mutant(DIALECT), label="mutant")
    cuts = data.draw(stream_cuts(case.body, DIALECT), label="cuts")
    drawn(assert_stream_decoder_parity, DIALECT, case.body, cuts, data.draw(st.sampled_from(OPTIONS)))


@SLOW
@given(st.data())
def test_invalid_responses(data):
    case = data.draw(response_mutant(DIALECT), label="mutant")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(case.body)), max_size=8), label="cuts"))
    drawn(assert_stream_decoder_parity, DIALECT, case.body, cuts, data.draw(st.sampled_from(OPTIONS)),
          kind="response")


def chunk(choice: str, top: str = '"id":"c","model":"m",') -> bytes:
    return b"data: {" + top.encode() + b'"choices":[' + choice.encode() + b"]}\n\n"


TEXT = '{"index":0,"delta":{"content":"a"},"finish_reason":null}'
STOP = '{"index":0,"delta":{},"finish_reason":"stop"}'
DONE = b"data: [DONE]\n\n"

#: streams each rule of the stream decoder meets (invalid ones too)
ODD_STREAMS = {
    "not [DONE]": b"data: [DON]\n\n",
    "a number": b"data: 42\n\n",
    "text after a chunk": chunk(TEXT) + b"data: nope\n\n",
    "chunk after [DONE]": chunk(TEXT) + chunk(STOP) + DONE + chunk(TEXT),
    "content after the finish": chunk(STOP) + chunk(TEXT),
    "empty content after the finish": chunk(STOP) + chunk('{"index":0,"delta":{"content":"","role":"assistant"}}') + DONE,
    "no finish": chunk(TEXT),
    "no finish, [DONE]": chunk(TEXT) + DONE,
    "finish without [DONE]": chunk(TEXT) + chunk(STOP),
    "no index in a call": chunk('{"index":0,"delta":{"tool_calls":[{"id":"x","function":{"name":"f"}}]}}'),
    "a string index": chunk('{"delta":{"content":"a"},"finish_reason":"stop","index":"0"}'),
    "an object index": chunk('{"index":{},"delta":{"content":"a"}}'),
    "index last, no index": chunk('{"delta":{"content":"a"},"finish_reason":"stop"}') + DONE,
    "interleaved calls": chunk('{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f",'
                               '"arguments":"{"}},{"index":1,"id":"b","function":{"name":"g","arguments":"["}}]}}')
    + chunk('{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"]"}},{"index":0,"function":'
            '{"arguments":"}"}}]},"finish_reason":"tool_calls"}') + DONE,
    "a call continued after text": chunk('{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":'
                                         '{"name":"f","arguments":"{"}}]}}')
    + chunk(TEXT) + chunk('{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}'),
    "arguments before the index": chunk('{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}","name":"f"},'
                                        '"id":"a","index":0}]},"finish_reason":"tool_calls"}') + DONE,
    "a custom call": chunk('{"index":0,"delta":{"tool_calls":[{"index":0,"type":"custom","custom":{"input":"x"}}]},'
                           '"finish_reason":"tool_calls"}') + DONE,
    "two choices": chunk('{"index":1,"delta":{"content":"b"}},' + TEXT)
    + chunk('{"index":1,"delta":{},"finish_reason":"length"},' + STOP) + DONE,
    "content before reasoning": chunk('{"index":0,"delta":{"content":"x","reasoning_content":"think","refusal":null}}')
    + chunk('{"index":0,"delta":{"reasoning":"more","content":"y"},"finish_reason":"stop"}') + DONE,
    "an error chunk": chunk(TEXT) + b'data: {"error":{"message":"overloaded","type":"server_error","code":529}}\n\n',
    "an odd error": b'data: {"error":"boom"}\n\n' + b'data: {"error":{"type":7,"message":[1,"a",null],"code":true}}\n\n',
    "usage after the finish": chunk(TEXT) + chunk(STOP) + chunk("", '"id":"c","model":"m","usage":{"prompt_tokens":3,'
                                                                '"completion_tokens":1,"total_tokens":4,'
                                                                '"prompt_tokens_details":{"audio_tokens":2}},')
    + DONE,
    "kept fields": chunk(TEXT, '"id":"c","model":"m","created":5,"system_fingerprint":"fp","service_tier":"flex",'
                               '"obfuscation":"xx",') + chunk(STOP, '"model":"m","id":"c","created":5,') + DONE,
    "id and model late": chunk(TEXT, '"object":"chat.completion.chunk",') + chunk(STOP, '"id":"c","model":"m",') + DONE,
    "logprobs and odd members": chunk('{"index":0,"delta":{"content":"a","audio":{"x":1},"function_call":null},'
                                      '"logprobs":{"content":[]},"extra":1}') + chunk(STOP) + DONE,
}


@pytest.mark.parametrize("name", ODD_STREAMS)
def test_odd_and_invalid_streams(name):
    body = ODD_STREAMS[name]
    for options in (None, {"strict": True}, {"refuse_reorder": True}):
        assert_stream_decoder_parity(DIALECT, body, (), options)
        assert_stream_decoder_parity(DIALECT, body, range(1, len(body)), options)


# -- the encoders: fed the events of every source dialect's Python decoder --------------

SOURCES = ("openai", "anthropic", "ollama")
ENCODER_CASES = [(source, kind, case) for kind in ("stream", "response") for source in SOURCES
                 for case in (rpt_streams(source) if kind == "stream" else rpt_responses(source))]
ENCODER_OPTIONS = [
    None,
    {"openai_reasoning_field": "reasoning_content"},
    {"openai_reasoning_field": "reasoning"},
    {"strict": True},
    {"reorder_budget": 300},
]


def encoder_parity(source, kind, case, events, options):
    assert_stream_encoder_parity(source, DIALECT, events, merged(case, options), kind=kind, **case.hooks())


@pytest.mark.parametrize("options", ENCODER_OPTIONS, ids=json.dumps)
@pytest.mark.parametrize("source, kind, case", ENCODER_CASES, ids=lambda x: repr(x) if not isinstance(x, str) else x)
def test_encoders_fed_every_source_scenario(source, kind, case, options):
    events = python_events(source, case.body, case.options, kind=kind)
    encoder_parity(source, kind, case, events, options)


@SLOW
@given(st.data())
def test_encoders_fed_prefixes_then_an_error_or_the_end(data):
    """Any prefix of a source's events, then an error (a stream's error chunk and
    ``[DONE]``; a response's error body if nothing was written) or the end."""
    from interlingua.canonical import End, Error
    source, kind, case = data.draw(st.sampled_from(ENCODER_CASES), label="case")
    events = python_events(source, case.body, case.options, kind=kind)
    cut = data.draw(st.integers(0, len(events)), label="cut")
    tail = data.draw(st.sampled_from([[], [End()], [Error("overloaded_error", "busy", 529)],
                                      [Error("api_error", "boom"), End()]]), label="tail")
    drawn(encoder_parity, source, kind, case, events[:cut] + tail, data.draw(st.sampled_from(ENCODER_OPTIONS)))
