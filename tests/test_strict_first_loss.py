"""Strict mode raises the loss a lenient run records first, however the body is cut.

``Options(strict=True)`` turns the first loss into a ``LossError``. Which loss is first must
not depend on where the body is cut: a request encoder records a block's placing losses at
its last fragment (``Session.hold_losses``), so a strict run holds them too and raises at
that fragment unless a loss recorded meanwhile comes first -- the same order as the lenient
run's list. Checked over the corpus: every rpt script (requests, responses, streams) into
every other dialect, at cuts 1, 7 and whole, on the active backend.
"""

from __future__ import annotations

import pytest

from interlingua import LossError, TranscodeError, Transcoder
from rpt import all_wire_scripts, parse_wire

DIALECTS = ("openai", "anthropic", "ollama")
CUTS = (1, 7, 0)  # 0: whole


def _scripts():
    scripts = [parse_wire(path) for path in all_wire_scripts()]
    return [s for s in scripts if s.error is None]


def _run(script, target: str, cut: int, strict: bool):
    t = Transcoder(script.dialect, target, kind=script.kind, options=script.make_options(strict=strict),
                   **script.make_hooks())
    body = script.body
    size = cut or len(body) or 1
    try:
        for i in range(0, len(body), size):
            t.feed(body[i:i + size])
        t.close()
    except TranscodeError as err:
        # (a lenient run's error comes after the losses recorded so far: strict raises the first)
        if not strict and t.losses:
            return ("losses", [(loss.path, loss.reason) for loss in t.losses])
        return ("raised", err.path, str(err)) if type(err) is LossError else ("error", type(err).__name__, err.path)
    return ("losses", [(loss.path, loss.reason) for loss in t.losses])


CASES = [pytest.param(script, target, id=f"{script.scenario}/{script.path.name}->{target}")
         for script in _scripts() for target in DIALECTS if target != script.dialect]


@pytest.mark.parametrize("script,target", CASES)
def test_strict_raises_the_first_loss_at_every_cut(script, target):
    lenient = _run(script, target, 0, strict=False)
    for cut in CUTS:
        strict = _run(script, target, cut, strict=True)
        if lenient[0] != "losses":
            assert strict == lenient, f"cut {cut}"  # (the same error, strict or not)
        elif not lenient[1]:
            assert strict == ("losses", []), f"cut {cut}"
        else:
            path, reason = lenient[1][0]
            assert strict[:2] == ("raised", path), f"cut {cut}: {strict}"
            assert strict[2].startswith(f"cannot carry {path}: {reason} ("), f"cut {cut}"  # (then where)
