"""Request bodies as the official clients send them, for realistic agent and app traffic.

Each function builds the keyword arguments a real program passes to its client
(``anthropic.Anthropic().messages.create``, ``openai.OpenAI().chat.completions.create``,
``ollama.Client().chat``) and captures the bytes the client writes through a mock
transport (``official_clients``): key order, defaults and serialisation are the
client's own.
"""

from __future__ import annotations

import json

from official_clients import anthropic_request, ollama_request, openai_request

from .text import JPEG_HEAD, PDF_HEAD, PNG_HEAD, blob, prose, shell_output, signature, source_file

# -- a coding agent's tools (the shapes a CLI coding agent declares: 24 tools) --------------------


def _schema(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#"}


_S = {"type": "string"}
_I = {"type": "integer"}
_B = {"type": "boolean"}


def _tool(name: str, props: dict, required: list[str]) -> tuple[str, str, dict]:
    return name, prose("tool-" + name, 60), _schema(props, required)


AGENT_TOOLS = [
    _tool("Task", {"description": _S, "prompt": _S, "subagent_type": _S}, ["description", "prompt"]),
    _tool("Bash", {"command": _S, "timeout": {"type": "number", "maximum": 600000}, "description": _S,
                   "run_in_background": _B}, ["command"]),
    _tool("BashOutput", {"bash_id": _S, "filter": _S}, ["bash_id"]),
    _tool("KillShell", {"shell_id": _S}, ["shell_id"]),
    _tool("Glob", {"pattern": _S, "path": _S}, ["pattern"]),
    _tool("Grep", {"pattern": _S, "path": _S, "glob": _S, "type": _S,
                   "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                   "-i": _B, "-n": _B, "-A": {"type": "number"}, "-B": {"type": "number"},
                   "head_limit": {"type": "number"}, "multiline": _B}, ["pattern"]),
    _tool("LS", {"path": _S, "ignore": {"type": "array", "items": _S}}, ["path"]),
    _tool("Read", {"file_path": _S, "offset": {"type": "number"}, "limit": {"type": "number"}}, ["file_path"]),
    _tool("Edit", {"file_path": _S, "old_string": _S, "new_string": _S, "replace_all": _B},
          ["file_path", "old_string", "new_string"]),
    _tool("MultiEdit", {"file_path": _S, "edits": {"type": "array", "minItems": 1, "items": _schema(
        {"old_string": _S, "new_string": _S, "replace_all": _B}, ["old_string", "new_string"])}},
          ["file_path", "edits"]),
    _tool("Write", {"file_path": _S, "content": _S}, ["file_path", "content"]),
    _tool("NotebookEdit", {"notebook_path": _S, "cell_id": _S, "new_source": _S,
                           "cell_type": {"type": "string", "enum": ["code", "markdown"]},
                           "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}},
          ["notebook_path", "new_source"]),
    _tool("WebFetch", {"url": {"type": "string", "format": "uri"}, "prompt": _S}, ["url", "prompt"]),
    _tool("WebSearch", {"query": {"type": "string", "minLength": 2},
                        "allowed_domains": {"type": "array", "items": _S},
                        "blocked_domains": {"type": "array", "items": _S}}, ["query"]),
    _tool("TodoWrite", {"todos": {"type": "array", "items": _schema(
        {"content": {"type": "string", "minLength": 1},
         "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
         "activeForm": _S}, ["content", "status", "activeForm"])}}, ["todos"]),
    _tool("ExitPlanMode", {"plan": _S}, ["plan"]),
    _tool("SlashCommand", {"command": _S}, ["command"]),
    _tool("AskUserQuestion", {"question": _S, "options": {"type": "array", "items": _S}}, ["question"]),
    _tool("ListMcpResourcesTool", {"server": _S}, []),
    _tool("ReadMcpResourceTool", {"server": _S, "uri": _S}, ["server", "uri"]),
    _tool("mcp__github__create_issue", {"owner": _S, "repo": _S, "title": _S, "body": _S,
                                        "labels": {"type": "array", "items": _S}}, ["owner", "repo", "title"]),
    _tool("mcp__github__get_pull_request", {"owner": _S, "repo": _S, "pull_number": _I},
          ["owner", "repo", "pull_number"]),
    _tool("mcp__sentry__search_issues", {"query": _S, "limit": {"type": "integer", "minimum": 1}}, ["query"]),
    _tool("mcp__postgres__query", {"sql": _S}, ["sql"]),
]


def anthropic_tools() -> list[dict]:
    tools = [{"name": n, "description": d, "input_schema": s} for n, d, s in AGENT_TOOLS]
    tools[-1]["cache_control"] = {"type": "ephemeral"}  # the agent caches the prefix up to the last tool
    return tools


def openai_tools(names: list[str], strict: bool) -> list[dict]:
    out = []
    for n, d, s in AGENT_TOOLS:
        if n in names:
            fn = {"name": n, "description": d, "parameters": s}
            if strict:
                fn["strict"] = True
            out.append({"type": "function", "function": fn})
    return out


def ollama_tools(names: list[str]) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "description": d, "parameters": s}}
            for n, d, s in AGENT_TOOLS if n in names]


