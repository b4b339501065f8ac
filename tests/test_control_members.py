"""Member types, each source into every target, cut at 1, 7 and whole, on both backends:

* inside a control's value (``dialects/fields.MEMBER_FIELDS`` / ``REQUIRED_MEMBERS``): every
  member and element with a value of every JSON type it does not take (and a fraction for an
  integer) is a ``SchemaError`` at its path, at the field's first byte; right types transcode;
  a required member left out is a ``SchemaError`` naming it;
* a tool definition's carried members (``fields.TOOL_MEMBERS``): the same at the tool's first
  byte; an explicit null is not written;
* members of messages and blocks the decoders type at their first token (``MESSAGE_MEMBERS``):
  a ``SchemaError`` at the value."""

from __future__ import annotations

import json

import pytest

from interlingua.dialects import DIALECTS
from interlingua.dialects.fields import MEMBER_FIELDS, REQUIRED_MEMBERS, TOOL_MEMBERS, refusal, value_type

from test_control_numbers import everywhere
from test_usage_numbers import results

#: a valid value of each field (ollama's ``options.stop`` sits in ``options``)
VALID = {
    "openai": {
        "stop": ["a", "b"],
        "stream_options": {"include_usage": True, "include_obfuscation": False},
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "function_call": {"name": "f"},
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"},
                                                                   "strict": True, "description": "d"}},
        "thinking": {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},  # LiteLLM's
        "reasoning": {"effort": "high", "max_tokens": 2048, "enabled": True, "exclude": False},  # OpenRouter's
    },
    "anthropic": {
        "stop_sequences": ["a", "b"],
        "tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
        "metadata": {"user_id": "u"},
        "output_config": {"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}},
    },
    "ollama": {"options.stop": ["a", "b"]},
}
#: a value of each JSON type (the wrong ones are those a member's Expect refuses)
OF_TYPE = {"string": "s", "number": 5, "boolean": True, "null": None, "array": [1], "object": {"a": 1}}


def body(source: str, field: str, value) -> bytes:
    member = (f'"options":{{"stop":{json.dumps(value)}}}' if field == "options.stop"
              else f'"{field}":{json.dumps(value)}')
    head = '{"model":"m","max_tokens":4096,' if source == "anthropic" else '{"model":"m",'
    tools = ('"tools":[{"name":"f","input_schema":{"type":"object"}}],' if source == "anthropic"
             else '"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],')
    return f'{head}{tools}"messages":[{{"role":"user","content":"q"}}],{member}}}'.encode()


def field_offset(data: bytes, field: str) -> int:
    name = field.split(".")[-1]
    return data.index(f'"{name}":'.encode()) + len(name) + 3


def with_member(value, path: str, wrong):
    """The valid value with the member at ``path`` (``[]``: the second element) set to ``wrong``."""
    value = json.loads(json.dumps(value))
    if path == "[]":
        value[1] = wrong
        return value
    *outer, last = path.split(".")
    inner = value
    for step in outer:
        inner = inner[step]
    inner[last] = wrong
    return value


def _wrong_values(expect) -> list:
    values = [v for v in OF_TYPE.values() if refusal(expect, "it", v) is not None]
    return values + ([2048.5] if expect.integer else [])


CASES = [pytest.param(source, field, path, wrong, id=f"{source}-{field}-{path}-{value_type(wrong)}{wrong!r}")
         for source, fields in MEMBER_FIELDS.items() for field, members in fields.items()
         for path, expect in members.items() for wrong in _wrong_values(expect)]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,field,path,wrong", CASES)
def test_a_member_of_another_type_is_the_sources_error(source, field, path, wrong, target):
    data = body(source, field, with_member(VALID[source][field], path, wrong))
    result = everywhere(source, target, data)
    member = f"$.{field}[1]" if path == "[]" else f"$.{field}.{path}"
    assert result[0] == "error" and result[1] == "SchemaError", result
    assert (result[3], result[4], result[5]) == (field_offset(data, field), member, source), result


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,field", [(s, f) for s, fields in MEMBER_FIELDS.items() for f in fields])
def test_members_of_their_types_transcode(source, field, target):
    result = everywhere(source, target, body(source, field, VALID[source][field]))
    assert result[0] == "out", result


REQUIRED_CASES = [(source, field, kind, member) for source, fields in REQUIRED_MEMBERS.items()
                  for field, by_type in fields.items() for kind, members in by_type.items() for member in members]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,field,kind,member", REQUIRED_CASES)
