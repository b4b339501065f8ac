"""Faults through the proxy over real HTTP, with each upstream client (aiohttp and httpx2).

Upstream errors, a dropped connection, a silent upstream, a client that goes
away, and the client's own mistakes (bad JSON, oversize body, no or wrong
key, unknown model): each gets its status and an error body in the client's
own dialect, which its official client reads as the matching exception.
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

from proxy_servers import running, scenario_bytes

DIALECTS = ("openai", "anthropic", "ollama")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
GOOD_KEY = "good-key"
LIMIT = 4000


def body_for(client: str, model: str, *, stream: bool = True, text: str = "hi") -> bytes:
    extra = ',"max_tokens":50' if client == "anthropic" else ""
    return json.dumps({"model": model, "messages": [{"role": "user", "content": text}],
                       "stream": stream})[:-1].encode() + extra.encode() + b"}"


@pytest.fixture(scope="module", params=["aiohttp", "httpx2"])
def servers(request):
    with running(pace=0.001, upstream_client=request.param, api_keys=[GOOD_KEY], max_body_bytes=LIMIT) as pair:
        yield pair


def post(proxy, client: str, body: bytes, headers: dict | None = None):
    headers = {"authorization": f"Bearer {GOOD_KEY}"} if headers is None else headers
    with httpx2.Client(timeout=10) as http:
        response = http.post(proxy.url + PATHS[client], content=body, headers=headers)
        return response.status_code, response.content, response.headers


def error_message(client: str, body: bytes) -> str:
    """The message of an error body, checking it has the client dialect's shape."""
    data = json.loads(body)
    if client == "anthropic":
        assert data["type"] == "error" and set(data["error"]) == {"type", "message"}
        return data["error"]["message"]
    if client == "openai":
        assert set(data["error"]) >= {"message", "type", "param", "code"}
        return data["error"]["message"]
    assert set(data) == {"error"}
    return data["error"]


# -- upstream answers an error ---------------------------------------------------------------

MAPPED = {400: 400, 401: 502, 429: 429, 500: 500, 529: 503}


@pytest.mark.parametrize("status", sorted(MAPPED))
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_upstream_error_status_and_body_in_the_client_dialect(servers, client, backend, status):
    proxy, _ = servers
    got, body, _ = post(proxy, client, body_for(client, f"{backend}/fault-{status}"))
    expected = 529 if (status == 529 and client == "anthropic") else MAPPED[status]
    assert got == expected
    assert f"upstream says {status}" in error_message(client, body)