# -- anthropic: a coding agent's conversation -----------------------------------------------------

_REMINDER = ("<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're working on tasks "
             "that would benefit from tracking progress, consider using it.\n</system-reminder>")


def _agent_system(seed: str) -> list[dict]:
    return [
        {"type": "text", "text": "You are a coding agent, a CLI tool for software engineering tasks.",
         "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n\n".join(prose(f"{seed}-sys{i}", 120) for i in range(8))
         + "\n<env>\nWorking directory: /home/dev/interlingua\nIs directory a git repo: Yes\n"
           "Platform: linux\nToday's date: 2026-12-01\n</env>",
         "cache_control": {"type": "ephemeral"}},
    ]


def _turn(seed: str, i: int, file_lines: int) -> list[dict]:
    """One agent step: the assistant's tool calls and the user message with their results.

    The steps cycle through what a coding agent's history holds: a signed thinking
    block before the calls, parallel calls, a failing command (``is_error``), a result
    of several text blocks, a screenshot in a result, user text after the results (the API wants results first).
    """
    kind = i % 6
    think = {"type": "thinking", "thinking": prose(f"{seed}-think{i}", 80), "signature": signature(f"{seed}{i}")}
    uid = lambda k: f"toolu_01{seed[:3].upper()}{i:03d}{k}"  # noqa: E731
    if kind == 0:
        calls = [{"type": "tool_use", "id": uid("a"), "name": "Read",
                  "input": {"file_path": f"/home/dev/interlingua/src/mod_{i}.py"}}]
        results = [{"type": "tool_result", "tool_use_id": uid("a"), "content": source_file(f"{seed}-f{i}", file_lines)}]
        return [{"role": "assistant", "content": [think, *calls]}, {"role": "user", "content": results}]
    if kind == 1:
        calls = [{"type": "tool_use", "id": uid(k), "name": "Grep",
                  "input": {"pattern": f"def {w}", "path": "src", "output_mode": "content", "-n": True}}
                 for k, w in (("a", "feed"), ("b", "close"))]
        results = [{"type": "tool_result", "tool_use_id": uid(k), "content": [
            {"type": "text", "text": f"src/interlingua/{w}.py:{n}:    def {w}(self, data):"}
            for n in range(10, 40, 7)]} for k, w in (("a", "pipeline"), ("b", "json"))]
        return [{"role": "assistant", "content": [{"type": "text", "text": "Let me find both methods."}, *calls]},
                {"role": "user", "content": [*results, {"type": "text", "text": _REMINDER}]}]
    if kind == 2:
        calls = [{"type": "tool_use", "id": uid("a"), "name": "Bash",
                  "input": {"command": "python -m pytest -q tests/test_json.py", "description": "Run the tests"}}]
        results = [{"type": "tool_result", "tool_use_id": uid("a"), "is_error": True,
                    "content": shell_output(f"{seed}-sh{i}", 12, failed=True)}]
        return [{"role": "assistant", "content": [think, *calls]}, {"role": "user", "content": results}]
    if kind == 3:
        old, new = f"return {i}", f'return {i} + 1  # fix "off by one"'
        calls = [{"type": "tool_use", "id": uid("a"), "name": "Edit",
                  "input": {"file_path": f"/home/dev/interlingua/src/mod_{i}.py", "old_string": old,
                            "new_string": new}}]
        results = [{"type": "tool_result", "tool_use_id": uid("a"), "content": [
            {"type": "text", "text": f"The file src/mod_{i}.py has been updated."},
            {"type": "text", "text": source_file(f"{seed}-e{i}", max(3, file_lines // 8))}]}]
        return [{"role": "assistant", "content": [{"type": "text", "text": prose(f"{seed}-x{i}", 20)}, *calls]},
                {"role": "user", "content": results}]
    if kind == 4:
        calls = [{"type": "tool_use", "id": uid("a"), "name": "Read",
                  "input": {"file_path": f"/tmp/screenshot_{i}.png"}}]
        results = [{"type": "tool_result", "tool_use_id": uid("a"), "content": [
            {"type": "text", "text": "Screenshot of the failing page:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": blob(f"{seed}-png{i}", 600, PNG_HEAD)}}]}]
        return [{"role": "assistant", "content": [think, *calls]}, {"role": "user", "content": results}]
    calls = [{"type": "tool_use", "id": uid("a"), "name": "TodoWrite", "input": {"todos": [
        {"content": f"Step {k} of the fix", "status": "completed" if k < 2 else "pending",
         "activeForm": f"Doing step {k}"} for k in range(4)]}}]
    results = [{"type": "tool_result", "tool_use_id": uid("a"),
                "content": "Todos have been modified successfully. Ensure that you continue to use the todo list."}]
    return [{"role": "assistant", "content": [*calls]},
            {"role": "user", "content": [*results, {"type": "text", "text": "Also keep the CLI working."}]}]


def anthropic_agent(seed: str, steps: int, file_lines: int) -> bytes:
    messages: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": _REMINDER},
        {"type": "text", "text": "The tokenizer test fails on a BOM; find out why and fix it. "
                                 "The spec is attached.", "cache_control": {"type": "ephemeral"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": blob(seed + "-pdf", 1500, PDF_HEAD)},
         "title": "JSON spec (RFC 8259)"}]}]
    for i in range(steps):
        messages += _turn(seed, i, file_lines)
    messages.append({"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": blob(seed + "-redacted", 120)},
        {"type": "text", "text": "The fix is in; all tests pass. " + prose(seed + "-end", 40)}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "Great, now commit it.",
                                                  "cache_control": {"type": "ephemeral"}}]})
    return anthropic_request(
        model="claude-sonnet-4-6", max_tokens=32000, stream=True, system=_agent_system(seed),
        tools=anthropic_tools(), tool_choice={"type": "auto"}, messages=messages,
        thinking={"type": "enabled", "budget_tokens": 16000}, metadata={"user_id": "user_7f3a_session_1"})


