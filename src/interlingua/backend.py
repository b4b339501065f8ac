"""Which backend runs the pipeline: the pure-Python reference or the native core (DESIGN §9).

The native backend exists where the extension ``interlingua._native`` imports
*and* covers the request pipeline (its ``COVERS`` names ``REQUEST_PIPELINE``:
``_native.Transcoder`` / ``Decoder`` with every request codec, held equal to
Python's by ``tests/native``). ``INTERLINGUA_BACKEND=native`` selects it and
fails loudly (ImportError at ``import interlingua``) when the extension is
missing or does not cover the request pipeline; ``INTERLINGUA_BACKEND=python``
forces the pure pipeline. Unset, ``BACKEND`` is ``DEFAULT`` where the native
backend exists, else ``"python"``. ``DEFAULT`` is ``"python"`` while the native
request pipeline has known parity gaps (``NATIVE_GAPS`` in ``tests/conftest.py``:
the suite's tests where native output or errors differ from Python's); it
becomes ``"native"`` (one line) when that list is empty.

On the native backend **requests** run in Rust; a **response** or **stream**
runs in Rust once the extension covers that kind (its ``COVERS`` names
``RESPONSE_PIPELINE`` / ``STREAM_PIPELINE``: all 9 pairs of the kind have their
codecs in the core -- the same-dialect pairs are copies, which need the
dialect's decoder and, for an abort, its encoder -- and ``PIPELINE`` when every
kind is covered); until then that kind runs the Python pipeline on both
backends (``covers(kind)``, issue 12).

How the public API dispatches (decision, issue 11): ``interlingua.Transcoder``
and ``interlingua.Decoder`` are the Python classes of ``pipeline``, whose
``__new__`` returns the native object (``_native.Transcoder`` / ``Decoder``)
for ``kind="request"`` when ``BACKEND`` is ``"native"`` at construction, with
the same arguments; ``transcode`` / ``decode`` and the CLI go through them.
So one name, one signature, one set of errors and attributes (``losses``,
``reorder``, ``tool_names``, ``pending_output``, ``abort``) on both backends,
and ``isinstance(x, interlingua.Transcoder)`` holds for either object (the
classes' metaclass counts the native class as theirs). Chosen over module-level
selection because the kind is a constructor argument: a stream transcoder and a
request transcoder come from the same name. A subclass of the Python classes
is always Python (it may rely on ``session`` and the Python stages). The
``BACKEND`` attribute of this module is read at each construction, so tests
switch it with ``monkeypatch`` (``tests/conftest.py``'s ``backend`` fixture).

An encoder fed canonical events from Python (``Session`` + ``codecs(...)[1]``,
what the turn compiler ``interlingua.compiler.transcode.encode_compiled`` uses)
stays Python on both backends: the native one (``_native.encode_events``) is a
test entry point, not an object with the encoder's push API and its session.

A native stage is not spliced into the Python pipeline piecemeal: the Python
decoders take one call per token, and a native tokenizer feeding them would
make a Python object per token -- slower than the pure pipeline.
"""

from __future__ import annotations

import os

__all__ = ["BACKEND", "NATIVE_COVERS", "NATIVE_IMPORT_ERROR", "PIPELINE", "REQUEST_PIPELINE", "RESPONSE_PIPELINE",
           "STREAM_PIPELINE", "DEFAULT", "covers", "native_module"]

#: what the native core covers to run the whole pipeline, responses and streams too (issue 12)
PIPELINE = "pipeline"
#: what it covers to run requests (issue 11): the native backend needs this
REQUEST_PIPELINE = "request-pipeline"
#: what it covers to run responses / streams (issue 12): all 9 pairs of the kind
RESPONSE_PIPELINE = "response-pipeline"
STREAM_PIPELINE = "stream-pipeline"
_KIND_PIPELINES = {"request": REQUEST_PIPELINE, "response": RESPONSE_PIPELINE, "stream": STREAM_PIPELINE}
_CHOICES = ("python", "native")
#: the backend when INTERLINGUA_BACKEND is unset and the native one exists: "python" while
#: tests/conftest.py's NATIVE_GAPS lists parity gaps of the native request pipeline
DEFAULT = "python"


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


def covers(kind: str) -> bool:
    """Whether the native backend runs ``kind`` (a ``Transcoder`` / ``Decoder`` of it is
    the native object when ``BACKEND`` is ``"native"``); an unknown kind: False (Python
    raises its own ValueError for it)."""
    return _KIND_PIPELINES.get(kind) in NATIVE_COVERS


def _select(requested: str) -> str:
    if requested not in ("", *_CHOICES):
        raise ImportError(f"INTERLINGUA_BACKEND={requested!r}: expected one of {', '.join(_CHOICES)}")
    if requested == "python":
        return "python"
    covered = _native is not None and REQUEST_PIPELINE in NATIVE_COVERS
    if requested == "native" and not covered:
        native_module()  # missing: says so
        raise ImportError("INTERLINGUA_BACKEND=native: the native core covers only "
                          f"{', '.join(sorted(NATIVE_COVERS)) or 'nothing'} so far; the request "
                          "pipeline (Transcoder, Decoder, the request codecs) is Python only")
    if requested == "native":
        return "native"
    return DEFAULT if covered else "python"


BACKEND = _select(os.environ.get("INTERLINGUA_BACKEND", "").strip().lower())
