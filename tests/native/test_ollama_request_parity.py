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
from hypothesis import given, reject, strategies as st

from interlingua.canonical import Block, Control, End, Extension, MessagesEnd, Section, SystemEnd
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


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
JPEG, GIF, WEBP = "/9j/4AAQSkZJRgABAQ", "R0lGODlhAQABAIAAAP", "UklGRiQAAABXRUJQVlA4IBgAAAAw"
_CALL = {"function": {"name": "f", "arguments": {"q": 1}}}

#: bodies for the rules no rpt scenario or corpus item reaches (each a few rules)
HAND_MADE = {
    "ollama": [
        {"model": "m", "options": {}, "tools": [], "messages": [
            {"role": "user", "content": None, "images": [], "thinking": None, "tool_calls": None}]},
        {"model": "m", "options": None, "tools": None, "messages": [
            {"role": "user", "images": None, "content": "x"}], "format": "", "think": True, "keep_alive": 5,
         "logprobs": True, "top_logprobs": 2},
        {"model": "m", "messages": [{"role": "critic", "content": "odd", "tool_name": "n", "tool_call_id": "c"},
                                    {"role": "reviewer"}, {"role": "assistant"}, {"role": "system"}],
         "format": {"type": "object"}, "think": "max"},
        {"model": "m", "format": "yaml", "think": None, "messages": [
            {"role": "assistant", "tool_calls": [
                {"function": {"name": "f", "index": 3, "x": [1], "arguments": {"a": "b"}}, "extra": True},
                {"function": {"arguments": {"z": {}}, "name": "g"}, "id": "late_id"},
                {"id": "early", "function": {"name": "h"}},
                {"function": {"name": "i", "arguments": {}}}]},
            {"role": "tool", "tool_name": "h"},
            {"role": "tool", "content": "r", "tool_call_id": "late_id"},
            {"content": "before role", "role": "tool", "tool_name": "f"},
            {"role": "tool", "content": "no match", "tool_name": "nobody"}]},
        {"model": "m", "messages": [{"role": "user", "content": "pics", "images": [PNG, JPEG, GIF, WEBP, "AAAA", "",
                                                                                    "data:image/png;base64," + PNG]},
                                    {"images": [PNG], "role": "assistant", "thinking": "t", "content": "c"}]},
        {"model": "m", "tools": [
            {"function": {"name": "a", "parameters": None, "strict": True}},
            {"type": "function", "function": {"name": "b", "description": 7, "parameters": {"properties": {}}}},
            {"type": "other"}, {"type": "function", "function": {"name": 5}}, "x"], "messages": []},
        {"model": "m", "options": {"num_predict": 9, "temperature": 0.5, "top_p": 0.9, "top_k": 3, "stop": ["a"],
                                   "seed": 1, "presence_penalty": 0.1, "frequency_penalty": 0.2, "num_ctx": 8,
                                   "mirostat": None}},
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a" * 70 + "\\n\u00e9\"" * 9}]},
    ],
    "openai": [
        {"model": "m", "response_format": {"type": "text"}, "reasoning_effort": "minimal", "messages": [
            {"role": "developer", "content": "d"}, {"role": "user", "name": "u", "content": [
                {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG, "detail": "low"}},
                {"type": "text", "text": "b"}, {"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}},
                {"type": "file", "file": {"file_id": "f1"}}]},
            {"role": "assistant", "content": "x", "refusal": "no", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r1"},
            {"role": "tool", "name": "g", "content": "r2"},
            {"role": "function", "name": "f", "content": "r3"}],
         "max_tokens": 5, "max_completion_tokens": 6, "stop": "s", "seed": 2, "user": "u", "n": 1,
         "parallel_tool_calls": False},
        {"model": "m", "response_format": {"type": "json_schema", "json_schema": {
            "name": "n", "strict": True, "description": "d", "schema": {"type": "object"}}},
         "reasoning_effort": "none", "messages": [{"role": "user", "content": "x"}]},
        {"model": "m", "response_format": {"type": "json_object"}, "reasoning_effort": "xhigh", "stream": True,
         "messages": [{"role": "tool", "name": 5, "content": "r"}, {"role": "assistant", "content": None}]},
    ],
    "anthropic": [
        {"model": "m", "max_tokens": 9, "thinking": {"type": "enabled", "budget_tokens": 2048}, "top_k": 3,
         "stop_sequences": ["x"], "metadata": {"user_id": "u"}, "tool_choice": {"type": "auto"},
         "system": [{"type": "text", "text": "s1", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "s2"}],
         "messages": [
             {"role": "assistant", "content": [
                 {"type": "thinking", "thinking": "hm", "signature": "sig"},
                 {"type": "redacted_thinking", "data": "xyz"},
                 {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
             {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [
                     {"type": "text", "text": "bad"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}}]},
                 {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
                 {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}},
                 {"type": "text", "text": "t", "citations": [{"type": "char_location", "cited_text": "c",
                                                              "document_index": 0, "start_char_index": 0,
                                                              "end_char_index": 1}]}]}]},
        {"model": "m", "max_tokens": 9, "thinking": {"type": "disabled"}, "output_config": {"effort": "low"},
         "messages": [{"role": "user", "content": "x"}]},
        {"model": "m", "max_tokens": 9, "output_config": {"effort": "xhigh"}, "thinking": {"type": "adaptive"},
         "messages": [{"role": "user", "content": "x"}], "stream": False},
    ],
}


