"""openai's error ``type`` is one word per canonical error kind, wherever interlingua writes one.

An upstream failure reaches an openai client three ways: a stream's error chunk
(``Transcoder.abort`` mid-stream), a response's error body (``abort`` before anything was
written), and the proxy's own error body (``proxy.errors.error_body``). All three say the same
``type`` for the same kind (``dialects.openai.response.error_type``): ``server_error`` for a
server's fault, ``insufficient_quota`` for an account out of credit, any other kind as it is.
And back: an openai error's code or type names its kind (``error_kind``). On the active backend
(the suite runs on both).
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
         "permission_error": "permission_error", "billing_error": "insufficient_quota",
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


#: an openai error's (type, code) -> anthropic's type, and whether the code is a recorded loss
#: (a code that names the kind is carried by it; one that says more is recorded)
OPENAI_ERRORS = [
    ("requests", "rate_limit_exceeded", "rate_limit_error", False),
    ("tokens", "rate_limit_exceeded", "rate_limit_error", False),
    ("requests", None, "rate_limit_error", False),
    ("rate_limit_error", "slow_down", "rate_limit_error", False),
    ("insufficient_quota", "insufficient_quota", "billing_error", False),
    ("insufficient_quota", "credit_balance_exhausted", "billing_error", True),
    ("invalid_request_error", "invalid_api_key", "authentication_error", False),
    ("invalid_request_error", "model_not_found", "not_found_error", False),
    ("invalid_request_error", "context_length_exceeded", "invalid_request_error", True),
    ("invalid_request_error", None, "invalid_request_error", False),
    ("authentication_error", None, "authentication_error", False),
    ("permission_error", None, "permission_error", False),
    ("request_forbidden", "unsupported_country_region_territory", "permission_error", False),
    ("not_found_error", None, "not_found_error", False),
    ("server_error", None, "api_error", False),
    ("service_unavailable_error", "server_is_overloaded", "overloaded_error", False),
    ("BadRequestError", 400, "api_error", True),  # (vLLM: an unknown type, its status as code)
    (None, None, "api_error", False),
]


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("openai_type,code,anthropic_type,code_lost", OPENAI_ERRORS)
def test_an_openai_errors_type_and_code_name_its_kind(openai_type, code, anthropic_type, code_lost, kind):
    error = {"message": "no", "type": openai_type, "param": None, "code": code}
    body = json.dumps({"error": error}).encode()
    if kind == "stream":
        body = b"data: " + body + b"\n\ndata: [DONE]\n\n"
    t = Transcoder("openai", "anthropic", kind=kind, **HOOKS)
    out = t.feed(body) + t.close()
    written = json.loads(out.split(b"data: ")[-1] if kind == "stream" else out)
    assert written["error"]["type"] == anthropic_type
    assert [loss.path for loss in t.losses] == (["$.error.code"] if code_lost else [])
