"""Source bodies of one assistant turn in each dialect, and the official clients as parsers.

Each dialect's ``final(kind, body)`` serves ``body`` through a mock transport
to that dialect's own client and returns what the client reports, normalised:
``Final(text, reasoning, tools[(id, name, args)], finish, input, output)``.
``finish`` is canonical (``interlingua.lifecycle``), so dialects compare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anthropic
import httpx
import httpx2
import ollama
import openai

from interlingua.lifecycle import finish_from

TEXT = 'Hi "there" \\ é😀\nline two'
ARGS = {"city": "Paris \"FR\"", "n": 2}
INPUT, OUTPUT = 12, 7


@dataclass
class Final:
    text: str
    tools: list = field(default_factory=list)  # (id or None, name, args dict)
    finish: str | None = None
    input: int | None = None
    output: int | None = None
    reasoning: str = ""


def _j(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _split(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)]


# -- sources ---------------------------------------------------------------------------------


def openai_stream(text: str = TEXT, args: dict = ARGS, piece: int = 5, arguments: str | None = None) -> bytes:
    """``arguments``: the arguments' text as the model wrote it (default: ``args`` compact)."""
    head = '{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x",'
    events = [head + '"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}']
    for part in _split(text, piece):
        events.append(head + '"choices":[{"index":0,"delta":{"content":' + _j(part) + '},"finish_reason":null}]}')
    arguments = _j(args) if arguments is None else arguments
    events.append(head + '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function",'
                  '"function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}')
    for part in _split(arguments, 4):
        events.append(head + '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
                      + _j(part) + '}}]},"finish_reason":null}]}')
    events.append(head + '"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}')
    events.append(head + f'"choices":[],"usage":{{"prompt_tokens":{INPUT},"completion_tokens":{OUTPUT},'
                  f'"total_tokens":{INPUT + OUTPUT}}}}}')
    events.append("[DONE]")
    return "".join(f"data: {e}\n\n" for e in events).encode()


def openai_response(text: str = TEXT, args: dict = ARGS) -> bytes:
    return _j({
        "id": "chatcmpl-9", "object": "chat.completion", "created": 1700000000, "model": "gpt-x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None,
                                              "tool_calls": [{"id": "call_abc", "type": "function",
                                                              "function": {"name": "weather",
                                                                           "arguments": _j(args)}}]},
                     "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": INPUT, "completion_tokens": OUTPUT, "total_tokens": INPUT + OUTPUT},
    }).encode()


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {_j(data)}\n\n"


def anthropic_stream(text: str = TEXT, args: dict = ARGS, piece: int = 5, arguments: str | None = None) -> bytes:
    """``arguments``: the input's text as the model wrote it (default: ``args`` compact)."""
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": INPUT, "output_tokens": 1}}})]
    out.append(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}}))
    out.append(_sse("ping", {"type": "ping"}))
    for part in _split(text, piece):
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": part}}))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(_sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}}}))
    for part in _split(_j(args) if arguments is None else arguments, 4):
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                "delta": {"type": "input_json_delta", "partial_json": part}}))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                                         "stop_sequence": None},
                                      "usage": {"output_tokens": OUTPUT}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


def anthropic_response(text: str = TEXT, args: dict = ARGS) -> bytes:
    return _j({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": text},
                    {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": args}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": INPUT, "output_tokens": OUTPUT},
    }).encode()


