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


def python_encode_events(source: str, target: str, kind: str, events: list, options=None, *,
                         clock=None, entropy=None):
    """What ``_native.encode_events`` reports, from the Python encoder of ``target``:
    ``(out_per_event, tail, losses, error)`` -- the bytes each event wrote (up to the
    one that failed), what ``finish`` wrote, the losses, the error as the encoder raised it.
    ``clock`` / ``entropy``: the ``Transcoder``'s hooks (a response or stream encoder reads
    them when it is made; None: the suite's fixed ones, tests/fixed_clock.py)."""
    session = Session(_options(options), source=source, target=target, kind=kind, clock=clock, entropy=entropy)
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
        # (through the class: Python's anthropic ResponseEncoder keeps its held Finish in an
        # attribute named ``finish``, which shadows the method on the instance)
        type(encoder).finish(encoder)
        tail = b"".join(written)
    except TranscodeError as exc:
        error = exc
    return per_event, tail, _loss_tuples(session.losses), error


def skip_if_not_ported(error) -> None:
    """The native side has no codec (or rule) for this input yet: skip, saying which."""
    if error is not None and type(error).__name__ == "TranscodeError" and NOT_PORTED.search(str(error)):
        if "not ported yet" in str(error):  # one rule, hit by this input: the other inputs still run
            not_ported_here(str(error))
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


def non_finite_control(event) -> bool:
    """A control holding an overflowed float (1e400), which only a bare Decoder makes (a Transcoder
    refuses it at the value: interlingua.numbers): the Encoder API's backends differ on one
    (Python writes Infinity, the binding carries values as JSON and cannot) -- a known gap."""
    from interlingua.canonical import Control
    from interlingua.numbers import has_infinity

    return type(event) is Control and has_infinity(event.value)


def assert_encoder_parity(source: str, target: str, events: list, options=None, kind: str = "request",
                          **hooks) -> None:
    """The native encoder of ``target`` writes the same bytes after each event, the same
    tail, losses and error as Python's, fed ``events`` (Python canonical events, e.g.
    ``python_events(source, body)``). ``hooks``: ``clock=`` / ``entropy=`` for a response
    or stream encoder (``Case.hooks()``). Skips while the native side has no port for it."""
    from interlingua.backend import native_module
    if any(non_finite_control(event) for event in events):
        # (not a skip: inside @given every example would be one) a control holding an overflowed
        # float (1e400) cannot cross the binding -- values go as JSON, which has none; a
        # Transcoder refuses it at the value (interlingua.numbers), so no encoder of one meets it
        return
    n_out, n_tail, n_losses, n_error = native_module().encode_events(source, target, kind, events, _options(options),
                                                                      **hooks)
    skip_if_not_ported(n_error)
    p_out, p_tail, p_losses, p_error = python_encode_events(source, target, kind, events, options, **hooks)
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
    """One body (or stream) of a dialect, with the Options its scenario runs with, and for a
    response or stream the clock / entropy its scenario sets (rpt ``options {"clock": ..}``)."""

    name: str
    dialect: str
    body: bytes
    options: dict | None = None
    kind: str = "request"
    start: tuple | None = None  # (("clock", seconds), ("entropy", hex)): the scenario's own readings

    def hooks(self) -> dict:
        """The ``clock=`` / ``entropy=`` a ``Transcoder`` (or ``encode_events``) of this case
        gets: the scenario's, else none (the suite's fixed ones apply)."""
        from rpt import hooks
        return hooks(dict(self.start)) if self.start else {}

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


# -- response and stream inputs ---------------------------------------------------------
#
# The same shapes for kinds "response" (one JSON body: ``pipeline._Front``) and "stream"
# (SSE or NDJSON frames: ``pipeline._StreamFront``, one document per frame, FrameEnd after
# each): ``assert_decoder_parity(dialect, data, cuts, options, kind=...)`` (or the
# ``assert_stream_decoder_parity`` / ``assert_stream_encoder_parity`` spelling below) over
# ``rpt_responses`` / ``rpt_streams``, ``corpus_responses`` / ``corpus_streams``,
# ``response_mutant`` / ``stream_mutant`` (the structural fuzzer's mutants and invalid
# framing), cut with ``stream_cuts`` (inside frames' ``data:`` lines, 7-byte pieces, one
# frame per feed, every byte).


