"""Proving a register assignment correct: statically, and by execution.

Invariant: :func:`static_conflicts` returns every violation of DESIGN.md's
validity rules, sorted by instruction, kind, values and register, so the
first one is the same on every run; an empty list means the assignment is
valid. :func:`verify_execution` runs the program without its spill code on
virtual registers and the program with it on the assigned physical
registers and spill slots, and raises unless the store traces agree bit
for bit; the :class:`ExecutionCheck` it returns says what ran, and
``verified`` only when every instruction ran on some input and stores were
compared. The inputs are the seeds :func:`choose_seeds` picks: always the
given ones, then, while some reachable instruction has not run, the next
of the candidates 0..CANDIDATES-1 that runs one no earlier seed did (a
bounded, deterministic search: same program and model, same seeds).

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse('''.kernel k
... .block entry
...   %x:f32 = mov 1
...   %y:f32 = mov 2
...   st.global %x, 0, %y
...   exit
... ''')
>>> [c.message for c in static_conflicts(p, {"x": (0,), "y": (0,)}, {}, 4)]
['%x and %y share R0 while both live at instruction 1 (%y:f32 = mov 2)']
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine.analysis.interference import overlapping_pairs
from engine.analysis.liveness import Analysis, analyze
from engine.base.errors import TimeLimitError, VerificationError
from engine.base.limits import CHECK_SECONDS, MAX_STEPS
from engine.check.inputs import GENERIC, InputModel
from engine.check.interp import Trace, decode, run, run_together
from engine.ir.core import Program, successors
from engine.ir.spill import SpillCode, remove_spill_code, spill_code_of, spill_slot


@dataclass(frozen=True, order=True)
class Conflict:
    """One violation: what kind, which values, at which instruction and register."""

    instruction: int
    kind: str
    values: tuple[str, ...]
    register: int | None
    message: str


def _assigned(program: Program, analysis: Analysis, assignment: dict, budget: int) -> tuple[np.ndarray, list]:
    """Each value's first register as :func:`_register_segments` takes it (-1: none it can hold) and the
    values' shape conflicts (a register missing, of the wrong width, outside the budget, misaligned, or given
    to a predicate), in one pass over the values; the common case, a register that fits, costs a few tests."""
    values = program.values
    out = [Conflict(-1, "unknown", (name,), None, f"%{name} has a register but the program never defines it")
           for name in assignment.keys() - values.keys()]
    get, lo = assignment.get, []
    for name, width in zip(analysis.names, analysis.widths.tolist()):
        regs = get(name)
        if regs is None:
            if width:
                out.append(Conflict(-1, "missing", (name,), None, f"%{name} has no register"))
            lo.append(-1)
            continue
        if width == 1 and len(regs) == 1 and 0 <= regs[0] < budget:
            lo.append(regs[0])
            continue
        if width == 2 and len(regs) == 2 and 0 <= regs[0] and regs[1] < budget and regs[0] % 2 == 0 \
                and regs[1] == regs[0] + 1:
            lo.append(regs[0])
            continue
        if width == 0:
            out.append(Conflict(-1, "pred", (name,), None, f"%{name} is a predicate and takes no general register"))
        else:
            out.extend(_register_conflicts(name, width, regs, budget))
        lo.append(regs[0] if width and regs and len(regs) == width and (width == 1 or regs[1] == regs[0] + 1)
                  else -1)
    return np.array(lo, dtype=np.int64), out


def _register_conflicts(name: str, width: int, regs, budget: int) -> list[Conflict]:
    if regs is None:
        return [Conflict(-1, "missing", (name,), None, f"%{name} has no register")]
    if len(regs) != width:
        return [Conflict(-1, "width", (name,), None, f"%{name} is {width} register(s) wide but has {len(regs)}")]
    for r in regs:
        if not 0 <= r < budget:
            plural = "s" * (budget != 1)
            return [Conflict(-1, "budget", (name,), r,
                             f"%{name} is in R{r}, outside the budget of {budget} register{plural} (R0-R{budget - 1})")]
    if width == 2 and (regs[0] % 2 or regs[1] != regs[0] + 1):
        return [Conflict(-1, "alignment", (name,), regs[0], f"%{name} is 64-bit and needs an even-aligned pair, not R{regs[0]}:R{regs[1]}")]
    return []


def _register_segments(analysis: Analysis, assignment: dict, lo: np.ndarray | None = None):
    """One row per (segment, register held): value, register, start, end (``lo``: each value's first
    register, -1 for none, when the caller has it)."""
    get = assignment.get
    if lo is None:
        lo = np.fromiter((r[0] if w and r and len(r) == w and (w == 1 or r[1] == r[0] + 1) else -1
                          for r, w in zip(map(get, analysis.names), analysis.widths.tolist())),
                         dtype=np.int64, count=len(analysis.names))
    keep = lo[analysis.seg_value] >= 0
    value, start, end = analysis.seg_value[keep], analysis.seg_start[keep], analysis.seg_end[keep]
    pair = analysis.widths[value] == 2
    reg = np.concatenate([lo[value], lo[value[pair]] + 1])
    return (np.concatenate([value, value[pair]]), reg,
            np.concatenate([start, start[pair]]), np.concatenate([end, end[pair]]))


def overlap_conflicts(analysis: Analysis, assignment: dict, limit: int | None = None,
                      lo: np.ndarray | None = None) -> tuple[list[Conflict], int]:
    """Pairs of values holding one register at one position, each at its first such point, and how many
    there are: all of them, or (``limit``) at least the ``limit`` at the earliest instructions, so a plan
    with millions of conflicts (every value in R0) costs arrays, not millions of objects.

    Works on the segments of each register alone (never on the interference
    graph the allocators used), so it checks them independently.
    """
    value, reg, start, end = _register_segments(analysis, assignment, lo)
    span = 2 * len(analysis.program.instructions) + 2
    i, j = overlapping_pairs(reg * span + start, reg * span + end)
    u, v = value[i], value[j]
    a, b = np.minimum(u, v), np.maximum(u, v)
    position = np.maximum(start[i], start[j])
    order = np.lexsort((reg[i], position, b, a))
    a, b, position, shared = a[order], b[order], position[order], reg[i][order]
    first = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])] & (a != b) if len(a) else np.zeros(0, bool)
    keep = np.flatnonzero(first)
    total = len(keep)
    if limit is not None and total > limit:
        cut = np.partition(position[keep], limit - 1)[limit - 1]
        keep = keep[position[keep] <= cut]
    return [_overlap(analysis, (x, y), p // 2, r) for x, y, p, r in
            zip(a[keep].tolist(), b[keep].tolist(), position[keep].tolist(), shared[keep].tolist())], total


def _overlap(analysis: Analysis, pair, instruction: int, reg: int) -> Conflict:
    names = tuple(sorted(analysis.names[x] for x in pair))
    ins = analysis.program.instructions[instruction]
    return Conflict(instruction, "overlap", names, reg,
                    f"%{names[0]} and %{names[1]} share R{reg} while both live at instruction {instruction} ({ins})")


def _slot_conflicts(program: Program, spills: dict, code: SpillCode | None) -> list[Conflict]:
    """The spill map against the spill code: every spilled value stored to its own slot, every load or
    store of a spilled value's slot that value's spill code, every reload of a value named in the map."""
    code = code if code is not None else spill_code_of(program, spills)
    instructions = program.instructions
    copies = set(code.origin.values())
    stored = {code.origin.get(n, n) for n in (instructions[i].operands[1].name for i in code.stores)}
    out, seen = [], {}
    for name, slot in sorted(spills.items()):
        if name not in program.values and name not in copies:
            out.append(Conflict(-1, "spill", (name,), None, f"spill slot {slot} is for %{name}, which the program never defines"))
        elif name not in stored:
            out.append(Conflict(-1, "spill", (name,), None,
                                f"%{name} is spilled to slot {slot} in 'spills', but no st.local stores it there"))
        seen.setdefault(slot, []).append(name)
    shared = {slot: names for slot, names in seen.items() if len(names) > 1}
    if shared:
        out += _shared_slot_conflicts(program, spills, shared)
    return out + _stray_spill_code(program, spills, code)


def _shared_slot_conflicts(program: Program, spills: dict, shared: dict) -> list[Conflict]:
    """Values that share a spill slot must never be live at once in the program without spill code (a slot
    holds its value from the store after a definition to the reload before its last read, inside that
    value's live range), nor be read before any definition (the slot would hold the other one's bits).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n"
    ...           "  st.global %pa, 0, %x\\n  st.global %pa, 0, %y\\n  exit\\n")
    >>> [c.message for c in _shared_slot_conflicts(p, {"x": 0, "y": 0}, {0: ["x", "y"]})]
    ['%x and %y share spill slot 0 while both live at instruction 2 of the program without spill code (%y:f32 = mov 2)']
    """
    original = analyze(remove_spill_code(program, spills))
    index, undefined, out = original.index, set(original.undefined), []
    group = np.full(len(original.names), -1, dtype=np.int64)  # each sharing value's slot, as a group number
    slots = sorted(shared)
    for g, slot in enumerate(slots):
        for a in shared[slot]:
            if a in undefined:
                out.append(Conflict(-1, "slot", (a,), None, f"%{a} shares spill slot {slot} but is read before any "
                                                            f"definition on some path"))
            if a in index:
                group[index[a]] = g
    keep = group[original.seg_value] >= 0
    value, start, end = original.seg_value[keep], original.seg_start[keep], original.seg_end[keep]
    g = group[value]
    span = 2 * len(original.program.instructions) + 2
    i, j = overlapping_pairs(g * span + start, g * span + end)
    first: dict = {}
    for u, v, p in zip(value[i].tolist(), value[j].tolist(), np.maximum(start[i], start[j]).tolist()):
        if u != v:
            key = (min(u, v), max(u, v))
            first[key] = min(first.get(key, p), p)
    for (u, v), p in sorted(first.items(), key=lambda item: (item[1], item[0])):
        at, a, b = p // 2, original.names[u], original.names[v]
        out.append(Conflict(-1, "slot", (a, b), None, f"%{a} and %{b} share spill slot {spills[a]} while both live at "
                                                      f"instruction {at} of the program without spill code "
                                                      f"({original.program.instructions[at]})"))
    return out


_LOCAL_OPCODES = frozenset({"ld.local", "st.local"})


def _stray_spill_code(program: Program, spills: dict, code: SpillCode) -> list[Conflict]:
    """Local loads and stores that look like spill code but are not the map's: on a spilled value's slot
    without being its code, or reloading a value (``%v.rK``) the map does not spill."""
    owner = {slot: name for name, slot in sorted(spills.items(), reverse=True)}  # a shared slot: its first value
    ours, out, instructions = code.indices, [], program.instructions
    local = [i for i, ins in enumerate(instructions) if ins.opcode in _LOCAL_OPCODES]
    for i in local:
        if i in ours:
            continue
        ins = instructions[i]
        slot = spill_slot(ins)
        if slot in owner:
            v = owner[slot]
            out.append(Conflict(i, "spill", (v,), None,
                                f"instruction {i} ({ins}) uses slot {slot}, the spill slot of %{v}, but is not %{v}'s spill code"))
        elif ins.opcode == "ld.local" and len(ins.defs) == 1:
            base, dot, suffix = ins.defs[0].name.rpartition(".")
            if dot and suffix[:1] == "r" and suffix[1:].isdigit() and base in program.values and base not in spills:
                out.append(Conflict(i, "spill", (base,), None,
                                    f"instruction {i} ({ins}) reloads %{base}, which 'spills' does not name"))
    return out


def static_conflicts(program: Program, assignment: dict, spills: dict, budget: int,
                     analysis: Analysis | None = None, spill_code: SpillCode | None = None) -> list[Conflict]:
    """Every violation of the validity rules, in a sorted, repeatable order.

    ``analysis`` and ``spill_code``, when the caller has them for ``program``
    (an allocation carries both), save computing them again.
    """
    return first_conflicts(program, assignment, spills, budget, None, analysis, spill_code)[0]


def first_conflicts(program: Program, assignment: dict, spills: dict, budget: int, limit: int | None,
                    analysis: Analysis | None = None, spill_code: SpillCode | None = None
                    ) -> tuple[list[Conflict], int]:
    """The first ``limit`` violations in :func:`static_conflicts`' order (None: all) and how many there are.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n" + "".join(f"  %x{i}:f32 = mov 1\\n" for i in range(50))
    ...           + "".join(f"  st.global %pa, 0, %x{i}\\n" for i in range(50)) + "  exit\\n")
    >>> shown, total = first_conflicts(p, {f"x{i}": (0,) for i in range(50)} | {"pa": (2, 3)}, {}, 4, 1)
    >>> len(shown), total, shown[0].message[:30]
    (1, 1225, '%x0 and %x1 share R0 while bot')
    """
    analysis = analysis or analyze(program)
    lo, found = _assigned(program, analysis, assignment, budget)
    found += _slot_conflicts(program, spills, spill_code)
    overlaps, count = overlap_conflicts(analysis, assignment, limit, lo)
    ordered = sorted(found + overlaps)
    return (ordered if limit is None else ordered[:limit]), len(found) + count


#: the random inputs a plan is always verified on
SEEDS = (0, 1, 2)
#: seeds 0..CANDIDATES-1 are the candidates of the search for coverage
CANDIDATES = 32


@dataclass(frozen=True)
class ExecutionCheck:
    """What an execution check ran: its seeds, the stores it compared, the instructions it reached and the
    ways its conditional branches went. It samples: it says what ran, never that it proved anything.

    Examples
    --------
    >>> check = ExecutionCheck((0, 1, 2), 12, 10, 10, None)
    >>> check.covered, check.verified
    (True, True)
    >>> ExecutionCheck((0, 1, 2, 5), 0, 13, 63, 13).verified
    False
    >>> ExecutionCheck((0, 1, -1), 4, 5, 5, None, branches=2, both_ways=1, first_one_way=3).branches_covered
    False
    """

    seeds: tuple[int, ...]
    stores: int
    executed: int
    instructions: int
    #: the first instruction no seed reached (None at full coverage)
    first_missed: int | None
    #: conditional branches reached, those taken both ways, and the first taken one way only (None: none)
    branches: int = 0
    both_ways: int = 0
    first_one_way: int | None = None

    @property
    def covered(self) -> bool:
        """Every instruction of the program ran on at least one seed."""
        return self.executed == self.instructions

    @property
    def branches_covered(self) -> bool:
        """Every conditional branch reached went both ways on some seeds."""
        return self.both_ways == self.branches

    @property
    def cases(self) -> int:
        """How many of the seeds are chosen inputs (a workload's cases, negative seeds)."""
        return sum(seed < 0 for seed in self.seeds)

    @property
    def verified(self) -> bool:
        """Covered, every branch both ways and stores compared: the check says something about every
        instruction and every way out of a branch (still a sample of inputs, never a proof)."""
        return self.covered and self.branches_covered and self.stores > 0


def _reachable(program: Program) -> list[int]:
    """Indices of the instructions in blocks reachable from the first."""
    succ, starts = successors(program), program.block_starts
    seen, todo = set(), [0] if program.blocks else []
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b)
            todo.extend(succ[b])
    return [starts[b] + i for b in sorted(seen) for i in range(len(program.blocks[b].instructions))]


