"""Hand edits: pure operations on a plan that report conflicts instead of raising.

Two kinds, kept apart as DESIGN.md asks. Assignment edits (:class:`Assign`,
:class:`Swap`, :class:`Spill`, :class:`Unspill`) explore the model: which
register holds which value. Schedule edits (:class:`Move`) change the
kernel that gets built.

Invariant: ``apply_edit(plan, e)`` never raises for a well-typed edit; it
returns the new plan (its ``predicted`` figures left None: they are the
caller's stage, engine.predict, which can use the result's analysis), every
conflict of the new plan (as :func:`engine.check.verify.static_conflicts` finds
them), and the inverse edit, so ``apply_edit(result.plan,
result.inverse).plan`` equals ``plan`` but for its figures. An edit that cannot
be applied at all (an unknown value, a move across a dependence) comes back
``rejected`` with the reason and the plan unchanged. A caller that holds
the analysis of ``plan.program`` passes it: edits that keep the program
(:class:`Assign`, :class:`Swap`, a rejection) then analyse nothing.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.plan import Plan
>>> from engine.predict import predict
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  st.global %x, 0, %y\\n  exit\\n")
>>> plan = Plan(p, {"x": (0,), "y": (1,)}, {}, 4, "hand")
>>> r = apply_edit(plan, Assign("y", (0,)))
>>> [c.message for c in r.conflicts]
['%x and %y share R0 while both live at instruction 1 (%y:f32 = mov 2)']
>>> predict(r.plan, r.analysis).registers
1
>>> apply_edit(r.plan, r.inverse).plan == plan
True
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.analysis.dependence import dependence, reordering_problem, widths_of
from engine.analysis.liveness import Analysis, analyze
from engine.base.limits import MAX_SPILL_SLOT
from engine.check.verify import Conflict, static_conflicts
from engine.ir.core import Block, Program, replace_blocks
from engine.ir.spill import (
    first_free_slot,
    has_spill_code,
    insert_spill_code,
    remove_spill_code,
    spill_code_of,
)
from engine.plan import Plan


@dataclass(frozen=True)
class Assign:
    """Put ``value`` in ``registers`` (assignment edit)."""

    value: str
    registers: tuple[int, ...]


@dataclass(frozen=True)
class Swap:
    """Exchange registers ``a`` and ``b`` in every value's assignment (assignment edit)."""

    a: int
    b: int


@dataclass(frozen=True)
class Spill:
    """Keep ``value`` in local memory between uses (assignment edit)."""

    value: str
    slot: int | None = None


@dataclass(frozen=True)
class Unspill:
    """Remove the spill code of ``value``; it keeps its register (assignment edit)."""

    value: str


@dataclass(frozen=True)
class Move:
    """Move linear instruction ``index`` to position ``to`` of its block (schedule edit)."""

    index: int
    to: int


@dataclass(frozen=True)
class Reallocate:
    """Run allocator ``allocator`` again on the plan's program (spill code removed) at the plan's budget, or at
    ``budget`` (which becomes the plan's): the assignment a new schedule needs (assignment edit; ``tune``'s
    last step; ``budget`` where only a smaller one makes the allocator rematerialise what does not fit)."""

    allocator: str
    budget: int | None = None


@dataclass(frozen=True)
class Restore:
    """Put back a program, assignment and spills exactly (the inverse of an unspill), and a budget (None: the
    plan's own, unchanged)."""

    program: Program
    assignment: dict
    spills: dict
    budget: int | None = None


@dataclass(frozen=True)
class EditResult:
    """The outcome of one edit.

    Attributes
    ----------
    plan : the edited plan (figures empty), or the plan unchanged when the edit was rejected
    conflicts : every conflict of ``plan``
    inverse : the edit that undoes this one (None when rejected or when nothing can undo it)
    analysis : the liveness analysis of ``plan.program`` (the caller's, for its figures and views)
    rejected : why the edit could not be applied, or None
    """

    plan: Plan
    conflicts: tuple[Conflict, ...]
    inverse: object | None
    analysis: Analysis
    rejected: str | None = None


