"""The structural fuzzer (issue 15): valid bodies, mutated at every JSON path, cut anywhere.

Seeds are the valid wire scripts of the rpt scenarios (each dialect x kind).
Each seed is parsed into a tree whose objects keep their members in order (so
a mutant can hold a duplicate key), and mutated at one JSON path by one of
``OPS``: each wrong type, null, a missing member, a duplicate key, an extra
member, a lone surrogate, or a truncation of the bytes; streams also lose,
repeat or swap a frame. Every mutant goes into every target.

The properties (``check``), for any backend -- pass the ``Transcoder`` class:

* the result is output that is strict JSON per body / SSE frame / NDJSON line
  (valid UTF-8, no duplicate key, no NaN), or a ``TranscodeError`` naming the
  source dialect and a byte offset, and a JSON path wherever the error is
  inside a document; never another exception;
* before an error, the stream frames already written are strict JSON too;
* the same result (the same output bytes, or the same error class, offset,
  path and frame) for the whole input and for any cut of it.

``tests/test_fuzz.py`` runs it under hypothesis (the ``ci`` profile: a few
seconds; ``HYPOTHESIS_PROFILE=deep`` by hand). ``python -m tests.fuzz``
sweeps every mutant of every seed exhaustively and prints the counts.
A native backend runs the same: ``check(native.Transcoder, ...)``.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

_TESTS = Path(__file__).resolve().parent
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from interlingua import TranscodeError  # noqa: E402
from rpt import all_wire_scripts, parse_wire, split_frames  # noqa: E402

DIALECTS = ("openai", "anthropic", "ollama")
KINDS = ("request", "response", "stream")
MAX_SEED_BYTES = 6000  # larger scenarios add time, not shapes

# -- a JSON tree that keeps duplicate keys ------------------------------------------


class Obj(list):
    """An object as a list of [key, value] pairs (order kept, duplicates possible)."""


def parse(data: bytes | str) -> Any:
    return json.loads(data, object_pairs_hook=lambda pairs: Obj([list(p) for p in pairs]))


def dump(value: Any) -> str:
    if isinstance(value, Obj):
        return "{" + ",".join(_string(k) + ":" + dump(v) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    if isinstance(value, str):
        return _string(value)
    return json.dumps(value)


def _string(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only as an escape
        return json.dumps(text)
    return json.dumps(text, ensure_ascii=False)


def paths(value: Any, at: tuple = ()) -> Iterator[tuple]:
    """Every JSON path in ``value`` (steps: member index in an object, element index)."""
    yield at
    if isinstance(value, list):  # Obj too: its members by position
        for i, item in enumerate(value):
            yield from paths(item[1] if isinstance(value, Obj) else item, at + (i,))


def _parent(root: Any, path: tuple) -> tuple[Any, int]:
    node = root
    for step in path[:-1]:
        node = node[step][1] if isinstance(node, Obj) else node[step]
    return node, path[-1]


# Replacement values: each JSON type, twice where the type has an empty form.
WRONG = [None, True, 0, -1, 1.5, 10**30, "", "s", [], [1], Obj(), Obj([["a", 1]]), "\ud800"]


def mutate(root: Any, path: tuple, op: str, arg: Any = None) -> Any | None:
    """A copy of ``root`` mutated at ``path``; None if ``op`` does not apply there."""
    root = parse(dump(root))  # a deep copy (Obj kept)
    if not path:
        return arg if op == "replace" else None
    parent, step = _parent(root, path)
    in_object = isinstance(parent, Obj)
    if op == "replace":
        if in_object:
            parent[step][1] = arg
        else:
            parent[step] = arg
    elif op == "drop":
        del parent[step]
    elif op == "duplicate":  # the same member (or element) twice
        parent.insert(step + 1, list(parent[step]) if in_object else parent[step])
    elif op == "extra":
        if not in_object:
            return None
        parent.insert(step, ["zz_extra", Obj([["a", "\ud83d\ude00"]])])
    elif op == "surrogate":
        node = parent[step][1] if in_object else parent[step]
        if not isinstance(node, str):
            return None
        value = node[:1] + "\udc00" + node[1:]
        if in_object:
            parent[step][1] = value
        else:
            parent[step] = value
    return root


OPS = [("replace", w) for w in WRONG] + [("drop", None), ("duplicate", None), ("extra", None),
                                          ("surrogate", None)]


# -- seeds and their documents ------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    name: str
    dialect: str
    kind: str
    body: bytes


@lru_cache(maxsize=None)
def seeds() -> tuple[Seed, ...]:
    found = []
    for path in all_wire_scripts():
        script = parse_wire(path)
        if script.error is not None or script.options or len(script.body) > MAX_SEED_BYTES:
            continue
        found.append(Seed(f"{script.scenario}/{path.name}", script.dialect, script.kind, script.body))
    return tuple(found)


def seeds_of(dialect: str, kind: str) -> list[Seed]:
    return [s for s in seeds() if s.dialect == dialect and s.kind == kind]


def frame_json(frame: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(before, JSON, after) of a frame whose data is one JSON object; None otherwise."""
    start = frame.find(b"{")
    end = frame.rfind(b"}")
    if start < 0 or end < start:
        return None
    return frame[:start], frame[start:end + 1], frame[end + 1:]


