"""engine.tune: incremental liveness against the full analysis, dependences kept (the identity proof), MAXLIVE
never raised, the edits legal one by one and the tuned plan accepted by the checkers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.admit import prove_allocation
from engine.alloc import allocate
from engine.alloc.hand import Move, Reallocate, apply_edit
from engine.analysis.dependence import reordering_problem
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts
from engine.identity import prove_identity
from engine.planfile import check_plan
from engine.predict import predicted_plan
from engine.tune import (
    TuneError,
    apply_edits,
    block_graph,
    lower_bound,
    program_schedules,
    scheduled_program,
    tune,
)
from engine.workloads import BuildOptions, build_workload

GEMM = [({"kind": "gemm", "m": 4, "n": 4, "k": 4}, {"schedule": "k-outer"}),
        ({"kind": "gemm", "m": 4, "n": 4, "k": 4}, {"schedule": "load-all-first"}),
        ({"kind": "gemm", "m": 6, "n": 4, "k": 5}, {"schedule": "dot"}),
        ({"kind": "gemm", "m": 3, "n": 5, "k": 2}, {})]
MHA = [({"kind": "mha", "heads": 16, "batch": 1, "head_dim": 32, "groups": 1}, {}),
       ({"kind": "mha", "heads": 32, "batch": 1, "head_dim": 64, "groups": 4}, {})]


def _plan(workload, options, allocator="dsatur"):
    program, w, o = build_workload(workload, BuildOptions(**options))
    return predicted_plan(allocate(allocator, program), workload=w, options=o)


def _pressure(schedules) -> np.ndarray:
    return np.array([p for s in schedules for p in s.pressure], dtype=np.int64)


@pytest.mark.parametrize("workload,options", GEMM[:2] + MHA[:1])
def test_incremental_liveness_equals_full_analysis(workload, options):
    """Random legal moves, each priced incrementally; after each, the pressure equals analyze()'s of the
    reordered program, everywhere."""
    program, _, _ = build_workload(workload, BuildOptions(**options))
    schedules = program_schedules(program)
    assert _pressure(schedules).tolist() == analyze(program).pressure.tolist()
    rng = random.Random(7)
    moved = 0
    for _ in range(60):
        s = rng.choice([s for s in schedules if s.n > 2])
        a, b = rng.randrange(s.n), rng.randrange(s.n)
        if a == b or not s.legal(a, b):
            continue
        s.move(a, b)
        moved += 1
        now = scheduled_program(program, schedules)
        assert reordering_problem(now, program) is None
        assert _pressure(schedules).tolist() == analyze(now).pressure.tolist()
    assert moved > 10


def test_block_graph_orders_what_dependence_orders():
    """Every pair engine.analysis.dependence orders is ordered by the graph (directly or through others)."""
    from engine.analysis.dependence import dependence, widths_of

    program, _, _ = build_workload(*[GEMM[3][0], BuildOptions()])
    widths = widths_of(program)
    for block in program.blocks:
        body = block.instructions
        preds, _ = block_graph(body, widths)
        reach = [set() for _ in body]
        for i in range(len(body)):
            for p in preds[i]:
                reach[i] |= reach[p] | {p}
        for i in range(len(body)):
            for j in range(i):
                if dependence(body[j], body[i], widths):
                    assert j in reach[i], (j, i)


@pytest.mark.parametrize("workload,options", GEMM + MHA)
def test_tune_keeps_dependences_and_never_raises_maxlive(workload, options):
    plan = _plan(workload, options)
    before = analyze(plan.program).maxlive
    r = tune(plan, max(1, before - 8), time_limit=5)
    assert r.maxlive_after <= before == r.maxlive_before
    assert analyze(r.plan.program).maxlive == r.maxlive_after
    assert r.lower_bound <= r.maxlive_after
    identity = prove_identity(r.plan.program, r.plan.spills, r.plan.workload, r.plan.options)
    assert identity is not None and identity.moved >= 0
    assert static_conflicts(r.plan.program, r.plan.assignment, r.plan.spills, r.plan.budget) == []
    check_plan(r.plan, "tuned")
    prove_allocation(r.plan, "tuned")


def test_edits_apply_one_by_one_to_the_tuned_plan():
    """Each Move passes move_problem where it is applied; the moves then Reallocate give the tuned plan."""
    plan = _plan(*GEMM[1])
    r = tune(plan, 20, time_limit=5)
    assert r.moves > 0 and isinstance(r.edits[-1], Reallocate)
    assert all(isinstance(e, Move) for e in r.edits[:-1])
    got = apply_edits(plan, r.edits)
    assert got.program == r.plan.program and got.assignment == r.plan.assignment
    inverse = apply_edit(plan, r.edits[0]).inverse          # each edit is undoable
    assert apply_edit(apply_edit(plan, r.edits[0]).plan, inverse).plan.program == plan.program


def test_tune_lowers_gemm_k_outer():
    """GEMM 4x4x4 load-all-first holds every A and B value at once: the search frees registers."""
    plan = _plan(*GEMM[1])
    r = tune(plan, 1, time_limit=5)
    assert r.maxlive_after < r.maxlive_before
    assert r.registers_after < r.registers_before
    assert not r.reached and r.why_not


def test_lower_bound_is_below_every_maxlive_found():
    for workload, options in GEMM[:3]:
        program, _, _ = build_workload(workload, BuildOptions(**options))
        assert 0 < lower_bound(program) <= analyze(program).maxlive


def test_refusals():
    plan = _plan(*GEMM[3])
    with pytest.raises(TuneError, match="outside 1..255"):
        tune(plan, 300)
    spilled = predicted_plan(allocate("dsatur", plan.program, budget=4))
    with pytest.raises(TuneError, match="without spill code.*at a larger budget first"):
        tune(spilled, 4)


def test_a_naive_plan_spilling_at_255_is_told_to_change_allocator_not_budget():
    """'re-allocate it at a larger budget first' was the advice for a plan already at budget 255."""
    program, _, _ = build_workload({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"},
                                   BuildOptions(schedule="k-outer"))
    naive = predicted_plan(allocate("naive", program, budget=255))
    assert naive.spills
    with pytest.raises(TuneError, match="already 255, the most a thread has: allocate with dsatur first"):
        tune(naive, 80)