def _rpt_cases(dialect: str, kind: str) -> tuple[Case, ...]:
    from rpt import HOOKS, all_wire_scripts, parse_wire
    cases = []
    for path in all_wire_scripts():
        script = parse_wire(path)
        if script.dialect == dialect and script.kind == kind:
            options = {k: v for k, v in script.options.items() if k not in HOOKS} or None
            start = tuple((k, script.options[k]) for k in HOOKS if k in script.options) or None
            cases.append(Case(f"rpt {script.scenario}", dialect, script.body, options, kind, start))
    return tuple(cases)


@lru_cache(maxsize=None)
def rpt_responses(dialect: str) -> tuple[Case, ...]:
    """Every rpt response scenario of ``dialect`` (error scenarios too), with its options and hooks."""
    return _rpt_cases(dialect, "response")


@lru_cache(maxsize=None)
def rpt_streams(dialect: str) -> tuple[Case, ...]:
    """Every rpt stream scenario of ``dialect`` (error scenarios too), with its options and hooks."""
    return _rpt_cases(dialect, "stream")


def _corpus(dialect: str, kind: str) -> tuple[Case, ...]:
    from corpus import ITEMS
    return tuple(Case(f"corpus {item.name}", dialect, item.body, None, kind) for item in ITEMS.values()
                 if item.dialect == dialect and item.kind == kind)


@lru_cache(maxsize=None)
def corpus_responses(dialect: str) -> tuple[Case, ...]:
    """The corpus's responses of ``dialect`` (tests/corpus: what the backends send)."""
    return _corpus(dialect, "response")


@lru_cache(maxsize=None)
def corpus_streams(dialect: str) -> tuple[Case, ...]:
    """The corpus's streams of ``dialect``."""
    return _corpus(dialect, "stream")


def frame_bounds(dialect: str, data: bytes) -> list[tuple[int, int, int]]:
    """``(start, data_start, end)`` of each frame of a stream as written (rpt.split_frames:
    SSE events, NDJSON lines): where it starts, where its data starts (after ``data:`` and
    its space; the line's start for NDJSON), where it ends."""
    from rpt import split_frames
    bounds, at = [], 0
    for frame in split_frames(dialect, data):
        marker = frame.find(b"data:")
        data_start = at if dialect == "ollama" or marker < 0 else at + marker + 5 + (frame[marker + 5:marker + 6] == b" ")
        bounds.append((at, data_start, at + len(frame)))
        at += len(frame)
    return bounds


STREAM_CUTS = ("frames", "seven", "inside-data", "some", "none", "every")


@st.composite
def stream_cuts(draw, data: bytes, dialect: str, mode: str | None = None) -> list[int]:
    """Cut points for a stream: one frame per feed, 7-byte pieces, a cut inside each frame's
    ``data:`` line (its JSON split), every byte (a short stream), a few random ones, none
    (``mode``: one of ``STREAM_CUTS``; None: drawn)."""
    if mode is None:
        modes = ["frames", "seven", "inside-data", "inside-data", "some", "none"]
        if len(data) <= 4096:
            modes.append("every")
        mode = draw(st.sampled_from(modes), label="cut mode")
    if mode == "none" or not data:
        return []
    if mode == "every":
        return list(range(1, len(data)))
    if mode == "seven":
        return list(range(7, len(data), 7))
    bounds = frame_bounds(dialect, data)
    if mode == "frames":
        return [end for _, _, end in bounds[:-1]]
    if mode == "inside-data":
        cuts = []
        for start, data_start, end in bounds:
            if end - data_start > 1:
                cuts.append(draw(st.integers(data_start + 1, end - 1)))
        return sorted(cuts)
    return sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))


@lru_cache(maxsize=None)
def _stream_seeds(dialect: str, kind: str) -> tuple:
    import fuzz
    return tuple(fuzz.seeds_of(dialect, kind))


#: framing faults a stream mutant may get (inserted at a random byte): a raw byte that is
#: not UTF-8, a bare CR (a line end of its own), a field name over 64 bytes, a stray
#: ``data:`` line, the blank line that ends a frame (two frames made one), a comment
_FRAMING_FAULTS = (b"\xff", b"\r", b"\n" + b"x" * 70 + b": 1\n", b"\ndata: x\n", b"\n\n", b"\n: note\n", b"{")


