"""The native anthropic response and stream codecs against Python's (the specification):
``dialects/anthropic/response.py`` and ``native/src/dialects/anthropic/response.rs``.

Decoders (``ResponseDecoder``, ``StreamDecoder``): the same events per feed (fragments joined
per feed, ``FrameEnd`` after each frame), losses and error (class, message, offset, path,
``frame_offset``) for every anthropic rpt response and stream scenario, its keys in the
client's order, sorted, reversed and shuffled (members before a block's ``type``, an
``input`` before the ``name``: the holds and replays), fed whole, one frame per feed, in
7-byte pieces, cut inside each frame's ``data:`` line and at every byte; and for the
structural fuzzer's mutants and invalid frames (hypothesis).

Encoders (``ResponseEncoder``, ``StreamEncoder``): fed the events Python's decoders of every
dialect make of their rpt responses and streams (whole, and decoded from 7-byte pieces: the
fragments and ``FrameEnd`` markers of a cut input; an input that fails gives its events up
to the error), the same bytes after every event, the same tail, losses and error.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua.canonical import Block, End, Error, Finish, MessageStart, Section, Usage
from interlingua.dialects import DIALECTS

from .differential import (
    Case, assert_stream_decoder_parity, assert_stream_encoder_parity, feeds, frame_bounds, key_order,
    python_decode_events, response_mutant, rpt_responses, rpt_streams, stream_cuts, stream_mutant,
)

KINDS = {"response": rpt_responses, "stream": rpt_streams}
ORDERS = ("client", "sorted", "reversed", "random")
#: inputs up to this size are also fed one byte at a time
EVERY_BYTE = 1500


def _cases(kind: str) -> list[Case]:
    return [key_order(case, order) for case in KINDS[kind]("anthropic") for order in ORDERS]


def _fixed_cuts(case: Case, kind: str) -> dict[str, list[int]]:
    """The cut patterns every case gets: whole, 7-byte pieces, one frame per feed, every byte."""
    body = case.body
    cuts = {"whole": [], "seven": list(range(7, len(body), 7))}
    if kind == "stream":
        cuts["frames"] = [end for _, _, end in frame_bounds("anthropic", body)[:-1]]
    if len(body) <= EVERY_BYTE:
        cuts["every"] = list(range(1, len(body)))
    return cuts


@pytest.mark.parametrize("kind", ["response", "stream"])
def test_every_scenario_is_here(kind):
    cases = KINDS[kind]("anthropic")
    assert len(cases) >= (15 if kind == "response" else 25)
    assert all(case.kind == kind for case in cases)


@pytest.mark.parametrize("case", _cases("response"), ids=repr)
def test_response_decoder_parity_on_rpt_scenarios(case):
    for name, cuts in _fixed_cuts(case, "response").items():
        assert_stream_decoder_parity("anthropic", case.body, cuts, case.options, kind="response")


@pytest.mark.parametrize("case", _cases("stream"), ids=repr)
def test_stream_decoder_parity_on_rpt_scenarios(case):
    for name, cuts in _fixed_cuts(case, "stream").items():
        assert_stream_decoder_parity("anthropic", case.body, cuts, case.options, kind="stream")


@pytest.mark.parametrize("kind", ["response", "stream"])
@given(data=st.data())
def test_decoder_parity_cut_anywhere(kind, data):
    """Random cuts, and (streams) a cut inside each frame's ``data:`` line."""
    case = data.draw(st.sampled_from(_cases(kind)), label="case")
    cuts = data.draw(stream_cuts(case.body, "anthropic"), label="cuts")
    assert_stream_decoder_parity("anthropic", case.body, cuts, case.options, kind=kind)


@pytest.mark.parametrize("kind", ["response", "stream"])
@given(data=st.data())
def test_decoder_parity_on_mutants_and_invalid_frames(kind, data):
    case = data.draw((response_mutant if kind == "response" else stream_mutant)("anthropic"), label="mutant")
    cuts = data.draw(stream_cuts(case.body, "anthropic"), label="cuts")
    assert_stream_decoder_parity("anthropic", case.body, cuts, case.options, kind=kind)


# -- rules no scenario reaches -------------------------------------------------------------

_START = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c",'
          b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n')
_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def _sse(*documents: bytes) -> bytes:
    return b"".join(b"data: " + doc + b"\n\n" for doc in documents)