def choose_seeds(program: Program, model: InputModel = GENERIC, seeds=SEEDS, max_steps: int = MAX_STEPS,
                 deadline: float | None = None, candidates: int = CANDIDATES,
                 runs: ReferenceRuns | None = None) -> tuple[int, ...]:
    """The seeds a check of ``program`` (without spill code) runs: ``seeds``, then those of the candidates
    0..candidates-1 that reach an instruction or a way out of a conditional branch no earlier seed did,
    until every reachable instruction ran and every reachable branch went both ways.

    ``runs``, the caller's :class:`ReferenceRuns`, keeps the runs and the choice for later checks.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.check.inputs import InputModel
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %n:i32 = param n\\n"
    ...           "  %c:pred = setp.lt %n, 2\\n  cbr %c, small, done\\n.block small\\n"
    ...           "  st.global %pa, 0, %n\\n.block done\\n  exit\\n")
    >>> seeds = choose_seeds(p, InputModel.of({"n": (1, 4)}))
    >>> seeds[:3], len(seeds) > 3 or None
    ((0, 1, 2), True)
    """
    runs = runs if runs is not None else ReferenceRuns()
    key = (model, tuple(seeds), max_steps, candidates)
    return runs.chosen(program, key, lambda: _search(program, model, tuple(seeds), max_steps, deadline, candidates,
                                                     runs))