def mutants(seed: Seed) -> Iterator[tuple[str, bytes]]:
    """Every mutant of a seed: (what was done, the bytes)."""
    if seed.kind == "stream":
        frames = split_frames(seed.dialect, seed.body)
        for i, frame in enumerate(frames):
            yield f"frame {i} dropped", b"".join(frames[:i] + frames[i + 1:])
            yield f"frame {i} twice", b"".join(frames[:i + 1] + frames[i:])
            if i + 1 < len(frames):
                yield f"frames {i}, {i + 1} swapped", b"".join(frames[:i] + [frames[i + 1], frame] + frames[i + 2:])
            parts = frame_json(frame)
            if parts is None:
                continue
            before, doc, after = parts
            for what, mutant in _document_mutants(doc):
                yield f"frame {i}: {what}", b"".join(frames[:i]) + before + mutant + after + b"".join(frames[i + 1:])
    else:
        yield from _document_mutants(seed.body)
    rng = random.Random(seed.name)
    for cut in sorted({rng.randrange(len(seed.body)) for _ in range(6)}):
        yield f"cut at byte {cut}", seed.body[:cut]


def _document_mutants(doc: bytes) -> Iterator[tuple[str, bytes]]:
    root = parse(doc)
    for path in paths(root):
        for op, arg in OPS:
            mutant = mutate(root, path, op, arg)
            if mutant is not None:
                yield f"{op} {dump(arg) if op == 'replace' else ''} at {list(path)}", dump(mutant).encode("utf-8")


# -- the properties ------------------------------------------------------------------


class Invalid(AssertionError):
    """The output broke a property."""


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise Invalid(f"duplicate key in output: {keys}")
    return dict(pairs)


def _constant(name):
    raise Invalid(f"{name} in output")


def strict_json(data: bytes) -> Any:
    """``data`` as strict JSON (UTF-8, no duplicate keys, no NaN/Infinity), or ``Invalid``."""
    try:
        text = data.decode("utf-8")
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Invalid(f"not strict JSON: {exc}: {data[:200]!r}") from None


def output_documents(target: str, kind: str, data: bytes, *, complete: bool = True) -> list[bytes]:
    """The JSON documents of an output: the body, each SSE frame's data, each NDJSON line.
    ``complete=False``: an output cut by an error (only its finished frames)."""
    if kind != "stream":
        return [data] if complete else []
    docs = []
    if target == "ollama":
        lines = data.split(b"\n")
        for line in lines if complete else lines[:-1]:
            if line.strip():
                docs.append(line)
        return docs
    events = data.split(b"\n\n")
    if complete:
        if events[-1].strip():
            raise Invalid(f"stream output does not end with a blank line: {events[-1][:100]!r}")
    for event in events[:-1]:
        datas = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if datas:
            payload = b"\n".join(datas)
            if payload != b"[DONE]":
                docs.append(payload)
    return docs


def check_output(target: str, kind: str, data: bytes, *, complete: bool = True) -> None:
    for doc in output_documents(target, kind, data, complete=complete):
        strict_json(doc)


def run(transcoder_cls, source: str, target: str, kind: str, chunks: list[bytes]) -> tuple:
    """('ok', output) or ('error', class, dialect, offset, path, frame_offset) -- and the
    output before the error, checked here. Any other exception propagates."""
    t = transcoder_cls(source, target, kind=kind)
    out = []
    try:
        for chunk in chunks:
            out.append(t.feed(chunk))
        out.append(t.close())
    except TranscodeError as exc:
        check_output(target, kind, b"".join(out) + t.pending_output(), complete=False)
        return ("error", type(exc).__name__, exc.dialect, exc.offset, exc.path, exc.frame_offset, exc.reason)
    return ("ok", b"".join(out))


def check_error(source: str, kind: str, outcome: tuple) -> None:
    _, cls, dialect, offset, path, frame_offset, reason = outcome
    if dialect != source:
        raise Invalid(f"{cls} names {dialect!r}, not the source {source!r}: {reason}")
    if offset is None or offset < 0:
        raise Invalid(f"{cls} has no offset: {reason}")
    # inside a document the path is known; a stream's framing, its non-JSON data and its
    # end are outside any
    if path is None and kind != "stream":
        raise Invalid(f"{cls} has no path: {reason}")


def cut(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


def check(transcoder_cls, source: str, target: str, kind: str, body: bytes, points: list[int]) -> tuple:
    """Every property for one input and one target; returns the whole-input outcome."""
    whole = run(transcoder_cls, source, target, kind, [body])
    if whole[0] == "ok":
        check_output(target, kind, whole[1])
    else:
        check_error(source, kind, whole)
    pieces = run(transcoder_cls, source, target, kind, cut(body, points))
    if pieces[:6] != whole[:6]:
        raise Invalid(f"the cut {points} changes the result:\n  whole: {whole!r:.400}\n  cut:   {pieces!r:.400}")
    return whole


def sweep(transcoder_cls, *, progress: Callable[[str], None] | None = None) -> tuple[int, list[str]]:
    """Every mutant of every seed into every target, cut into 1-, 7- and 64-byte
    pieces at once; (inputs run, failures)."""
    count, failures = 0, []
    for seed in seeds():
        for what, body in mutants(seed):
            points = sorted(set(range(0, len(body), 7)) | set(range(0, 64)) | set(range(0, len(body), 64)))
            for target in DIALECTS:
                count += 1
                try:
                    check(transcoder_cls, seed.dialect, target, seed.kind, body, points)
                except Exception as exc:  # noqa: BLE001 - a failure to report, whatever it is
                    failures.append(f"{seed.name} -> {target}: {what}: {type(exc).__name__}: {exc}"[:600])
        if progress:
            progress(f"{seed.name}: {count} inputs, {len(failures)} failures")
    return count, failures


if __name__ == "__main__":
    import fixed_clock
    from interlingua import Transcoder

    fixed_clock.install()  # generated times and ids: the same for every cut (as under pytest)
    total, failed = sweep(Transcoder, progress=lambda line: print(line, file=sys.stderr))
    for line in failed:
        print(line)
    print(f"{total} inputs, {len(failed)} failures")
