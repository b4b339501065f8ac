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


def read_stream(dialect: str, data: bytes) -> tuple[list, BaseException | None]:
    """What the dialect's official client makes of stream bytes ``data``: the items its stream
    parser yields (openai ``chat.completions.stream`` events, anthropic ``messages.stream``
    events, ollama ``ChatResponse``) and the exception it raised, if any. No network."""
    items: list = []
    try:
        _READERS[dialect](data, items)
    except Exception as exc:  # noqa: BLE001 -- which exception it is, is the result
        return items, exc
    return items, None


def _openai_stream(data: bytes, items: list) -> None:
    import httpx2
    import openai

    def handler(request):
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(api_key="k", base_url="http://test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        items.extend(stream)


def _anthropic_stream(data: bytes, items: list) -> None:
    import anthropic
    import httpx2

    def handler(request):
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = anthropic.Anthropic(api_key="k", base_url="http://test", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with client.messages.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as stream:
        items.extend(stream)


def _ollama_stream(data: bytes, items: list) -> None:
    import httpx
    import ollama

    def handler(request):
        return httpx.Response(200, content=data, headers={"content-type": "application/x-ndjson"})

    client = ollama.Client(host="http://test", transport=httpx.MockTransport(handler))
    items.extend(client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))


_READERS = {"openai": _openai_stream, "anthropic": _anthropic_stream, "ollama": _ollama_stream}
