"""Usage and finish rules, checked with the TARGET's official client models: every source
× target × response/stream × cut (1, 7, whole), on the backend the run selects.

* openai's required usage counts (``CompletionUsage``: prompt, completion, total) are
  written whenever a usage is (0 for one the source lacks: lifecycle.py's docstring);
* an anthropic stream's input is what the anthropic client accumulates, whichever
  event carries which count;
* a tool call without a name gets the request side's name (``_`` + hash), recorded;
* every lossy finish mapping is recorded (``FINISH_TO``'s rows, every target).
* anthropic's stop is ``tool_use`` only with a tool_use block written: a turn whose every tool
  call it could not carry (an openai custom call) is ``end_turn``, recorded at the finish.
"""

from __future__ import annotations

import itertools
import json

import anthropic.types
import ollama
import openai.types.chat
import pytest

from interlingua import Transcoder
from interlingua.lifecycle import FINISH_FROM, FINISH_TO, finish_from
from interlingua.naming import wire_name

from clients import FINALS

CUTS = (1, 7, None)
DIALECTS = ("openai", "anthropic", "ollama")


def transcode(source, target, kind, body, cut):
    t = Transcoder(source, target, kind=kind)
    size = cut or len(body)
    out = b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close()
    return out, t


def _sse_data(out: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in out.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def validate(target: str, kind: str, out: bytes) -> list:
    """Every frame of ``out`` through the target client's own model (raises when it rejects one)."""
    if target == "openai":
        if kind == "response":
            return [openai.types.chat.ChatCompletion.model_validate_json(out)]
        return [openai.types.chat.ChatCompletionChunk.model_validate(d) for d in _sse_data(out)]
    if target == "anthropic":
        if kind == "response":
            return [anthropic.types.Message.model_validate_json(out)]
        adapter = __import__("pydantic").TypeAdapter(anthropic.types.RawMessageStreamEvent)
        return [adapter.validate_python(d) for d in _sse_data(out)]
    return [ollama.ChatResponse.model_validate_json(line) for line in out.splitlines() if line.strip()]


# -- sources ------------------------------------------------------------------------------------

_OLLAMA_HEAD = '{"model":"m","created_at":"2025-06-01T10:00:00Z",'


def ollama_body(kind: str, final: dict, message: dict | None = None) -> bytes:
    message = message or {"role": "assistant", "content": ""}
    last = {"model": "m", "created_at": "2025-06-01T10:00:00Z", "message": message, "done": True, **final}
    if kind == "response":
        return json.dumps(last).encode()
    first = {"model": "m", "created_at": "2025-06-01T10:00:00Z",
             "message": {"role": "assistant", "content": "Hi"}, "done": False}
    return (json.dumps(first) + "\n" + json.dumps(last) + "\n").encode()


def anthropic_stream(start_usage: dict, delta_usage: dict, stop: str = "end_turn") -> bytes:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": delta_usage}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


def anthropic_response(stop: str) -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                       "content": [{"type": "text", "text": "Hi"}], "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 3, "output_tokens": 2}}).encode()


def openai_body(kind: str, finish: str, usage: dict | None = None) -> bytes:
    head = {"id": "chatcmpl-1", "created": 1700000000, "model": "m"}
    if kind == "response":
        body = {**head, "object": "chat.completion", "choices": [{
            "index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": finish}]}
        if usage is not None:
            body["usage"] = usage
        return json.dumps(body).encode()
    chunks = [{**head, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}]},
              {**head, "object": "chat.completion.chunk", "choices": [
                  {"index": 0, "delta": {}, "finish_reason": finish}]}]
    if usage is not None:
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


# -- 1. openai's required usage counts -------------------------------------------------------

#: sources whose usage lacks a count openai requires, and the counts openai must show
PARTIAL_USAGE = {
    "ollama eval_count only": ("ollama", lambda k: ollama_body(k, {"done_reason": "stop", "eval_count": 3}), (0, 3, 3)),
    "ollama prompt_eval_count only": ("ollama", lambda k: ollama_body(k, {"done_reason": "stop",
                                                                          "prompt_eval_count": 4}), (4, 0, 4)),
    "anthropic output only": ("anthropic", lambda k: anthropic_stream({"output_tokens": 1}, {"output_tokens": 5})
                              if k == "stream" else json.dumps({
                                  "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                  "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
                                  "stop_sequence": None, "usage": {"output_tokens": 5}}).encode(), (0, 5, 5)),
}
_PARTIAL = [(name, kind, cut) for name in PARTIAL_USAGE for kind in ("response", "stream") for cut in CUTS]


