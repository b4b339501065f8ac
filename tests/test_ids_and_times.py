"""Generated ids and times (issue 16 item 6; README "Response ids and times"; ``interlingua.lifecycle``).

The class, over every source -> target pair of responses and streams (and a source with
neither id nor time: an ollama-compatible server without ``created_at``):

* ids and times the source has are carried; a stream carries one id and one time in every frame;
* a response id or tool-call id the source lacks is generated, and two transcodings of the
  same source bytes never share one (with the library's default hooks);
* a time the source lacks is the wall clock at the response's start, and the clock is read
  for nothing else: where the source has a time the output does not depend on the clock;
* given the same hooks the output is the same (tests, replays), and generated ids follow the
  documented formula (a native core copies it).

And across turns: an agent history built from several responses of a backend without ids
has no repeated tool-call id, which Anthropic (and OpenAI for tool messages) refuse.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime

import pytest

import fixed_clock
import validity
from interlingua import Transcoder
from interlingua.lifecycle import generated_response_id, generated_tool_id, ollama_created_at, ollama_time_us
from response.clients import SOURCES
from rpt import split_stream_events

DIALECTS = ("openai", "anthropic", "ollama")
KINDS = ("response", "stream")
#: the library's defaults, spelled out (the suite otherwise runs on fixed_clock's)
REAL = {"clock": time.time, "entropy": os.urandom}
PREFIX = {"openai": "chatcmpl-", "anthropic": "msg_"}


def _untimed_ollama(kind: str) -> bytes:
    """An ollama-compatible server that writes no ``created_at``."""
    body = SOURCES["ollama", kind]()
    lines = [json.loads(line) for line in body.decode().splitlines() if line]
    for line in lines:
        line.pop("created_at")
    return ("".join(json.dumps(line) + "\n" for line in lines) if kind == "stream"
            else json.dumps(lines[0])).encode()


def source_body(source: str, kind: str) -> bytes:
    return _untimed_ollama(kind) if source == "ollama-untimed" else SOURCES[source, kind]()


def dialect_of(source: str) -> str:
    return source.split("-")[0]


@dataclass
class Identity:
    """The ids and times one output carries, frame by frame."""

    ids: list = field(default_factory=list)  # response ids (openai: every chunk)
    times: list = field(default_factory=list)  # microseconds since the epoch (every chunk / line)
    tools: list = field(default_factory=list)  # each tool call's id (None: it has none), in order


def _us(stamp: str) -> int:
    return ollama_time_us(json.dumps(stamp).encode())


def identity(dialect: str, kind: str, data: bytes) -> Identity:
    got = Identity()
    frames = [v for _, v in split_stream_events(data)] if kind == "stream" else [json.loads(data)]
    for frame in frames:
        if not isinstance(frame, dict):
            continue  # [DONE]
        if dialect == "openai":
            got.ids.append(frame["id"])
            got.times.append(frame["created"] * 1_000_000)
            for choice in frame["choices"]:
                part = choice.get("delta") or choice.get("message") or {}
                got.tools += [c.get("id") for c in part.get("tool_calls") or []
                              if kind == "response" or "function" in c and "name" in c["function"]]
        elif dialect == "anthropic":
            if "message" in frame and frame.get("type") == "message_start":
                got.ids.append(frame["message"]["id"])
            elif frame.get("type") == "message":
                got.ids.append(frame["id"])
            blocks = frame.get("content") or ([frame["content_block"]] if "content_block" in frame else [])
            got.tools += [b["id"] for b in blocks if b.get("type") == "tool_use"]
        else:
            if "created_at" in frame:
                got.times.append(_us(frame["created_at"]))
            got.tools += [c.get("id") for c in (frame.get("message") or {}).get("tool_calls") or []]
    return got


def transcode(source: str, target: str, kind: str, hooks: dict, body: bytes | None = None) -> bytes:
    body = source_body(source, kind) if body is None else body
    t = Transcoder(dialect_of(source), target, kind=kind, **hooks)
    return b"".join(t.feed(body[i:i + 13]) for i in range(0, len(body), 13)) + t.close()


SOURCE_NAMES = ("openai", "anthropic", "ollama", "ollama-untimed")
PAIRS = [pytest.param(s, t, k, id=f"{k}-{s}->{t}") for k in KINDS for s in SOURCE_NAMES for t in DIALECTS
         if dialect_of(s) != t]


@pytest.mark.parametrize("source,target,kind", PAIRS)
def test_ids_are_carried_or_unique_and_times_are_the_source_or_the_clock(source, target, kind):
    given = identity(dialect_of(source), kind, source_body(source, kind))
    before = time.time()
    one, two = (identity(target, kind, transcode(source, target, kind, REAL)) for _ in range(2))
    after = time.time()
    for out in (one, two):  # one id and one time for the whole response
        assert len(set(out.ids)) <= 1 and len(set(out.times)) <= 1, out
        assert len(out.tools) == len(given.tools)
    if target in PREFIX:  # a response id
        if given.ids:
            assert one.ids[0] == two.ids[0] == given.ids[0]
        else:
            assert one.ids[0] != two.ids[0]
            assert all(re.fullmatch(PREFIX[target] + "[0-9a-f]{24}", i[0]) for i in (one.ids, two.ids))
        if any(given.tools):
            assert one.tools == two.tools == given.tools
        else:
            assert not set(one.tools) & set(two.tools)
            assert all(re.fullmatch("call_[0-9a-f]{24}", i) for i in one.tools + two.tools)
    if target != "anthropic":  # a time (anthropic has no field for one)
        if given.times:
            assert one.times[0] == two.times[0] == given.times[0]
        else:
            resolution = 1_000_000 if target == "openai" else 1  # openai: whole seconds
            for out in (one, two):
                assert int(before * 1_000_000) // resolution * resolution <= out.times[0] <= after * 1_000_000


@pytest.mark.parametrize("source,target,kind", PAIRS)
def test_the_clock_is_used_only_where_the_source_has_no_time(source, target, kind):
    early = {"clock": lambda: 1767225600.25, "entropy": fixed_clock.entropy}
    late = {"clock": lambda: 1767312000.75, "entropy": fixed_clock.entropy}
    out = transcode(source, target, kind, early)
    assert transcode(source, target, kind, early) == out  # the same hooks: the same bytes
    given = identity(dialect_of(source), kind, source_body(source, kind))
    moved = transcode(source, target, kind, late)
    if given.times:
        assert moved == out
    elif target != "anthropic":
        seconds_only = target == "openai"  # created: whole seconds
        assert identity(target, kind, out).times[0] == (1767225600_000000 if seconds_only else 1767225600_250000)
        assert identity(target, kind, moved).times[0] == (1767312000_000000 if seconds_only else 1767312000_750000)


@pytest.mark.parametrize("target", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_time_after_the_content_still_gives_one_id_and_one_time(target, kind):
    """Reversed keys put created_at after the content (and model last): one id and one time in
    every frame all the same (the decoder starts the message at model, so the time is known
    by then; a time that came after the first frame would not be used)."""
    lines = [json.loads(line) for line in SOURCES["ollama", kind]().decode().splitlines()]
    body = "".join(json.dumps(dict(reversed(line.items()))) + "\n" for line in lines).encode()
    hooks = {"clock": lambda: 1767225600.5, "entropy": fixed_clock.entropy}
    got = identity(target, kind, transcode("ollama", target, kind, hooks, body if kind == "stream" else body.strip()))
    assert len(set(got.ids)) == 1 and len(set(got.times)) <= 1
    if target == "openai":
        assert got.times[0] == 1735689600_000000  # 2025-01-01T00:00:00Z, the source's


@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_a_time_that_comes_after_the_first_frame_is_not_used(target):
    """A stream whose first lines have no created_at: the first frame goes out with the clock,
    and every later frame keeps that time and id (nothing is held for a timestamp)."""
    lines = [json.loads(line) for line in SOURCES["ollama", "stream"]().decode().splitlines()]
    for line in lines[:-1]:
        line.pop("created_at")
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    hooks = {"clock": lambda: 1767225600.5, "entropy": fixed_clock.entropy}
    got = identity(target, "stream", transcode("ollama", target, "stream", hooks, body))
    assert len(set(got.ids)) == 1 and len(set(got.times)) <= 1
    if target == "openai":
        assert got.times[0] == 1767225600_000000


@pytest.mark.parametrize("target", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", KINDS)
def test_generated_ids_follow_the_documented_formula(target, kind):
    """``prefix`` + 24 hex of SHA-256(nonce, 0, the time in microseconds, 0, model); tool calls
    ``call_`` + 24 hex of SHA-256(response id, 0, index) -- the native core copies this."""
    nonce = bytes.fromhex("0123456789abcdef01234567")
    hooks = {"clock": lambda: 1767225600.5, "entropy": lambda n: nonce}
    for source, stamp in (("ollama", b"1735689600000000"), ("ollama-untimed", b"1767225600500000")):
        got = identity(target, kind, transcode(source, target, kind, hooks))
        digest = hashlib.sha256(nonce + b"\0" + stamp + b"\0" + b"llama-x").hexdigest()[:24]
        assert got.ids[0] == PREFIX[target] + digest == generated_response_id(
            PREFIX[target], nonce, int(stamp), "llama-x")
        assert got.tools == ["call_" + hashlib.sha256(got.ids[0].encode() + b"\0" + b"0").hexdigest()[:24]]
        assert got.tools == [generated_tool_id(got.ids[0], 0)]


def test_the_default_hooks_are_the_wall_clock_and_the_os_entropy():
    """A ``Transcoder`` given no hooks reads ``time.time`` and ``os.urandom`` (the suite's
    fixed ones are installed over the reader: ``fixed_clock.DEFAULT_START`` is the library's)."""
    before = time.time()
    one, two = fixed_clock.DEFAULT_START(None, None), fixed_clock.DEFAULT_START(None, None)
    after = time.time()
    assert int(before * 1e6) - 1 <= one.time_us <= two.time_us <= after * 1e6 + 1
    assert len(one.nonce) == 12 and one.nonce != two.nonce


@pytest.mark.parametrize("hooks,message", [
    ({"clock": lambda: "now"}, "clock"), ({"clock": lambda: -1.0}, "clock"), ({"clock": lambda: float("nan")}, "clock"),
    ({"clock": lambda: 1e12}, "clock"), ({"entropy": lambda n: b"short"}, "entropy"),
    ({"entropy": lambda n: "x" * n}, "entropy"),
])
def test_a_hook_that_returns_nonsense_is_refused_when_the_transcoder_is_made(hooks, message):
    with pytest.raises(ValueError, match=message):
        fixed_clock.DEFAULT_START(hooks.get("clock"), hooks.get("entropy"))
    with pytest.raises(ValueError, match=message):
        Transcoder("anthropic", "openai", kind="response", **hooks)


def test_a_request_or_a_same_dialect_response_reads_no_hook():
    calls = []
    counting = {"clock": lambda: calls.append(1) or 1.0, "entropy": lambda n: calls.append(1) or bytes(n)}
    request = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    for source, target, kind in (("openai", "anthropic", "request"), ("ollama", "ollama", "stream"),
                                 ("openai", "openai", "response")):
        body = request if kind == "request" else SOURCES[source, kind]()
        t = Transcoder(source, target, kind=kind, **counting)
        t.feed(body)
        t.close()
    assert calls == []


@pytest.mark.parametrize("time_us,stamp", [
    (1767225600_000000, "2026-01-01T00:00:00Z"), (1767225600_500000, "2026-01-01T00:00:00.5Z"),
    (1767225600_000001, "2026-01-01T00:00:00.000001Z"), (0, "1970-01-01T00:00:00Z"),
])
def test_ollama_times_are_written_as_go_writes_them(time_us, stamp):
    """Go's RFC3339Nano (what Ollama writes): UTC, trailing zeros of the fraction trimmed."""
    assert ollama_created_at(time_us) == json.dumps(stamp).encode()
    assert datetime.fromisoformat(stamp).timestamp() == time_us / 1e6


@pytest.mark.parametrize("stamp,time_us", [
    ("2025-06-01T10:00:00.987654321Z", 1748772000_987654), ("2025-06-01T12:00:00+02:00", 1748772000_000000),
    ("2025-06-01T10:00:00Z", 1748772000_000000), ("yesterday", None), ("0001-01-01T00:00:00Z", None),
])
def test_ollama_times_are_read_to_the_microsecond(stamp, time_us):
    assert ollama_time_us(json.dumps(stamp).encode()) == time_us


# -- across turns: an agent history from several responses ----------------------------------------


def _ollama_turn(n: int) -> bytes:
    """A backend without tool-call ids whose time has whole seconds only (the same every turn)."""
    return json.dumps({"model": "qwen3", "created_at": "2026-01-01T00:00:00Z", "message": {
        "role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "read", "arguments": {"path": f"{n}.py"}}},
            {"function": {"name": "read", "arguments": {"path": f"{n}b.py"}}}]},
        "done": True, "done_reason": "stop"}).encode()


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_history_from_several_responses_repeats_no_tool_call_id(kind):
    """Anthropic refuses a request whose tool_use ids repeat; openai one whose tool messages do."""
    history = {"anthropic": [{"role": "user", "content": "refactor"}], "openai": [{"role": "user", "content": "go"}]}
    for n in range(4):
        body = _ollama_turn(n)  # the same bytes every turn would do too: see the next test
        if kind == "stream":
            body += b"\n"
        for target in ("anthropic", "openai"):
            ids = identity(target, kind, transcode("ollama", target, kind, REAL, body)).tools
            if target == "anthropic":
                history[target] += [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "read", "input": {}}
                                                      for i in ids]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"}
                                                 for i in ids]}]
            else:
                history[target] += [
                    {"role": "assistant", "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}} for i in ids]},
                    *({"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids)]
    anthropic_request = {"model": "claude-x", "max_tokens": 100, "messages": history["anthropic"]}
    openai_request = {"model": "gpt-x", "messages": history["openai"]}
    assert validity.check("anthropic", "request", json.dumps(anthropic_request).encode()) == []
    assert validity.check("openai", "request", json.dumps(openai_request).encode()) == []
    for source, body, target in (("anthropic", anthropic_request, "openai"), ("openai", openai_request, "anthropic")):
        t = Transcoder(source, target)  # the next turn through a gateway: still valid (conftest checks)
        t.feed(json.dumps(body).encode())
        t.close()


def test_the_same_backend_bytes_twice_still_give_new_ids():
    """A replayed or cached backend answer (same bytes) is another response: new ids."""
    body = _ollama_turn(0)
    seen = [identity("anthropic", "response", transcode("ollama", "anthropic", "response", REAL, body))
            for _ in range(2)]
    assert seen[0].ids != seen[1].ids and not set(seen[0].tools) & set(seen[1].tools)
