"""Linear scan (Poletto & Sarkar 1999) over live intervals without holes: the textbook version.

Kept as ``linear-scan-hull`` beside :mod:`engine.alloc.linear_scan` (the
production form, with lifetime holes) because the difference teaches: an
interval here is the hull of its value's live segments, so a value live
before a loop and after it, or a loop accumulator whose range has a gap,
holds its register through the gap. On the design note's MHA config with
head-shared this needs 169 registers where MAXLIVE is 43; with holes the
same scan needs MAXLIVE. On programs without holes (straight-line code)
the two agree.

Invariant: intervals are visited by increasing start; an interval whose end
lies before the current start frees its registers; when no register is
free, the active interval that ends furthest away is spilled if it ends
after the current one, otherwise the current one is. Registers are taken
lowest first, so on a program whose intervals have no holes (straight-line
code) the highest register used is below MAXLIVE when MAXLIVE fits.
"""

from __future__ import annotations

import bisect
import functools

import numpy as np

from engine.alloc import register
from engine.alloc.common import run_with_spilling, too_small


def free_register(occupied: int, width: int, budget: int, high: bool = False) -> int:
    """Lowest (or highest) free register, even-aligned for pairs, in a bit mask; -1 if none.

    Examples
    --------
    >>> free_register(0b1101, 1, 8), free_register(0b1101, 2, 8), free_register(0b1101, 1, 8, high=True)
    (1, 4, 7)
    """
    free = ~occupied & ((1 << budget) - 1)
    if width == 2:
        free &= (free >> 1) & _even(budget)
    if not free:
        return -1
    return free.bit_length() - 1 if high else (free & -free).bit_length() - 1


@functools.lru_cache(maxsize=None)
def _even(budget: int) -> int:
    """Bits of the even registers that start a pair inside the budget."""
    return sum(1 << r for r in range(0, budget - 1, 2))


class _Scan:
    """The state of one scan: active intervals by end, occupied registers as a bit mask."""

    def __init__(self, analysis, budget, unspillable, high):
        self.a, self.unspillable, self.high, self.budget = analysis, unspillable.tolist(), high, budget
        self.base = [-1] * len(analysis.names)
        self.widths = analysis.widths.tolist()
        self.starts, self.ends = analysis.start.tolist(), analysis.end.tolist()
        self.occupied = 0
        self.active: list[tuple[int, int]] = []
        self.to_spill: list[int] = []

    def pick(self, width: int) -> int:
        return free_register(self.occupied, width, self.budget, self.high)

    def hold(self, v: int, flag: bool) -> None:
        bits = ((1 << self.widths[v]) - 1) << self.base[v]
        self.occupied = self.occupied | bits if flag else self.occupied & ~bits

    def expire(self, start: int) -> None:
        active = self.active
        if active and active[0][0] < start:
            k = bisect.bisect_left(active, (start, -1))
            for _, u in active[:k]:
                self.hold(u, False)
            del active[:k]

    def make_room(self, v: int) -> int:
        evicted = []
        for end_u, u in reversed(self.active):
            if self.unspillable[u]:
                continue
            if not self.unspillable[v] and end_u <= self.ends[v]:
                break
            evicted.append((end_u, u))
            self.hold(u, False)
            r = self.pick(self.widths[v])
            if r >= 0:
                for item in evicted:
                    self.active.remove(item)
                    self.base[item[1]] = -1
                    self.to_spill.append(item[1])
                return r
        for _, u in evicted:
            self.hold(u, True)
        if self.unspillable[v]:
            raise too_small(self.a, self.budget, v)
        self.to_spill.append(v)
        return -1

    def visit(self, v: int) -> None:
        self.expire(self.starts[v])
        r = self.pick(self.widths[v])
        if r < 0:
            r = self.make_room(v)
        if r >= 0:
            self.base[v] = r
            self.hold(v, True)
            bisect.insort(self.active, (self.ends[v], v))


def scan(analysis, budget: int, values, unspillable, high: bool = False):
    """Linear scan of ``values``; returns (base register per value, values to spill).

    :meth:`_Scan.visit` of each value in turn, written out in one loop (the
    scan visits every value of every round: 17k on naive's benchmark program);
    :func:`scan_reference` is the plain one, and the tests compare the two.
    """
    state = _Scan(analysis, budget, unspillable, high)
    values = np.asarray(values, dtype=np.int64)
    starts, ends, widths, base, active = state.starts, state.ends, state.widths, state.base, state.active
    full, even = (1 << budget) - 1, _even(budget)
    for v in values[np.lexsort((values, analysis.start[values]))].tolist():
        start = starts[v]
        if active and active[0][0] < start:  # expire
            k = bisect.bisect_left(active, (start, -1))
            occupied = state.occupied
            for _, u in active[:k]:
                occupied &= ~(((1 << widths[u]) - 1) << base[u])
            state.occupied = occupied
            del active[:k]
        width = widths[v]
        free = ~state.occupied & full  # free_register, written out
        if width == 2:
            free &= (free >> 1) & even
        r = -1 if not free else (free.bit_length() - 1 if high else (free & -free).bit_length() - 1)
        if r < 0:
            r = state.make_room(v)
        if r >= 0:
            base[v] = r
            state.occupied |= ((1 << width) - 1) << r
            bisect.insort(active, (ends[v], v))
    return np.array(base, dtype=np.int64), state.to_spill


def scan_reference(analysis, budget: int, values, unspillable, high: bool = False):
    """:func:`scan` as one :meth:`_Scan.visit` per value (the reference the tests compare it with)."""
    state = _Scan(analysis, budget, unspillable, high)
    values = np.asarray(values, dtype=np.int64)
    for v in values[np.lexsort((values, analysis.start[values]))].tolist():
        state.visit(v)
    return np.array(state.base, dtype=np.int64), state.to_spill


def _core(analysis, budget, unspillable, discount=None):  # spills by distance, not cost: no discount
    return scan(analysis, budget, np.flatnonzero(analysis.widths > 0), unspillable)


@register("linear-scan-hull")
def linear_scan_hull(program, analysis, budget, spill_everywhere=False):
    """Poletto & Sarkar's linear scan over hull intervals, spilling the interval that ends furthest away."""
    return run_with_spilling(program, analysis, budget, "linear-scan-hull", _core, spill_everywhere=spill_everywhere)