@pytest.mark.parametrize("name,kind,cut", _PARTIAL, ids=[f"{n}-{k}-{c}" for n, k, c in _PARTIAL])
def test_openai_gets_every_required_usage_count(name, kind, cut):
    source, body, want = PARTIAL_USAGE[name]
    out, _ = transcode(source, "openai", kind, body(kind), cut)
    frames = validate("openai", kind, out)
    usage = [f.usage for f in frames if f.usage is not None]
    assert len(usage) == 1
    assert (usage[0].prompt_tokens, usage[0].completion_tokens, usage[0].total_tokens) == want
    FINALS["openai"](kind, out)  # the client's stream accumulator takes it too


@pytest.mark.parametrize("kind", ["response", "stream"])
def test_openai_without_any_count_has_no_usage(kind):
    out, _ = transcode("ollama", "openai", kind, ollama_body(kind, {"done_reason": "stop"}), None)
    assert all(f.usage is None for f in validate("openai", kind, out))


# -- 2. an anthropic stream's input, whichever event carries which count -------------------------

_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_VALUES = {"input_tokens": (25, 30), "cache_read_input_tokens": (10, 12), "cache_creation_input_tokens": (4, 6)}


def _usage_combinations():
    for start in itertools.product((False, True), repeat=3):
        for delta in itertools.product((False, True), repeat=3):
            s = {f: _VALUES[f][0] for f, on in zip(_FIELDS, start) if on}
            d = {f: _VALUES[f][1] for f, on in zip(_FIELDS, delta) if on}
            yield {**s, "output_tokens": 1}, {**d, "output_tokens": 5}


_MERGES = [(s, d, t, c) for s, d in _usage_combinations() for t in ("openai", "ollama") for c in CUTS]


@pytest.mark.parametrize("start,delta,target,cut", _MERGES)
def test_anthropic_stream_input_is_what_its_client_accumulates(start, delta, target, cut):
    body = anthropic_stream(start, delta)
    want = FINALS["anthropic"]("stream", body)
    out, _ = transcode("anthropic", target, "stream", body, cut)
    validate(target, "stream", out)
    got = FINALS[target]("stream", out)
    # no input_tokens at all: the source has no input count (openai: its 0 placeholder)
    expect_input = want.input if want.input is not None and ("input_tokens" in start or "input_tokens" in delta) \
        else (0 if target == "openai" else None)
    assert (got.input, got.output) == (expect_input, 5)
    if target == "openai":
        cached = [f.usage.prompt_tokens_details for f in validate("openai", "stream", out) if f.usage]
        read = delta.get("cache_read_input_tokens", start.get("cache_read_input_tokens"))
        assert (cached[0].cached_tokens if cached[0] else None) == read


def test_anthropic_stream_cache_reads_only_in_message_start():
    body = anthropic_stream({"input_tokens": 25, "cache_read_input_tokens": 10}, {"input_tokens": 30, "output_tokens": 5})
    for target, cut in itertools.product(("openai", "ollama"), CUTS):
        got = FINALS[target]("stream", transcode("anthropic", target, "stream", body, cut)[0])
        assert got.input == 40


# -- 3. a tool call without a name -----------------------------------------------------------

_NAMELESS = [(t, k, c) for t in ("openai", "anthropic") for k in ("response", "stream") for c in CUTS]