HAND_MADE_STREAMS = {
    # a server block whose input comes as deltas, a citation delta, a late signature, an
    # unknown event type, extra members everywhere, an error event closing an open block
    "server-input-deltas": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web",'
        b'"input":{}}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"q\\":"}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}',
        b'{"type":"content_block_stop","index":0}',
        b'{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"t","input":{}}}',
        b'{"type":"content_block_stop","index":1}',
        b'{"type":"content_block_start","index":2,"content_block":{"type":"text","text":"a","extra":1}}',
        b'{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"x","n":1}}}',
        b'{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"sig"}}',
        b'{"type":"content_block_stop","index":2}',
        b'{"type":"novel_event","x":1}',
        b'{"type":"message_delta","delta":{"stop_reason":"odd_reason","stop_sequence":"x","container":1},'
        b'"usage":{"output_tokens":4,"input_tokens":null},"extra":null}',
    ) + _STOP,
    "error-closes-a-block": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}',
        b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
    ),
    "error-not-an-object": _START + _sse(b'{"type":"error","error":[1,"a",null,1.5,{"k":true}]}'),
    "tool-input-before-name": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"input":{"a":1},"id":"i","type":"tool_use",'
        b'"name":"f"}}',
        b'{"type":"content_block_stop","index":0}',
    ) + _sse(b'{"type":"message_delta","delta":{"stop_reason":"tool_use"}}') + _STOP,
    "lone-surrogate-keys": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","k\\ud800":1}}',
        b'{"type":"message_delta","delta":{"d\\udfff":1},"u\\ud83d":2}') + _STOP,
    "no-type-block": _START + _sse(b'{"type":"content_block_start","index":0,"content_block":{"a":[1,{"b":2}]}}',
                                   b'{"type":"content_block_stop","index":0}') + _STOP,
}

BAD_STREAMS = {
    "delta-on-the-wrong-block": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}'),
    "json-delta-on-text": _START + _sse(
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
        b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"x"}}'),
    "delta-outside-a-block": _START + _sse(b'{"type":"content_block_delta","index":0,"delta":{"text":"x"}}'),
    "second-message-start": _START + _START,
    "block-before-start": _sse(b'{"type":"content_block_start","index":0,"content_block":{"type":"text"}}'),
    "event-without-type": _START + _sse(b'{"index":0}'),
    "event-after-stop": _START + _STOP + _sse(b'{"type":"ping"}'),
    "not-json": _START + b"data: [DONE]\n\n",
    "truncated": _START,
    "type-not-a-scalar": _START + _sse(b'{"type":"content_block_start","content_block":{"type":{"x":1}}}'),
    "type-a-number": _START + _sse(b'{"type":"content_block_start","content_block":{"type":5}}'),
    "index-a-fraction": _START + _sse(b'{"type":"content_block_stop","index":1.5}'),
    "stop-of-a-big-index": _START + _sse(b'{"type":"content_block_stop","index":123456789012345678901234}'),
    "content-block-not-an-object": _START + _sse(b'{"type":"content_block_start","content_block":[]}'),
}

HAND_MADE_RESPONSES = {
    "sorted-everything": b'{"content":[{"citations":[{"a":1}],"text":"t","type":"text"},{"input":{"q":[1,2]},'
                         b'"name":"n","id":"i","type":"tool_use"},{"data":"d","type":"redacted_thinking"},'
                         b'{"signature":"s","thinking":"th","type":"thinking"},{"type":"web_search_tool_result",'
                         b'"content":[{"u":1}]},{"zz":1}],"id":"x","model":"m","role":"assistant",'
                         b'"stop_reason":"end_turn","stop_sequence":null,"type":"message","usage":{"input_tokens":1,'
                         b'"output_tokens":2,"cache_read_input_tokens":3,"novel":5}}',
    "error-body": b'{"type":"error","error":{"type":"not_found_error","message":"no"}}',
    "error-string": b'{"type":"error","error":"plain"}',
    "no-id": b'{"model":"m","content":[{"type":"text","text":"x"}],"extra":{"a":1},"stop_sequence":"END"}',
    "bad-usage": b'{"id":"i","model":"m","usage":{"input_tokens":"many"}}',
    "lone-surrogate-keys": b'{"id":"i","model":"m","x\\ud800":1,"content":[{"type":"text","text":"a","y\\udfff":2},'
                           b'{"type":"web_search_tool_result","z\\ud83d":[3]}]}',
    "input-then-deltas-never": b'{"id":"i","model":"m","content":[{"type":"tool_use","input":{},"id":"c","name":"f"},'
                               b'{"type":"server_tool_use","input":{}}]}',
}


@pytest.mark.parametrize("name", sorted(HAND_MADE_STREAMS) + sorted(BAD_STREAMS))
def test_stream_decoder_parity_on_hand_made_streams(name):
    body = HAND_MADE_STREAMS.get(name) or BAD_STREAMS[name]
    for order in ORDERS:
        case = key_order(Case(name, "anthropic", body, kind="stream"), order) if name in HAND_MADE_STREAMS else \
            Case(name, "anthropic", body, kind="stream")
        for cuts in _fixed_cuts(case, "stream").values():
            assert_stream_decoder_parity("anthropic", case.body, cuts, kind="stream")
    if name in BAD_STREAMS:
        assert python_decode_events("anthropic", "stream", [body])[2] is not None, "an error in Python too"


