"""Linear scan with lifetime holes against the hull scan and MAXLIVE, on the GEMM and MHA programs the
benchmarks sample: chordal programs reach MAXLIVE, none needs more registers than the hull scan, and every
plan passes the static checker and the execution check."""

import networkx as nx
import pytest

from engine.alloc import allocate
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts, verify_execution
from engine.claims import NOTE_EXAMPLE
from engine.plan import registers_used
from engine.workloads.gemm import SCHEDULES, Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha


def _programs():
    out = [(f"gemm {m}x{n}x{k} {s}", build_gemm(Gemm(m, n, k), schedule=s)[0])
           for (m, n, k) in ((4, 4, 4), (8, 8, 8), (6, 4, 5)) for s in SCHEDULES]
    out += [(f"mha note {'+'.join(s) or 'baseline'}", build_mha(NOTE_EXAMPLE, s)[0])
            for s in ((), ("head-shared",), ("fp16-softmax",), ("sliding-window", "head-shared"))]
    out.append(("mha 16x1x32x2", build_mha(Mha(16, 1, 32, 2))[0]))
    return out


PROGRAMS = _programs()


@pytest.mark.parametrize("label,program", PROGRAMS, ids=[label for label, _ in PROGRAMS])
def test_holes_reach_maxlive_on_chordal_programs_and_never_exceed_the_hull(label, program):
    analysis = analyze(program)
    holes = allocate("linear-scan", program, 255, analysis)
    hull = allocate("linear-scan-hull", program, 255, analysis)
    assert not holes.spills
    used = registers_used(holes.assignment)
    if not hull.spills:
        assert used <= registers_used(hull.assignment)
    if nx.is_chordal(analysis.interference.graph):
        assert used <= analysis.maxlive + 1  # + 1: an even pair may leave one register of alignment
        if not (analysis.widths == 2).any():
            assert used == analysis.maxlive
    assert static_conflicts(holes.program, holes.assignment, holes.spills, 255) == []


def test_the_design_notes_non_chordal_mha_program_needs_maxlive_and_spills_nothing_at_64():
    """The issue's case: head-shared makes the one non-chordal program, where the hull scan needs 169."""
    program = build_mha(NOTE_EXAMPLE, ("head-shared",))[0]
    analysis = analyze(program)
    assert not nx.is_chordal(analysis.interference.graph)
    assert registers_used(allocate("linear-scan-hull", program, 255, analysis).assignment) > 2 * analysis.maxlive
    for budget in (255, 96, 64):
        plan = allocate("linear-scan", program, budget, analysis)
        assert plan.spills == {}
        assert registers_used(plan.assignment) == analysis.maxlive


@pytest.mark.parametrize("budget", [24, 16])
def test_spilled_plans_verify_statically_and_by_execution(budget):
    for program in (build_gemm(Gemm(4, 4, 4), schedule="k-outer")[0], build_mha(Mha(16, 1, 32, 2))[0]):
        plan = allocate("linear-scan", program, budget)
        assert plan.spills
        assert registers_used(plan.assignment) <= budget
        assert static_conflicts(plan.program, plan.assignment, plan.spills, budget) == []
        verify_execution(plan.program, plan.assignment, plan.spills)
