"""engine.tune: incremental liveness against the full analysis, dependences kept (the identity proof), MAXLIVE
never raised, the edits legal one by one and the tuned plan accepted by the checkers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.admit import prove_allocation
from engine.alloc import allocate
from engine.alloc.hand import Move, Reallocate, apply_edit
from engine.analysis.dependence import reordering_problem, widths_of
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts
from engine.identity import prove_identity
from engine.ir.parser import parse
from engine.check.symbolic import check_allocation
from engine.ir.spill import remove_spill_code, spill_code_of
from engine.planfile import check_plan
from engine.predict import predicted_plan
from engine.tune import (
    TuneError,
    _ancestors,
    _min_cut_pressure,
    _no_gap,
    _value_instances,
    apply_edits,
    block_bound,
    block_graph,
    lower_bound,
    program_bound,
    program_schedules,
    refute,
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


def _random_order(s, rng) -> list:
    """A uniformly chosen ready instruction at each step: a random order within the block's dependences."""
    left = [len(p) for p in s.preds]
    ready, order = [i for i in range(s.n) if not left[i]], []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for j in s.succs[i]:
            left[j] -= 1
            if not left[j]:
                ready.append(j)
    return order


BOUNDED = GEMM + MHA + [({"kind": "gemm", "m": 8, "n": 8, "k": 8}, {"schedule": "k-outer"}),
                        ({"kind": "gemm", "m": 8, "n": 4, "k": 6}, {"schedule": "load-all-first"}),
                        ({"kind": "mha", "heads": 16, "batch": 1, "head_dim": 64, "groups": 2}, {})]


@pytest.mark.parametrize("workload,options", BOUNDED)
def test_bound_is_never_above_a_schedule(workload, options):
    """The bound against the program's own order and 30 random orders within the dependences (each block's
    MAXLIVE against its own bound); the tuned schedules are checked against it in the tests above and below."""
    program, _, _ = build_workload(workload, BuildOptions(**options))
    schedules = program_schedules(program)
    bounds = [block_bound(s)[0] for s in schedules]
    assert max(s.weight(s.live_out) for s in schedules) <= max(bounds) <= analyze(program).maxlive
    rng = random.Random(11)
    for s, bound in zip(schedules, bounds):
        for _ in range(30):
            s.set_order(_random_order(s, rng))
            assert bound <= s.maxlive


def test_gemm_8x8x8_k_outer_bound_is_the_last_accumulator_born():
    """GEMM 8x8x8 k-outer: when the last of the 64 accumulators is born, the other 63 are live, and so are alpha,
    beta, C's address and A's and B's (or the rest of the last accumulator's operands): no order has MAXLIVE below
    that (bound 4). The search stops at 81, and refute's wider split (the births and the loads of A and B)
    proves 80 out of reach for a schedule alone: every random order and the tuned one are at or above its
    bound. The re-allocation at 80 registers reaches the step all the same, by reading %beta again where it is
    used (rematerialised, nothing spilled)."""
    plan = _plan({"kind": "gemm", "m": 8, "n": 8, "k": 8}, {"schedule": "k-outer"})
    found = program_bound(plan.program)
    assert found.block == "body" and "the value born last of the 64 mul births of block {block}" in found.case
    assert {"alpha", "beta", "ta", "tb", "tc"} <= set(found.live)
    assert 64 + 1 + 1 + 3 * 2 <= found.registers <= analyze(plan.program).maxlive
    r = tune(plan, 80, time_limit=3)
    assert r.maxlive_after == 81 < r.maxlive_before and r.reached and r.registers_after == 80
    assert not r.plan.spills and r.plan.budget == 80 and r.edits[-1] == Reallocate(r.allocator, 80)
    assert spill_code_of(r.plan.program, {}).rematerialised and r.why_not is None
    assert check_allocation(r.plan.program, r.plan.assignment, r.plan.spills) == []
    tuned = remove_spill_code(r.plan.program, r.plan.spills)
    proof = refute(tuned, program_schedules(tuned), 80)
    assert proof is not None and proof.registers == 81
    assert "64 mul births of block body and the 96 ld.global instructions their descendants read" in \
        proof.reason(widths_of(tuned))
    body = program_schedules(plan.program)[1]
    rng = random.Random(5)
    for _ in range(20):
        body.set_order(_random_order(body, rng))
        assert proof.registers <= body.maxlive


