"""What each API rejects beyond its official client's types: the validity layer of the test suite.

The clients' types are loose (a ``str`` for a tool name, a ``dict`` for a
schema); the APIs behind them refuse more. ``RULES`` lists, per dialect and
kind, each such rule with a one-line reason and where it is stated (API
reference, or the API's own error message as users report it). ``check`` runs
them over a body or a stream.

``install()`` (called by ``tests/conftest.py``) makes every cross-dialect
``Transcoder`` of the test suite -- rpt scenarios, client-capture tests,
property tests, any new test -- and every body the turn compiler encodes
check its output when it closes: an output
that breaks a rule of its target fails the test, unless the *input* already
breaks a rule of its own dialect (garbage in: no promise; ``SKIPPED`` counts
those). Both backends: it wraps whichever ``Transcoder`` class
``interlingua`` exports, and the Python one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Iterator

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
NAME = {"openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"), "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,128}")}
OPENAI_ID_MAX = 40
THINKING_MIN_BUDGET = 1024
ANTHROPIC_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
OPENAI_IMAGE_TYPES = ANTHROPIC_IMAGE_TYPES | {"image/jpg"}

_ANTHROPIC_REF = "Anthropic Messages API reference (platform.claude.com/docs/en/api/messages)"
_OPENAI_REF = "OpenAI Chat Completions API reference (platform.openai.com/docs/api-reference/chat/create)"
_OLLAMA_REF = "Ollama API docs (github.com/ollama/ollama/blob/main/docs/api.md) and its Go request types"


@dataclass(frozen=True)
class Rule:
    dialect: str
    kinds: tuple[str, ...]
    name: str
    reason: str
    where: str
    check: Callable[[object], Iterator[str]]
    #: False: the API takes it, but the input is incoherent for every other API (an
    #: ollama tool result answering no call); checked on inputs only, never on outputs
    enforced: bool = True


RULES: list[Rule] = []


def rule(dialect: str, kinds: str, name: str, reason: str, where: str, enforced: bool = True):
    def register(fn):
        RULES.append(Rule(dialect, tuple(kinds.split()), name, reason, where, fn, enforced))
        return fn
    return register


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _messages(body) -> list:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _parts(body):
    """(message index, part index, part) of every content-part list's dict parts."""
    for i, m in enumerate(_messages(body)):
        parts = m.get("content")
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            if isinstance(part, dict):
                yield i, j, part


def _blocks(content) -> list:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# =====================================================================================
# anthropic requests
# =====================================================================================


@rule("anthropic", "request", "max_tokens-integer",
      "max_tokens is required and an integer of at least 1",
      f"{_ANTHROPIC_REF}: max_tokens integer, required, 'x >= 1'")
def _a_max_tokens(body):
    value = body.get("max_tokens")
    if not _is_int(value) or value < 1:
        yield f"max_tokens {value!r}"


@rule("anthropic", "request", "messages-present",
      "messages must hold at least one message",
      f"{_ANTHROPIC_REF}: 'messages: at least one message is required'")
def _a_messages(body):
    if not _messages(body):
        yield "no messages"


@rule("anthropic", "request", "message-roles",
      "a message's role is user, assistant or system; a system message's content is a string "
      "or text blocks",
      "anthropic client 2.14 MessageParam = UserMessageParam | AssistantMessageParam | "
      "SystemMessageParam (content: str | Iterable[TextBlockParam])")
def _a_roles(body):
    for i, m in enumerate(_messages(body)):
        if m.get("role") not in ("user", "assistant", "system"):
            yield f"messages[{i}].role {m.get('role')!r}"
        elif m["role"] == "system" and not isinstance(m.get("content"), str):
            for j, b in enumerate(_blocks(m.get("content"))):
                if b.get("type") != "text":
                    yield f"messages[{i}].content[{j}].type {b.get('type')!r} in a system message"


@rule("anthropic", "request", "content-non-empty",
      "every message has non-empty content, except an optional final assistant message",
      "Anthropic API error 'all messages must have non-empty content except for the optional "
      "final assistant message'")
def _a_content_non_empty(body):
    messages = _messages(body)
    for i, m in enumerate(messages):
        content = m.get("content")
        if content in ("", []) and not (i == len(messages) - 1 and m.get("role") == "assistant"):
            yield f"messages[{i}] has empty content"


def _anthropic_blocks(body) -> Iterator[tuple[str, dict]]:
    """(where, block) of every content block: system, messages, and inside tool results."""
    system = body.get("system")
    for j, b in enumerate(_blocks(system)):
        yield f"system[{j}]", b
    for i, m in enumerate(_messages(body)):
        for j, b in enumerate(_blocks(m.get("content"))):
            yield f"messages[{i}].content[{j}]", b
            if b.get("type") == "tool_result":
                for k, inner in enumerate(_blocks(b.get("content"))):
                    yield f"messages[{i}].content[{j}].content[{k}]", inner


@rule("anthropic", "request", "text-block-non-empty",
      "a text block's text is not empty (system, messages, tool_result content)",
      "Anthropic API error 'messages: text content blocks must be non-empty'")
def _a_text_non_empty(body):
    for where, b in _anthropic_blocks(body):
        if b.get("type") == "text" and b.get("text") == "":
            yield f"{where} is an empty text block"


def _blank(text) -> bool:
    """Whitespace only (spaces, newlines, tabs, carriage returns: what users report refused;
    the API does not say which other spaces it counts -- ``encoding.blank``'s set)."""
    return isinstance(text, str) and text != "" and not text.strip(" \n\t\r")


