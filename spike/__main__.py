"""``python -m spike [--out DIR] [--rpt-root DIR]``: measure, then write REPORT.md, the plot and results.json."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from interlingua.dialects import available

from . import corpus, measure, report


def build_cases(rpt_root: Path | None) -> tuple[list, list[str]]:
    cases, skipped = [], []
    have = measure.availability()
    for dialect in measure.DIALECTS:
        if dialect in have["request"]:
            cases += corpus.request_cases(dialect)
        else:
            skipped.append(f"{dialect} requests: no request codec yet")
        if dialect in have["stream"]:
            cases += corpus.stream_cases(dialect)
        else:
            skipped.append(f"{dialect} streams (interleaved parallel tool-call deltas, usage after finish): "
                           "no stream codec yet")
    for case in corpus.rpt_cases(rpt_root):
        if available(case.dialect, case.kind):
            cases.append(case)
        else:
            skipped.append(f"rpt {case.scenario}/{case.dialect}.{case.kind}: no {case.kind} codec for {case.dialect}")
    return cases, skipped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spike", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--rpt-root", type=Path, default=None, help="rpt scenarios (default: ./rpt)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cases, skipped = build_cases(args.rpt_root)
    results = measure.replay(cases)
    spill = measure.measure_spill()
    args.out.mkdir(parents=True, exist_ok=True)
    report.write(results, spill, measure.availability(), args.out, skipped)
    print(f"{len(results)} runs over {len(cases)} bodies in {time.perf_counter() - start:.1f}s; "
          f"wrote {args.out / 'REPORT.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