@st.composite
def stream_mutant(draw, dialect: str) -> Case:
    """An invalid (or merely odd) stream of ``dialect``: one of the structural fuzzer's stream
    mutants (tests/fuzz.py: a frame dropped, doubled, swapped with the next, one of
    ``fuzz.OPS`` on a frame's JSON, the stream cut short) or a framing fault inserted at a
    random byte; drawn one at a time from an rpt stream seed."""
    import fuzz
    from rpt import split_frames
    seeds = _stream_seeds(dialect, "stream")
    seed = draw(st.sampled_from(seeds), label="seed")
    frames = split_frames(dialect, seed.body)
    op = draw(st.sampled_from(["drop", "twice", "swap", "json", "json", "cut", "fault", "fault"]), label="op")
    i = draw(st.integers(0, len(frames) - 1), label="frame")
    if op == "drop":
        return Case(f"fuzz {seed.name}: frame {i} dropped", dialect, b"".join(frames[:i] + frames[i + 1:]), kind="stream")
    if op == "twice":
        return Case(f"fuzz {seed.name}: frame {i} twice", dialect, b"".join(frames[:i + 1] + frames[i:]), kind="stream")
    if op == "swap" and i + 1 < len(frames):
        body = b"".join(frames[:i] + [frames[i + 1], frames[i]] + frames[i + 2:])
        return Case(f"fuzz {seed.name}: frames {i}, {i + 1} swapped", dialect, body, kind="stream")
    if op == "cut":
        cut = draw(st.integers(0, len(seed.body) - 1))
        return Case(f"fuzz {seed.name}: cut at byte {cut}", dialect, seed.body[:cut], kind="stream")
    if op == "json" and (parts := fuzz.frame_json(frames[i])) is not None:
        before, doc, after = parts
        root = fuzz.parse(doc)
        path = draw(st.sampled_from(list(fuzz.paths(root))))
        mutation, arg = draw(st.sampled_from(fuzz.OPS))
        mutant = fuzz.mutate(root, path, mutation, arg)
        if mutant is not None:
            frame = before + fuzz.dump(mutant).encode("utf-8") + after
            body = b"".join(frames[:i]) + frame + b"".join(frames[i + 1:])
            return Case(f"fuzz {seed.name}: frame {i}: {mutation} at {list(path)}", dialect, body, kind="stream")
    fault = draw(st.sampled_from(_FRAMING_FAULTS))
    at = draw(st.integers(0, len(seed.body)))
    return Case(f"fuzz {seed.name}: {fault!r} at byte {at}", dialect, seed.body[:at] + fault + seed.body[at:],
                kind="stream")


@st.composite
def response_mutant(draw, dialect: str) -> Case:
    """A structural-fuzzer mutant of one of the dialect's rpt responses (as ``fuzz_mutant``)."""
    import fuzz
    seed = draw(st.sampled_from(_stream_seeds(dialect, "response")), label="seed")
    if draw(st.integers(0, 9)) == 0:
        cut = draw(st.integers(0, len(seed.body) - 1))
        return Case(f"fuzz {seed.name}: cut at byte {cut}", dialect, seed.body[:cut], kind="response")
    root = fuzz.parse(seed.body)
    path = draw(st.sampled_from(list(fuzz.paths(root))))
    op, arg = draw(st.sampled_from(fuzz.OPS))
    mutant = fuzz.mutate(root, path, op, arg)
    body = seed.body if mutant is None else fuzz.dump(mutant).encode("utf-8")
    return Case(f"fuzz {seed.name}: {op} at {list(path)}", dialect, body, kind="response")


def assert_stream_decoder_parity(dialect: str, data: bytes, cuts=(), options=None, kind: str = "stream") -> None:
    """``assert_decoder_parity`` for a stream (or, ``kind="response"``, a response body):
    the same events per feed (``FrameEnd`` after each frame; fragments joined per feed),
    losses and error, ``frame_offset`` included."""
    assert_decoder_parity(dialect, data, cuts, options, kind=kind)


def assert_stream_encoder_parity(source: str, target: str, events: list, options=None, kind: str = "stream",
                                 **hooks) -> None:
    """``assert_encoder_parity`` for a stream (or response) encoder: fed ``events`` (e.g.
    ``python_events(source, stream, kind="stream")``, ``FrameEnd`` markers included), the
    same bytes after each event, tail, losses and error; ``hooks``: ``Case.hooks()``."""
    assert_encoder_parity(source, target, events, options, kind=kind, **hooks)
