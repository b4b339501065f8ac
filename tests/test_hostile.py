"""Hostile input (issue 15): a Transcoder that raised stays failed, and every error
says where it is -- those raised past the tokenizer (a reorder budget, strict mode,
the end of a stream) included. The structural fuzzer is tests/test_fuzz.py."""

from __future__ import annotations

import pytest

from interlingua import Decoder, Options, Transcoder, TranscodeError
from interlingua.errors import BudgetExceededError, LossError, ReorderRefusedError, TruncatedInputError

BAD = {
    "request": b'{"model":x',
    "response": b'{"id":',
    "stream": b'data: {"id":x}\n\n',
}
GOOD_TAIL = b'"m", "messages": [{"role": "user", "content": "hi"}]}'


def _raise(call):
    try:
        call()
    except TranscodeError as exc:
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize("source", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("kind", ["request", "response", "stream"])
@pytest.mark.parametrize("make", [lambda s, k: Transcoder(s, "openai" if s != "openai" else "anthropic", kind=k),
                                  lambda s, k: Decoder(s, kind=k)], ids=["transcoder", "decoder"])
def test_after_an_error_every_feed_and_close_raises_the_same_error(source, kind, make):
    body = BAD[kind] if not (source == "ollama" and kind == "stream") else b'{"model":x}\n'
    t = make(source, kind)
    first = _raise(lambda: (t.feed(body), t.close()))
    assert _raise(lambda: t.feed(GOOD_TAIL)) is first
    assert _raise(t.close) is first
    assert _raise(lambda: t.feed(b"")) is first


def test_the_output_before_the_error_is_kept_and_nothing_follows():
    t = Transcoder("openai", "anthropic")
    out = t.feed(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": 5')
    with pytest.raises(TranscodeError):
        out += t.feed(b"}]}")
    out += t.pending_output()
    with pytest.raises(TranscodeError):
        t.close()
    assert t.pending_output() == b""


SORTED = b'{"max_tokens": 5, "messages": [{"content": "' + b"x" * 300 + b'", "role": "user"}], "model": "m"}'


@pytest.mark.parametrize("options,cls,offset", [
    # content before role is held: the budget breaks at the token that overflowed it
    (Options(reorder_budget=100), BudgetExceededError, SORTED.index(b'"xxx')),
    (Options(refuse_reorder=True), ReorderRefusedError, SORTED.index(b'"xxx')),
])
def test_reorder_errors_carry_an_offset(options, cls, offset):
    t = Transcoder("anthropic", "openai", options=options)
    exc = _raise(lambda: (t.feed(SORTED), t.close()))
    assert type(exc) is cls and exc.offset == offset and exc.dialect == "anthropic", exc


def test_strict_mode_errors_carry_an_offset():
    body = b'{"model": "m", "temperature": 0.5, "messages": [{"role": "user", "content": "hi"}]}'
    t = Transcoder("openai", "anthropic", options=Options(strict=True))
    exc = _raise(lambda: (t.feed(body), t.close()))
    assert type(exc) is LossError and exc.offset is not None and exc.path, exc


def test_end_of_stream_errors_carry_an_offset():
    stream = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"a","model":"m"}}\n\n'
              b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
              b'"content_block":{"type":"text","text":""}}\n\n')
    t = Transcoder("anthropic", "openai", kind="stream")
    exc = _raise(lambda: (t.feed(stream), t.close()))
    assert exc.offset is not None, exc
    t = Transcoder("openai", "anthropic", kind="stream")
    exc = _raise(lambda: (t.feed(b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"'), t.close()))
    assert type(exc) is TruncatedInputError and exc.offset is not None, exc


@pytest.mark.parametrize("target", ["anthropic", "ollama"])
@pytest.mark.parametrize("kind", ["request", "response", "stream"])
def test_a_lone_surrogate_in_arguments_stays_an_escape(kind, target):
    """Arguments carried as an object are unescaped once: a lone surrogate inside
    their strings is written back as its escape (valid JSON, the same text)."""
    import json

    args = json.dumps(json.dumps({"q": "a\udc00b"}))  # the escape, escaped again
    if kind == "request":
        body = ('{"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", '
                '"function": {"name": "f", "arguments": %s}}]}]}' % args)
    elif kind == "response":
        body = ('{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
                '"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", '
                '"function": {"name": "f", "arguments": %s}}]}, "finish_reason": "tool_calls"}]}' % args)
    else:
        body = ('data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
                '"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c","type":"function","function":'
                '{"name":"f","arguments":%s}}]},"finish_reason":null}]}\n\n'
                'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
                '"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n' % args)
    t = Transcoder("openai", target, kind=kind)
    out = t.feed(body.encode()) + t.close()
    import fuzz

    for doc in fuzz.output_documents(target, kind, out):
        fuzz.strict_json(doc)
    assert b"\\udc00" in out


def _openai_call(kind: str, arguments: str) -> bytes:
    import json

    args = json.dumps(arguments)
    if kind == "response":
        return ('{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
                '"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", '
                '"function": {"name": "f", "arguments": %s}}]}, "finish_reason": "length"}]}' % args).encode()
    head = 'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
    pieces = [arguments[i:i + 3] for i in range(0, len(arguments), 3)] or [""]
    frames = [head + '{"role":"assistant","tool_calls":[{"index":0,"id":"c","type":"function","function":'
              '{"name":"f","arguments":""}}]},"finish_reason":null}]}\n\n']
    frames += [head + '{"tool_calls":[{"index":0,"function":{"arguments":%s}}]},"finish_reason":null}]}\n\n'
               % json.dumps(p) for p in pieces]
    frames.append(head + '{},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n')
    return "".join(frames).encode()


def _tool_input(target: str, kind: str, out: bytes):
    import json

    import fuzz

    docs = [fuzz.strict_json(d) for d in fuzz.output_documents(target, kind, out)]
    if target == "ollama":
        calls = [c for d in docs for c in (d.get("message") or {}).get("tool_calls") or []]
        return calls[0]["function"]["arguments"]
    if kind == "response":
        return [b for b in docs[0]["content"] if b["type"] == "tool_use"][0]["input"]
    text = "".join(d["delta"]["partial_json"] for d in docs
                   if d.get("type") == "content_block_delta" and d["delta"]["type"] == "input_json_delta")
    return json.loads(text) if text else {}


@pytest.mark.parametrize("target", ["anthropic", "ollama"])
@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("arguments,carried", [
    ('{"city": "Paris"}', {"city": "Paris"}),
    ("", {}),
    ('{"city": "Par', None),  # cut off at the backend's token limit
    ('{"a": 1}x', None), ("null", None), ("[1]", None), ('"s"', None), ("not json", None),
    ('{"a": 1, "a": 2}', None),  # a duplicate key: not one object either
])
def test_arguments_that_are_not_one_object_take_the_request_rule(target, kind, arguments, carried):
    """Issue 16 item 1: responses and streams take the request side's rule --
    ``{"_raw_arguments": "<text>"}`` and a recorded loss; one object is carried as it is."""
    t = Transcoder("openai", target, kind=kind)
    out = t.feed(_openai_call(kind, arguments)) + t.close()
    got = _tool_input(target, kind, out)
    lost = [loss for loss in t.losses if "_raw_arguments" in loss.reason]
    if carried is not None:
        assert got == carried and not lost
    else:
        assert got == {"_raw_arguments": arguments} and len(lost) == 1, (got, t.losses)