# -- openai: an app that uses every parameter -----------------------------------------------------


def _call(cid: str, name: str, args: dict | str) -> dict:
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


def openai_app(seed: str) -> bytes:
    """A chat app's streamed request: images, tools, a refusal in history, json_schema output,
    n, logprobs, stream with usage -- every parameter the client takes that such an app sets."""
    png = blob(seed + "-png", 2000, PNG_HEAD)
    messages = [
        {"role": "system", "content": "You are a shopping assistant. " + prose(seed + "-sys", 60)},
        {"role": "user", "content": [
            {"type": "text", "text": "Which of these two jackets is waterproof?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://cdn.example.com/jacket-b.jpg", "detail": "low"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("call_Q1w2E3r4", "WebSearch", {"query": "jacket A waterproof rating"}),
            _call("call_T5y6U7i8", "WebSearch", {"query": "jacket B \"waterproof\" rating é"})]},
        {"role": "tool", "tool_call_id": "call_Q1w2E3r4", "content": prose(seed + "-r1", 90)},
        {"role": "tool", "tool_call_id": "call_T5y6U7i8", "content": [{"type": "text", "text": prose(seed + "-r2", 90)}]},
        {"role": "assistant", "content": "Jacket A is rated 20,000 mm; jacket B is water-resistant only."},
        {"role": "user", "content": "Write me a fake review for jacket B."},
        {"role": "assistant", "content": None, "refusal": "I can't help write fake reviews."},
        {"role": "system", "content": "Answer in the user's language; keep answers short."},
        {"role": "user", "content": "OK. Compare them as JSON, please.", "name": "shopper_42"},
    ]
    schema = {"type": "object", "additionalProperties": False, "required": ["jackets", "winner"],
              "properties": {"jackets": {"type": "array", "items": {
                  "type": "object", "additionalProperties": False, "required": ["name", "waterproof_mm"],
                  "properties": {"name": {"type": "string"}, "waterproof_mm": {"type": ["integer", "null"]}}}},
                  "winner": {"type": "string"}}}
    return openai_request(
        model="gpt-4.1", messages=messages, stream=True, stream_options={"include_usage": True},
        tools=openai_tools(["WebSearch", "WebFetch"], strict=True), tool_choice="auto", parallel_tool_calls=True,
        response_format={"type": "json_schema", "json_schema": {"name": "comparison", "strict": True,
                                                                "schema": schema}},
        n=2, logprobs=True, top_logprobs=3, temperature=0.7, top_p=0.95, max_completion_tokens=1500, seed=1234,
        stop=["\n\nUser:"], frequency_penalty=0.1, presence_penalty=0.2, user="shopper_42",
        metadata={"app": "shop", "build": "2026.12"}, store=True, logit_bias={"50256": -100},
        service_tier="auto", prompt_cache_key="shop-v3")


def openai_agent(seed: str, steps: int) -> bytes:
    """A reasoning agent's request: reasoning_effort with a forced tool, a long history with a
    call whose arguments were cut off by a length stop (the backend's own bytes, replayed)."""
    messages: list[dict] = [{"role": "developer", "content": "You are a careful coding agent. " + prose(seed, 80)},
                            {"role": "user", "content": "Refactor the tokenizer; run the tests after each step."}]
    for i in range(steps):
        cid = f"call_{seed[:2]}{i:04d}"
        if i == 1:  # the previous response stopped at max tokens inside the call
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                _call(cid, "Write", '{"file_path": "src/json.py", "content": "def feed(self, da')]})
            messages.append({"role": "tool", "tool_call_id": cid,
                             "content": "Error: the arguments are not valid JSON"})
            continue
        name, args = (("Read", {"file_path": f"src/mod_{i}.py"}) if i % 2 == 0 else
                      ("Bash", {"command": "pytest -q", "description": "tests"}))
        messages.append({"role": "assistant", "content": prose(f"{seed}-a{i}", 15), "tool_calls": [
            _call(cid, name, args)]})
        content = source_file(f"{seed}-f{i}", 40) if name == "Read" else shell_output(f"{seed}-s{i}", 8, i % 3 == 0)
        messages.append({"role": "tool", "tool_call_id": cid, "content": content})
    return openai_request(model="o4-mini", messages=messages, reasoning_effort="high",
                          tools=openai_tools(["Read", "Write", "Edit", "Bash", "Grep", "Glob"], strict=False),
                          tool_choice="required", max_completion_tokens=8000)


