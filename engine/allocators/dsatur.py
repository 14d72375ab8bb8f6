"""DSatur (Brélaz 1979): colour the most saturated value first.

The seed document's "saturation ordering". Invariant: the next value
coloured is the uncoloured one whose neighbours already block the most
distinct registers (ties: most neighbours, then lowest number), and it takes
the lowest free register (an even pair for 64-bit values). When none is
free, the cheapest of it and its coloured neighbours (Chaitin's cost rule:
instructions reading or writing it, weighted by 10**loop depth, over degree) is spilled, and the value
retries; the allocation is repeated on the program with spill code.
"""

from __future__ import annotations

import numpy as np

from engine.allocators import register
from engine.allocators.common import lowest_free, run_with_spilling, spill_cost, too_small


class _DSatur:
    """State of one colouring: ``blocked[r, u]`` counts u's coloured neighbours holding r.

    ``key`` orders the uncoloured values (saturation, then degree) and is -1
    for values already coloured or spilled.
    """

    def __init__(self, analysis, budget, unspillable):
        self.a, self.g, self.w = analysis, analysis.interference, analysis.widths
        self.budget, self.unspillable = budget, unspillable
        n = len(self.w)
        self.base = np.full(n, -1, dtype=np.int64)
        self.blocked = np.zeros((budget, n), dtype=np.int32)
        self.sat = np.zeros(n, dtype=np.int64)
        self.cost = spill_cost(analysis, self.g.degree)
        self.to_spill: list[int] = []

    def _mark(self, v: int, step: int) -> None:
        nb = self.g.neighbors(v)
        for r in range(self.base[v], self.base[v] + self.w[v]):
            row = self.blocked[r]
            before = row[nb]
            row[nb] = before + step
            changed = nb[before == (0 if step > 0 else 1)]
            self.sat[changed] += step
            self.key[changed] += step * (len(self.w) + 1) * (self.key[changed] >= 0)

    def block(self, v: int) -> None:
        self._mark(v, 1)

    def unblock(self, c: int) -> None:
        self._mark(c, -1)

    def colour(self, v: int) -> None:
        while True:
            r = lowest_free(self.blocked[:, v] > 0, int(self.w[v]))
            if r >= 0:
                self.base[v] = r
                self.block(v)
                return
            c = self.victim(v)
            self.to_spill.append(c)
            if c == v:
                return
            self.unblock(c)
            self.base[c] = -1

    def victim(self, v: int) -> int:
        nb = self.g.neighbors(v)
        candidates = [u for u in nb[self.base[nb] >= 0].tolist() if not self.unspillable[u]]
        if not self.unspillable[v]:
            candidates.append(v)
        if not candidates:
            raise too_small(self.a, self.budget, v)
        return min(candidates, key=lambda u: (self.cost[u], u))

    def run(self):
        todo = int((self.w > 0).sum())
        self.key = np.where(self.w > 0, self.g.degree, -1).astype(np.int64)
        for _ in range(todo):
            v = int(np.argmax(self.key))
            self.key[v] = -1
            self.colour(v)
        return self.base, self.to_spill


def _core(analysis, budget, unspillable):
    return _DSatur(analysis, budget, unspillable).run()


@register("dsatur")
def dsatur(program, analysis, budget, execute=True):
    """DSatur colouring, spilling by Chaitin's cost rule when the budget is exceeded."""
    return run_with_spilling(program, analysis, budget, "dsatur", _core, execute)