@rule("anthropic", "request", "text-block-not-blank",
      "a text block of whitespace only is refused unless its message (or the system prompt) has "
      "other text with a non-whitespace character",
      "Anthropic API error 'messages: text content blocks must contain non-whitespace text' "
      "(users' probes: [' '] and ['\\n'] refused, [' ', 'real'] taken)")
def _a_text_not_blank(body):
    contents = [("system", body.get("system"))]
    contents += [(f"messages[{i}]", m.get("content")) for i, m in enumerate(_messages(body))]
    for where, content in contents:
        texts = [content] if isinstance(content, str) else [b.get("text") for b in _blocks(content) if b.get("type") == "text"]
        if any(_blank(t) for t in texts) and not any(isinstance(t, str) and t.strip(" \n\t\r") for t in texts):
            yield f"{where} has text of whitespace only and no other text"


@rule("anthropic", "request", "final-assistant-no-trailing-whitespace",
      "the final assistant message's content does not end in whitespace (its last block, when a text)",
      "Anthropic API error 'messages: final assistant content cannot end with trailing whitespace' "
      "(a prefill ending in a newline or a space)")
def _a_final_assistant_trailing(body):
    messages = _messages(body)
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "assistant":
        return
    content = messages[-1].get("content")
    blocks = _blocks(content)
    text = content if isinstance(content, str) else (
        blocks[-1].get("text") if blocks and blocks[-1].get("type") == "text" else None)
    if isinstance(text, str) and text != text.rstrip(" \n\t\r"):
        yield f"messages[{len(messages) - 1}] (the final assistant message) ends in whitespace"


def _breakpoints(body) -> int:
    """The cache_control breakpoints of an anthropic request: tools and every content block (a
    null one is none)."""
    places = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    places += [block for _, block in _anthropic_blocks(body)]
    return sum(1 for place in places if place.get("cache_control") is not None)


@rule("anthropic", "request", "cache-breakpoints-at-most-4",
      "at most 4 cache_control breakpoints in one request",
      "Anthropic API error 'A maximum of 4 blocks with cache_control may be provided. Found 5.' "
      "(sub2api #176, avante.nvim #425, opencode-claude-auth #121)")
def _a_breakpoints(body):
    found = _breakpoints(body)
    if found > 4:
        yield f"{found} cache breakpoints"


@rule("anthropic", "request", "stop-sequences-not-blank",
      "every stop sequence has a non-whitespace character (an empty one neither)",
      "Anthropic API errors 'stop_sequences: each stop sequence must contain non-whitespace' and "
      "'... must be non-empty' (LiteLLM #3286: openai stop ['\\n'])")
def _a_stop_sequences(body):
    stops = body.get("stop_sequences")
    for i, stop in enumerate(stops if isinstance(stops, list) else []):
        if isinstance(stop, str) and not stop.strip(" \n\t\r"):
            yield f"stop_sequences[{i}] is {stop!r}"


def _custom_tools(body) -> Iterator[tuple[int, dict]]:
    tools = body.get("tools")
    for i, t in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(t, dict) and t.get("type") in (None, "custom"):
            yield i, t


@rule("anthropic", "request", "input-schema-object",
      "a custom tool's input_schema is a JSON Schema of type object",
      f"{_ANTHROPIC_REF}: tools[].input_schema.type: 'object' (required)")
def _a_input_schema(body):
    for i, t in _custom_tools(body):
        schema = t.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            yield f"tools[{i}].input_schema {schema!r}"


@rule("anthropic", "request", "input-schema-no-top-combinator",
      "a custom tool's input_schema has no allOf, anyOf or oneOf at its top",
      "Anthropic API error 'tools.N.custom.input_schema: input_schema does not support oneOf, allOf, "
      "or anyOf at the top level' (MCP tools whose parameters are a union)")
def _a_input_schema_combinators(body):
    for i, t in _custom_tools(body):
        schema = t.get("input_schema")
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(schema, dict) and key in schema:
                yield f"tools[{i}].input_schema has {key} at its top"


def _null_keywords(schema, where: str) -> Iterator[str]:
    """Where a JSON Schema has a keyword whose value is null (``const`` / ``default`` may:
    it is their value), in it and in the schemas it holds -- read by the JSON Schema
    meta-schema's shape, not by interlingua's list."""
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if value is None and key not in ("const", "default"):
            yield f"{where}.{key} null"
        elif key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") and isinstance(value, dict):
            for name, inner in value.items():
                yield from _null_keywords(inner, f"{where}.{key}.{name}")
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems", "items") and isinstance(value, list):
            for n, inner in enumerate(value):
                yield from _null_keywords(inner, f"{where}.{key}[{n}]")
        elif key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                     "unevaluatedItems", "unevaluatedProperties", "additionalItems"):
            yield from _null_keywords(value, f"{where}.{key}")


@rule("anthropic", "request", "input-schema-no-null",
      "no keyword of a tool's input_schema is null (but const / default)",
      "JSON Schema 2020-12 meta-schema (enum, required, items ... are arrays / schemas); Anthropic API "
      "error 'tools.0.custom.input_schema: JSON schema is invalid'")
def _a_input_schema_nulls(body):
    for i, t in _custom_tools(body):
        yield from _null_keywords(t.get("input_schema"), f"tools[{i}].input_schema")


@rule("anthropic", "request", "tool-name-pattern",
      "a tool name matches ^[a-zA-Z0-9_-]{1,128}$ (definitions, tool_use, tool_choice)",
      "Anthropic API error 'tools.N.custom.name: String should match pattern ^[a-zA-Z0-9_-]{1,128}$'")