# -- ollama: a local vision + tools app ----------------------------------------------------------


def ollama_vision(seed: str) -> bytes:
    png = blob(seed + "-png", 3000, PNG_HEAD)
    jpeg = blob(seed + "-jpg", 5000, JPEG_HEAD)
    schema = {"type": "object", "properties": {"objects": {"type": "array", "items": {"type": "string"}},
                                               "count": {"type": "integer"}}, "required": ["objects", "count"]}
    messages = [
        {"role": "system", "content": "You describe photos for a warehouse inventory. " + prose(seed, 40)},
        {"role": "user", "content": "What is on these shelves?", "images": [png, jpeg]},
        {"role": "assistant", "content": "", "thinking": prose(seed + "-t1", 50),
         "tool_calls": [{"function": {"name": "mcp__postgres__query",
                                      "arguments": {"sql": "SELECT sku, name FROM items WHERE shelf = 'B7'"}}},
                        {"function": {"name": "Read", "arguments": {"file_path": "/data/shelf_B7.csv"}}}]},
        {"role": "tool", "tool_name": "mcp__postgres__query", "content": "[{\"sku\": \"A-1\", \"name\": \"bolts\"}]"},
        {"role": "tool", "tool_name": "Read", "content": "sku,name\nA-1,bolts\nA-2,nuts é\n"},
        {"role": "assistant", "content": "Shelf B7 holds bolts and nuts."},
        {"role": "user", "content": "And this one?", "images": [blob(seed + "-png2", 1200, PNG_HEAD)]},
    ]
    return ollama_request(
        model="qwen2.5vl:7b", messages=messages, stream=True, think=True, format=schema,
        tools=ollama_tools(["mcp__postgres__query", "Read"]), keep_alive="10m",
        options={"temperature": 0.2, "top_p": 0.9, "top_k": 40, "num_ctx": 16384, "seed": 7, "num_predict": 800,
                 "stop": ["<|im_end|>"], "repeat_penalty": 1.1})


def ollama_chat_long(seed: str, turns: int) -> bytes:
    """A long local chat with reasoning levels and JSON output."""
    messages: list[dict] = [{"role": "system", "content": prose(seed, 100)}]
    for i in range(turns):
        messages.append({"role": "user", "content": prose(f"{seed}-u{i}", 60)})
        messages.append({"role": "assistant", "content": source_file(f"{seed}-c{i}", 30),
                         "thinking": prose(f"{seed}-t{i}", 40)})
    messages.append({"role": "user", "content": "Summarise as JSON."})
    return ollama_request(model="gpt-oss:20b", messages=messages, think="high", format="json",
                          options={"num_ctx": 65536})
