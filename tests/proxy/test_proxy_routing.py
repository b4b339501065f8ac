"""Routing by model in each of the proxy's three ways, and tool names carried back through a rename.

* one backend for every model: nothing read before forwarding;
* every backend of one dialect: one pass (``Transcoder(model=<function>)``);
* backends of several dialects: the body's prefix decoded until ``model``.
Each must send the request to the backend its model names, under the
backend's upstream name, with the backend's key; refuse unknown models (404)
and bodies without one (400).
"""

from __future__ import annotations

import json

import httpx2
import ollama
import pytest

from interlingua.proxy import create_app
from proxy_servers import Server, Upstream, proxy_config

DIALECTS = ("openai", "anthropic", "ollama")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}


def configs(url: str) -> dict[str, dict]:
    one_dialect = {"backends": [
        {"name": "first", "dialect": "anthropic", "url": url, "models": ["first/*"], "api_key": "key-first"},
        {"name": "renamed", "dialect": "anthropic", "url": url, "models": ["alias"], "api_key": "key-renamed",
         "model": "up/response-text-tool"},
    ]}
    multi = proxy_config(url)
    multi["backends"].append({"name": "renamed", "dialect": "ollama", "url": url, "models": ["alias"],
                              "api_key": "key-renamed", "model": "up/response-text-tool"})
    catch_all = {"backends": [{"name": "all", "dialect": "openai", "url": url, "models": ["*"], "api_key": "key-all"}]}
    return {"one-dialect": one_dialect, "several-dialects": multi, "catch-all": catch_all}


@pytest.fixture(scope="module")
def proxies():
    upstream = Upstream(pace=0.001)
    with Server(upstream) as up:
        made = configs(up.url)
        servers = {name: Server(create_app(config)) for name, config in made.items()}
        for server in servers.values():
            server.__enter__()
        try:
            yield {name: server.url for name, server in servers.items()}, upstream
        finally:
            for server in servers.values():
                server.__exit__(None, None, None)


def request_body(client: str, model: str, *, model_last: bool = True) -> bytes:
    head = b'"max_tokens":20,' if client == "anthropic" else b""
    messages = b'"messages":[{"role":"user","content":"' + b"long text " * 200 + b'"}],"stream":false'
    model_member = b'"model":' + json.dumps(model).encode()
    return b"{" + head + (messages + b"," + model_member if model_last else model_member + b"," + messages) + b"}"


CASES = {  # routing mode -> (client model, backend key, model the upstream gets)
    "one-dialect": [("first/response-text-tool", "key-first", "first/response-text-tool"),
                    ("alias", "key-renamed", "up/response-text-tool")],
    "several-dialects": [("ollama/response-text-tool", "Bearer upstream-key-ollama", "ollama/response-text-tool"),
                         ("alias", "Bearer key-renamed", "up/response-text-tool")],
    "catch-all": [("whatever/response-text-tool", "Bearer key-all", "whatever/response-text-tool")],
}


@pytest.mark.parametrize("model_last", [True, False], ids=["model-last", "model-first"])
@pytest.mark.parametrize("client", DIALECTS)
@pytest.mark.parametrize("mode", sorted(CASES))
def test_each_model_reaches_its_backend(proxies, mode, client, model_last):
    urls, upstream = proxies
    for model, key, upstream_model in CASES[mode]:
        before = len(upstream.received)
        with httpx2.Client() as http:
            response = http.post(urls[mode] + PATHS[client], content=request_body(client, model, model_last=model_last))
        assert response.status_code == 200, response.text
        [seen] = upstream.received[before:]
        sent = json.loads(seen.body)
        assert seen.valid and sent["model"] == upstream_model
        assert key in (seen.headers.get("x-api-key"), seen.headers.get("authorization"))
        assert "long text long text" in json.dumps(sent)  # the whole body went, held part and streamed part


@pytest.mark.parametrize("client", DIALECTS)
@pytest.mark.parametrize("mode", ["one-dialect", "several-dialects"])
def test_unknown_or_missing_model(proxies, mode, client):
    urls, upstream = proxies
    before = len(upstream.received)
    with httpx2.Client() as http:
        unknown = http.post(urls[mode] + PATHS[client], content=request_body(client, "nobody"))
        missing = http.post(urls[mode] + PATHS[client], content=b'{"messages":[{"role":"user","content":"x"}]}')
        broken = http.post(urls[mode] + PATHS[client], content=b'{"messages":[{"role":"user","content":"x"}]')
    assert unknown.status_code == 404 and "nobody" in unknown.text
    assert missing.status_code == 400 and "model" in missing.text
    assert broken.status_code == 400 and "byte" in broken.text
    assert len(upstream.received) == before


@pytest.mark.parametrize("mode", ["one-dialect", "several-dialects", "catch-all"])
def test_a_renamed_tool_name_comes_back_as_the_client_wrote_it(proxies, mode):
    """A tool name the backend's API refuses is renamed on the way in and named back on the way out."""
    urls, upstream = proxies
    model = {"one-dialect": "first/echo-tool", "several-dialects": "openai/echo-tool",
             "catch-all": "any/echo-tool"}[mode]
    before = len(upstream.received)
    reply = ollama.Client(host=urls[mode]).chat(
        model=model, stream=False, messages=[{"role": "user", "content": "read it"}],
        tools=[{"type": "function", "function": {"name": "fs.read/file", "description": "d",
                                                 "parameters": {"type": "object"}}}])
    [seen] = upstream.received[before:]
    sent = json.loads(seen.body)
    wire = sent["tools"][0]["name"] if seen.dialect == "anthropic" else sent["tools"][0]["function"]["name"]
    assert wire != "fs.read/file" and seen.valid  # the backend got a name its API takes
    assert reply.message.tool_calls[0].function.name == "fs.read/file"
