"""The prediction stage: a plan's figures from the model (registers, MAXLIVE, spills, banks, executed spills).

Allocators assign and spill and measure nothing; this stage computes what
the model predicts of their plans, and a plan's ``predicted`` field holds
what it returned. The static figures read only the plan; the executed-spill
figures run the interpreter, so a caller asks for them on their own
(:func:`execution_figures`) where a run pays (a plan file, a report), and
leaves them out where it does not (a sweep, an interactive edit).

Invariant: every figure is computed from the plan it describes, never
copied from another plan or a file; the same plan gives the same figures.

Examples
--------
>>> from engine.alloc import allocate
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
>>> a = allocate("linear-scan", p, budget=8)
>>> figures = predict(a.plan(), a.analysis, a.spill_code)
>>> figures.registers, figures.maxlive, figures.spill_loads, figures.executed
(1, 1, 0, False)
>>> predicted_plan(a).predicted == figures
True
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.analysis.liveness import Analysis, analyze
from engine.base.errors import InterpreterError
from engine.check.verify import ReferenceRuns, deepest_trace
from engine.ir.core import Program
from engine.ir.spill import SpillCode, has_spill_code, remove_spill_code, spill_code_of
from engine.model.arch import DEFAULT_ARCH, bank_conflicts, load_arch
from engine.plan import Figures, Plan, registers_used
from engine.workloads import input_model


def predict(plan: Plan, analysis: Analysis | None = None, spill_code: SpillCode | None = None,
            original: Analysis | None = None) -> Figures:
    """The plan's static predicted figures (its executed-spill figures left out: :func:`planned_and_run`).

    ``maxlive`` is the program's MAXLIVE before spill code (one meaning
    everywhere); ``peak_with_spill_code`` is the largest pressure of the
    plan's program with its spill code, and ``peak_instruction`` where that
    is (an index into the plan's program). ``analysis`` and ``spill_code``
    of ``plan.program``, and ``original``, the analysis of the program
    without spill code, when the caller has them (an allocation carries all
    three), save computing them again.
    """
    analysis = analysis if analysis is not None else analyze(plan.program)
    code = spill_code if spill_code is not None else spill_code_of(plan.program, plan.spills)
    return Figures(
        registers=registers_used(plan.assignment),
        maxlive=program_maxlive(plan, analysis, original),
        peak_with_spill_code=analysis.maxlive,
        peak_instruction=analysis.peak,
        spilled_values=len(plan.spills),
        spill_stores=len(code.stores),
        spill_loads=len(code.loads),
        local_bytes=_local_bytes(plan),
        rematerialised_values=len(code.rematerialised),
        remat_instructions=len(code.remats),
        moves=moves(plan.program, plan.assignment),
        **_banks(plan, analysis),
    )


def _local_bytes(plan: Plan) -> int:
    """4 bytes per word of each spill slot, a slot as wide as the widest value spilled to it (values that
    are never live at once may share one)."""
    words: dict = {}
    for v, slot in plan.spills.items():
        if v in plan.program.values:
            words[slot] = max(words.get(slot, 0), plan.program.values[v].width)
    return 4 * sum(words.values())


def program_maxlive(plan: Plan, analysis: Analysis | None = None, original: Analysis | None = None) -> int:
    """MAXLIVE of the plan's program before spill code (``analysis``: the plan program's, used when there is
    no spill code; ``original``: the analysis of the program without it, when the caller has it).

    Examples
    --------
    >>> from engine.alloc import allocate
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %w:f32 = mov 3\\n"
    ...           "  %z:f32 = add %x, %y\\n  %v:f32 = add %z, %w\\n  st.global %v, 0, %v\\n  exit\\n")
    >>> a = allocate("linear-scan", p, budget=2)
    >>> program_maxlive(a.plan()), analyze(a.plan().program).maxlive
    (3, 2)
    """
    if not has_spill_code(plan.program, plan.spills):
        return (analysis or analyze(plan.program)).maxlive
    return (original if original is not None else analyze(remove_spill_code(plan.program, plan.spills))).maxlive


def moves(program: Program, assignment: dict) -> int:
    """Register-to-register ``mov`` instructions whose two registers differ.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov %x\\n  st.global %y, 0, %y\\n  exit\\n")
    >>> moves(p, {"x": (0,), "y": (0,)}), moves(p, {"x": (0,), "y": (1,)})
    (0, 1)
    """
    return sum(1 for ins in program.instructions
               if ins.opcode == "mov" and ins.defs and ins.guard is None and len(ins.uses) == 1
               and assignment.get(ins.defs[0].name) != assignment.get(ins.uses[0]))


def _banks(plan: Plan, analysis: Analysis) -> dict:
    """Bank conflicts of the assignment under the plan's arch (the default arch when it names none)."""
    arch = load_arch(plan.options.get("arch", DEFAULT_ARCH))
    total, _ = bank_conflicts(plan.program, plan.assignment, arch.bank_model, analysis)
    return {"bank_conflicts": total, "bank_model": f"{arch.name}: {arch.bank_model.name}"}


def execution_figures(plan: Plan, original: Program | None = None, spill_code: SpillCode | None = None,
                      runs: ReferenceRuns | None = None) -> dict:
    """Spill stores and loads executed on the execution check's deepest input; None and a note where the
    run cannot finish (the :class:`engine.plan.Figures` fields of that name, to ``dataclasses.replace``).

    The input is the check's seed whose run goes furthest into the kernel's
    body (:func:`engine.check.verify.deepest_trace`, inputs drawn from the plan's
    workload, :func:`engine.workloads.input_model`). Spill code adds no
    branch, so each spill instruction runs as often as its block: the block
    counts come from the interpreter's run of the program without spill code
    (``original``, when the caller has it; the path a correct plan takes; a
    plan that fails verification takes another and its figures say where
    its spill code would run on the correct path). ``runs``, the caller's
    memo of reference runs, lets a later execution check reuse them.
    """
    code = spill_code if spill_code is not None else spill_code_of(plan.program, plan.spills)
    original = original if original is not None else remove_spill_code(plan.program, plan.spills)
    try:
        executed = deepest_trace(original, input_model(plan.workload, plan.options), runs=runs).executed
    except InterpreterError as exc:
        return {"spill_stores_executed": None, "spill_loads_executed": None, "executed_note": str(exc)}
    visits = [executed[i] if i < len(executed) else 0 for i in original.block_starts]
    block_of = np.repeat(np.arange(len(visits)), [len(b.instructions) for b in plan.program.blocks])
    return {"spill_stores_executed": int(sum(visits[b] for b in block_of[list(code.stores)].tolist())),
            "spill_loads_executed": int(sum(visits[b] for b in block_of[list(code.loads)].tolist()))}


def predicted_plan(allocation, **fields) -> Plan:
    """The allocation as a plan with its static figures (``fields``: workload, options)."""
    plan = allocation.plan(**fields)
    return plan.with_(predicted=predict(plan, allocation.analysis, allocation.spill_code,
                                            allocation.original_analysis))


def planned_and_run(allocation, runs: ReferenceRuns | None = None, **fields) -> Plan:
    """The allocation as a plan with its static and executed-spill figures (``fields``: workload, options;
    ``runs``: the caller's memo of reference runs, for an execution check that follows)."""
    plan = predicted_plan(allocation, **fields)
    figures = execution_figures(plan, allocation.original, allocation.spill_code, runs)
    return plan.with_(predicted=replace(plan.predicted, **figures))
