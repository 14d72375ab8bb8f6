"""The optimal allocator: proved optima by hand, never beaten by a heuristic, checked plans, a time limit that
returns a bound and a gap, and a registry that keeps it out of the fast loops."""

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.alloc import (
    ALLOCATORS,
    EXPENSIVE,
    all_allocators,
    allocate,
    check_allocator,
)
from engine.alloc.optimal import (
    executed_spill_instructions,
    gap_rows,
    is_proved,
    registers_of,
    solve,
    spill_costs,
    spill_model,
)
from engine.analysis.liveness import analyze
from engine.base.errors import AllocationError
from engine.check.verify import static_conflicts, verify_execution
from engine.ir.parser import parse
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from tests.engine.strategies import programs

# The interference graph of this loop is a 5-cycle a-b-c-d-e (e is carried around the back edge and meets a)
# joined to %i (the counter, live through the loop) and to the pair %addr (live everywhere): MAXLIVE is 5
# (a pair, the counter and two of the cycle), but a 5-cycle needs 3 registers, so 2 + 1 + 3 = 6 are needed
# and 6 suffice (pair 0-1, counter 2, cycle 3-5).
CYCLE5 = """.kernel cycle5
.block entry
  %addr:u64 = param C
  %i:i32 = mov 0
  %e:f32 = mov 1
.block loop
  %a:f32 = mov 2
  %b:f32 = add %e, 1
  %c:f32 = add %a, 1
  %d:f32 = add %b, 1
  %e:f32 = add %c, 1
  st.global %addr, 0, %d
  %i:i32 = add %i, 1
  %p:pred = setp.lt %i, 3
  cbr %p, loop, done
.block done
  st.global %addr, 4, %e
  exit
"""


def test_optimal_is_registered_as_expensive_and_kept_out_of_the_fast_loops():
    assert "optimal" in EXPENSIVE and "optimal" not in ALLOCATORS
    assert all_allocators() == [*sorted(ALLOCATORS), "optimal"]
    check_allocator("optimal")
    # the sweep's loop over every allocator runs the fast ones only
    from engine.sweep import evaluate_program

    assert set(evaluate_program(parse(CYCLE5))["allocators"]) == set(ALLOCATORS)
    with pytest.raises(AllocationError, match="takes no options"):
        allocate("dsatur", parse(CYCLE5), 255, time_limit=1)


def test_the_five_cycle_needs_six_registers_where_maxlive_is_five():
    p = parse(CYCLE5)
    a = allocate("optimal", p, 255)
    assert analyze(p).maxlive == 5
    assert registers_of(a) == 6 and is_proved(a), a.notes
    assert static_conflicts(a.program, a.assignment, a.spills, 255) == []


def test_the_five_cycle_at_four_registers_spills_addr_and_e_for_13_executed_instructions():
    # by hand: the store in the loop reads %addr (2) and %d while %e and %i are live: 5 > 4, so %addr, %e or %i
    # goes; %addr alone (5: a store, 3 + 1 reloads) leaves 5 there, so %e (8: 4 stores, 4 reloads) or %i (10)
    # joins it; keeping %addr leaves 2 registers for the cycle and the counter (%i 10 plus a cycle value >= 6)
    a = allocate("optimal", parse(CYCLE5), 4)
    assert sorted(a.spills) == ["addr", "e"] and executed_spill_instructions(a) == 13 and is_proved(a), a.notes
    plan = planned_and_run(a)  # the interpreter's count on a real run agrees with the trip-count model
    assert plan.predicted.spill_stores_executed + plan.predicted.spill_loads_executed == 13
    verify_execution(a.program, a.assignment, a.spills, seeds=(0, 1), original=a.original)


def _never_beaten(program, budget):
    best = allocate("optimal", program, budget, time_limit=30)
    assert is_proved(best), best.notes
    assert static_conflicts(best.program, best.assignment, best.spills, budget, best.analysis, best.spill_code) == []
    for name in sorted(ALLOCATORS):
        try:  # spill-everywhere, optimal's model: rematerialisation is another problem (it computes, not spills)
            a = allocate(name, program, budget, spill_everywhere=True)
        except AllocationError:
            continue
        if best.spills or a.spills:
            assert executed_spill_instructions(a) >= executed_spill_instructions(best), (name, best.notes)
        else:
            assert registers_of(a) >= registers_of(best), (name, best.notes)
    return best


