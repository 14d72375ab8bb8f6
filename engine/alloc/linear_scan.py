"""Linear scan with lifetime holes (Traub, Holloway & Smith 1998; Wimmer & Franz 2010).

An interval is a value's live segments (:attr:`Analysis.seg_start` ..
``seg_end``, positions inclusive), not their hull: between two segments
it has a hole, where its register is free for another interval that fits
there. Intervals are visited by increasing start; at each start the
intervals seen so far are sorted into *active* (covering the position),
*inactive* (in a hole, with a segment still to come) and handled (ended).
The current interval takes the lowest register (an even pair for a 64-bit
value) that no active interval holds and no inactive interval that
intersects it holds, so a register is shared through a hole (the
second-chance binpacking idea, with lowest-first instead of best-fit so
that straight-line code needs exactly MAXLIVE registers). Once the count is
known, :func:`engine.alloc.choice.spread` chooses each value's register
again within it (the one freed longest ago), so that lowest-first does not
leave each value waiting on the last read of the one before. That choice
reads the interference graph of the final program (built once, after the
spill rounds, which never need it).

When no register is free for the whole interval (``allocateBlockedReg``),
the register whose holders (the active intervals in it and the inactive
ones that intersect the current one) are cheapest to spill is freed, and
they are spilled; or the current interval is, when it is cheaper still. An
interval's cost is its spill weight (reads and writes, by loop depth:
:attr:`Analysis.spill_weight`) over the positions it is still live: the
scan's form of Chaitin's cost over degree. Wimmer's rule, the holder whose
next use is farthest, is made for splitting, where spilling costs only the
part up to that use; with whole-value spills (below) it measured worse: on
the 12-program sample of tests/bench/bench_allocators.py ``--small``, at
budgets 96 / 64 / 32 it executed 125,792 / 410,032 / 645,912 spill
instructions against 53,060 / 304,604 / 559,763 by cost (the hull scan
156,838 / 308,704 / 566,180). Spill temporaries (the previous rounds'
short ranges) are never chosen.

What this IR's plans can express limits the splitting (the report of issue
24 says so too): a plan gives each value one register for its whole life,
and its only spill code is a store after each definition and reloads into
fresh copies (:mod:`engine.ir.spill`), removed by name and slot. So a split
part in a stack slot is written as the spill of the whole value, its
reloads being the split children in registers; a split into two registers
joined by a move is not expressible (a ``mov`` is not spill code, and the
identity proof would see a changed program). Wimmer's "split the current
interval before the first position its register is blocked" becomes
"spill it everywhere" here.

Cost: each visit walks the active and inactive lists (Wimmer's loop), and
an inactive interval's intersection with the current one walks both
segment lists; this costs more than the hull scan's heap (see
tests/bench/bench_engine.py).

Invariant: every register is given lowest first to an interval no holder
of it intersects, so the plan has no two values live at once in one
register; visited in start order, an interval graph (straight-line code)
gets exactly MAXLIVE registers when MAXLIVE fits. That it never needs more
registers than the hull scan (:mod:`engine.alloc.linear_scan_hull`) is
measured, not proved (first fit is not monotone in the conflicts it sees):
tests/engine/test_linear_scan.py checks it on the GEMM and MHA samples and
tests/engine/test_allocators.py on random programs.

Examples
--------
A value live before a loop and after it, and a loop temporary in its hole:

>>> from engine.ir.parser import parse
>>> from engine.analysis.liveness import analyze
>>> p = parse('''.kernel k
... .block entry
...   %a:f32 = mov 1
...   st.global %a, 0, %a
...   %b:f32 = mov 2
...   st.global %b, 0, %b
...   %a:f32 = mov 3
...   st.global %a, 0, %a
...   exit
... ''')
>>> base, spilled = scan(analyze(p), 1, np.zeros(2, dtype=bool))
>>> base.tolist(), spilled
([0, 0], [])
"""

from __future__ import annotations

