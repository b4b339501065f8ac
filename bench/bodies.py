"""The bytes the benchmarks run on: rpt scenarios (parsed, never copied) and larger generated shapes.

Every shape is built for every dialect; a benchmark runs interlingua only on
pairs whose codecs exist (``interlingua.dialects.codecs``), so a dialect that
lands is benchmarked without edits here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import rpt  # tests/rpt.py (bench/conftest.py puts tests/ on sys.path)

from interlingua.dialects import DIALECTS, available

MIB = 1 << 20
_WORDS = "lorem ipsum \"dolor\" sit amet, é 中 😀\n "


@dataclass(frozen=True)
class Body:
    shape: str  # large-10k, many-1mb, huge-10mb, ...
    dialect: str
    kind: str
    data: bytes
    frame: int | None  # how interlingua is fed (None: 64 KiB reads)

    @property
    def group(self) -> str:
        cut = f"/{self.frame}B-frames" if self.frame else ""
        return f"{self.kind}:{self.shape}{cut}:{self.dialect}"


def targets(dialect: str, kind: str) -> list[str]:
    """Every target an interlingua run from ``dialect`` can go to today (ordered pairs)."""
    if not available(dialect, kind):
        return []
    return [t for t in DIALECTS if available(t, kind)]


# -- rpt scenarios ------------------------------------------------------------------


@cache
def rpt_bodies(scenario: str) -> dict[tuple[str, str], bytes]:
    """(dialect, kind) -> body of every wire script in ``rpt/<scenario>/``.

    The large-* scenarios are one system prompt and one generated user text; a
    dialect without its own script there gets the same conversation (same
    generated text) in its client's order, so baselines such as LiteLLM's
    anthropic translation run on the same conversation before that dialect's
    script exists."""
    scripts = [rpt.parse_wire(p) for p in sorted((rpt.RPT_ROOT / scenario).glob("*.*.rpt"))]
    bodies = {(s.dialect, s.kind): s.body for s in scripts}
    source = next((s for s in scripts if s.kind == "request" and "big" in s.variables), None)
    if source is not None:
        for dialect in DIALECTS:
            bodies.setdefault((dialect, "request"),
                              _request(dialect, "Summarise.", [("user", source.variables["big"])]))
    return bodies


# -- generated shapes -----------------------------------------------------------------


def _text(size: int) -> str:
    return (_WORDS * (size // len(_WORDS) + 1))[:size]


def _request(dialect: str, system: str, turns: list[tuple[str, str]]) -> bytes:
    """A request in the writer's order of that dialect's official client."""
    messages = [{"role": role, "content": text} for role, text in turns]
    if dialect == "anthropic":  # the anthropic client: max_tokens, messages, model, system
        value = {"max_tokens": 1024, "messages": messages, "model": "claude", "system": system}
    elif dialect == "ollama":
        value = {"model": "llama3", "stream": False, "messages": [{"role": "system", "content": system}, *messages]}
    else:
        value = {"model": "gpt-4o", "messages": [{"role": "system", "content": system}, *messages]}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@cache
def many_messages(dialect: str, count: int = 1250, size: int = MIB) -> bytes:
    per = size // count - 40
    return _request(dialect, "Be brief.",
                    [("user" if i % 2 == 0 else "assistant", _text(per)) for i in range(count)])


@cache
def huge_text(dialect: str, size: int) -> bytes:
    return _request(dialect, "Summarise.", [("user", _text(size))])


_WEATHER_TOOL = ("get_weather", "Current weather for a city: temperature, wind and \"feels like\" (°C or °F).",
                 {"type": "object", "properties": {
                     "location": {"type": "string", "description": "City and country, e.g. Zürich, CH"},
                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                  "required": ["location"]})
_CALL_ARGS = {"location": "Zürich, CH", "unit": "celsius"}
_CALL_RESULT = '{"temperature": 21.5, "wind": "12 km/h NW", "summary": "Sonnig — «leichte» Brise"}'


@cache
def conversation(dialect: str, size: int = 10_000) -> bytes:
    """A chat of several messages with a tool definition, a tool call and its result: prose
    and a source file with escapes and non-ASCII (tests/corpus/text.py), in the order of
    that dialect's official client. The per-token cost shows here (the rpt large-* bodies are one long text)."""
    from corpus.text import prose, source_file  # tests/corpus: quotes, newlines, tabs, non-ASCII, emoji

    words = size // 46
    texts = [prose(f"conv{i}", words) for i in range(6)]
    texts[3] = "Why does this fail?\n\n" + source_file("conv", size // 400)
    system = "You are a helpful assistant.\nAnswer in the user's language; use tools when useful."
    name, description, schema = _WEATHER_TOOL
    if dialect == "anthropic":  # the anthropic client: max_tokens, messages, model, system, tools
        messages = [
            {"role": "user", "content": texts[0]},
            {"role": "assistant", "content": [{"type": "text", "text": texts[1]},
                                              {"type": "tool_use", "id": "toolu_01", "name": name, "input": _CALL_ARGS}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": _CALL_RESULT}]},
            {"role": "assistant", "content": texts[2]},
            {"role": "user", "content": texts[3]},
            {"role": "assistant", "content": texts[4]},
            {"role": "user", "content": texts[5]},
        ]
        value = {"max_tokens": 1024, "messages": messages, "model": "claude", "system": system,
                 "tools": [{"name": name, "description": description, "input_schema": schema}]}
    else:
        tool = {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
        if dialect == "ollama":
            call = {"function": {"name": name, "arguments": _CALL_ARGS}}
            result = {"role": "tool", "content": _CALL_RESULT, "tool_name": name}
        else:
            call = {"id": "call_01", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(_CALL_ARGS, ensure_ascii=False)}}
            result = {"role": "tool", "tool_call_id": "call_01", "content": _CALL_RESULT}
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": texts[0]},
            {"role": "assistant", "content": texts[1], "tool_calls": [call]},
            result,
            {"role": "assistant", "content": texts[2]},
            {"role": "user", "content": texts[3]},
            {"role": "assistant", "content": texts[4]},
            {"role": "user", "content": texts[5]},
        ]
        if dialect == "ollama":
            value = {"model": "llama3", "stream": False, "messages": messages, "tools": [tool]}
        else:
            value = {"messages": messages, "model": "gpt-4o", "tools": [tool]}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


_AGENT_TOOLS = [  # (name, description, properties, required): an agent framework's usual tool belt
    ("read_file", "Read a UTF-8 text file from the workspace and return its contents.",
     {"path": {"type": "string", "description": "Path relative to the workspace root."},
      "offset": {"type": "integer", "description": "First line to return (0-based)."},
      "limit": {"type": "integer", "description": "How many lines to return at most."}}, ["path"]),
    ("write_file", "Create or overwrite a file in the workspace with the given content.",
     {"path": {"type": "string", "description": "Path relative to the workspace root."},
      "content": {"type": "string", "description": "The whole new content of the file."}}, ["path", "content"]),
    ("edit_file", "Replace one exact occurrence of a string in a file.",
     {"path": {"type": "string"}, "old": {"type": "string", "description": "The text to replace; must be unique."},
      "new": {"type": "string", "description": "The replacement text."}}, ["path", "old", "new"]),
    ("list_dir", "List the entries of a directory, with their sizes.",
     {"path": {"type": "string"}, "recursive": {"type": "boolean", "description": "Descend into subdirectories."}}, ["path"]),
    ("grep", "Search files for a regular expression and return the matching lines with their paths.",
     {"pattern": {"type": "string"}, "glob": {"type": "string", "description": "Only files matching this glob."},
      "case": {"type": "string", "enum": ["sensitive", "insensitive", "smart"]}}, ["pattern"]),
    ("run_shell", "Run a shell command in the workspace and return its exit status, stdout and stderr.",
     {"command": {"type": "string"}, "timeout_s": {"type": "number", "description": "Seconds before it is killed."},
      "env": {"type": "object", "additionalProperties": {"type": "string"}}}, ["command"]),
    ("web_search", "Search the web and return the top results with titles, URLs and snippets.",
     {"query": {"type": "string"}, "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
      "recency": {"type": "string", "enum": ["day", "week", "month", "any"]}}, ["query"]),
    ("fetch_url", "Fetch a web page and return its main text, converted to Markdown.",
     {"url": {"type": "string", "format": "uri"}, "max_chars": {"type": "integer"}}, ["url"]),
    ("get_weather", "Current weather and a three-day forecast for a place.",
     {"location": {"type": "string", "description": "City and country, e.g. Zürich, CH"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["location"]),
    ("send_email", "Send an e-mail on the user's behalf after they confirmed it.",
     {"to": {"type": "array", "items": {"type": "string", "format": "email"}}, "subject": {"type": "string"},
      "body": {"type": "string"}, "cc": {"type": "array", "items": {"type": "string"}}}, ["to", "subject", "body"]),
    ("create_event", "Add an event to the user's calendar.",
     {"title": {"type": "string"}, "start": {"type": "string", "format": "date-time"},
      "end": {"type": "string", "format": "date-time"},
      "attendees": {"type": "array", "items": {"type": "object", "properties": {"email": {"type": "string"},
                                                                                "optional": {"type": "boolean"}}}}},
     ["title", "start"]),
    ("remember", "Store a fact about the user for later conversations.",
     {"fact": {"type": "string"}, "importance": {"type": "integer", "minimum": 1, "maximum": 5}}, ["fact"]),
]


@cache
def agent_tools(dialect: str) -> bytes:
    """An agent's request: a system prompt, a short exchange, and twelve tool definitions
    (~5 kB, most of it JSON schemas: many small strings and objects) -- what agent
    frameworks send on every turn. Written as the clients' ``json.dumps`` writes it (its
    default separators, with spaces), in that dialect's client order."""
    system = "You are a coding agent. Use the tools to inspect and change the workspace; ask before sending anything."
    exchange = [{"role": "user", "content": "The build fails on main since this morning. Can you find out why?"},
                {"role": "assistant", "content": "I'll look at the build log and the recent changes first."},
                {"role": "user", "content": "Go ahead, and fix it if it is small."}]
    schemas = [(name, description, {"type": "object", "properties": properties, "required": required})
               for name, description, properties, required in _AGENT_TOOLS]
    if dialect == "anthropic":
        value = {"max_tokens": 4096, "messages": exchange, "model": "claude-sonnet-4-6", "system": system,
                 "tools": [{"name": n, "description": d, "input_schema": s} for n, d, s in schemas]}
    else:
        tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": s}} for n, d, s in schemas]
        messages = [{"role": "system", "content": system}, *exchange]
        value = ({"model": "llama3", "stream": False, "messages": messages, "tools": tools} if dialect == "ollama"
                 else {"messages": messages, "model": "gpt-4o", "tools": tools})
    return json.dumps(value, ensure_ascii=False).encode()


def request_bodies() -> list[Body]:
    bodies = []
    for dialect in DIALECTS:
        bodies += [Body("conversation-10k", dialect, "request", conversation(dialect), frame) for frame in (8192, 64)]
    for scenario in ("large-10k", "large-100k"):
        for (dialect, kind), data in rpt_bodies(scenario).items():
            if kind == "request":
                bodies += [Body(scenario, dialect, kind, data, frame) for frame in (8192, 64)]
    for dialect in DIALECTS:
        bodies.append(Body("many-1mb", dialect, "request", many_messages(dialect), 8192))
        bodies.append(Body("huge-1mb", dialect, "request", huge_text(dialect, MIB), 65536))
        bodies.append(Body("huge-10mb", dialect, "request", huge_text(dialect, 10 * MIB), 65536))
    return bodies


def stream_bodies() -> list[Body]:
    """Streamed responses: rpt stream scenarios, and generated ones, for dialects with a stream codec."""
    from spike.corpus import STREAMS  # interleaved parallel tool-call deltas, usage after finish

    bodies = []
    for scenario in ("large-10k", "large-100k"):
        for (dialect, kind), data in rpt_bodies(scenario).items():
            if kind == "stream":
                bodies += [Body(scenario, dialect, kind, data, frame) for frame in (8192, 64)]
    for dialect, make in STREAMS.items():
        if available(dialect, "stream"):
            bodies.append(Body("tools-stream-100k", dialect, "stream", make(100, "client"), 8192))
    return bodies
