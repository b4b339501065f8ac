"""Tool schemas with ``allOf`` / ``anyOf`` / ``oneOf`` at their top, of another dialect, into
anthropic: anthropic refuses such a tool ("input_schema does not support oneOf, allOf, or anyOf
at the top level"), and the whole request with it -- what an MCP tool whose parameters are a
union gets through an openai or ollama client. The anthropic encoder writes one object schema:
the branches' ``properties`` merged (a name the schema has keeps its own; keywords and branches in
order), an ``allOf`` branch's ``required`` names required, the rest recorded (one loss per tool at
``$.tools``). The validity layer (``input-schema-no-top-combinator``) checks every anthropic output
of the suite; rpt/request-tool-schema-union-into-anthropic pins one request. Both backends."""

from __future__ import annotations

import json

import pytest

from rpt import transcode_cut

_S = {"type": "string"}

#: (parameters, the input_schema anthropic gets; None: as it came, with no loss)
SCHEMAS = [
    ({"type": "object", "properties": {"q": _S}, "required": ["q"]}, None),
    ({"type": "object", "properties": {"a": {"anyOf": [_S, {"type": "null"}]}}}, None),  # (not at the top)
    ({"oneOf": [{"type": "object", "properties": {"a": _S}, "required": ["a"]},
                {"type": "object", "properties": {"b": _S}, "required": ["b"]}]},
     {"type": "object", "properties": {"a": _S, "b": _S}}),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "anyOf": [{"properties": {"a": _S, "c": {"type": "number", "minimum": 1.5}}, "required": ["c"]}, "x"]},
     {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "number", "minimum": 1.5}},
      "required": ["a"]}),
    ({"type": "object", "allOf": [{"properties": {"k": _S}, "required": ["k"]},
                                  {"properties": {"v": {}, "é": _S}, "required": ["v", "k"]}]},
     {"type": "object", "properties": {"k": _S, "v": {}, "é": _S}, "required": ["k", "v"]}),
    ({"type": "object", "description": "d", "oneOf": [{"required": ["x"]}], "allOf": [{"required": ["y"]}],
      "additionalProperties": False},
     {"type": "object", "description": "d", "additionalProperties": False, "required": ["y"]}),
    ({"type": "object", "properties": ["not", "an object"], "required": "no", "anyOf": [{"properties": {"a": _S}}]},
     {"type": "object", "properties": ["not", "an object"], "required": "no"}),
    ({"type": "object", "required": ["a", "a"], "allOf": [{"required": ["b", "b", "a"]}, {"required": [1, 1.0, True]}]},
     {"type": "object", "required": ["a", "a", "b", 1]}),  # (a name once, as Python's == has it; the schema's own as it is)
    ({"type": "object", "anyOf": "not a list", "properties": {}},
     {"type": "object", "properties": {}}),
]


def _body(source: str, parameters: dict) -> bytes:
    function = {"name": "run", "parameters": parameters}
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": function}]}).encode()


def _run(source: str, body: bytes, cuts: list[int]):
    return transcode_cut(source, "anthropic", body, cuts)


@pytest.mark.parametrize("source", ["openai", "ollama"])
@pytest.mark.parametrize("n", range(len(SCHEMAS)))
def test_a_union_schema_is_one_object_schema_into_anthropic(source, n):
    parameters, want = SCHEMAS[n]
    body = _body(source, parameters)
    out, losses = _run(source, body, [])
    assert _run(source, body, list(range(1, len(body), 3))) == (out, losses)
    schema = json.loads(out)["tools"][0]["input_schema"]
    combined = [reason for _, reason in losses if "at the top level" in reason]
    if want is None:
        assert schema == {"type": "object", **parameters} and not combined
        return
    assert schema == want
    assert list(schema) == list(want)  # (the members' order too: both backends write it so)
    assert len(combined) == 1 and "parameters of tool 'run'" in combined[0], losses
