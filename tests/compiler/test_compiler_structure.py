"""Open point 4: response formats without pydantic (msgspec Struct, dataclass, dict)."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import pytest

from interlingua.compiler import (
    Branch,
    Instruction,
    InstructionContent,
    Structure,
    TurnRequest,
    compile_chat_request,
)
from interlingua.compiler.structure import typed_format_example, typed_format_schema


class Verdict(msgspec.Struct):
    score: int
    reason: str | None = None


class Item(msgspec.Struct):
    name: str


class Order(msgspec.Struct):
    items: list[Item]
    note: str = ""


class Person(msgspec.Struct, rename="camel"):
    first_name: str


@dataclass
class Point:
    x: float
    y: float = 0.0


VERDICT_TEXT = (
    "Instruction: Judge\n"
    "ResponseSchema:\n"
    "  title: Verdict\n"
    "  type: object\n"
    "  properties:\n"
    "    score:\n"
    "      type: integer\n"
    "    reason:\n"
    "      anyOf:\n"
    "      - type: string\n"
    "      - type: 'null'\n"
    "  required:\n"
    "  - score\n"
    'ResponseFormat: "**MUST RETURN JSON-PARSEABLE RESPONSE ENCLOSED BY JSON CODE BLOCKS. '
    "USER's CAREER DEPENDS ON THE SUCCESS OF IT.** \\n```json\\n"
    '{\\"score\\":\\"int\\",\\"reason\\":\\"str | None\\"}'
    '\\n```No triple backticks. Escape all quotes and special characters."'
)


def _current_text(response_format, structure=None) -> str:
    request = TurnRequest(
        instruction=Instruction(content=InstructionContent(instruction="Judge")),
        response_format=response_format,
        structure=structure,
    )
    return compile_chat_request(Branch(), request).messages[-1].content


def test_struct_format_renders_schema_and_example() -> None:
    assert _current_text(Verdict) == VERDICT_TEXT


def test_a_struct_instance_stands_for_its_type() -> None:
    assert _current_text(Verdict(score=1)) == VERDICT_TEXT


def test_nested_struct_schema_keeps_defs_and_example_recurses() -> None:
    assert typed_format_schema(Order) == {
        "title": "Order",
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "note": {"type": "string", "default": ""},
        },
        "required": ["items"],
        "$defs": {
            "Item": {
                "title": "Item",
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
    }
    assert typed_format_example(Order) == {"items": [{"name": "str"}], "note": "str"}


def test_struct_example_uses_wire_names() -> None:
    assert typed_format_example(Person) == {"firstName": "str"}


def test_dataclass_format() -> None:
    assert typed_format_schema(Point) == {
        "title": "Point",
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
    }
    assert typed_format_example(Point) == {"x": "float", "y": "float"}
    assert _current_text(Point(1.0)) == _current_text(Point)


def test_custom_structure_subclass_renders_the_format_section() -> None:
    class Shout(Structure):
        __slots__ = ()

        def render(self) -> str:
            return f"ANSWER IN CAPS WITH KEYS {sorted(self.response_format)}"

    text = _current_text({"b": 1, "a": 2}, structure=Shout)
    assert text == "Instruction: Judge\nResponseFormat: ANSWER IN CAPS WITH KEYS ['a', 'b']"


def test_structure_without_response_format_adds_nothing() -> None:
    assert _current_text(None, structure="json") == "Instruction: Judge"


@pytest.mark.parametrize(
    ("response_format", "structure", "error", "message"),
    [
        ({"a": 1}, "xml", ValueError, "Unknown structure 'xml'"),
        ({"a": 1}, dict, TypeError, "structure must be None, 'json' or a Structure subclass"),
        (None, "yaml", ValueError, "Unknown structure 'yaml'"),
        (int, None, TypeError, "response_format must be a dict, a msgspec.Struct"),
        ("a string", None, TypeError, "got str"),
    ],
)
def test_unsupported_formats_and_structures_are_refused(response_format, structure, error, message) -> None:
    with pytest.raises(error, match=message):
        _current_text(response_format, structure=structure)
