"""Real HTTP servers on loopback for the proxy tests: uvicorn in a thread, and replaying upstreams.

``Upstream`` is one ASGI app answering all three dialects' chat paths (so one
server thread stands for an openai, an anthropic and an ollama backend). For
each request it

* reads the body and checks it with its own dialect's official request type
  (openai ``CompletionCreateParams*``, anthropic ``MessageCreateParams``,
  ollama ``ChatRequest``) and with the rules its API enforces beyond them
  (tests/validity.py: a ``json_object`` no message says "json" for, a blank stop
  sequence...); a body either refuses gets 422 and is recorded;
* picks what to answer from the model name ``<anything>/<scenario>``: an rpt
  response scenario (``rpt/<scenario>/<dialect>.<stream|response>.rpt``),
  streamed frame by frame with ``pace`` seconds between frames, or a fault:
  ``fault-<status>`` (an error body of its dialect), ``fault-drop`` (the
  connection dropped mid-stream), ``fault-slow-start`` / ``fault-slow-mid``
  (silent for ``SLOW`` seconds before the first byte / after three frames),
  ``fault-hang`` (three frames, then waits for the connection to close and
  records when it did), ``fault-badjson`` / ``fault-cut`` (three frames, then a frame
  that is not JSON / a clean end without the stream's last event; a JSON answer: its first two
  thirds, then a clean end / ``fault-drop`` a dropped connection), ``echo-tool`` (a JSON answer calling the request's
  first tool by the name it arrived with), ``fault-redirect`` (a 307 to ``redirect_to``, another origin),
  and ``twist-<how>``: a valid answer that bends HTTP: ``twist-upper`` (its content type upper-cased),
  ``twist-gzip`` / ``twist-deflate`` / ``twist-br`` (compressed though the proxy asks ``identity``; a
  stream frame by frame, flushed), ``twist-gzip-<status>`` (a gzipped error body), ``twist-json`` /
  ``twist-stream`` (JSON whatever was asked / a stream whatever was asked), ``twist-linger`` (the whole
  answer, then the body kept open until the connection closes, whose time is recorded).

Every answer carries the upstream's request id (``request-id`` from anthropic, ``x-request-id`` from the
others: ``REQUEST_ID``); a 429 also ``retry-after``, ``retry-after-ms`` and rate-limit headers (``RATE_LIMITED``).

Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field

import anyio
import uvicorn

import validity
from rpt import RPT_ROOT, parse_wire, split_frames

PATHS = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic", "/api/chat": "ollama"}
SLOW = 2.0
CONTENT_TYPES = {"openai": "text/event-stream", "anthropic": "text/event-stream", "ollama": "application/x-ndjson"}
REQUEST_ID = b"req_upstream_1"
RATE_LIMITED = [(b"retry-after", b"7"), (b"retry-after-ms", b"7000"), (b"x-ratelimit-remaining-requests", b"0"),
                (b"anthropic-ratelimit-requests-remaining", b"0")]


def id_header(dialect: str) -> tuple[bytes, bytes]:
    return (b"request-id" if dialect == "anthropic" else b"x-request-id", REQUEST_ID)


def compressor(how: str):
    """A streaming compressor for a content-encoding (zlib's; br is only named, never decoded by the proxy)."""
    return zlib.compressobj(wbits=31 if how in ("gzip", "br") else 15)


class Server:
    """An ASGI app served by uvicorn in a daemon thread on 127.0.0.1 (an ephemeral port)."""

    def __init__(self, app, **config) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                                    **config))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        self.sock.close()


@functools.cache
def _official_check(dialect: str):
    """The validator of a request body in ``dialect``: its official client's request type."""
    from pydantic import TypeAdapter
    if dialect == "openai":
        from openai.types.chat.completion_create_params import (
            CompletionCreateParamsNonStreaming, CompletionCreateParamsStreaming,
        )
        streaming, plain = TypeAdapter(CompletionCreateParamsStreaming), TypeAdapter(CompletionCreateParamsNonStreaming)
        return lambda body: (streaming if body.get("stream") else plain).validate_python(body, strict=False)
    if dialect == "anthropic":
        from anthropic.types import MessageCreateParams
        adapter = TypeAdapter(MessageCreateParams)
        return adapter.validate_python
    from ollama._types import ChatRequest
    return ChatRequest.model_validate


