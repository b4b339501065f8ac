"""The native anthropic request encoder (native/src/dialects/anthropic/{request,controls}.rs,
encoder halves) against Python's ``anthropic.request.RequestEncoder``: fed the canonical
events the PYTHON decoders of every dialect make (the source dialect passed through, so
losses name it), the same bytes after every event, the same tail, losses and error.

Inputs: every rpt request scenario (with its Options), the corpus requests, the dialects'
hypothesis-generated requests and structural-fuzzer mutants, each decoded whole and cut at
random points (the fragments an encoder sees depend on the cuts), and the Options that
change what the encoder does (strict, small and refused reorder budgets, the thinking
modes and budgets, default_max_tokens)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from interlingua.canonical import (
    REQUEST_LEVEL, Block, Control, End, Extension, MessagesEnd, Section, SystemEnd,
)
from interlingua.dialects import DIALECTS

from .differential import (
    assert_encoder_parity, corpus_requests, cut_points, feeds, fuzz_mutant, python_decode_events,
    python_encode_events, request_bodies, rpt_requests,
)

TARGET = "anthropic"
BODIES = {dialect: request_bodies(dialect) for dialect in DIALECTS}  # (at import: not inside a @given)

#: Options that change what the anthropic encoder writes or raises
OPTIONS = [
    None,
    {"strict": True},
    {"reorder_budget": 64},
    {"refuse_reorder": True},
    {"anthropic_thinking": "adaptive"},
    {"anthropic_thinking": "budget", "anthropic_thinking_budgets": {"high": 9, "low": 2000}, "default_max_tokens": 7},
    {"anthropic_thinking": "budget", "default_max_tokens": 100000},
]


def events_of(source: str, body: bytes, cuts=(), options=None) -> list:
    """The Python decoder's events for ``body`` cut at ``cuts`` (up to its error, if any)."""
    per_piece, _, _ = python_decode_events(source, "request", feeds(body, sorted(cuts)), options)
    return [event for events in per_piece for event in events]


def crosses_the_binding(events) -> bool:
    """Whether ``_native.encode_events`` can take the events: values travel as
    ``jsonwriter.dumps`` JSON and extension paths as WTF-8 (lone surrogates and all), but
    attribute names and a control's name, dialect and key are Rust ``str`` -- the codecs'
    own names, which no decoder makes from input, so a lone surrogate there is never
    met (checked here rather than assumed)."""
    try:
        for event in events:
            if type(event) is Block and event.attrs:
                for name in event.attrs:
                    name.encode("utf-8")
            elif type(event) is Control:
                for text in (event.name, event.dialect or "", event.key or ""):
                    text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check(source: str, events: list, options) -> None:
    if not crosses_the_binding(events):
        pytest.skip("a lone surrogate in a value: the binding's event_from_py cannot carry it (helper P)")
    assert_encoder_parity(source, TARGET, events, options)


def _merged(case_options, extra):
    if extra is None:
        return case_options
    return {**(case_options or {}), **extra}


CASES = [case for source in DIALECTS for case in rpt_requests(source) + corpus_requests(source)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.dialect}: {c.name}")
def test_every_scenario_and_corpus_request(case):
    for extra in OPTIONS:
        options = _merged(case.options, extra)
        check(case.dialect, events_of(case.dialect, case.body, options=options), options)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.dialect}: {c.name}")
