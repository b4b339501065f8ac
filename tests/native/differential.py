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


# -- the codecs: decoders and encoders through the binding ------------------------------
#
# ``_native.decode_events`` / ``encode_events`` (native/src/python.rs) run the native
# front (tokenizer + dialect decoder, ``pipeline::Front``) or a native encoder;
# ``python_decode_events`` / ``python_encode_events`` do the same with the Python
# pipeline's own pieces (``pipeline._front``, ``dialects.codecs``). A
# ``test_<area>_parity.py`` calls ``assert_decoder_parity`` / ``assert_encoder_parity``
# over the inputs below (``rpt_requests``, ``corpus_requests``, ``fuzz_mutant``,
# ``request_bodies``), cut with ``cut_points``; while a codec (or one of its rules) is
# not ported the native side says so and the example is skipped, naming it.

import importlib.util  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from interlingua import Block, Options, TranscodeError  # noqa: E402
from interlingua.dialects import codecs  # noqa: E402
from interlingua.pipeline import _front  # noqa: E402
from interlingua.session import Session  # noqa: E402

_TESTS = Path(__file__).resolve().parent.parent
#: what the native core says where a codec or a rule is not there yet
NOT_PORTED = re.compile(r"not ported yet|the native core has no ")


def _options(options) -> Options | None:
    return Options(**options) if isinstance(options, dict) else options


def _loss_tuples(losses) -> list[tuple[str, str, str]]:
    return [(loss.dialect, loss.path, loss.reason) for loss in losses]


def python_decode_events(source: str, kind: str, pieces: list[bytes], options=None):
    """What ``_native.decode_events`` reports, from the Python front (``pipeline._Front``):
    ``(events_per_piece, losses, error)`` -- one list per piece and one for the close,
    up to the one that failed; losses as ``(dialect, path, reason)``."""
    session = Session(_options(options), source=source, kind=kind)
    events: list = []
    front = _front(source, kind, events.append, session)
    per_piece: list[list] = []
    error = None
    try:
        for piece in pieces:
            try:
                front.feed(piece)
            finally:
                per_piece.append(events[:])
                events.clear()
        try:
            front.close()
        finally:
            per_piece.append(events[:])
    except TranscodeError as exc:
        error = exc
    return per_piece, _loss_tuples(session.losses), error


def python_encode_events(source: str, target: str, kind: str, events: list, options=None):
    """What ``_native.encode_events`` reports, from the Python encoder of ``target``:
    ``(out_per_event, tail, losses, error)`` -- the bytes each event wrote (up to the
    one that failed), what ``finish`` wrote, the losses, the error as the encoder raised it."""
    session = Session(_options(options), source=source, target=target, kind=kind)
    _, encoder_cls = codecs(target, kind)
    written: list[bytes] = []
    encoder = encoder_cls(written.append, session)
    per_event: list[bytes] = []
    tail = b""
    error = None
    try:
        for event in events:
            try:
                encoder.on_event(event)
            finally:
                per_event.append(b"".join(written))
                written.clear()
        encoder.finish()
        tail = b"".join(written)
    except TranscodeError as exc:
        error = exc
    return per_event, tail, _loss_tuples(session.losses), error


def skip_if_not_ported(error) -> None:
    """The native side has no codec (or rule) for this input yet: skip, saying which."""
    if error is not None and type(error).__name__ == "TranscodeError" and NOT_PORTED.search(str(error)):
        pytest.skip(f"not ported: {error}")


def not_ported_here(message: str) -> None:
    """One input hits a rule the native side has not ported: inside a hypothesis test the
    example is rejected (the others still run: a skip would end the whole test at the first
    such draw), elsewhere the test is skipped, naming it."""
    from hypothesis import currently_in_test_context, reject
    if currently_in_test_context():
        reject()
    pytest.skip(f"not ported: {message}")


