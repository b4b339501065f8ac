"""The official clients through the proxy over real HTTP, for all 9 client x backend pairs.

Each client (sync and async, streaming and not) sends a request with a
system prompt, an image, a tool and thinking switched on to a proxy on
loopback; the proxy routes it by model to a replaying upstream of another
(or the same) dialect, which checks the request with its own official type
and replays an rpt response scenario, paced frame by frame.

What is asserted is the proxy's part, not the codecs': the client reports
exactly what the same client reports for the upstream's bytes transcoded
directly by ``Transcoder`` (text, reasoning, tool calls, finish, usage), and
the raw bytes the proxy sends equal that direct transcoding.
"""

from __future__ import annotations

import asyncio
import json

import anthropic
import httpx2
import ollama
import openai
import pytest

from interlingua import Options, Transcoder
from proxy_servers import running, scenario_bytes
from response.clients import FINALS, Final

DIALECTS = ("openai", "anthropic", "ollama")
SCENARIOS = ("response-text-tool", "response-reasoning")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
CLIENT_KEY = "client-secret-never-forwarded"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture(scope="module")
def servers():
    with running(pace=0.001) as pair:
        yield pair


# -- each official client, live ----------------------------------------------------------------


def _openai_kwargs(model: str, stream: bool = False) -> dict:
    # a stream asks for its usage (without, OpenAI sends none: test_openai_usage_chunk_only_when_asked)
    asked = {"stream_options": {"include_usage": True}} if stream else {}
    return dict(model=model, reasoning_effort="low", **asked,
                tools=[{"type": "function", "function": {"name": "weather", "parameters": SCHEMA}}],
                messages=[{"role": "system", "content": "Be brief."},
                          {"role": "user", "content": [
                              {"type": "text", "text": "What is in this picture, and the weather?"},
                              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}])


def _openai_final(completion) -> Final:
    choice = completion.choices[0]
    msg = choice.message
    tools = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in (msg.tool_calls or [])]
    u = completion.usage
    from interlingua.lifecycle import finish_from
    return Final(msg.content or "", tools, finish_from("openai", choice.finish_reason),
                 u.prompt_tokens if u else None, u.completion_tokens if u else None,
                 (msg.model_extra or {}).get("reasoning_content") or "")


def openai_live(url: str, model: str, stream: bool, sync: bool) -> Final:
    kwargs = _openai_kwargs(model, stream)
    if sync:
        client = openai.OpenAI(base_url=url + "/v1", api_key=CLIENT_KEY, max_retries=0)
        if stream:
            with client.chat.completions.stream(**kwargs) as s:
                for _ in s:
                    pass
                return _openai_final(s.get_final_completion())
        return _openai_final(client.chat.completions.create(**kwargs))

    async def run():
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=CLIENT_KEY, max_retries=0)
        async with client:
            if stream:
                async with client.chat.completions.stream(**kwargs) as s:
                    async for _ in s:
                        pass
                    return _openai_final(await s.get_final_completion())
            return _openai_final(await client.chat.completions.create(**kwargs))
    return asyncio.run(run())