def _a_tool_names(body):
    for i, t in _custom_tools(body):
        if not isinstance(t.get("name"), str) or not NAME["anthropic"].fullmatch(t["name"]):
            yield f"tools[{i}].name {t.get('name')!r}"
    for i, m in enumerate(_messages(body)):
        for j, b in enumerate(_blocks(m.get("content"))):
            if b.get("type") == "tool_use" and not NAME["anthropic"].fullmatch(str(b.get("name", ""))):
                yield f"messages[{i}].content[{j}].name {b.get('name')!r}"
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":
        if not NAME["anthropic"].fullmatch(str(choice.get("name", ""))):
            yield f"tool_choice.name {choice.get('name')!r}"


@rule("anthropic", "request", "tool-id-pattern",
      "tool_use.id and tool_result.tool_use_id match ^[a-zA-Z0-9_-]+$",
      "Anthropic API error 'messages.N.content.M.tool_use.id: String should match pattern "
      "^[a-zA-Z0-9_-]+$'")
def _a_tool_ids(body):
    for i, m in enumerate(_messages(body)):
        for j, b in enumerate(_blocks(m.get("content"))):
            key = {"tool_use": "id", "tool_result": "tool_use_id"}.get(b.get("type"))
            if key and not ANTHROPIC_ID.fullmatch(str(b.get(key, ""))):
                yield f"messages[{i}].content[{j}].{key} {b.get(key)!r}"


@rule("anthropic", "request", "tool-use-ids-unique",
      "no two tool_use blocks of the request share an id (an agent history from several "
      "responses: generated ids must not repeat across turns)",
      "Anthropic API error 'messages.N.content.M: `tool_use` ids must be unique' "
      "(as users report it: anthropics/claude-code#20901, #28515)")
def _a_unique_ids(body):
    seen: dict = {}
    for i, m in enumerate(_messages(body)):
        for j, b in enumerate(_blocks(m.get("content"))):
            if b.get("type") == "tool_use":
                where = seen.setdefault(b.get("id"), f"messages[{i}].content[{j}]")
                if where != f"messages[{i}].content[{j}]":
                    yield f"messages[{i}].content[{j}].id {b.get('id')!r} repeats {where}"


@rule("anthropic", "request", "tool-pairing",
      "each tool_use is answered by a tool_result in the next (user) message, and each "
      "tool_result answers a tool_use of the message before it",
      "Anthropic API errors 'tool_use ids were found without tool_result blocks immediately "
      "after' / 'unexpected tool_use_id found in tool_result blocks'")
def _a_pairing(body):
    messages = _messages(body)
    for i, m in enumerate(messages):
        blocks = _blocks(m.get("content"))
        calls = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            before = _blocks(messages[i - 1].get("content")) if i else []
            asked = {b.get("id") for b in before if b.get("type") == "tool_use"}
            for r in results:
                if r not in asked:
                    yield f"messages[{i}]: tool_result {r!r} answers no tool_use of messages[{i - 1}]"
            for r in set(results):
                if results.count(r) > 1:
                    yield f"messages[{i}]: tool_use {r!r} answered {results.count(r)} times"
        if calls and i + 1 < len(messages):
            after = {b.get("tool_use_id") for b in _blocks(messages[i + 1].get("content"))
                     if b.get("type") == "tool_result"}
            for c in calls:
                if c not in after:
                    yield f"messages[{i}]: tool_use {c!r} has no tool_result in messages[{i + 1}]"


@rule("anthropic", "request", "tool-results-first",
      "in a user message holding tool_result blocks, every tool_result comes before any other "
      "block (text, image, document ...)",
      "Anthropic tool-use docs ('tool result blocks must come FIRST in the content array; any "
      "text must come AFTER all tool results'); the API answers 400 'tool_use ids were found "
      "without tool_result blocks immediately after' otherwise")
def _a_results_first(body):
    for i, m in enumerate(_messages(body)):
        if m.get("role") != "user":
            continue
        other = None
        for j, b in enumerate(_blocks(m.get("content"))):
            if b.get("type") != "tool_result":
                other = other if other is not None else (j, b.get("type"))
            elif other is not None:
                yield (f"messages[{i}].content[{j}]: a tool_result after a {other[1]!r} block "
                       f"(content[{other[0]}])")
                break


@rule("anthropic", "request", "thinking-budget",
      "thinking.budget_tokens is an integer >= 1024 and below max_tokens",
      f"{_ANTHROPIC_REF}: ThinkingConfigEnabled.budget_tokens ('>= 1024 and less than max_tokens')")
def _a_thinking_budget(body):
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not _is_int(budget) or budget < THINKING_MIN_BUDGET or (
                _is_int(body.get("max_tokens")) and budget >= body["max_tokens"]):
            yield f"thinking.budget_tokens {budget!r} with max_tokens {body.get('max_tokens')!r}"


@rule("anthropic", "request", "thinking-vs-forced-tool",
      "thinking (enabled or adaptive) with a tool_choice that forces tool use (any, tool)",
      "Anthropic API error 'Thinking may not be enabled when tool_choice forces tool use' "
      "(extended-thinking docs: only auto or none)")
def _a_thinking_forced(body):
    thinking = body.get("thinking")
    choice = body.get("tool_choice")
    if (isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
            and isinstance(choice, dict) and choice.get("type") in ("any", "tool")):
        yield f"thinking {thinking.get('type')} with tool_choice {choice.get('type')}"


@rule("anthropic", "request", "tool-choice-has-tools",
      "a tool_choice that forces tool use (any, tool) only with tools, and a named tool among them",
      f"{_ANTHROPIC_REF}: tool_choice (any: use one of the provided tools; tool: the named tool)")
def _a_choice_has_tools(body):
    choice = body.get("tool_choice")
    if not (isinstance(choice, dict) and choice.get("type") in ("any", "tool")):
        return
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if not names:
        yield f"tool_choice {choice.get('type')} without tools"
    elif choice.get("type") == "tool" and choice.get("name") not in names:
        yield f"tool_choice names {choice.get('name')!r}, not among the tools"


