"""How the proxy treats an upstream's HTTP, over real loopback HTTP with each upstream client (aiohttp, httpx2).

Redirects are not followed (they would carry the backend's key elsewhere); a failure while sending the
request never quotes the request's headers; media types are read case-insensitively; errors no retry can
fix say so (``x-should-retry: false``); the upstream's retry timing, rate limits and request id reach the
client; a compressed answer is inflated; a stream ends at its last event even when the upstream keeps its
body open.
"""

from __future__ import annotations

import json
import socket
import time

import anthropic
import httpx2
import ollama
import openai
import pytest

from interlingua.proxy import create_app
from interlingua.proxy.config import Backend, Config
from proxy_servers import REQUEST_ID, Server, running, scenario_bytes

DIALECTS = ("openai", "anthropic", "ollama")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
MESSAGES = [{"role": "user", "content": "hi"}]
CLIENT_ID_HEADER = {"openai": "x-request-id", "anthropic": "request-id", "ollama": "x-request-id"}
END = {"openai": b"data: [DONE]\n\n", "anthropic": b'event: message_stop\ndata: {"type":"message_stop"}\n\n'}


def body_for(client: str, model: str, *, stream: bool = False) -> bytes:
    body = {"model": model, "messages": MESSAGES, "stream": stream}
    if client == "anthropic":
        body["max_tokens"] = 50
    return json.dumps(body).encode()


def post(url: str, client: str, model: str, *, stream: bool = False, content: bytes | None = None):
    with httpx2.Client(timeout=20) as http:
        return http.post(url + PATHS[client], content=content or body_for(client, model, stream=stream))


def error_message(client: str, response) -> str:
    data = response.json()
    if client == "anthropic":
        assert data["type"] == "error"
        return data["error"]["message"]
    return data["error"]["message"] if client == "openai" else data["error"]


@pytest.fixture(scope="module", params=["aiohttp", "httpx2"])
def servers(request):
    with running(pace=0.001, upstream_client=request.param) as pair:
        yield pair


@pytest.fixture(scope="module")
def other_origin():
    """A second server standing for another origin: records every request it gets."""
    seen = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        seen.append((scope["method"], scope["path"], dict(scope["headers"])))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": scenario_bytes("response-text-tool", "anthropic", "response")})

    with Server(app) as server:
        yield server, seen


# -- 1. redirects ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_an_upstream_redirect_is_not_followed(servers, other_origin, client, backend):
    proxy, upstream = servers
    other, seen = other_origin
    upstream.redirect_to = other.url
    seen.clear()
    response = post(proxy.url, client, f"{backend}/fault-redirect")
    assert response.status_code == 502
    assert "answered 307" in error_message(client, response)
    assert response.headers["x-should-retry"] == "false"
    assert seen == []  # the backend's key went nowhere else


# -- 2. a failure sending the request ------------------------------------------------------------

@pytest.mark.parametrize("upstream_client", ["aiohttp", "httpx2"])
def test_a_failure_sending_the_request_is_a_502_that_does_not_quote_the_key(upstream_client):
    """A key the HTTP clients refuse as a header (the config check refuses it first: test_proxy_config;
    here a Config made by hand): aiohttp raised a ValueError (a bare 500), httpx2 quoted the key."""
    backends = tuple(Backend(name=d, dialect=d, url="http://127.0.0.1:9", models=(f"{d}/*",), api_key="sk-SECRET\n")
                     for d in DIALECTS)
    config = Config(backends=backends, upstream_client=upstream_client, log_requests=False)
    with Server(create_app(config)) as proxy:
        for client in DIALECTS:
            for backend in DIALECTS:
                response = post(proxy.url, client, f"{backend}/x")
                assert response.status_code == 502
                message = error_message(client, response)
                assert "upstream" in message and "SECRET" not in response.text


