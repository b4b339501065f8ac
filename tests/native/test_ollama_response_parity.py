"""The native ollama response and stream codecs against Python's (the specification).

Decoders (``ResponseDecoder``, ``StreamDecoder``): the same events (fragments joined per
feed), losses and error for every ollama rpt response and stream scenario and corpus
item, cut at random points (a stream's lines cut inside their JSON too) and in 7-byte
pieces, for structural-fuzzer mutants of them (``tests/fuzz.py``: values of the wrong
type, members dropped or doubled, lines dropped, doubled or swapped, bodies cut short)
and for hand-made invalid lines.

Encoders (``ResponseEncoder``, ``StreamEncoder``): fed the events Python's decoder of
every source dialect makes of its rpt responses and streams (and corpus items), the
same bytes after every event, the same tail, losses and error; and the same after an
``Error`` event cut into any of them (``abort``: the stream's error line).
"""

from __future__ import annotations

import random
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, reject, strategies as st

from interlingua.canonical import Error

from .differential import (
    NOT_PORTED, Case, assert_decoder_parity, assert_encoder_parity, cut_points, python_decode_events,
)

_TESTS = Path(__file__).resolve().parent.parent
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import fuzz  # noqa: E402
import rpt  # noqa: E402

KINDS = ("response", "stream")
DIALECTS = ("openai", "anthropic", "ollama")


@lru_cache(maxsize=None)
def scenarios(dialect: str, kind: str) -> tuple[Case, ...]:
    """Every rpt scenario of ``dialect`` and ``kind`` (error ones too), with its Options
    (the clock and entropy hooks left out: the suite's fixed ones serve both sides)."""
    cases = []
    for path in rpt.all_wire_scripts():
        script = rpt.parse_wire(path)
        if script.dialect == dialect and script.kind == kind:
            cases.append(Case(f"rpt {script.scenario}", dialect, script.body, script.make_options()))
    return tuple(cases)


@lru_cache(maxsize=None)
def corpus_items(dialect: str, kind: str) -> tuple[Case, ...]:
    from corpus import ITEMS
    return tuple(Case(f"corpus {item.name}", dialect, item.body) for item in ITEMS.values()
                 if item.dialect == dialect and item.kind == kind)


def _inputs(kind: str) -> tuple[Case, ...]:
    return scenarios("ollama", kind) + corpus_items("ollama", kind)