@rule("anthropic", "request", "thinking-tool-loop",
      "thinking (enabled or adaptive) when the last assistant message calls tools and does not begin "
      "with a thinking block",
      "Anthropic API error 'When `thinking` is enabled, a final `assistant` message must start with a "
      "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)'")
def _a_thinking_tool_loop(body):
    thinking = body.get("thinking")
    if not (isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")):
        return
    messages = body.get("messages")
    assistants = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"] \
        if isinstance(messages, list) else []
    content = assistants[-1].get("content") if assistants else None
    if not isinstance(content, list) or not content:
        return
    types = [b.get("type") for b in content if isinstance(b, dict)]
    if "tool_use" in types and types[0] not in ("thinking", "redacted_thinking"):
        yield f"thinking {thinking.get('type')} and a last assistant message of {types}"


@rule("anthropic", "request", "image-media-type",
      "a base64 image's media_type is image/jpeg, image/png, image/gif or image/webp",
      f"{_ANTHROPIC_REF}: Base64ImageSource.media_type enum")
def _a_image_types(body):
    for where, b in _anthropic_blocks(body):
        source = b.get("source") if b.get("type") == "image" else None
        if isinstance(source, dict) and source.get("type") == "base64" and \
                source.get("media_type") not in ANTHROPIC_IMAGE_TYPES:
            yield f"{where}.source.media_type {source.get('media_type')!r}"


# =====================================================================================
# openai requests
# =====================================================================================


@rule("openai", "request", "messages-present",
      "messages holds at least one message",
      "OpenAI API error \"[] is too short - 'messages'\"")
def _o_messages(body):
    if not _messages(body):
        yield "no messages"


_OPENAI_INTEGERS = ("max_tokens", "max_completion_tokens", "n", "seed", "top_logprobs")


@rule("openai", "request", "integer-fields",
      "max_tokens, max_completion_tokens, n, seed and top_logprobs are integers",
      f"{_OPENAI_REF}: those parameters are 'integer'")
def _o_integers(body):
    for key in _OPENAI_INTEGERS:
        if key in body and body[key] is not None and not _is_int(body[key]):
            yield f"{key} {body[key]!r}"


#: openai's documented ranges (interlingua.numbers.RANGES is the library's copy): (least, most)
_OPENAI_RANGES = {"max_tokens": (1, None), "max_completion_tokens": (1, None), "n": (1, None),
                  "temperature": (0, 2), "top_p": (0, 1), "frequency_penalty": (-2, 2),
                  "presence_penalty": (-2, 2), "top_logprobs": (0, 20)}


@rule("openai", "request", "number-ranges",
      "max tokens and n at least 1, temperature 0-2, top_p 0-1, penalties -2-2, top_logprobs 0-20",
      f"{_OPENAI_REF}: each parameter's documented range")
def _o_ranges(body):
    for key, (least, most) in _OPENAI_RANGES.items():
        value = body.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                value < least or (most is not None and value > most)):
            yield f"{key} {value!r}"


@rule("openai", "request", "stop-at-most-4",
      "stop is a string or a list of at most 4 strings",
      "openai client CompletionCreateParams.stop docstring: 'Up to 4 sequences where the API will "
      "stop generating further tokens'")
def _o_stop(body):
    stop = body.get("stop")
    if isinstance(stop, list) and len(stop) > 4:
        yield f"stop has {len(stop)} sequences"


@rule("openai", "request", "top-logprobs-with-logprobs",
      "top_logprobs only with logprobs: true",
      "OpenAI API reference, top_logprobs: 'logprobs must be set to true if this parameter is used' "
      "(DeepSeek's API, llama.cpp's server and gateways refuse it so too)")
def _o_top_logprobs(body):
    if body.get("top_logprobs") is not None and body.get("logprobs") is not True:
        yield f"top_logprobs {body['top_logprobs']!r} with logprobs {body.get('logprobs')!r}"


def _message_texts(body) -> Iterator[str]:
    """Every text of an openai request's messages: string contents and text parts."""
    for m in _messages(body):
        if isinstance(m.get("content"), str):
            yield m["content"]
    for _, _, part in _parts(body):
        if isinstance(part.get("text"), str):
            yield part["text"]


@rule("openai", "request", "json-object-says-json",
      "a json_object response_format only when some message says 'json' (any case)",
      "OpenAI API error \"'messages' must contain the word 'json' in some form, to use "
      "'response_format' of type 'json_object'\"")
def _o_json_object_word(body):
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_object" and not any(
            "json" in text.lower() for text in _message_texts(body)):
        yield "response_format json_object, and no message says json"


def _openai_functions(body) -> Iterator[tuple[str, dict]]:
    tools = body.get("tools")
    for i, t in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict):
            yield f"tools[{i}].function", t["function"]
    functions = body.get("functions")
    for i, f in enumerate(functions if isinstance(functions, list) else []):
        if isinstance(f, dict):
            yield f"functions[{i}]", f


@rule("openai", "request", "function-name-pattern",
      "a function name matches ^[a-zA-Z0-9_-]{1,64}$ (definitions, history tool calls, tool_choice)",
      "OpenAI API error \"Invalid 'tools[0].function.name': string does not match pattern "
      "'^[a-zA-Z0-9_-]+$'\"; FunctionDefinition.name docstring: 'maximum length of 64'")
