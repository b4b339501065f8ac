"""Same-dialect responses and streams are copied (interlingua.passthrough): frame for frame,
validated by the decoder, bounded memory, a clean error frame on abort."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from interlingua import Options, Transcoder, TranscodeError
from interlingua.passthrough import FRAME_HOLD
from rpt import split_stream_events

_CHUNK = ('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","obfuscation":"x",'
          '"choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":%s}]}\n\n')
OPENAI = ((_CHUNK % ("a\\u00e9\\n", "null")) + (_CHUNK % ("", "null")) + (_CHUNK % ("b", '"stop"'))
          + "data: [DONE]\n\n").encode()
ANTHROPIC = b"".join(
    b"event: " + name.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n" for name, data in [
        ("message_start", {"type": "message_start", "message": {
            "id": "m1", "type": "message", "role": "assistant", "model": "c", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("ping", {"type": "ping"}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 2, "future_count": 1}}),
        ("message_stop", {"type": "message_stop"})])
OLLAMA = (b'{"model":"m","created_at":"t","message":{"role":"assistant","content":"a"},"done":false}\n'
          b'{"model":"m","created_at":"t","message":{"role":"assistant","content":""},"done":true,'
          b'"done_reason":"stop","eval_count":1,"future":{"x":1}}\n')
STREAMS = {"openai": OPENAI, "anthropic": ANTHROPIC, "ollama": OLLAMA}


def _run(dialect, body, cuts, kind="stream", options=None):
    t = Transcoder(dialect, dialect, kind=kind, options=options)
    out, last = b"", 0
    for cut in sorted(set(cuts)) + [len(body)]:
        out += t.feed(body[last:cut])
        last = cut
    return out + t.close(), t


@pytest.mark.parametrize("dialect", STREAMS)
@given(cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_stream_is_copied_frame_for_frame_at_any_cut(dialect, cuts):
    body = STREAMS[dialect]
    out, t = _run(dialect, body, [c for c in cuts if c < len(body)])
    assert out == body  # these sources are written in the copy's own framing: byte for byte
    assert t.losses == []


def test_sse_framing_is_normalised_not_the_data():
    """Comments, id lines, CRLF and several data lines are framing: the data and event names stay."""
    body = (b": comment\r\nid: 7\r\nevent: ping\r\ndata: {"
            b'"type":\r\ndata: "ping"}\r\n\r\n')
    head = ANTHROPIC[:ANTHROPIC.index(b"event: ping")]
    tail = ANTHROPIC[ANTHROPIC.index(b"event: content_block_start"):]
    out, _ = _run("anthropic", head + body + tail, [])
    assert split_stream_events(out) == split_stream_events(head + body + tail)
    assert b'event: ping\ndata: {"type":\ndata: "ping"}\n\n' in out


def test_event_name_after_the_data_is_kept():
    body = ANTHROPIC.replace(b'event: ping\ndata: {"type": "ping"}\n\n', b'data: {"type": "ping"}\nevent: ping\n\n')
    out, _ = _run("anthropic", body, [])
    assert split_stream_events(out) == split_stream_events(body)


def test_openai_stream_without_done_gets_it():
    body = OPENAI[:OPENAI.index(b"data: [DONE]")]
    out, _ = _run("openai", body, [])
    assert out == OPENAI


@pytest.mark.parametrize("dialect", STREAMS)
def test_abort_mid_frame_writes_whole_frames_then_the_error(dialect, backend):
    body = STREAMS[dialect]
    for cut in range(1, len(body) - 1, 7):
        t = Transcoder(dialect, dialect, kind="stream")
        out = t.feed(body[:cut])
        try:
            out += t.close()
        except TranscodeError:
            pass
        else:
            continue  # the cut fell where the stream may end
        out += t.abort(TranscodeError("upstream closed"))
        frames = split_stream_events(out)
        assert frames[:-2 if dialect == "openai" else -1] == split_stream_events(body)[:len(frames) - (
            2 if dialect == "openai" else 1)]
        last = frames[-2 if dialect == "openai" else -1][1]
        assert "error" in last and "upstream closed" in json.dumps(last)


def test_bad_input_raises_and_output_is_a_prefix():
    body = OPENAI.replace(b'"content":"b"', b'"content":5')
    t = Transcoder("openai", "openai", kind="stream")
    with pytest.raises(TranscodeError) as info:
        t.feed(body)
    assert info.value.path == "$.choices[0].delta.content"
    out = t.pending_output()
    assert body.startswith(out) and out.endswith(b"\n\n")


def test_a_frame_longer_than_the_hold_streams_in_bounded_memory():
    text = "x" * (3 * FRAME_HOLD)
    body = (_CHUNK % (text, "null") + _CHUNK % ("", '"stop"') + "data: [DONE]\n\n").encode()
    t = Transcoder("openai", "openai", kind="stream")
    outs = [t.feed(body[i:i + 8192]) for i in range(0, len(body), 8192)] + [t.close()]
    assert b"".join(outs) == body
    # output follows the input within the hold: no chunk's output is much larger than the chunk
    assert max(len(o) for o in outs) <= FRAME_HOLD + 2 * 8192


def test_body_is_copied_chunk_by_chunk_and_abort_before_output_is_an_error_body():
    body = (b'{"id":"c","object":"chat.completion","created":1,"model":"m","system_fingerprint":"fp",'
            b'"choices":[{"index":0,"message":{"role":"assistant","content":"hi","annotations":[]},'
            b'"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,'
            b'"total_tokens":2,"prompt_tokens_details":{"audio_tokens":0}}}')
    out, t = _run("openai", body, range(0, len(body), 3), kind="response", options=Options(strict=True))
    assert out == body and t.losses == []
    t = Transcoder("openai", "openai", kind="response")
    assert json.loads(t.abort(TranscodeError("down")))["error"]["message"] == "down"
