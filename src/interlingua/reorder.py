"""The one reorder-buffer mechanism (DESIGN §5).

Whatever a decoder or encoder must hold back because the target's order
differs from the source's goes into a ``Hold`` taken from the pipeline's
``ReorderBuffer``. The buffer counts every held byte against one budget,
records the high-water mark and the rule (``reason``) that made each hold, and
raises ``BudgetExceededError`` when the budget would be exceeded -- or
``ReorderRefusedError`` at the first held byte when reordering is refused
(``refuse=True``, the strict-order mode).
"""

from __future__ import annotations

from typing import Any, Iterator

from .errors import BudgetExceededError, ReorderRefusedError

DEFAULT_BUDGET = 64 * 1024 * 1024


class _Tally:
    """The bytes held under one reason: now, and at most."""

    __slots__ = ("reason", "held", "high")

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.held = 0
        self.high = 0


class ReorderBuffer:
    def __init__(self, budget: int = DEFAULT_BUDGET, *, refuse: bool = False) -> None:
        self.budget = budget
        self.refuse = refuse
        self.held = 0
        self.high_water = 0
        #: reason -> largest number of bytes held at once under that reason
        self.high_water_by_reason: dict[str, int] = {}
        # reason -> its tally, found once per hold rather than once per held item
        # (an encoder may write every message of a body into a hold)
        self._tallies: dict[str, _Tally] = {}

    def hold(self, reason: str) -> "Hold":
        return Hold(self, reason)

    def _tally(self, reason: str) -> _Tally:
        tally = self._tallies.get(reason)
        if tally is None:
            tally = self._tallies[reason] = _Tally(reason)
        return tally

    def refused(self, reason: str) -> ReorderRefusedError:
        """The refusal of a rule that, with reordering refused, held nothing and meets
        what it would have waited for too late (the error to raise)."""
        return ReorderRefusedError(f"input needs reordering ({reason}) and reordering is refused")

    def _add(self, tally: _Tally, size: int) -> None:
        if self.refuse and size:
            raise self.refused(tally.reason)
        held = self.held + size
        if held > self.budget:
            raise BudgetExceededError(
                f"reorder budget of {self.budget} bytes exceeded while holding for {tally.reason!r}")
        self.held = held
        if held > self.high_water:
            self.high_water = held
        now = tally.held + size
        tally.held = now
        if now > tally.high:
            tally.high = now
            self.high_water_by_reason[tally.reason] = now

    def _release(self, tally: _Tally, size: int) -> None:
        self.held -= size
        tally.held -= size

    def report(self) -> dict:
        return {"high_water": self.high_water, "by_reason": dict(self.high_water_by_reason)}


class Hold:
    """Items held for one rule; each counted with the byte size given."""

    __slots__ = ("_buffer", "reason", "_tally", "_items", "size")

    def __init__(self, buffer: ReorderBuffer, reason: str) -> None:
        self._buffer = buffer
        self.reason = reason
        self._tally = buffer._tally(reason)
        self._items: list[Any] = []
        self.size = 0

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def append(self, item: Any, size: int) -> None:
        self._buffer._add(self._tally, size)
        self._items.append(item)
        self.size += size

    def write(self, data: bytes) -> None:
        """Hold output bytes (encoders): ``append`` with the size taken from the bytes."""
        if data:
            size = len(data)
            self._buffer._add(self._tally, size)
            self._items.append(data)
            self.size += size

    def count(self, size: int) -> None:
        """Count (or, negative, uncount) bytes held outside the items: what a block's
        builder keeps back while its events wait (``Gate.keep``)."""
        if size > 0:
            self._buffer._add(self._tally, size)
        elif size:
            self._buffer._release(self._tally, -size)
        self.size += size

    def drain(self) -> Iterator[Any]:
        """Give back every held item in order, releasing its bytes (counted ones too)."""
        items, self._items = self._items, []
        size, self.size = self.size, 0
        self._buffer._release(self._tally, size)
        return iter(items)

    def take_bytes(self) -> bytes:
        return b"".join(self.drain())
