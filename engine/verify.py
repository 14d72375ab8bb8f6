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
>>> from engine.ir import parse
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

from engine.errors import TimeLimitError, VerificationError
from engine.inputs import GENERIC, InputModel
from engine.interp import Trace, decode, run, run_together
from engine.ir import Program, successors
from engine.interference import overlapping_pairs
from engine.limits import CHECK_SECONDS, MAX_STEPS
from engine.liveness import Analysis, analyze
from engine.spill import SpillCode, remove_spill_code, spill_code_of


@dataclass(frozen=True, order=True)
class Conflict:
    """One violation: what kind, which values, at which instruction and register."""

    instruction: int
    kind: str
    values: tuple[str, ...]
    register: int | None
    message: str


def _fits(regs, width: int, budget: int) -> bool:
    return (regs is not None and len(regs) == width and 0 <= regs[0] and regs[-1] < budget
            and (width == 1 or (regs[0] % 2 == 0 and regs[1] == regs[0] + 1)))


def _shape_conflicts(program: Program, assignment: dict, budget: int) -> list[Conflict]:
    values = program.values
    out = [Conflict(-1, "unknown", (name,), None, f"%{name} has a register but the program never defines it")
           for name in assignment.keys() - values.keys()]
    get = assignment.get
    for name, value in values.items():
        regs, width = get(name), value.width
        if width == 0:
            if regs is not None:
                out.append(Conflict(-1, "pred", (name,), None, f"%{name} is a predicate and takes no general register"))
        elif not _fits(regs, width, budget):
            out.extend(_register_conflicts(name, width, regs, budget))
    return out


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


def _register_segments(analysis: Analysis, assignment: dict):
    """One row per (segment, register held): value, register, start, end."""
    get = assignment.get
    lo = np.fromiter((r[0] if w and r and len(r) == w and (w == 1 or r[1] == r[0] + 1) else -1
                      for r, w in zip(map(get, analysis.names), analysis.widths.tolist())),
                     dtype=np.int64, count=len(analysis.names))
    keep = lo[analysis.seg_value] >= 0
    value, start, end = analysis.seg_value[keep], analysis.seg_start[keep], analysis.seg_end[keep]
    pair = analysis.widths[value] == 2
    reg = np.concatenate([lo[value], lo[value[pair]] + 1])
    return (np.concatenate([value, value[pair]]), reg,
            np.concatenate([start, start[pair]]), np.concatenate([end, end[pair]]))


