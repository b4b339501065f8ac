"""spike/REPORT.md, the plot and results.json, from the measured results.

The decision text is written from the numbers of this run, so regenerating
the report after a dialect lands restates the decision for its rules too.
"""

from __future__ import annotations

import json
import platform
from collections import defaultdict
from pathlib import Path

from .corpus import ORDERS

#: rules whose meaning is known here; a new dialect's rules are reported with their name
RULE_NOTES = {
    "openai:content-before-role": "openai decoder: a message's `content` arrives before its `role` "
                                  "(sorted/reversed keys); its blocks wait for the role",
    "openai:member-order": "openai encoder: inside one message, members after the first streaming one "
                           "(`tool_calls` after `content`, late scalars) are appended at message close",
    "openai:messages-before-system": "openai encoder: messages arrive before the system prompt "
                                     "(anthropic client writes `messages` before `system`); openai needs system first",
    "openai:user-before-tool-result": "openai encoder: user text precedes tool results in one source message; "
                                      "openai wants the tool messages first",
}
SMALL = 0.01  # a rule whose hold stays under 1% of the largest bodies is bounded by structure, not size


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.2f} MiB"


def _rule_stats(results) -> dict[str, dict]:
    stats: dict[str, dict] = {}
    for r in results:
        for rule, held in r.by_reason.items():
            s = stats.setdefault(rule, {"max": 0, "max_fraction": 0.0, "orders": set(), "pairs": set(),
                                        "client_max": 0, "large_fraction": 0.0, "where": ""})
            s["orders"].add(r.order)
            s["pairs"].add(f"{r.source}→{r.target} {r.kind}")
            if r.order in ("client", "wire"):
                s["client_max"] = max(s["client_max"], held)
            fraction = held / r.body_bytes
            if held > s["max"]:
                s["max"], s["where"] = held, f"{r.source}→{r.target} {r.case}/{r.order} ({_kib(r.body_bytes)} body)"
            s["max_fraction"] = max(s["max_fraction"], fraction)
            if r.body_bytes >= 500_000:
                s["large_fraction"] = max(s["large_fraction"], fraction)
    return stats


def _decision(rule: str, s: dict) -> str:
    scales = s["large_fraction"] >= SMALL
    who = ("the official client's own key order" if s["client_max"]
           else f"non-client key orders only ({', '.join(sorted(s['orders']))})")
    if not scales:
        verdict = ("**hold** (bounded by the message's structure, not the body: "
                   f"≤ {s['max_fraction']:.1%} of any body, {s['large_fraction']:.2%} on ≥ 500 kB bodies)")
    elif s["client_max"]:
        verdict = ("**hold a bounded amount**: refusing would reject the official client's bodies; "
                   "`Options.reorder_budget` caps it (BudgetExceededError, HTTP 413, naming this rule)")
    else:
        verdict = ("**hold a bounded amount** by default (`Options.reorder_budget`, BudgetExceededError naming "
                   "the rule); a deployment that needs chunk-bounded memory sets `refuse_reorder=True`, which "
                   "constrains the encoder to writer-order input (ReorderRefusedError at the first held byte)")
    return (f"* `{rule}` — {RULE_NOTES.get(rule, 'rule named by its dialect (see its module docstring)')}. "
            f"Triggered by {who}. High-water {_kib(s['max'])} = {s['max_fraction']:.1%} of the body at most "
            f"({s['where']}). Decision: {verdict}.")


def _cell(r) -> str:
    if r is None:
        return ""
    if r.error:
        return f"error: {r.error.split(':')[0]}"
    return "0" if not r.high_water else f"{r.high_water:,} ({r.fraction:.0%})"


def _pair_tables(results) -> list[str]:
    lines = []
    by_pair = defaultdict(list)
    for r in results:
        by_pair[(r.kind, r.source, r.target)].append(r)
    for (kind, source, target), rows in sorted(by_pair.items()):
        lines += [f"### {source} → {target} ({kind})", ""]
        generated = [r for r in rows if r.order in ORDERS]
        if generated:
            cases = defaultdict(dict)
            for r in generated:
                cases[r.case][r.order] = r
            lines += ["Held bytes high-water (fraction of the body) per key order:", "",
                      "| case | body bytes | " + " | ".join(ORDERS) + " | rules |",
                      "|---|---:|" + "---:|" * len(ORDERS) + "---|"]
            for case, by_order in cases.items():
                body = by_order.get("client") or next(iter(by_order.values()))
                rules = sorted({rule for r in by_order.values() for rule in r.by_reason})
                lines.append(f"| {case} | {body.body_bytes:,} | "
                             + " | ".join(_cell(by_order.get(o)) for o in ORDERS)
                             + f" | {', '.join(rules) or '—'} |")
            lines.append("")
        scenarios = [r for r in rows if r.order not in ORDERS]
        if scenarios:
            lines += ["rpt scenarios:", "", "| scenario | body bytes | held | rules |", "|---|---:|---:|---|"]
            for r in scenarios:
                lines.append(f"| {r.case} | {r.body_bytes:,} | {_cell(r)} | "
                             f"{', '.join(f'{k}={v}' for k, v in r.by_reason.items()) or '—'} |")
            lines.append("")
    return lines