def test_official_clients_raise_their_own_exceptions(servers):
    proxy, _ = servers
    headers = {"authorization": f"Bearer {GOOD_KEY}"}
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(openai.RateLimitError, match="upstream says 429"):
        o.chat.completions.create(model="anthropic/fault-429", messages=[{"role": "user", "content": "x"}])
    a = anthropic.Anthropic(base_url=proxy.url, api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(anthropic.APIStatusError, match="upstream says 529") as info:
        a.messages.create(model="openai/fault-529", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 529
    with pytest.raises(ollama.ResponseError, match="upstream says 500") as oinfo:
        ollama.Client(host=proxy.url, headers=headers).chat(model="openai/fault-500", stream=False,
                                                            messages=[{"role": "user", "content": "x"}])
    assert oinfo.value.status_code == 500
    with pytest.raises(openai.NotFoundError):
        o.chat.completions.create(model="nobody-serves-this", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=proxy.url, api_key="wrong", max_retries=0).messages.create(
            model="openai/response-text-tool", max_tokens=5, messages=[{"role": "user", "content": "x"}])


@pytest.mark.parametrize("scenario", ["response-error-after-answer", "response-answer-after-error"])
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_a_json_answer_with_an_error_in_it_is_the_upstreams_fault(servers, client, backend, scenario):
    """A non-streaming upstream answer holding both content and an error (README: "A response body is
    an answer or an error"): into another dialect a 502 in the client's dialect, never a 200 with a cut
    body (or an error body with an answer after it); into its own dialect the body as it came."""
    proxy, _ = servers
    status, body, _ = post(proxy, client, body_for(client, f"{backend}/{scenario}", stream=False))
    if client == backend:
        assert status == 200 and json.loads(body) == json.loads(scenario_bytes(scenario, backend, "response"))
        return
    assert status == 502
    assert "both an answer and an error" in error_message(client, body)


# -- upstream fails after the answer started ---------------------------------------------------

@pytest.mark.parametrize("fault", ["fault-cut", "fault-drop"])
@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_a_json_answer_failing_after_its_200_drops_the_connection(servers, client, backend, fault):
    """A non-streaming answer whose upstream stops (a clean end two thirds in, a dropped connection)
    after the proxy relayed its 200 and first bytes: the connection is dropped, so the client's read
    fails, never a 200 whose cut body ends cleanly (a JSON error, or a wrong answer, in the client)."""
    proxy, _ = servers
    with pytest.raises(httpx2.RemoteProtocolError):
        post(proxy, client, body_for(client, f"{backend}/{fault}@0.05", stream=False))


def test_the_official_client_of_a_json_answer_cut_after_its_200_raises_a_connection_error(servers):
    proxy, _ = servers
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        o.chat.completions.create(model="anthropic/fault-cut@0.05", messages=[{"role": "user", "content": "hi"}])
    a = anthropic.Anthropic(base_url=proxy.url, api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(anthropic.APIConnectionError):
        a.messages.create(model="openai/fault-drop@0.05", max_tokens=5, messages=[{"role": "user", "content": "hi"}])


def stream_pieces(proxy, client: str, model: str) -> tuple[int, list[bytes]]:
    with httpx2.Client(timeout=10) as http:
        with http.stream("POST", proxy.url + PATHS[client], content=body_for(client, model),
                         headers={"x-api-key": GOOD_KEY}) as response:
            return response.status_code, list(response.iter_raw())


def ends_with_error_event(client: str, data: bytes) -> bool:
    if client == "anthropic":
        last = data.strip().split(b"\n\n")[-1]
        return last.startswith(b"event: error\n") and json.loads(last.split(b"data: ", 1)[1])["type"] == "error"
    if client == "openai":
        events = data.strip().split(b"\n\n")
        return events[-1] == b"data: [DONE]" and "error" in json.loads(events[-2][6:])
    return "error" in json.loads(data.strip().split(b"\n")[-1])


@pytest.mark.parametrize("backend", DIALECTS)
@pytest.mark.parametrize("client", DIALECTS)
def test_connection_dropped_mid_stream_ends_with_the_client_error_event(servers, client, backend):
    proxy, _ = servers
    status, pieces = stream_pieces(proxy, client, f"{backend}/fault-drop")
    assert status == 200
    assert ends_with_error_event(client, b"".join(pieces))


BROKEN = ("fault-badjson", "fault-cut")


@pytest.mark.parametrize("fault", BROKEN)
@pytest.mark.parametrize("backend", DIALECTS)
def test_a_broken_upstream_stream_is_the_upstreams_fault(servers, backend, fault):
    """An upstream stream interlingua cannot read (a frame that is not JSON, a clean end without its
    last event) is an upstream fault in every client's in-stream error (api_error -- openai's server_error,
    as its 502 body says before the first byte), never the client's invalid_request_error; openai's
    ``code`` is a string or null."""
    proxy, _ = servers
    # paced: the first frames reach the client before the fault (unpaced, one read may hold them all:
    # then nothing was relayed, and the answer is a 502 of its own)
    model, messages = f"{backend}/{fault}@0.05", [{"role": "user", "content": "hi"}]
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(openai.APIError) as info:
        for _ in o.chat.completions.create(model=model, stream=True, messages=messages):
            pass
    assert info.value.type == "server_error" and "the upstream's answer is not valid" in info.value.message
    assert info.value.body.get("code") is None
    a = anthropic.Anthropic(base_url=proxy.url, api_key=GOOD_KEY, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as ainfo:
        for _ in a.messages.create(model=model, stream=True, max_tokens=5, messages=messages):
            pass
    assert ainfo.value.body["error"]["type"] == "api_error"
    assert "the upstream's answer is not valid" in ainfo.value.body["error"]["message"]
    with pytest.raises(ollama.ResponseError, match="the upstream's answer is not valid"):
        for _ in ollama.Client(host=proxy.url, headers={"authorization": f"Bearer {GOOD_KEY}"}).chat(
                model=model, stream=True, messages=messages):
            pass


@pytest.mark.parametrize("client", DIALECTS)
def test_the_openai_error_chunk_has_no_integer_code(servers, client):
    """Every mid-stream failure (dropped, silent, broken): openai's error chunk has ``code`` null or absent
    (client ``ErrorObject.code: Optional[str]``), its ``type`` openai's for the fault (server_error)."""
    proxy, _ = servers
    for model in ("anthropic/fault-drop@0.05", "slow-ollama/fault-slow-mid", "anthropic/fault-badjson@0.05"):
        status, pieces = stream_pieces(proxy, "openai", model)
        events = b"".join(pieces).strip().split(b"\n\n")
        error = json.loads(events[-2][6:])["error"]
        assert status == 200 and events[-1] == b"data: [DONE]"
        assert error.get("code") is None and error["type"] == "server_error", (model, error)


@pytest.mark.parametrize("client", DIALECTS)
def test_upstream_silent_longer_than_the_timeout(servers, client):
    proxy, _ = servers
    started = time.monotonic()
    status, body, _ = post(proxy, client, body_for(client, "slow-anthropic/fault-slow-start"))
    assert status == 504 and "timeout" in error_message(client, body)
    assert time.monotonic() - started < 1.5  # the backend's read timeout (0.3 s), not the upstream's 2 s
    started = time.monotonic()
    status, pieces = stream_pieces(proxy, client, "slow-openai/fault-slow-mid")
    assert status == 200 and ends_with_error_event(client, b"".join(pieces))
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("client", DIALECTS)
def test_client_disconnect_closes_the_upstream_connection_within_a_second(servers, client):
    proxy, upstream = servers
    before = len(upstream.received)
    body = body_for(client, "ollama/fault-hang")
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"x-api-key: %s\r\ncontent-length: %d\r\n\r\n%s"
                     % (PATHS[client].encode(), GOOD_KEY.encode(), len(body), body))
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")  # the answer has started
        [record] = upstream.received[before:]
        while record.sent_at is None:  # the upstream is now holding the stream open
            time.sleep(0.01)
    closed_by_client = time.monotonic()
    deadline = closed_by_client + 3
    while record.closed_at is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert record.closed_at is not None, "the upstream never saw its connection close"
    assert record.closed_at - closed_by_client < 1.0


@pytest.mark.parametrize("client", DIALECTS)
def test_request_body_is_streamed_upstream_as_it_arrives(servers, client):
    """The model is known from the first chunk: the upstream gets the transcoded start before the client is done."""
    proxy, upstream = servers
    before = len(upstream.received)
    marker = f"anthropic/streamed-{client}/response-text-tool"
    head = b'{"model":"%s","stream":false,%s"messages":[{"role":"user","content":"' % (
        marker.encode(), b'"max_tokens":50,' if client == "anthropic" else b"")
    rest = b'x' * 100 + b'"}]}'
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"x-api-key: %s\r\ntransfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n"
                     % (PATHS[client].encode(), GOOD_KEY.encode(), len(head), head))
        deadline = time.monotonic() + 5
        while not any(r.body for r in upstream.received[before:]):
            assert time.monotonic() < deadline, "the upstream saw nothing before the client's body ended"
            time.sleep(0.01)
        [record] = [r for r in upstream.received[before:] if r.body]
        assert record.body.startswith(b"{") and not record.body.endswith(b"}")  # a prefix, streamed
        sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")


# -- the client's mistakes -------------------------------------------------------------------

@pytest.mark.parametrize("client", DIALECTS)
def test_malformed_json_is_400_naming_offset_and_path(servers, client):
    proxy, upstream = servers
    bad = b'{"model":"openai/response-text-tool","messages":[{"role":"user","content":"hi"},]}'
    status, body, _ = post(proxy, client, bad)
    assert status == 400
    message = error_message(client, body)
    assert f"byte {bad.index(b',]') + 1}" in message and "$.messages[1]" in message
    if client == "openai":
        assert json.loads(body)["error"]["param"].startswith("$.messages")


@pytest.mark.parametrize("client", DIALECTS)
def test_invalid_body_after_routing_drops_the_upstream_request(servers, client):
    """The model is known early (ollama key order), the body breaks later: 400, and nothing is answered upstream."""
    proxy, upstream = servers
    before = len(upstream.received)
    bad = b'{"model":"anthropic/response-text-tool","messages":[{"role":"user","content":"hi"}' + b" " * 100 + b"}"
    status, body, _ = post(proxy, client, bad)
    assert status == 400 and "byte" in error_message(client, body)
    time.sleep(0.05)
    assert all(not r.valid for r in upstream.received[before:])  # a cut body, if it arrived at all


def test_a_request_with_no_message_left_for_the_backend_is_400_in_the_client_dialect(servers):
    """openai's system-only request to an anthropic backend (which takes the system prompt
    apart and no request without a message): NoMessageError, the client's 400, and nothing
    valid upstream (rpt/request-no-message-left)."""
    proxy, upstream = servers
    before = len(upstream.received)
    body = b'{"model":"anthropic/response-text-tool","messages":[{"role":"system","content":"be brief"}]}'
    status, answer, _ = post(proxy, "openai", body)
    assert status == 400
    assert "anthropic takes no request without a message" in error_message("openai", answer)
    assert json.loads(answer)["error"]["param"] == "$.messages"
    time.sleep(0.05)
    assert all(not r.valid for r in upstream.received[before:])


@pytest.mark.parametrize("client", DIALECTS)
def test_oversize_body_is_413(servers, client):
    proxy, _ = servers
    big = body_for(client, "openai/response-text-tool", text="x" * LIMIT)
    status, body, _ = post(proxy, client, big)  # content-length says it
    assert status == 413 and str(LIMIT) in error_message(client, body)

    def chunks():  # no content-length: counted as it arrives
        for i in range(0, len(big), 512):
            yield big[i:i + 512]
    with httpx2.Client() as http:
        response = http.post(proxy.url + PATHS[client], content=chunks(),
                             headers={"authorization": f"Bearer {GOOD_KEY}"})
    assert response.status_code == 413


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer nope"}, {"x-api-key": "nope"},
                                     {"authorization": GOOD_KEY}], ids=["none", "bearer", "x-api-key", "no-scheme"])