#: a frame whose data is not JSON, in each dialect's framing (fault-badjson)
BROKEN_FRAMES = {"openai": b'data: {"oops\n\n', "anthropic": b'event: content_block_delta\ndata: {"oops\n\n',
                 "ollama": b'{"oops\n'}


def wants_stream(dialect: str, body: dict) -> bool:
    return body.get("stream", dialect == "ollama") is True  # ollama streams when stream is absent


def scenario_bytes(scenario: str, dialect: str, kind: str) -> bytes:
    return parse_wire(RPT_ROOT / scenario / f"{dialect}.{kind}.rpt").body


def error_body(dialect: str, status: int) -> bytes:
    message = f"upstream says {status}"
    if dialect == "anthropic":
        kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                 500: "api_error", 529: "overloaded_error"}
        return json.dumps({"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}).encode()
    if dialect == "openai":
        return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                     "code": None}}).encode()
    return json.dumps({"error": message}).encode()


def echo_tool_answer(dialect: str, request: dict) -> bytes:
    tool = request["tools"][0]
    name = tool["name"] if dialect == "anthropic" else tool["function"]["name"]
    if dialect == "anthropic":
        return json.dumps({"id": "msg_e", "type": "message", "role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": "toolu_e", "name": name, "input": {"q": 1}}], "stop_reason": "tool_use",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
    if dialect == "openai":
        return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_e", "type": "function", "function": {"name": name, "arguments": '{"q": 1}'}}]},
             "finish_reason": "tool_calls"}]}).encode()
    return json.dumps({"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": {
        "role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": {"q": 1}}}]},
        "done": True, "done_reason": "stop"}).encode()


@dataclass
class Received:
    dialect: str
    body: bytes
    headers: dict
    valid: bool
    problem: str | None = None
    closed_at: float | None = None  # fault-hang: when the upstream saw its connection close
    sent_at: float | None = None


