"""Linear scan (Poletto & Sarkar 1999) over live intervals.

Invariant: intervals are visited by increasing start; an interval whose end
lies before the current start frees its registers; when no register is
free, the active interval that ends furthest away is spilled if it ends
after the current one, otherwise the current one is. Registers are taken
lowest first, so on a program whose intervals have no holes (straight-line
code) the highest register used is below MAXLIVE when MAXLIVE fits.
"""

from __future__ import annotations

import bisect

import numpy as np

from engine.allocators import register
from engine.allocators.common import lowest_free, run_with_spilling, too_small


def _highest_free(occupied: np.ndarray, width: int) -> int:
    r = lowest_free(occupied[::-1], 1) if width == 1 else -1
    if width == 1:
        return len(occupied) - 1 - r if r >= 0 else -1
    even = len(occupied) - len(occupied) % 2
    free = np.flatnonzero(~occupied[0:even:2] & ~occupied[1:even:2])
    return 2 * int(free[-1]) if len(free) else -1


class _Scan:
    """The state of one scan: active intervals by end, occupied registers."""

    def __init__(self, analysis, budget, unspillable, high):
        self.a, self.unspillable, self.high = analysis, unspillable, high
        self.base = np.full(len(analysis.names), -1, dtype=np.int64)
        self.occupied = np.zeros(budget, dtype=bool)
        self.active: list[tuple[int, int]] = []
        self.to_spill: list[int] = []

    def pick(self, width: int) -> int:
        return _highest_free(self.occupied, width) if self.high else lowest_free(self.occupied, width)

    def hold(self, v: int, flag: bool) -> None:
        b = self.base[v]
        self.occupied[b : b + self.a.widths[v]] = flag

    def expire(self, start: int) -> None:
        while self.active and self.active[0][0] < start:
            self.hold(self.active.pop(0)[1], False)

    def make_room(self, v: int) -> int:
        evicted = []
        for end_u, u in reversed(self.active):
            if self.unspillable[u]:
                continue
            if not self.unspillable[v] and end_u <= self.a.end[v]:
                break
            evicted.append((end_u, u))
            self.hold(u, False)
            r = self.pick(self.a.widths[v])
            if r >= 0:
                for item in evicted:
                    self.active.remove(item)
                    self.base[item[1]] = -1
                    self.to_spill.append(item[1])
                return r
        for _, u in evicted:
            self.hold(u, True)
        if self.unspillable[v]:
            raise too_small(self.a, len(self.occupied), v)
        self.to_spill.append(v)
        return -1

    def visit(self, v: int) -> None:
        self.expire(self.a.start[v])
        r = self.pick(self.a.widths[v])
        if r < 0:
            r = self.make_room(v)
        if r >= 0:
            self.base[v] = r
            self.hold(v, True)
            bisect.insort(self.active, (int(self.a.end[v]), v))


def scan(analysis, budget: int, values, unspillable, high: bool = False):
    """Linear scan of ``values``; returns (base register per value, values to spill)."""
    state = _Scan(analysis, budget, unspillable, high)
    for v in sorted(values, key=lambda v: (analysis.start[v], v)):
        state.visit(int(v))
    return state.base, state.to_spill


def _core(analysis, budget, unspillable):
    return scan(analysis, budget, np.flatnonzero(analysis.widths > 0), unspillable)


@register("linear-scan")
def linear_scan(program, analysis, budget):
    """Poletto & Sarkar's linear scan, spilling the interval that ends furthest away."""
    return run_with_spilling(program, analysis, budget, "linear-scan", _core)
