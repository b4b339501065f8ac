"""The exact request bytes each official client sends, captured with a mock transport.

The clients are the authority on each dialect's shape and key order (the
anthropic client, for one, writes ``messages`` before ``system``). Nothing here
touches the network. Used by the tests and by the spike.
"""

from __future__ import annotations

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
    """What ``openai.OpenAI().chat.completions.create(**kwargs)`` sends."""
    import httpx2
    import openai

    seen, handler = _recorder(_OPENAI_REPLY, httpx2)
    client = openai.OpenAI(api_key="k", base_url="http://test/v1",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    client.chat.completions.create(**kwargs)
    return seen[0]


def anthropic_request(**kwargs) -> bytes:
    """What ``anthropic.Anthropic().messages.create(**kwargs)`` sends."""
    import anthropic
    import httpx2

    seen, handler = _recorder(_ANTHROPIC_REPLY, httpx2)
    client = anthropic.Anthropic(api_key="k", base_url="http://test",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    client.messages.create(**kwargs)
    return seen[0]


def ollama_request(**kwargs) -> bytes:
    """What ``ollama.Client().chat(**kwargs)`` sends (the ollama client is built on httpx, not httpx2)."""
    import httpx
    import ollama

    seen, handler = _recorder(_OLLAMA_REPLY, httpx)
    client = ollama.Client(host="http://test", transport=httpx.MockTransport(handler))
    result = client.chat(**kwargs)
    if kwargs.get("stream"):
        list(result)  # a streaming request is sent when the stream is consumed
    return seen[0]


CAPTURE = {"openai": openai_request, "anthropic": anthropic_request, "ollama": ollama_request}
