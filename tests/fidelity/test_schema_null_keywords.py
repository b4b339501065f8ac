"""A null keyword in a tool's JSON Schema says what its absence says (README "Target
validity"; ``encoding.without_null_keywords``): into openai and anthropic, whose schema checks
refuse it, every such keyword goes -- at the top, and in every place a schema holds schemas --
with no loss; ``const`` / ``default`` keep a null (it is their value) and data (``enum``'s
values, ``examples``) is not looked into. Every source dialect into each of the two."""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder

#: (a schema holding null keywords, what openai / anthropic get) -- one row per place
PLACES = [
    ({"type": "object", "required": None, "properties": {}}, {"type": "object", "properties": {}}),
    ({"type": None, "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"a": {"type": "string"}}}),
    ({"type": "object", "properties": {"a": {"type": "string", "enum": None, "description": None}}},
     {"type": "object", "properties": {"a": {"type": "string"}}}),
    ({"type": "object", "patternProperties": {"^x": {"type": "string", "format": None}}},
     {"type": "object", "patternProperties": {"^x": {"type": "string"}}}),
    ({"type": "object", "$defs": {"D": {"type": "integer", "minimum": None}}, "defs": {"E": {"title": None}}},
     {"type": "object", "$defs": {"D": {"type": "integer"}}, "defs": {"E": {}}}),
    ({"type": "object", "definitions": {"D": {"items": None}}, "dependentSchemas": {"a": {"required": None}}},
     {"type": "object", "definitions": {"D": {}}, "dependentSchemas": {"a": {}}}),
    ({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "enum": None}}}},
     {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}}),
    ({"type": "object", "properties": {"l": {"type": "array", "items": [{"pattern": None}], "additionalItems": {"x": None}}}},
     {"type": "object", "properties": {"l": {"type": "array", "items": [{}], "additionalItems": {}}}}),
    ({"type": "object", "properties": {"u": {"anyOf": [{"type": "string", "format": None}, {"type": "null"}]},
                                       "o": {"oneOf": [{"const": None}, {"minLength": None}]},
                                       "a": {"allOf": [{"title": None}], "prefixItems": [{"maxItems": None}]}}},
     {"type": "object", "properties": {"u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                                       "o": {"oneOf": [{"const": None}, {}]},
                                       "a": {"allOf": [{}], "prefixItems": [{}]}}}),
    ({"type": "object", "additionalProperties": {"type": "string", "maxLength": None},
      "not": {"required": None}, "if": {"x": None}, "then": {"y": None}, "else": {"z": None},
      "propertyNames": {"pattern": None}, "unevaluatedProperties": {"w": None}},
     {"type": "object", "additionalProperties": {"type": "string"}, "not": {}, "if": {}, "then": {}, "else": {},
      "propertyNames": {}, "unevaluatedProperties": {}}),
    ({"type": "object", "properties": {"c": {"contains": {"const": None, "v": None}, "unevaluatedItems": {"v": None}}}},
     {"type": "object", "properties": {"c": {"contains": {"const": None}, "unevaluatedItems": {}}}}),
    # kept: const / default null; data -- enum's values, examples, an unknown keyword's value
    ({"type": "object", "properties": {"k": {"default": None, "enum": ["a", None], "examples": [None, {"x": None}],
                                             "x-meta": {"n": None}}}},
     {"type": "object", "properties": {"k": {"default": None, "enum": ["a", None], "examples": [None, {"x": None}],
                                             "x-meta": {"n": None}}}}),
]


def _request(dialect: str, schema: dict) -> dict:
    if dialect == "anthropic":
        return {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "q"}],
                "tools": [{"name": "f", "input_schema": schema}]}
    return {"model": "m", "messages": [{"role": "user", "content": "q"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}]}


def _schema(dialect: str, body: dict) -> dict:
    tool = body["tools"][0]
    return tool["input_schema"] if dialect == "anthropic" else tool["function"]["parameters"]


@pytest.mark.parametrize("schema, expected", PLACES)
@pytest.mark.parametrize("source, target", [("ollama", "openai"), ("ollama", "anthropic"),
                                            ("openai", "anthropic"), ("anthropic", "openai")])
def test_null_keywords_go_into_openai_and_anthropic(backend, source, target, schema, expected):
    for cut in (None, 3):
        body = json.dumps(_request(source, schema)).encode()
        transcoder = Transcoder(source, target, kind="request")
        pieces = [body] if cut is None else [body[i:i + cut] for i in range(0, len(body), cut)]
        out = json.loads(b"".join(transcoder.feed(p) for p in pieces) + transcoder.close())
        assert _schema(target, out) == expected
        assert list(transcoder.losses) == []


@pytest.mark.parametrize("schema, expected", PLACES[:3])
def test_ollama_keeps_them(backend, schema, expected):
    """Ollama reads a null keyword as absent: its own round trip keeps the schema as it came."""
    transcoder = Transcoder("ollama", "ollama", kind="request")
    out = json.loads(transcoder.feed(json.dumps(_request("ollama", schema)).encode()) + transcoder.close())
    assert _schema("ollama", out) == schema
