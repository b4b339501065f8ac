"""Which backend runs the pipeline: the pure-Python reference or the native core (DESIGN §9).

``BACKEND`` is ``"native"`` when the extension ``interlingua._native`` imports
*and* covers the pipeline (``Transcoder``, ``Decoder``, the encoders), else
``"python"``. ``INTERLINGUA_BACKEND=python`` forces the pure pipeline;
``INTERLINGUA_BACKEND=native`` fails loudly (ImportError at ``import
interlingua``) when the extension is missing or does not cover the pipeline.

What the native core covers today is ``NATIVE_COVERS`` (the extension's
``COVERS``): its stages -- the JSON tokenizer, SSE/NDJSON framing, the reorder
buffer, the canonical events -- exist and are tested against their Python
modules, and the request pipeline (``_native.Transcoder`` / ``Decoder``, with
the request codecs ported so far) is held equal to Python's by
``tests/native``; the responses and streams are not ported (issue 12), so
``BACKEND`` is ``"python"`` even where the extension is built. A native stage
is not spliced into the Python pipeline piecemeal: the Python decoders take one
call per token, and a native tokenizer feeding them would make a Python object
per token -- slower than the pure pipeline, and not the native backend.
"""

from __future__ import annotations

import os

__all__ = ["BACKEND", "NATIVE_COVERS", "NATIVE_IMPORT_ERROR", "PIPELINE", "native_module"]

#: what the native core must cover to run the pipeline (the extension's COVERS names it
#: once the Rust dialect codecs exist)
PIPELINE = "pipeline"
_CHOICES = ("python", "native")


def _import_native():
    try:
        from . import _native
    except ImportError as exc:
        return None, exc
    return _native, None


_native, NATIVE_IMPORT_ERROR = _import_native()
NATIVE_COVERS: frozenset[str] = frozenset(getattr(_native, "COVERS", ()))


def native_module():
    """The extension module; ImportError (saying why) where it is missing."""
    if _native is None:
        raise ImportError(f"interlingua._native is not built ({NATIVE_IMPORT_ERROR}); "
                          "`python3 dev.py test` builds it (needs cargo)") from NATIVE_IMPORT_ERROR
    return _native


def _select(requested: str) -> str:
    if requested not in ("", *_CHOICES):
        raise ImportError(f"INTERLINGUA_BACKEND={requested!r}: expected one of {', '.join(_CHOICES)}")
    if requested == "python":
        return "python"
    covered = _native is not None and PIPELINE in NATIVE_COVERS
    if requested == "native" and not covered:
        native_module()  # missing: says so
        raise ImportError("INTERLINGUA_BACKEND=native: the native core covers only "
                          f"{', '.join(sorted(NATIVE_COVERS)) or 'nothing'} so far; the pipeline "
                          "(Transcoder, Decoder, the dialect codecs) is Python only")
    return "native" if covered else "python"


BACKEND = _select(os.environ.get("INTERLINGUA_BACKEND", "").strip().lower())
