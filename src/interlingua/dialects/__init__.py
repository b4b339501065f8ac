"""One folder per dialect; request and response side by side.

Each dialect package exposes ``CODECS``: kind -> (Decoder class, Encoder class).
"""

from __future__ import annotations

import importlib

DIALECTS = ("openai", "anthropic", "ollama")
KINDS = ("request", "response", "stream")


def codecs(dialect: str, kind: str):
    """``(Decoder, Encoder)`` for a dialect and kind; ValueError if not available."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    try:
        module = importlib.import_module(f"{__name__}.{dialect}")
    except ModuleNotFoundError as exc:
        raise ValueError(f"dialect {dialect!r} is not implemented yet") from exc
    pair = getattr(module, "CODECS", {}).get(kind)
    if pair is None:
        raise ValueError(f"{dialect} has no {kind} codec yet")
    return pair


def available(dialect: str, kind: str) -> bool:
    """Whether ``codecs(dialect, kind)`` exists (tests, bench and spike pick their pairs with it)."""
    try:
        codecs(dialect, kind)
    except ValueError:
        return False
    return True
