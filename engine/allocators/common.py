"""Machinery shared by the allocators: register choice, spill costs, the spill loop.

Invariant: :func:`run_with_spilling` returns only plans whose every
non-predicate value has a register; each round either colours everything or
spills at least one value that was never spilled before, and spill
temporaries (a spilled value's own short range and its reloads) are never
spilled again, so the loop ends.
"""

from __future__ import annotations

import numpy as np

from engine.errors import AllocationError
from engine.liveness import Analysis, analyze
from engine.plan import Plan, predict
from engine.spill import first_free_slot, insert_spill_code


def lowest_free(forbidden: np.ndarray, width: int) -> int:
    """Lowest register (even for pairs) free in ``forbidden``; -1 if none.

    Examples
    --------
    >>> lowest_free(np.array([True, False, False, True, False, False]), 2)
    4
    """
    if width == 1:
        free = np.flatnonzero(~forbidden)
        return int(free[0]) if len(free) else -1
    even = len(forbidden) - len(forbidden) % 2
    free = np.flatnonzero(~forbidden[0:even:2] & ~forbidden[1:even:2])
    return 2 * int(free[0]) if len(free) else -1


def forbidden_by(base: np.ndarray, widths: np.ndarray, neighbors: np.ndarray, budget: int) -> np.ndarray:
    """Registers held by the coloured values among ``neighbors``."""
    forbidden = np.zeros(budget, dtype=bool)
    nb = neighbors[base[neighbors] >= 0]
    forbidden[base[nb]] = True
    pairs = nb[widths[nb] == 2]
    forbidden[base[pairs] + 1] = True
    return forbidden


def spill_cost(analysis: Analysis, degree: np.ndarray) -> np.ndarray:
    """Chaitin's cost: instructions reading or writing the value, weighted by 10**loop depth, over degree."""
    return analysis.spill_weight / np.maximum(degree, 1)


def too_small(analysis: Analysis, budget: int, v: int) -> AllocationError:
    """The error for a value that cannot get a register and may not be spilled."""
    name = analysis.names[v]
    i = min(int(analysis.start[v]) // 2, len(analysis.program.instructions) - 1)
    return AllocationError(
        f"a budget of {budget} registers is too small for {analysis.program.name}: %{name} "
        f"(a spill temporary) gets no register at instruction {i} "
        f"({analysis.program.instructions[i]}), where {int(analysis.pressure[i])} registers are live")


def run_with_spilling(program, analysis: Analysis, budget: int, name: str, core, execute: bool = True) -> Plan:
    """Call ``core(analysis, budget, unspillable) -> (base, to_spill)`` until nothing spills."""
    spills: dict[str, int] = {}
    unspillable: set[str] = set()
    slot = None
    while True:
        mask = np.fromiter((n in unspillable for n in analysis.names), dtype=bool, count=len(analysis.names))
        base, to_spill = core(analysis, budget, mask)
        if not to_spill:
            break
        new = {}
        slot = first_free_slot(program) if slot is None else slot
        for v in sorted(to_spill):
            new[analysis.names[v]] = slot
            slot += 1
        old = set(program.values)
        program = insert_spill_code(program, new)
        spills.update(new)
        unspillable |= set(new) | (set(program.values) - old)
        analysis = analyze(program)
    plan = Plan(program, _assignment(analysis, base), spills, budget, name)
    return plan.with_(predicted=predict(plan, execute))


def _assignment(analysis: Analysis, base: np.ndarray) -> dict:
    return {n: (b,) if w == 1 else (b, b + 1)
            for n, b, w in zip(analysis.names, base.tolist(), analysis.widths.tolist()) if w > 0}
