"""The exact request bytes each official client sends (captured with a mock transport).

The clients are the authority on key order: the anthropic client, for one,
serialises ``messages`` before ``system`` and ``tools`` -- the case that makes
an openai encoder hold. Nothing here touches the network.
"""

from __future__ import annotations

import json

_OPENAI_REPLY = {
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}
_ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
_OLLAMA_REPLY = {
    "model": "m", "created_at": "2025-01-01T00:00:00Z",
    "message": {"role": "assistant", "content": "ok"}, "done": True,
}


def _recorder(reply: dict, module):
    seen: list[bytes] = []

    def handler(request):
        seen.append(request.read())
        return module.Response(200, json=reply)

    return seen, handler


def openai_request(**kwargs) -> bytes:
    import httpx2
    import openai

    seen, handler = _recorder(_OPENAI_REPLY, httpx2)
    client = openai.OpenAI(api_key="k", base_url="http://test/v1",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    client.chat.completions.create(**kwargs)
    return seen[0]


def anthropic_request(**kwargs) -> bytes:
    import anthropic
    import httpx2

    seen, handler = _recorder(_ANTHROPIC_REPLY, httpx2)
    client = anthropic.Anthropic(api_key="k", base_url="http://test",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    client.messages.create(**kwargs)
    return seen[0]


def ollama_request(**kwargs) -> bytes:
    # the ollama client is built on httpx (not httpx2); its MockTransport does the same job
    import httpx
    import ollama

    seen, handler = _recorder(_OLLAMA_REPLY, httpx)
    client = ollama.Client(host="http://test", transport=httpx.MockTransport(handler))
    client.chat(**kwargs)
    return seen[0]


CAPTURE = {"openai": openai_request, "anthropic": anthropic_request, "ollama": ollama_request}


def is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True
