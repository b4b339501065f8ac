"""The corpus the spike replays: what real writers put on the wire, in every key order.

* **client** bodies: the same conversations in each dialect, serialised by
  that dialect's official client (``spike.clients``), at several sizes;
* the same bodies with keys **sorted** (``json.dumps(sort_keys=True)``, Go maps,
  jq -S), **reversed**, and in a **seeded-random** order (every object);
* the shared **rpt** scenarios (incl. ``large-10k`` / ``large-100k``), parsed
  with ``tests/rpt.py`` -- never copied;
* **streams** in each dialect's wire framing, with interleaved parallel
  tool-call deltas and usage after the finish; used only for dialects whose
  ``stream`` codec exists.

Bodies are built for every dialect; the measurement skips a source whose
codec is not available, so a dialect that lands later is picked up as is.
"""

from __future__ import annotations

import base64
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import clients

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # tests/rpt.py: the scenario parser

#: scale of the generated conversations -> approximate body size
SCALES = {"1k": 1, "10k": 10, "100k": 100, "1m": 1000}
ORDERS = ("client", "sorted", "reversed", "random")


@dataclass
class Case:
    dialect: str
    kind: str
    name: str  # conversation / scenario
    order: str  # client | sorted | reversed | random | rpt | wire
    body: bytes
    options: dict = field(default_factory=dict)
    #: rpt scenario folder, to find the other dialects' scripts of the same conversation
    scenario: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name}/{self.order}"


# -- key orders -------------------------------------------------------------------


def _reorder(value, order: str, rng: random.Random):
    if isinstance(value, list):
        return [_reorder(v, order, rng) for v in value]
    if not isinstance(value, dict):
        return value
    keys = list(value)
    if order == "sorted":
        keys.sort()
    elif order == "reversed":
        keys.reverse()
    elif order == "random":
        rng.shuffle(keys)
    return {k: _reorder(value[k], order, rng) for k in keys}


def reorder_body(body: bytes, order: str, seed: int = 0) -> bytes:
    if order == "client":
        return body
    value = json.loads(body)
    if order == "sorted":
        return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()
    return json.dumps(_reorder(value, order, random.Random(seed)), ensure_ascii=False).encode()


# -- conversations, per dialect, as client-call keyword arguments ------------------