@pytest.mark.parametrize("target,kind,cut", _NAMELESS)
def test_ollama_tool_call_without_name_is_named_and_recorded(target, kind, cut):
    message = {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": {"a": 1}}}]}
    body = ollama_body(kind, {"done_reason": "stop", "eval_count": 2, "prompt_eval_count": 1}, message)
    out, t = transcode("ollama", target, kind, body, cut)
    validate(target, kind, out)
    got = FINALS[target](kind, out)
    assert [(name, args) for _, name, args in got.tools] == [(wire_name("", target), {"a": 1})]
    assert [(loss.path, loss.reason) for loss in t.losses if "tool name" in loss.reason] == [
        ("$.message.tool_calls[0]",
         f"a missing tool name: {target} has no such tool name "
         f"(^[a-zA-Z0-9_-]{{1,{64 if target == 'openai' else 128}}}$); sent as '{wire_name('', target)}'")]


# -- 4. the finish table: a lossy mapping is recorded ---------------------------------------------

#: canonical reason -> target reasons of the same meaning that are not recorded (lifecycle.py)
SAME_MEANING = {
    "stop_sequence": {"openai": "stop", "ollama": "stop"},  # their stop is also a stop sequence's
    "context_window": {"openai": "length", "ollama": "length"},  # their length is also the window's
    "tool_use": {"ollama": "stop"},  # read back as tool_use from the tool calls
    "content_filter": {"anthropic": "refusal"},
    "refusal": {"openai": "content_filter"},
}


def _lossless(reason: str, target: str) -> bool:
    mapped = FINISH_TO[target].get(reason)
    return mapped is not None and (FINISH_FROM[target].get(mapped) == reason
                                   or SAME_MEANING.get(reason, {}).get(target) == mapped)


def test_every_finish_row_is_lossless_or_absent():
    """A row FINISH_TO holds maps to the same meaning; the others go the recorded way."""
    for target, rows in FINISH_TO.items():
        for reason in rows:
            assert _lossless(reason, target), (reason, target)


def _finish_sources():
    """(source, native reason, canonical) for every reason every source defines."""
    for source, table in FINISH_FROM.items():
        for own, canonical in table.items():
            yield source, own, canonical


_FINISHES = [(s, own, c, t, k, cut) for s, own, c in _finish_sources() for t in DIALECTS if t != s
             for k in ("response", "stream") for cut in CUTS]


def _finish_body(source: str, kind: str, own: str) -> bytes:
    if source == "openai" and own in ("tool_calls", "function_call"):  # with its call (section 5: none, no tool_use)
        return _openai_calls(kind, [_FUNCTION], own)
    if source == "openai":
        return openai_body(kind, own, {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
    if source == "anthropic":
        return anthropic_stream({"input_tokens": 3, "output_tokens": 1}, {"output_tokens": 2}, own) \
            if kind == "stream" else anthropic_response(own)
    return ollama_body(kind, {"done_reason": own, "eval_count": 2, "prompt_eval_count": 3})


@pytest.mark.parametrize("source,own,canonical,target,kind,cut", _FINISHES)
def test_lossy_finish_is_recorded(source, own, canonical, target, kind, cut):
    out, t = transcode(source, target, kind, _finish_body(source, kind, own), cut)
    frames = validate(target, kind, out)
    if target == "openai":  # its stream accumulator refuses length and content_filter: read the models
        finish = finish_from("openai", [c.finish_reason for f in frames for c in f.choices if c.finish_reason][-1])
    else:
        finish = FINALS[target](kind, out).finish
    recorded = [loss for loss in t.losses if "finish reason" in loss.reason]
    if _lossless(canonical, target):
        assert recorded == []
        assert finish in (canonical, finish_from(target, SAME_MEANING.get(canonical, {}).get(target)))
    else:
        assert len(recorded) == 1 and f"{own!r}" in recorded[0].reason, recorded


# -- 5. a tool_use stop only with a tool_use block ------------------------------------------------

_CUSTOM = {"type": "custom", "custom": {"name": "grep", "input": "foo"}}
_FUNCTION = {"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}

#: an openai turn's tool calls and finish -> anthropic's stop_reason and tool_use names, and whether
#: the stop is recorded. A custom call is never carried (recorded); a tool_use stop with no block
#: would send an agent loop round with nothing to answer, so it is end_turn, recorded at the finish.
STOPS = {
    "custom only": ([_CUSTOM], "tool_calls", "end_turn", [], True),
    "no call at all": ([], "tool_calls", "end_turn", [], True),
    "function only": ([_FUNCTION], "tool_calls", "tool_use", ["f"], False),
    "custom then function": ([_CUSTOM, _FUNCTION], "tool_calls", "tool_use", ["f"], False),
    "function then custom": ([_FUNCTION, _CUSTOM], "tool_calls", "tool_use", ["f"], False),
    "custom with a stop": ([_CUSTOM], "stop", "end_turn", [], False),
}
_STOPS = [(name, kind, cut) for name in STOPS for kind in ("response", "stream") for cut in CUTS]


def _openai_calls(kind: str, calls: list[dict], finish: str) -> bytes:
    head = {"id": "chatcmpl-1", "created": 1700000000, "model": "m"}
    ids = [{"id": f"call_{n}", **call} for n, call in enumerate(calls)]
    if kind == "response":
        message = {"role": "assistant", "content": None, **({"tool_calls": ids} if ids else {})}
        return json.dumps({**head, "object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}]}).encode()
    delta = {"role": "assistant", **({"tool_calls": [{"index": n, **c} for n, c in enumerate(ids)]} if ids else {})}
    chunks = [{**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


@pytest.mark.parametrize("name,kind,cut", _STOPS, ids=[f"{n}-{k}-{c}" for n, k, c in _STOPS])
def test_anthropic_stops_for_tool_use_only_with_a_tool_use_block(name, kind, cut):
    calls, finish, stop, names, recorded = STOPS[name]
    out, t = transcode("openai", "anthropic", kind, _openai_calls(kind, calls, finish), cut)
    validate("anthropic", kind, out)
    got = FINALS["anthropic"](kind, out)
    assert (got.finish, [n for _, n, _ in got.tools]) == (finish_from("anthropic", stop), names)
    finish_path = "$.choices[0].finish_reason"
    assert [loss.reason for loss in t.losses if loss.path == finish_path] == (
        ["finish_reason: anthropic has no tool_use block to stop for (no tool call was carried); sent as 'end_turn'"]
        if recorded else [])
    custom_paths = [f"$.choices[0].{'message' if kind == 'response' else 'delta'}.tool_calls[{n}]"
                    for n, call in enumerate(calls) if call["type"] == "custom"]
    assert [loss.path for loss in t.losses if loss.path != finish_path] == custom_paths