def _o_names(body):
    def bad(name) -> bool:
        return not isinstance(name, str) or not NAME["openai"].fullmatch(name)
    for where, f in _openai_functions(body):
        if bad(f.get("name")):
            yield f"{where}.name {f.get('name')!r}"
    for i, m in enumerate(_messages(body)):
        calls = m.get("tool_calls")
        for j, c in enumerate(calls if isinstance(calls, list) else []):
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict) and bad(fn.get("name")):
                yield f"messages[{i}].tool_calls[{j}].function.name {fn.get('name')!r}"
        legacy = m.get("function_call")
        if isinstance(legacy, dict) and bad(legacy.get("name")):
            yield f"messages[{i}].function_call.name {legacy.get('name')!r}"
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        if bad(choice["function"].get("name")):
            yield f"tool_choice.function.name {choice['function'].get('name')!r}"


@rule("openai", "request", "parameters-object",
      "a function's parameters, when given, is a JSON Schema of type object",
      "OpenAI API error \"Invalid schema for function 'f': schema must be a JSON Schema of "
      "'type: \\\"object\\\"'\"")
def _o_parameters(body):
    for where, f in _openai_functions(body):
        if "parameters" in f and (not isinstance(f["parameters"], dict) or f["parameters"].get("type") != "object"):
            yield f"{where}.parameters {f['parameters']!r}"


@rule("openai", "request", "parameters-no-null",
      "no keyword of a function's parameters schema is null (but const / default)",
      "OpenAI API error \"Invalid schema for function 'f': None is not of type 'array'\" (enum: null)")
def _o_parameters_nulls(body):
    for where, f in _openai_functions(body):
        yield from _null_keywords(f.get("parameters"), f"{where}.parameters")


@rule("openai", "request", "tool-choice-form",
      "tool_choice is none | auto | required, or {type: function, function: {name}}",
      f"{_OPENAI_REF}: ChatCompletionToolChoiceOptionParam (the object form {{type: auto}} is refused)")
def _o_tool_choice(body):
    choice = body.get("tool_choice")
    if choice is None or choice in ("none", "auto", "required"):
        return
    if not (isinstance(choice, dict) and choice.get("type") in ("function", "allowed_tools", "custom")):
        yield f"tool_choice {choice!r}"


@rule("openai", "request", "tool-choice-has-tools",
      "tool_choice and parallel_tool_calls only with tools, and a named function among them",
      "OpenAI API error \"'tool_choice' is only allowed when 'tools' are specified\" (and the same "
      "for 'parallel_tool_calls'); a named function must be one of 'tools'")
