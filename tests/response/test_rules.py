"""Mapping rules of responses (issue #5 §3), each checked through the official clients
where a client exists for the target."""

from __future__ import annotations

import json

import anthropic
import ollama
import openai
import pytest

from interlingua import Decoder, Options, Transcoder, TranscodeError, TruncatedInputError
from interlingua.canonical import Block, Error, Usage
from interlingua.lifecycle import generated_tool_id
from rpt import split_stream_events

import fixed_clock

from clients import FINALS, anthropic_stream, openai_stream, ollama_stream


def run(source, target, kind, body, size=7, options=None):
    t = Transcoder(source, target, kind=kind, options=options)
    out = b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close()
    return out, t


def sse(*events: tuple) -> bytes:
    out = ""
    for event in events:
        name, data = event if len(event) == 2 else (None, event[0])
        data = data if isinstance(data, str) else json.dumps(data)
        out += (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
    return out.encode()


HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "g"}


def chunk(delta=None, finish=None, index=0, **extra):
    body = dict(HEAD, **extra)
    if "choices" not in extra:
        body["choices"] = [{"index": index, "delta": delta or {}, "finish_reason": finish}]
    return (body,)


def test_interleaved_openai_tool_calls_become_sequential_anthropic_blocks():
    tc = lambda i, **kw: {"tool_calls": [dict(index=i, **kw)]}  # noqa: E731
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk(tc(0, id="call_a", type="function", function={"name": "f", "arguments": '{"x":'})),
        chunk(tc(1, id="call_b", type="function", function={"name": "g", "arguments": '{"y":'})),
        chunk(tc(0, function={"arguments": "1}"})),
        chunk(tc(1, function={"arguments": "2}"})),
        chunk(finish="tool_calls"),
        chunk(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
        ("[DONE]",),
    )
    out, t = run("openai", "anthropic", "stream", body)
    starts = [d for e, d in split_stream_events(out) if e == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1]
    got = FINALS["anthropic"]("stream", out)
    assert got.tools == [("call_a", "f", {"x": 1}), ("call_b", "g", {"y": 2})]
    assert t.reorder.high_water_by_reason.get("openai:interleaved-tool-calls", 0) > 0
    # the openai client, fed the same source, agrees
    assert FINALS["openai"]("stream", body).tools == got.tools


def test_usage_chunk_after_finish_reaches_anthropic_message_delta():
    out, t = run("openai", "anthropic", "stream", openai_stream())
    events = split_stream_events(out)
    delta = [d for e, d in events if e == "message_delta"]
    assert len(delta) == 1 and delta[0]["usage"]["output_tokens"] == 7
    assert delta[0]["delta"]["stop_reason"] == "tool_use"
    assert [e for e, _ in events][-2:] == ["message_delta", "message_stop"]
    assert t.reorder.high_water_by_reason["anthropic:finish-before-usage"] == 64


def test_usage_absent_stays_absent():
    body = sse(chunk({"content": "x"}), chunk(finish="stop"), ("[DONE]",))
    events = Decoder("openai", kind="stream").feed(body)
    assert not [e for e in events if type(e) is Usage]
    out, _ = run("openai", "openai", "stream", body)
    assert b"usage" not in out
    out, _ = run("openai", "ollama", "stream", body)
    assert b"eval_count" not in out


def test_cache_tokens_convert_between_anthropic_and_openai():
    body = sse(("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "c", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                                         "cache_creation_input_tokens": 5, "output_tokens": 1}}}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                      "stop_sequence": None},
                                  "usage": {"output_tokens": 9}}),
               ("message_stop", {"type": "message_stop"}))
    out, t = run("anthropic", "openai", "stream", body)
    usage = [d for _, d in split_stream_events(out) if isinstance(d, dict) and d.get("usage")][0]["usage"]
    # the cache write has its openai field (prompt_tokens_details.cache_write_tokens): carried, not lost
    assert usage["prompt_tokens"] == 115
    assert usage["prompt_tokens_details"] == {"cached_tokens": 100, "cache_write_tokens": 5}
    assert usage["completion_tokens"] == 9
    assert t.losses == []
    back, _ = run("openai", "anthropic", "stream", out)
    final = [d for e, d in split_stream_events(back) if e == "message_delta"][0]["usage"]
    assert final["input_tokens"] == 10 and final["cache_read_input_tokens"] == 100
    assert final["cache_creation_input_tokens"] == 5


