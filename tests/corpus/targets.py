"""Each dialect's official client as the judge of an output: its types validate it, the client
itself consumes it (requests: sent through the client; responses: parsed; streams: fed to
the client's stream accumulator), through a mock transport.

``consume`` returns what the client understood, normalised across dialects (``Seen``), so
a target's view can be compared with the source's own client's view of the source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anthropic
import httpx
import httpx2
import ollama
import openai
from anthropic.types import Message, MessageCreateParams, RawMessageStreamEvent
from ollama import _types as ollama_types
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming, CompletionCreateParamsStreaming,
)
from pydantic import TypeAdapter

from interlingua.lifecycle import finish_from
from official_clients import CAPTURE
from rpt import split_stream_events

_ANTHROPIC_PARAMS = TypeAdapter(MessageCreateParams)
_ANTHROPIC_EVENT = TypeAdapter(RawMessageStreamEvent)
_OPENAI_PARAMS = {False: TypeAdapter(CompletionCreateParamsNonStreaming),
                  True: TypeAdapter(CompletionCreateParamsStreaming)}


@dataclass
class Seen:
    """One assistant turn as a client reports it (responses and streams)."""

    text: str = ""
    reasoning: str = ""
    tools: list = field(default_factory=list)  # (id or None, name, arguments as the client gives them)
    finish: str | None = None  # canonical (interlingua.lifecycle)
    input: int | None = None
    output: int | None = None
    id: str | None = None
    created: object = None  # openai created / ollama created_at
    blocks: list = field(default_factory=list)  # anthropic content block types in order
    signatures: list = field(default_factory=list)  # anthropic thinking signatures


# -- validation by the official types -------------------------------------------------------------


def validate(target: str, kind: str, out: bytes) -> None:
    """Raise if ``out`` is not what the target's official types accept."""
    if kind == "request":
        body = json.loads(out)
        if target == "openai":
            _OPENAI_PARAMS[bool(body.get("stream"))].validate_python(body)
        elif target == "anthropic":
            _ANTHROPIC_PARAMS.validate_python(body)
        else:
            ollama_types.ChatRequest.model_validate(body)
        return
    if kind == "response":
        {"openai": ChatCompletion, "anthropic": Message,
         "ollama": ollama_types.ChatResponse}[target].model_validate_json(out)
        return
    for name, event in split_stream_events(out):
        if target == "openai":
            if event != "[DONE]":
                ChatCompletionChunk.model_validate(event)
        elif target == "anthropic":
            assert name == event["type"], "the SSE event name is the event's type"
            if name != "ping":  # keep-alive: not in the client's event union, which skips it
                _ANTHROPIC_EVENT.validate_python(event)
        else:
            ollama_types.ChatResponse.model_validate(event)


# -- consumption by the official clients ----------------------------------------------------------


def send_request(target: str, out: bytes) -> dict:
    """Send the output's fields through the target's client; returns what the client wrote."""
    return json.loads(CAPTURE[target](**json.loads(out)))


def _mock2(body: bytes, kind: str):
    ctype = "text/event-stream" if kind == "stream" else "application/json"
    return httpx2.MockTransport(lambda request: httpx2.Response(200, content=body, headers={"content-type": ctype}))


def openai_final(kind: str, body: bytes):
    """The ``ChatCompletion`` the openai client makes of a response or stream."""
    client = openai.OpenAI(api_key="k", base_url="http://openai.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=_mock2(body, kind)))
    messages = [{"role": "user", "content": "hi"}]
    if kind != "stream":
        return client.chat.completions.create(model="m", messages=messages)
    with client.chat.completions.stream(model="m", messages=messages) as stream:
        for _ in stream:  # the client's own accumulator (ChatCompletionStreamState)
            pass
        try:
            return stream.get_final_completion()
        except openai.LengthFinishReasonError as exc:  # the helper's way of saying "cut off"
            return exc.completion


def anthropic_final(kind: str, body: bytes):
    """The ``Message`` the anthropic client makes of a response or stream (``MessageStream``)."""
    client = anthropic.Anthropic(api_key="k", base_url="http://anthropic.test", max_retries=0,
                                 http_client=httpx2.Client(transport=_mock2(body, kind)))
    kwargs = dict(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    if kind != "stream":
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def openai_seen(kind: str, body: bytes) -> Seen:
    completion = openai_final(kind, body)
    choice = completion.choices[0]
    msg = choice.message
    usage = completion.usage
    return Seen(msg.content or "", "", [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls or []],
                finish_from("openai", choice.finish_reason), usage and usage.prompt_tokens,
                usage and usage.completion_tokens, completion.id, completion.created)


def anthropic_seen(kind: str, body: bytes) -> Seen:
    message = anthropic_final(kind, body)
    content = message.content
    u = message.usage
    total_in = None if u.input_tokens is None else (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0))
    return Seen("".join(b.text for b in content if b.type == "text"),
                "".join(b.thinking for b in content if b.type == "thinking"),
                [(b.id, b.name, json.dumps(b.input)) for b in content if b.type == "tool_use"],
                finish_from("anthropic", message.stop_reason), total_in, u.output_tokens, message.id, None,
                [b.type for b in content], [b.signature for b in content if b.type == "thinking"])


def ollama_seen(kind: str, body: bytes) -> Seen:
    ctype = "application/x-ndjson" if kind == "stream" else "application/json"
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body, headers={"content-type": ctype}))
    client = ollama.Client(host="http://ollama.test", transport=transport)
    messages = [{"role": "user", "content": "hi"}]
    parts = list(client.chat(model="m", messages=messages, stream=True)) if kind == "stream" else [
        client.chat(model="m", messages=messages)]
    seen = Seen()
    for part in parts:  # the client's iterator: one ChatResponse a line
        seen.text += part.message.content or ""
        seen.reasoning += part.message.thinking or ""
        seen.tools += [(None, c.function.name, json.dumps(dict(c.function.arguments)))
                       for c in part.message.tool_calls or []]
    last = parts[-1]
    seen.finish = finish_from("ollama", last.done_reason)
    if seen.finish == "end_turn" and seen.tools:
        seen.finish = "tool_use"  # ollama says "stop" after tool calls
    seen.input, seen.output, seen.created = last.prompt_eval_count, last.eval_count, last.created_at
    return seen


def _drop_ollama_ids(body: dict) -> None:
    """Tool-call ``id`` and ``tool_call_id``: Ollama's server reads them (the ollama engineer's
    issue 17 decision), the Python client 0.6.3 does not declare them and drops them."""
    for m in body.get("messages") or []:
        m.pop("tool_call_id", None)
        for call in m.get("tool_calls") or []:
            call.pop("id", None)


def _tool_shapes(body: dict) -> list:
    return [(t["function"]["name"], sorted(t["function"].get("parameters", {}).get("properties", {})))
            for t in body.get("tools") or []]


SEEN = {"openai": openai_seen, "anthropic": anthropic_seen, "ollama": ollama_seen}


def consume(target: str, kind: str, out: bytes):
    """The target's client takes ``out``: a request is sent (and must go out as it is), a
    response or stream is parsed; returns what the client saw."""
    if kind == "request":
        sent, given = send_request(target, out), json.loads(out)
        if target == "ollama":  # ollama's Tool model keeps only the JSON-schema keywords it declares
            assert _tool_shapes(sent) == _tool_shapes(given)
            sent.pop("tools", None), given.pop("tools", None)
            _drop_ollama_ids(given)
        assert sent == given, "the client changed the body it was given"
        return sent
    return SEEN[target](kind, out)
