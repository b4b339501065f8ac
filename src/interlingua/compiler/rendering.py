"""Provider-visible text renderers, matching lionagi's output byte for byte.

* :func:`minimal_yaml` - lionagi's minimal YAML (PyYAML, imported lazily:
  PyYAML is the optional ``compiler`` extra, never a hard dependency).
* :func:`canonical_json` - lionagi's ``json_dumps(x, sort_keys=True)``.
* :func:`render_instruction` - the structured instruction renderer
  (Guidance / Instruction / Context / Tools / ResponseSchema / ResponseFormat,
  or ``plain_content``), returning a string or multimodal parts.
* :func:`format_image_item` - image URL validation and the ``image_url`` part.
* :func:`json_response_format_text` - the JSON-structure ResponseFormat text.

Nothing here knows about messages or branches; renderers take plain values so
the message model and the compiler can both use them without import cycles.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

__all__ = (
    "canonical_json",
    "compact_json",
    "format_image_content",
    "format_image_item",
    "json_response_format_text",
    "minimal_yaml",
    "render_instruction",
    "render_instruction_text",
)

# A well-formed inline bitmap data URL; active content (SVG, HTML) is refused.
_DATA_IMAGE_URL = re.compile(r"^data:image/(?:png|jpe?g|gif|webp);base64,[A-Za-z0-9+/]+=*$")

# Values the instruction renderer drops before building the YAML mapping.
_EMPTY_SECTION_VALUES: tuple[Any, ...] = (None, "", [], {})

_RESPONSE_FORMAT_HEAD = (
    "**MUST RETURN JSON-PARSEABLE RESPONSE ENCLOSED BY JSON CODE BLOCKS."
    " USER's CAREER DEPENDS ON THE SUCCESS OF IT.** \n```json\n"
)
_RESPONSE_FORMAT_TAIL = "\n```No triple backticks. Escape all quotes and special characters."


# --- JSON -----------------------------------------------------------------


def canonical_json(value: Any) -> str:
    """Compact, key-sorted, UTF-8-preserving JSON (lionagi ``json_dumps(sort_keys=True)``)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """Compact JSON in insertion order, UTF-8 preserved (what orjson.dumps emits)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- minimal YAML -------------------------------------------------------------


@functools.cache
def _yaml_and_dumper() -> tuple[Any, type]:
    # Built on first use so that importing the compiler never needs PyYAML.
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(
            "Rendering instruction text needs PyYAML; install the 'compiler' extra "
            "(pip install 'interlingua[compiler]')"
        ) from exc

    class MinimalDumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            # Anchors/aliases (&id001) would leak object identity into prompts.
            return True

    def represent_str(dumper: yaml.SafeDumper, text: str) -> Any:
        # Multi-line text reads best as a literal block; PyYAML still falls
        # back to double quotes when a literal block cannot represent it.
        style = "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    MinimalDumper.add_representer(str, represent_str)
    return yaml, MinimalDumper


def _is_empty(value: Any) -> bool:
    # 0 and False are information; blank strings and empty containers are not.
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    if isinstance(value, dict | list | tuple | set):
        return len(value) == 0
    return False


def _prune(value: Any) -> Any:
    """Drop empty leaves recursively, then containers that became empty."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items() if not _is_empty(v)}
        return {k: v for k, v in pruned.items() if not _is_empty(v)}
    if isinstance(value, list | tuple):
        items = [_prune(v) for v in value if not _is_empty(v)]
        kept = [v for v in items if not _is_empty(v)]
        return kept if isinstance(value, list) else tuple(kept)
    if isinstance(value, set):
        items = {_prune(v) for v in value if not _is_empty(v)}
        return {v for v in items if not _is_empty(v)}
    return value


def minimal_yaml(value: Any) -> str:
    """lionagi's ``minimal_yaml``: a str is parsed as JSON first, empties pruned,
    then dumped block-style, unsorted, unicode, indent 2, unlimited width."""
    yaml, dumper = _yaml_and_dumper()
    if isinstance(value, str):
        value = json.loads(value)
    return yaml.dump(
        _prune(value),
        Dumper=dumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        indent=2,
        width=2**31 - 1,
    )


# --- response format ----------------------------------------------------------