def _branch_ways(program: Program, reachable: list[int]) -> set:
    """(instruction, condition) for both ways of every reachable conditional branch with two targets."""
    return {(i, way) for i in reachable for way in (True, False)
            if program.instructions[i].opcode == "cbr" and len(set(program.instructions[i].targets)) == 2}


def _search(program: Program, model: InputModel, seeds: tuple, max_steps: int, deadline,
            candidates: int, runs: ReferenceRuns) -> tuple[int, ...]:
    reachable = _reachable(program)
    missing = set(reachable) | _branch_ways(program, reachable)
    chosen = []
    runs.traces(program, seeds, model, max_steps, deadline)   # the given seeds at once
    for seed in dict.fromkeys((*seeds, *range(candidates))):
        if not missing and len(chosen) >= len(seeds):
            break
        trace = runs.trace(program, seed, model, max_steps, deadline)
        found = {i for i in missing if type(i) is int and trace.executed[i]} | (missing & trace.taken)
        if seed in seeds or found:
            chosen.append(seed)
            missing -= found
    return tuple(chosen)


def deepest_seed(program: Program, model: InputModel = GENERIC, max_steps: int = MAX_STEPS,
                 runs: ReferenceRuns | None = None) -> int:
    """The check's seed whose run of ``program`` (without spill code) takes the most steps, the first such
    seed: the one that goes furthest into the kernel's body."""
    runs = runs if runs is not None else ReferenceRuns()
    seeds = choose_seeds(program, model, SEEDS, max_steps, runs=runs)
    return max(seeds, key=lambda s: runs.trace(program, s, model, max_steps).steps)