def _result(new: Plan, inverse, analysis: Analysis | None = None) -> EditResult:
    """The result for ``new``; ``analysis``, when given, is that of ``new.program`` (an edit that kept it)."""
    plan = new.with_(predicted=None)
    analysis = analysis if analysis is not None else analyze(plan.program)
    conflicts = static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget, analysis)
    return EditResult(plan, tuple(conflicts), inverse, analysis)


def _reject(plan: Plan, reason: str, analysis: Analysis | None) -> EditResult:
    analysis = analysis if analysis is not None else analyze(plan.program)
    conflicts = static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget, analysis)
    return EditResult(plan, tuple(conflicts), None, analysis, reason)


def _value_problem(plan: Plan, name: str) -> str | None:
    value = plan.program.values.get(name)
    if value is None:
        return f"the program has no value %{name}"
    if value.width == 0:
        return f"%{name} is a predicate and takes no general register"
    return None


def _assign(plan: Plan, e: Assign, analysis: Analysis | None) -> EditResult:
    problem = _value_problem(plan, e.value)
    if problem:
        return _reject(plan, problem, analysis)
    old = plan.assignment.get(e.value)
    inverse = Assign(e.value, old) if old is not None else None
    return _result(plan.with_(assignment={**plan.assignment, e.value: tuple(e.registers)}), inverse, analysis)


def _swap(plan: Plan, e: Swap, analysis: Analysis | None) -> EditResult:
    remap = {e.a: e.b, e.b: e.a}
    assignment = {n: tuple(remap.get(r, r) for r in regs) for n, regs in plan.assignment.items()}
    return _result(plan.with_(assignment=assignment), e, analysis)


def _is_spill_temporary(plan: Plan, name: str) -> bool:
    return name in spill_code_of(plan.program, plan.spills).origin


def _spill(plan: Plan, e: Spill, analysis: Analysis | None) -> EditResult:
    problem = _value_problem(plan, e.value)
    if problem or e.value in plan.spills or _is_spill_temporary(plan, e.value):
        return _reject(plan, problem or f"%{e.value} is already in local memory", analysis)
    slot = e.slot if e.slot is not None else max([first_free_slot(plan.program), *[s + 1 for s in plan.spills.values()]])
    if not 0 <= slot <= MAX_SPILL_SLOT:      # a plan with it could not be loaded (engine.ir.rules)
        return _reject(plan, f"spill slot {slot} is outside 0..{MAX_SPILL_SLOT}", analysis)
    if slot in plan.spills.values():
        return _reject(plan, f"spill slot {slot} already holds another value", analysis)
    program = insert_spill_code(plan.program, {e.value: slot})
    regs = plan.assignment.get(e.value)
    assignment = dict(plan.assignment)
    if regs is not None:
        assignment.update({n: regs for n in program.values if n not in plan.program.values})
    return _result(plan.with_(program=program, assignment=assignment, spills={**plan.spills, e.value: slot}),
                   Unspill(e.value))


def _unspill(plan: Plan, e: Unspill, analysis: Analysis | None) -> EditResult:
    if e.value not in plan.spills:
        return _reject(plan, f"%{e.value} is not spilled", analysis)
    program = remove_spill_code(plan.program, {e.value: plan.spills[e.value]})
    assignment = {n: r for n, r in plan.assignment.items() if n in program.values}
    spills = {n: s for n, s in plan.spills.items() if n != e.value}
    return _result(plan.with_(program=program, assignment=assignment, spills=spills),
                   Restore(plan.program, plan.assignment, plan.spills))


def _restore(plan: Plan, e: Restore, analysis: Analysis | None) -> EditResult:
    inverse = Restore(plan.program, plan.assignment, plan.spills, plan.budget if e.budget is not None else None)
    budget = plan.budget if e.budget is None else e.budget
    return _result(plan.with_(program=e.program, assignment=e.assignment, spills=e.spills, budget=budget), inverse)


def _move(plan: Plan, e: Move, analysis: Analysis | None) -> EditResult:
    program = plan.program
    reason = move_problem(program, e.index, e.to)
    if reason:
        return _reject(plan, reason, analysis)
    b = program.block_of(e.index)
    first = program.block_starts[b]
    body = list(program.blocks[b].instructions)
    body.insert(e.to - first, body.pop(e.index - first))
    blocks = list(program.blocks)
    blocks[b] = Block(blocks[b].name, tuple(body))
    moved = replace_blocks(program, blocks)
    reason = _spill_code_hides(plan, moved, e)
    if reason:
        return _reject(plan, reason, analysis)
    return _result(plan.with_(program=moved), Move(e.to, e.index))


