"""An aborted stream is one each dialect's official client reads to its typed API error
(README "Response fidelity": abort), whatever was on the wire when the source failed: every
source x target pair, cuts below and above ``FRAME_HOLD``, a frame cut short, a budget error
and a non-JSON frame, both backends."""

from __future__ import annotations

import json

import anthropic
import ollama
import openai
import pytest

from interlingua import Transcoder, TranscodeError
from official_clients import read_stream
from rpt import split_stream_events

DIALECTS = ("openai", "anthropic", "ollama")
BIG = 80_000  # past FRAME_HOLD: a same-dialect copy streams the frame
HUGE = 1 << 20

_OPENAI_HEAD = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
                b'"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n')
_ANTHROPIC_HEAD = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n')
_OLLAMA_HEAD = (b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",'
                b'"content":"hi"},"done":false}\n')

# a frame cut short inside a long text: the source went away
CUT_SHORT = {
    "openai": _OPENAI_HEAD + b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
                             b'"choices":[{"index":0,"delta":{"content":"' + b"x" * BIG,
    "anthropic": _ANTHROPIC_HEAD + b'event: content_block_delta\ndata: {"type":"content_block_delta",'
                                   b'"index":0,"delta":{"type":"text_delta","text":"' + b"x" * BIG,
    "ollama": _OLLAMA_HEAD + b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":'
                             b'{"role":"assistant","content":"' + b"x" * BIG,
}
# a value over its budget (the decoder raises inside the frame)
HUGE_MODEL = {
    "openai": b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"' + b"m" * HUGE
              + b'","choices":[]}\n\n',
    "anthropic": b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
                 b'"type":"message","role":"assistant","model":"' + b"m" * HUGE + b'"}}\n\n',
    "ollama": b'{"model":"' + b"m" * HUGE + b'","created_at":"2025-01-01T00:00:00Z","done":false}\n',
}
# a frame that is not JSON at all
NOT_JSON = {
    "openai": _OPENAI_HEAD + b"data: " + b"z" * HUGE + b"\n\n",
    "anthropic": _ANTHROPIC_HEAD + b"event: content_block_delta\ndata: " + b"z" * HUGE + b"\n\n",
    "ollama": _OLLAMA_HEAD + b"z" * HUGE + b"\n",
}
BODIES = {"cut-short": CUT_SHORT, "huge-model": HUGE_MODEL, "not-json": NOT_JSON}
API_ERROR = {"openai": openai.APIError, "anthropic": anthropic.APIStatusError, "ollama": ollama.ResponseError}
FRAME_END = {"openai": b"\n\n", "anthropic": b"\n\n", "ollama": b"\n"}


def _aborted(source: str, target: str, body: bytes, cut: int | None) -> tuple[bytes, bytes]:
    """(output before the abort, the whole output) for ``body`` fed in ``cut``-byte pieces."""
    t = Transcoder(source, target, kind="stream")
    out = b""
    error: BaseException = ConnectionResetError("upstream went away")
    pieces = [body] if cut is None else [body[i:i + cut] for i in range(0, len(body), cut)]
    try:
        for piece in pieces:
            out += t.feed(piece)
    except TranscodeError as exc:
        out += t.pending_output()
        error = exc
    return out, out + t.abort(error)


@pytest.mark.parametrize("cut", [8192, 65536, None], ids=["8192", "65536", "whole"])
@pytest.mark.parametrize("case", sorted(BODIES))
@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_an_aborted_stream_ends_with_the_error_event_its_client_raises(source, target, case, cut, backend):
    before, out = _aborted(source, target, BODIES[case][source], cut)
    frames = split_stream_events(out)
    last = frames[-2] if target == "openai" else frames[-1]
    assert "error" in json.dumps(last[1]), frames[-2:]
    if target == "openai":
        assert frames[-1][1] == "[DONE]"
    if target == "anthropic":
        assert last[0] == "error"
    # a copy streams a frame past FRAME_HOLD before it is accepted (an encoder ends its own frame)
    broken = source == target and bool(before) and not before.endswith(FRAME_END[target])
    _, exc = read_stream(target, out)
    if broken and target != "anthropic":
        # the openai and ollama clients parse every frame: they fail on the broken one
        assert isinstance(exc, json.JSONDecodeError), exc
    else:
        assert isinstance(exc, API_ERROR[target]), repr(exc)