def _line_cuts(body: bytes) -> list[int]:
    """Cuts inside every line's JSON: one past each line's start and one before its end."""
    cuts = []
    start = 0
    for line in body.split(b"\n"):
        if len(line) > 2:
            cuts += [start + 1, start + len(line) // 2, start + len(line) - 1]
        start += len(line) + 1
    return cuts


def _drawn(check) -> None:
    """``check()`` inside a hypothesis test: an input the native side has not ported
    rejects that example (a skip would end the whole test)."""
    try:
        check()
    except pytest.skip.Exception:
        reject()


def _require(kind: str, encoder: bool = False) -> None:
    """Skip a hypothesis test whose codec the native core has not at all (its every example
    would be rejected)."""
    from interlingua.backend import native_module
    native = native_module()
    result = (native.encode_events("openai", "ollama", kind, [], None) if encoder
              else native.decode_events("ollama", kind, [b""], None))
    error = result[-1]
    if error is not None and NOT_PORTED.search(str(error)):
        pytest.skip(f"not ported: {error}")


INPUTS = [pytest.param(kind, case, id=f"{kind}-{case.name}") for kind in KINDS for case in _inputs(kind)]


# -- decoders ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, case", INPUTS)
def test_decoder_whole_and_in_7_byte_pieces(kind, case):
    assert_decoder_parity("ollama", case.body, [], case.options, kind=kind)
    sevens = list(range(7, len(case.body), 7))
    assert_decoder_parity("ollama", case.body, sevens, case.options, kind=kind)


@pytest.mark.parametrize("case", _inputs("stream"), ids=lambda case: case.name)
def test_stream_decoder_cut_inside_each_line(case):
    assert_decoder_parity("ollama", case.body, _line_cuts(case.body), case.options, kind="stream")


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_decoder_cut_anywhere(kind, data):
    _require(kind)
    case = data.draw(st.sampled_from(_inputs(kind)), label="case")
    body = case.body
    if len(body) > 4096:  # every byte of 100 kB is minutes of Python: a few cuts or frames
        frame = data.draw(st.sampled_from([0, 64, 1021]))
        cuts = list(range(frame, len(body), frame)) if frame else sorted(
            data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    else:
        cuts = data.draw(cut_points(body), label="cuts")
    _drawn(lambda: assert_decoder_parity("ollama", body, cuts, case.options, kind=kind))


@lru_cache(maxsize=None)
def _mutants(kind: str) -> tuple[tuple[str, bytes], ...]:
    return tuple((f"{seed.name}: {what}", body) for seed in fuzz.seeds_of("ollama", kind)
                 for what, body in fuzz.mutants(seed))


@pytest.mark.parametrize("kind", KINDS)
def test_decoder_fuzz_mutants_sample(kind):
    """A fixed sample of the structural fuzzer's mutants (all of them: ~10,000, seconds of
    Python each thousand), whole and cut at a seeded random point."""
    mutants = _mutants(kind)
    rng = random.Random(kind)
    checked = 0
    for name, body in mutants[::max(1, len(mutants) // 300)]:
        cut = [rng.randrange(len(body) + 1)] if body else []
        try:
            assert_decoder_parity("ollama", body, [], None, kind=kind)
            assert_decoder_parity("ollama", body, cut, None, kind=kind)
            checked += 1
        except pytest.skip.Exception:
            continue  # (a rule not ported yet: the others still count)
    if checked == 0:
        pytest.skip("no mutant's rules are ported")


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_decoder_fuzz_mutants(kind, data):
    _require(kind)
    name, body = data.draw(st.sampled_from(_mutants(kind)), label="mutant")
    cuts = data.draw(cut_points(body), label="cuts")
    _drawn(lambda: assert_decoder_parity("ollama", body, cuts, None, kind=kind))


_LINE = b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},"done":false}'
_DONE = b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,' \
        b'"done_reason":"stop","prompt_eval_count":3,"eval_count":2}'

#: stream bodies no scenario has: every rule of StreamDecoder a wrong line reaches
INVALID_STREAMS = [
    b"hello\n" + _DONE + b"\n",  # a line that is not JSON
    b"[1,2]\n" + _DONE + b"\n",  # JSON, not an object
    b"  \n\n" + _LINE + b"\n" + _DONE + b"\n",  # blank lines
    _LINE + b"\n" + _DONE + b"\n" + _LINE + b"\n",  # a line after the done line
    _LINE + b"\n",  # no done line
    _LINE[:40],  # cut inside the first line
    _LINE + b"\n" + _DONE[:-1] + b"\n",  # the done line unterminated (JSON)
    b'{"error":"boom"}\n',  # an error line first
    _LINE + b'\n{"error":{"message":"overloaded","code":5}}\n',
    _LINE + b'\n{"error":{"code":5}}\n' + _LINE + b"\n",  # an error's object without message; a line after it
    b'{"model":null,"message":{"content":"x"},"done":false}\n{"done":true}\n',
    b'{"message":{"content":"before model"},"model":"m","done":false}\n{"done":true,"done_reason":"length"}\n',
    b'{"model":"m","message":{"content":5},"done":false}\n',
    b'{"model":"m","message":{"thinking":[]},"done":false}\n',
    b'{"model":"m","message":"x","done":false}\n',
    b'{"model":"m","done":"yes"}\n',
    b'{"model":"m","done":true,"done_reason":7}\n',
    b'{"model":"m","done":true,"eval_count":1.5}\n',
    b'{"model":"m","done":true,"eval_count":null,"prompt_eval_count":null}\n',
    b'{"model":"m","logprobs":{},"done":false}\n',
    b'{"model":"m","logprobs":[1],"done":false}\n',
    b'{"model":"m","message":{"tool_calls":{}},"done":false}\n',
    b'{"model":"m","message":{"tool_calls":[1]},"done":false}\n',
    b'{"model":"m","message":{"tool_calls":[{"function":[]}]},"done":false}\n',
    b'{"model":"m","message":{"tool_calls":[{"id":5,"function":{}}]},"done":false}\n',
    b'{"model":"m","message":{"tool_calls":[{"function":{"name":{}}}]},"done":false}\n',
    b'{"model":5,"done":false}\n',
    b'{"model":"m","extra":{"a":[1,2]},"images":null,"done":true}\n',
    b'{"model":"m","message":{"role":"assistant","images":["x"],"tool_name":"t","other":[]},"done":true}\n',
    b'{"model":"m","message":{"tool_calls":[{"function":{"index":"0","name":"f","extra":1,'
    b'"arguments":{"a":1}},"type":"function"}]},"done":true,"done_reason":"stop"}\n',
    b'{"model":"m","message":{"tool_calls":[{"function":{"arguments":"{\\"a\\":1}","name":"f","index":0}},'
    b'{"function":{"arguments":null,"index":true,"name":"g"}},{"function":{"name":"h"}}]},"done":true}\n',
    b'{"model":"m","message":{"content":"c","thinking":"t","content":"d"},"done":true}\n',
    b'{"model":"m","message":{"content":"c","thinking":null,"tool_calls":null},"done":true}\n',
    b'{"model":"m","message":{"content":"a\\u00e9\\ud83d\\ude00","thinking":"\\n"},"done":true}\n',
    b'{"model":"m","created_at":"x","created_at":"y","done":true}\n',
    b'{"model":"m","total_duration":1,"load_duration":null,"prompt_eval_duration":"x","eval_duration":[1],'
    b'"done":true}\n',
]


@pytest.mark.parametrize("body", INVALID_STREAMS, ids=lambda body: body[:50].decode(errors="replace"))
def test_stream_decoder_invalid_and_odd_lines(body):
    for cuts in ([], list(range(1, len(body))), _line_cuts(body)):
        assert_decoder_parity("ollama", body, cuts, None, kind="stream")


@pytest.mark.parametrize("body", [line.rstrip(b"\n").split(b"\n")[-1] for line in INVALID_STREAMS],
                         ids=lambda body: body[:50].decode(errors="replace"))
def test_response_decoder_odd_bodies(body):
    for cuts in ([], list(range(1, len(body)))):
        assert_decoder_parity("ollama", body, cuts, None, kind="response")


@pytest.mark.parametrize("options", [{"max_value_bytes": 16}, {"refuse_reorder": True}, {"reorder_budget": 8},
                                     {"strict": True}])
@pytest.mark.parametrize("kind, case", INPUTS)
def test_decoder_options(kind, case, options):
    assert_decoder_parity("ollama", case.body, [], options, kind=kind)
    assert_decoder_parity("ollama", case.body, _line_cuts(case.body), options, kind=kind)


# -- encoders -------------------------------------------------------------------------------


def _events(source: str, kind: str, case: Case) -> list:
    per_piece, _, _ = python_decode_events(source, kind, [case.body], case.options)
    return [event for events in per_piece for event in events]


def _encoder_parity(source: str, events: list, options, kind: str) -> None:
    try:
        assert_encoder_parity(source, "ollama", events, options, kind=kind)
    except TypeError as exc:  # python.rs event_from_py: an event class the binding does not know yet
        if "not a canonical event" not in str(exc):
            raise
        pytest.skip(f"not ported: {exc}")


def _sources(kind: str) -> list[tuple[str, Case]]:
    return [(source, case) for source in DIALECTS for case in scenarios(source, kind) + corpus_items(source, kind)]


SOURCES = [pytest.param(kind, source, case, id=f"{source}-{kind}-{case.name}")
           for kind in KINDS for source, case in _sources(kind)]


@pytest.mark.parametrize("kind, source, case", SOURCES)
def test_encoder_fed_every_source(kind, source, case):
    _encoder_parity(source, _events(source, kind, case), case.options, kind)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_encoder_abort_anywhere(kind, data):
    """An ``Error`` event after any prefix of a source's events (``Transcoder.abort``)."""
    _require(kind, encoder=True)
    source, case = data.draw(st.sampled_from(_sources(kind)), label="case")
    events = _events(source, kind, case)
    cut = data.draw(st.integers(0, len(events)), label="cut")
    error = Error("api_error", data.draw(st.sampled_from(["boom", "quote \" and é", ""])))
    _drawn(lambda: _encoder_parity(source, events[:cut] + [error], case.options, kind))


@pytest.mark.parametrize("options", [{"strict": True}, {"refuse_reorder": True}, {"reorder_budget": 40}])
@pytest.mark.parametrize("kind, source, case", SOURCES)
def test_encoder_options(kind, source, case, options):
    _encoder_parity(source, _events(source, kind, case), options, kind)