def deepest_trace(program: Program, model: InputModel = GENERIC, max_steps: int = MAX_STEPS,
                  runs: ReferenceRuns | None = None) -> Trace:
    """The run of :func:`deepest_seed` (read-only)."""
    runs = runs if runs is not None else ReferenceRuns()
    return runs.trace(program, deepest_seed(program, model, max_steps, runs), model, max_steps)


def _paths(traces: dict) -> list[tuple[int, ...]]:
    """Seeds grouped by the path their reference runs took (an allocated run that is right takes it too)."""
    groups: dict = {}
    for seed, trace in traces.items():
        groups.setdefault(tuple(trace.executed), []).append(seed)
    return [tuple(g) for g in groups.values()]


def verify_execution(program: Program, assignment: dict, spills: dict, seeds=SEEDS,
                     max_steps: int = MAX_STEPS, max_seconds: float | None = CHECK_SECONDS,
                     model: InputModel = GENERIC, candidates: int = CANDIDATES,
                     runs: ReferenceRuns | None = None, original: Program | None = None) -> ExecutionCheck:
    """Run original and allocated programs on inputs drawn from ``model``; say what the check covered.

    ``runs``, the caller's :class:`ReferenceRuns`, shares the reference runs
    between checks of plans of one program; ``original``, the program
    without spill code when the caller has it (an allocation's), is the
    object they are kept under (else it is recovered by removing the spill code).

    The seeds are ``seeds``, the model's cases (its chosen inputs at the
    edges of the workload's guards) and those :func:`choose_seeds` adds
    from ``candidates`` (0: none) until every instruction ran and every
    conditional branch went both ways. Seeds that take one path run in
    lockstep through each program (see :func:`engine.check.interp.run_together`),
    one by one otherwise.

    Raises
    ------
    VerificationError
        naming the seed, the first store that differs and its address.
    InterpreterError
        when a run reads an undefined value, exceeds ``max_steps`` or runs
        past ``max_seconds`` (all runs together; None: no time limit).
    """
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    runs = runs if runs is not None else ReferenceRuns()
    original = original if original is not None else remove_spill_code(program, spills)
    try:
        chosen = choose_seeds(original, model, (*seeds, *model.case_seeds), max_steps, deadline, candidates, runs)
        want = runs.traces(original, chosen, model, max_steps, deadline)
        decoded, got = decode(program, assignment), {}     # decoded once for every run of the allocated program
        for group in _paths(want):
            together = run_together(program, group, assignment, max_steps, deadline, model, decoded)
            got.update(zip(group, together) if together else
                       ((seed, run(program, seed, assignment, max_steps, deadline, model, decoded)) for seed in group))
        for seed in chosen:
            if got[seed].stores != want[seed].stores:
                raise VerificationError(_first_difference(model.describe(seed), want[seed].stores, got[seed].stores))
    except TimeLimitError as exc:
        raise TimeLimitError(f"the execution check stopped at its time limit of {max_seconds:g} s ({exc}); "
                             "a program that does not end, or one too long to check: set --time-limit to allow "
                             "more") from None
    return _coverage(chosen, sum(len(t.stores) for t in want.values()), [got[seed] for seed in chosen], program)