def join_fragments(events: list) -> list:
    """The parity rule for blocks (native/README.md "Parity of string fragments"): within
    one feed, consecutive fragments of one block are one (payloads joined, ``init`` of the
    first, ``fin`` of the last, the later fragments' attrs merged into the first's)."""
    out: list = []
    for event in events:
        last = out[-1] if out else None
        if (type(event) is Block and type(last) is Block and not event.init and not last.fin
                and (event.section, event.message) == (last.section, last.message)):
            attrs = {**(last.attrs or {}), **(event.attrs or {})} or None
            out[-1] = Block(last.section, last.message, last.payload + event.payload, last.init, event.fin, attrs)
        else:
            out.append(event)
    return out


def assert_decoder_parity(dialect: str, data: bytes, cuts=(), options=None, kind: str = "request") -> None:
    """The native decoder of ``dialect`` gives the same events (fragments joined per feed),
    losses and error (class, message, offset, path, dialect) as Python's, for ``data``
    fed in pieces cut at ``cuts``. Skips while the native side has no port for it."""
    from interlingua.backend import native_module
    pieces = feeds(data, sorted(cuts))
    n_events, n_losses, n_error = native_module().decode_events(dialect, kind, pieces, _options(options))
    skip_if_not_ported(n_error)
    p_events, p_losses, p_error = python_decode_events(dialect, kind, pieces, options)
    where = f"{dialect} {kind}, cuts {list(cuts)[:20]}"
    assert error_facts(n_error) == error_facts(p_error), where
    assert len(n_events) == len(p_events), where
    for n, (native_events, python_events) in enumerate(zip(n_events, p_events)):
        assert join_fragments(native_events) == join_fragments(python_events), f"{where}: feed {n}"
    assert n_losses == p_losses, where


def python_events(source: str, data: bytes, options=None, kind: str = "request") -> list:
    """The Python decoder's events for a whole body (up to an error, if it has one):
    what an encoder is fed in ``assert_encoder_parity``."""
    per_piece, _, _ = python_decode_events(source, kind, [data], options)
    return [event for events in per_piece for event in events]


def assert_encoder_parity(source: str, target: str, events: list, options=None, kind: str = "request") -> None:
    """The native encoder of ``target`` writes the same bytes after each event, the same
    tail, losses and error as Python's, fed ``events`` (Python canonical events, e.g.
    ``python_events(source, body)``). Skips while the native side has no port for it."""
    from interlingua.backend import native_module
    n_out, n_tail, n_losses, n_error = native_module().encode_events(source, target, kind, events, _options(options))
    skip_if_not_ported(n_error)
    p_out, p_tail, p_losses, p_error = python_encode_events(source, target, kind, events, options)
    where = f"{source} -> {target} {kind}"
    assert error_facts(n_error) == error_facts(p_error), where
    for n, (native_bytes, python_bytes) in enumerate(zip(n_out, p_out)):
        assert native_bytes == python_bytes, f"{where}: after event {n} ({events[n]!r:.200})"
    assert len(n_out) == len(p_out), where
    assert n_tail == p_tail, where
    assert n_losses == p_losses, where


# -- request inputs ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One request body of a dialect, with the Options its scenario runs with."""

    name: str
    dialect: str
    body: bytes
    options: dict | None = None

    def __repr__(self) -> str:  # pytest ids and failure messages: the name, not the bytes
        return self.name


@lru_cache(maxsize=None)
def rpt_requests(dialect: str) -> tuple[Case, ...]:
    """Every rpt request scenario of ``dialect`` (the error scenarios too), with its options."""
    from rpt import all_wire_scripts, parse_wire
    cases = []
    for path in all_wire_scripts():
        script = parse_wire(path)
        if script.dialect == dialect and script.kind == "request":
            cases.append(Case(f"rpt {script.scenario}", dialect, script.body, script.options or None))
    return tuple(cases)


@lru_cache(maxsize=None)
def corpus_requests(dialect: str) -> tuple[Case, ...]:
    """The corpus's requests of ``dialect`` (tests/corpus: the official clients' bytes)."""
    from corpus import ITEMS
    return tuple(Case(f"corpus {item.name}", dialect, item.body) for item in ITEMS.values()
                 if item.dialect == dialect and item.kind == "request")


