"""Error bodies in the client's dialect, and how an upstream's status maps to the client's.

Each official client turns these into its own exception class by status
(``openai.NotFoundError``, ``anthropic.AuthenticationError``,
``ollama.ResponseError`` with ``status_code``), with the message readable.
"""

from __future__ import annotations

import json

from ..canonical import error_kind as kind_for
from ..dialects.openai.response import ERROR_CODES as OPENAI_ERROR_CODES, error_type as openai_error_type
from ..errors import TranscodeError


def error_body(dialect: str, status: int, message: str, *, kind: str | None = None,
               param: str | None = None, code: str | None = None) -> bytes:
    """The body of an error response in ``dialect``'s shape. ``code``: openai's error code when
    the caller knows the cause (``model_not_found``); else the kind's own, if it has one
    (``rate_limit_exceeded``, ``insufficient_quota``), or null -- never the kind's name, which
    is no OpenAI code."""
    kind = kind or kind_for(status)
    if dialect == "anthropic":
        body: dict = {"type": "error", "error": {"type": kind, "message": message}}
    elif dialect == "openai":
        body = {"error": {"message": message, "type": openai_error_type(kind), "param": param,
                          "code": code or OPENAI_ERROR_CODES.get(kind)}}
    else:  # ollama: a bare message
        body = {"error": message}
    return json.dumps(body, ensure_ascii=False).encode()


def transcode_error_body(dialect: str, exc: TranscodeError) -> tuple[int, bytes]:
    """A client body interlingua could not read: its status and an error naming offset and path."""
    return exc.status, error_body(dialect, exc.status, str(exc), kind=exc.kind, param=exc.path)


def client_status(upstream_status: int, client_dialect: str) -> int:
    """The status the client gets for an upstream's non-2xx status.

    * 401/403 from the upstream mean the *proxy's* backend credentials were
      refused, not the client's: 502, so that a client does not drop a good key.
    * 529 (anthropic's "overloaded") is not an HTTP status other clients know: 503.
    * Everything else passes through (400, 404, 413, 422, 429, 5xx).
    """
    if upstream_status in (401, 403):
        return 502
    if upstream_status == 529 and client_dialect != "anthropic":
        return 503
    if upstream_status < 400:  # a 1xx/3xx an upstream should not send to a POST
        return 502
    return upstream_status


def upstream_message(body: bytes) -> str:
    """The human message inside an upstream error body of any dialect (or its text)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:2000] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return data["message"]
    return json.dumps(data, ensure_ascii=False)[:2000]
