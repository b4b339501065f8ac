"""Benchmark setup: import paths, a short default time per benchmark, and the ratio table.

After pytest-benchmark's own timing table, ``pytest_terminal_summary`` prints
one line per contender: its median time as a ratio to orjson loads+dumps on
the same bytes (> 1 means faster than orjson) -- and, in groups that have LiteLLM,
each transcoder's ratio to it --, the peak-memory figures and the import time.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (HERE, ROOT / "tests", ROOT):  # bench modules, tests/rpt.py, spike.corpus
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

BASELINE = "orjson loads+dumps"
LITELLM = "litellm anthropic->openai"


def pytest_configure(config):
    # a few minutes for the whole run on 2 cores: 0.3 s per benchmark unless asked otherwise
    if getattr(config.option, "benchmark_max_time", None) == 1.0:
        config.option.benchmark_max_time = 0.3


def _rows(benchmarks):
    groups = defaultdict(dict)
    for bench in benchmarks:
        name = bench.extra_info.get("contender", bench.name)
        groups[bench.group or "?"][name] = bench
    return groups


def ratio_lines(benchmarks) -> list[str]:
    lines = []
    for group, by_name in sorted(_rows(benchmarks).items()):
        if group.startswith(("memory:", "import:")):
            continue
        base, litellm = by_name.get(BASELINE), by_name.get(LITELLM)
        size = next(iter(by_name.values())).extra_info.get("body_bytes", 0)
        lines.append(f"{group}  ({size:,} bytes)")
        for name, bench in by_name.items():
            median = bench.stats.median
            ratio = f"{base.stats.median / median:6.2f}x orjson" if base else "   (no orjson)"
            mbps = f"{size / median / 1e6:8.1f} MB/s" if size else ""
            versus = f"  {litellm.stats.median / median:6.2f}x litellm" if litellm and "transcoder" in name else ""
            lines.append(f"    {name:<36} {median * 1e3:10.3f} ms {mbps}  {ratio}{versus}{_per_token(bench)}")
    return lines


def _per_token(bench) -> str:
    """Tokens per second and cost per feed, where the benchmark says how many (test_native_tokenizer)."""
    info, median = bench.extra_info, bench.stats.median
    if "tokens" not in info or "orjson" in info.get("contender", ""):
        return ""
    return f"  {info['tokens'] / median / 1e6:7.2f} Mtok/s  {median / info['feeds'] * 1e6:8.3f} us/feed"


def memory_lines(benchmarks) -> list[str]:
    lines = []
    for group, by_name in sorted(_rows(benchmarks).items()):
        if not group.startswith("memory:"):
            continue
        lines.append(group)
        for name, bench in by_name.items():
            info = bench.extra_info
            lines.append(f"    {name:<36} peak {info['peak_mib']:7.1f} MiB, "
                         f"baseline {info['baseline_mib']:6.1f} MiB, growth {info['growth_mib']:+7.1f} MiB")
    return lines


def import_lines(benchmarks) -> list[str]:
    lines = []
    for group, by_name in sorted(_rows(benchmarks).items()):
        if group.startswith("import:"):
            for name, bench in by_name.items():
                info = bench.extra_info
                lines.append(f"    {name:<36} {info['import_ms']:7.1f} ms (median of {info['runs']} fresh processes, "
                             f"python -X importtime: cumulative time of the interlingua package)")
    return lines


def pytest_terminal_summary(terminalreporter, config):
    session = getattr(config, "_benchmarksession", None)
    benchmarks = [b for b in getattr(session, "benchmarks", []) if b]
    if not benchmarks:
        return
    write = terminalreporter.write_line
    terminalreporter.section("interlingua vs baselines (median; ratio = orjson time / contender time)")
    for line in ratio_lines(benchmarks):
        write(line)
    memory = memory_lines(benchmarks)
    if memory:
        terminalreporter.section("peak memory, fresh process per figure (growth over its own import baseline)")
        for line in memory:
            write(line)
    imports = import_lines(benchmarks)
    if imports:
        terminalreporter.section("import interlingua")
        for line in imports:
            write(line)
