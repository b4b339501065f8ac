"""`interlingua serve` as a real process (no config: the demo backend), and the demo's end-to-end run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import anthropic
import httpx2
import ollama
import openai

from interlingua.proxy import showcase


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_without_config_answers_every_official_client():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([sys.executable, "-m", "interlingua", "serve", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx2.get(url + "/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "serve did not come up"
            time.sleep(0.1)
        tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
        o = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        reply = o.chat.completions.create(model="any", messages=[{"role": "user", "content": "ping"}], tools=[tool])
        assert "ping" in reply.choices[0].message.content
        assert reply.choices[0].message.tool_calls[0].function.name == "lookup"
        a = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        with a.messages.stream(model="demo", max_tokens=50, messages=[{"role": "user", "content": "pong"}]) as s:
            assert "pong" in "".join(s.text_stream)
        parts = list(ollama.Client(host=url).chat(model="demo", messages=[{"role": "user", "content": "hey"}],
                                                  stream=True))
        assert "hey" in "".join(p.message.content or "" for p in parts) and parts[-1].done
        assert [m.id for m in o.models.list().data] == ["demo"]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
    log = err.decode()
    assert '"event": "proxy.request"' in log and '"client": "anthropic"' in log  # one structured line each


def test_demo_shows_both_sides_bytes(capsys):
    assert showcase.run() == 0
    out = capsys.readouterr().out
    for title in ("1. openai client -> proxy", "2. proxy -> demo backend", "3. demo backend -> proxy",
                  "4. proxy -> openai client", "5. what the openai client reports"):
        assert title in out
    assert "event: message_start" in out and "data: [DONE]" in out
    assert 'tool call: weather({"city": "Paris"})' in out