def _o_choice_has_tools(body):
    names = {f.get("name") for _, f in _openai_functions(body)} | {
        t.get(t.get("type"), {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)
        and isinstance(t.get(t.get("type")), dict)}
    if not body.get("tools") and not body.get("functions"):
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                yield f"{key} without tools"
        return
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if name not in names:
            yield f"tool_choice names {name!r}, not among the tools"


@rule("openai", "request", "tool-call-id-length",
      "a history tool call's id is at most 40 characters",
      "OpenAI API error \"Invalid 'messages[N].tool_calls[0].id': string too long. Expected a "
      "string with maximum length 40\"")
def _o_id_length(body):
    for i, m in enumerate(_messages(body)):
        calls = m.get("tool_calls")
        for j, c in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(c, dict) and isinstance(c.get("id"), str) and len(c["id"]) > OPENAI_ID_MAX:
                yield f"messages[{i}].tool_calls[{j}].id is {len(c['id'])} characters"


@rule("openai", "request", "tool-call-ids-unique",
      "no two tool messages of the request answer the same tool_call_id",
      "OpenAI API error \"Invalid parameter: Duplicate value for 'tool_call_id' of '<id>', in "
      "messages[7] and messages[8]\" (as users report it: agno-agi/agno#5116, anomalyco/opencode#1211)")
def _o_unique_ids(body):
    seen: dict = {}
    for i, m in enumerate(_messages(body)):
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            first = seen.setdefault(m["tool_call_id"], i)
            if first != i:
                yield f"messages[{i}].tool_call_id {m['tool_call_id']!r} repeats messages[{first}]"


@rule("openai", "request", "tool-pairing",
      "an assistant message with tool_calls is followed by one tool message per call id, and "
      "a tool message answers a call of the tool_calls message before it",
      "OpenAI API errors \"An assistant message with 'tool_calls' must be followed by tool "
      "messages responding to each 'tool_call_id'\" / \"messages with role 'tool' must be a "
      "response to a preceeding message with 'tool_calls'\"")
def _o_pairing(body):
    messages = _messages(body)
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.get("role") == "tool":
            yield f"messages[{i}]: a tool message after no tool_calls"
            i += 1
            continue
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        i += 1
        if not isinstance(calls, list) or not calls:
            continue
        wanted = [c.get("id") for c in calls if isinstance(c, dict)]
        answered = []
        while i < len(messages) and messages[i].get("role") == "tool":
            answered.append(messages[i].get("tool_call_id"))
            i += 1
        for call_id in wanted:
            if call_id not in answered:
                yield f"tool call {call_id!r} has no tool message after it"
        for call_id in answered:
            if call_id not in wanted:
                yield f"tool message {call_id!r} answers no call of the message before"
        for call_id in set(answered):
            if answered.count(call_id) > 1:
                yield f"tool call {call_id!r} answered {answered.count(call_id)} times"


@rule("openai", "request", "tool-call-shape",
      "a history tool call is a function call with function.name and function.arguments strings, "
      "or a custom call with custom.name and custom.input strings, by its type",
      "OpenAI API error \"Missing required parameter: 'messages[N].tool_calls[M].function.name'\"; "
      "ChatCompletionMessageFunctionToolCallParam / ChatCompletionMessageCustomToolCallParam (openai client)")
def _o_tool_calls(body):
    for i, m in enumerate(_messages(body)):
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        for j, c in enumerate(calls if isinstance(calls, list) else []):
            kind = c.get("type") if isinstance(c, dict) else None
            member = {"function": ("name", "arguments"), "custom": ("name", "input")}.get(kind)
            inner = c.get(kind) if member else None
            if member is None or not isinstance(inner, dict):
                yield f"messages[{i}].tool_calls[{j}]: type {kind!r} without its member"
            elif not all(isinstance(inner.get(k), str) for k in member):
                yield f"messages[{i}].tool_calls[{j}].{kind}: {', '.join(member)} not both strings"


@rule("openai", "request", "content-parts-non-empty",
      "a content-part list is not empty",
      "OpenAI API error \"Invalid 'messages[N].content': empty array. Expected an array with "
      "minimum length 1\"")
def _o_parts(body):
    for i, m in enumerate(_messages(body)):
        if m.get("content") == []:
            yield f"messages[{i}].content is []"


@rule("openai", "request", "image-media-type",
      "a data URL image is labelled image/png, image/jpeg (or image/jpg), image/gif or image/webp",
      "OpenAI API error \"You uploaded an unsupported image. Please make sure your image has of one "
      "the following formats: ['png', 'jpeg', 'gif', 'webp']\" (code invalid_image_format, as users "
      "report it: CosmosShadow/gptpdf#6, STranslate/STranslate#277); image/jpg data URLs are taken "
      "(mealie-recipes/mealie#5897)")
def _o_image_types(body):
    for i, j, part in _parts(body):
        image = part.get("image_url") if part.get("type") == "image_url" else None
        url = image.get("url") if isinstance(image, dict) else None
        if isinstance(url, str) and url.startswith("data:"):
            label = url[5:].split(",", 1)[0].split(";", 1)[0]
            if label not in OPENAI_IMAGE_TYPES:
                yield f"messages[{i}].content[{j}].image_url.url is labelled {label!r}"


@rule("openai", "request", "file-data-named",
      "a file part with file_data has a filename",
      "OpenAI API error \"Missing required parameter: 'messages[N].content[M].file.file_id'\" for "
      "file_data without filename (openai/openai-agents-python#1513, langchain-ai/langchainjs#9512)")
def _o_file_named(body):
    for i, j, part in _parts(body):
        file = part.get("file") if part.get("type") == "file" else None
        if isinstance(file, dict) and "file_data" in file and not isinstance(file.get("filename"), str):
            yield f"messages[{i}].content[{j}].file has file_data without a filename"


@rule("openai", "request", "content-present",
      "a user, system, developer or tool message has content",
      "OpenAI API error \"Missing required parameter: 'messages[N].content'\" (content is required "
      "but for assistant messages)")
def _o_content_present(body):
    for i, m in enumerate(_messages(body)):
        if m.get("role") in ("user", "system", "developer", "tool") and m.get("content") is None:
            yield f"messages[{i}] is a {m.get('role')} message without content"


@rule("openai", "request", "assistant-has-something",
      "an assistant message has content, tool_calls, function_call or refusal",
      "OpenAI API error \"Invalid value for 'content': expected a string, got null\" (assistant "
      "content is optional only with tool_calls/function_call)")
def _o_assistant(body):
    for i, m in enumerate(_messages(body)):
        if m.get("role") == "assistant" and m.get("content") is None and not any(
                m.get(k) for k in ("tool_calls", "function_call", "refusal")):
            yield f"messages[{i}] is an assistant message with nothing in it"


# =====================================================================================
# ollama requests
# =====================================================================================


@rule("ollama", "request", "arguments-object",
      "a history tool call's function.arguments is a JSON object",
      f"{_OLLAMA_REF}: ToolCallFunction.Arguments is a map (a string or array is a 400 "
      "'cannot unmarshal')")
def _l_arguments(body):
    for i, m in enumerate(_messages(body)):
        calls = m.get("tool_calls")
        for j, c in enumerate(calls if isinstance(calls, list) else []):
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict) and not isinstance(fn.get("arguments"), dict):
                yield f"messages[{i}].tool_calls[{j}].function.arguments {fn.get('arguments')!r:.60}"


_B64 = re.compile(r"[A-Za-z0-9+/=\s]*")


@rule("ollama", "request", "images-base64",
      "images are plain base64 strings (no data: URL, no http URL)",
      f"{_OLLAMA_REF}: 'images: a list of base64-encoded images'")
def _l_images(body):
    for i, m in enumerate(_messages(body)):
        images = m.get("images")
        for j, image in enumerate(images if isinstance(images, list) else []):
            if not isinstance(image, str) or not _B64.fullmatch(image[:4096]):
                yield f"messages[{i}].images[{j}] is not base64: {str(image)[:40]!r}"


_OLLAMA_INT_OPTIONS = ("num_predict", "num_ctx", "seed", "top_k", "num_keep", "repeat_last_n", "num_batch")


@rule("ollama", "request", "integer-options",
      "options.num_predict, num_ctx, seed, top_k (and the other count options) and top_logprobs are "
      "integers: the client declares them int (its server truncates a float, refuses a string, "
      "bool or null); another dialect's float (openai max_completion_tokens 256.0) is written 256",
      f"{_OLLAMA_REF}: Options.FromMap ('option num_predict must be of type integer'); ollama client "
      "_types.Options (num_predict: Optional[int] ...), ChatRequest.top_logprobs: Optional[int]")
def _l_int_options(body):
    options = body.get("options")
    for key in _OLLAMA_INT_OPTIONS:
        if isinstance(options, dict) and key in options and not _is_int(options[key]):
            yield f"options.{key} {options[key]!r}"
    if "top_logprobs" in body and body["top_logprobs"] is not None and not _is_int(body["top_logprobs"]):
        yield f"top_logprobs {body['top_logprobs']!r}"


