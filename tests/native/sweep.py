"""The exhaustive differential sweep, run by hand before a native change lands (CI samples
the same comparison under hypothesis: ``test_transcoder_parity.py`` and its siblings).

Every mutant of every fuzz seed (``tests/fuzz.py``: the rpt scenarios, each JSON path
replaced, dropped, duplicated...) into every target, fed whole and in 7-byte pieces, on the
native core and on the Python pipeline, compared as ``assert_transcoder_parity`` compares
them: every feed's output, the error and the output pending before it, the error again
after it, the losses, the reorder report and the renamed tools::

    .venv/bin/python tests/native/sweep.py                    # requests, responses, streams
    .venv/bin/python tests/native/sweep.py response stream    # some kinds

Prints each seed's running count to stderr, the first differences, and the total.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parent.parent
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import fixed_clock  # noqa: E402
import fuzz  # noqa: E402
from native.test_transcoder_parity import assert_transcoder_parity  # noqa: E402

PIECE = 7  # bytes per feed of the cut run (a frame's `data:` line, a key, an escape cut anywhere)
SHOWN = 10  # differences printed in full


def sweep(kinds: list[str]) -> tuple[int, list[str]]:
    runs, differences = 0, []
    for seed in fuzz.seeds():
        if seed.kind not in kinds:
            continue
        for what, body in (("unchanged", seed.body), *fuzz.mutants(seed)):
            for target in fuzz.DIALECTS:
                for cuts in ([], list(range(PIECE, len(body), PIECE))):
                    runs += 1
                    try:
                        assert_transcoder_parity(seed.dialect, target, body, cuts, kind=seed.kind)
                    except AssertionError as exc:
                        differences.append(f"{seed.name} -> {target}, {what}, {len(cuts) + 1} pieces: {exc}"[:800])
        print(f"{seed.name}: {runs} runs, {len(differences)} differences", file=sys.stderr)
    return runs, differences


def main(argv: list[str]) -> int:
    kinds = argv or list(fuzz.KINDS)
    fixed_clock.install()  # generated ids and times: the same on both backends (as under pytest)
    runs, differences = sweep(kinds)
    for line in differences[:SHOWN]:
        print(line)
    print(f"{runs} runs ({', '.join(kinds)}), {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