import heapq

import numpy as np

from engine.alloc import register
from engine.alloc.choice import spread
from engine.alloc.common import run_with_spilling, too_small
from engine.alloc.linear_scan_hull import _even


class Intervals:
    """Each value's segments and spill weight, as flat Python lists.

    ``seg_lo[v] .. seg_hi[v]`` index ``seg_s`` / ``seg_e`` (the value's
    segments, by start); ``weight[v]`` is its spill weight.
    """

    def __init__(self, analysis, discount=1.0):
        n = len(analysis.names)
        order = np.lexsort((analysis.seg_start, analysis.seg_value))
        value = analysis.seg_value[order]
        self.seg_s, self.seg_e = analysis.seg_start[order].tolist(), analysis.seg_end[order].tolist()
        counts = np.bincount(value, minlength=n)
        hi = np.cumsum(counts)
        self.seg_lo, self.seg_hi = (hi - counts).tolist(), hi.tolist()
        self.weight = (analysis.spill_weight * discount).tolist()
        lengths = np.asarray(self.seg_e) - np.asarray(self.seg_s) + 1
        self.suffix = (np.cumsum(lengths[::-1])[::-1]).tolist() + [0]  # positions covered from segment k to the end

    def remaining(self, v: int, pos: int) -> int:
        """Positions ``v`` is live at or after ``pos``."""
        k, hi = self.seg_lo[v], self.seg_hi[v]
        s, e = self.seg_s, self.seg_e
        while k < hi and e[k] < pos:
            k += 1
        if k == hi:
            return 0
        return self.suffix[k] - self.suffix[hi] - max(0, pos - s[k])

    def intersects(self, u: int, i: int, v: int) -> bool:
        """Whether ``u``'s segments from index ``i`` on overlap any of ``v``'s."""
        s, e = self.seg_s, self.seg_e
        iu, hu, j, hv = i, self.seg_hi[u], self.seg_lo[v], self.seg_hi[v]
        while iu < hu and j < hv:
            if e[iu] < s[j]:
                iu += 1
            elif e[j] < s[iu]:
                j += 1
            else:
                return True
        return False


def scan(analysis, budget: int, unspillable, values=None, discount=1.0):
    """Linear scan with holes of ``values`` (default: every non-predicate value); (base register per value,
    values to spill). ``discount`` scales each value's spill weight (:func:`engine.alloc.common.remat_discount`).

    Moves between the sets happen at events kept in a heap: an active interval's end of its current
    segment, an inactive one's start of its next; so straight-line code (no holes) costs a heap operation
    per interval, and only the inactive intervals are searched for intersections.
    """
    iv = Intervals(analysis, discount)
    widths, unspill = analysis.widths.tolist(), unspillable.tolist()
    seg_s, seg_e, seg_hi = iv.seg_s, iv.seg_e, iv.seg_hi
    values = np.flatnonzero(analysis.widths > 0) if values is None else np.asarray(values, dtype=np.int64)
    base = [-1] * len(widths)
    at = list(iv.seg_lo)  # each visited value's first segment not yet behind the scan
    full, even = (1 << budget) - 1, _even(budget)
    state = [0] * len(widths)  # 0: not visited or gone, 1: active, 2: inactive
    active_bits = 0
    inactive: set[int] = set()
    # (position, kind, value): where an interval may change set; at one position, the ends of segments (kind 0)
    # before the starts (kind 1), so a register freed and taken again at that position ends up held
    events: list[tuple[int, int, int]] = []
    to_spill: list[int] = []
    push, pop = heapq.heappush, heapq.heappop
    for cur in values[np.lexsort((values, analysis.start[values]))].tolist():
        pos = seg_s[iv.seg_lo[cur]]
        while events and events[0][0] <= pos:
            _, _, u = pop(events)
            if not state[u]:
                continue
            k, h = at[u], seg_hi[u]
            while k < h and seg_e[k] < pos:
                k += 1
            at[u] = k
            bits = ((1 << widths[u]) - 1) << base[u]
            now = 0 if k == h else (1 if seg_s[k] <= pos else 2)
            if state[u] == 1 and now != 1:
                active_bits &= ~bits
            elif state[u] == 2 and now != 2:
                inactive.discard(u)
            if now == 1:
                if state[u] != 1:
                    active_bits |= bits
                push(events, (seg_e[k] + 1, 0, u))
            elif now == 2:
                inactive.add(u)
                push(events, (seg_s[k], 1, u))
            state[u] = now
        occupied = active_bits
        crossing = [u for u in inactive if iv.intersects(u, at[u], cur)]
        for u in crossing:
            occupied |= ((1 << widths[u]) - 1) << base[u]
        width = widths[cur]
        free = ~occupied & full
        if width == 2:
            free &= (free >> 1) & even
        if free:
            r = (free & -free).bit_length() - 1
        else:
            active = _active(state, events)
            r = _blocked(iv, cur, pos, width, budget, active, crossing, base, widths, unspill, analysis)
            if r < 0:
                to_spill.append(cur)
                continue
            for u in active + crossing:
                if base[u] < r + width and r < base[u] + widths[u]:
                    if state[u] == 1:
                        active_bits &= ~(((1 << widths[u]) - 1) << base[u])
                    else:
                        inactive.discard(u)
                    state[u], base[u] = 0, -1
                    to_spill.append(u)
        base[cur] = r
        state[cur] = 1
        active_bits |= ((1 << width) - 1) << r
        push(events, (seg_e[iv.seg_lo[cur]] + 1, 0, cur))
    return np.array(base, dtype=np.int64), to_spill


