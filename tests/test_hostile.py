"""Hostile input (issue 15): a Transcoder that raised stays failed, and every error
says where it is -- those raised past the tokenizer (a reorder budget, strict mode,
the end of a stream) included. The structural fuzzer is tests/test_fuzz.py."""

from __future__ import annotations

import json

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
    their strings is written back as its escape (valid JSON, the same text) -- but in an
    anthropic stream's input_json_delta, whose clients' parser refuses one, as U+FFFD,
    recorded (rpt stream-tool-arguments-lone-surrogate)."""
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
    if (kind, target) == ("stream", "anthropic"):
        assert b"\\udc00" not in out and b"\\ufffd" in out
        assert any("lone surrogate" in loss.reason for loss in t.losses), t.losses
    else:
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


# -- max_value_bytes decides alike at any cut -------------------------------------------
# A value read whole (a model name, a role, an id, a skipped tag) is bounded by its JSON text
# whether it came as one token or in fragments (rpt/value-bound-any-cut): every rpt body up to
# 3 kB, under bounds that break most of them somewhere, whole and fed byte by byte, into every
# target: the same output and losses, or the same error (class, offset, path).

def _small_rpt_scripts():
    from rpt import all_wire_scripts, parse_wire
    scripts = [parse_wire(path) for path in all_wire_scripts()]
    return [pytest.param(s, id=f"{s.scenario}/{s.path.name}") for s in scripts if len(s.body) <= 3000]


def _run_bounded(script, target: str, limit: int, width: int | None):
    options = Options(**{**{k: v for k, v in script.options.items() if k not in ("clock", "entropy")},
                         "max_value_bytes": limit})
    t = Transcoder(script.dialect, target, kind=script.kind, options=options,
                   clock=lambda: 1764579600.5, entropy=lambda n: bytes(n))
    pieces = [script.body] if width is None else [script.body[i:i + width] for i in range(0, len(script.body), width)]
    try:
        out = b"".join(t.feed(p) for p in pieces) + t.close()
    except TranscodeError as exc:
        return None, (type(exc).__name__, exc.offset, exc.path)
    return out, [(loss.path, loss.reason) for loss in t.losses]


@pytest.mark.parametrize("script", _small_rpt_scripts())
def test_max_value_bytes_decides_alike_at_any_cut(script):
    def where(result):
        """An error's location as far as the script says it does not depend on the cut
        (`*`: a reorder budget broken inside a streamed text, rpt/reorder-kept-fragment)."""
        out, said = result
        if out is None and script.error:
            cls, offset, path = said
            said = (cls, None if script.error[2] == "*" else offset, None if script.error[1] == "*" else path)
        return out, said

    for target in ("openai", "anthropic", "ollama"):
        for limit in (8, 40):
            whole = where(_run_bounded(script, target, limit, None))
            assert where(_run_bounded(script, target, limit, 1)) == whole, (target, limit)


# -- a request with no message left -----------------------------------------------------
# openai and anthropic take no request without a message, and ollama reads one as "load the
# model" (an empty reply, not an answer): when every message of the source is lost (a server
# tool call, an image of no known type or by URL, audio, a file) or moved out of the list
# (system prompts, into anthropic's top-level system), the transcoder raises NoMessageError
# at the body's end, the losses recorded; a source whose list was empty already keeps it
# (rpt/request-no-message-left, rpt/request-ollama-no-message-left).
_NO_MESSAGE_LEFT = [
    ("anthropic", b'{"model":"m","max_tokens":64,"messages":[{"role":"assistant","content":[{"type":"server_tool_use",'
                  b'"id":"srvtoolu_01","name":"web_search","input":{"query":"news"}}]}]}', ("openai", "ollama")),
    ("anthropic", b'{"model":"m","max_tokens":64,"messages":[{"role":"user","content":[{"type":"web_search_tool_result",'
                  b'"tool_use_id":"s","content":[]}]}]}', ("openai", "ollama")),
    ("ollama", b'{"model":"m","messages":[{"role":"user","images":["AAAA"]}]}', ("openai", "anthropic")),
    ("ollama", b'{"model":"m","messages":[{"role":"user","content":"","images":["AAAA"]}]}', ("anthropic",)),
    ("openai", b'{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":'
               b'{"data":"AAAA","format":"wav"}}]}]}', ("anthropic", "ollama")),
    ("openai", b'{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}',
     ("anthropic", "ollama")),
    ("openai", b'{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":'
               b'{"url":"https://example.com/a.png"}}]}]}', ("ollama",)),
    ("anthropic", b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":'
                  b'{"type":"url","url":"https://example.com/a.png"}}]}]}', ("ollama",)),
    ("openai", b'{"model":"m","messages":[{"role":"developer","content":"be brief"}]}', ("anthropic",)),
    ("openai", b'{"model":"m","messages":[{"role":"system","content":"be brief"}]}', ("anthropic",)),
]
_SOME_MESSAGE_LEFT = [
    ("anthropic", b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}'),
    ("anthropic", b'{"model":"m","max_tokens":5,"system":"be brief","messages":[]}'),  # (empty already)
    ("openai", b'{"model":"m","messages":[]}'),
    ("ollama", b'{"model":"m","messages":[]}'),
]


@pytest.mark.parametrize("source, body, refused_by", _NO_MESSAGE_LEFT)
def test_a_request_with_no_message_left_is_refused_where_the_target_needs_one(source, body, refused_by):
    from interlingua import NoMessageError
    for target in ("openai", "anthropic", "ollama"):
        if target == source:
            continue
        for width in (None, 1):
            t = Transcoder(source, target)
            pieces = [body] if width is None else [body[i:i + 1] for i in range(len(body))]
            if target in refused_by:
                with pytest.raises(NoMessageError) as info:
                    for piece in pieces:
                        t.feed(piece)
                    t.close()
                assert (info.value.path, info.value.offset, info.value.dialect) == ("$.messages", len(body) - 1, source)
            else:
                out = b"".join(t.feed(p) for p in pieces) + t.close()
                assert "messages" in json.loads(out), target


@pytest.mark.parametrize("source, body", _SOME_MESSAGE_LEFT)
def test_a_request_with_a_message_left_or_none_to_begin_with_is_written(source, body):
    for target in ("openai", "anthropic", "ollama"):
        if target != source:
            t = Transcoder(source, target)
            assert "messages" in json.loads(t.feed(body) + t.close())