@rule("ollama", "request", "think-value",
      "think is a boolean or one of low, medium, high, max",
      f"{_OLLAMA_REF}: api.ThinkValue (bool, or a level for models that take one)")
def _l_think(body):
    if "think" in body and not (isinstance(body["think"], bool) or body["think"] in ("low", "medium", "high", "max")):
        yield f"think {body['think']!r}"


@rule("ollama", "request", "messages-present",
      "an empty message list loads the model and answers nothing: ollama's own preload request "
      "(an input breaking no API of its own, kept on its round trip), never the answer to a "
      "request that listed messages",
      f"{_OLLAMA_REF}: 'If the messages array is empty, the model will be loaded into memory'")
def _l_messages(body):
    if not _messages(body):
        yield "no messages"


@rule("ollama", "request", "tool-pairing",
      "tolerated: ollama does not check that tool messages answer the calls before them "
      "(openai and anthropic do)",
      f"{_OLLAMA_REF}: no pairing check (results are matched by order and tool_name)",
      enforced=False)
def _l_pairing(body):
    messages = _messages(body)
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        if m.get("role") == "tool":
            yield f"messages[{i - 1}]: a tool message after no tool_calls"
            continue
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if not isinstance(calls, list) or not calls:
            continue
        ids = {c.get("id") for c in calls if isinstance(c, dict) and c.get("id") is not None}
        answered = 0
        while i < len(messages) and messages[i].get("role") == "tool":
            result_id = messages[i].get("tool_call_id")
            if ids and result_id is not None and result_id not in ids:
                yield f"messages[{i}]: tool_call_id {result_id!r} answers no call before it"
            called = {(c.get("function") or {}).get("name") for c in calls if isinstance(c, dict)}
            if messages[i].get("tool_name") is not None and messages[i]["tool_name"] not in called:
                yield f"messages[{i}]: tool_name {messages[i]['tool_name']!r} names no call before it"
            answered += 1
            i += 1
        if answered != len(calls):
            yield f"messages[{i - answered - 1}]: {len(calls)} tool calls, {answered} tool messages after them"


# =====================================================================================
# responses and streams (what the client sends back next turn)
# =====================================================================================


def _anthropic_response_blocks(value, kind: str) -> Iterator[tuple[str, dict]]:
    if kind == "response":
        for j, b in enumerate(_blocks(value.get("content") if isinstance(value, dict) else None)):
            yield f"content[{j}]", b
        return
    for n, (_event, data) in enumerate(value):
        if isinstance(data, dict) and data.get("type") == "content_block_start" and \
                isinstance(data.get("content_block"), dict):
            yield f"event {n}", data["content_block"]


@rule("anthropic", "response stream", "tool-id-pattern",
      "a tool_use id matches ^[a-zA-Z0-9_-]+$ (the client sends it back in its next request)",
      "Anthropic API error 'tool_use.id: String should match pattern ^[a-zA-Z0-9_-]+$'")
def _a_response_ids(value, kind="response"):
    for where, b in _anthropic_response_blocks(value, kind):
        if b.get("type") == "tool_use" and not ANTHROPIC_ID.fullmatch(str(b.get("id", ""))):
            yield f"{where}: tool_use id {b.get('id')!r}"


@rule("anthropic", "response stream", "tool-use-stop-has-block",
      "stop_reason tool_use comes with a tool_use block (the client's agent loop answers each; with "
      "none it sends back an assistant turn with no content)",
      "Anthropic API error 'messages.N: all messages must have non-empty content except for the "
      "optional final assistant message'")
def _a_tool_use_stop(value, kind="response"):
    if kind == "response":
        stops = [value.get("stop_reason")]
    else:
        stops = [data["delta"].get("stop_reason") for _event, data in value if isinstance(data, dict)
                 and data.get("type") == "message_delta" and isinstance(data.get("delta"), dict)]
    if "tool_use" in stops and not any(b.get("type") == "tool_use" for _, b in _anthropic_response_blocks(value, kind)):
        yield "stop_reason tool_use, and no tool_use block"


def _openai_choices(value, kind: str) -> tuple[dict, set]:
    """A response's or stream's finish reasons per choice index, and the indexes with a call."""
    finishes: dict = {}
    calls: set = set()
    frames = [value] if kind == "response" else [data for _event, data in value if isinstance(data, dict)]
    for choice in (c for frame in frames for c in frame.get("choices") or [] if isinstance(c, dict)):
        finishes.setdefault(choice.get("index"), []).append(choice.get("finish_reason"))
        part = choice.get("message" if kind == "response" else "delta")
        if isinstance(part, dict) and (part.get("tool_calls") or part.get("function_call")):
            calls.add(choice.get("index"))
    return finishes, calls


@rule("openai", "response stream", "tool-calls-finish-has-calls",
      "finish_reason tool_calls / function_call comes with a call on that choice (the client answers "
      "each; with none it sends back an assistant message with neither content nor tool_calls)",
      "OpenAI API error \"Invalid value for 'content': expected a string, got null\" on the next turn")
def _o_tool_calls_finish(value, kind="response"):
    finishes, calls = _openai_choices(value, kind)
    for index, reasons in finishes.items():
        if index not in calls and any(f in ("tool_calls", "function_call") for f in reasons):
            yield f"choices[{index}]: finish_reason tool_calls, and no tool call"


# =====================================================================================
# every dialect
# =====================================================================================


class _Object(dict):
    """A JSON object as ``check`` parses it: the keys it had more than once (JSON parsers
    keep one of them -- which one is the parser's choice: the two values may disagree)."""

    duplicates: tuple = ()