def _anthropic_kwargs(model: str) -> dict:
    return dict(model=model, max_tokens=2048, system="Be brief.", thinking={"type": "enabled", "budget_tokens": 1024},
                tools=[{"name": "weather", "description": "Weather in a city", "input_schema": SCHEMA}],
                messages=[{"role": "user", "content": [
                    {"type": "text", "text": "What is in this picture, and the weather?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}])


def _anthropic_final(message) -> Final:
    from interlingua.lifecycle import finish_from
    u = message.usage
    total_in = None if u.input_tokens is None else (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0))
    return Final("".join(b.text for b in message.content if b.type == "text"),
                 [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"],
                 finish_from("anthropic", message.stop_reason), total_in, u.output_tokens,
                 "".join(b.thinking for b in message.content if b.type == "thinking"))


def anthropic_live(url: str, model: str, stream: bool, sync: bool) -> Final:
    kwargs = _anthropic_kwargs(model)
    if sync:
        client = anthropic.Anthropic(base_url=url, api_key=CLIENT_KEY, max_retries=0)
        if stream:
            with client.messages.stream(**kwargs) as s:
                return _anthropic_final(s.get_final_message())
        return _anthropic_final(client.messages.create(**kwargs))

    async def run():
        client = anthropic.AsyncAnthropic(base_url=url, api_key=CLIENT_KEY, max_retries=0)
        async with client:
            if stream:
                async with client.messages.stream(**kwargs) as s:
                    return _anthropic_final(await s.get_final_message())
            return _anthropic_final(await client.messages.create(**kwargs))
    return asyncio.run(run())


def _ollama_kwargs(model: str, stream: bool) -> dict:
    return dict(model=model, stream=stream, think=True,
                tools=[{"type": "function", "function": {"name": "weather", "description": "Weather in a city",
                                                         "parameters": SCHEMA}}],
                messages=[{"role": "system", "content": "Be brief."},
                          {"role": "user", "content": "What is in this picture, and the weather?", "images": [PNG]}])


def _ollama_fold(parts) -> Final:
    from interlingua.lifecycle import finish_from
    text, reasoning, tools, last = "", "", [], None
    for part in parts:
        text += part.message.content or ""
        reasoning += part.message.thinking or ""
        tools += [(None, c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or []]
        last = part
    finish = finish_from("ollama", last.done_reason)
    if finish == "end_turn" and tools:
        finish = "tool_use"
    return Final(text, tools, finish, last.prompt_eval_count, last.eval_count, reasoning)


def ollama_live(url: str, model: str, stream: bool, sync: bool) -> Final:
    kwargs = _ollama_kwargs(model, stream)
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    if sync:
        result = ollama.Client(host=url, headers=headers).chat(**kwargs)
        return _ollama_fold(result if stream else [result])

    async def run():
        result = await ollama.AsyncClient(host=url, headers=headers).chat(**kwargs)
        return _ollama_fold([p async for p in result] if stream else [result])
    return asyncio.run(run())


LIVE = {"openai": openai_live, "anthropic": anthropic_live, "ollama": ollama_live}


def direct(backend: str, client: str, scenario: str, kind: str, options: Options | None = None) -> bytes:
    t = Transcoder(backend, client, kind=kind, options=options)
    return t.feed(scenario_bytes(scenario, backend, kind)) + t.close()


# -- the matrix ------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_official_client_through_the_proxy(servers, client, backend, stream, sync, scenario):
    proxy, upstream = servers
    before = len(upstream.received)
    got = LIVE[client](proxy.url, f"{backend}/{scenario}", stream, sync)
    kind = "stream" if stream else "response"
    assert got == FINALS[client](kind, direct(backend, client, scenario, kind))
    assert got.text or got.reasoning  # the scenario's answer came through
    # the upstream got one request, in its own dialect, that its official type accepts
    [seen] = upstream.received[before:]
    assert seen.dialect == backend and seen.valid, seen.problem
    assert json.loads(seen.body)["model"] == f"{backend}/{scenario}"
    # the client's credentials never reach the upstream; the backend's own do
    assert not any(CLIENT_KEY in value for value in seen.headers.values())
    own = {"openai": ("authorization", f"Bearer upstream-key-{backend}"),
           "anthropic": ("x-api-key", f"upstream-key-{backend}"),
           "ollama": ("authorization", f"Bearer upstream-key-{backend}")}[backend]
    assert seen.headers.get(own[0]) == own[1]
    if backend == "anthropic":
        assert seen.headers.get("anthropic-version") == "2023-06-01"


REQUESTS = {
    "openai": b'{"model":"%s","stream":%s,"messages":[{"role":"user","content":"hi"}]}',
    "anthropic": b'{"model":"%s","stream":%s,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}',
    "ollama": b'{"model":"%s","stream":%s,"messages":[{"role":"user","content":"hi"}]}',
}
CHAT_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_bytes_are_the_direct_transcoding(servers, client, backend, stream):
    """Frame by frame: what the client receives is what ``Transcoder`` makes of the upstream's bytes."""
    proxy, _ = servers
    model = f"{backend}/response-text-tool".encode()
    body = REQUESTS[client] % (model, b"true" if stream else b"false")
    kind = "stream" if stream else "response"
    with httpx2.Client() as http:
        with http.stream("POST", proxy.url + CHAT_PATHS[client], content=body) as response:
            assert response.status_code == 200
            pieces = list(response.iter_raw())
            content_type = response.headers["content-type"]
            losses = response.headers["x-interlingua-losses"]
    # (these openai requests have no stream_options: the proxy asks the transcoder for no usage chunk)
    options = Options(openai_stream_usage=False) if client == "openai" else None
    assert b"".join(pieces) == direct(backend, client, "response-text-tool", kind, options)
    expected_type = {"openai": "text/event-stream", "anthropic": "text/event-stream",
                     "ollama": "application/x-ndjson"}[client] if stream else "application/json"
    assert content_type == expected_type
    assert losses.isdigit()


@pytest.mark.parametrize("asked", [False, True], ids=["unasked", "asked"])
@pytest.mark.parametrize("backend", ("anthropic", "ollama"))
def test_openai_usage_chunk_only_when_asked(servers, backend, asked):
    """As OpenAI: the usage chunk (``choices: []``) only with ``stream_options.include_usage``; without it
    the common ``chunk.choices[0]`` loop runs to the end. (An openai backend's stream is copied as it came:
    a real one sends no usage unasked, this test's replaying one would.)"""
    proxy, _ = servers
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key=CLIENT_KEY, max_retries=0)
    extra = {"stream_options": {"include_usage": True}} if asked else {}
    chunks = list(o.chat.completions.create(model=f"{backend}/response-finish-stop", stream=True,
                                            messages=[{"role": "user", "content": "hi"}], **extra))
    if asked:
        *chunks, last = chunks
        assert last.choices == [] and (last.usage.prompt_tokens, last.usage.completion_tokens) == (3, 2)
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == "ok"
    assert all(ch.usage is None for ch in chunks)
    with o.chat.completions.stream(model=f"{backend}/response-finish-stop",
                                   messages=[{"role": "user", "content": "hi"}], **extra) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == "ok" and (final.usage is not None) == asked


@pytest.mark.parametrize("client", DIALECTS)
def test_streams_are_flushed_per_frame(servers, client):
    """Each upstream frame reaches the client when it arrives: the client's pieces come at the upstream's pace."""
    import time
    proxy, _ = servers
    body = REQUESTS[client] % (b"anthropic/response-text-tool@0.03", b"true")
    arrivals = []
    with httpx2.Client() as http:
        with http.stream("POST", proxy.url + CHAT_PATHS[client], content=body) as response:
            for _ in response.iter_raw():
                arrivals.append(time.monotonic())
    assert len(arrivals) >= 5  # 16 frames 30 ms apart (ollama gets a tool call whole: fewer pieces)
    assert arrivals[-1] - arrivals[0] > 0.2


def test_losses_go_to_a_header_and_one_structured_log_line(servers, caplog):
    """A field the backend's dialect cannot carry: counted in x-interlingua-losses, listed in the log line."""
    import logging
    import time
    proxy, _ = servers
    model = "anthropic/losses-probe/response-reasoning"
    body = (b'{"model":"%s","stream":true,"messages":[{"role":"user","content":"hi"}],'
            b'"temperature":0.3,"logit_bias":{"50256":-100}}' % model.encode())
    expected = Transcoder("openai", "anthropic")
    expected.feed(body)
    expected.close()
    assert expected.losses  # the request carries something anthropic cannot

    def lines():
        return [json.loads(r.getMessage()) for r in caplog.records
                if r.name == "interlingua.proxy" and model in r.getMessage()]

    with caplog.at_level(logging.INFO, logger="interlingua.proxy"):
        with httpx2.Client() as http:
            response = http.post(proxy.url + CHAT_PATHS["openai"], content=body)
        assert response.status_code == 200
        deadline = time.monotonic() + 2
        while not lines():  # written when the exchange ends, in the server's thread
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert response.headers["x-interlingua-losses"] == str(len(expected.losses))
    [line] = lines()
    assert line["event"] == "proxy.request" and line["status"] == 200 and line["backend"] == "anthropic"
    assert line["model"] == model and line["stream"] is True
    assert [(x["dialect"], x["path"]) for x in line["request_losses"]] == [(x.dialect, x.path) for x in expected.losses]
    assert line["losses"] == len(line["request_losses"]) + len(line["response_losses"])
