"""openai's error ``type`` is one word per canonical error kind, wherever interlingua writes one.

An upstream failure reaches an openai client three ways: a stream's error chunk
(``Transcoder.abort`` mid-stream), a response's error body (``abort`` before anything was
written), and the proxy's own error body (``proxy.errors.error_body``). All three say the same
``type`` for the same kind (``dialects.openai.response.error_type``): ``server_error`` for a
server's fault, any other kind as it is. On the active backend (the suite runs on both).
"""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder
from interlingua.canonical import Error
from interlingua.proxy.errors import error_body

KINDS = {"api_error": "server_error", "overloaded_error": "server_error", "timeout_error": "server_error",
         "invalid_request_error": "invalid_request_error", "rate_limit_error": "rate_limit_error",
         "authentication_error": "authentication_error", "not_found_error": "not_found_error",
         "some_new_error": "some_new_error"}
STATUS = {"api_error": 500, "overloaded_error": 529, "timeout_error": 504, "rate_limit_error": 429}
ANTHROPIC_START = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
                   b'"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
                   b'"output_tokens":0}}}\n\n')
HOOKS = {"clock": lambda: 1764579600.5, "entropy": lambda n: bytes(n)}


@pytest.mark.parametrize("kind", KINDS)
def test_every_place_says_the_same_type(kind):
    stream = Transcoder("anthropic", "openai", kind="stream", **HOOKS)
    out = stream.feed(ANTHROPIC_START) + stream.abort(Error(kind, "boom"))
    chunks = [line[6:] for line in out.split(b"\n") if line.startswith(b"data: {")]
    in_stream = json.loads(chunks[-1])["error"]["type"]
    response = Transcoder("anthropic", "openai", kind="response", **HOOKS)
    body = json.loads(response.abort(Error(kind, "boom")))["error"]["type"]
    proxy = json.loads(error_body("openai", STATUS.get(kind, 400), "boom", kind=kind))["error"]["type"]
    assert in_stream == body == proxy == KINDS[kind]