@pytest.mark.parametrize("name", sorted(HAND_MADE_RESPONSES))
def test_response_decoder_parity_on_hand_made_bodies(name):
    for order in ORDERS:
        case = key_order(Case(name, "anthropic", HAND_MADE_RESPONSES[name], kind="response"), order)
        for cuts in _fixed_cuts(case, "response").values():
            assert_stream_decoder_parity("anthropic", case.body, cuts, kind="response")


@pytest.mark.parametrize("options", [{"reorder_budget": 40}, {"refuse_reorder": True}, {"max_value_bytes": 8},
                                     {"strict": True}, {"tool_names": {"f": "client.f"}}])
def test_decoder_parity_under_options(options):
    """The holds (a budget, refused), the value bound, strict losses, renamed tools."""
    bodies = [(case.body, "stream") for case in _cases("stream")[:8]] + \
             [(HAND_MADE_STREAMS[name], "stream") for name in HAND_MADE_STREAMS] + \
             [(HAND_MADE_RESPONSES[name], "response") for name in HAND_MADE_RESPONSES]
    for body, kind in bodies:
        for order in ("client", "sorted"):
            case = key_order(Case("x", "anthropic", body, kind=kind), order)
            assert_stream_decoder_parity("anthropic", case.body, [], options, kind=kind)
            assert_stream_decoder_parity("anthropic", case.body, list(range(7, len(case.body), 7)), options, kind=kind)


# -- encoders ------------------------------------------------------------------------------


def _events(source: str, case: Case, kind: str, pieces: list[bytes]) -> list:
    per_piece, _, _ = python_decode_events(source, kind, pieces, case.options)
    return [event for events in per_piece for event in events]


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("source", DIALECTS)
def test_encoder_parity_fed_every_source(source, kind):
    for case in KINDS[kind](source):
        for order in ("client", "sorted"):
            ordered = key_order(case, order)
            for pieces in ([ordered.body], feeds(ordered.body, range(7, len(ordered.body), 7))):
                events = _events(source, ordered, kind, pieces)
                assert_stream_encoder_parity(source, "anthropic", events, case.options, kind=kind, **case.hooks())


def test_encoder_parity_on_hand_made_events():
    """What no decoder makes of the rpt scenarios: choices > 0, refusals, a thinking block
    without signature, unplaced sections, citations of another dialect or without text,
    a finish before the blocks end, a second usage after the finish, a tool call whose
    arguments are not an object, an error in the middle, events after the end."""
    text = Section.ASSISTANT_TEXT
    streams = [
        [MessageStart("m1", "c"), Block(text, 0, b"a", True, False), Block(text, 1, b"b", True, True),
         Block(text, 0, b"c", False, True), Finish("end_turn"), Usage(input=5, output=2), Usage(output=3), End()],
        [Block(Section.ASSISTANT_REFUSAL, 0, b"no", True, True), Block(Section.USER_IMAGE, 0, b"x", True, True),
         Block(Section.ASSISTANT_REASONING, 0, b"think", True, True, {"path": "$.x"}),
         Block(Section.CITATIONS, 0, b"[1]", True, True, {"dialect": "anthropic"}),
         Block(Section.CITATIONS, 0, b"[1]", True, True, {"dialect": "openai"}), Finish("pause_turn"), End()],
        [Block(text, 0, b"t", True, False), Block(text, 0, b"u", False, True),
         Block(Section.CITATIONS, 0, b'[{"a":1.0}]', True, True, {"dialect": "anthropic"}),
         Block(Section.TOOL_CALL, 0, b"not json", True, True, {"name": "f"}),
         Block(Section.TOOL_CALL, 0, b"", True, False, {"id": "call 1", "name": "g"}),
         Block(Section.TOOL_CALL, 0, b'{\\"a\\":1}', False, True),
         Block(Section.ASSISTANT_REASONING, 0, b"r", True, False, {"redacted": True}),
         Block(Section.ASSISTANT_REASONING, 0, b"s", False, True),
         Block(Section.SERVER_TOOL_RESULT, 0, b'{"type":"web_search_tool_result"}', True, True, {"dialect": "anthropic"}),
         Error("rate_limit_error", "slow"), Block(text, 0, b"late", True, True), End(), End()],
        [Block(Section.ASSISTANT_REASONING, 0, b"x", True, False, {"signature": "first"}),
         Block(Section.ASSISTANT_REASONING, 0, b"y", False, True, {"signature": "late"}),
         Finish(None, "STOP"), Finish("max_tokens"), Block(text, 0, b"after", True, True), End()],
        [Error("odd_kind", "message \u00e9"), End()],
    ]
    for kind in ("response", "stream"):
        for source in DIALECTS:
            for events in streams:
                assert_stream_encoder_parity(source, "anthropic", events, None, kind=kind)
