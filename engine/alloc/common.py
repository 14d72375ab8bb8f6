"""Machinery shared by the allocators: register choice, spill costs, the spill loop.

Invariant: :func:`run_with_spilling` returns only allocations whose every
non-predicate value has a register and every spill slot in
0..MAX_SPILL_SLOT (the plan loader's range), and measures nothing (figures are
engine.predict's stage); each round either colours everything or
spills at least one value that was never spilled before, and spill
temporaries (a spilled value's own short range and its reloads) are never
spilled again, so the loop ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.analysis.liveness import Analysis
from engine.analysis.respill import analyze_spilled
from engine.base.errors import AllocationError
from engine.base.limits import MAX_SPILL_SLOT
from engine.ir.core import Program
from engine.ir.spill import SpillCode, first_free_slot, spill_insertion
from engine.plan import Plan


@dataclass(frozen=True)
class Allocation:
    """What an allocator returns: its program with spill code, the assignment and the spill slots.

    Attributes
    ----------
    allocator, budget : who made it and under which register budget
    program : the program, spill code included
    assignment : value name -> register indices (every non-predicate value)
    spills : spilled value -> local-memory slot
    original : the allocator's input program (``program`` before its spill code)
    spill_code : where the spill code of ``program`` is
    analysis : the liveness analysis of ``program``, computed on the way (the caller's, for its figures)
    original_analysis : the analysis of ``original`` the allocator was given (its MAXLIVE is the program's)
    notes : what the allocator says of its result, one line each (``optimal``: proved, or its bound and gap)
    """

    allocator: str
    budget: int
    program: Program
    assignment: dict
    spills: dict
    original: Program
    spill_code: SpillCode
    analysis: Analysis
    original_analysis: Analysis
    notes: tuple[str, ...] = ()

    def plan(self, **fields) -> Plan:
        """The allocation as a plan (``fields``: workload, options, predicted)."""
        return Plan(self.program, self.assignment, self.spills, self.budget, self.allocator, **fields)


class NeighbourRegisters:
    """Which registers each value's coloured neighbours hold: ``count[r, v]`` of them hold ``r``.

    The table is register-major: colouring a value with ``r`` touches one
    row, ``count[r]``, at its neighbours' numbers (a gather and a scatter on
    one contiguous row, no per-entry offsets), which is the operation every
    colouring step makes; finding a value's lowest free register reads its
    column. The two rows past the budget always count as held, so a search
    never runs off the end and a pair never straddles the budget.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n"
    ...                   "  st.global %x, 0, %y\\n  exit\\n"))
    >>> taken = NeighbourRegisters(a.interference, 4)
    >>> _ = taken.mark(0, 0, 1, 1)
    >>> taken.lowest(1, 1), taken.lowest(1, 2)
    (1, 2)
    """

    def __init__(self, graph, budget: int, counts: bool = True):
        self.budget, self._counts = budget, counts
        narrow = graph.degree.max(initial=0) < 1 << 15  # a count never exceeds the degree
        dtype = (np.int16 if narrow else np.int32) if counts else bool  # without counts: held or not, never released
        self.count = np.zeros((budget + 2, len(graph.widths)), dtype=dtype)
        self.count[budget:] = 1
        self.indices, self.bounds = graph.indices, graph.indptr.tolist()

    def lowest(self, v: int, width: int) -> int:
        """Lowest register (even for pairs) no coloured neighbour of ``v`` holds; -1 if none."""
        column = self.count[:, v]
        if width == 1:
            r = int(column.argmin())
            return r if column[r] == 0 else -1
        pairs = column[0 : self.budget + 1 : 2] + column[1 : self.budget + 2 : 2]
        r = int(pairs.argmin())
        return 2 * r if pairs[r] == 0 else -1

    def first_fit(self, order, widths: list[int]) -> tuple[np.ndarray, list[int]]:
        """Give each value of ``order`` in turn its lowest free register; the registers, and the values left without.

        Examples
        --------
        >>> from engine.ir.parser import parse
        >>> from engine.analysis.liveness import analyze
        >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n"
        ...                   "  st.global %x, 0, %y\\n  exit\\n"))
        >>> base, failed = NeighbourRegisters(a.interference, 1, counts=False).first_fit([0, 1], [1, 1])
        >>> base.tolist(), failed
        ([0, -1], [1])
        """
        count, indices, bounds, counts = self.count, self.indices, self.bounds, self._counts
        base, failed = np.full(count.shape[1], -1, dtype=np.int64), []
        for v in order:
            if widths[v] == 1:  # the common case, without a call to lowest()
                column = count[:, v]
                r = int(column.argmin())
                if column[r]:
                    failed.append(v)
                    continue
                if counts:
                    count[r, indices[bounds[v] : bounds[v + 1]]] += 1
                else:
                    count[r, indices[bounds[v] : bounds[v + 1]]] = True
            else:
                r = self.lowest(v, widths[v])
                if r < 0:
                    failed.append(v)
                    continue
                self.take(v, r, widths[v])
            base[v] = r
        return base, failed

    def take(self, v: int, r: int, width: int) -> None:
        """``v`` now holds ``r`` (and ``r + 1`` for a pair): its neighbours see them held."""
        nb = self.indices[self.bounds[v] : self.bounds[v + 1]]
        for k in range(width):
            self._hold(self.count[r + k], nb)

    def _hold(self, row: np.ndarray, nb: np.ndarray) -> None:
        if self._counts:
            row[nb] += 1
        else:
            row[nb] = True

    def mark(self, v: int, r: int, width: int, step: int) -> list[np.ndarray]:
        """Add ``step`` (1 or -1) to the neighbours' counts of ``v``'s registers; the counts before, per register."""
        nb = self.indices[self.bounds[v] : self.bounds[v + 1]]
        before = []
        for k in range(width):
            row = self.count[r + k]
            old = row[nb]
            row[nb] = old + step
            before.append(old)
        return before


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


def run_with_spilling(program, analysis: Analysis, budget: int, name: str, core) -> Allocation:
    """Call ``core(analysis, budget, unspillable) -> (base, to_spill)`` until nothing spills."""
    original, original_analysis, code = program, analysis, SpillCode({}, (), (), {})
    unspillable: set[str] = set()
    slot = None
    while True:
        mask = np.fromiter((n in unspillable for n in analysis.names), dtype=bool, count=len(analysis.names))
        base, to_spill = core(analysis, budget, mask)
        if not to_spill:
            break
        new = {}
        slot = first_free_slot(program) if slot is None else slot
        _check_slots(program, name, slot, len(to_spill))
        for v in sorted(to_spill):
            new[analysis.names[v]] = slot
            slot += 1
        insertion = spill_insertion(program, new, _touching(analysis, to_spill), code)
        program, code = insertion.program, insertion.code
        unspillable |= set(new) | insertion.copies
        analysis = analyze_spilled(analysis, insertion)
    return Allocation(name, budget, program, _assignment(analysis, base), dict(code.spills), original, code, analysis,
                      original_analysis)


def _check_slots(program: Program, name: str, first: int, count: int) -> None:
    """Refuse to spill past the last slot a plan may name (a plan with it could not be loaded)."""
    if first + count - 1 > MAX_SPILL_SLOT:
        raise AllocationError(f"{name}: {program.name} would spill to slots {first}..{first + count - 1}, beyond "
                              f"{MAX_SPILL_SLOT}, the last slot a plan may name (512 KiB of local memory per thread)")


def _touching(analysis: Analysis, values) -> list[int]:
    """Sorted linear indices of the instructions that read or write any of ``values``."""
    hit = np.zeros(len(analysis.names), dtype=bool)
    hit[list(values)] = True
    occ = analysis.occurrences
    return np.unique(occ[hit[occ[:, 1]], 0]).tolist()


def _assignment(analysis: Analysis, base: np.ndarray) -> dict:
    return {n: (b,) if w == 1 else (b, b + 1)
            for n, b, w in zip(analysis.names, base.tolist(), analysis.widths.tolist()) if w > 0}