def plot(results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = sorted({(r.kind, r.source, r.target) for r in results})
    cols = min(3, len(pairs)) or 1
    rows = (len(pairs) + cols - 1) // cols or 1
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    markers = {"client": "o", "sorted": "s", "reversed": "^", "random": "x", "rpt": "D", "wire": "v"}
    for ax, (kind, source, target) in zip(axes.flat, pairs):
        for order, marker in markers.items():
            pts = [(r.body_bytes, r.high_water) for r in results
                   if (r.kind, r.source, r.target) == (kind, source, target) and r.order == order and not r.error]
            if pts:
                ax.scatter(*zip(*pts), marker=marker, label=order, alpha=0.7)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=10)
        xs = [r.body_bytes for r in results]
        ax.plot([min(xs), max(xs)], [min(xs), max(xs)], ":", color="grey", label="= body")
        ax.set_title(f"{source} → {target} ({kind})")
        ax.set_xlabel("body bytes")
        ax.set_ylabel("held bytes (high-water)")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(pairs):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(results, spill: list[dict], availability: dict, out_dir: Path, skipped: list[str]) -> None:
    stats = _rule_stats(results)
    plot_name = "held_vs_size.png"
    plot(results, out_dir / plot_name)
    measured = sorted({f"{r.source}→{r.target} ({r.kind})" for r in results})
    zero_client = [r for r in results if r.order == "client" and r.high_water == 0]
    client = [r for r in results if r.order == "client"]
    big_spill = spill[-1] if spill else None
    lines = [
        "# Buffering spike: how much must be held, and what we do about it",
        "",
        "Regenerate with `python -m spike` (from the repository root). Every number below is from that run.",
        "",
        "## Decision",
        "",
        f"Measured pairs: {', '.join(measured)}. "
        f"{len(zero_client)} of {len(client)} official-client bodies held nothing at all.",
        "",
        "For each rule that made a pair hold bytes:",
        "",
    ]
    lines += [_decision(rule, s) for rule, s in sorted(stats.items())] or ["* nothing was held in any case."]
    lines += [
        "",
        "Defaults: `Options.reorder_budget` = 64 MiB (every held byte of every rule counts against it; "
        "exceeding it raises `BudgetExceededError`, status 413, naming the rule); `Options.refuse_reorder=True` "
        "raises `ReorderRefusedError` at the first held byte, for deployments that must stay within the chunk.",
        "",
    ]
    scaling = sorted(rule for rule, s in stats.items() if s["large_fraction"] >= SMALL)
    scaling_client = [rule for rule in scaling if stats[rule]["client_max"]]
    if big_spill:
        ratio = big_spill["tempfile_s"] / big_spill["memory_s"]
        lines += [
            f"**Spilling to a temporary file: measured, not implemented.** Holding {_kib(big_spill['bytes'])} and "
            f"giving it back costs {big_spill['memory_s'] * 1e3:.1f} ms in memory and "
            f"{big_spill['tempfile_s'] * 1e3:.1f} ms through a temporary file in `{big_spill['tempdir']}` "
            f"({big_spill['tempfile_mb_per_s']:.0f} MB/s, {ratio:.1f}× the in-memory time). The time is affordable; "
            "what does not justify it is where the bytes go next: a hold is released with `take_bytes()` into the "
            "encoder's output and `Transcoder.feed()` returns that output as one `bytes`, so a spilled hold would be "
            "read back into memory whole at release and the peak would not move. A real spill needs a chunked release "
            "(holds drained piece by piece into a chunked output) — a change to every encoder and to `feed()`'s "
            "contract. Rules measured in this run to scale with the body: "
            f"{', '.join(f'`{r}`' for r in scaling) or 'none'}; of them, triggered by an official client's own order: "
            f"{', '.join(f'`{r}`' for r in scaling_client) or 'none'}. The budget bounds them instead; revisit "
            "(chunked release, then spill) if production traces show held bytes near the budget.",
            "",
        ]
    if skipped:
        lines += ["## Not measured in this run", ""] + [f"* {s}" for s in skipped] + [""]
    lines += [
        "## Per rule", "",
        "| rule | max held | max fraction | fraction on ≥500 kB bodies | orders | pairs |",
        "|---|---:|---:|---:|---|---|",
    ]
    for rule, s in sorted(stats.items()):
        lines.append(f"| `{rule}` | {s['max']:,} | {s['max_fraction']:.1%} | {s['large_fraction']:.2%} | "
                     f"{', '.join(sorted(s['orders']))} | {', '.join(sorted(s['pairs']))} |")
    lines += [
        "",
        f"![held bytes vs body size]({plot_name})",
        "",
        "## Per pair and case",
        "",
        "Corpus: conversations (chat turns, parallel tool calls + results, base64 image, one long text) at "
        "~1 kB, 10 kB, 100 kB and 1 MB, serialised by each dialect's official client (`spike/clients.py`), "
        "then re-serialised with keys sorted, reversed and in a seeded-random order; the shared rpt scenarios "
        "(`tests/rpt.py` parses `rpt/*/*.rpt`); streams with interleaved parallel tool-call deltas and usage "
        "after the finish (`stream` kinds only when their codecs exist). Bodies are fed in 8192-byte frames. "
        "Held bytes are `Transcoder.reorder.report()`'s high-water (a held block counts its payload plus 64 "
        "bytes of bookkeeping, so it can exceed the body by a few bytes).",
        "",
    ]
    lines += _pair_tables(results)
    errors = [r for r in results if r.error]
    mismatched = [r for r in results if r.round_trip_equal is False]
    lines += ["## Checks", "",
              f"* errors: {len(errors)}" + "".join(f"\n  * {r.source}→{r.target} {r.case}/{r.order}: {r.error}" for r in errors[:20]),
              f"* same-dialect round trips not JSON-equal: {len(mismatched)}",
              f"* environment: Python {platform.python_version()} on {platform.machine()}", ""]
    (out_dir / "REPORT.md").write_text("\n".join(lines), encoding="utf-8")
    data = {
        "availability": availability,
        "skipped": skipped,
        "rules": {rule: {**s, "orders": sorted(s["orders"]), "pairs": sorted(s["pairs"])} for rule, s in stats.items()},
        "spill": spill,
        "results": [r.to_json() for r in results],
    }
    (out_dir / "results.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
