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

import dataclasses
from dataclasses import dataclass

import numpy as np

from engine.analysis.liveness import Analysis
from engine.analysis.respill import analyze_spilled
from engine.base.errors import AllocationError, RegtuneError
from engine.base.limits import MAX_SPILL_SLOT
from engine.ir.cfg import block_frequencies
from engine.ir.core import Program
from engine.ir.spill import SpillCode, first_free_slot, remat_definitions, renumber_slots, spill_insertion
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


#: trips assumed for a loop whose count cannot be read (Chaitin's 10 per loop level)
UNKNOWN_TRIPS = 10


def block_frequency(program: Program) -> np.ndarray:
    """How often each block runs, estimated: :func:`engine.ir.cfg.block_frequencies` (the product of the trip
    counts of the loops around it; a loop whose count cannot be read counts :data:`UNKNOWN_TRIPS`), as an
    array; all ones for a program whose loops have no structure to read.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block l\\n  %i:i32 = add %i, 1\\n"
    ...           "  %p:pred = setp.lt %i, 6\\n  cbr %p, l, e\\n.block e\\n  exit\\n")
    >>> block_frequency(p).tolist()
    [1.0, 6.0, 1.0]
    """
    try:
        return np.asarray(block_frequencies(program, UNKNOWN_TRIPS), dtype=float)
    except RegtuneError:            # no loop structure to read: every block once
        return np.ones(len(program.blocks))


