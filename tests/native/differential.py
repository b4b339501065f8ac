"""Differential testing of the native core against the Python pipeline (the specification).

Each stage has a test entry point in ``interlingua._native`` that runs the
native stage over bytes fed in pieces cut at given offsets and reports what it
delivered, in the shape of a ``python_*`` runner here that does the same with
the Python module. ``test_<stage>_parity.py`` feeds both the same generated,
mutated and invalid bytes, cut at random points, and requires equal results.

Layout, for the stages still to come (the dialect codecs): a
``test_<dialect>_<request|response|stream>_parity.py`` beside these, reusing
``cut_points`` / the document strategies and comparing output bytes, losses,
reorder reports and errors with ``assert_same_error``.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from interlingua import json as pyjson

FEED = 0  # the marker after each feed: (FEED, None, None)
_FRAGMENTS = {pyjson.STRING, pyjson.STRING_OPEN, pyjson.STRING_PART, pyjson.STRING_CLOSE}
_STARTS = {pyjson.STRING, pyjson.STRING_OPEN}
_ENDS = {pyjson.STRING, pyjson.STRING_CLOSE}


def feeds(data: bytes, cuts) -> list[bytes]:
    bounds = [c for c in cuts if c <= len(data)] + [len(data)]
    pieces, start = [], 0
    for end in bounds:
        end = max(end, start)
        pieces.append(data[start:end])
        start = end
    return pieces


def python_tokenize(data: bytes, cuts, *, dialect=None, **limits):
    """What ``_native.tokenize`` reports, from the Python tokenizer."""
    tokens = []
    tokenizer = pyjson.Tokenizer(lambda kind, value, offset: tokens.append((kind, value, offset)),
                                 dialect=dialect, **limits)
    try:
        for piece in feeds(data, cuts):
            tokenizer.feed(piece)
            tokens.append((FEED, None, None))
        tokenizer.close()
    except Exception as exc:  # noqa: BLE001 - the error is part of the result
        return tokens, exc
    return tokens, None


def joined_per_feed(tokens: list) -> list:
    """The parity rule for fragments: within one feed, consecutive fragments of a
    string joined (first offset, kind from whether the run opens/closes the string)."""
    out = []
    run = None  # [kind_first, kind_last, value, offset]
    for kind, value, offset in tokens:
        if kind in _FRAGMENTS:
            if run is None:
                run = [kind, kind, bytes(value), offset]
            else:
                run[1] = kind
                run[2] += value
            if kind in _ENDS:
                out.append(_joined(run))
                run = None
            continue
        if run is not None:
            out.append(_joined(run))
            run = None
        out.append((kind, value, offset))
    if run is not None:
        out.append(_joined(run))
    return out


def _joined(run) -> tuple:
    first, last, value, offset = run
    opens, closes = first in _STARTS, last in _ENDS
    kind = (pyjson.STRING if opens and closes else pyjson.STRING_OPEN if opens
            else pyjson.STRING_CLOSE if closes else pyjson.STRING_PART)
    return kind, value, offset


def error_facts(exc) -> tuple | None:
    if exc is None:
        return None
    return (type(exc).__name__, str(exc), getattr(exc, "reason", None), getattr(exc, "offset", None),
            getattr(exc, "path", None), getattr(exc, "dialect", None), getattr(exc, "frame_offset", None))


def assert_same_error(native, python) -> None:
    assert error_facts(native) == error_facts(python)


# -- inputs ------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(
    ['"', "\\", "\n", "\t", "\x00", "\x1f", "\u2028", "é", "世", "😀", "/"]), max_size=24)
_scalars = (st.none() | st.booleans() | st.integers(-10**30, 10**30)
            | st.floats(allow_nan=False, allow_infinity=False) | _text)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_text, inner, max_size=5),
    max_leaves=30,
)


@st.composite
def json_documents(draw) -> bytes:
    """Valid JSON bytes: compact or spaced, non-ASCII kept or escaped (surrogate pairs)."""
    value = draw(json_values)
    ascii_only = draw(st.booleans())
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]))
    return json.dumps(value, ensure_ascii=ascii_only, separators=separators).encode()


@st.composite
def mutated(draw, documents=json_documents()) -> bytes:
    """A document with a few bytes replaced, inserted or deleted: mostly invalid JSON."""
    data = bytearray(draw(documents))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = draw(st.sampled_from([0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x20, 0x00, 0x0A,
                                     0x2D, 0x30, 0x31, 0x2E, 0x65, 0x74, 0x6E, 0x75, 0x80, 0xC3, 0xE4,
                                     0xED, 0xF0, 0xFF]) | st.integers(0, 255))
        if op == "replace" and at < len(data):
            data[at] = byte
        elif op == "insert":
            data.insert(at, byte)
        elif at < len(data):
            del data[at]
    return bytes(data)


@st.composite
def cut_points(draw, data: bytes) -> list[int]:
    """Sorted cut offsets: none, a few random ones, or every byte."""
    mode = draw(st.sampled_from(["none", "some", "some", "every"]))
    if mode == "none" or not data:
        return []
    if mode == "every":
        return list(range(1, len(data)))
    return sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
