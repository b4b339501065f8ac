"""The test suite's clock and entropy (the ``Transcoder``'s ``clock`` / ``entropy``): fixed.

A response whose source has no time or id gets the clock and a generated id
(``interlingua.lifecycle``: response ids and times). The suite compares outputs
across cuts, backends, the proxy and the direct core, so ``install()`` (called by
``tests/conftest.py``) gives every transcoder that leaves a hook unset these fixed
ones; a test that passes a hook gets its own. The library's defaults (``time.time``,
``os.urandom``) are tested through ``DEFAULT_START`` (the unpatched reader).
"""

from __future__ import annotations

CLOCK = 1764579600.123456  # 2025-12-01T09:00:00.123456Z
ENTROPY = bytes(12)

#: ``interlingua.session.response_start`` as the library has it (set by ``install``)
DEFAULT_START = None


def clock() -> float:
    return CLOCK


def entropy(n: int) -> bytes:
    return ENTROPY[:n]


def install() -> None:
    global DEFAULT_START
    from interlingua import session

    if DEFAULT_START is not None:
        return
    DEFAULT_START = session.response_start

    def fixed_start(given_clock, given_entropy):
        return DEFAULT_START(given_clock or clock, given_entropy or entropy)

    session.response_start = fixed_start