@pytest.mark.parametrize("client", DIALECTS)
def test_missing_or_wrong_key_is_401(servers, client, headers):
    proxy, upstream = servers
    marker = f"openai/auth-{client}-{len(headers)}-{''.join(headers.values())}/response-text-tool"
    status, body, _ = post(proxy, client, body_for(client, marker), headers=headers)
    assert status == 401 and "API key" in error_message(client, body)
    assert not any(marker.encode() in r.body for r in upstream.received)  # nothing went upstream


@pytest.mark.parametrize("headers", [{"authorization": f"Bearer {GOOD_KEY}"}, {"x-api-key": GOOD_KEY}])
def test_either_key_header_is_accepted(servers, headers):
    proxy, _ = servers
    assert post(proxy, "openai", body_for("openai", "openai/response-text-tool", stream=False), headers)[0] == 200


@pytest.mark.parametrize("client", DIALECTS)
def test_unknown_model_is_404(servers, client):
    proxy, upstream = servers
    status, body, _ = post(proxy, client, body_for(client, "gemini-9"))
    assert status == 404 and "gemini-9" in error_message(client, body)
    status, body, _ = post(proxy, client, b'{"messages":[]}')
    assert status == 400 and "model" in error_message(client, body)
    assert not any(b"gemini-9" in r.body for r in upstream.received)