def _active(state: list, events: list) -> list[int]:
    """The active intervals (each has one pending event in the heap), in a repeatable order."""
    return sorted({u for _, _, u in events if state[u] == 1})


def _blocked(iv, cur, pos, width, budget, active, crossing, base, widths, unspill, analysis) -> int:
    """The register (pair) to free for ``cur``, -1 to spill ``cur`` itself (allocateBlockedReg, by cost).

    Each holder's cost is its spill weight over the positions it is still live; a register's cost is its
    holders'; the cheapest register is freed unless ``cur``'s own cost is no more.
    """
    cost = [0.0] * (budget + 2)
    cost[budget] = cost[budget + 1] = float("inf")
    for u in active + crossing:
        c = float("inf") if unspill[u] else iv.weight[u] / max(iv.remaining(u, pos), 1)
        for k in range(base[u], base[u] + widths[u]):
            cost[k] += c
    if width == 2:  # a pair's holders counted once each: a 64-bit holder sits on both registers
        candidates = []
        for r in range(0, budget - 1, 2):
            holders = {u for u in active + crossing if base[u] < r + 2 and r < base[u] + widths[u]}
            c = sum(float("inf") if unspill[u] else iv.weight[u] / max(iv.remaining(u, pos), 1) for u in holders)
            candidates.append((c, r))
    else:
        candidates = [(cost[r], r) for r in range(budget)]
    cheapest, r = min(candidates) if candidates else (float("inf"), -1)
    own = float("inf") if unspill[cur] else iv.weight[cur] / max(iv.remaining(cur, pos), 1)
    if cheapest == float("inf") and own == float("inf"):
        raise too_small(analysis, budget, cur)
    return -1 if own <= cheapest else r


def _core(analysis, budget, unspillable, discount=1.0):
    return scan(analysis, budget, unspillable, discount=discount)


@register("linear-scan")
def linear_scan(program, analysis, budget, spill_everywhere=False):
    """Linear scan with lifetime holes, spilling the interval whose next use is farthest away (splitting and
    rematerialising unless ``spill_everywhere``: :func:`engine.alloc.common.run_with_spilling`)."""
    return spread(run_with_spilling(program, analysis, budget, "linear-scan", _core, spill_everywhere=spill_everywhere))
