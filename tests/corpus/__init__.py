"""The realistic-traffic corpus (issue 16): agent and app traffic through every ordered pair.

Items are generated, deterministically, each time (nothing large is committed):
requests are the bytes the official clients write for a coding agent, an app that
sets every parameter and a local vision app (``requests.py``); responses and
streams are what each backend writes (``backends.py``). ``tests/test_corpus.py``
runs every item into every dialect, validates the output with the target's
official types, has the target's official client consume it, and compares the
loss records with ``expected_losses.json``.

That file is reviewed data. After a change that is meant to change losses:

    .venv/bin/python -m tests.corpus --update     # rewrite tests/corpus/expected_losses.json
    git diff tests/corpus/expected_losses.json    # check it is exactly what you meant

``python -m tests.corpus`` alone prints the items and their sizes.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

_TESTS = Path(__file__).resolve().parent.parent
if str(_TESTS) not in sys.path:  # for ``python -m tests.corpus``: official_clients lives in tests/
    sys.path.insert(0, str(_TESTS))

from . import backends as B  # noqa: E402
from . import requests as R  # noqa: E402

DIALECTS = ("openai", "anthropic", "ollama")
EXPECTED = Path(__file__).resolve().parent / "expected_losses.json"
#: the chunk size items are fed in (odd, so cuts fall inside strings, escapes and UTF-8)
CHUNK = 1021


@dataclass(frozen=True)
class Item:
    name: str
    dialect: str
    kind: str  # request | response | stream
    make: Callable[[], bytes]
    about: str
    cut_call: bool = False  # a tool call's arguments stop mid-JSON (finish at the token limit)

    @functools.cached_property
    def body(self) -> bytes:
        return self.make()


def _turn(dialect: str, kind: str, make_turn: Callable[[], B.Turn], rid: str) -> Callable[[], bytes]:
    return lambda: B.WRITERS[dialect, kind](make_turn(), rid)


def _items() -> list[Item]:
    items = [
        Item("anthropic-agent-short", "anthropic", "request", lambda: R.anthropic_agent("ag1", 6, 30),
             "coding agent: cached system blocks, 24 tools, signed thinking, PDF, tool errors, screenshot"),
        Item("anthropic-agent-long", "anthropic", "request", lambda: R.anthropic_agent("ag2", 84, 220),
             "the same agent 84 steps on: a history of several hundred kB"),
        Item("openai-app", "openai", "request", lambda: R.openai_app("app"),
             "chat app, every parameter: images, tools, refusal, late system, json_schema, n, logprobs, usage"),
        Item("openai-agent", "openai", "request", lambda: R.openai_agent("oa", 24),
             "reasoning agent: reasoning_effort + tool_choice required, a cut-off call in history"),
        Item("ollama-vision", "ollama", "request", lambda: R.ollama_vision("ov"),
             "local vision app: images, tools and results, think, format schema, options, keep_alive"),
        Item("ollama-chat-long", "ollama", "request", lambda: R.ollama_chat_long("ol", 30),
             "long local chat: thinking in history, think 'high', format json"),
    ]
    tool_turn = functools.partial(B.agent_tool_turn, "rs", True)
    for dialect in DIALECTS:
        for kind in ("response", "stream"):
            items.append(Item(f"{dialect}-{kind}-tools", dialect, kind,
                              _turn(dialect, kind, tool_turn, _rid(dialect, f"{kind}tools")),
                              "signed thinking (where the dialect has it), text, two calls, usage with cache"))
    items += [
        Item("openai-response-truncated-call", "openai", "response",
             _turn("openai", "response", lambda: B.truncated_tool_turn("otr"), _rid("openai", "trunc")),
             "finish_reason length inside a tool call: the arguments are not JSON", cut_call=True),
        Item("openai-stream-truncated-call", "openai", "stream",
             _turn("openai", "stream", lambda: B.truncated_tool_turn("ots"), _rid("openai", "strunc")),
             "the same, streamed", cut_call=True),
        Item("anthropic-stream-truncated-call", "anthropic", "stream",
             _turn("anthropic", "stream", lambda: B.truncated_tool_turn("ats"), _rid("anthropic", "strunc")),
             "max_tokens inside a tool_use: partial_json stops mid-value", cut_call=True),
        Item("openai-response-n2-logprobs", "openai", "response",
             _turn("openai", "response", lambda: B.Turn(text='{"jackets": [], "winner": "A"}', choices=2,
                                                        logprobs=True, usage=B._USAGE), _rid("openai", "n2")),
             "two choices with logprobs (the app's n=2 request)"),
        Item("anthropic-response-stop-sequence", "anthropic", "response",
             _turn("anthropic", "response", lambda: B.Turn(text="Done. " + B.prose("ss", 30), finish="stop_sequence",
                                                           stop_sequence="\n\nUser:", usage=B._USAGE),
                   _rid("anthropic", "stopseq")),
             "stopped by a stop sequence, which anthropic names"),
        Item("ollama-stream-long-text", "ollama", "stream",
             _turn("ollama", "stream", lambda: B.long_text_turn("olt", 900), _rid("ollama", "long")),
             "a long code answer, about 60 kB of text"),
        Item("anthropic-stream-long-text", "anthropic", "stream",
             _turn("anthropic", "stream", lambda: B.long_text_turn("alt", 900), _rid("anthropic", "long")),
             "the same from anthropic"),
    ]
    return items


def _rid(dialect: str, tag: str) -> str:
    return {"openai": "chatcmpl-C9x", "anthropic": "msg_01Q7", "ollama": ""}[dialect] + tag


ITEMS: dict[str, Item] = {item.name: item for item in _items()}


def cases() -> list[tuple[str, str]]:
    """(item name, target dialect) for every item and every target."""
    return [(name, target) for name in ITEMS for target in DIALECTS]


def load_expected() -> dict:
    return json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}


@functools.lru_cache(maxsize=None)
def run(name: str, target: str, chunk: int = CHUNK):
    """(output bytes, loss records as [dialect, path, reason] lists) of one item into ``target``,
    fed in ``chunk``-byte pieces. Cached: the tests look at one output several ways."""
    from interlingua import Transcoder

    item = ITEMS[name]
    body = item.body
    t = Transcoder(item.dialect, target, kind=item.kind)
    out = b"".join(t.feed(body[i:i + chunk]) for i in range(0, len(body), chunk)) + t.close()
    return out, [[loss.dialect, loss.path, loss.reason] for loss in t.losses]


def current_losses() -> dict:
    """{item: {target: losses, or None where the transcoding fails}} as the code gives them today."""
    result: dict = {}
    for name, target in cases():
        try:
            result.setdefault(name, {})[target] = run(name, target)[1]
        except Exception as exc:  # noqa: BLE001 -- recorded as "no expectation"; the test says why
            print(f"{name} -> {target}: {type(exc).__name__}: {exc}", file=sys.stderr)
            result.setdefault(name, {})[target] = None
    return result
