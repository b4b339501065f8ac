"""The validity layer itself (tests/validity.py): each rule catches what its API rejects and
passes what it takes; the rpt corpus's cross outputs pass, on each backend."""

from __future__ import annotations

import json

import pytest

import validity
from rpt import cross_pairs, transcode_all

_USER = {"role": "user", "content": "hi"}
_A = {"model": "m", "max_tokens": 10, "messages": [_USER]}
_O = {"model": "m", "messages": [_USER]}
_L = {"model": "m", "messages": [_USER]}


def _a(**kw):
    return {**_A, **kw}


def _o(**kw):
    return {**_O, **kw}


def _calls(call_id="c1", name="f"):
    return {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                                 "function": {"name": name, "arguments": "{}"}}]}


def _tool_use(call_id="t1", name="f"):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}]}


def _result(call_id="t1"):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"}]}


_SCHEMA = {"type": "object"}
#: rule -> (dialect, kind, a body its API rejects for that rule)
BAD = {
    ("anthropic", "max_tokens-integer"): _a(max_tokens=10.5),
    ("anthropic", "messages-present"): _a(messages=[]),
    ("anthropic", "message-roles"): _a(messages=[{"role": "developer", "content": "x"}, _USER]),
    ("anthropic", "content-non-empty"): _a(messages=[{"role": "user", "content": ""}, _USER]),
    ("anthropic", "text-block-non-empty"): _a(system=[{"type": "text", "text": ""}]),
    ("anthropic", "text-block-not-blank"): _a(messages=[
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [
            {"type": "text", "text": "\n\n"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        _result()]),
    ("anthropic", "final-assistant-no-trailing-whitespace"): _a(messages=[
        _USER, {"role": "assistant", "content": [{"type": "text", "text": "The answer is "}]}]),
    ("anthropic", "cache-breakpoints-at-most-4"): _a(messages=[
        {"role": "user", "content": [{"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}}
                                     for i in range(5)]}]),
    ("anthropic", "stop-sequences-not-blank"): _a(stop_sequences=["END", "\n"]),
    ("anthropic", "input-schema-no-top-combinator"): _a(tools=[{"name": "f", "input_schema": {
        "type": "object", "oneOf": [{"properties": {"a": {"type": "string"}}}]}}]),
    ("anthropic", "input-schema-object"): _a(tools=[{"name": "f", "input_schema": {"type": "string"}}]),
    ("anthropic", "input-schema-no-null"): _a(tools=[{"name": "f", "input_schema": {
        "type": "object", "properties": {"a": {"anyOf": [{"type": "string", "enum": None}]}}}}]),
    ("anthropic", "tool-name-pattern"): _a(tools=[{"name": "a.b", "input_schema": _SCHEMA}]),
    ("anthropic", "tool-id-pattern"): _a(messages=[_USER, _tool_use("functions.f:0"), _result("functions.f:0")]),
    ("anthropic", "tool-pairing"): _a(messages=[_USER, _tool_use("t1"), _result("t2")]),
    ("anthropic", "tool-use-ids-unique"): _a(messages=[_USER, _tool_use("t1"), _result("t1"), _tool_use("t1"),
                                                       _result("t1")]),
    # user text between two results (ollama tool messages' images went there)
    ("anthropic", "tool-results-first"): _a(messages=[_USER, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                     {"type": "text", "text": "see"},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": "b"}]}]),
    ("anthropic", "thinking-budget"): _a(thinking={"type": "enabled", "budget_tokens": 512}),
    ("anthropic", "thinking-vs-forced-tool"): _a(thinking={"type": "adaptive"}, tool_choice={"type": "any"},
                                                 tools=[{"name": "f", "input_schema": _SCHEMA}]),
    ("anthropic", "thinking-tool-loop"): _a(thinking={"type": "adaptive"}, messages=[
        _USER, {"role": "assistant", "content": [{"type": "text", "text": "I'll look."}, _tool_use("t1")["content"][0]]},
        _result("t1")]),
    ("anthropic", "tool-choice-has-tools"): _a(tools=[{"name": "f", "input_schema": _SCHEMA}],
                                               tool_choice={"type": "tool", "name": "web_search"}),
    ("anthropic", "image-media-type"): _a(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}]}]),
    ("openai", "messages-present"): _o(messages=[]),
    ("openai", "integer-fields"): _o(max_completion_tokens=10.0),
    ("openai", "stop-at-most-4"): _o(stop=["a", "b", "c", "d", "e"]),
    ("openai", "json-object-says-json"): _o(response_format={"type": "json_object"}),
    ("openai", "top-logprobs-with-logprobs"): _o(top_logprobs=3),
    ("openai", "tool-choice-has-tools"): _o(tool_choice="required"),
    ("openai", "number-ranges"): _o(temperature=3),
    ("openai", "function-name-pattern"): _o(messages=[_USER, _calls(name="x" * 65),
                                                       {"role": "tool", "tool_call_id": "c1", "content": "ok"}]),
    ("openai", "parameters-object"): _o(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}]),
    ("openai", "parameters-no-null"): _o(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "required": None, "properties": {"a": {"type": "string", "default": None}}}}}]),
    ("openai", "tool-choice-form"): _o(tool_choice={"type": "auto"},
                                       tools=[{"type": "function", "function": {"name": "f"}}]),
    ("openai", "tool-call-id-length"): _o(messages=[_USER, _calls("c" * 41),
                                                     {"role": "tool", "tool_call_id": "c" * 41, "content": "ok"}]),
    ("openai", "tool-pairing"): _o(messages=[_USER, _calls("c1"), {"role": "tool", "content": "ok"}]),
    # a custom call without its input (the audit's custom call came out as a function without a name)
    ("openai", "tool-call-shape"): _o(messages=[_USER, {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "custom", "custom": {"name": "sql"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]),
    ("openai", "tool-call-ids-unique"): _o(messages=[_USER, _calls("c1"), {"role": "tool", "tool_call_id": "c1",
                                                                          "content": "ok"},
                                                     _calls("c1"), {"role": "tool", "tool_call_id": "c1",
                                                                    "content": "ok"}]),
    ("openai", "content-parts-non-empty"): _o(messages=[{"role": "user", "content": []}]),
    ("openai", "assistant-has-something"): _o(messages=[_USER, {"role": "assistant"}]),
    ("openai", "content-present"): _o(messages=[_USER, {"role": "user"}]),
    ("openai", "image-media-type"): _o(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}}]}]),
    ("openai", "file-data-named"): _o(messages=[{"role": "user", "content": [
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjQK"}}]}]),
    ("ollama", "arguments-object"): {**_L, "messages": [_USER, {"role": "assistant", "tool_calls": [
        {"function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "ok"}]},
    ("ollama", "images-base64"): {**_L, "messages": [{"role": "user", "content": "x",
                                                      "images": ["data:image/png;base64,AA"]}]},
    ("ollama", "integer-options"): {**_L, "options": {"num_predict": "10"}},
    ("ollama", "think-value"): {**_L, "think": "xhigh"},
    ("ollama", "messages-present"): {**_L, "messages": []},
    ("ollama", "tool-pairing"): {**_L, "messages": [_USER, {"role": "tool", "content": "ok"}]},
}
#: (dialect, rule, what) -> a further body its API rejects for that rule
SECOND = {
    ("anthropic", "message-roles", "system-image"): _a(messages=[_USER, {"role": "system", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}]}]),
}
#: a late attribute written beside an early one (rpt/fx-ollama-late-call-id)
BAD["openai", "no-duplicate-keys"] = (
    b'{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a",'
    b'"type":"function","function":{"name":"f","arguments":"{}"},"id":"b"}]},'
    b'{"role":"tool","tool_call_id":"b","content":"ok"}]}')
BAD["anthropic", "no-duplicate-keys"] = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"max_tokens":6}'
BAD["ollama", "no-duplicate-keys"] = b'{"model":"m","messages":[{"role":"user","content":"hi","content":"ho"}]}'
RESPONSES_BAD = {
    ("anthropic", "response", "tool-id-pattern"): {
        "id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "functions.f:0", "name": "f", "input": {}}]},
    # a tool_use stop with only text (an openai custom call anthropic could not carry had given it)
    ("anthropic", "response", "tool-use-stop-has-block"): {
        "id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "I'll grep."}]},
    ("anthropic", "stream", "tool-use-stop-has-block"): (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
        b'"model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":0}}}'
        b'\n\nevent: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use",'
        b'"stop_sequence":null},"usage":{"output_tokens":1}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'),
    ("openai", "response", "tool-calls-finish-has-calls"): {
        "id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "tool_calls"}]},
    # choice 1 has the call, choice 0 the finish
    ("openai", "stream", "tool-calls-finish-has-calls"): (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":'
        b'{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f",'
        b'"arguments":"{}"}}]},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},'
        b'"finish_reason":"tool_calls"},{"index":1,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'),
}
GOOD = {
    "anthropic": _a(system=[{"type": "text", "text": "Be brief."}], tools=[{"name": "f", "input_schema": _SCHEMA}],
                    thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048,
                    messages=[_USER, {"role": "system", "content": "x"},
                              {"role": "system", "content": [{"type": "text", "text": "y"}]},
                              _tool_use(), _result(), {"role": "assistant", "content": ""}]),
    "openai": _o(tools=[{"type": "function", "function": {"name": "f", "parameters": _SCHEMA}}], tool_choice="auto",
                 max_completion_tokens=10, response_format={"type": "json_object"}, logprobs=True, top_logprobs=3,
                 messages=[_USER, _calls(), {"role": "tool", "tool_call_id": "c1",
                                             "content": [{"type": "text", "text": "a JSON object"}]}]),
    "ollama": {**_L, "think": "max", "options": {"num_predict": 10}, "messages": [
        _USER, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
        {"role": "tool", "content": "ok", "tool_name": "f"}]},
}


def _broken(dialect: str, kind: str, body) -> set[str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return {p.split(":")[0] for p in validity.check(dialect, kind, data)}


@pytest.mark.parametrize("dialect,name", sorted(BAD), ids=[f"{d}:{n}" for d, n in sorted(BAD)])
def test_each_rule_catches_what_its_api_rejects(dialect, name):
    assert _broken(dialect, "request", BAD[dialect, name]) == {name}


def test_a_second_example_of_a_rule():
    """Keys of three: a rule's further example (the first is under its two-part key)."""
    for (dialect, name, _), body in SECOND.items():
        assert _broken(dialect, "request", body) == {name}


@pytest.mark.parametrize("dialect", sorted(GOOD))
def test_a_body_the_api_takes_breaks_no_rule(dialect):
    assert _broken(dialect, "request", GOOD[dialect]) == set()


def test_response_rules():
    for (dialect, kind, name), body in RESPONSES_BAD.items():
        assert _broken(dialect, kind, body) == {name}


def test_every_rule_has_an_example_and_a_source():
    examples = set(BAD) | {(d, n) for d, _, n in RESPONSES_BAD}
    for r in validity.RULES:
        assert (r.dialect, r.name) in examples, r
        assert r.reason and r.where, r
    assert "| anthropic | request | tool-id-pattern |" in validity.table()


def test_the_rpt_corpus_cross_outputs_are_valid(backend):
    """Every cross-dialect output of the rpt scenarios passes its target's rules, on each
    backend (the conftest hook checks every test's outputs; this names the corpus once)."""
    checked = 0
    for source, target in cross_pairs():
        options = source.make_options(**target.options)
        out, transcoder = transcode_all(source, target.dialect, "whole", options)
        problems = validity.check(target.dialect, target.kind, out, enforced_only=True)
        if problems:
            assert validity.check(source.dialect, source.kind, source.body), (
                f"{source.path.parent.name}: {source.dialect} -> {target.dialect}: {problems}")
        checked += 1
    assert checked > 300


# -- the classes, by property: any id, any name ------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from interlingua import Options, Transcoder  # noqa: E402

_any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=90)


def _through(source: str, target: str, body: dict, **options) -> tuple[dict, Transcoder]:
    t = Transcoder(source, target, options=Options(**options))
    out = t.feed(json.dumps(body).encode()) + t.close()
    problems = validity.check(target, "request", out, enforced_only=True)
    assert not problems, problems
    return json.loads(out), t


@given(st.lists(st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40), _any_text),
                min_size=1, max_size=3, unique_by=lambda p: p[0]))
def test_any_openai_ids_and_names_make_a_valid_anthropic_request_and_come_back(calls):
    """Class 1 and 2: whatever ids and names an openai-compatible history carries, anthropic
    gets a request it accepts, with each call and its result still paired; back to openai,
    the ids are the originals."""
    names = {name for _, name in calls}
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}} for call_id, name in calls]}]
        + [{"role": "tool", "tool_call_id": call_id, "content": "ok"} for call_id, _ in calls],
        "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]}
    anthropic, forward = _through("openai", "anthropic", body)
    wire_names = {t["name"] for t in anthropic["tools"]}
    assert {b["name"] for b in anthropic["messages"][1]["content"]} <= wire_names
    back, _ = _through("anthropic", "openai", anthropic)
    assert [c["id"] for c in back["messages"][1]["tool_calls"]] == [c for c, _ in calls]
    assert {forward.tool_names.get(n, n) for n in wire_names} == names


@given(st.lists(_any_text, min_size=1, max_size=3, unique=True), st.sampled_from(["openai", "anthropic"]))
def test_any_ollama_tool_names_make_a_valid_request(names, target):
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "go"}],
            "tools": [{"type": "function", "function": {"name": n, "parameters": {"properties": {}}}}
                      for n in names]}
    _through("ollama", target, body)


@given(st.sampled_from(["minimal", "low", "medium", "high", "xhigh", "none"]),
       st.one_of(st.none(), st.integers(1, 70000)), st.sampled_from([None, "required", "auto"]),
       st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-6", "m"]))
def test_any_reasoning_effort_makes_a_valid_anthropic_request(effort, max_tokens, choice, model):
    """Class 4 and issue 16.5: budgets fit max_tokens, no thinking beside a forced tool."""
    body = {"model": model, "reasoning_effort": effort, "messages": [{"role": "user", "content": "go"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    if choice is not None:
        body["tool_choice"] = choice
    _through("openai", "anthropic", body)


@given(st.lists(st.text(alphabet="abcXYZ019_-", min_size=1, max_size=80), min_size=1, max_size=3, unique=True))
def test_any_anthropic_ids_make_a_valid_openai_request(ids):
    """Anthropic sets no length on ids; openai takes at most 40 characters (naming.openai_id)."""
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ids]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]}]}
    _through("anthropic", "openai", body)