def _hand_made(dialect: str) -> tuple[Case, ...]:
    return tuple(Case(f"hand-made {dialect} {n}", dialect, _go(body)) for n, body in enumerate(HAND_MADE[dialect]))


def _cases(dialect: str) -> tuple[Case, ...]:
    go = tuple(case for case in _go_shaped() if case.dialect == dialect)
    return rpt_requests(dialect) + corpus_requests(dialect) + go + _hand_made(dialect)


def _example(check, *args) -> None:
    """One hypothesis example: an input that hits a rule the native side has not ported (a
    skip, see differential.skip_if_not_ported) is rejected rather than skipping the whole test."""
    try:
        check(*args)
    except pytest.skip.Exception:
        reject()


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


@given(case=fuzz_mutant("ollama"), data=st.data())
def test_decoder_is_at_parity_on_fuzz_mutants(case, data):
    _example(assert_decoder_parity, "ollama", case.body, data.draw(cut_points(case.body)), case.options)


@given(body=OLLAMA_BODIES, data=st.data())
def test_decoder_is_at_parity_on_generated_requests(body, data):
    _example(assert_decoder_parity, "ollama", body, data.draw(cut_points(body)))


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


#: each source case also under these (merged into its own options)
OPTION_VARIANTS = [{"ollama_sampling_defaults": True}, {"strict": True}, {"refuse_reorder": True},
                   {"reorder_budget": 64}]


@pytest.mark.parametrize("case", ENCODER_CASES, ids=lambda c: f"{c.dialect}: {c!r}")
def test_encoder_is_at_parity_on_every_source(case):
    for cuts in _cut_sets(case.body)[:1] + _cut_sets(case.body)[2:3]:  # whole, and a small stride
        events = _events_at(case.dialect, case.body, cuts, case.options)
        assert_encoder_parity(case.dialect, "ollama", events, case.options)
    for variant in OPTION_VARIANTS:
        options = {**(case.options or {}), **variant}
        assert_encoder_parity(case.dialect, "ollama", _events_at(case.dialect, case.body, [], options), options)


def _block(section, message, payload=b"", init=True, fin=True, attrs=None):
    return Block(section, message, payload, init, fin, attrs)


