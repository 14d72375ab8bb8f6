"""Chaitin-Briggs graph colouring: simplify, optimistic select, spill by cost.

Invariant: simplify always removes the value that is easiest to colour (the
smallest squeeze: the registers its remaining neighbours can block, against
what it can choose from), so on an interval graph the removal order is a
smallest-last order and select uses exactly MAXLIVE registers when MAXLIVE
fits the budget. When every remaining value is significant, the one of
least cost is pushed optimistically (Briggs); it is spilled only if select
then finds no register for it, and the allocation is repeated on the
program with its spill code until it colours. At the count it needs,
:func:`engine.alloc.choice.spread` then gives each value the free register
freed longest ago instead of the lowest.

The cost (issue 24) is what spilling the value would run, over its degree:
a reload per instruction reading it and a store per instruction writing it,
each weighted by how often its block runs (the product of the trip counts
of the loops around it, :func:`engine.alloc.common.block_frequency`; a loop
of unreadable count counts 10), and infinite for a value whose segments all
end by the next instruction (spilling it frees nothing). It replaced
Chaitin's occurrences by 10**loop depth, which counts an instruction reading
a value twice as two reloads and a 2-trip loop as 10: on the 16 programs at
budgets 32 / 64 / 96 of tests/bench/bench_allocators.py, executed spill
instructions went from 1,883,037 / 1,322,788 / 908,535 to 1,872,156 /
1,312,020 / 908,728 and static ones from 22,741 / 14,180 / 8,994 to 22,782 /
13,572 / 8,425 (GEMM 8x8x8 load-all-first at 96: 1,313 to 783; 14 of 48
cases got better and 7 worse, the worst GEMM 5x7x11 k-outer at 32, 624 to 882).
"""

from __future__ import annotations

import numpy as np

from engine.alloc import register
from engine.alloc.choice import spread
from engine.alloc.common import (
    NeighbourRegisters,
    block_frequency,
    executed_spill_cost,
    run_with_spilling,
    too_small,
)
from engine.analysis.interference import flat_ranges

#: key of a value already removed: above any real key, however often it is decremented (by at most its degree)
_DONE = 1 << 30


def _squeeze(g, w, budget):
    """Each value's squeeze (the key simplify minimises) and, per adjacency entry, what removing the row's value takes off it.

    A 32-bit value's squeeze is its neighbours' total width minus the budget;
    a pair's is its neighbour count minus the pairs available. Pairs are few,
    so both come from the pairs' rows alone: a value's neighbours weigh its
    degree plus its pair neighbours (by symmetry, the pairs' entries at it),
    and only a pair's entries at 32-bit values take two off.
    """
    deg = g.degree
    wide = np.flatnonzero(w == 2)
    at = flat_ranges(g.indptr[wide], g.indptr[wide + 1])  # the adjacency entries of the pairs' rows
    wsum = deg + np.bincount(g.indices[at], minlength=len(w))
    key = np.where(w == 1, wsum - budget, deg - budget // 2)
    # removing a pair takes two off a 32-bit neighbour's squeeze, anything else one
    decrement = np.ones(len(g.indices), dtype=np.int8)
    decrement[at] += w[g.indices[at]] == 1
    # 32 bits hold any key: a value's key moves by at most its degree; argmin and updates run faster on them
    return (key.astype(np.int32) if len(w) < 1 << 28 else key), decrement


def _squeeze_reference(g, w, budget):
    """:func:`_squeeze` from every adjacency entry (the plain version the tests compare it with)."""
    deg = g.degree
    neighbour_width = w.astype(np.int32)[g.indices]
    total = np.zeros(len(neighbour_width) + 1, dtype=np.int64)
    np.cumsum(neighbour_width, out=total[1:])
    wsum = total[g.indptr[1:]] - total[g.indptr[:-1]]
    key = np.where(w == 1, wsum - budget, deg - budget // 2)
    decrement = np.repeat(w == 2, deg)
    decrement &= neighbour_width == 1
    decrement = decrement.view(np.int8) + np.int8(1)
    return (key.astype(np.int32) if len(w) < 1 << 28 else key), decrement


def _simplify(analysis, budget, unspillable, frequency=None, discount=1.0) -> list[int]:
    g, w = analysis.interference, analysis.widths
    key, decrement = _squeeze(g, w, budget)
    remaining = w > 0
    key[~remaining] = _DONE
    cost = np.where(remaining & ~unspillable, executed_spill_cost(analysis, frequency) * discount / np.maximum(g.degree, 1),
                    np.inf)
    bounds, indices, stack = g.indptr.tolist(), g.indices, []
    for _ in range(int(remaining.sum())):
        v = int(key.argmin())
        if key[v] >= 0:  # every value left is significant: push the cheapest optimistically
            cheapest = int(cost.argmin())
            v = cheapest if cost[cheapest] < np.inf else v
        stack.append(v)
        key[v], cost[v] = _DONE, np.inf
        lo, hi = bounds[v], bounds[v + 1]
        key[indices[lo:hi]] -= decrement[lo:hi]
    return stack


def _core(analysis, budget, unspillable, discount=1.0, frequency=None):
    taken = NeighbourRegisters(analysis.interference, budget, counts=False)
    order = reversed(_simplify(analysis, budget, unspillable, frequency, discount))
    base, failed = taken.first_fit(order, analysis.widths.tolist())
    for v in failed:
        if unspillable[v]:
            raise too_small(analysis, budget, v)
    return base, failed


@register("chaitin-briggs")
def chaitin_briggs(program, analysis, budget, spill_everywhere=False):
    """Chaitin-Briggs colouring with optimistic select and cost-based spilling (splitting and rematerialising
    unless ``spill_everywhere``: :func:`engine.alloc.common.run_with_spilling`)."""
    frequency = block_frequency(program)  # spill code adds no block: one estimate serves every round
    return spread(run_with_spilling(program, analysis, budget, "chaitin-briggs",
                                    lambda a, b, u, d: _core(a, b, u, d, frequency), spill_everywhere=spill_everywhere))
