"""``Transcoder.abort`` after the source has said all, and the transcoder after ``abort``
(README "Response fidelity": abort), both backends, every pair:

* after the source's last event an abort is its close: the same bytes, no error event after
  the end -- at every cut of the stream, a same-dialect copy as any other pair (a copy wrote
  an error event after ``message_stop`` / ``done`` / ``[DONE]``, which the clients raised on);
* after the source's own error event an abort adds no second error (openai: only ``[DONE]``);
* the output has ended: ``feed`` and ``close`` raise ``TranscodeError``, ``abort`` adds nothing
  (a copy went on writing frames after its error, a response body after its error body);
* the error event is written whatever the exception's text holds (a lone surrogate of
  ``surrogateescape``), and anthropic's own error types come through.
"""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder, TranscodeError
from interlingua.canonical import Error
from interlingua.pipeline import ABORTED
from official_clients import read_stream

DIALECTS = ("openai", "anthropic", "ollama")

STREAMS = {
    "openai": (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"),
    "anthropic": (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
        b'"stop_sequence":null},"usage":{"output_tokens":2}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'),
    "ollama": (
        b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi"},'
        b'"done":false}\n'
        b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},'
        b'"done":true,"done_reason":"stop"}\n'),
}
ERROR_FRAMES = {
    "openai": b'data: {"error":{"message":"busy","type":"server_error"}}\n\n',
    "anthropic": b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n',
    "ollama": b'{"error":"busy"}\n',
}
RESPONSES = {
    "openai": b'{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
              b'"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}',
    "anthropic": b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text",'
                 b'"text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,'
                 b'"output_tokens":1}}',
    "ollama": b'{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",'
              b'"content":"Hi"},"done":true,"done_reason":"stop"}',
}
HOOKS = {"clock": lambda: 1764579600.5, "entropy": lambda n: bytes(n)}


def _error_events(target: str, out: bytes) -> int:
    """How many of the output's events are errors."""
    if target == "ollama":
        return sum('"error"' in line for line in out.decode().splitlines())
    return sum(b'"error"' in frame for frame in out.split(b"\n\n"))


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_an_abort_after_the_source_said_all_is_its_close(source, target, backend):
    body = STREAMS[source]
    ended_at = []
    for cut in range(len(body) + 1):
        aborted = Transcoder(source, target, kind="stream", **HOOKS)
        out = aborted.feed(body[:cut]) + aborted.abort(ConnectionResetError("reset"))
        closed = Transcoder(source, target, kind="stream", **HOOKS)
        try:
            whole = closed.feed(body[:cut]) + closed.close()
        except TranscodeError:
            continue  # the source has not said all: the abort's error event ends it
        ended_at.append(cut)
        assert out == whole, cut
        _, exc = read_stream(target, out)
        assert exc is None, (cut, exc)
    assert ended_at and ended_at[-1] == len(body)  # (the property held somewhere: at the end, at least)


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_an_abort_after_the_source_s_error_adds_no_second_error(source, target, backend):
    t = Transcoder(source, target, kind="stream", **HOOKS)
    out = t.feed(ERROR_FRAMES[source])
    out += t.abort(ConnectionResetError("reset"))
    assert _error_events(target, out) == 1, out
    if target == "openai":
        assert out.endswith(b"data: [DONE]\n\n") and out.count(b"[DONE]") == 1, out