# -- 3. media types ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", DIALECTS)
def test_an_upper_case_content_type_is_still_a_stream(servers, backend):
    proxy, _ = servers
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
    chunks = list(o.chat.completions.create(model=f"{backend}/twist-upper", messages=MESSAGES, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).startswith("Hi")
    a = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
    with a.messages.stream(model=f"{backend}/twist-upper", max_tokens=5, messages=MESSAGES) as s:
        assert s.get_final_message().content[0].text.startswith("Hi")


# -- 4. x-should-retry -----------------------------------------------------------------------------

def test_errors_no_retry_can_fix_are_not_retried(servers):
    proxy, upstream = servers
    for status in (401, 403):
        before = len(upstream.received)
        with pytest.raises(openai.InternalServerError) as info:
            openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=2).chat.completions.create(
                model=f"anthropic/fault-{status}", messages=MESSAGES)
        assert info.value.status_code == 502 and info.value.response.headers["x-should-retry"] == "false"
        with pytest.raises(anthropic.InternalServerError):
            anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=2).messages.create(
                model=f"openai/fault-{status}", max_tokens=5, messages=MESSAGES)
        assert len(upstream.received) - before == 2  # one each: the clients' retries were not made
    for client in DIALECTS:  # the proxy's own 4xx
        assert post(proxy.url, client, "", content=b'{"model": 1').headers["x-should-retry"] == "false"
        assert post(proxy.url, client, "nobody/serves-this").headers["x-should-retry"] == "false"


def test_transient_errors_may_be_retried(servers):
    proxy, _ = servers
    slow = post(proxy.url, "openai", "slow-anthropic/fault-slow-start")
    assert slow.status_code == 504 and "x-should-retry" not in slow.headers
    over = post(proxy.url, "anthropic", "openai/fault-500")
    assert over.status_code == 500 and "x-should-retry" not in over.headers
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        with Server(create_app({"server": {"log_requests": False}, "backends": [
                {"name": "gone", "dialect": "openai", "url": url, "models": ["*"]}]})) as proxy2:
            gone = post(proxy2.url, "anthropic", "m")
    assert gone.status_code == 502 and "x-should-retry" not in gone.headers


# -- 5. the upstream's headers -----------------------------------------------------------------------

@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_retry_timing_rate_limits_and_request_id_reach_the_client(servers, client, backend):
    proxy, _ = servers
    limited = post(proxy.url, client, f"{backend}/fault-429")
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "7" and limited.headers["retry-after-ms"] == "7000"
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    assert limited.headers["anthropic-ratelimit-requests-remaining"] == "0"
    for response in (limited, post(proxy.url, client, f"{backend}/response-text-tool"),
                     post(proxy.url, client, f"{backend}/response-text-tool", stream=True)):
        assert response.headers[CLIENT_ID_HEADER[client]] == REQUEST_ID.decode()


def test_the_official_clients_read_them(servers):
    proxy, _ = servers
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.RateLimitError) as oinfo:
        o.chat.completions.create(model="anthropic/fault-429", messages=MESSAGES)
    assert oinfo.value.response.headers["retry-after"] == "7" and oinfo.value.request_id == REQUEST_ID.decode()
    raw = o.chat.completions.with_raw_response.create(model="anthropic/response-text-tool", messages=MESSAGES)
    assert raw.request_id == REQUEST_ID.decode()
    a = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as ainfo:
        a.messages.create(model="openai/fault-429", max_tokens=5, messages=MESSAGES)
    assert ainfo.value.request_id == REQUEST_ID.decode()
    message = a.messages.create(model="ollama/response-text-tool", max_tokens=5, messages=MESSAGES)
    assert message._request_id == REQUEST_ID.decode()


# -- 7. compression ----------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["gzip", "deflate"])
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_a_compressed_answer_is_inflated(servers, client, backend, how):
    proxy, _ = servers
    plain = post(proxy.url, client, f"{backend}/response-text-tool")
    packed = post(proxy.url, client, f"{backend}/twist-{how}")
    assert packed.status_code == 200

    def without_ids(data: dict) -> dict:
        return {k: v for k, v in data.items() if k not in ("id", "created", "created_at")}

    assert without_ids(packed.json()) == without_ids(plain.json())
    streamed = post(proxy.url, client, f"{backend}/twist-{how}", stream=True)
    assert streamed.status_code == 200 and b"Hi" in streamed.content and b"error" not in streamed.content
    if client in END:
        assert streamed.content.endswith(END[client])
    else:
        assert json.loads(streamed.content.splitlines()[-1])["done"] is True


