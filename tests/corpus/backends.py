"""Backend responses and streams as each API sends them: tool calls, signed thinking, usage with
cache counts, a tool call cut off at the token limit.

One assistant turn (``Turn``) is written in each dialect's own shape, member order and
framing, as its server writes it (openai: ``chat.completion`` / ``chat.completion.chunk``
SSE with ``include_usage``; anthropic: ``message`` / the event stream with ``ping`` and
``signature_delta``; ollama: one object / NDJSON with ``created_at`` and durations,
``content`` before ``thinking``).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

from .text import prose, signature, source_file


@dataclass
class Turn:
    text: str = ""
    reasoning: str = ""
    signature: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments text)
    finish: str = "stop"  # the canonical-ish intent: stop, tool, length, stop_sequence
    stop_sequence: str | None = None
    usage: dict = field(default_factory=dict)  # input, output, cache_read, cache_write, reasoning
    piece: int = 40  # stream delta size in characters
    choices: int = 1
    logprobs: bool = False


def _j(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _split(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)]


# -- openai -------------------------------------------------------------------------------------

_OPENAI_FINISH = {"stop": "stop", "tool": "tool_calls", "length": "length", "stop_sequence": "stop"}


def _openai_usage(u: dict) -> dict:
    return {"prompt_tokens": u["input"], "completion_tokens": u["output"], "total_tokens": u["input"] + u["output"],
            "prompt_tokens_details": {"cached_tokens": u.get("cache_read", 0), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": u.get("reasoning", 0), "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def _logprobs(text: str) -> dict:
    tokens = _split(text, 4)[:12]
    return {"content": [{"token": t, "logprob": -0.01 * (i + 1), "bytes": list(t.encode()),
                         "top_logprobs": [{"token": t, "logprob": -0.01 * (i + 1), "bytes": list(t.encode())}]}
                        for i, t in enumerate(tokens)], "refusal": None}


def openai_response(turn: Turn, rid: str) -> bytes:
    choices = []
    for n in range(turn.choices):
        msg = {"role": "assistant", "content": (turn.text if n == 0 else prose(rid + str(n), 30)) or None,
               "refusal": None, "annotations": []}
        if turn.calls and n == 0:
            msg["tool_calls"] = [{"id": i, "type": "function", "function": {"name": name, "arguments": args}}
                                 for i, name, args in turn.calls]
        choices.append({"index": n, "message": msg,
                        "logprobs": _logprobs(msg["content"] or "") if turn.logprobs else None,
                        "finish_reason": _OPENAI_FINISH[turn.finish]})
    return _j({"id": rid, "object": "chat.completion", "created": 1764579600, "model": "gpt-4.1-2025-04-14",
               "choices": choices, "usage": _openai_usage(turn.usage), "service_tier": "default",
               "system_fingerprint": "fp_b3f1157249"}).encode()


def openai_stream(turn: Turn, rid: str) -> bytes:
    head = {"id": rid, "object": "chat.completion.chunk", "created": 1764579600, "model": "gpt-4.1-2025-04-14",
            "service_tier": "default", "system_fingerprint": "fp_b3f1157249"}

    def chunk(delta: dict, finish=None, n: int = 0, logprobs=None) -> dict:
        return {**head, "choices": [{"index": n, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
                "usage": None}

    events = []
    for n in range(turn.choices):
        events.append(chunk({"role": "assistant", "content": "", "refusal": None}, n=n))
        text = turn.text if n == 0 else prose(rid + str(n), 30)
        for part in _split(text, turn.piece):
            events.append(chunk({"content": part}, n=n))
    for k, (cid, name, args) in enumerate(turn.calls):
        events.append(chunk({"tool_calls": [{"index": k, "id": cid, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        for part in _split(args, turn.piece):
            events.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": part}}]}))
    for n in range(turn.choices):
        events.append(chunk({}, _OPENAI_FINISH[turn.finish], n=n))
    events.append({**head, "choices": [], "usage": _openai_usage(turn.usage)})
    return ("".join(f"data: {_j(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


# -- anthropic ----------------------------------------------------------------------------------

_ANTHROPIC_STOP = {"stop": "end_turn", "tool": "tool_use", "length": "max_tokens", "stop_sequence": "stop_sequence"}


def _anthropic_usage(u: dict, output: int) -> dict:
    return {"input_tokens": u["input"], "cache_creation_input_tokens": u.get("cache_write", 0),
            "cache_read_input_tokens": u.get("cache_read", 0),
            "cache_creation": {"ephemeral_5m_input_tokens": u.get("cache_write", 0), "ephemeral_1h_input_tokens": 0},
            "output_tokens": output, "service_tier": "standard"}


def _anthropic_blocks(turn: Turn) -> list[dict]:
    blocks = []
    if turn.reasoning:
        blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": turn.signature})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for cid, name, args in turn.calls:
        blocks.append({"type": "tool_use", "id": cid, "name": name, "input": json.loads(args)})
    return blocks


def anthropic_response(turn: Turn, rid: str) -> bytes:
    return _j({"id": rid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
               "content": _anthropic_blocks(turn), "stop_reason": _ANTHROPIC_STOP[turn.finish],
               "stop_sequence": turn.stop_sequence, "usage": _anthropic_usage(turn.usage, turn.usage["output"])}).encode()


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {_j(data)}\n\n"


def anthropic_stream(turn: Turn, rid: str) -> bytes:
    """The event stream; a truncated call's ``partial_json`` stops where the tokens ran out."""
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": rid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": _anthropic_usage(turn.usage, 1)}})]
    index = 0

    def block(start: dict, deltas: list[dict]) -> None:
        nonlocal index
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": start}))
        for delta in deltas:
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if turn.reasoning:
        block({"type": "thinking", "thinking": "", "signature": ""},
              [{"type": "thinking_delta", "thinking": p} for p in _split(turn.reasoning, turn.piece)]
              + [{"type": "signature_delta", "signature": turn.signature}])
    out.append(_sse("ping", {"type": "ping"}))
    if turn.text:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _split(turn.text, turn.piece)])
    for cid, name, args in turn.calls:
        block({"type": "tool_use", "id": cid, "name": name, "input": {}},
              [{"type": "input_json_delta", "partial_json": ""}]
              + [{"type": "input_json_delta", "partial_json": p} for p in _split(args, turn.piece)])
    usage = {"input_tokens": turn.usage["input"], "cache_creation_input_tokens": turn.usage.get("cache_write", 0),
             "cache_read_input_tokens": turn.usage.get("cache_read", 0), "output_tokens": turn.usage["output"]}
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": _ANTHROPIC_STOP[turn.finish], "stop_sequence": turn.stop_sequence}, "usage": usage}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