def test_openai_error_codes_are_openais(servers):
    """An openai client's error body carries OpenAI's own ``code`` (what code that checks
    ``error.code`` compares against), never the kind's name: an unknown model
    ``model_not_found``, a rate limit ``rate_limit_exceeded``; a failure with no one code
    (a wrong route, a server error) null."""
    proxy, _ = servers
    o = openai.OpenAI(base_url=proxy.url + "/v1", api_key=GOOD_KEY, max_retries=0)
    for model, error, code in (("nobody-serves-this", openai.NotFoundError, "model_not_found"),
                               ("anthropic/fault-429", openai.RateLimitError, "rate_limit_exceeded"),
                               ("anthropic/fault-500", openai.InternalServerError, None)):
        with pytest.raises(error) as info:
            o.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}])
        assert info.value.code == code, (model, info.value.body)
    with httpx2.Client(timeout=10) as http:
        missing = http.post(proxy.url + "/v1/nowhere", headers={"authorization": f"Bearer {GOOD_KEY}"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] is None


def test_listing_endpoints(servers):
    proxy, _ = servers
    with httpx2.Client() as http:
        assert http.get(proxy.url + "/healthz").json() == {"status": "ok"}
        assert http.get(proxy.url + "/v1/models").status_code == 401
        auth = {"authorization": f"Bearer {GOOD_KEY}"}
        assert http.get(proxy.url + "/v1/models", headers=auth).json()["object"] == "list"
        assert "has_more" in http.get(proxy.url + "/v1/models",
                                      headers={"x-api-key": GOOD_KEY, "anthropic-version": "2023-06-01"}).json()
        assert "models" in http.get(proxy.url + "/api/tags", headers=auth).json()
        assert http.get(proxy.url + "/v1/chat/completions", headers=auth).status_code == 405
        missing = http.get(proxy.url + "/nowhere", headers=auth)
        assert missing.status_code == 404 and "error" in missing.json()


#: every route and the methods it takes (its 405's ``Allow``)
ROUTES = {"/v1/chat/completions": {"POST"}, "/v1/messages": {"POST"}, "/api/chat": {"POST"},
          "/healthz": {"GET", "HEAD"}, "/v1/models": {"GET"}, "/api/tags": {"GET"}}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_a_wrong_method_is_405_with_allow(servers, path):
    """RFC 9110 15.5.6: a 405 carries ``Allow``, the methods the route takes (every route, every other method)."""
    proxy, _ = servers
    with httpx2.Client(timeout=10) as http:
        for method in METHODS:
            if method in ROUTES[path]:
                continue
            response = http.request(method, proxy.url + path, headers={"authorization": f"Bearer {GOOD_KEY}"})
            assert response.status_code == 405, (method, path)
            assert {m.strip() for m in response.headers["allow"].split(",")} == ROUTES[path], (method, path)
        assert "allow" not in http.get(proxy.url + "/nowhere").headers  # a 404 has none
