"""``python -m tests.corpus [--update]``: list the corpus, or rewrite its expected losses.

``--update`` writes ``tests/corpus/expected_losses.json`` from what the code records
today; review the diff (``git diff tests/corpus/expected_losses.json``) before committing.
"""

from __future__ import annotations

import json
import sys

from . import EXPECTED, ITEMS, current_losses


def _dump(data: dict) -> str:
    """One loss record a line, so a review diff shows exactly the records that changed."""
    out = ["{"]
    for i, (name, per) in enumerate(data.items()):
        out.append(f" {json.dumps(name)}: {{")
        for j, (target, losses) in enumerate(per.items()):
            end = "," if j < len(per) - 1 else ""
            if not losses:
                out.append(f"  {json.dumps(target)}: {json.dumps(losses)}{end}")
                continue
            out.append(f"  {json.dumps(target)}: [")
            out += [f"   {json.dumps(loss, ensure_ascii=False)}{',' if k < len(losses) - 1 else ''}"
                    for k, loss in enumerate(losses)]
            out.append(f"  ]{end}")
        out.append(" }" + ("," if i < len(data) - 1 else ""))
    return "\n".join(out + ["}"]) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--update"]:
        data = current_losses()
        EXPECTED.write_text(_dump(data))
        count = sum(len(v or []) for per in data.values() for v in per.values())
        print(f"wrote {EXPECTED} ({count} loss records)")
        return 0
    if argv:
        print(__doc__)
        return 2
    total = 0
    for name, item in ITEMS.items():
        total += len(item.body)
        print(f"{name:36} {item.dialect:9} {item.kind:8} {len(item.body):>8} B  {item.about}")
    print(f"{len(ITEMS)} items, {total} bytes")
    return 0


sys.exit(main(sys.argv[1:]))
