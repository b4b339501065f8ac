"""The upstream HTTP client: one POST with a streamed body, a streamed response, pooled keep-alive.

Chosen by measurement (``bench/proxy/upstream_clients.py``, README "Proxy"):
on loopback, 50 concurrent, a small JSON answer and a 200-frame SSE answer,

    client     small req/s  CPU us/req   200-frame SSE req/s  CPU us/req
    httpx          458        2182              142             6940
    httpx2        2084         480              527             1896
    aiohttp      14676          68              938              293

aiohttp spends 7x less CPU per request than httpx2, the difference between
meeting the one-worker throughput target and not. It runs on asyncio only,
so under trio (hypercorn ``-k trio``) the proxy uses httpx2, which runs on
both through anyio. ``[server] upstream_client`` forces one.

The body is bytes (sent with content-length) when the whole request was
read while routing, else an async iterable (chunked, sent as produced).
Both are wrapped to the same small surface (``open`` -> ``Response`` with
``status``, ``content_type``, ``headers``, ``chunks()``, ``read(limit)``,
``aclose()``) and the same failures (``UpstreamConnectError``,
``UpstreamTimeout``, ``UpstreamError``). ``aclose`` before the end closes the
connection (it is not returned to the pool): that is how a client's
disconnect reaches the upstream at once.

Neither client follows redirects: a redirect would replay the request, with
the backend's key, to wherever the ``location`` points (aiohttp strips only
``Authorization`` across origins, not ``x-api-key``); the proxy answers a 3xx
as a 502. Failure messages name the exception's class, never its text: an
error about the request (httpx's ``LocalProtocolError``) quotes the header
values, the backend's key among them, and the message reaches the client.
Both read the body raw; ``chunks()`` inflates a gzip or deflate body itself
(an upstream may compress though asked ``identity``), in bounded pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import zlib

import sniffio

USER_AGENT = "interlingua-proxy/0.1"


class UpstreamError(Exception):
    """The upstream connection failed (refused, reset, protocol error)."""

    status = 502


class UpstreamConnectError(UpstreamError):
    """No connection could be made to the upstream."""


class UpstreamTimeout(UpstreamError):
    """The upstream was slower than its configured timeout (connect or the wait for the next byte)."""

    status = 504


INFLATE_PIECE = 64 << 10  # the most one compressed chunk inflates to at a time (a bomb stays bounded)


class Response:
    status: int
    content_type: str
    content_encoding: str
    headers: list[tuple[bytes, bytes]]  # as received (names in their case)

    def raw_chunks(self) -> AsyncIterator[bytes]:
        raise NotImplementedError

    def chunks(self) -> AsyncIterator[bytes]:
        """The body, inflated when the upstream compressed it (gzip, deflate)."""
        encoding = self.content_encoding.strip().lower()
        if encoding in ("", "identity"):
            return self.raw_chunks()
        return self._inflated(encoding)

    async def _inflated(self, encoding: str) -> AsyncIterator[bytes]:
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise UpstreamError(f"upstream answered in content-encoding {encoding!r}, which the proxy cannot "
                                f"decode (it asks for identity)")
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
        try:
            async for chunk in self.raw_chunks():
                while True:
                    out = inflater.decompress(chunk, INFLATE_PIECE)
                    if out:
                        yield out
                    chunk = inflater.unconsumed_tail
                    if not chunk and len(out) < INFLATE_PIECE:
                        break
            out = inflater.flush()
        except zlib.error as exc:
            raise UpstreamError(f"upstream's {encoding} body cannot be decoded ({exc})") from None
        if out:
            yield out

    async def read(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (an error body: small), then close."""
        out = b""
        try:
            async for chunk in self.chunks():
                out += chunk
                if len(out) >= limit:
                    break
        except UpstreamError as exc:
            out = out or str(exc).encode()  # what arrived is the message, else what went wrong
        await self.aclose()
        return out[:limit]

    async def aclose(self) -> None:
        raise NotImplementedError


# -- aiohttp (asyncio) ---------------------------------------------------------------------


