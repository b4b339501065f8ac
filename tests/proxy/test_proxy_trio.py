"""The proxy app under trio: hypercorn's trio worker, the httpx2 upstream client, real HTTP on loopback."""

from __future__ import annotations

import socket
import threading

import openai
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from interlingua.proxy import create_app
from proxy_servers import Server, Upstream, proxy_config


@pytest.fixture(scope="module")
def trio_proxy():
    upstream = Upstream(pace=0.001)
    with Server(upstream) as up:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        config = HypercornConfig()
        config.bind = [f"127.0.0.1:{port}"]
        config.loglevel = "WARNING"
        stop = threading.Event()
        started = threading.Event()

        async def main():
            async def shutdown():
                while not stop.is_set():
                    await trio.sleep(0.02)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: serve(create_app(proxy_config(up.url)), config, shutdown_trigger=shutdown))
                while True:  # serving once a connection is accepted
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                            break
                    except OSError:
                        await trio.sleep(0.02)
                started.set()

        thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
        thread.start()
        assert started.wait(10), "hypercorn did not start"
        yield f"http://127.0.0.1:{port}", upstream
        stop.set()
        thread.join(5)


@pytest.mark.parametrize("stream", [True, False])
def test_openai_client_to_anthropic_backend_under_trio(trio_proxy, stream):
    url, upstream = trio_proxy
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    kwargs = dict(model="anthropic/response-text-tool", messages=[{"role": "user", "content": "hi"}])
    if stream:
        with client.chat.completions.stream(**kwargs) as s:
            for _ in s:
                pass
            completion = s.get_final_completion()
    else:
        completion = client.chat.completions.create(**kwargs)
    message = completion.choices[0].message
    assert message.content and message.tool_calls[0].function.name == "weather"
    assert upstream.received[-1].dialect == "anthropic" and upstream.received[-1].valid
