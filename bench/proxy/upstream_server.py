"""The benchmark's upstream: an anthropic-dialect server on 127.0.0.1, as cheap as it can be.

    python -m bench.proxy.upstream_server --port P [--frames 200]

asyncio (uvloop when installed) with the httptools parser; keep-alive; takes
content-length and chunked request bodies. A body with ``"stream":true``
gets an anthropic SSE answer of ``--frames`` text deltas (plus the start and
stop events), written as fast as the socket takes them; any other body gets
a small anthropic ``message``. It never reads the body's meaning beyond that.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import httptools

MESSAGE = json.dumps({
    "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-bench",
    "content": [{"type": "text", "text": "Hello! How can I help you today?"}],
    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 9},
}).encode()


def _event(name: str, data: dict) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (name.encode(), json.dumps(data, separators=(",", ":")).encode())


def stream_body(frames: int) -> bytes:
    parts = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-bench", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]
    for i in range(frames):
        parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                    "delta": {"type": "text_delta", "text": f"tok{i % 10} "}}))
    parts += [_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
              _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                            "stop_sequence": None},
                                       "usage": {"output_tokens": frames}}),
              _event("message_stop", {"type": "message_stop"})]
    return b"".join(parts)


class Upstream(asyncio.Protocol):
    stream_chunks: list[bytes] = []

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.body = b""

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_begin(self) -> None:
        self.body = b""

    def on_body(self, body: bytes) -> None:
        if len(self.body) < 4096:  # enough to see "stream"
            self.body += body

    def on_message_complete(self) -> None:
        write = self.transport.write
        if b'"stream":true' in self.body.replace(b" ", b""):
            write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for chunk in self.stream_chunks:  # one chunk per frame: the proxy sees frames as an LLM sends them
                write(chunk)
            write(b"0\r\n\r\n")
        else:
            write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                  % (len(MESSAGE), MESSAGE))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--frames", type=int, default=200)
    args = parser.parse_args()
    frames = stream_body(args.frames).split(b"\n\n")[:-1]
    Upstream.stream_chunks = [b"%x\r\n%s\n\n\r\n" % (len(f) + 2, f) for f in frames]
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass

    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(Upstream, "127.0.0.1", args.port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