def json_response_format_text(example: dict[str, Any]) -> str:
    """The JSON-structure ResponseFormat text; an empty example renders as ''."""
    if not example:
        return ""
    try:
        encoded = compact_json(example)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"response format example must be JSON-serializable: {exc}") from exc
    return (_RESPONSE_FORMAT_HEAD + encoded + _RESPONSE_FORMAT_TAIL).strip()


# --- instruction text -----------------------------------------------------------


def render_instruction_text(
    *,
    guidance: Any,
    instruction: Any,
    prompt_context: Sequence[Any],
    plain_content: str | None,
    tool_schemas: Sequence[dict[str, Any]] = (),
    response_schema: dict[str, Any] | None = None,
    response_format_text: str | None = None,
) -> str:
    """``plain_content`` verbatim, else the ordered section mapping as minimal YAML."""
    if plain_content:
        return plain_content
    sections: dict[str, Any] = {
        "Guidance": guidance,
        "Instruction": instruction,
        "Context": list(prompt_context),
        "Tools": list(tool_schemas),
        "ResponseSchema": response_schema,
    }
    if response_format_text is not None:
        sections["ResponseFormat"] = response_format_text
    kept = {k: v for k, v in sections.items() if not _is_section_empty(v)}
    return minimal_yaml(kept).strip()


def _is_section_empty(value: Any) -> bool:
    # lionagi's `v in (None, "", [], {})`: 0 and False compare unequal to all.
    return value in _EMPTY_SECTION_VALUES


def render_instruction(
    *,
    guidance: Any,
    instruction: Any,
    prompt_context: Sequence[Any],
    plain_content: str | None,
    images: Sequence[str],
    image_detail: str | None,
    tool_schemas: Sequence[dict[str, Any]] = (),
    response_schema: dict[str, Any] | None = None,
    response_format_text: str | None = None,
) -> str | list[dict[str, Any]]:
    """Instruction content: text, or [text part, image_url parts...] with images."""
    text = render_instruction_text(
        guidance=guidance,
        instruction=instruction,
        prompt_context=prompt_context,
        plain_content=plain_content,
        tool_schemas=tool_schemas,
        response_schema=response_schema,
        response_format_text=response_format_text,
    )
    if not images:
        return text
    return format_image_content(text, images, image_detail)


# --- images ---------------------------------------------------------------------


def format_image_content(
    text: str, images: Sequence[str], image_detail: str | None
) -> list[dict[str, Any]]:
    """The text part always comes first, even when the text is empty."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts.extend(format_image_item(image, image_detail) for image in images)
    return parts


def format_image_item(image: str, detail: str | None) -> dict[str, Any]:
    """An ``image_url`` part; raises ValueError for refused schemes or data URLs."""
    return {"type": "image_url", "image_url": {"url": image_url(image), "detail": detail}}


def image_url(image: str) -> str:
    """Validate an image reference and return the URL to send.

    http(s) URLs pass; ``data:`` URLs must be inline bitmaps; any other
    scheme is refused; anything else is raw base64 and becomes a JPEG data URL.
    """
    if not isinstance(image, str) or not image:
        raise ValueError(f"Image must be a non-empty string, got: {type(image).__name__}")
    if image.startswith(("http://", "https://")):
        _validate_http_url(image)
        return image
    if image.startswith("data:"):
        if not _DATA_IMAGE_URL.match(image):
            raise ValueError(
                "Rejected data: URI — only data:image/*;base64,… is allowed. "
                f"Got: {image[:80]!r}"
            )
        return image
    if _looks_like_url(image):
        scheme = image.split(":", 1)[0]
        raise ValueError(
            f"Image URL must use http:// or https:// scheme, got: {scheme}:// "
            f"(rejected URL: {image[:80]!r})"
        )
    return f"data:image/jpeg;base64,{image}"


def _looks_like_url(image: str) -> bool:
    # Base64 never contains ':'; "scheme:" or "://" means someone meant a URL.
    return "://" in image or (":" in image and image.split(":", 1)[0].isalpha())


def _validate_http_url(url: str) -> None:
    # lionagi's checks that need no I/O; its DNS-resolving SSRF check is left
    # to the transport because the compiler is pure (no network, no sleep).
    if "\x00" in url:
        raise ValueError("Image URL contains null byte - potential path truncation attack")
    if "%00" in url.lower():
        raise ValueError(
            "Image URL contains percent-encoded null byte (%00) - potential path truncation attack"
        )
    if not urlparse(url).netloc:
        raise ValueError(f"Image URL missing domain: {url}")