def test_a_required_member_left_out_is_the_sources_error(source, field, kind, member, target):
    value = dict(VALID[source][field])
    if kind != "*":
        value["type"] = kind
    del value[member]
    data = body(source, field, value)
    result = everywhere(source, target, data)
    assert result[0] == "error" and result[1] == "SchemaError", result
    assert result[2] == f"{field} has no {member!r} (required)"
    assert (result[3], result[4]) == (field_offset(data, field), f"$.{field}"), result


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("level", ['"ultra"', '""', '"LOW"'])
def test_an_ollama_think_level_it_does_not_know_is_the_sources_error(level, target):
    data = f'{{"model":"m","messages":[{{"role":"user","content":"q"}}],"think":{level}}}'.encode()
    result = everywhere("ollama", target, data)
    assert result[0] == "error" and result[1:] == (
        "SchemaError", f"unknown think level {level} (one of low, medium, high, max)",
        data.index(b'"think":') + 8, "$.think", "ollama"), result


#: the members of each source's tool definitions that are canonical (ollama's strict is an extra of
#: its own: a recorded loss into another dialect)
CARRIED = {"openai": ("description", "strict"), "anthropic": ("description", "strict"), "ollama": ("description",)}


#: a tool definition with one member set, per source: (the field, the tool, where the member sits)
def tool_body(source: str, legacy: bool, member: str, value) -> tuple[bytes, str]:
    m = f'"{member}":{json.dumps(value)}'
    if source == "anthropic":
        tool, where = f'{{"name":"f","input_schema":{{"type":"object"}},{m}}}', "$.tools[0]"
    elif legacy:
        tool, where = f'{{"name":"f",{m},"parameters":{{"type":"object"}}}}', "$.functions[0]"
    else:
        tool, where = f'{{"type":"function","function":{{"name":"f",{m},"parameters":{{"type":"object"}}}}}}', "$.tools[0].function"
    head = '{"model":"m","max_tokens":4096,' if source == "anthropic" else '{"model":"m",'
    field = "functions" if legacy else "tools"
    return f'{head}"{field}":[{tool}],"messages":[{{"role":"user","content":"q"}}]}}'.encode(), where


TOOL_CASES = [pytest.param(source, legacy, member, wrong, id=f"{source}{'-legacy' if legacy else ''}-{member}-{wrong!r}")
              for source in DIALECTS for legacy in ((False, True) if source == "openai" else (False,))
              for member, expect in TOOL_MEMBERS.items() if member in CARRIED[source] for wrong in _wrong_values(expect)]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,legacy,member,wrong", TOOL_CASES)
def test_a_tool_member_of_another_type_is_the_sources_error(source, legacy, member, wrong, target):
    data, where = tool_body(source, legacy, member, wrong)
    result = everywhere(source, target, data)
    assert result[0] == "error" and result[1] == "SchemaError", result
    assert (result[3], result[4], result[5]) == (data.index(b"[{") + 1, f"{where}.{member}", source), result


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,legacy,member", [(s, legacy, m) for s, legacy in (
    ("openai", False), ("openai", True), ("anthropic", False), ("ollama", False)) for m in CARRIED[s]])
def test_a_tool_member_that_is_null_is_not_written(source, legacy, member, target):
    result = everywhere(source, target, tool_body(source, legacy, member, None)[0])
    assert result[0] == "out", result
    tools = json.loads(result[1]).get("functions" if legacy and target == "openai" else "tools")
    assert all(member not in tool and member not in tool.get("function", {}) for tool in tools), result


