"""The ASGI 3 application: clients of any dialect in, the backend chosen by model, any dialect out.

``create_app(config)`` returns a plain ASGI callable (no framework), so it
mounts in any ASGI server or framework. Per chat request:

1. **Auth** (when ``server.api_keys`` is set): ``Authorization: Bearer K`` or
   ``x-api-key: K``; else 401 in the client's dialect.
2. **Routing.** The client body is decoded as it arrives until its ``model``
   is read (the raw chunks read so far are held: official clients write
   ``model`` after ``messages``, so this can be the whole body, bounded by
   ``max_body_bytes``); the first backend whose ``models`` match gets it, none
   gives 404. With one backend matching every model (``"*"``) and no rename,
   nothing is held.
3. **Forwarding.** The body is transcoded chunk by chunk into the backend's
   dialect and sent upstream as it is produced (a chunked request body),
   with the backend's own credentials; none of the client's headers go
   upstream. A body that is not valid gives 400 naming offset and JSON path
   (the upstream request is dropped); over ``max_body_bytes``, 413.
4. **The response** is transcoded frame by frame into the client's dialect
   and flushed per piece; SSE or NDJSON (the upstream's content type decides
   stream or not). A non-2xx upstream answer becomes the client dialect's
   error body (``errors.client_status``). A failure or timeout after the
   response started ends it with ``Transcoder.abort`` (the client dialect's
   error event). A client that disconnects cancels the upstream request at
   once (its connection is closed, not pooled).
5. **Losses.** ``x-interlingua-losses`` counts the request's losses (all known
   before the response starts); one structured log line per request
   (logger ``interlingua.proxy``) lists request and response losses.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import aclosing

import anyio
import msgspec

from ..aio import aclose_quietly
from ..errors import TranscodeError
from ..pipeline import Decoder, Transcoder
from ..canonical import Control, Error
from .config import Backend, Config
from .errors import client_status, error_body, transcode_error_body, upstream_message
from .upstream import Response, UpstreamError, make_upstream

log = logging.getLogger("interlingua.proxy")

CHAT_ROUTES = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic", "/api/chat": "ollama"}
JSON = b"application/json"
STREAM_TYPES = {"openai": b"text/event-stream", "anthropic": b"text/event-stream", "ollama": b"application/x-ndjson"}
LOSS_HEADER = b"x-interlingua-losses"
#: the methods each route takes (the ``Allow`` header of its 405); ``b"chat"`` stands for every chat route
_ALLOWED = {b"chat": b"POST", "/healthz": b"GET, HEAD", "/v1/models": b"GET", "/api/tags": b"GET"}
ERROR_BODY_LIMIT = 64 << 10  # what is read of an upstream's error body
#: an error no retry can fix: the openai and anthropic clients then do not retry (they would 3 times)
NO_RETRY = (b"x-should-retry", b"false")
#: upstream headers the client gets as they came: when to retry, and the rate limits
PASSED = frozenset((b"retry-after", b"retry-after-ms"))
PASSED_PREFIXES = (b"x-ratelimit-", b"anthropic-ratelimit-")
#: the upstream's request id, under the name the client's SDK reads (openai ``x-request-id``, anthropic ``request-id``)
REQUEST_ID = {"openai": b"x-request-id", "anthropic": b"request-id", "ollama": b"x-request-id"}
DRAIN_SECONDS, DRAIN_LIMIT = 0.25, 64 << 10  # read after a stream's last event, waiting for the upstream's end


class ClientDisconnected(Exception):
    """The client went away (``http.disconnect``) before its body ended."""


class BodyTooLarge(Exception):
    pass


class RequestFailed(Exception):
    """Ends a request early with an error response in the client's dialect."""

    def __init__(self, status: int, message: str, *, kind: str | None = None, param: str | None = None,
                 code: str | None = None, final: bool = False, headers: list[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code
        # final: no retry can fix it (x-should-retry: false); headers: the upstream's, passed on
        self.headers = [*headers, NO_RETRY] if final else list(headers)


class ClientBody:
    """The client's request body as an async iterator of chunks (ASGI ``receive``), size-limited.

    ``ended`` is set after the last chunk: from then on ``receive`` only
    reports a disconnect, which the watcher waits for.
    """

    def __init__(self, receive, limit: int) -> None:
        self.receive = receive
        self.limit = limit
        self.size = 0
        self.ended = anyio.Event()
        self._more = True

    def __aiter__(self) -> "ClientBody":
        return self

    async def __anext__(self) -> bytes:
        while self._more:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnected()
            self._more = message.get("more_body", False)
            if not self._more:
                self.ended.set()
            chunk = message.get("body", b"")
            self.size += len(chunk)
            if self.size > self.limit:
                raise BodyTooLarge()
            if chunk:
                return chunk
        raise StopAsyncIteration


class Exchange:
    """What one chat request learns on its way, for its response and its log line."""

    __slots__ = ("client", "backend", "model", "status", "stream", "request_losses", "response_losses",
                 "started", "error", "failure", "finished", "request")

    def __init__(self, client: str) -> None:
        self.client = client
        self.backend: Backend | None = None
        self.model: str | None = None
        self.status = 0
        self.stream = False
        self.request_losses: list = []
        self.response_losses: list = []
        self.started = time.perf_counter()
        self.error: str | None = None
        self.failure: BaseException | None = None  # raised inside the upstream body generator
        self.finished = False  # the response's last byte was handed to the server
        self.request: Transcoder | None = None

    def log_line(self) -> str:
        def losses(items):
            return [{"dialect": loss.dialect, "path": loss.path, "reason": loss.reason} for loss in items]

        return json.dumps({
            "event": "proxy.request", "client": self.client,
            "backend": self.backend.name if self.backend else None,
            "upstream": self.backend.dialect if self.backend else None, "model": self.model,
            "status": self.status, "stream": self.stream,
            "ms": round((time.perf_counter() - self.started) * 1000, 3),
            "losses": len(self.request_losses) + len(self.response_losses),
            "request_losses": losses(self.request_losses), "response_losses": losses(self.response_losses),
            "error": self.error,
        }, ensure_ascii=False)


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def _dialect_of(scope) -> str:
    """The dialect to answer in when the route does not say (an unknown path, a GET)."""
    path = scope["path"]
    if path.startswith("/api/"):
        return "ollama"
    if _header(scope, b"anthropic-version") is not None or _header(scope, b"x-api-key") is not None:
        return "anthropic"
    return "openai"


async def _respond(send, status: int, body: bytes, content_type: bytes = JSON,
                   headers: list[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class ProxyApp:
    """``create_app(config)``: an ASGI 3 callable."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._keys = [key.encode() for key in config.api_keys]
        self._upstream = None
        one = config.backends[0]
        #: every model goes to the one backend under its own name: the body need not be held for routing
        self._catch_all = one if len(config.backends) == 1 and "*" in one.models and one.model is None else None
        dialects = {backend.dialect for backend in config.backends}
        #: every backend speaks it: the request is transcoded while its model is looked for (one pass)
        self._one_dialect = dialects.pop() if len(dialects) == 1 else None

    # -- ASGI entry ---------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close the upstream connection pool."""
        if self._upstream is not None:
            upstream, self._upstream = self._upstream, None
            await upstream.aclose()

    def upstream(self):
        if self._upstream is None:  # made in the serving loop (aiohttp binds to it)
            self._upstream = make_upstream(self.config.upstream_client)
        return self._upstream

    async def _http(self, scope, receive, send) -> None:
        path, method = scope["path"], scope["method"]
        dialect = CHAT_ROUTES.get(path)
        if dialect is not None and method == "POST":
            await self._chat(scope, receive, send, dialect)
        elif path == "/healthz" and method in ("GET", "HEAD"):
            await _respond(send, 200, b'{"status":"ok"}')
        elif path in ("/v1/models", "/api/tags") and method == "GET":
            await self._models(scope, send)
        else:
            allowed = _ALLOWED.get(b"chat" if dialect is not None else path)
            status = 405 if allowed is not None else 404
            client = dialect or _dialect_of(scope)
            headers = [(b"allow", allowed)] if allowed is not None else []  # RFC 9110 15.5.6: a 405 says what is
            await _respond(send, status, error_body(client, status, f"no route for {method} {path}"),
                           headers=[*headers, NO_RETRY])

    def _authorized(self, scope) -> bool:
        if not self._keys:
            return True
        presented = _header(scope, b"x-api-key")
        if presented is None:
            auth = _header(scope, b"authorization") or b""
            if auth[:7].lower() != b"bearer ":
                return False
            presented = auth[7:].strip()
        return any(hmac.compare_digest(presented, key) for key in self._keys)

    # -- GET /v1/models, /api/tags --------------------------------------------------------

    async def _models(self, scope, send) -> None:
        dialect = _dialect_of(scope)
        if not self._authorized(scope):
            await _respond(send, 401, error_body(dialect, 401, "missing or wrong API key"), headers=[NO_RETRY])
            return
        names = [(name, b.name) for b in self.config.backends for name in b.listed_models()]
        if dialect == "ollama":
            body = {"models": [{"name": n, "model": n, "modified_at": "1970-01-01T00:00:00Z", "size": 0,
                                "digest": "", "details": {"family": owner}} for n, owner in names]}
        elif dialect == "anthropic":
            data = [{"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
                    for n, _ in names]
            body = {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                    "last_id": data[-1]["id"] if data else None}
        else:
            body = {"object": "list", "data": [{"id": n, "object": "model", "created": 0, "owned_by": owner}
                                               for n, owner in names]}
        await _respond(send, 200, json.dumps(body).encode())

    # -- POST chat ----------------------------------------------------------------------

    async def _chat(self, scope, receive, send, client: str) -> None:
        exchange = Exchange(client)
        try:
            await self._exchange(scope, receive, send, exchange)
        except RequestFailed as failed:
            exchange.status, exchange.error = failed.status, failed.message
            try:
                await _respond(send, failed.status,
                               error_body(client, failed.status, failed.message, kind=failed.kind, param=failed.param,
                                          code=failed.code),
                               headers=failed.headers)
            except OSError:
                pass  # the client is gone
        except ClientDisconnected:
            exchange.status, exchange.error = 499, "client disconnected"
        finally:
            if self.config.log_requests:
                log.info(exchange.log_line())

    async def _exchange(self, scope, receive, send, exchange: Exchange) -> None:
        config, client = self.config, exchange.client
        if not self._authorized(scope):
            raise RequestFailed(401, "missing or wrong API key (Authorization: Bearer <key> or x-api-key: <key>)",
                                final=True)
        length = _header(scope, b"content-length")
        # ASCII digits only: str.isdigit takes "²", which int() then refuses
        if length is not None and length.isascii() and length.isdigit() and int(length) > config.max_body_bytes:
            raise RequestFailed(413, f"request body over {config.max_body_bytes} bytes", final=True)
        body = ClientBody(receive, config.max_body_bytes)
        try:
            routed = await self._route(body, client)
        except BodyTooLarge:
            raise RequestFailed(413, f"request body over {config.max_body_bytes} bytes", final=True) from None
        except TranscodeError as exc:
            raise RequestFailed(exc.status, str(exc), kind=exc.kind, param=exc.path, final=True) from None
        exchange.backend, exchange.model, exchange.request = routed.backend, routed.model, routed.request
        exchange.request_losses = routed.request.losses
        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch_disconnect, body, receive, group.cancel_scope, exchange)
            try:
                await self._forward(send, exchange, body, routed)
            except Exception as exc:  # noqa: BLE001 -- re-raised below, outside the group (no ExceptionGroup)
                failure = exc
            finally:
                group.cancel_scope.cancel()  # the watcher's work is over
        if failure is not None:
            raise failure

    async def _route(self, body: ClientBody, client: str) -> "Routed":
        """Read the body until its model is known: the backend, and the request transcoder for it.

        * one backend for every model: nothing to read;
        * every backend of one dialect: the request is transcoded at once, and
          its model, read in the same pass (``Transcoder(model=<function>)``),
          picks the backend; the output made before it is held;
        * backends of several dialects: the target depends on the model, so the
          client's raw chunks are decoded (``Decoder``) and held until it is read.
        """
        config, options = self.config, self.config.options
        if self._catch_all is not None:
            one = self._catch_all
            return Routed(one, None, Transcoder(client, one.dialect, kind="request", options=options))
        if self._one_dialect is not None:
            return await self._route_in_one_pass(body, client)
        decoder = Decoder(client, kind="request", options=options)
        held: list[bytes] = []
        model = None
        async for chunk in body:
            held.append(chunk)
            model = _model_of(decoder.feed(chunk))
            if model is not None:
                break
        else:
            model = _model_of(decoder.close())
        backend = self._backend_for(model)
        request = Transcoder(client, backend.dialect, kind="request", options=options, model=backend.model)
        if body.ended.is_set():  # the whole body is here: transcode it now, the upstream gets it sized
            out = [request.feed(chunk) for chunk in held]
            out.append(request.close())
            return Routed(backend, model, request, held_out=out, closed=True)
        return Routed(backend, model, request, held_in=held)

    async def _route_in_one_pass(self, body: ClientBody, client: str) -> "Routed":
        seen: list[object] = []

        def upstream_name(model: object) -> object:
            seen.append(model)
            backend = self.config.backend_for(model) if isinstance(model, str) else None
            return backend.model if backend is not None and backend.model is not None else model

        request = Transcoder(client, self._one_dialect, kind="request", options=self.config.options,
                             model=upstream_name)
        held_out: list[bytes] = []
        closed = False
        async for chunk in body:
            held_out.append(request.feed(chunk))
            if seen:
                break
        if not seen or body.ended.is_set():  # the whole body is here: the upstream gets one body, sized
            held_out.append(request.close())
            closed = True
        model = seen[0] if seen else None
        return Routed(self._backend_for(model), model, request, held_out=held_out, closed=closed)

    def _backend_for(self, model: object) -> Backend:
        if not isinstance(model, str):
            raise RequestFailed(400, "the request names no model", param="$.model", final=True)
        backend = self.config.backend_for(model)
        if backend is None:
            raise RequestFailed(404, f"model {model!r} is not served here (see /v1/models)", kind="not_found_error",
                                param="$.model", code="model_not_found", final=True)
        return backend

    async def _watch_disconnect(self, body: ClientBody, receive, scope: anyio.CancelScope,
                                exchange: Exchange) -> None:
        """After the body ended, ``receive`` returns only at a disconnect: then cancel the exchange."""
        await body.ended.wait()
        message = await receive()
        if message["type"] == "http.disconnect" and not exchange.finished:  # (servers also say so when done)
            exchange.status, exchange.error = 499, "client disconnected"
            scope.cancel()

    async def _upstream_body(self, exchange: Exchange, body: ClientBody, routed: "Routed") -> AsyncIterator[bytes]:
        """The request body in the backend's dialect, transcoded as the client's body arrives."""
        request = routed.request
        try:
            for out in routed.held_out:
                if out:
                    yield out
            for chunk in routed.held_in:
                out = request.feed(chunk)
                if out:
                    yield out
            if routed.closed:
                return
            async for chunk in body:
                out = request.feed(chunk)
                if out:
                    yield out
            out = request.close()
            if out:
                yield out
        except (TranscodeError, BodyTooLarge, ClientDisconnected) as exc:
            exchange.failure = exc  # the HTTP client may wrap it: the exchange keeps the original
            raise

    def _failed_request(self, exchange: Exchange, exc: BaseException) -> BaseException:
        """What a failure while the request was being sent means for the client."""
        failure = exchange.failure
        if isinstance(failure, TranscodeError):
            return RequestFailed(failure.status, str(failure), kind=failure.kind, param=failure.path, final=True)
        if isinstance(failure, BodyTooLarge):
            return RequestFailed(413, f"request body over {self.config.max_body_bytes} bytes", final=True)
        if isinstance(failure, ClientDisconnected):
            return failure
        if isinstance(exc, UpstreamError):
            return RequestFailed(exc.status, str(exc), kind="timeout_error" if exc.status == 504 else "api_error")
        # anything else (aiohttp's ValueError for a header it refuses, a bug): still the client's 502, naming
        # the class only -- an exception's text can quote the request's headers, the backend's key among them
        log.warning("upstream %s: unexpected failure sending the request", exchange.backend.name, exc_info=exc)
        return RequestFailed(502, f"the request to upstream {exchange.backend.name} failed: {type(exc).__name__}",
                             kind="api_error")

    async def _forward(self, send, exchange: Exchange, body: ClientBody, routed: "Routed") -> None:
        backend = exchange.backend
        headers = [(b"content-type", JSON), (b"accept-encoding", b"identity"), (b"user-agent", b"interlingua-proxy"),
                   *backend.auth_headers()]
        try:
            content = b"".join(routed.held_out) if routed.closed else self._upstream_body(exchange, body, routed)
            response = await self.upstream().open(
                backend.endpoint, headers, content,
                connect_timeout=backend.connect_timeout, read_timeout=backend.read_timeout)
        except Exception as exc:  # noqa: BLE001 -- sorted out by what the body generator saw
            raise self._failed_request(exchange, exc) from None
        if exchange.failure is not None:  # the upstream answered before our body failed
            await response.aclose()
            raise self._failed_request(exchange, exchange.failure)
        try:
            if response.status >= 300:
                await self._upstream_error(exchange, response)
            else:
                await self._relay(send, exchange, response)
        finally:
            await aclose_quietly(response)

    async def _upstream_error(self, exchange: Exchange, response: Response) -> None:
        name, upstream = exchange.backend.name, response.status
        status = client_status(upstream, exchange.client)
        if upstream < 400:  # redirects are not followed: they would take the backend's key elsewhere
            message = "a redirect, not followed (is the backend's url right?)"
        else:
            message = upstream_message(await response.read(ERROR_BODY_LIMIT))
        # the backend's own key refused, or a redirect: the same again gets the same
        final = upstream < 400 or upstream in (401, 403)
        passed = _passed_headers(response.headers, exchange.client, error=not final)
        raise RequestFailed(status, f"upstream {name} answered {upstream}: {message}",
                            kind="overloaded_error" if upstream in (503, 529) else None, final=final, headers=passed)

    async def _relay(self, send, exchange: Exchange, response: Response) -> None:
        """The upstream's answer, transcoded into the client's dialect piece by piece."""
        client, backend = exchange.client, exchange.backend
        media = response.content_type.lower()  # media types are case-insensitive (RFC 9110 8.3.1)
        kind = "stream" if ("event-stream" in media or "ndjson" in media) else "response"
        exchange.stream = kind == "stream"
        if exchange.request is not None and exchange.request.asks_stream != exchange.stream:
            # an upstream that ignored (or invented) "stream": the client's reader would get nothing (an
            # empty stream) or a str; the same request gets the same answer, so no retry
            got, asked = ("a stream", "JSON") if exchange.stream else ("JSON", "a stream")
            raise RequestFailed(502, f"upstream {backend.name} answered {got} to a request for {asked}",
                                kind="api_error", final=True, headers=_passed_headers(response.headers, client))
        options = self.config.options
        renamed = exchange.request.tool_names if exchange.request is not None else None
        if renamed:  # tool names the backend's dialect could not take: its answer names them back
            options = msgspec.structs.replace(options, tool_names=dict(renamed))
        asked = client == "openai" and exchange.request is not None and exchange.request.asks_stream_usage
        if client == "openai" and options.openai_stream_usage != asked:
            # as OpenAI: the usage chunk when asked, else none (its choices: [] breaks a chunk.choices[0] loop)
            options = msgspec.structs.replace(options, openai_stream_usage=asked)
        answer = Transcoder(backend.dialect, client, kind=kind, options=options)
        exchange.response_losses = answer.losses
        if exchange.request is not None:  # (a native transcoder's losses are a snapshot: take them now)
            exchange.request_losses = exchange.request.losses
        passed = _passed_headers(response.headers, client)
        headers = [(b"content-type", STREAM_TYPES[client] if exchange.stream else JSON),
                   (LOSS_HEADER, str(len(exchange.request_losses)).encode()), *passed]
        if exchange.stream:
            headers.append((b"cache-control", b"no-cache"))
        failed: list[BaseException] = []
        ended = False  # the client's stream has its last event
        source = response.chunks()

        async def pieces() -> AsyncIterator[bytes]:
            nonlocal ended
            try:
                async for chunk in source:
                    out = answer.feed(chunk)
                    if out:
                        yield out
                        if exchange.stream and _ends_stream(client, out):
                            # the answer is whole: the client's response ends now, not at the upstream's
                            # end (which may come only at its read timeout, and an error event after the end)
                            ended = True
                            return
                out = answer.close()
            except (UpstreamError, TranscodeError) as exc:
                out = _whole(answer) if isinstance(exc, UpstreamError) and not exchange.stream else None
                if out is None:
                    failed.append(exc)
                    exchange.error = f"upstream failed mid-response: {exc}"
                    out = answer.abort(_mid_stream_error(exc))
            if out:
                yield out

        started = False
        held = b""
        try:
            async with aclosing(pieces()) as relayed:
                async for piece in relayed:
                    if not started:  # the status goes with the first piece: a failure before it gets a real one
                        if failed:
                            raise _before_any_byte(failed[0], passed)
                        await send({"type": "http.response.start", "status": 200, "headers": headers})
                        started, exchange.status = True, 200
                    if exchange.stream:
                        await send({"type": "http.response.body", "body": piece, "more_body": True})
                    else:  # a JSON answer: the last piece goes with the end (the client reads it whole anyway)
                        if held:
                            await send({"type": "http.response.body", "body": held, "more_body": True})
                        held = piece
            if not started:
                if failed:
                    raise _before_any_byte(failed[0], passed)
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                exchange.status = 200
            if failed and not exchange.stream:
                # a JSON answer cut after its 200 went out: ending the body would pass the cut off as a
                # whole answer; an app that returns without the end has its connection dropped by the
                # server (ASGI), so the client's read of the body fails (httpx: RemoteProtocolError)
                return
            exchange.finished = True
            await send({"type": "http.response.body", "body": held})
            if ended:
                await _drain(source)
        except OSError:  # the server says the client is gone
            exchange.status, exchange.error = 499, "client disconnected"
        finally:
            await aclose_quietly(source)


def _whole(answer: Transcoder) -> bytes | None:
    """The rest of a JSON answer whose upstream failed or fell silent after sending it: a document already
    whole stands (its decoder accepts the end); else None."""
    try:
        return answer.close()
    except TranscodeError:
        return None


async def _drain(source: AsyncIterator[bytes]) -> None:
    """After a stream's last event, read on briefly to the upstream's end, so that its connection goes back to
    the pool; one that stays open (or sends more) is closed when the response is."""
    size = 0
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            async for chunk in source:
                size += len(chunk)
                if size > DRAIN_LIMIT:
                    return
        except UpstreamError:
            pass


_DONE_TRUE = re.compile(rb'"done"\s*:\s*true')


def _ends_stream(client: str, piece: bytes) -> bool:
    """``piece`` (an output piece, whole frames) ends with the client dialect's last event."""
    if client == "openai":
        return piece.endswith(b"data: [DONE]\n\n") and (len(piece) == 14 or piece[-16:-14] == b"\n\n")
    if client == "anthropic":
        if not piece.endswith(b"\n\n"):
            return False
        at = piece.rfind(b"\n\n", 0, len(piece) - 2)
        return piece.startswith(b"event: message_stop\n", 0 if at < 0 else at + 2)
    if not piece.endswith(b"\n"):  # ollama: the last line says "done": true (at its top level)
        return False
    line = piece[piece.rfind(b"\n", 0, len(piece) - 1) + 1:]
    if not _DONE_TRUE.search(line):
        return False
    try:
        return json.loads(line).get("done") is True
    except (ValueError, AttributeError):
        return False


def _passed_headers(upstream: list[tuple[bytes, bytes]], client: str, *, error: bool = False):
    """The upstream's headers the client gets: retry timing, rate limits (as they came), its request id (under
    the client's name) and, on an error, its ``x-should-retry``."""
    out = []
    request_id = None
    for name, value in upstream:
        name = name.lower()
        if name in PASSED or name.startswith(PASSED_PREFIXES) or error and name == b"x-should-retry":
            out.append((name, value))
        elif name in (b"request-id", b"x-request-id") and request_id is None:
            request_id = value
    if request_id is not None:
        out.append((REQUEST_ID[client], request_id))
    return out


def _upstream_fault(exc: BaseException) -> tuple[int, str, str]:
    """(status, kind, message) of an upstream answer that failed: the upstream's fault (an
    answer interlingua cannot read included: 502 api_error, never the client's 400)."""
    if isinstance(exc, TranscodeError):
        return 502, "api_error", f"the upstream's answer is not valid: {exc}"
    status = getattr(exc, "status", 502)
    return status, "timeout_error" if status == 504 else "api_error", str(exc) or type(exc).__name__


def _before_any_byte(exc: BaseException, headers: list[tuple[bytes, bytes]]) -> RequestFailed:
    """An upstream answer that failed before anything was relayed: an HTTP error status of its own."""
    status, kind, message = _upstream_fault(exc)
    return RequestFailed(status, message, kind=kind, headers=headers)


def _mid_stream_error(exc: BaseException) -> Error:
    """The same failure after the answer started: the client dialect's error event says it."""
    status, kind, message = _upstream_fault(exc)
    return Error(kind, message, status)


class Routed:
    """Where a request goes and what of it was read while finding out."""

    __slots__ = ("backend", "model", "request", "held_in", "held_out", "closed")

    def __init__(self, backend: Backend, model: object, request: Transcoder, *, held_in: list[bytes] = (),
                 held_out: list[bytes] = (), closed: bool = False) -> None:
        self.backend, self.model, self.request = backend, model, request
        self.held_in = held_in  # client chunks read but not yet transcoded
        self.held_out = held_out  # transcoded output made before the backend was known
        self.closed = closed  # the body ended while routing: the transcoder is closed


def _model_of(events) -> object:
    for event in events:
        if event.__class__ is Control and event.name == "model":
            return event.value
    return None


def create_app(config: Config | dict | str) -> ProxyApp:
    """The ASGI app for ``config``: a ``Config``, a parsed-TOML dict, or the path of a TOML file."""
    from .config import load_config, parse_config
    if isinstance(config, dict):
        config = parse_config(config)
    elif not isinstance(config, Config):
        config = load_config(config)
    return ProxyApp(config)
