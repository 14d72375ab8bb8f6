"""Proving a register assignment correct: statically, and by execution.

Invariant: :func:`static_conflicts` returns every violation of DESIGN.md's
validity rules, sorted by instruction, kind, values and register, so the
first one is the same on every run; an empty list means the assignment is
valid. :func:`verify_execution` runs the program without its spill code on
virtual registers and the program with it on the assigned physical
registers and spill slots, and raises unless the store traces agree bit
for bit.

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
from engine.interp import run, run_together
from engine.ir import Program
from engine.interference import overlapping_pairs
from engine.limits import CHECK_SECONDS
from engine.liveness import Analysis, analyze
from engine.spill import remove_spill_code, spill_code_of


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
            return [Conflict(-1, "budget", (name,), r, f"%{name} is in R{r}, outside the budget of {budget} registers (R0-R{budget - 1})")]
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


def _slot_conflicts(program: Program, spills: dict) -> list[Conflict]:
    out, seen = [], {}
    copies = set(spill_code_of(program, spills).origin.values())
    for name, slot in sorted(spills.items()):
        if name not in program.values and name not in copies:
            out.append(Conflict(-1, "spill", (name,), None, f"spill slot {slot} is for %{name}, which the program never defines"))
        elif slot in seen:
            out.append(Conflict(-1, "slot", (seen[slot], name), None, f"%{seen[slot]} and %{name} are both spilled to slot {slot}"))
        seen.setdefault(slot, name)
    return out


def static_conflicts(program: Program, assignment: dict, spills: dict, budget: int,
                     analysis: Analysis | None = None) -> list[Conflict]:
    """Every violation of the validity rules, in a sorted, repeatable order."""
    analysis = analysis or analyze(program)
    found = _shape_conflicts(program, assignment, budget) + _slot_conflicts(program, spills)
    found += overlap_conflicts(analysis, assignment)
    return sorted(found)


#: the random inputs a plan is verified on
SEEDS = (0, 1, 2)


def verify_execution(program: Program, assignment: dict, spills: dict, seeds=SEEDS,
                     max_steps: int = 2_000_000, max_seconds: float | None = CHECK_SECONDS) -> int:
    """Run original and allocated programs on random inputs; return the stores compared.

    The seeds run in lockstep through each program where their paths agree
    (see :func:`engine.interp.run_together`), one by one otherwise.

    Raises
    ------
    VerificationError
        naming the seed, the first store that differs and its address.
    InterpreterError
        when a run reads an undefined value, exceeds ``max_steps`` or runs
        past ``max_seconds`` (all runs together; None: no time limit).
    """
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    original = remove_spill_code(program, spills)
    try:
        together = run_together(program, seeds, assignment, max_steps, deadline)
        compared = 0
        for k, seed in enumerate(seeds):
            want = reference_stores(original, seed, max_steps, deadline)
            got = (together[k] if together else run(program, seed, assignment, max_steps, deadline)).stores
            compared += len(want)
            if got != want:
                raise VerificationError(_first_difference(seed, want, got))
    except TimeLimitError as exc:
        raise TimeLimitError(f"the execution check stopped at its time limit of {max_seconds:g} s ({exc}); "
                             "a program that does not end, or one too long to check: set --time-limit to allow "
                             "more") from None
    return compared


def reference_stores(program: Program, seed: int, max_steps: int = 2_000_000, deadline: float | None = None) -> list:
    """Stores of ``program`` on virtual registers (cached: plans of one program share it; the deadline
    bounds only a run that is not cached yet)."""
    key = (program, seed, max_steps)
    if key not in _REFERENCE:
        _REFERENCE[key] = run(program, seed, max_steps=max_steps, deadline=deadline).stores
        while len(_REFERENCE) > 32:
            _REFERENCE.pop(next(iter(_REFERENCE)))
    return _REFERENCE[key]


def clear_reference_stores() -> None:
    """Forget the memoized reference stores (benchmarks start each run from a cold cache)."""
    _REFERENCE.clear()


#: the reference stores of the last 32 (program, seed, step limit) runs, oldest first
_REFERENCE: dict = {}


def _first_difference(seed: int, want: list, got: list) -> str:
    for k, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return (f"seed {seed}: store #{k} wrote {g[2]:#x} to {g[0]}[{g[1]:#x}], "
                    f"the original program wrote {w[2]:#x} to {w[0]}[{w[1]:#x}]")
    return f"seed {seed}: the allocated program made {len(got)} stores, the original {len(want)}"
