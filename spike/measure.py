"""Replaying the corpus through every available ordered pair, and the spill option.

Nothing here knows a dialect: pairs come from the registry
(``interlingua.dialects.codecs`` raises ``ValueError`` for what is missing),
and what was held, and why, from ``Transcoder.reorder.report()``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field

from interlingua import Options, Transcoder, TranscodeError
from interlingua.dialects import DIALECTS, KINDS, available
from interlingua.reorder import ReorderBuffer

FRAME = 8192  # how the body is cut; a hold's size does not depend on it


def ordered_pairs(kind: str) -> list[tuple[str, str]]:
    have = [d for d in DIALECTS if available(d, kind)]
    return [(s, t) for s in have for t in have]


def availability() -> dict[str, list[str]]:
    """kind -> dialects whose codec exists (what this run could measure)."""
    return {kind: [d for d in DIALECTS if available(d, kind)] for kind in KINDS}


@dataclass
class Result:
    source: str
    target: str
    kind: str
    case: str
    order: str
    body_bytes: int
    high_water: int = 0
    by_reason: dict = field(default_factory=dict)
    seconds: float = 0.0
    losses: int = 0
    error: str | None = None
    #: same dialect: output JSON-equal to the input (None: not checked)
    round_trip_equal: bool | None = None

    @property
    def fraction(self) -> float:
        return self.high_water / self.body_bytes if self.body_bytes else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "fraction": round(self.fraction, 6)}


def _json_equal(a: bytes, b: bytes) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except ValueError:
        return False


def run(case, target: str, options: Options | None = None) -> Result:
    result = Result(case.dialect, target, case.kind, case.name, case.order, len(case.body))
    transcoder = Transcoder(case.dialect, target, kind=case.kind,
                            options=options or Options(**case.options))
    out = []
    start = time.perf_counter()
    try:
        for i in range(0, len(case.body), FRAME):
            out.append(transcoder.feed(case.body[i:i + FRAME]))
        out.append(transcoder.close())
    except TranscodeError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.perf_counter() - start
    report = transcoder.reorder.report()
    result.high_water = report["high_water"]
    result.by_reason = report["by_reason"]
    result.losses = len(transcoder.losses)
    if case.dialect == target and case.kind != "stream" and result.error is None:
        result.round_trip_equal = _json_equal(b"".join(out), case.body)
    return result


def replay(cases) -> list[Result]:
    results = []
    for kind in KINDS:
        for source, target in ordered_pairs(kind):
            for case in cases:
                if case.kind == kind and case.dialect == source:
                    results.append(run(case, target))
    return results


# -- the spill option ------------------------------------------------------------


def _hold_in_memory(data: list[bytes]) -> float:
    buffer = ReorderBuffer()
    start = time.perf_counter()
    hold = buffer.hold("spike:memory")
    for piece in data:
        hold.write(piece)
    out = hold.take_bytes()
    assert len(out) == sum(map(len, data))
    return time.perf_counter() - start


def _hold_in_tempfile(data: list[bytes]) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryFile() as f:
        for piece in data:
            f.write(piece)
        f.flush()
        f.seek(0)
        total = 0
        while True:  # read back in pieces, as a bounded-memory release would
            piece = f.read(65536)
            if not piece:
                break
            total += len(piece)
    assert total == sum(map(len, data))
    return time.perf_counter() - start


def measure_spill(sizes=(1 << 20, 10 << 20, 64 << 20), piece: int = FRAME, repeat: int = 3) -> list[dict]:
    """Cost of holding ``size`` bytes in memory vs spilling them to a temporary file."""
    rows = []
    for size in sizes:
        data = [os.urandom(piece)] * (size // piece)
        memory = min(_hold_in_memory(data) for _ in range(repeat))
        spill = min(_hold_in_tempfile(data) for _ in range(repeat))
        rows.append({"bytes": size, "memory_s": memory, "tempfile_s": spill,
                     "tempfile_mb_per_s": size / spill / 1e6, "tempdir": tempfile.gettempdir()})
    return rows