@pytest.mark.parametrize("target", ["openai", "anthropic", "ollama"])
def test_abort_mid_stream_becomes_the_target_error_event(target):
    body = anthropic_stream()
    cut = body[: len(body) // 2]
    t = Transcoder("anthropic", target, kind="stream")
    out = t.feed(cut)
    with pytest.raises(TruncatedInputError):
        t.close()
    out += t.abort(TruncatedInputError("upstream closed"))
    frames = split_stream_events(out)
    if target == "openai":
        assert frames[-1] == (None, "[DONE]") and "error" in frames[-2][1]
        with pytest.raises(openai.APIError):
            FINALS["openai"]("stream", out)
    elif target == "anthropic":
        assert frames[0][0] == "message_start" and frames[-1][0] == "error"
        with pytest.raises(anthropic.APIStatusError):
            FINALS["anthropic"]("stream", out)
    else:
        assert "error" in frames[-1][1]
        with pytest.raises(ollama.ResponseError):
            FINALS["ollama"]("stream", out)


@pytest.mark.parametrize("kind", ["stream", "response"])
@pytest.mark.parametrize("source", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("error", [None, TruncatedInputError("cut"), Error("api_error", "boom", 502),
                                   Error("rate_limit_error", "slow down", 429), Error("x", "no status")])
def test_openai_error_object_has_no_integer_code(source, kind, error):
    """Every abort into openai, from every source, before or after output: the error object is
    ``{message, type}`` -- openai's ``code`` is a string naming the error (client
    ``ErrorObject.code: Optional[str]``), never the HTTP status."""
    t = Transcoder(source, "openai", kind=kind)
    out = t.abort(error)
    data = out.split(b"data: ", 2)[1].split(b"\n\n")[0] if kind == "stream" else out
    body = json.loads(data)["error"]
    assert set(body) == {"message", "type"}, body


def test_anthropic_error_event_reaches_openai():
    body = anthropic_stream()
    head = body[: body.index(b"event: content_block_stop")]
    body = head + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n'
    out, _ = run("anthropic", "openai", "stream", body)
    with pytest.raises(openai.APIError, match="busy"):
        FINALS["openai"]("stream", out)


def test_reasoning_openai_field_to_anthropic_thinking_and_back():
    opts = Options(openai_reasoning_field="reasoning_content")
    body = sse(chunk({"role": "assistant", "content": ""}), chunk({"reasoning_content": "think"}),
               chunk({"reasoning_content": "ing"}), chunk({"content": "answer"}), chunk(finish="stop"), ("[DONE]",))
    out, _ = run("openai", "anthropic", "stream", body, options=opts)
    got = FINALS["anthropic"]("stream", out)
    assert (got.reasoning, got.text, got.finish) == ("thinking", "answer", "end_turn")
    # without the option, reasoning is never visible text, only a recorded loss
    plain, t = run("anthropic", "openai", "stream", out)
    assert FINALS["openai"]("stream", plain).text == "answer"
    assert b"thinking" not in plain and any("reasoning" in loss.reason for loss in t.losses)
    routed, _ = run("anthropic", "openai", "stream", out, options=opts)
    assert b'"delta":{"reasoning_content":"think"}' in routed and b'"delta":{"reasoning_content":"ing"}' in routed


def test_thinking_signature_passes_byte_for_byte_and_block_order():
    sig = "EqQBCkgIARABGAIiQL+/ab==" * 3
    body = sse(("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "c", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "a"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "thinking_delta", "thinking": "t"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "signature_delta", "signature": sig}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {
            "type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}))
    out, _ = run("anthropic", "anthropic", "stream", body, size=3)
    assert sig.encode() in out
    transport_msg = FINALS["anthropic"]("stream", out)
    assert transport_msg.tools == [("toolu_9", "f", {})]
    events = split_stream_events(out)
    kinds = [(e, d.get("index"), (d.get("content_block") or {}).get("type")) for e, d in events
             if e in ("content_block_start", "content_block_stop")]
    assert kinds == [("content_block_start", 0, "text"), ("content_block_stop", 0, None),
                     ("content_block_start", 1, "thinking"), ("content_block_stop", 1, None),
                     ("content_block_start", 2, "tool_use"), ("content_block_stop", 2, None)]
    resp, _ = run("anthropic", "anthropic", "stream", body)
    assert resp == out


def test_n_greater_than_one_is_a_loss_for_anthropic():
    body = sse(chunk({"content": "zero"}, index=0), chunk({"content": "one"}, index=1),
               chunk(finish="stop", index=0), chunk(finish="stop", index=1), ("[DONE]",))
    blocks = [e for e in Decoder("openai", kind="stream").feed(body) if type(e) is Block]
    assert {b.message for b in blocks} == {0, 1}
    out, t = run("openai", "anthropic", "stream", body)
    assert FINALS["anthropic"]("stream", out).text == "zero"
    assert any("choices" in loss.reason for loss in t.losses)
    same, _ = run("openai", "openai", "stream", body)
    assert split_stream_events(same)[-1] == (None, "[DONE]")
    assert split_stream_events(same) == split_stream_events(body)  # same dialect: frame for frame


@pytest.mark.parametrize("reason,expect", [
    ("stop", {"anthropic": "end_turn", "ollama": "stop"}),
    ("length", {"anthropic": "max_tokens", "ollama": "length"}),
    ("content_filter", {"anthropic": "refusal", "ollama": "stop"}),
])
def test_finish_reasons_from_openai(reason, expect):
    body = sse(chunk({"content": "x"}), chunk(finish=reason), ("[DONE]",))
    out, _ = run("openai", "anthropic", "stream", body)
    assert [d for e, d in split_stream_events(out) if e == "message_delta"][0]["delta"]["stop_reason"] \
        == expect["anthropic"]
    out, _ = run("openai", "ollama", "stream", body)
    assert split_stream_events(out)[-1][1]["done_reason"] == expect["ollama"]


@pytest.mark.parametrize("reason,expect,lossy", [
    ("end_turn", "stop", False), ("stop_sequence", "stop", False), ("max_tokens", "length", False),
    ("tool_use", "tool_calls", False), ("refusal", "content_filter", False), ("pause_turn", "stop", True),
    ("model_context_window_exceeded", "length", False),
])
def test_finish_reasons_from_anthropic(reason, expect, lossy):
    body = anthropic_stream().replace(b'"stop_reason": "tool_use"', f'"stop_reason": "{reason}"'.encode())
    out, t = run("anthropic", "openai", "stream", body)
    assert [d for _, d in split_stream_events(out) if isinstance(d, dict)
            and d.get("choices") and d["choices"][0]["finish_reason"]][0]["choices"][0]["finish_reason"] == expect
    assert any("finish" in loss.reason for loss in t.losses) == lossy


def test_ollama_tool_calls_get_stable_ids():
    """Generated from the response's id and the call's index: the same for any cut."""
    one, _ = run("ollama", "openai", "stream", ollama_stream())
    two, _ = run("ollama", "openai", "stream", ollama_stream(), size=1)
    response_id = split_stream_events(one)[0][1]["id"]
    assert one == two and b'"id":"' + generated_tool_id(response_id, 0).encode() + b'"' in one


def test_every_stream_has_its_terminator_even_without_the_source_one():
    body = sse(chunk({"content": "x"}), chunk(finish="stop"))  # no [DONE]
    for target, last in (("openai", (None, "[DONE]")), ("anthropic", "message_stop"), ("ollama", True)):
        out, _ = run("openai", target, "stream", body)
        frame = split_stream_events(out)[-1]
        if target == "anthropic":
            assert frame[0] == last and split_stream_events(out)[0][0] == "message_start"
        elif target == "ollama":
            assert frame[1]["done"] is True
        else:
            assert frame == last


def test_truncated_stream_is_an_error_not_a_success():
    for source, body in (("openai", openai_stream()), ("anthropic", anthropic_stream()),
                         ("ollama", ollama_stream())):
        cut = body[: len(body) * 2 // 3]
        with pytest.raises(TranscodeError):
            run(source, "openai", "stream", cut)


def test_openai_chunk_head_follows_a_late_start_and_late_fields():
    """The stream encoder keeps each chunk's head bytes; a MessageStart or a kept
    field arriving mid-stream still shows in the chunks after it."""
    from interlingua.canonical import End, Extension, Finish, MessageStart, Section
    from interlingua.dialects import codecs
    from interlingua.framing import FrameEnd
    from interlingua.session import Session

    _, encoder_cls = codecs("openai", "stream")
    out = []
    encoder = encoder_cls(out.append, Session(None, source="openai", target="openai"))
    text = lambda data, init=False, fin=False: Block(Section.ASSISTANT_TEXT, 0, data, init, fin)
    for event in (MessageStart("a", "m1"), text(b"x", init=True), FrameEnd(),
                  Extension("openai", "$.system_fingerprint", b'"fp"', lossless=True), text(b"y"), FrameEnd(),
                  MessageStart("b", "m2"), Extension("openai", "$.created", b"7", lossless=True),
                  text(b"z", fin=True), FrameEnd(), Finish("end_turn"), End()):
        encoder.on_event(event)
    chunks = [d for _, d in split_stream_events(b"".join(out)) if d != "[DONE]"]
    heads = [(c["id"], c["model"], c["created"], c.get("system_fingerprint")) for c in chunks]
    now = int(fixed_clock.CLOCK)  # no source time yet: the clock (lifecycle: response ids and times)
    assert heads == [("a", "m1", now, None)] * 2 + [("a", "m1", now, "fp")] + [("b", "m2", 7, "fp")] * 2
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "xyz"


@pytest.mark.parametrize("target", ["openai", "ollama"])
def test_a_stop_in_message_start_is_a_recorded_loss_not_a_silent_drop(target):
    """message_start's stop fields are null by the protocol (message_delta has the stop);
    a value there is not read as the stop, and is recorded, never dropped silently."""
    body = sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": "end_turn", "stop_sequence": "###", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    )
    out, t = run("anthropic", target, "stream", body)
    paths = [loss.path for loss in t.losses]
    assert "$.message.stop_sequence" in paths and "$.message.stop_reason" in paths, paths
    same, t_same = run("anthropic", "anthropic", "stream", body)
    assert not t_same.losses and split_stream_events(same) == split_stream_events(body)
