"""The proxy's response ids and times (issue 16 item 6): the default hooks, in a deployment."""

from __future__ import annotations

import json
import time

import fixed_clock
from interlingua.lifecycle import ollama_time_us


def test_the_proxy_uses_the_wall_clock_and_fresh_ids(monkeypatch):
    """A proxy's transcoders take the configuration's Options, whose hooks are unset: each
    answer reads the wall clock and draws its own nonce (here with the suite's fixed hooks
    taken away, as in a real deployment)."""
    import httpx2
    from interlingua import session
    from proxy_servers import running

    monkeypatch.setattr(session, "response_start", fixed_clock.DEFAULT_START)
    request = b'{"model":"%s","stream":false,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}'
    with running(pace=0) as (proxy, _), httpx2.Client() as http:
        def ask(path: str, model: bytes) -> dict:
            response = http.post(proxy.url + path, content=request % model)
            assert response.status_code == 200, response.text
            return response.json()
        answers = [ask("/v1/messages", b"ollama/response-text-tool") for _ in range(2)]
        before = time.time()
        timed = ask("/api/chat", b"anthropic/response-text-tool")
        after = time.time()
    assert answers[0]["id"] != answers[1]["id"]
    calls = [[b["id"] for b in a["content"] if b["type"] == "tool_use"] for a in answers]
    assert calls[0] and not set(calls[0]) & set(calls[1])
    assert before - 1 <= ollama_time_us(json.dumps(timed["created_at"]).encode()) / 1e6 <= after + 1
