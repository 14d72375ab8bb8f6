"""The naive allocator: a fresh register for every value, never reused.

This is the "linear, no reuse" scheme the seed document criticises: values
take registers 0, 1, 2, ... in definition order (pairs rounded up to even)
and keep them for the whole kernel. Invariant: no two program values ever
share a register. When the budget runs out, the remaining values are
spilled; spill temporaries (each live for one instruction) take a scratch
area at the top of the budget, reused between instructions, because
without reuse no spilled program could ever fit.
"""

from __future__ import annotations

import numpy as np

from engine.allocators import register
from engine.allocators.common import run_with_spilling
from engine.allocators.linear_scan import scan


def _core(analysis, budget, unspillable):
    widths = analysis.widths
    temps = np.flatnonzero(unspillable & (widths > 0))
    base, to_spill = scan(analysis, budget, temps, unspillable, high=True)
    floor = int(base[temps].min()) if len(temps) else budget
    nxt = 0
    for v in np.flatnonzero(~unspillable & (widths > 0)).tolist():
        r = nxt + nxt % 2 if widths[v] == 2 else nxt
        if r + widths[v] <= floor:
            base[v], nxt = r, r + widths[v]
        else:
            to_spill.append(v)
    return base, to_spill


@register("naive")
def naive(program, analysis, budget):
    """One fresh register per value in definition order, never reused."""
    return run_with_spilling(program, analysis, budget, "naive", _core)
