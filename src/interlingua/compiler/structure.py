"""Response formats and the structures that render them (open point 4).

A response format is one of:

* a ``dict`` - an example of the JSON object wanted ("dict mode"): it renders
  a ResponseFormat section and no ResponseSchema (lionagi behaviour);
* a ``msgspec.Struct`` type or a dataclass type, or an instance of one (the
  instance stands for its type, as a pydantic instance does in lionagi).

For typed formats the schema source is ``msgspec.json.schema_components``:
the type's own component is inlined at the top level (the shape pydantic's
``model_json_schema()`` gives lionagi) and any nested types stay under
``$defs``. The ResponseFormat example for a typed format maps each field's
wire name to a readable type name (``"int"``, ``"list[str]"``, ``"str | None"``),
nested Struct/dataclass fields to their own example object and
``list[Nested]`` to ``[{...}]``. Pydantic is not supported and never imported.

A structure turns a response format into prompt text. ``structure`` may be
``None`` or ``"json"`` (the built-in :class:`JsonStructure`) or a subclass of
:class:`Structure`. Other strings are refused rather than silently mapped to
JSON, and any other value is a ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import msgspec

from .rendering import json_response_format_text

__all__ = (
    "JsonStructure",
    "Structure",
    "build_structure",
    "is_typed_format",
    "typed_format_example",
    "typed_format_schema",
)


class Structure:
    """Renders one call's response format into instruction sections.

    Subclasses override :meth:`render` (the ResponseFormat text) and may
    override :meth:`response_schema` (the ResponseSchema mapping, or None).
    """

    __slots__ = ("response_format",)

    def __init__(self, response_format: dict[str, Any] | type) -> None:
        self.response_format = response_format

    @property
    def is_dict_mode(self) -> bool:
        return isinstance(self.response_format, dict)

    def response_schema(self) -> dict[str, Any] | None:
        """JSON schema shown as ResponseSchema; dict formats have none."""
        if self.is_dict_mode:
            return None
        return typed_format_schema(self.response_format)

    def render(self) -> str:
        raise NotImplementedError("Structure subclasses must implement render()")


class JsonStructure(Structure):
    """Ask for one fenced JSON object shaped like the format's example."""

    __slots__ = ()

    def render(self) -> str:
        if self.is_dict_mode:
            return json_response_format_text(self.response_format)
        return json_response_format_text(typed_format_example(self.response_format))


def build_structure(response_format: Any, structure: Any) -> Structure | None:
    """The structure for one call, or None when no response format is set.

    The caller's dict is not copied here; the compiler passes a deep copy.
    """
    structure_cls = _resolve_structure_class(structure)
    if response_format is None:
        return None
    return structure_cls(_normalise_format(response_format))


def _resolve_structure_class(structure: Any) -> type[Structure]:
    if structure is None or structure == "json":
        return JsonStructure
    if isinstance(structure, str):
        raise ValueError(f"Unknown structure {structure!r}; the built-in structure is 'json'")
    if isinstance(structure, type) and issubclass(structure, Structure):
        return structure
    raise TypeError(
        f"structure must be None, 'json' or a Structure subclass, got {structure!r}"
    )


def _normalise_format(response_format: Any) -> dict[str, Any] | type:
    if isinstance(response_format, dict):
        return response_format
    if is_typed_format(response_format):
        return response_format
    if is_typed_format(type(response_format)):
        return type(response_format)
    raise TypeError(
        "response_format must be a dict, a msgspec.Struct or dataclass type, or an "
        f"instance of one; got {type(response_format).__name__}"
    )


def is_typed_format(value: Any) -> bool:
    """True for msgspec.Struct subclasses and dataclass types."""
    if not isinstance(value, type):
        return False
    return issubclass(value, msgspec.Struct) or dataclasses.is_dataclass(value)


def typed_format_schema(format_type: type) -> dict[str, Any]:
    """JSON schema with the type's own component inlined at the top level."""
    (root,), components = msgspec.json.schema_components((format_type,))
    name = root["$ref"].rsplit("/", 1)[-1]
    schema = dict(components.pop(name))
    if components:
        schema["$defs"] = components
    return schema


def typed_format_example(format_type: type) -> dict[str, Any]:
    """Field wire name -> readable type name, recursing into nested formats."""
    return {name: _example_value(hint) for name, hint in _field_hints(format_type)}


def _field_hints(format_type: type) -> list[tuple[str, Any]]:
    if issubclass(format_type, msgspec.Struct):
        return [(f.encode_name, f.type) for f in msgspec.structs.fields(format_type)]
    hints = typing.get_type_hints(format_type)
    return [(f.name, hints[f.name]) for f in dataclasses.fields(format_type) if f.init]


def _example_value(hint: Any) -> Any:
    if is_typed_format(hint):
        return typed_format_example(hint)
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint) or (Any,)
        if is_typed_format(item):
            return [typed_format_example(item)]
    return _type_name(hint)


def _type_name(hint: Any) -> str:
    """A short readable name: int, list[Item], str | None, Literal['a']."""
    if hint is None or hint is type(None):
        return "None"
    if hint is Any:
        return "Any"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin is not None and args:
        return f"{_type_name(origin)}[{', '.join(_type_name(arg) for arg in args)}]"
    if isinstance(hint, type):
        return hint.__name__
    return repr(hint).replace("typing.", "")
