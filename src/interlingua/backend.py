"""Which backend runs the pipeline: the pure-Python reference or the native core (DESIGN §9).

The native backend exists where the extension ``interlingua._native`` imports
*and* covers the request pipeline (its ``COVERS`` names ``REQUEST_PIPELINE``:
``_native.Transcoder`` / ``Decoder`` with every request codec, held equal to
Python's by ``tests/native``). ``INTERLINGUA_BACKEND=native`` selects it and
fails loudly (ImportError at ``import interlingua``) when the extension is
missing or does not cover the request pipeline; ``INTERLINGUA_BACKEND=python``
forces the pure pipeline. Unset, ``BACKEND`` is ``DEFAULT`` (``"native"``) where
the native backend exists, else ``"python"``. ``DEFAULT`` goes back to ``"python"``
(one line) whenever the native request pipeline has a known parity gap
(``NATIVE_GAPS`` in ``tests/conftest.py``: the suite's tests where native output or
errors differ from Python's, strict xfails on native); the list is empty since
issue 11's last gaps closed, so the default is native.

On the native backend **requests** run in Rust; a **response** or **stream**
runs in Rust once the extension covers that kind (its ``COVERS`` names
``RESPONSE_PIPELINE`` / ``STREAM_PIPELINE``: all 9 pairs of the kind have their
codecs in the core -- the same-dialect pairs are copies, which need the
dialect's decoder and, for an abort, its encoder -- and ``PIPELINE`` when every
kind is covered); a kind not covered would run the Python pipeline on both
backends (``covers(kind)``). Since issue 12 every kind is covered: on the native
backend requests, responses and streams all run in Rust.

How the public API dispatches (decision, issue 11): ``interlingua.Transcoder``,
``interlingua.Decoder`` and ``interlingua.Encoder`` are the Python classes of
``pipeline``, whose metaclass's ``__call__`` returns the native object (``_native.Transcoder`` /
``Decoder`` / ``Encoder``) for every kind the extension covers when ``BACKEND`` is ``"native"`` at
construction, with the same arguments; ``transcode`` / ``decode`` / ``encode``, the
turn compiler and the CLI go through them. So one name, one signature, one set of
errors and attributes (``losses``, ``reorder``, ``tool_names``, ``pending_output``,
``abort``) on both backends, and ``isinstance(x, interlingua.Transcoder)`` holds for
either object (the classes' metaclass counts the native class as theirs). Chosen over module-level
selection because the kind is a constructor argument: a stream transcoder and a
request transcoder come from the same name. A subclass of the Python classes
is always Python (it may rely on ``session`` and the Python stages). The
``BACKEND`` attribute of this module is read at each construction, so tests
switch it with ``monkeypatch`` (``tests/conftest.py``'s ``backend`` fixture).

An encoder fed canonical events from Python is ``interlingua.Encoder(target,
kind=..., source=..., options=...)`` (``feed(events) -> bytes``, ``close() -> bytes``;
``interlingua.encode(events, target=...)`` for a whole body): the turn compiler's
``encode_compiled`` uses it, so it runs natively too. On the native side each event
is converted once at the boundary (``python.rs`` ``event_from_py``), never a token.

What a user can tell the classes apart by (decision, issue 11 item 3): the native
objects have no ``session`` attribute (the run's state lives in Rust; ``losses``,
``reorder``, ``tool_names`` are what a caller reads of it, and a ``Session`` proxy
object would be a second, partial API). ``losses`` is one live list on both (the same
object at every access, growing as losses are recorded); ``tool_names`` a dict in
insertion order on both (the native one a new dict per access: Python's is the
session's own). ``reorder`` is Python's live ``ReorderBuffer`` but a snapshot on the
native side (``_native.ReorderReport``: ``budget``, ``refuse``, ``held``,
``high_water``, ``high_water_by_reason``, ``report()``, read when asked): its figures
are numbers a caller reads after the run, where the two agree.

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
#: the backend when INTERLINGUA_BACKEND is unset and the native one exists ("python" again
#: whenever tests/conftest.py's NATIVE_GAPS lists a parity gap of the native request pipeline)
DEFAULT = "native"


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
