"""The embedded demo backend: an Anthropic Messages server with deterministic replies.

``interlingua serve`` without ``--config`` mounts it at ``/_demo`` next to the
proxy and routes every model to it over real HTTP, so an official openai,
anthropic or ollama client pointed at the proxy gets an answer without any
API key or network:

* the reply's text quotes the last user text;
* when the request offers tools, the reply also calls the first tool with
  ``{"city": "Paris"}`` and stops with ``tool_use``;
* ``"stream": true`` streams it as SSE, a few characters per delta, paced
  (``pace`` seconds between events).

``DemoBackend.exchanges`` keeps the last few (request bytes, response bytes)
pairs, which ``python3 dev.py demo`` prints.
"""

from __future__ import annotations

import json
from collections import deque

import anyio

CHUNK = 6  # characters per text delta


def _sse(event: str, data: dict) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (event.encode(), json.dumps(data, ensure_ascii=False).encode())


def _last_user_text(request: dict) -> str:
    for message in reversed(request.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [part.get("text", "") for part in content or [] if part.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def reply_blocks(request: dict) -> tuple[str, dict | None]:
    """The deterministic reply: its text and the tool call (or None)."""
    heard = _last_user_text(request)
    text = f"Demo backend here (anthropic dialect). You said: {heard[:200]!r}."
    tools = request.get("tools") or []
    call = None
    if tools and isinstance(tools[0], dict) and tools[0].get("name"):
        text += " Let me call a tool."
        call = {"type": "tool_use", "id": "toolu_demo_1", "name": tools[0]["name"], "input": {"city": "Paris"}}
    return text, call


class DemoBackend:
    """ASGI app answering ``POST /v1/messages`` (under any mount prefix)."""

    def __init__(self, pace: float = 0.005, keep: int = 4) -> None:
        self.pace = pace
        self.exchanges: deque[tuple[bytes, bytearray]] = deque(maxlen=keep)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        if not scope["path"].endswith("/v1/messages") or scope["method"] != "POST":
            body = json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "demo: POST /v1/messages"}})
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        raw = b""
        more = True
        while more:  # a demo server: it reads its (small) request whole
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(raw)
        except ValueError:
            request = {}
        text, call = reply_blocks(request)
        model = request.get("model", "demo")
        sent = bytearray()
        self.exchanges.append((raw, sent))  # filled as it is sent: a client may look as soon as it has it all
        stream = bool(request.get("stream"))
        content_type = b"text/event-stream" if stream else b"application/json"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", content_type)]})
        pieces = self._events(model, text, call) if stream else [self._message(model, text, call)]
        for piece in pieces:
            sent += piece
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            if stream and self.pace:
                await anyio.sleep(self.pace)
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    def _usage(text: str) -> dict:
        return {"input_tokens": 12, "output_tokens": max(1, len(text) // 4)}

    def _message(self, model: str, text: str, call: dict | None) -> bytes:
        content = [{"type": "text", "text": text}] + ([call] if call else [])
        return json.dumps({"id": "msg_demo_1", "type": "message", "role": "assistant", "model": model,
                           "content": content, "stop_reason": "tool_use" if call else "end_turn",
                           "stop_sequence": None, "usage": self._usage(text)}, ensure_ascii=False).encode()

    def _events(self, model: str, text: str, call: dict | None) -> list[bytes]:
        out = [_sse("message_start", {"type": "message_start", "message": {
            "id": "msg_demo_1", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}})]
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}))
        for i in range(0, len(text), CHUNK):
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                    "delta": {"type": "text_delta", "text": text[i:i + CHUNK]}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        if call:
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                "type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}}))
            arguments = json.dumps(call["input"])
            for i in range(0, len(arguments), CHUNK):
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
                    "type": "input_json_delta", "partial_json": arguments[i:i + CHUNK]}}))
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
        out.append(_sse("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": self._usage(text)["output_tokens"]}}))
        out.append(_sse("message_stop", {"type": "message_stop"}))
        return out


class WithDemo:
    """The proxy with the demo backend mounted at ``/_demo`` (what ``interlingua serve`` runs without a config)."""

    PREFIX = "/_demo"

    def __init__(self, proxy, demo: DemoBackend) -> None:
        self.proxy = proxy
        self.demo = demo

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.PREFIX + "/"):
            await self.demo(scope, receive, send)
        else:
            await self.proxy(scope, receive, send)


def demo_config(host: str, port: int) -> dict:
    """Every model to the demo backend of the server at ``host:port``."""
    return {"server": {"host": host, "port": port},
            "backends": [{"name": "demo", "dialect": "anthropic", "url": f"http://{host}:{port}{WithDemo.PREFIX}",
                          "models": ["demo", "*"]}]}


def demo_app(host: str, port: int, pace: float = 0.005) -> WithDemo:
    from .app import create_app
    return WithDemo(create_app(demo_config(host, port)), DemoBackend(pace))