#: members of messages and blocks whose types the decoders check at the value's first token:
#: (source, kind, body with {v}, the member's path, its Expect's name)
_CALLS = '{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]}'
_ANTHROPIC_STREAM = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
    '"model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"%s","%s":""}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"%s","%s":{v}}}\n\n'
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n')
_OPENAI_PART = '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"},%s]}]}'
MESSAGE_MEMBERS = [
    ("anthropic", "request", '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},{"role":"assistant",'
     '"content":[{"type":"tool_use","id":"t","name":"f","input":{v}}]}]}', "$.messages[1].content[0].input", "an object"),
    ("anthropic", "request", '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"q",'
     '"cache_control":{v}}]}]}', "$.messages[0].content[0].cache_control", "an object or null"),
    ("anthropic", "request", '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},{"role":"assistant",'
     '"content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result",'
     '"tool_use_id":"t","content":"r","is_error":{v}}]}]}', "$.messages[2].content[0].is_error", "a boolean or null"),
    ("anthropic", "response", '{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use",'
     '"id":"t","name":"f","input":{v}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}',
     "$.content[0].input", "an object"),
    ("anthropic", "response", '{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"thinking",'
     '"thinking":"t","signature":{v}}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}',
     "$.content[0].signature", "a string or null"),
    ("anthropic", "stream", _ANTHROPIC_STREAM % ("thinking", "thinking", "signature_delta", "signature"),
     "$.delta.signature", "a string or null"),
    ("anthropic", "stream", _ANTHROPIC_STREAM % ("text", "text", "citations_delta", "citation"), "$.delta.citation",
     "an object"),
    ("ollama", "request", '{"model":"m","messages":[{"role":"user","content":"go"},' + _CALLS + ',{"role":"tool",'
     '"content":"r","tool_name":{v}}]}', "$.messages[2].tool_name", "a string or null"),
    ("ollama", "request", '{"model":"m","messages":[{"role":"user","content":"go"},' + _CALLS + ',{"role":"tool",'
     '"content":"r","tool_call_id":{v}}]}', "$.messages[2].tool_call_id", "a string or null"),
    ("ollama", "request", '{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"",'
     '"tool_calls":[{"function":{"name":{v},"arguments":{}}}]}]}', "$.messages[1].tool_calls[0].function.name",
     "a string or null"),
    ("openai", "request", '{"model":"m","messages":[{"role":"user","content":"q","name":{v}}]}', "$.messages[0].name",
     "a string or null"),
    ("openai", "request", _OPENAI_PART % '{"type":"image_url","image_url":{"url":"https://e.com/a.png","detail":{v}}}',
     "$.messages[0].content[1].image_url.detail", "a string"),
    ("openai", "request", _OPENAI_PART % '{"type":"input_audio","input_audio":{"data":"AAAA","format":{v}}}',
     "$.messages[0].content[1].input_audio.format", "a string"),
    ("openai", "request", _OPENAI_PART % '{"type":"file","file":{"file_data":"data:application/pdf;base64,AAAA",'
     '"filename":{v}}}', "$.messages[0].content[1].file.filename", "a string"),
    ("openai", "request", _OPENAI_PART % '{"type":"file","file":{"file_id":{v}}}',
     "$.messages[0].content[1].file.file_id", "a string"),
]
_NAMES = {"an object": ("object",), "an object or null": ("object", "null"), "a boolean": ("boolean",),
          "a boolean or null": ("boolean", "null"),
          "a string": ("string",), "a string or null": ("string", "null")}
MEMBER_CASES = [pytest.param(source, kind, template, path, expect, wrong, id=f"{path}-{json.dumps(wrong)}")
                for source, kind, template, path, expect in MESSAGE_MEMBERS
                for name, wrong in OF_TYPE.items() if name not in _NAMES[expect]]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,kind,template,path,expect,wrong", MEMBER_CASES)
def test_a_message_member_of_another_type_is_the_sources_error(source, kind, template, path, expect, wrong, target):
    """Each is a SchemaError at the value (was: copied into the source's own dialect, a loss or
    a made-up name elsewhere, anthropic input 5 became openai arguments "5")."""
    data = template.replace("{v}", json.dumps(wrong, separators=(",", ":"))).encode()
    got = results(source, target, kind, data)
    at = data.index(b":" + json.dumps(wrong, separators=(",", ":")).encode(), data.index(path.rsplit(".", 1)[1].encode())) + 1
    frame = data.rfind(b"data: ", 0, at) + 6 if kind == "stream" else None
    assert (got[0], got[1], got[3], got[4], got[5]) == ("error", "SchemaError", path, at - (frame or 0), frame), got
    assert got[2].startswith(f"expected {expect} for ") and got[2].endswith(f", got {value_type(wrong)}"), got


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,kind,template,path,expect", MESSAGE_MEMBERS)
def test_a_message_member_of_its_type_transcodes(source, kind, template, path, expect, target):
    right = {"an object": '{"type":"char_location","cited_text":"c","document_index":0,"start_char_index":0,'
                          '"end_char_index":1}' if "citation" in path else "{}",
             "an object or null": '{"type":"ephemeral"}', "a boolean": "true", "a boolean or null": "true"}.get(expect, '"x"')
    got = results(source, target, kind, template.replace("{v}", right).encode())
    assert got[0] == "out", got
