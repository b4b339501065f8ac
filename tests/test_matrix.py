"""The 3 x 3 matrix of ordered dialect pairs over the shared rpt scenarios.

For every kind, every ordered pair (source, target) of the three dialects --
the same dialect included (the round trip) -- must be exercised by at least
``MINIMUM[kind]`` scenario folders, so that coverage cannot shrink silently
(deleting a script, or a ``not-from`` line, shows up here). The counts come
from the rpt folders themselves, by the rules ``tests/test_rpt.py`` runs:

* same dialect: a folder with a wire script of that dialect and kind that is
  not an ``error`` scenario (decode + round trip);
* source E -> target D: a folder with non-error scripts of both, where D's
  script has no ``not-from E`` (the cross check runs).
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from rpt import RPT_ROOT, parse_wire

DIALECTS = ("openai", "anthropic", "ollama")
#: the fewest folders each ordered pair must run over: the weakest pair of each kind today
#: (raise it when scenarios are added; lowering it needs a reason)
MINIMUM = {"request": 12, "response": 9, "stream": 16}


def pair_counts(kind: str) -> Counter:
    """(source, target) -> number of rpt folders whose checks run that pair for ``kind``."""
    counts: Counter = Counter()
    for folder in sorted(p for p in RPT_ROOT.iterdir() if p.is_dir()):
        scripts = {}
        for path in folder.glob(f"*.{kind}.rpt"):
            script = parse_wire(path)
            if script.error is None:
                scripts[script.dialect] = script
        for source, target in itertools.product(scripts, repeat=2):
            if source == target or source not in scripts[target].not_from:
                counts[source, target] += 1
    return counts


@pytest.mark.parametrize("kind", sorted(MINIMUM))
def test_every_ordered_pair_is_exercised(kind):
    counts = pair_counts(kind)
    short = {f"{s}->{t}": counts[s, t] for s, t in itertools.product(DIALECTS, repeat=2)
             if counts[s, t] < MINIMUM[kind]}
    assert not short, f"{kind}: pairs under {MINIMUM[kind]} folders: {short}"


if __name__ == "__main__":  # the table, for the record: python tests/test_matrix.py
    for kind in sorted(MINIMUM):
        counts = pair_counts(kind)
        print(kind)
        for source in DIALECTS:
            print("  " + source.ljust(10) + " ".join(f"{t}={counts[source, t]:<3}" for t in DIALECTS))