# -- ollama -------------------------------------------------------------------------------------

_OLLAMA_DONE = {"stop": "stop", "tool": "stop", "length": "length", "stop_sequence": "stop"}
def _created(rid: str) -> str:
    """Each response its own time, as Ollama's server stamps it (Go's RFC 3339, nanoseconds:
    two responses never share one); derived from the response's id so the corpus is fixed."""
    return "2026-12-01T09:14:07.%09dZ" % (zlib.crc32(rid.encode()) % 10**9)


def _ollama_stats(turn: Turn) -> dict:
    return {"done_reason": _OLLAMA_DONE[turn.finish], "total_duration": 4_812_339_105, "load_duration": 31_220_417,
            "prompt_eval_count": turn.usage["input"], "prompt_eval_duration": 402_117_650,
            "eval_count": turn.usage["output"], "eval_duration": 4_301_005_211}


def _ollama_calls(turn: Turn) -> list[dict]:
    return [{"function": {"index": k, "name": name, "arguments": json.loads(args)}}
            for k, (_, name, args) in enumerate(turn.calls)]


def ollama_response(turn: Turn, rid: str) -> bytes:
    message = {"role": "assistant", "content": turn.text}
    if turn.reasoning:
        message["thinking"] = turn.reasoning  # ollama writes content first, then thinking
    if turn.calls:
        message["tool_calls"] = _ollama_calls(turn)
    return _j({"model": "qwen3:30b", "created_at": _created(rid), "message": message, "done": True,
               **_ollama_stats(turn)}).encode()


def ollama_stream(turn: Turn, rid: str) -> bytes:
    head = {"model": "qwen3:30b", "created_at": _created(rid)}
    lines = [{**head, "message": {"role": "assistant", "content": "", "thinking": p}, "done": False}
             for p in _split(turn.reasoning, turn.piece)]
    lines += [{**head, "message": {"role": "assistant", "content": p}, "done": False}
              for p in _split(turn.text, turn.piece)]
    if turn.calls:
        lines.append({**head, "message": {"role": "assistant", "content": "", "tool_calls": _ollama_calls(turn)},
                      "done": False})
    lines.append({**head, "message": {"role": "assistant", "content": ""}, "done": True, **_ollama_stats(turn)})
    return "".join(_j(line) + "\n" for line in lines).encode()


WRITERS = {("openai", "response"): openai_response, ("openai", "stream"): openai_stream,
           ("anthropic", "response"): anthropic_response, ("anthropic", "stream"): anthropic_stream,
           ("ollama", "response"): ollama_response, ("ollama", "stream"): ollama_stream}


# -- the turns ------------------------------------------------------------------------------------

_USAGE = {"input": 48_213, "output": 1_377, "cache_read": 45_056, "cache_write": 2_048, "reasoning": 512}


def _args(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False)


def agent_tool_turn(seed: str, thinking: bool) -> Turn:
    """Signed thinking, a sentence, two parallel calls (one writes a file: long arguments)."""
    return Turn(text="I'll read the tokenizer and rewrite the BOM check.",
                reasoning=prose(seed + "-think", 220) if thinking else "",
                signature=signature(seed) if thinking else "",
                calls=[(f"toolu_01{seed.upper()}R", "Read", _args({"file_path": "/home/dev/src/interlingua/json.py"})),
                       (f"toolu_01{seed.upper()}W", "Write", _args({"file_path": "/home/dev/src/interlingua/bom.py",
                                                                    "content": source_file(seed, 120)}))],
                finish="tool", usage=_USAGE)


def truncated_tool_turn(seed: str) -> Turn:
    """The token limit hit inside a call's arguments: the text is not JSON."""
    full = _args({"file_path": "/home/dev/src/big.py", "content": source_file(seed, 60)})
    return Turn(text="Writing the new module now.", calls=[(f"call_{seed}Tr", "Write", full[: len(full) * 2 // 3])],
                finish="length", usage=_USAGE)


def long_text_turn(seed: str, lines: int) -> Turn:
    return Turn(text="Here is the whole file:\n```python\n" + source_file(seed, lines) + "\n```", finish="stop",
                usage=_USAGE, piece=400)