def _object(pairs: list) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def _duplicate_keys(value, where: str = "$") -> Iterator[str]:
    if isinstance(value, dict):
        for key in getattr(value, "duplicates", ()):
            yield f"{where} has key {key!r} more than once"
        for key, inner in value.items():
            yield from _duplicate_keys(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _duplicate_keys(inner, f"{where}[{i}]")


for _dialect in ("anthropic", "openai", "ollama"):
    rule(_dialect, "request response", "no-duplicate-keys",
         "an object has each key once (a late attribute written beside an early one)",
         "RFC 8259 section 4 ('names within an object SHOULD be unique'); the APIs' parsers keep "
         "one of them, which one is theirs to choose")(lambda value, kind=None: _duplicate_keys(value))


# =====================================================================================
# running the rules
# =====================================================================================


def _stream_events(data: bytes) -> list:
    from rpt import split_stream_events  # the test suite's stream oracle
    return split_stream_events(data)


def check(dialect: str, kind: str, data: bytes, *, enforced_only: bool = False) -> list[str]:
    """The rules of ``dialect``/``kind`` the bytes break, as ``"<rule>: <what>"`` lines
    (``enforced_only``: leave out the tolerated ones)."""
    try:
        value = _stream_events(data) if kind == "stream" else json.loads(data, object_pairs_hook=_object)
    except ValueError:
        # not JSON at all: a bug of another kind, caught by the JSON and client checks of the
        # tests themselves (a cut-off tool call pasted as is: issue 16.1); counted, not judged
        CHECKED["unparsed"] += 1
        return []
    if kind != "stream" and not isinstance(value, dict):
        return []
    problems = []
    for r in RULES:
        if r.dialect != dialect or kind not in r.kinds or (enforced_only and not r.enforced):
            continue
        found = r.check(value, kind) if kind in ("response", "stream") else r.check(value)
        problems += [f"{r.name}: {p}" for p in found]
    return problems


def table() -> str:
    """The rules as a markdown table (one place to read them)."""
    lines = ["| dialect | kind | rule | enforced | reason | source |", "|---|---|---|---|---|---|"]
    for r in RULES:
        lines.append(f"| {r.dialect} | {' '.join(r.kinds)} | {r.name} | {'yes' if r.enforced else 'tolerated'} "
                     f"| {r.reason} | {r.where} |")
    return "\n".join(lines)


class ValidityError(AssertionError):
    """A cross-dialect output the target API would reject."""


#: cross-dialect outputs checked, and those not checked because the input broke its own API's rules
CHECKED = {"outputs": 0, "skipped": 0, "unparsed": 0}
#: for the skipped ones: (source dialect, input rule broken, output rule broken) -> count
SKIPPED: dict[tuple[str, str, str], int] = {}


def assert_valid(source: str, target: str, kind: str, data_in: bytes, data_out: bytes) -> None:
    """Fail when ``data_out`` breaks a rule of ``target`` that ``data_in`` kept in ``source``."""
    problems = check(target, kind, data_out, enforced_only=True)
    if not problems:
        CHECKED["outputs"] += 1
        return
    broken_in = check(source, kind, data_in)
    if broken_in:
        CHECKED["skipped"] += 1
        key = (f"{source}->{target} {kind}", broken_in[0].split(":")[0], problems[0].split(":")[0])
        SKIPPED[key] = SKIPPED.get(key, 0) + 1
        return
    raise ValidityError(f"{source} -> {target} {kind} output the {target} API rejects:\n  "
                        + "\n  ".join(problems) + f"\noutput: {data_out[:600]!r}")


def install() -> None:
    """Wrap ``Transcoder.feed``/``close`` so that every cross-dialect run checks its output."""
    import interlingua
    from interlingua import pipeline

    for cls in {pipeline.Transcoder, interlingua.Transcoder}:
        if getattr(cls, "_validity_installed", False):
            continue
        _wrap(cls)
    _wrap_compiler()


def _wrap_compiler() -> None:
    """The turn compiler encodes its canonical events for each target: those bodies too."""
    from interlingua.compiler import transcode

    encode = transcode.encode_compiled
    if getattr(encode, "_validity_installed", False):
        return

    def checked(compiled, target, **kwargs):
        body, session = encode(compiled, target, **kwargs)
        problems = check(target, "request", body, enforced_only=True)
        if problems:
            raise ValidityError(f"compiler -> {target} request the {target} API rejects:\n  "
                                + "\n  ".join(problems) + f"\noutput: {body[:600]!r}")
        CHECKED["outputs"] += 1
        return body, session

    checked._validity_installed = True
    transcode.encode_compiled = checked


def _wrap(cls) -> None:
    feed, close = cls.feed, cls.close

    def checked_feed(self, data: bytes) -> bytes:
        out = feed(self, data)
        record = self.__dict__.setdefault("_validity", ([], []))
        record[0].append(bytes(data))
        record[1].append(out)
        return out

    def checked_close(self) -> bytes:
        out = close(self)
        record = self.__dict__.pop("_validity", None)
        if record is None:  # nothing fed, or a test dropped the record (a mutant: no promise)
            return out
        ins, outs = record
        session = getattr(self, "session", None)
        source, target = getattr(session, "source", None), getattr(session, "target", None)
        kind = getattr(session, "kind", "request")
        if source and target and source != target:
            assert_valid(source, target, kind, b"".join(ins), b"".join(outs) + out)
        return out

    cls.feed, cls.close = checked_feed, checked_close
    cls._validity_installed = True


if __name__ == "__main__":  # python3 tests/validity.py: the rules as one markdown table
    print(table())
