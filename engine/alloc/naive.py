"""The naive allocator: a fresh register for every value, never reused.

This is the "linear, no reuse" scheme the design note criticises: values
take registers 0, 1, 2, ... in definition order (pairs rounded up to even)
and keep them for the whole kernel. Invariant: no two program values ever
share a register. When the budget runs out, the remaining values are
spilled; spill temporaries (each live for one instruction) take a scratch
area at the top of the budget, reused between instructions, because
without reuse no spilled program could ever fit.
"""

from __future__ import annotations

import numpy as np

from engine.alloc import register
from engine.alloc.common import run_with_spilling
from engine.alloc.linear_scan_hull import scan


def _scratch_need(analysis, spilled: np.ndarray) -> int:
    """Registers the spill temporaries of ``spilled`` values will need at once.

    At each instruction: the reloads of its spilled operands plus its spilled
    results; one more if any is a pair (alignment).
    """
    occ = analysis.occurrences
    hit = spilled[occ[:, 1]]
    if not hit.any():
        return 0
    need = np.bincount(occ[hit, 0], weights=analysis.widths[occ[hit, 1]]).max()
    return int(need) + int((analysis.widths[occ[hit, 1]] == 2).any())


def _fresh(widths, candidates, floor):
    """Fresh registers in definition order below ``floor``; the values that do not fit."""
    base = {}
    nxt = 0
    rest = []
    for v in candidates:
        r = nxt + nxt % 2 if widths[v] == 2 else nxt
        if r + widths[v] <= floor:
            base[v], nxt = r, r + widths[v]
        else:
            rest.append(v)
    return base, rest


def _core(analysis, budget, unspillable, discount=None):  # spills what does not fit, whatever it costs
    widths = analysis.widths.tolist()
    temps = np.flatnonzero(unspillable & (analysis.widths > 0))
    base, to_spill = scan(analysis, budget, temps, unspillable, high=True)
    floor = int(base[temps].min()) if len(temps) else budget
    candidates = np.flatnonzero(~unspillable & (analysis.widths > 0)).tolist()
    fresh, rest = _fresh(widths, candidates, floor)
    while rest and not len(temps):
        # First round: reserve the scratch area the spill code will need, so
        # that the next round does not have to spill again.
        spilled = np.zeros(len(widths), dtype=bool)
        spilled[rest] = True
        lower = budget - _scratch_need(analysis, spilled)
        if lower >= floor:
            break
        floor = lower
        fresh, rest = _fresh(widths, candidates, floor)
    for v, r in fresh.items():
        base[v] = r
    return base, to_spill + rest


@register("naive")
def naive(program, analysis, budget, spill_everywhere=False):
    """One fresh register per value in definition order, never reused; its spill slots are never shared
    either (the scheme reuses nothing; sharing would also cost it more than it allocates, with thousands of
    values spilled)."""
    return run_with_spilling(program, analysis, budget, "naive", _core, share_slots=False, spill_everywhere=spill_everywhere)


def naive_demand(analysis) -> int:
    """Registers the naive scheme needs with no budget: every value its own, pairs even-aligned."""
    widths = analysis.widths.tolist()
    fresh, _ = _fresh(widths, [v for v, w in enumerate(widths) if w > 0], float("inf"))
    return max((r + widths[v] for v, r in fresh.items()), default=0)