@settings(max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_scenario_cut_at_random_points(case, data):
    cuts = data.draw(cut_points(case.body))
    check(case.dialect, events_of(case.dialect, case.body, cuts, case.options), case.options)


@pytest.mark.parametrize("source", DIALECTS)
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_requests(source, data):
    body = data.draw(BODIES[source])
    cuts = data.draw(cut_points(body))
    options = data.draw(st.sampled_from(OPTIONS))
    events = events_of(source, body, cuts, options)
    assume(crosses_the_binding(events))
    assert_encoder_parity(source, TARGET, events, options)


@pytest.mark.parametrize("source", DIALECTS)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_fuzz_mutants(source, data):
    case = data.draw(fuzz_mutant(source))
    cuts = data.draw(cut_points(case.body))
    events = events_of(source, case.body, cuts)
    assume(crosses_the_binding(events))
    assert_encoder_parity(source, TARGET, events, None)


S = Section


def _b(section, message, payload=b"", attrs=None, init=True, fin=True):
    return Block(section, message, payload, init, fin, attrs)


#: rules no decoder reaches today (events another producer -- the turn compiler, a hook -- may
#: make): (name, source dialect, events)
CONSTRUCTED = [
    ("tool definition in fragments", "openai",
     [_b(S.TOOL_DEFINITION, REQUEST_LEVEL, b"{", {"name": "f"}, fin=False), End()]),
    ("a second part of a string tool_result", "openai",
     [_b(S.TOOL_RESULT, 1, b"a", {"tool_call_id": "x"}), _b(S.TOOL_RESULT, 1, b"b", {"tool_call_id": "x"}),
      MessagesEnd(), End()]),
    ("late attributes of thinking, a result's media and text", "anthropic",
     [SystemEnd(), _b(S.ASSISTANT_REASONING, 0, b"t", {}, fin=False),
      _b(S.ASSISTANT_REASONING, 0, b"u", {"signature": "s", "x": 1}, init=False),
      _b(S.TOOL_RESULT, 1, b"r", {"in_parts": True, "tool_call_id": "t1"}),
      _b(S.USER_IMAGE, 1, b"AAAA", {"in_parts": True, "in_result": True}, fin=False),
      _b(S.USER_IMAGE, 1, b"", {"source": "base64", "media_type": "image/png", "is_error": True}, init=False),
      _b(S.TOOL_RESULT, 1, b"more", {"in_parts": True, "in_result": True, "cache_control": {"type": "ephemeral"}}),
      _b(S.USER_TEXT, 1, b"after", {"in_parts": True}), MessagesEnd(), End()]),
    ("foreign thinking with a late signature, a file id, a refusal, unknown content", "openai",
     [SystemEnd(), _b(S.ASSISTANT_REASONING, 0, b"t", {}, fin=False),
      _b(S.ASSISTANT_REASONING, 0, b"", {"signature": "s"}, init=False),
      _b(S.USER_DOCUMENT, 1, b"", {"source": "file", "file_id": "f1"}), _b(S.USER_DOCUMENT, 1, b"", {"file_id": "f2"}),
      _b(S.ASSISTANT_REFUSAL, 2, b"no"), _b(S.UNKNOWN, 2, b'{"type":"x"}', {"dialect": "openai"}),
      _b(S.USER_AUDIO, 3, b"AAAA"), MessagesEnd(), End()]),
    ("extensions of messages, before and inside them", "anthropic",
     [Extension("anthropic", "$.messages[0].x", b"1", message=0), _b(S.USER_TEXT, 0, b"hi"),
      Extension("anthropic", "$.messages[0].y", b"2", message=0), Extension("anthropic", "$.top", b"3"),
      Extension("openai", "$.audio", b"{}"), Extension("openai", "$.n", b"null", lossless=True), MessagesEnd(), End()]),
    ("reasoning budgets and controls another producer may give", "openai",
     [Control("reasoning", {"enabled": True, "budget_tokens": 500}, dialect="openai", key="x"),
      Control("max_output_tokens", 2048, dialect="openai", key="max_tokens"),
      Control("tool_choice", {"type": "tool", "name": "f"}, dialect="openai", key="tool_choice"),
      Control("service_tier", "auto", dialect="openai", key="service_tier"),
      Control("stream_options", None, dialect="openai", key="stream_options"), End()]),
    ("a budget that does not fit, an adaptive setting, a float budget", "ollama",
     [Control("reasoning", {"enabled": True, "budget_tokens": 5000}, dialect="ollama", key="think"),
      Control("reasoning", {"adaptive": True}, dialect="ollama", key="think"),
      Control("max_output_tokens", 3000, dialect="ollama", key="options.num_predict"), End()]),
    ("a tool result and a call without ids", "openai",
     [SystemEnd(), _b(S.TOOL_CALL, 0, b"", {"name": "f"}), _b(S.TOOL_RESULT, 1, b"r"), _b(S.TOOL_RESULT, 2, b"s"),
      MessagesEnd(), End()]),
]


@pytest.mark.parametrize("name,source,events", CONSTRUCTED, ids=[c[0] for c in CONSTRUCTED])
@pytest.mark.parametrize("options", OPTIONS[:4])
def test_constructed_events(name, source, events, options):
    assert_encoder_parity(source, TARGET, events, options)


def test_an_encoder_fed_nothing_writes_the_opening_brace():
    """Python's constructor writes ``{``; with no event it is the tail."""
    assert_encoder_parity("openai", TARGET, [], None)


# -- the table of the encoder's cargo test (no Python there) -------------------------------

CARGO_CASES = Path(__file__).resolve().parents[2] / "native/src/dialects/anthropic/request_encoder_cases.json"
CARGO_BODIES = [
    ("openai", b'{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":['
               b'{"type":"text","text":"hi \\u00e9"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},'
               b'{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":'
               b'{"name":"get.weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},{"role":"tool","tool_call_id":"call_1",'
               b'"content":"sunny"},{"role":"user","content":"thanks"}],"tools":[{"type":"function","function":'
               b'{"name":"get.weather","parameters":{"properties":{}}}}],"max_tokens":100,"reasoning_effort":"high",'
               b'"tool_choice":"auto","stop":"x","seed":1}'),
    ("anthropic", b'{"max_tokens":50,"messages":[{"content":[{"text":"a","type":"text","cache_control":{"type":"ephemeral"}}],'
                  b'"role":"user"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},'
                  b'{"type":"tool_use","id":"t1","name":"f","input":{"a":[1,2]}}]},{"role":"user","content":[{"type":'
                  b'"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}],"is_error":true}]}],'
                  b'"model":"claude-x","system":[{"type":"text","text":"sys"}],"metadata":{"user_id":"u"},"x_ext":1}'),
    ("ollama", b'{"model":"llama","messages":[{"role":"user","content":"hi","images":["iVBORw0KGgoAAAANSUhEUg=="]},{"role":"assistant",'
               b'"content":"","thinking":"t","tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]},'
               b'{"role":"tool","content":"ok"}],"think":true,"options":{"num_predict":900,"temperature":0.2}}'),
]


def _event_data(event) -> dict:
    tag = event.__struct_config__.tag
    data = {"event": tag}
    if tag == "block":
        data.update(section=event.section.value, message=event.message, payload=event.payload.decode(),
                    init=event.init, fin=event.fin)
        if event.attrs is not None:
            data["attrs"] = event.attrs
    elif tag == "control":
        data.update(name=event.name, value=event.value, dialect=event.dialect, key=event.key,
                    raw=None if event.raw is None else event.raw.decode())
    elif tag == "extension":
        data.update(dialect=event.dialect, path=event.path, raw=event.raw.decode(), message=event.message,
                    lossless=event.lossless)
    return data


def cargo_cases() -> list:
    """Python's decoders' events of ``CARGO_BODIES`` and what Python's anthropic encoder
    writes after each: the table of ``request.rs``'s cargo test."""
    rows = []
    for source, body in CARGO_BODIES:
        events = events_of(source, body)
        out, tail, losses, error = python_encode_events(source, TARGET, "request", events)
        assert error is None, error
        rows.append({"source": source, "events": [_event_data(e) for e in events],
                     "out": [o.decode() for o in out], "tail": tail.decode(), "losses": [list(x) for x in losses]})
    return rows


def test_the_cargo_tests_table_is_pythons_output():
    """``request_encoder_cases.json`` is what Python writes today (regenerate it with
    ``python -m tests.native.test_anthropic_request_encoder_parity``)."""
    assert json.loads(CARGO_CASES.read_text(encoding="utf-8")) == cargo_cases()


if __name__ == "__main__":
    CARGO_CASES.write_text(json.dumps(cargo_cases(), ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