@pytest.mark.parametrize("kind", ["request", "response", "stream"])
@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_after_abort_the_output_has_ended(source, target, kind, backend):
    body = {"stream": STREAMS, "response": RESPONSES}.get(kind, {}).get(source, b'{"model":"m","messages":[')
    half = body[:len(body) // 2]
    t = Transcoder(source, target, kind=kind, **HOOKS)
    t.feed(half)
    t.abort()
    assert t.abort() == b""
    for step in (lambda: t.feed(body[len(half):]), t.close):
        with pytest.raises(TranscodeError) as raised:
            step()
        assert str(raised.value) == ABORTED


def test_an_earlier_error_stays_the_one_raised(backend):
    t = Transcoder("openai", "anthropic", kind="stream", **HOOKS)
    with pytest.raises(TranscodeError) as first:
        t.feed(b"data: {]\n\n")
    t.abort(first.value)
    with pytest.raises(TranscodeError) as again:
        t.feed(b"")
    assert str(again.value) == str(first.value)


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("error", [
    RuntimeError(b"bad gateway \xff".decode("utf-8", "surrogateescape")),
    Error("api_error", "lone \udcff"),
    Error("rate_limit_error", 5),  # (not a str: its text)
    Error(None, "no type"),  # (not a str: api_error)
    Error("api_error", "status beyond 64 bits", 1 << 70),  # (a status is written nowhere)
], ids=["surrogateescape", "lone-surrogate", "int-message", "no-type", "huge-status"])
def test_the_error_event_is_written_whatever_the_error_holds(target, error, backend):
    t = Transcoder("openai", target, kind="stream", **HOOKS)
    t.feed(STREAMS["openai"][:STREAMS["openai"].index(b"data: ", 10)])
    out = t.abort(error)
    texts = [line[len(b"data: "):] if line.startswith(b"data: ") else line for line in out.splitlines()]
    docs = [json.loads(text) for text in texts if text.startswith(b"{")]
    assert docs and all(isinstance(v, str) for d in docs for v in _error_object(d).values()), docs


def _error_object(doc: dict) -> dict:
    error = doc["error"]
    return error if isinstance(error, dict) else {"message": error}


@pytest.mark.parametrize("kind", ["timeout_error", "billing_error", "overloaded_error", "rate_limit_error",
                                  "authentication_error", "permission_error", "not_found_error",
                                  "invalid_request_error", "api_error"])
def test_anthropic_s_own_error_types_come_through(kind, backend):
    t = Transcoder("openai", "anthropic", kind="stream", **HOOKS)
    t.feed(STREAMS["openai"][:STREAMS["openai"].index(b"data: ", 10)])
    out = t.abort(Error(kind, "m", 504))
    assert json.loads(out.split(b"data: ")[-1])["error"]["type"] == kind
    assert json.loads(Transcoder("openai", "anthropic", kind="response", **HOOKS).abort(Error(kind, "m")))[
        "error"]["type"] == kind


class _Status(Exception):
    """An exception with an HTTP status, as the official clients' ``APIStatusError`` has it."""

    def __init__(self, status_code, message: str = "upstream said no") -> None:
        super().__init__(message)
        self.status_code = status_code


def _httpx_status_error(status: int) -> Exception:
    import httpx
    request = httpx.Request("POST", "http://upstream/v1/messages")
    return httpx.HTTPStatusError("upstream said no", request=request, response=httpx.Response(status, request=request))


@pytest.mark.parametrize("error,kind", [
    (_Status(429), "rate_limit_error"), (_Status(401), "authentication_error"), (_Status(529), "overloaded_error"),
    (_Status(504), "timeout_error"), (_Status(418), "invalid_request_error"), (_Status(599), "api_error"),
    (_httpx_status_error(503), "overloaded_error"), (_httpx_status_error(404), "not_found_error"),
    (_Status(True), "api_error"), (_Status(99), "api_error"), (_Status("429"), "api_error"),  # (no status)
    (ConnectionResetError("reset"), "api_error"),
], ids=["429", "401", "529", "504", "418", "599", "httpx-503", "httpx-404", "bool", "99", "str", "no-status"])
def test_an_exception_s_http_status_gives_the_error_its_kind(error, kind, backend):
    t = Transcoder("openai", "anthropic", kind="stream", **HOOKS)
    t.feed(STREAMS["openai"][:STREAMS["openai"].index(b"data: ", 10)])
    out = t.abort(error)
    assert json.loads(out.split(b"data: ")[-1])["error"]["type"] == kind