def overlap_conflicts(analysis: Analysis, assignment: dict) -> list[Conflict]:
    """Pairs of values holding one register at one position, each at its first such point.

    Works on the segments of each register alone (never on the interference
    graph the allocators used), so it checks them independently.
    """
    value, reg, start, end = _register_segments(analysis, assignment)
    span = 2 * len(analysis.program.instructions) + 2
    i, j = overlapping_pairs(reg * span + start, reg * span + end)
    u, v = value[i], value[j]
    a, b = np.minimum(u, v), np.maximum(u, v)
    position = np.maximum(start[i], start[j])
    order = np.lexsort((reg[i], position, b, a))
    a, b, position, shared = a[order], b[order], position[order], reg[i][order]
    first = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])] & (a != b) if len(a) else np.zeros(0, bool)
    return [_overlap(analysis, (x, y), p // 2, r)
            for x, y, p, r in zip(a[first].tolist(), b[first].tolist(), position[first].tolist(), shared[first].tolist())]


def _overlap(analysis: Analysis, pair, instruction: int, reg: int) -> Conflict:
    names = tuple(sorted(analysis.names[x] for x in pair))
    ins = analysis.program.instructions[instruction]
    return Conflict(instruction, "overlap", names, reg,
                    f"%{names[0]} and %{names[1]} share R{reg} while both live at instruction {instruction} ({ins})")


def _slot_conflicts(program: Program, spills: dict, code: SpillCode | None) -> list[Conflict]:
    out, seen = [], {}
    copies = set((code if code is not None else spill_code_of(program, spills)).origin.values())
    for name, slot in sorted(spills.items()):
        if name not in program.values and name not in copies:
            out.append(Conflict(-1, "spill", (name,), None, f"spill slot {slot} is for %{name}, which the program never defines"))
        elif slot in seen:
            out.append(Conflict(-1, "slot", (seen[slot], name), None, f"%{seen[slot]} and %{name} are both spilled to slot {slot}"))
        seen.setdefault(slot, name)
    return out


def static_conflicts(program: Program, assignment: dict, spills: dict, budget: int,
                     analysis: Analysis | None = None, spill_code: SpillCode | None = None) -> list[Conflict]:
    """Every violation of the validity rules, in a sorted, repeatable order.

    ``analysis`` and ``spill_code``, when the caller has them for ``program``
    (an allocation carries both), save computing them again.
    """
    analysis = analysis or analyze(program)
    found = _shape_conflicts(program, assignment, budget) + _slot_conflicts(program, spills, spill_code)
    found += overlap_conflicts(analysis, assignment)
    return sorted(found)


#: the random inputs a plan is always verified on
SEEDS = (0, 1, 2)
#: seeds 0..CANDIDATES-1 are the candidates of the search for coverage
CANDIDATES = 32


@dataclass(frozen=True)
class ExecutionCheck:
    """What an execution check ran: its seeds, the stores it compared and the instructions it reached.

    Examples
    --------
    >>> check = ExecutionCheck((0, 1, 2), 12, 10, 10, None)
    >>> check.covered, check.verified
    (True, True)
    >>> ExecutionCheck((0, 1, 2, 5), 0, 13, 63, 13).verified
    False
    """

    seeds: tuple[int, ...]
    stores: int
    executed: int
    instructions: int
    #: the first instruction no seed reached (None at full coverage)
    first_missed: int | None

    @property
    def covered(self) -> bool:
        """Every instruction of the program ran on at least one seed."""
        return self.executed == self.instructions

    @property
    def verified(self) -> bool:
        """Covered, and stores were compared: the check says something about every instruction."""
        return self.covered and self.stores > 0


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
    0..candidates-1 that reach an instruction no earlier seed did, until every reachable one ran.

    ``runs``, the caller's :class:`ReferenceRuns`, keeps the runs and the choice for later checks.

    Examples
    --------
    >>> from engine.ir import parse
    >>> from engine.inputs import InputModel
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


def _search(program: Program, model: InputModel, seeds: tuple, max_steps: int, deadline,
            candidates: int, runs: ReferenceRuns) -> tuple[int, ...]:
    missing = set(_reachable(program))
    chosen = []
    runs.traces(program, seeds, model, max_steps, deadline)   # the given seeds at once
    for seed in dict.fromkeys((*seeds, *range(candidates))):
        if not missing and len(chosen) >= len(seeds):
            break
        executed = runs.trace(program, seed, model, max_steps, deadline).executed
        found = {i for i in missing if executed[i]}
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

    The seeds are ``seeds`` and those :func:`choose_seeds` adds for
    coverage from ``candidates`` (0: none). Seeds that take one path run in
    lockstep through each program (see :func:`engine.interp.run_together`),
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
        chosen = choose_seeds(original, model, seeds, max_steps, deadline, candidates, runs)
        want = runs.traces(original, chosen, model, max_steps, deadline)
        got = {}
        for group in _paths(want):
            together = run_together(program, group, assignment, max_steps, deadline, model)
            got.update(zip(group, together) if together else
                       ((seed, run(program, seed, assignment, max_steps, deadline, model)) for seed in group))
        for seed in chosen:
            if got[seed].stores != want[seed].stores:
                raise VerificationError(_first_difference(seed, want[seed].stores, got[seed].stores))
    except TimeLimitError as exc:
        raise TimeLimitError(f"the execution check stopped at its time limit of {max_seconds:g} s ({exc}); "
                             "a program that does not end, or one too long to check: set --time-limit to allow "
                             "more") from None
    return _coverage(chosen, sum(len(t.stores) for t in want.values()), [got[seed].executed for seed in chosen])


def _coverage(seeds: tuple, stores: int, executed: list) -> ExecutionCheck:
    """The check's figures from the per-instruction counts of its allocated runs."""
    ran = np.any(np.array(executed, dtype=bool), axis=0) if executed else np.zeros(0, dtype=bool)
    missed = np.flatnonzero(~ran)
    return ExecutionCheck(tuple(seeds), stores, int(ran.sum()), len(ran), int(missed[0]) if len(missed) else None)


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
    >>> from engine.ir import parse
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
        paths agree (:func:`engine.interp.run_together`), one by one otherwise."""
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


def _memory_after(trace: Trace) -> dict:
    """Global and shared memory as the run leaves it: (space, address) -> the last value stored there."""
    return {(space, address): value for space, address, value in trace.stores}


def same_as_workload(program: Program, spills: dict, workload: dict, options: dict, seeds=SEEDS,
                     max_steps: int = MAX_STEPS, max_seconds: float | None = CHECK_SECONDS) -> str | None:
    """Whether a plan's program computes what its workload builds: a phrase saying how that was shown, None
    for a plan made from an IR file (no workload to rebuild).

    The program without its spill code is compared with the one the
    workload builds from the plan's own options: equal, or (after schedule
    edits, which reorder instructions within their dependences) leaving the
    same global and shared memory on each of ``seeds``' inputs.

    Raises
    ------
    VerificationError
        naming the input and the first memory cell that ends differently.

    Examples
    --------
    >>> from engine.workloads import build_workload
    >>> w = {"kind": "gemm", "m": 2, "n": 2, "k": 2}
    >>> program, _, options = build_workload(w, {})
    >>> same_as_workload(program, {}, w, options)
    'its program is the one gemm 2x2x2 builds'
    """
    from engine.workloads import build_workload, config_label, input_model, workload_named

    if not workload or workload_named(workload.get("kind")).example is None:
        return None
    rebuilt = build_workload(workload, options)[0]
    original = remove_spill_code(program, spills)
    label = config_label(workload)
    if original == rebuilt:
        return f"its program is the one {label} builds"
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    model = input_model(workload, options)
    for seed in seeds:
        want = _memory_after(run(rebuilt, seed, None, max_steps, deadline, model))
        got = _memory_after(run(original, seed, None, max_steps, deadline, model))
        if got != want:
            cell = min(want.keys() ^ got.keys() or {k for k in want if want[k] != got[k]})
            raise VerificationError(
                f"the plan's program does not compute what {label} builds: on input {seed}, {cell[0]}[{cell[1]:#x}] "
                f"ends as {_cell(got, cell)} where {label}'s own program leaves {_cell(want, cell)}")
    return f"its program computes what {label} builds (same memory on {len(seeds)} inputs; its schedule differs)"


def _cell(memory: dict, cell) -> str:
    return f"{memory[cell]:#x}" if cell in memory else "unwritten"


def _first_difference(seed: int, want: list, got: list) -> str:
    for k, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return (f"seed {seed}: store #{k} wrote {g[2]:#x} to {g[0]}[{g[1]:#x}], "
                    f"the original program wrote {w[2]:#x} to {w[0]}[{w[1]:#x}]")
    return f"seed {seed}: the allocated program made {len(got)} stores, the original {len(want)}"
