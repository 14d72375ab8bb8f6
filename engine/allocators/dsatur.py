"""DSatur (Brélaz 1979): colour the most saturated value first.

The seed document's "saturation ordering". Invariant: the next value
coloured is the uncoloured one whose neighbours already block the most
distinct registers (ties: most neighbours, then lowest number), and it takes
the lowest free register (an even pair for 64-bit values). When none is
free, the cheapest of it and its coloured neighbours (Chaitin's cost rule:
weighted uses and definitions over degree) is spilled, and the value
retries; the allocation is repeated on the program with spill code.
"""

from __future__ import annotations

import numpy as np

from engine.allocators import register
from engine.allocators.common import lowest_free, run_with_spilling, spill_cost, too_small


class _DSatur:
    def __init__(self, analysis, budget, unspillable):
        self.a, self.g, self.w = analysis, analysis.interference, analysis.widths
        self.budget, self.unspillable = budget, unspillable
        n = len(self.w)
        self.base = np.full(n, -1, dtype=np.int64)
        self.seen = np.zeros((n, budget), dtype=bool)
        self.sat = np.zeros(n, dtype=np.int64)
        self.cost = spill_cost(analysis, self.g.degree)
        self.to_spill: list[int] = []

    def block(self, v: int) -> None:
        nb = self.g.neighbors(v)
        for r in range(self.base[v], self.base[v] + self.w[v]):
            fresh = nb[~self.seen[nb, r]]
            self.seen[fresh, r] = True
            self.sat[fresh] += 1

    def unblock(self, c: int) -> None:
        for u in self.g.neighbors(c).tolist():
            self.seen[u] = False
            nb = self.g.neighbors(u)
            for x in nb[self.base[nb] >= 0].tolist():
                self.seen[u, self.base[x] : self.base[x] + self.w[x]] = True
            self.sat[u] = int(self.seen[u].sum())

    def colour(self, v: int) -> None:
        while True:
            r = lowest_free(self.seen[v], int(self.w[v]))
            if r >= 0:
                self.base[v] = r
                self.block(v)
                return
            c = self.victim(v)
            self.to_spill.append(c)
            if c == v:
                return
            self.base[c] = -1
            self.unblock(c)

    def victim(self, v: int) -> int:
        nb = self.g.neighbors(v)
        candidates = [u for u in nb[self.base[nb] >= 0].tolist() if not self.unspillable[u]]
        if not self.unspillable[v]:
            candidates.append(v)
        if not candidates:
            raise too_small(self.a, self.budget, v)
        return min(candidates, key=lambda u: (self.cost[u], u))

    def run(self):
        todo = self.w > 0
        n = len(self.w)
        degree = self.g.degree
        for _ in range(int(todo.sum())):
            key = np.where(todo, self.sat * (n + 1) + degree, -1)
            v = int(np.argmax(key))
            todo[v] = False
            self.colour(v)
        return self.base, self.to_spill


def _core(analysis, budget, unspillable):
    return _DSatur(analysis, budget, unspillable).run()


@register("dsatur")
def dsatur(program, analysis, budget):
    """DSatur colouring, spilling by Chaitin's cost rule when the budget is exceeded."""
    return run_with_spilling(program, analysis, budget, "dsatur", _core)
