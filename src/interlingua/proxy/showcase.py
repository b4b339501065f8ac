"""``python3 dev.py demo``, second part: the proxy end to end once, over real HTTP on 127.0.0.1.

The official openai client sends a streaming request with a tool to the
proxy; the proxy routes it to the embedded demo backend, which speaks the
anthropic dialect; the four byte streams are printed as they passed:
client -> proxy (openai), proxy -> backend (anthropic), backend -> proxy
(anthropic SSE), proxy -> client (openai SSE), then what the client made of
it. Needs the ``proxy`` and ``demo`` extras (dev.py installs them).
"""

from __future__ import annotations

import socket
import threading
import time


def _serve(app, sock):
    import uvicorn
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    return server, thread


def _tee_transport(sent: list[bytes], received: list[bytes]):
    """An httpx2 transport that keeps the bytes of each request and response as they pass."""
    import httpx2

    class Tee(httpx2.SyncByteStream):
        def __init__(self, stream) -> None:
            self.stream = stream

        def __iter__(self):
            for chunk in self.stream:
                received.append(chunk)
                yield chunk

        def close(self) -> None:
            self.stream.close()

    class Transport(httpx2.HTTPTransport):
        def handle_request(self, request):
            sent.append(request.read())
            response = super().handle_request(request)
            return httpx2.Response(response.status_code, headers=response.headers, stream=Tee(response.stream),
                                   extensions=response.extensions)

    return Transport()


def _show(title: str, data: bytes) -> None:
    print(f"== {title} ({len(data)} bytes) ==")
    print(data.decode("utf-8", "replace").rstrip())
    print()


def run() -> int:
    try:
        import httpx2
        import openai
    except ImportError:
        print("(the proxy part of the demo needs: pip install 'interlingua[proxy,demo]')")
        return 0
    from .demo import demo_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = demo_app("127.0.0.1", port, pace=0.002)
    server, thread = _serve(app, sock)
    try:
        sent: list[bytes] = []
        received: list[bytes] = []
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", max_retries=0,
                               http_client=httpx2.Client(transport=_tee_transport(sent, received)))
        print(f"== the proxy on http://127.0.0.1:{port}: openai client -> proxy -> demo backend (anthropic) ==\n")
        stream = client.chat.completions.create(
            model="demo", stream=True,
            messages=[{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "What's the weather in Paris?"}],
            tools=[{"type": "function", "function": {"name": "weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}}}}])
        text, calls = "", {}
        for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    entry = calls.setdefault(call.index, ["", ""])
                    entry[0] += (call.function.name or "") if call.function else ""
                    entry[1] += (call.function.arguments or "") if call.function else ""
        backend_in, backend_out = app.demo.exchanges[-1]
        _show("1. openai client -> proxy: POST /v1/chat/completions", sent[-1])
        _show("2. proxy -> demo backend: POST /_demo/v1/messages (anthropic)", backend_in)
        _show("3. demo backend -> proxy: anthropic SSE", backend_out)
        _show("4. proxy -> openai client: openai SSE", b"".join(received))
        print("== 5. what the openai client reports ==")
        print(f"text: {text!r}")
        for name, arguments in calls.values():
            print(f"tool call: {name}({arguments})")
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
    return 0