def executed_spill_cost(analysis: Analysis, frequency: np.ndarray | None = None) -> np.ndarray:
    """Spill instructions each value would run if spilled everywhere: a reload per instruction reading it
    and a store per instruction writing it (a guarded write reloads first too), each run as often as its
    block (``frequency``: :func:`block_frequency` of the analysed program, computed when not given).
    A value whose every segment ends by the next instruction's read gains nothing from a spill (its pieces
    would be as long): infinite.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block a\\n  %x:f32 = mov 1\\n  %i:i32 = mov 0\\n.block l\\n  %i:i32 = add %i, 1\\n"
    ...           "  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n"
    ...           "  %p:pred = setp.lt %i, 4\\n  cbr %p, l, e\\n.block e\\n  exit\\n")
    >>> a = analyze(p)
    >>> dict(zip(a.names, executed_spill_cost(a).tolist()))["x"]
    5.0
    """
    program = analysis.program
    if frequency is None:
        frequency = block_frequency(program)
    per_ins = np.repeat(frequency, [len(b.instructions) for b in program.blocks])
    n = len(analysis.names)
    reads, defs = analysis.operand_reads, analysis.definitions
    # one reload per instruction reading the value, however often it reads it
    codes = np.unique(reads[:, 0] * max(n, 1) + reads[:, 1]) if len(reads) else np.zeros(0, dtype=np.int64)
    cost = np.bincount(codes % max(n, 1), weights=per_ins[codes // max(n, 1)], minlength=n).astype(float)  # empty: ints
    guarded = np.array([ins.guard is not None for ins in program.instructions], dtype=bool)
    if len(defs):
        cost += np.bincount(defs[:, 1], weights=per_ins[defs[:, 0]] * (1 + guarded[defs[:, 0]]), minlength=n)
    length = analysis.seg_end - analysis.seg_start
    longest = np.zeros(n, dtype=np.int64)
    np.maximum.at(longest, analysis.seg_value, length)
    cost[longest <= 1] = np.inf
    return cost


#: what rematerialising a value costs per instruction of its recomputation, against one spill instruction (a
#: reload or a store, which goes down the memory pipe and waits for L1 at best, ~30 cycles): an integer
#: instruction is fixed-latency (4-6 cycles on sm_80, the [latency] tables of resources/arch) and needs no
#: store, so a quarter, roughly
REMAT_COST = 0.25
#: cheaper still: a parameter read or a constant is an operand the consumer takes as it is (SASS reads kernel
#: parameters from constant bank 0, c[0x0][...], and immediates from the instruction word: no instruction of
#: its own where the consumer accepts one); a special register is an S2R, which waits on a scoreboard like a
#: load (its figure in resources/arch's [latency] tables is in the memory class)
REMAT_LEAF_COST = {"param": 0.05, "mov": 0.05, "sreg": 0.5}
#: the longest recomputation (instructions) the allocators rematerialise instead of spilling
MAX_REMAT_CHAIN = 3
#: how near (instructions of the program, one block) a spilled value's next read must be to its last reload
#: for that reload to serve it too (:func:`engine.ir.spill.spill_insertion`'s ``reuse``)
RELOAD_REUSE = 32


def remat_chains(program: Program, origin: dict | None = None) -> dict[str, tuple[int, float]]:
    """Each rematerialisable value of ``program`` (:func:`engine.ir.spill.remat_definitions`) -> (the
    instructions that compute it again: its definition and, once each, those of the values it reads; their
    cost against one spill instruction, :data:`REMAT_COST` and :data:`REMAT_LEAF_COST`).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %t:i32 = sreg.tid.x\\n"
    ...           "  %o:u64 = mul.wide.s32 %t, 4\\n  %a:u64 = add %pa, %o\\n  st.global %a, 0, %t\\n  exit\\n")
    >>> remat_chains(p)
    {'pa': (1, 0.05), 't': (1, 0.5), 'o': (2, 0.75), 'a': (4, 1.05)}
    """
    definitions = remat_definitions(program, origin)
    chains: dict[str, frozenset] = {}

    def chain(name: str) -> frozenset:
        if name not in chains:
            reads = [op.name for op in definitions[name].operands if hasattr(op, "name")]
            chains[name] = frozenset({name}).union(*(chain(u) for u in reads))
        return chains[name]

    def cost(name: str) -> float:
        opcode = definitions[name].opcode
        return REMAT_LEAF_COST.get("sreg" if opcode.startswith("sreg.") else opcode, REMAT_COST) \
            if opcode != "mov" or not definitions[name].uses else REMAT_COST

    return {name: (len(chain(name)), round(sum(cost(u) for u in chain(name)), 6)) for name in definitions}


def remat_discount(analysis: Analysis, chains: dict) -> np.ndarray:
    """Each value's spill cost factor: the cost of its recomputation where the allocators would
    rematerialise it (``chains``: :func:`remat_chains`, at most :data:`MAX_REMAT_CHAIN` instructions), at most
    1; 1 elsewhere."""
    return np.array([min(1.0, chains[n][1]) if n in chains and chains[n][0] <= MAX_REMAT_CHAIN else 1.0
                     for n in analysis.names], dtype=float)


def too_small(analysis: Analysis, budget: int, v: int) -> AllocationError:
    """The error for a value that cannot get a register and may not be spilled."""
    name = analysis.names[v]
    i = min(int(analysis.start[v]) // 2, len(analysis.program.instructions) - 1)
    return AllocationError(
        f"a budget of {budget} registers is too small for {analysis.program.name}: %{name} "
        f"(a spill temporary) gets no register at instruction {i} "
        f"({analysis.program.instructions[i]}), where {int(analysis.pressure[i])} registers are live")


def run_with_spilling(program, analysis: Analysis, budget: int, name: str, core, share_slots: bool = True,
                      spill_everywhere: bool = False) -> Allocation:
    """Call ``core(analysis, budget, unspillable, discount) -> (base, to_spill)`` until nothing spills; then,
    with ``share_slots``, let spilled values never live at once share a slot (:func:`shared_slots`).

    Unless ``spill_everywhere``, a value chosen to spill that can be computed again in at most :data:`MAX_REMAT_CHAIN`
    instructions (:func:`remat_chains`) is rematerialised instead: no slot, no store, its definition computed
    again before each instruction that reads it; ``discount`` (:func:`remat_discount`) tells a core that uses
    spill costs what that saves; and spilled ranges are split around runs of nearby reads, one
    reload serving the reads within :data:`RELOAD_REUSE` instructions of it (:func:`engine.ir.spill.spill_insertion`'s
    ``reuse``). The pieces are longer than one instruction, so where they do not fit the budget the allocation is
    made again without splitting. With ``spill_everywhere``, neither: ``discount`` is all ones.
    """
    remat, reuse = not spill_everywhere, 0 if spill_everywhere else RELOAD_REUSE
    try:
        return _spill_loop(program, analysis, budget, name, core, share_slots, remat, reuse)
    except AllocationError:
        if not reuse:
            raise
        return _spill_loop(program, analysis, budget, name, core, share_slots, remat, 0)


def _spill_loop(program, analysis, budget, name, core, share_slots, remat, reuse) -> Allocation:
    original, original_analysis, code = program, analysis, SpillCode({}, (), (), {})
    unspillable: set[str] = set()
    slot = None
    while True:
        mask = np.fromiter((n in unspillable for n in analysis.names), dtype=bool, count=len(analysis.names))
        chains = remat_chains(program, code.origin) if remat else {}
        base, to_spill = core(analysis, budget, mask, remat_discount(analysis, chains))
        if not to_spill:
            break
        names = [analysis.names[v] for v in sorted(to_spill)]
        again = {n for n in names if n in chains and chains[n][0] <= MAX_REMAT_CHAIN}
        new = {}
        slot = first_free_slot(program) if slot is None else slot
        _check_slots(program, name, slot, len(names) - len(again))
        for n in names:
            if n not in again:
                new[n] = slot
                slot += 1
        insertion = spill_insertion(program, new, _touching(analysis, to_spill), code, remat=again, reuse=reuse)
        program, code = insertion.program, insertion.code
        unspillable |= set(new) | insertion.copies | again
        analysis = analyze_spilled(analysis, insertion)
    if share_slots and code.spills:
        slots = shared_slots(original_analysis, code.spills)
        if slots != code.spills:
            program, code = renumber_slots(program, code, slots)
            analysis = _same_analysis(analysis, program)
    return Allocation(name, budget, program, _assignment(analysis, base), dict(code.spills), original, code, analysis,
                      original_analysis)


def shared_slots(original: Analysis, spills: dict) -> dict:
    """Spill slots shared by spilled values that are never live at once (issue 24's stack frame).

    A slot holds its value from the store after a definition to the reload before the last read, inside
    the value's live range in the program without spill code (``original``'s), so values whose ranges do
    not overlap there may share one. Each value, in the order of its old slot, takes the lowest shared slot
    whose values do not interfere with it and have its type (the Numba kernel keeps one array per type;
    64-bit values, pointers among them, never share: a slot there holds pointers into one array only), or a
    new one. Values read before any definition, and values with a guarded definition (its spill code
    reloads the old value first, even where nothing reads it after: that reload must not see another
    value's bits), keep a slot of their own. The slots are numbered from the lowest old one.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = mov 1\\n  st.global %pa, 0, %x\\n"
    ...           "  %y:f32 = mov 2\\n  %z:f32 = mov 3\\n  st.global %pa, 0, %y\\n  st.global %pa, 0, %z\\n  exit\\n")
    >>> shared_slots(analyze(p), {"x": 4, "y": 5, "z": 6})
    {'x': 4, 'y': 4, 'z': 5}
    """
    graph, index, values = original.interference, original.index, original.program.values
    undefined, first = set(original.undefined), min(spills.values())
    instructions = original.program.instructions
    guarded = {original.names[v] for i, v in original.definitions.tolist() if instructions[i].guard is not None}
    slot_of: dict[int, int] = {}  # value number -> its new slot (counted from 0)
    by_type: dict[str, list[int]] = {}  # the shareable slots of each type, in order
    count, out = 0, {}
    for name, _ in sorted(spills.items(), key=lambda item: (item[1], item[0])):
        v = index.get(name)
        type_ = values[name].type if name in values else None
        shareable = (v is not None and name not in undefined and name not in guarded
                     and type_ not in (None, "u64", "f64"))
        chosen = -1
        if shareable:
            get = slot_of.get
            blocked = {get(u) for u in graph.neighbors(v).tolist()}
            chosen = next((k for k in by_type.get(type_, ()) if k not in blocked), -1)
        if chosen < 0:
            chosen, count = count, count + 1
            if shareable:
                by_type.setdefault(type_, []).append(chosen)
        if v is not None:
            slot_of[v] = chosen
        out[name] = first + chosen
    return out


def _same_analysis(analysis: Analysis, program: Program) -> Analysis:
    """``analysis`` for ``program``, a program that differs from its own only in slot numbers (liveness
    does not read them); figures it already computed carried over."""
    new = dataclasses.replace(analysis, program=program, interference_basis=list(analysis.interference_basis))
    for cached in ("index", "interference", "occurrences", "spill_weight", "segments"):
        if cached in analysis.__dict__:
            new.__dict__[cached] = analysis.__dict__[cached]
    return new


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