def test_refute_is_never_above_the_search_on_small_gemms():
    """GEMM 4x4x6 k-outer: refute's bound where the search stops (29 there), none above it."""
    plan = _plan({"kind": "gemm", "m": 4, "n": 4, "k": 6}, {"schedule": "k-outer"})
    r = tune(plan, 1, time_limit=3)
    program = remove_spill_code(r.plan.program, r.plan.spills)
    assert refute(program, program_schedules(program), r.maxlive_after) is None
    proof = refute(program, program_schedules(program), r.maxlive_after - 1)
    assert proof is None or proof.registers == r.maxlive_after


def _small_blocks(count: int, rng) -> list:
    """Random straight-line blocks of 4 to 8 instructions over a few values, some live in (read before any
    definition), some live out (read by the next block), some redefined, some under a guard (which kills
    nothing), a 64-bit address live through."""
    blocks = []
    names = ["a", "b", "c", "d"]
    for _ in range(count):
        lines = []
        for _ in range(rng.randrange(3, 7)):
            x, y, z = rng.choice(names), rng.choice(names), rng.choice(names)
            lines.append(rng.choice([f"  %{x}:f32 = add %{y}, %{z}", f"  %{x}:f32 = ld.global %p, 0",
                                     f"  %{x}:f32 = mul %{y}, 2", f"  st.global %p, 4, %{y}",
                                     f"  %{x}:f32 = @%q mov %{y}"]))
        text = ".kernel k\n.block top\n  %p:u64 = param P\n  %q:pred = setp.lt %p, 4\n"
        text += "".join(f"  %{v}:f32 = mov 1\n" for v in names)
        text += ".block b\n" + "\n".join(lines) + "\n  st.global %p, 8, %a\n"
        text += ".block tail\n" + "".join(f"  st.global %p, 12, %{v}\n" for v in names[1:3])
        blocks.append(parse(text + "  exit\n"))
    return blocks


def _every_order(s) -> list:
    out = []

    def grow(order, left, ready):
        if not ready:
            out.append(list(order))
            return
        for i in sorted(ready):
            order.append(i)
            now = set(ready) - {i}
            for j in s.succs[i]:
                left[j] -= 1
                if not left[j]:
                    now.add(j)
            grow(order, left, now)
            for j in s.succs[i]:
                left[j] += 1
            order.pop()

    grow([], [len(p) for p in s.preds], {i for i in range(s.n) if not s.preds[i]})
    return out


def test_the_minimum_cut_is_the_least_pressure_over_every_order():
    """On random small blocks, every order enumerated: at each instruction the cut's pressure (and the registers
    live into it) is exactly the least over every order, the no-gap count never above it, and the block's bound
    never above its best MAXLIVE."""
    rng = random.Random(3)
    checked = 0
    for program in _small_blocks(80, rng):
        s = program_schedules(program)[1]
        orders = _every_order(s)
        least, into = [10**9] * s.n, [10**9] * s.n
        best = 10**9
        for order in orders:
            s.set_order(order)
            best = min(best, s.maxlive)
            for p, i in enumerate(order):
                least[i] = min(least[i], s.pressure[p])
                into[i] = min(into[i], s.weight(s._live_before(p)))
        anc, insts = _ancestors(s), _value_instances(s)
        gaps = {b: _no_gap(anc, chain, (s.live_out >> b) & 1) for b, chain in insts.items()}
        for x in range(s.n):
            got, live = _min_cut_pressure(s, anc, insts, x)
            assert got == least[x] and s.weight(live) == got, (program, x)
            assert _min_cut_pressure(s, anc, insts, x, entry=True)[0] == into[x], (program, x)
            forced = s.weight(s.defs[x] | sum(1 << b for b, g in gaps.items() if g[x]))
            assert forced <= got, (program, x)
        assert block_bound(s)[0] <= best
        for target in range(best):
            proof = refute(program, program_schedules(program), target)
            assert proof is None or target < proof.registers <= best, (program, target)
        checked += len(orders) > 1
    assert checked > 40


def test_mha_bound_says_no_reordering_reaches_the_next_step():
    """The design note's MHA (32 heads, head_dim 64, 4 groups): the softmax holds a row's 16 scores while the other
    rows' scores or their keys wait, on top of the 43 registers live round the loop; ptxas-free."""
    plan = _plan(*MHA[1])
    program = plan.program
    found = program_bound(program)
    assert found.registers > 96 and found.block == "kv0" and found.loop
    assert found.registers <= analyze(program).maxlive
    r = tune(plan, 96, time_limit=2)
    assert not r.reached and r.lower_bound == found.registers
    assert r.why_not.startswith("no reordering within blocks can reach 96") and "round its loop back edge" in r.why_not


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