@dataclass
class Upstream:
    pace: float = 0.001
    received: list[Received] = field(default_factory=list)
    url: str = ""  # set once served
    redirect_to: str = ""  # fault-redirect's other origin

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        dialect = PATHS.get(scope["path"])
        record = Received(dialect, b"", {k.decode(): v.decode() for k, v in scope["headers"]}, True)
        self.received.append(record)  # at once: a test can watch the body arrive
        more = True
        while more:
            message = await receive()
            record.body += message.get("body", b"")
            more = message.get("more_body", False)
        raw = record.body
        try:
            body = json.loads(raw)
            _official_check(dialect)(body)
            broken = validity.check(dialect, "request", raw, enforced_only=True)
            if broken:
                raise ValueError(f"the {dialect} API refuses it: {broken}")
        except Exception as exc:  # noqa: BLE001 -- reported to the test through the status and the record
            record.valid, record.problem = False, repr(exc)[:2000]
            await self._plain(send, 422, error_body(dialect, 422))
            return
        scenario, _, pace = str(body.get("model", "")).rpartition("/")[2].partition("@")
        if scenario == "echo-tool":  # answer calling the first tool under the name it was given
            await self._plain(send, 200, echo_tool_answer(dialect, body))
            return
        if scenario == "fault-redirect":
            await send({"type": "http.response.start", "status": 307, "headers": [
                (b"location", (self.redirect_to + scope["path"]).encode()), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scenario.startswith("twist-"):
            await self._twist(scenario[6:], dialect, wants_stream(dialect, body), send, receive, record)
            return
        await self._answer(scenario, dialect, wants_stream(dialect, body), send, receive, record,
                           float(pace) if pace else self.pace)

    async def _plain(self, send, status: int, body: bytes, content_type: str = "application/json",
                     dialect: str = "openai", headers=()) -> None:
        headers = [(b"content-type", content_type.encode()), id_header(dialect), *headers]
        if status == 429:
            headers += RATE_LIMITED
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _twist(self, how: str, dialect: str, stream: bool, send, receive, record: Received) -> None:
        if how.startswith("gzip-"):
            status = int(how[5:])
            gz = compressor("gzip")
            await self._plain(send, status, gz.compress(error_body(dialect, status)) + gz.flush(), dialect=dialect,
                              headers=[(b"content-encoding", b"gzip")])
            return
        stream = {"json": False, "stream": True}.get(how, stream)
        content_type = CONTENT_TYPES[dialect] if stream else "application/json"
        headers = [(b"content-type", (content_type.upper() if how == "upper" else content_type).encode()),
                   id_header(dialect)]
        pack = None
        if how in ("gzip", "deflate", "br"):
            headers.append((b"content-encoding", how.encode()))
            packer = compressor(how)
            pack = lambda data: packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)  # noqa: E731
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = scenario_bytes("response-text-tool", dialect, "stream" if stream else "response")
        for piece in split_frames(dialect, body) if stream else [body]:
            await send({"type": "http.response.body", "body": pack(piece) if pack else piece, "more_body": True})
        if pack:
            await send({"type": "http.response.body", "body": packer.flush(), "more_body": True})
        if how == "linger":  # the whole answer, and no end: until the proxy closes the connection
            with anyio.move_on_after(10):
                while (await receive())["type"] != "http.disconnect":
                    pass
                record.closed_at = time.monotonic()
            return
        await send({"type": "http.response.body", "body": b""})

    async def _answer(self, scenario: str, dialect: str, stream: bool, send, receive, record: Received,
                      pace: float) -> None:
        if scenario.startswith("fault-") and scenario[6:].isdigit():
            await self._plain(send, int(scenario[6:]), error_body(dialect, int(scenario[6:])), dialect=dialect)
            return
        if scenario == "fault-slow-start":
            await anyio.sleep(SLOW)
        source = "response-text-tool" if scenario.startswith("fault-") else scenario
        kind = "stream" if stream else "response"
        body = scenario_bytes(source, dialect, kind)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", (CONTENT_TYPES[dialect] if stream else "application/json").encode()),
                                id_header(dialect)]})
        if not stream and scenario in ("fault-drop", "fault-cut"):  # a JSON answer that stops two thirds in
            third = len(body) // 3
            for piece in (body[:third], body[third:2 * third]):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                await anyio.sleep(pace)
            if scenario == "fault-drop":
                raise ConnectionResetError("test upstream drops the connection mid-answer")
            await send({"type": "http.response.body", "body": b""})
            return
        if not stream:
            await send({"type": "http.response.body", "body": body})
            return
        pieces = split_frames(dialect, body)
        for i, piece in enumerate(pieces):
            if i == 3 and scenario in ("fault-drop", "fault-slow-mid", "fault-hang", "fault-badjson", "fault-cut"):
                break
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await anyio.sleep(pace)
        else:
            await send({"type": "http.response.body", "body": b""})
            return
        if scenario in ("fault-badjson", "fault-cut"):  # a clean end of a broken stream
            await send({"type": "http.response.body", "body": BROKEN_FRAMES[dialect] if scenario == "fault-badjson"
                        else b""})
            return
        if scenario == "fault-drop":
            raise ConnectionResetError("test upstream drops the connection mid-stream")
        if scenario == "fault-slow-mid":
            await anyio.sleep(SLOW)
            await send({"type": "http.response.body", "body": b""})
            return
        record.sent_at = time.monotonic()
        with anyio.move_on_after(10):  # fault-hang: until the proxy closes the connection
            while (await receive())["type"] != "http.disconnect":
                pass
            record.closed_at = time.monotonic()


def proxy_config(upstream_url: str, **server) -> dict:
    """Backends ``openai/*``, ``anthropic/*``, ``ollama/*`` (and ``slow-<dialect>/*`` with a 0.3 s read timeout)."""
    backends = []
    for dialect in ("openai", "anthropic", "ollama"):
        backends.append({"name": dialect, "dialect": dialect, "url": upstream_url, "models": [f"{dialect}/*"],
                         "api_key": f"upstream-key-{dialect}"})
        backends.append({"name": f"slow-{dialect}", "dialect": dialect, "url": upstream_url,
                         "models": [f"slow-{dialect}/*"], "read_timeout": 0.3})
    return {"server": {"log_requests": True, **server}, "backends": backends}


@contextlib.contextmanager
def running(pace: float = 0.001, **server):
    """An upstream server and a proxy in front of it: yields (proxy Server, Upstream app)."""
    from interlingua.proxy import create_app
    upstream = Upstream(pace)
    with Server(upstream) as up:
        upstream.url = up.url
        with Server(create_app(proxy_config(up.url, **server))) as proxy:
            yield proxy, upstream