def _text(n: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "\"quoted\"", "é", "中文", "😀", "line\n", "tab\t"]
    return " ".join(rng.choice(words) for _ in range(max(1, n // 6)))


def _png(n: int) -> str:
    return base64.b64encode(bytes(range(256)) * max(1, n // 256)).decode()[:max(4, n) // 4 * 4]


def openai_conversations(scale: int) -> dict[str, dict]:
    turns = []
    for i in range(max(1, scale)):
        turns += [{"role": "user", "content": _text(400, i)}, {"role": "assistant", "content": _text(400, i + 1)}]
    args = lambda city: json.dumps({"city": city, "note": _text(40 * scale, 7)})
    tools = [{"type": "function", "function": {"name": "weather", "description": "Weather now",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    return {
        "chat": dict(model="gpt-4o", messages=[{"role": "system", "content": "Be brief."}, *turns]),
        "tools": dict(model="gpt-4o", tools=tools, tool_choice="auto", messages=[
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": args("Paris")}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": args("Rome")}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": _text(400 * scale, 3)},
            {"role": "tool", "tool_call_id": "call_2", "content": _text(400 * scale, 4)},
            {"role": "user", "content": "Thanks. Compare them."}]),
        "image": dict(model="gpt-4o", messages=[{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _png(900 * scale), "detail": "low"}}]}]),
        "long-text": dict(model="gpt-4o", max_completion_tokens=100, messages=[
            {"role": "system", "content": "Summarise."}, {"role": "user", "content": _text(1000 * scale, 5)}]),
    }


def anthropic_conversations(scale: int) -> dict[str, dict]:
    turns = []
    for i in range(max(1, scale)):
        turns += [{"role": "user", "content": _text(400, i)}, {"role": "assistant", "content": _text(400, i + 1)}]
    tool_input = lambda city: {"city": city, "note": _text(40 * scale, 7)}
    tools = [{"name": "weather", "description": "Weather now",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    return {
        "chat": dict(model="claude", max_tokens=100, system="Be brief.", messages=turns),
        "tools": dict(model="claude", max_tokens=100, system="Use tools.", tools=tools, tool_choice={"type": "auto"}, messages=[
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": tool_input("Paris")},
                {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": tool_input("Rome")}]},
            # text before the tool results in one user message: openai wants the tool messages first
            {"role": "user", "content": [
                {"type": "text", "text": "Here they are. Compare them."},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": _text(400 * scale, 3)},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": _text(400 * scale, 4)}]}]),
        "image": dict(model="claude", max_tokens=100, messages=[{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png(900 * scale)}}]}]),
        "long-text": dict(model="claude", max_tokens=100, system="Summarise.",
                          messages=[{"role": "user", "content": _text(1000 * scale, 5)}]),
    }


def ollama_conversations(scale: int) -> dict[str, dict]:
    turns = []
    for i in range(max(1, scale)):
        turns += [{"role": "user", "content": _text(400, i)}, {"role": "assistant", "content": _text(400, i + 1)}]
    tools = [{"type": "function", "function": {"name": "weather", "description": "Weather now",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    call = lambda city: {"function": {"name": "weather", "arguments": {"city": city, "note": _text(40 * scale, 7)}}}
    return {
        "chat": dict(model="llama3", messages=[{"role": "system", "content": "Be brief."}, *turns]),
        "tools": dict(model="llama3", tools=tools, messages=[
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "", "tool_calls": [call("Paris"), call("Rome")]},
            {"role": "tool", "content": _text(400 * scale, 3), "tool_name": "weather"},
            {"role": "tool", "content": _text(400 * scale, 4), "tool_name": "weather"},
            {"role": "user", "content": "Thanks. Compare them."}]),
        "image": dict(model="llava", messages=[{"role": "user", "content": "What is this?", "images": [_png(900 * scale)]}]),
        "long-text": dict(model="llama3", messages=[
            {"role": "system", "content": "Summarise."}, {"role": "user", "content": _text(1000 * scale, 5)}]),
    }


CONVERSATIONS = {"openai": openai_conversations, "anthropic": anthropic_conversations,
                 "ollama": ollama_conversations}


def request_cases(dialect: str, scales=SCALES) -> list[Case]:
    cases = []
    for scale_name, scale in scales.items():
        for name, kwargs in CONVERSATIONS[dialect](scale).items():
            body = clients.CAPTURE[dialect](**kwargs)
            for n, order in enumerate(ORDERS):
                cases.append(Case(dialect, "request", f"{name}-{scale_name}", order, reorder_body(body, order, n)))
    return cases


# -- the shared rpt scenarios ----------------------------------------------------


def script_options(script) -> dict:
    """A script's ``Options`` fields: its clock and entropy hooks pin generated ids and
    times, which buffering does not depend on, so the spike leaves them out."""
    import rpt

    return {name: value for name, value in script.options.items() if name not in rpt.HOOKS}


def rpt_cases(rpt_root: Path | None = None) -> list[Case]:
    import rpt

    cases = []
    for path in sorted((rpt_root or rpt.RPT_ROOT).glob("*/*.*.rpt")):
        script = rpt.parse_wire(path)
        if script.error or not script.body:
            continue
        cases.append(Case(script.dialect, script.kind, script.scenario, "rpt", script.body,
                          script_options(script), scenario=script.scenario))
    return cases


# -- streams: each dialect's wire framing ------------------------------------------


def _sse(events: list[dict], *, named: bool = False, done: bool = False) -> bytes:
    out = []
    for event in events:
        data = json.dumps(event, ensure_ascii=False)
        out.append((f"event: {event['type']}\n" if named else "") + f"data: {data}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _deltas(text: str, size: int = 12) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def openai_stream(scale: int, order: str) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o"}
    chunk = lambda delta, finish=None: {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in _deltas(_text(200 * scale, 1))]
    a, b = _deltas(json.dumps({"city": "Paris", "n": _text(20 * scale, 2)})), _deltas(json.dumps({"city": "Rome"}))
    events.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}]}))
    events.append(chunk({"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "weather", "arguments": ""}}]}))
    for i in range(max(len(a), len(b))):  # parallel tool calls, argument deltas interleaved
        for index, parts in ((0, a), (1, b)):
            if i < len(parts):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": parts[i]}}]}))
    events.append(chunk({}, "tool_calls"))
    events.append({**base, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}})
    if order != "client":
        events = [_reorder(e, order, random.Random(n)) for n, e in enumerate(events)]
    return _sse(events, done=True)


def anthropic_stream(scale: int, order: str) -> bytes:
    text = _deltas(_text(200 * scale, 1))
    events = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                                                    "content": [], "stop_reason": None, "stop_sequence": None,
                                                    "usage": {"input_tokens": 9, "output_tokens": 1}}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in text]
    events.append({"type": "content_block_stop", "index": 0})
    for index, city in ((1, "Paris"), (2, "Rome")):
        events.append({"type": "content_block_start", "index": index,
                       "content_block": {"type": "tool_use", "id": f"toolu_{index}", "name": "weather", "input": {}}})
        for part in _deltas(json.dumps({"city": city, "n": _text(20 * scale, index)})):
            events.append({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 5}})
    events.append({"type": "message_stop"})
    if order != "client":
        events = [_reorder(e, order, random.Random(n)) for n, e in enumerate(events)]
    return _sse(events, named=True)


def ollama_stream(scale: int, order: str) -> bytes:
    base = {"model": "llama3", "created_at": "2025-01-01T00:00:00Z"}
    events = [{**base, "message": {"role": "assistant", "content": t}, "done": False} for t in _deltas(_text(200 * scale, 1))]
    events.append({**base, "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
        {"function": {"name": "weather", "arguments": {"city": "Rome"}}}]}, "done": False})
    events.append({**base, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                   "prompt_eval_count": 9, "eval_count": 5})
    if order != "client":
        events = [_reorder(e, order, random.Random(n)) for n, e in enumerate(events)]
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode()


STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream, "ollama": ollama_stream}


def stream_cases(dialect: str, scales=SCALES) -> list[Case]:
    return [Case(dialect, "stream", f"tools-stream-{scale_name}", order, STREAMS[dialect](scale, order))
            for scale_name, scale in scales.items() for order in ORDERS]
