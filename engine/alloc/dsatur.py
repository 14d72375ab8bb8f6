"""DSatur (Brélaz 1979): colour the most saturated value first.

The design note's "saturation ordering". Invariant: the next value
coloured is the uncoloured one whose neighbours already block the most
distinct registers (ties: most neighbours, then lowest number), and it takes
the lowest free register (an even pair for 64-bit values). When none is
free, the cheapest of it and its coloured neighbours (Chaitin's cost rule:
instructions reading or writing it, weighted by 10**loop depth, over degree) is spilled, and the value
retries; the allocation is repeated on the program with spill code. At the
count it needs, :func:`engine.alloc.choice.spread` then gives each value the
free register freed longest ago instead of the lowest.
"""

from __future__ import annotations

import numpy as np

from engine.alloc import register
from engine.alloc.choice import spread
from engine.alloc.common import (
    NeighbourRegisters,
    run_with_spilling,
    spill_cost,
    too_small,
)


class _DSatur:
    """State of one colouring: a :class:`NeighbourRegisters` table of the coloured values' registers.

    ``key`` orders the uncoloured values: saturation (distinct registers
    their coloured neighbours block) times ``n + 1``, plus degree; values
    already coloured or spilled sit at ``done``.
    """

    def __init__(self, analysis, budget, unspillable, discount=1.0):
        self.a, self.g, self.w = analysis, analysis.interference, analysis.widths.tolist()
        self.budget, self.unspillable = budget, unspillable
        self.base = np.full(len(self.w), -1, dtype=np.int64)
        self.taken = NeighbourRegisters(self.g, budget)
        self.cost = spill_cost(analysis, self.g.degree) * discount
        # 32 bits hold every key (argmax runs faster on them) unless saturation times n + 1 could reach 2**29;
        # a value coloured or spilled sits at ``done``: below any real key, however often it is raised after
        dtype = np.int64 if (budget + 1) * (len(self.w) + 1) >= 1 << 29 else np.int32
        self.done = np.iinfo(dtype).min // 2
        self.key = np.where(analysis.widths > 0, self.g.degree, self.done).astype(dtype)
        self.to_spill: list[int] = []

    def _mark(self, v: int, step: int) -> None:
        """Colour (``step`` 1) or uncolour (-1) ``v``: neighbours newly (un)blocked change saturation."""
        nb = self.g.neighbors(v)
        for before in self.taken.mark(v, int(self.base[v]), self.w[v], step):
            self.key[nb[before == (0 if step > 0 else 1)]] += step * (len(self.w) + 1)

    def colour(self, v: int) -> None:
        while True:
            r = self.taken.lowest(v, self.w[v])
            if r >= 0:
                self.base[v] = r
                self._mark(v, 1)
                return
            c = self.victim(v)
            self.to_spill.append(c)
            if c == v:
                return
            self._mark(c, -1)
            self.base[c] = -1

    def victim(self, v: int) -> int:
        """The cheapest of ``v`` and its coloured neighbours that may be spilled (ties: lowest number)."""
        nb = self.g.neighbors(v)
        candidates = np.sort(nb[(self.base[nb] >= 0) & ~self.unspillable[nb]])
        if not self.unspillable[v]:
            candidates = np.append(candidates, v)
        if not len(candidates):
            raise too_small(self.a, self.budget, v)
        costs = self.cost[candidates]
        tied = candidates[costs == costs.min()]
        return int(tied.min())

    def run(self):
        key, taken, w, base, done = self.key, self.taken, self.w, self.base, self.done
        count, bounds, indices, raised = taken.count, self.g.indptr.tolist(), self.g.indices, len(w) + 1
        for _ in range(sum(1 for width in w if width > 0)):
            v = int(key.argmax())
            key[v] = done
            if w[v] == 1:  # the common case, taken.lowest and taken.mark written out
                column = count[:, v]
                r = int(column.argmin())
                if column[r]:  # no register free: spill by cost, then retry
                    self.colour(v)
                    continue
                base[v] = r
                nb, row = indices[bounds[v] : bounds[v + 1]], count[r]
                before = row[nb]
                row[nb] = before + 1
                key[nb[before == 0]] += raised
                continue
            r = taken.lowest(v, w[v])
            if r < 0:
                self.colour(v)
                continue
            base[v] = r
            nb = indices[bounds[v] : bounds[v + 1]]
            for before in taken.mark(v, r, w[v], 1):
                key[nb[before == 0]] += raised
        return base, self.to_spill


def _core(analysis, budget, unspillable, discount=1.0):
    return _DSatur(analysis, budget, unspillable, discount).run()


@register("dsatur")
def dsatur(program, analysis, budget, spill_everywhere=False):
    """DSatur colouring, spilling by Chaitin's cost rule when the budget is exceeded (splitting and
    rematerialising unless ``spill_everywhere``: :func:`engine.alloc.common.run_with_spilling`)."""
    return spread(run_with_spilling(program, analysis, budget, "dsatur", _core, spill_everywhere=spill_everywhere))