class _AiohttpResponse(Response):
    def __init__(self, response) -> None:
        self._response = response
        self.status = response.status
        self.content_type = response.headers.get("content-type", "")
        self.content_encoding = response.headers.get("content-encoding", "")
        self.headers = response.raw_headers

    async def raw_chunks(self) -> AsyncIterator[bytes]:
        import asyncio

        import aiohttp
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise UpstreamTimeout(f"upstream sent nothing for longer than its read timeout ({exc})") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(f"upstream connection failed mid-response: {_named(exc)}") from exc

    async def aclose(self) -> None:
        if not self._response.content.at_eof():
            self._response.close()  # drop the connection: the upstream sees it closed
        else:
            self._response.release()


class AiohttpUpstream:
    name = "aiohttp"

    def __init__(self) -> None:
        import aiohttp
        self._aiohttp = aiohttp
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30, enable_cleanup_closed=True),
            auto_decompress=False, skip_auto_headers=("User-Agent", "Content-Type"),
        )

    async def open(self, url: str, headers: list[tuple[bytes, bytes]], body: AsyncIterable[bytes] | bytes, *,
                   connect_timeout: float, read_timeout: float) -> Response:
        import asyncio
        aiohttp = self._aiohttp
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout)
        try:
            response = await self._session.post(
                url, data=body, timeout=timeout, allow_redirects=False,
                headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers])
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise UpstreamTimeout(f"upstream {url} did not answer within its timeout") from exc
        except aiohttp.ClientConnectorError as exc:
            raise UpstreamConnectError(f"cannot connect to upstream {url}: {exc.os_error}") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(f"upstream {url} failed: {_named(exc)}") from exc
        return _AiohttpResponse(response)

    async def aclose(self) -> None:
        await self._session.close()


# -- httpx2 (asyncio and trio, through anyio) -----------------------------------------------


class _HttpxResponse(Response):
    def __init__(self, response, httpx) -> None:
        self._response = response
        self._httpx = httpx
        self.status = response.status_code
        self.content_type = response.headers.get("content-type", "")
        self.content_encoding = response.headers.get("content-encoding", "")
        self.headers = response.headers.raw

    async def raw_chunks(self) -> AsyncIterator[bytes]:
        httpx = self._httpx
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout("upstream sent nothing for longer than its read timeout") from exc
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise UpstreamError(f"upstream connection failed mid-response: {_named(exc)}") from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class HttpxUpstream:
    name = "httpx2"

    def __init__(self) -> None:
        import httpx2
        self._httpx = httpx2
        self._client = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=1000, keepalive_expiry=30),
            trust_env=False, follow_redirects=False)

    async def open(self, url: str, headers: list[tuple[bytes, bytes]], body: AsyncIterable[bytes] | bytes, *,
                   connect_timeout: float, read_timeout: float) -> Response:
        httpx = self._httpx
        timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout)
        request = self._client.build_request("POST", url, headers=headers, content=body, timeout=timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"upstream {url} did not answer within its timeout") from exc
        except httpx.ConnectError as exc:
            raise UpstreamConnectError(f"cannot connect to upstream {url}: {exc}") from exc  # (no header sent yet)
        except httpx.TransportError as exc:
            raise UpstreamError(f"upstream {url} failed: {_named(exc)}") from exc
        return _HttpxResponse(response, httpx)

    async def aclose(self) -> None:
        await self._client.aclose()


def _named(exc: BaseException) -> str:
    """An exception for a message the client may read: its class only (its text can quote header values)."""
    return type(exc).__name__


CLIENTS = {"aiohttp": AiohttpUpstream, "httpx2": HttpxUpstream}


def make_upstream(choice: str = "auto"):
    """The client for the running event loop: aiohttp on asyncio when installed, else httpx2."""
    if choice == "auto":
        choice = "httpx2"
        if sniffio.current_async_library() == "asyncio":
            try:
                import aiohttp  # noqa: F401
                choice = "aiohttp"
            except ImportError:
                pass
    return CLIENTS[choice]()
