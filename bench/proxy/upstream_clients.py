"""Which async HTTP client the proxy uses upstream: a measurement (not a test).

    .venv/bin/python -m bench.proxy.upstream_clients [--requests N] [--concurrency C]

A minimal asyncio HTTP/1.1 server on 127.0.0.1 (in a child process, so the
client's CPU is measured alone) answers a small JSON body, or a 200-frame SSE
stream. Each client does N requests at concurrency C over pooled keep-alive
connections; printed: requests/s and client CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import time

SMALL = b'{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}'
FRAME = b'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}\n\n'
FRAMES = 200


async def _serve(sock: socket.socket) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                if head.startswith(b"POST /stream"):
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    for _ in range(FRAMES):
                        writer.write(b"%x\r\n%s\r\n" % (len(FRAME), FRAME))
                    writer.write(b"0\r\n\r\n")
                else:
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(SMALL), SMALL))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, sock=sock)
    async with server:
        await server.serve_forever()


def _server_main(sock: socket.socket) -> None:
    asyncio.run(_serve(sock))


async def _run(fetch, n: int, concurrency: int) -> None:
    queue = iter(range(n))

    async def worker():
        for _ in queue:
            await fetch()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def _clients(base: str, path: str):
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'

    def httpx_like(module):
        async def make():
            client = module.AsyncClient(limits=module.Limits(max_connections=100, max_keepalive_connections=100))

            async def fetch():
                async with client.stream("POST", base + path, content=body) as response:
                    async for _ in response.aiter_raw():
                        pass
            return client, fetch
        return make

    async def make_aiohttp():
        import aiohttp
        client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100), auto_decompress=False)

        async def fetch():
            async with client.post(base + path, data=body) as response:
                async for _ in response.content.iter_any():
                    pass
        return client, fetch

    import httpx
    import httpx2
    return {"httpx": httpx_like(httpx), "httpx2": httpx_like(httpx2), "aiohttp": make_aiohttp}


async def _measure(make, n: int, concurrency: int) -> tuple[float, float]:
    client, fetch = await make()
    await _run(fetch, min(n, 200), concurrency)  # warm the pool
    cpu, wall = time.process_time(), time.perf_counter()
    await _run(fetch, n, concurrency)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await (client.aclose() if hasattr(client, "aclose") else client.close())
    return n / wall, cpu / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    base = "http://127.0.0.1:%d" % sock.getsockname()[1]
    server = multiprocessing.Process(target=_server_main, args=(sock,), daemon=True)
    server.start()
    try:
        print(f"{'client':10} {'body':8} {'req/s':>8} {'client CPU us/req':>18}")
        for path, n in (("/small", args.requests), ("/stream", max(args.requests // 10, 100))):
            for name, make in _clients(base, path).items():
                rate, cpu = asyncio.run(_measure(make, n, args.concurrency))
                label = "small" if path == "/small" else f"{FRAMES} SSE"
                print(f"{name:10} {label:8} {rate:8.0f} {cpu:18.0f}")
    finally:
        server.kill()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