def ollama_stream(text: str = TEXT, args: dict = ARGS, piece: int = 5) -> bytes:
    head = {"model": "llama-x", "created_at": "2025-01-01T00:00:00Z"}
    lines = [{**head, "message": {"role": "assistant", "content": part}, "done": False}
             for part in _split(text, piece)]
    lines.append({**head, "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "weather", "arguments": args}}]}, "done": False})
    lines.append({**head, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                  "total_duration": 100, "prompt_eval_count": INPUT, "eval_count": OUTPUT})
    return "".join(_j(line) + "\n" for line in lines).encode()


def ollama_response(text: str = TEXT, args: dict = ARGS) -> bytes:
    return _j({"model": "llama-x", "created_at": "2025-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": text,
                           "tool_calls": [{"function": {"name": "weather", "arguments": args}}]},
               "done": True, "done_reason": "stop", "prompt_eval_count": INPUT, "eval_count": OUTPUT}).encode()


SOURCES = {
    ("openai", "stream"): openai_stream, ("openai", "response"): openai_response,
    ("anthropic", "stream"): anthropic_stream, ("anthropic", "response"): anthropic_response,
    ("ollama", "stream"): ollama_stream, ("ollama", "response"): ollama_response,
}

_CONTENT_TYPE = {"stream": {"openai": "text/event-stream", "anthropic": "text/event-stream",
                            "ollama": "application/x-ndjson"}}


def _handler(body: bytes, content_type: str):
    def handle(request):
        return (httpx if content_type == "application/x-ndjson-httpx" else httpx2).Response(
            200, content=body, headers={"content-type": content_type})
    return handle


# -- the official clients ---------------------------------------------------------------------


def openai_final(kind: str, body: bytes, **client_kw) -> Final:
    transport = httpx2.MockTransport(_handler(body, "text/event-stream" if kind == "stream" else "application/json"))
    client = openai.OpenAI(api_key="k", base_url="http://openai.test/v1",
                           http_client=httpx2.Client(transport=transport), max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    if kind == "stream":
        with client.chat.completions.stream(model="m", messages=messages) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
    else:
        completion = client.chat.completions.create(model="m", messages=messages)
    choice = completion.choices[0]
    msg = choice.message
    tools = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in (msg.tool_calls or [])]
    usage = completion.usage
    extra = (msg.model_extra or {})
    reasoning = extra.get("reasoning_content") or ""
    return Final(msg.content or "", tools, finish_from("openai", choice.finish_reason),
                 usage.prompt_tokens if usage else None, usage.completion_tokens if usage else None,
                 reasoning)


def anthropic_final(kind: str, body: bytes) -> Final:
    transport = httpx2.MockTransport(_handler(body, "text/event-stream" if kind == "stream" else "application/json"))
    client = anthropic.Anthropic(api_key="k", base_url="http://anthropic.test",
                                 http_client=httpx2.Client(transport=transport), max_retries=0)
    kwargs = dict(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    if kind == "stream":
        with client.messages.stream(**kwargs) as stream:
            message = stream.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    text = "".join(b.text for b in message.content if b.type == "text")
    reasoning = "".join(b.thinking for b in message.content if b.type == "thinking")
    tools = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    u = message.usage
    total_in = None if u.input_tokens is None else (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0))
    return Final(text, tools, finish_from("anthropic", message.stop_reason), total_in, u.output_tokens, reasoning)


def ollama_final(kind: str, body: bytes) -> Final:
    def handle(request):
        ctype = "application/x-ndjson" if kind == "stream" else "application/json"
        return httpx.Response(200, content=body, headers={"content-type": ctype})

    client = ollama.Client(host="http://ollama.test", transport=httpx.MockTransport(handle))
    messages = [{"role": "user", "content": "hi"}]
    if kind == "stream":
        text, reasoning, tools, last = "", "", [], None
        for part in client.chat(model="m", messages=messages, stream=True):
            text += part.message.content or ""
            reasoning += part.message.thinking or ""
            tools += [(None, c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or []]
            last = part
    else:
        last = client.chat(model="m", messages=messages)
        text, reasoning = last.message.content or "", last.message.thinking or ""
        tools = [(None, c.function.name, dict(c.function.arguments)) for c in last.message.tool_calls or []]
    finish = finish_from("ollama", last.done_reason)
    if finish == "end_turn" and tools:
        finish = "tool_use"
    return Final(text, tools, finish, last.prompt_eval_count, last.eval_count, reasoning)


FINALS = {"openai": openai_final, "anthropic": anthropic_final, "ollama": ollama_final}