@pytest.mark.parametrize("client", DIALECTS)
def test_a_compressed_error_is_read_and_an_unknown_encoding_named(servers, client):
    proxy, _ = servers
    limited = post(proxy.url, client, "anthropic/twist-gzip-429")
    assert limited.status_code == 429 and "upstream says 429" in error_message(client, limited)
    brotli = post(proxy.url, client, "openai/twist-br")
    assert brotli.status_code == 502 and "'br'" in error_message(client, brotli)


# -- 8. the end of a stream ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_a_stream_ends_at_its_last_event_though_the_upstream_lingers(servers, client, backend):
    """The upstream sends a whole stream and keeps its body open: the client's stream ends at its last
    event (no waiting for the read timeout, no error event after the end)."""
    proxy, _ = servers
    started = time.monotonic()
    response = post(proxy.url, client, f"{backend}/twist-linger", stream=True)
    assert time.monotonic() - started < 2  # the upstream lingers 10 s; the read timeout is 300 s
    assert response.status_code == 200 and b"error" not in response.content
    if client in END:
        assert response.content.endswith(END[client])
    else:
        assert json.loads(response.content.splitlines()[-1])["done"] is True


def test_the_official_clients_get_a_lingering_stream_whole(servers):
    """... and the upstream's connection is closed soon after (not pooled: its body never ended)."""
    proxy, upstream = servers
    before = len(upstream.received)
    a = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
    with a.messages.stream(model="anthropic/twist-linger", max_tokens=5, messages=MESSAGES) as s:
        assert s.get_final_message().content[0].text.startswith("Hi")
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
    chunks = list(o.chat.completions.create(model="openai/twist-linger", messages=MESSAGES, stream=True))
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    lines = list(ollama.Client(host=proxy.url).chat(model="ollama/twist-linger", messages=MESSAGES, stream=True))
    assert lines[-1].done
    records = upstream.received[before:]
    deadline = time.monotonic() + 5
    while any(r.closed_at is None for r in records) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(records) == 3 and all(r.closed_at is not None for r in records)


@pytest.mark.parametrize("client", DIALECTS)
def test_a_whole_json_answer_stands_when_its_upstream_falls_silent(servers, client):
    """A JSON answer has no last event to see: after the read timeout (0.3 s here) a document already
    whole is the answer (it was a dropped connection)."""
    proxy, _ = servers
    response = post(proxy.url, client, "slow-anthropic/twist-linger")
    assert response.status_code == 200 and "Hi" in json.dumps(response.json())


# -- 6. an answer of the other form -----------------------------------------------------------------

@pytest.mark.parametrize("client", DIALECTS)
@pytest.mark.parametrize("backend", DIALECTS)
def test_an_answer_in_the_form_not_asked_is_a_502_naming_it(servers, client, backend):
    """An upstream that ignores ``stream`` (JSON to a streaming request) or streams unasked: the client's
    reader would get an empty stream or a str (the request's ``Transcoder.asks_stream`` tells)."""
    proxy, _ = servers
    for twist, stream, said in (("json", True, "answered JSON to a request for a stream"),
                                ("stream", False, "answered a stream to a request for JSON")):
        response = post(proxy.url, client, f"{backend}/twist-{twist}", stream=stream)
        assert response.status_code == 502, (twist, response.text)
        assert said in error_message(client, response)
        assert response.headers.get("x-should-retry") == "false"
    # the official clients raise (they got nothing, or a str, before)
    if client == "openai":
        o = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="answered JSON"):
            list(o.chat.completions.create(model=f"{backend}/twist-json", messages=MESSAGES, stream=True))
    elif client == "anthropic":
        a = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.InternalServerError, match="answered a stream"):
            a.messages.create(model=f"{backend}/twist-stream", max_tokens=5, messages=MESSAGES)
    else:
        with pytest.raises(ollama.ResponseError, match="answered JSON"):
            list(ollama.Client(host=proxy.url).chat(model=f"{backend}/twist-json", messages=MESSAGES, stream=True))