#: canonical events no decoder makes, for the encoder's rules that only they reach
#: (source dialect, events): arguments of an ollama source that are not one JSON object,
#: escaped and blank arguments, blocks of other roles and forms
HAND_MADE_EVENTS = [
    ("ollama", [SystemEnd(), Control("model", "m", "ollama", "model", b'"m"'),
                _block(Section.TOOL_CALL, 0, b"[1]", attrs={"id": "call_ollama_0_0", "name": "f"}), MessagesEnd(), End()]),
    ("ollama", [SystemEnd(), _block(Section.TOOL_CALL, 0, b'{\\"a\\":\\"\\\\u00e9\\"', True, False,
                                    {"id": "x1", "name": "f"}),
                _block(Section.TOOL_CALL, 0, b"}", False, True), End()]),
    ("ollama", [SystemEnd(), _block(Section.TOOL_CALL, 0, b'{\\"a\\":', True, False, {"name": "f"}),
                _block(Section.TOOL_CALL, 0, b"", False, True, {"index": 2}), End()]),
    ("ollama", [SystemEnd(), _block(Section.TOOL_CALL, 0, b"  \\n ", attrs={"name": "f"}), End()]),
    ("ollama", [SystemEnd(), _block(Section.TOOL_CALL, 0, b"  7", attrs={"name": "f"}), End()]),
    ("ollama", [SystemEnd(), _block(Section.TOOL_CALL, 0, b'{} {}', attrs={"name": "f"}), End()]),
    ("ollama", [SystemEnd(), _block(Section.UNKNOWN, 0, b'"x"', attrs={"role": "critic", "dialect": "ollama"}),
                _block(Section.UNKNOWN, 1, b"", attrs={"role": "critic", "dialect": "ollama", "empty": True}),
                _block(Section.UNKNOWN, 2, b"{}", attrs={"dialect": "openai"}),
                _block(Section.USER_DOCUMENT, 3, b"JVBER", attrs={"source": "base64", "role": "user"}),
                _block(Section.USER_IMAGE, 4, PNG.encode(), attrs={"source": None}),
                _block(Section.USER_IMAGE, 4, PNG.encode(), attrs={"source": "file", "file_id": "f"}),
                _block(Section.ASSISTANT_REASONING, 5, b"t", True, False, {}),
                _block(Section.ASSISTANT_REASONING, 5, b"", False, True, {"signature": "late", "extra": 1}),
                _block(Section.SYSTEM_INSTRUCTION, 6, b"s", attrs={"role": "developer", "cache_control": None}),
                _block(Section.TOOL_RESULT, 7, b"r", attrs={"role": "function", "tool_call_id": "call_ollama_1_0"}),
                _block(Section.TOOL_RESULT, 7, b"r2", attrs={"in_result": True}),
                MessagesEnd(), End()]),
    ("openai", [SystemEnd(), Control("reasoning", {"budget_tokens": 9}, "openai", "x"),
                Control("reasoning", "high", "openai", "y"), Control("reasoning", {"enabled": True, "budget_tokens": 1},
                                                                   "anthropic", "thinking"),
                Control("response_format", 5, "openai", "response_format"), Control("weird", 1, "openai", None),
                Control("stream", False, "ollama", None), Extension("ollama", "$.options", b"null"),
                Extension("ollama", "$.options.num_ctx", b"4"), Extension("ollama", "$.x", b"1"),
                Extension("ollama", "$.messages[3].y", b"2", message=3), Extension("openai", "$.messages[3].name", b'"n"', message=3),
                Extension("openai", "$.z", b"3"), Extension("openai", "$.w", b"null", lossless=True),
                MessagesEnd(), End()]),
]


@pytest.mark.parametrize("n", range(len(HAND_MADE_EVENTS)))
def test_encoder_is_at_parity_on_hand_made_events(n):
    source, events = HAND_MADE_EVENTS[n]
    assert_encoder_parity(source, "ollama", events)
    for variant in OPTION_VARIANTS:
        assert_encoder_parity(source, "ollama", events, variant)


@given(source=st.sampled_from(DIALECTS), data=st.data())
def test_encoder_is_at_parity_on_fuzz_mutants(source, data):
    case = data.draw(fuzz_mutant(source))
    events = _events_at(source, case.body, data.draw(cut_points(case.body)), case.options)
    _example(assert_encoder_parity, source, "ollama", events, case.options)


@given(body=OLLAMA_BODIES, data=st.data())
def test_encoder_is_at_parity_on_generated_requests(body, data):
    events = _events_at("ollama", body, data.draw(cut_points(body)), None)
    _example(assert_encoder_parity, "ollama", "ollama", events)