def _coverage(seeds: tuple, stores: int, traces: list, program: Program) -> ExecutionCheck:
    """The check's figures from its allocated runs: instructions executed, branches and their ways."""
    executed = [t.executed for t in traces]
    ran = np.any(np.array(executed, dtype=bool), axis=0) if executed else np.zeros(0, dtype=bool)
    missed = np.flatnonzero(~ran)
    ways = _branch_ways(program, np.flatnonzero(ran).tolist())
    taken = set().union(*(t.taken for t in traces)) & ways
    branches = sorted({i for i, _ in ways})
    one_way = [i for i in branches if not {(i, True), (i, False)} <= taken]
    return ExecutionCheck(tuple(seeds), stores, int(ran.sum()), len(ran), int(missed[0]) if len(missed) else None,
                          len(branches), len(branches) - len(one_way), one_way[0] if one_way else None)


class ReferenceRuns:
    """The caller's memo of reference runs: programs without spill code on virtual registers, and the
    seeds chosen for their coverage.

    Plans of one program share their reference runs; whoever checks several
    (the ``regtune`` command, a benchmark, a sweep worker) keeps one of
    these and passes it, with the one program object they share (an
    allocation's ``original``), to each check. Programs are told apart by
    identity: the memo holds them, so an identity is never reused while it
    is kept, and an equal program built anew is run again (hashing a
    5,000-instruction program costs more than a lookup should). It keeps
    the last ``limit`` runs and seed choices, oldest forgotten first;
    traces it returns are read-only.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  st.global %pa, 0, %pa\\n  exit\\n")
    >>> runs = ReferenceRuns()
    >>> runs.trace(p, 0) is runs.trace(p, 0), runs.trace(p, 0) is runs.trace(parse(str(p)), 0)
    (True, False)
    """

    def __init__(self, limit: int = 64):
        self.limit = limit
        self._traces: dict = {}
        self._chosen: dict = {}
        self._decoded: dict = {}

    def trace(self, program: Program, seed: int, model: InputModel = GENERIC, max_steps: int = MAX_STEPS,
              deadline: float | None = None) -> Trace:
        """The run of ``program`` on virtual registers (the deadline bounds only a run not kept yet)."""
        return self.traces(program, (seed,), model, max_steps, deadline)[seed]

    def traces(self, program: Program, seeds, model: InputModel = GENERIC, max_steps: int = MAX_STEPS,
               deadline: float | None = None) -> dict:
        """Seed -> run of ``program`` on virtual registers; the seeds not kept yet run in lockstep where their
        paths agree (:func:`engine.check.interp.run_together`), one by one otherwise."""
        key = lambda seed: (id(program), seed, model, max_steps)  # noqa: E731
        todo = [s for s in dict.fromkeys(seeds) if self._traces.get(key(s), (None,))[0] is not program]
        if todo:
            decoded = self._decode(program)
            together = run_together(program, todo, None, max_steps, deadline, model, decoded) if len(todo) > 1 else None
            for k, seed in enumerate(todo):
                trace = together[k] if together else run(program, seed, None, max_steps, deadline, model, decoded)
                self._traces[key(seed)] = (program, trace)
            self._forget_oldest(self._traces)
        return {seed: self._traces[key(seed)][1] for seed in seeds}

    def _decode(self, program: Program) -> tuple:
        hit = self._decoded.get(id(program))
        if hit is None or hit[0] is not program:
            hit = self._decoded[id(program)] = (program, decode(program))
            self._forget_oldest(self._decoded)
        return hit[1]

    def chosen(self, program: Program, key: tuple, search):
        """The seeds chosen for ``program`` under ``key``, searched with ``search()`` the first time."""
        full = (id(program), *key)
        hit = self._chosen.get(full)
        if hit is None or hit[0] is not program:
            hit = self._chosen[full] = (program, search())
            self._forget_oldest(self._chosen)
        return hit[1]

    def _forget_oldest(self, memo: dict) -> None:
        while len(memo) > self.limit:
            memo.pop(next(iter(memo)))


def _first_difference(where: str, want: list, got: list) -> str:
    for k, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return (f"{where}: store #{k} wrote {g[2]:#x} to {g[0]}[{g[1]:#x}], "
                    f"the original program wrote {w[2]:#x} to {w[0]}[{w[1]:#x}]")
    return f"{where}: the allocated program made {len(got)} stores, the original {len(want)}"
