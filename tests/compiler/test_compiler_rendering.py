"""Renderers: minimal YAML, canonical JSON, ResponseFormat text, image URLs.

Expected strings follow lionagi-notes.md (written by hand, not captured).
"""

from __future__ import annotations

import pytest

from interlingua.compiler.rendering import (
    canonical_json,
    format_image_content,
    image_url,
    json_response_format_text,
    minimal_yaml,
    render_instruction,
)

RESPONSE_FORMAT_TEXT = (
    "**MUST RETURN JSON-PARSEABLE RESPONSE ENCLOSED BY JSON CODE BLOCKS. USER's CAREER "
    'DEPENDS ON THE SUCCESS OF IT.** \n```json\n{"b":1,"a":"é"}\n```No triple backticks. '
    "Escape all quotes and special characters."
)


# --- minimal YAML ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"a": 1, "b": null}', "a: 1\n"),  # a str argument is JSON first
        ({"n": 0, "f": False, "e": "", "w": " \t", "l": [], "d": {"x": None}}, "n: 0\nf: false\n"),
        ({"outer": {"inner": [None, "", {}]}}, "{}\n"),  # containers emptied by pruning go too
        ({"Context": [{"function": "add", "arguments": {"a": 1}}]},
         "Context:\n- function: add\n  arguments:\n    a: 1\n"),
        ({"v": ["null", "yes", "1", "a: b"]}, "v:\n- 'null'\n- 'yes'\n- '1'\n- 'a: b'\n"),
        ({"k": "café ✓"}, "k: café ✓\n"),
        ({"k": "a\nb"}, "k: |-\n  a\n  b\n"),
        ({"k": "a\n"}, "k: |\n  a\n"),
        ({"k": "a\tb"}, 'k: "a\\tb"\n'),
        ({"k": "a \nb"}, 'k: "a \\nb"\n'),
        ({"k": "a\r\nb"}, 'k: "a\\r\\nb"\n'),
        ({"z": 1, "a": 2}, "z: 1\na: 2\n"),  # keys keep insertion order
    ],
)
def test_minimal_yaml(value, expected) -> None:
    assert minimal_yaml(value) == expected


def test_minimal_yaml_writes_repeated_objects_without_aliases() -> None:
    shared = {"x": 1}
    assert minimal_yaml({"a": shared, "b": shared}) == "a:\n  x: 1\nb:\n  x: 1\n"


def test_minimal_yaml_never_wraps_long_lines() -> None:
    long_text = "word " * 200 + "end"
    assert minimal_yaml({"k": long_text}) == f"k: {long_text}\n"


# --- JSON ------------------------------------------------------------------------------


def test_canonical_json_is_compact_sorted_and_keeps_utf8() -> None:
    value = {"b": 1, "a": 'é\n"q"', "c": [{"z": None, "y": True}]}
    assert canonical_json(value) == '{"a":"é\\n\\"q\\"","b":1,"c":[{"y":true,"z":null}]}'


def test_json_response_format_text_keeps_insertion_order_and_the_space_before_newline() -> None:
    assert json_response_format_text({"b": 1, "a": "é"}) == RESPONSE_FORMAT_TEXT


def test_empty_json_response_format_renders_nothing() -> None:
    assert json_response_format_text({}) == ""


def test_json_response_format_refuses_unserialisable_examples() -> None:
    with pytest.raises(TypeError, match="must be JSON-serializable"):
        json_response_format_text({"when": object()})


# --- instruction rendering ----------------------------------------------------------------


def _render(**overrides):
    fields = dict(
        guidance=None, instruction=None, prompt_context=[], plain_content=None,
        images=[], image_detail=None,
    )
    return render_instruction(**{**fields, **overrides})


def test_instruction_sections_render_in_the_fixed_order() -> None:
    text = _render(
        response_format_text="RF",
        response_schema={"type": "object"},
        tool_schemas=[{"name": "t"}],
        prompt_context=["c"],
        instruction="i",
        guidance="g",
    )
    assert text == (
        "Guidance: g\nInstruction: i\nContext:\n- c\nTools:\n- name: t\n"
        "ResponseSchema:\n  type: object\nResponseFormat: RF"
    )


def test_plain_content_replaces_every_section() -> None:
    assert _render(plain_content="just this", instruction="i", guidance="g") == "just this"


def test_an_instruction_with_nothing_in_it_renders_as_empty_yaml_mapping() -> None:
    # lionagi dumps the empty mapping; the result is "{}", never falsy.
    assert _render(instruction="   ") == "{}"


def test_images_make_a_text_part_first_even_when_text_is_empty() -> None:
    assert format_image_content("", ["aGk="], "low") == [
        {"type": "text", "text": ""},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aGk=", "detail": "low"}},
    ]


# --- image URLs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "url"),
    [
        ("http://example.com/a.png", "http://example.com/a.png"),
        ("https://example.com/a.png?x=1", "https://example.com/a.png?x=1"),
        ("data:image/jpeg;base64,/9j/4AAQ", "data:image/jpeg;base64,/9j/4AAQ"),
        ("data:image/jpg;base64,AAAA", "data:image/jpg;base64,AAAA"),
        ("data:image/gif;base64,R0lG", "data:image/gif;base64,R0lG"),
        ("data:image/webp;base64,UklG==", "data:image/webp;base64,UklG=="),
        ("iVBORw0KGgo=", "data:image/jpeg;base64,iVBORw0KGgo="),
    ],
)
def test_accepted_images(image, url) -> None:
    assert image_url(image) == url


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("https://", "Image URL missing domain: https://"),
        ("https://example.com/a\x00.png", "Image URL contains null byte"),
        ("https://example.com/a%00.png", r"percent-encoded null byte \(%00\)"),
        ("data:image/svg+xml;base64,PHN2Zz4=", "Rejected data: URI"),
        ("data:image/png;base64,", "Rejected data: URI"),
        ("javascript:alert(1)", "got: javascript://"),
        ("ftp://example.com/a.png", "got: ftp://"),
        ("", "Image must be a non-empty string"),
    ],
)
def test_refused_images(image, message) -> None:
    with pytest.raises(ValueError, match=message):
        image_url(image)
