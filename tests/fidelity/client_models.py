"""The official clients' response models, introspected: every field path, and a value with every field filled.

``field_paths(model)`` lists the JSON paths (``$.choices[].message.content``) of
every field of a pydantic model and of the models nested in it, through
optionals, lists, dicts and unions. ``fill(model)`` builds a JSON value with
every one of those fields present and not null: a list of a union gets one
element per variant (every content block, every citation), a literal its first
value, a scalar a fixed one. ``overrides`` pins a path to a value where the
protocol demands one (a choice's ``index`` is 0, a stream's ``message_start``
content is ``[]``). Both follow the installed client: a field a release adds
shows up in the paths, and in the filled value.
"""

from __future__ import annotations

import collections.abc
import enum
import types
import typing
from typing import Any, Callable

from pydantic import BaseModel

_NONE = type(None)
_LISTS = (list, tuple, set, collections.abc.Sequence, collections.abc.Iterable)


def _strip(annotation: Any) -> Any:
    """Annotated[X, ...] -> X; TypeAliasType -> its value."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif hasattr(annotation, "__value__"):  # typing.TypeAliasType
            annotation = annotation.__value__
        else:
            return annotation


def _variants(annotation: Any) -> list:
    """The non-None alternatives of a union (or the type itself)."""
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        out = []
        for arg in typing.get_args(annotation):
            if arg is not _NONE:
                out.extend(_variants(arg))
        return out
    return [annotation]


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def json_name(name: str, info) -> str:
    return info.alias or name


def field_paths(model: type[BaseModel], path: str = "$", seen: frozenset = frozenset()) -> dict[str, type]:
    """``{path: the model that declares the field}`` for every field, nested models included."""
    out: dict[str, type] = {}
    if model in seen:
        return out
    seen = seen | {model}
    for name, info in model.model_fields.items():
        here = f"{path}.{json_name(name, info)}"
        out[here] = model
        for inner, suffix in _nested_models(info.annotation):
            out.update(field_paths(inner, here + suffix, seen))
    return out


def type_tag(model: type[BaseModel]) -> str | None:
    """The value of a model's ``type`` literal (the discriminator of the unions it is in)."""
    info = model.model_fields.get("type")
    if info is not None and typing.get_origin(_strip(info.annotation)) is typing.Literal:
        return typing.get_args(_strip(info.annotation))[0]
    return None


def _nested_models(annotation: Any) -> list[tuple[type, str]]:
    """Models inside an annotation, with the path suffix that reaches them ('', '[]', '{}';
    a variant of a union of several models is tagged with its type: ``[]<text>``)."""
    found = []
    variants = _variants(annotation)
    several = sum(1 for t in variants if _is_model(t)) > 1
    for t in variants:
        origin = typing.get_origin(t)
        if _is_model(t):
            found.append((t, f"<{type_tag(t)}>" if several else ""))
        elif origin in _LISTS:
            for inner, suffix in _nested_models(typing.get_args(t)[0]):
                found.append((inner, "[]" + suffix))
        elif origin in (dict, typing.Dict, collections.abc.Mapping):
            args = typing.get_args(t)
            if len(args) == 2:
                for inner, suffix in _nested_models(args[1]):
                    found.append((inner, "{}" + suffix))
    return found


def fill(model: type[BaseModel], overrides: dict[str, Any] | None = None, path: str = "$",
         depth: int = 0) -> dict:
    """A JSON object of ``model`` with every field filled (not null)."""
    overrides = overrides or {}
    out = {}
    for name, info in model.model_fields.items():
        key = json_name(name, info)
        here = f"{path}.{key}"
        if here in overrides:
            value = overrides[here]
            if value is _OMIT:
                continue
            out[key] = value(here) if callable(value) else value
            continue
        out[key] = _value(info.annotation, overrides, here, depth)
    return out


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT = _OMIT = _Omit()


def _value(annotation: Any, overrides: dict, path: str, depth: int) -> Any:
    variants = _variants(annotation)
    t = variants[0]
    origin = typing.get_origin(t)
    if _is_model(t):
        several = sum(1 for v in variants if _is_model(v)) > 1
        return fill(t, overrides, f"{path}<{type_tag(t)}>" if several else path, depth + 1)
    if origin is typing.Literal:
        return typing.get_args(t)[0]
    if origin in _LISTS:
        item = typing.get_args(t)[0] if typing.get_args(t) else str
        if f"{path}[]" in overrides:
            value = overrides[f"{path}[]"]
            return value(path) if callable(value) else value
        item_variants = _variants(item)
        models = [v for v in item_variants if _is_model(v)]
        if len(models) > 1:  # a union of models: one element of each (every content block)
            return [fill(m, overrides, f"{path}[]<{type_tag(m)}>", depth + 1) for m in models]
        return [_value(item, overrides, f"{path}[]", depth)]
    if origin in (dict, typing.Dict, collections.abc.Mapping):
        args = typing.get_args(t)
        return {"k": _value(args[1], overrides, f"{path}{{}}", depth) if len(args) == 2 else "v"}
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return next(iter(t)).value
    if t is bool:
        return True
    if t is int:
        return 1
    if t is float:
        return 0.5
    if t is str:
        return "s"
    if t is bytes:
        return "s"
    return "s"  # object / Any: a string is a JSON value


def variant_models(annotation: Any) -> list[type[BaseModel]]:
    """The models of a union (content blocks, stream events, deltas)."""
    return [v for v in _variants(annotation) if _is_model(v)]


def covered(path: str, classified: dict[str, Any]) -> bool:
    """A path is classified by itself or by a classified ancestor whose disposition covers its subtree."""
    if path in classified:
        return True
    parts = path
    while True:
        cut = max(parts.rfind("."), parts.rfind("["), parts.rfind("{"), parts.rfind("<"))
        if cut <= 1:
            return False
        parts = parts[:cut]
        if parts in classified and _is_subtree(classified[parts]):
            return True


def _is_subtree(disposition: Any) -> bool:
    if isinstance(disposition, tuple):
        disposition = disposition[0]
    return isinstance(disposition, str) and disposition.endswith("*")
