"""Chaitin-Briggs graph colouring: simplify, optimistic select, spill by cost.

Invariant: simplify always removes the value that is easiest to colour (the
smallest squeeze: the registers its remaining neighbours can block, against
what it can choose from), so on an interval graph the removal order is a
smallest-last order and select uses exactly MAXLIVE registers when MAXLIVE
fits the budget. When every remaining value is significant, the one of
least cost (instructions reading or writing it, weighted by 10**loop depth, over its
degree) is pushed optimistically (Briggs); it is spilled only if select
then finds no register for it, and the allocation is repeated on the
program with its spill code until it colours.
"""

from __future__ import annotations

import numpy as np

from engine.allocators import register
from engine.allocators.common import forbidden_by, lowest_free, run_with_spilling, spill_cost, too_small


def _simplify(analysis, budget, unspillable) -> list[int]:
    g, w = analysis.interference, analysis.widths
    remaining = w > 0
    count = g.degree.astype(np.int64)
    n = len(w)
    wsum = (np.bincount(g.edges[:, 0], weights=w[g.edges[:, 1]], minlength=n)
            + np.bincount(g.edges[:, 1], weights=w[g.edges[:, 0]], minlength=n)).astype(np.int64)
    key = np.where(w == 1, wsum - budget, count - budget // 2)
    big = np.iinfo(np.int64).max
    key[~remaining] = big
    cost = spill_cost(analysis, count)
    stack = []
    for _ in range(int(remaining.sum())):
        v = int(np.argmin(key))
        if key[v] >= 0:
            v = _cheapest(cost, remaining & ~unspillable, v)
        stack.append(v)
        remaining[v] = False
        key[v] = big
        nb = g.neighbors(v)
        nb = nb[remaining[nb]]
        key[nb] -= np.where(w[nb] == 1, w[v], 1)
    return stack


def _cheapest(cost, candidates, fallback: int) -> int:
    if not candidates.any():
        return fallback
    masked = np.where(candidates, cost, np.inf)
    return int(np.argmin(masked))


def _core(analysis, budget, unspillable):
    g, w = analysis.interference, analysis.widths
    base = np.full(len(w), -1, dtype=np.int64)
    to_spill = []
    for v in reversed(_simplify(analysis, budget, unspillable)):
        r = lowest_free(forbidden_by(base, w, g.neighbors(v), budget), int(w[v]))
        if r >= 0:
            base[v] = r
        elif unspillable[v]:
            raise too_small(analysis, budget, v)
        else:
            to_spill.append(v)
    return base, to_spill


@register("chaitin-briggs")
def chaitin_briggs(program, analysis, budget, execute=True):
    """Chaitin-Briggs colouring with optimistic select and cost-based spilling."""
    return run_with_spilling(program, analysis, budget, "chaitin-briggs", _core, execute)