@lru_cache(maxsize=None)
def _fuzz_seeds(dialect: str) -> tuple:
    """(seed, its tree, its paths) of the structural fuzzer's request seeds."""
    import fuzz
    return tuple((seed, root, tuple(fuzz.paths(root)))
                 for seed in fuzz.seeds_of(dialect, "request") for root in [fuzz.parse(seed.body)])


@st.composite
def fuzz_mutant(draw, dialect: str) -> Case:
    """A structural-fuzzer mutant (tests/fuzz.py) of one of the dialect's rpt requests: one
    of ``fuzz.OPS`` at one JSON path, or the body cut short; drawn one at a time (the
    whole sweep of ``fuzz.mutants`` is seconds per dialect)."""
    import fuzz
    seed, root, paths = draw(st.sampled_from(_fuzz_seeds(dialect)))
    if draw(st.integers(0, 9)) == 0:
        cut = draw(st.integers(0, len(seed.body) - 1))
        return Case(f"fuzz {seed.name}: cut at byte {cut}", dialect, seed.body[:cut])
    path = draw(st.sampled_from(paths))
    op, arg = draw(st.sampled_from(fuzz.OPS))
    mutant = fuzz.mutate(root, path, op, arg)
    if mutant is None:
        return Case(f"fuzz {seed.name}: unchanged", dialect, seed.body)
    return Case(f"fuzz {seed.name}: {op} {fuzz.dump(arg) if op == 'replace' else ''} at {list(path)}",
                dialect, fuzz.dump(mutant).encode("utf-8"))


def _load_test_module(relative: str):
    """A strategy's home among the tests (loaded by path: tests/ has no package)."""
    path = _TESTS / relative
    name = "_differential_" + path.stem
    if name not in sys.modules:
        sys.path.insert(0, str(path.parent))  # its own neighbours (ollama_helpers)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def request_bodies(dialect: str) -> st.SearchStrategy:
    """Generated requests of ``dialect`` as bytes (the dialect's own hypothesis strategy:
    tests/test_openai_request.py, tests/anthropic/test_properties.py,
    tests/ollama/test_ollama_properties.py), compact or spaced, ASCII or not. Call it at
    a test module's import, not inside a test (loading those modules defines @given tests:
    hypothesis refuses that inside one)."""
    if dialect == "anthropic":
        return _load_test_module("anthropic/test_properties.py").anthropic_bodies()
    relative = {"openai": "test_openai_request.py", "ollama": "ollama/test_ollama_properties.py"}[dialect]
    requests = _load_test_module(relative).requests
    return st.builds(lambda request, ascii_only, spaced: json.dumps(
        request, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":")).encode(),
        requests, st.booleans(), st.booleans())


@st.composite
def feed_cuts(draw, data: bytes) -> list[int]:
    """Cut points for a whole pipeline run: ``cut_points`` for a small body; for a large
    one (a corpus request) a few random cuts or frames of 64 B, 1021 B or 8 KiB (every
    byte of 300 kB is minutes of Python)."""
    if len(data) <= 4096:
        return draw(cut_points(data))
    frame = draw(st.sampled_from([0, 64, 1021, 8192]))
    if frame:
        return list(range(frame, len(data), frame))
    return sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))


KEY_ORDERS = ("client", "sorted", "reversed", "random")


def _reordered(value, order: str, rng):
    import fuzz
    if isinstance(value, fuzz.Obj):
        members = [[key, _reordered(item, order, rng)] for key, item in value]
        if order == "sorted":
            members.sort(key=lambda member: member[0])
        elif order == "reversed":
            members.reverse()
        elif order == "random":
            rng.shuffle(members)
        return fuzz.Obj(members)
    if isinstance(value, list):
        return [_reordered(item, order, rng) for item in value]
    return value


def key_order(case: Case, order: str, seed: int = 0) -> Case:
    """The case with every object's members sorted, reversed or shuffled (the spike's key
    orders: Go maps, ``jq -S``, other serialisers); a body that is not JSON stays as it is."""
    import random

    import fuzz
    if order == "client":
        return case
    try:
        root = fuzz.parse(case.body)
    except ValueError:
        return case
    body = fuzz.dump(_reordered(root, order, random.Random(seed))).encode("utf-8")
    return Case(f"{case.name} (keys {order})", case.dialect, body, case.options)