@pytest.mark.parametrize("config,budgets", [((2, 2, 2), (255, 9, 6)), ((4, 4, 4), (255, 28, 16)),
                                            ((3, 5, 2), (255, 12))], ids=str)
def test_no_heuristic_beats_optimal_on_gemm(config, budgets):
    program, _ = build_gemm(Gemm(*config))
    for budget in budgets:
        best = _never_beaten(program, budget)
        verify_execution(best.program, best.assignment, best.spills, seeds=(0,), original=best.original)


def test_no_heuristic_beats_optimal_on_the_five_cycle():
    for budget in (255, 5, 4, 3):
        _never_beaten(parse(CYCLE5), budget)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), budget=st.sampled_from([255, 8, 6]))
def test_no_heuristic_beats_optimal_on_random_programs(program, budget):
    try:
        allocate("chaitin-briggs", program, budget)
    except AllocationError:  # too few registers for the spill temporaries: optimal may still find a way
        pass
    try:
        best = _never_beaten(program, budget)
    except AllocationError as exc:
        assert "cannot be allocated" in str(exc)
        return
    verify_execution(best.program, best.assignment, best.spills, seeds=(0,), original=best.original)


def test_a_short_time_limit_returns_a_bound_and_a_gap_not_a_hang():
    # the full spill model of GEMM 4x4x4 at 16 registers, given 0.05 s: CP-SAT stops with its best bound
    program, _ = build_gemm(Gemm(4, 4, 4))
    a = analyze(program)
    model, _, _ = spill_model(a, 16, spill_costs(a), set())
    started = time.perf_counter()
    sol = solve(model, "cp-sat", 0.05, workers=1)
    assert time.perf_counter() - started < 5
    assert sol.status in ("feasible", "unknown") and sol.bound is not None
    # through the allocator, GEMM 8x8x8 at 40 registers (proved in about 1.5 s given 10 s)
    big, _ = build_gemm(Gemm(8, 8, 8))
    started = time.perf_counter()
    found = allocate("optimal", big, 40, time_limit=0.05)
    assert time.perf_counter() - started < 15  # building the models is outside the solver's limit: about 2 s
    note = found.notes[-1]
    assert note.startswith("optimal") or ("bound" in note and "gap" in note), found.notes
    assert static_conflicts(found.program, found.assignment, found.spills, 40) == []


def test_gap_rows_name_every_allocator_and_the_gap():
    rows = gap_rows(parse(CYCLE5), 4)
    by = {r.allocator: r for r in rows}
    assert [r.allocator for r in rows] == all_allocators()
    assert by["optimal"].gap == "0" and by["optimal"].executed_spill_instructions == 13
    assert by["naive"].gap.startswith("+") and "executed spill instructions" in by["naive"].gap


def test_bad_options_are_one_line_errors():
    with pytest.raises(AllocationError, match="time limit must be a positive"):
        allocate("optimal", parse(CYCLE5), 255, time_limit=0)
    with pytest.raises(AllocationError, match="unknown solver"):
        allocate("optimal", parse(CYCLE5), 255, solver="gurobi")


def test_highs_reaches_the_same_optimum():
    a = allocate("optimal", parse(CYCLE5), 255, solver="highs")
    assert registers_of(a) == 6 and is_proved(a), a.notes
    b = allocate("optimal", parse(CYCLE5), 4, solver="highs")
    assert executed_spill_instructions(b) == 13 and is_proved(b), b.notes


def test_a_missing_solver_is_a_one_line_error_naming_the_extra():
    from engine.alloc.optimal import _import

    with pytest.raises(AllocationError, match=r"needs no_such_solver: pip install 'regtune\[optimal\]'"):
        _import("no_such_solver_module", "no_such_solver")