def _spill_code_hides(plan: Plan, moved: Program, e: Move) -> str | None:
    """Why a move that keeps every dependence of the program with spill code still breaks one of the program
    without it: a reload ``%v.rK`` and a later definition ``%v.dK`` are apart with spill code and one value
    without it, and the plan's program is its spill code removed (what the identity proof checks)."""
    if not has_spill_code(plan.program, plan.spills):
        return None
    problem = reordering_problem(remove_spill_code(moved, plan.spills), remove_spill_code(plan.program, plan.spills),
                                 "the plan's")
    return None if problem is None else \
        f"cannot move instruction {e.index} to {e.to}: without its spill code the program would break a dependence ({problem})"


def _reallocate(plan: Plan, e: Reallocate, analysis: Analysis | None) -> EditResult:
    from engine.alloc import ALLOCATORS, allocate

    if e.allocator not in ALLOCATORS:
        return _reject(plan, f"unknown allocator {e.allocator!r} (known: {', '.join(sorted(ALLOCATORS))})", analysis)
    budget = plan.budget if e.budget is None else e.budget
    allocation = allocate(e.allocator, remove_spill_code(plan.program, plan.spills), budget)
    new = plan.with_(program=allocation.program, assignment=allocation.assignment, spills=allocation.spills,
                     budget=budget)
    return _result(new, Restore(plan.program, plan.assignment, plan.spills, plan.budget), allocation.analysis)


_APPLY = {Assign: _assign, Swap: _swap, Spill: _spill, Unspill: _unspill, Move: _move, Restore: _restore,
          Reallocate: _reallocate}


def describe_edit(edit) -> str:
    """One line naming an edit, as the undo history and ``regtune tune`` show it.

    Examples
    --------
    >>> describe_edit(Assign("acc_0_0", (4, 5))), describe_edit(Move(3, 1)), describe_edit(Reallocate("dsatur"))
    ('assign %acc_0_0 to R4:R5', 'move instruction 3 to 1', 're-allocate with dsatur at the new schedule')
    """
    if isinstance(edit, Assign):
        return f"assign %{edit.value} to {'R' + ':R'.join(map(str, edit.registers))}"
    if isinstance(edit, Swap):
        return f"swap R{edit.a} and R{edit.b}"
    if isinstance(edit, Spill):
        return f"spill %{edit.value}"
    if isinstance(edit, Unspill):
        return f"unspill %{edit.value}"
    if isinstance(edit, Move):
        return f"move instruction {edit.index} to {edit.to}"
    if isinstance(edit, Reallocate):
        within = f" within {edit.budget} registers" if edit.budget is not None else ""
        return f"re-allocate with {edit.allocator} at the new schedule{within}"
    return type(edit).__name__


def apply_edit(plan: Plan, edit, analysis: Analysis | None = None) -> EditResult:
    """Apply one edit to ``plan`` (see the module invariant); ``analysis``: the caller's analysis of ``plan.program``."""
    if analysis is not None and analysis.program is not plan.program:
        raise ValueError("apply_edit: the analysis given is not that of the plan's program")
    return _APPLY[type(edit)](plan, edit, analysis)


def move_problem(program: Program, index: int, to: int) -> str | None:
    """Why instruction ``index`` cannot move to position ``to``, or None."""
    n = len(program.instructions)
    if not (0 <= index < n and 0 <= to < n):
        return f"instruction {index if not 0 <= index < n else to} is outside the program (0-{n - 1})"
    b = program.block_of(index)
    if program.block_of(to) != b:
        return f"instruction {index} can move only within block {program.blocks[b].name!r}"
    ins = program.instructions[index]
    passed = range(index - 1, to - 1, -1) if to < index else range(index + 1, to + 1)
    widths = widths_of(program)
    for k in passed:
        why = dependence(ins, program.instructions[k], widths)
        if why:
            side = "before" if to < index else "after"
            return f"cannot move instruction {index} ({ins}) {side} instruction {k} ({program.instructions[k]}): {why}"
    return None
