"""Allocator invariants across every strategy, checked statically and by execution."""

import collections

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from engine.alloc import ALLOCATORS, allocate
from engine.analysis.liveness import analyze
from engine.base.errors import AllocationError, VerificationError
from engine.base.limits import MAX_SPILL_SLOT
from engine.check.verify import static_conflicts, verify_execution
from engine.ir.parser import parse
from engine.plan import registers_used
from engine.planfile import plan_from_dict, plan_to_dict
from engine.predict import predicted_plan
from tests.engine.strategies import programs

STRATEGIES = sorted(ALLOCATORS)
BUDGETS = [255, 16, 10, 8]


def verify_plan(plan):
    """Both proofs: the validity rules and execution on random inputs."""
    assert static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget) == []
    verify_execution(plan.program, plan.assignment, plan.spills)


@pytest.mark.parametrize("name", STRATEGIES)
@given(program=programs(), budget=st.sampled_from(BUDGETS))
def test_every_allocator_is_correct_on_random_programs(name, program, budget):
    plan = predicted_plan(allocate(name, program, budget))
    note(str(plan.program))
    event("spilled" if plan.spills else "no spill")
    event(f"{len(program.blocks)} blocks" if len(program.blocks) < 4 else "4+ blocks")
    verify_plan(plan)
    assert plan.allocator == name
    assert plan.predicted.registers <= budget
    assert set(plan.spills) <= set(plan.program.values)
    assert bool(plan.spills) == (plan.predicted.spill_stores > 0)


@pytest.mark.parametrize("name", ["linear-scan", "linear-scan-hull", "chaitin-briggs"])
@given(program=programs(mixed=False, control=False, holes=False), budget=st.sampled_from([255, 32, 12]))
def test_interval_graphs_colour_with_maxlive_registers(name, program, budget):
    maxlive = analyze(program).maxlive
    plan = predicted_plan(allocate(name, program, budget))
    if maxlive <= budget:
        assert plan.spills == {}
        assert plan.predicted.registers == maxlive
    else:   # spilled, or rematerialised (computed again where read: no slot)
        assert plan.spills or plan.predicted.rematerialised_values


def test_dsatur_excess_over_maxlive_on_a_fixed_sample(capsys):
    """The distribution of dsatur's excess over 200 seeded programs, printed for the record."""
    counts = collections.Counter()

    @given(programs(mixed=False, control=False, holes=False))
    def sample(program):
        plan = predicted_plan(allocate("dsatur", program))
        assert static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget) == []
        counts[plan.predicted.registers - analyze(program).maxlive] += 1

    from hypothesis import settings

    settings(max_examples=200, derandomize=True, database=None)(sample)()
    with capsys.disabled():
        print(f"\n  dsatur registers - MAXLIVE over {sum(counts.values())} straight-line programs: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) == 200 and min(counts) >= 0


@given(programs(mixed=True))
def test_naive_never_reuses_a_register_when_everything_fits(program):
    plan = predicted_plan(allocate("naive", program))
    if not plan.spills:
        regs = [r for v in plan.assignment.values() for r in v]
        assert len(regs) == len(set(regs))
        assert registers_used(plan.assignment) >= analyze(program).maxlive


@given(program=programs(), budget=st.sampled_from([16, 10]))
def test_spill_loop_ends_with_every_value_in_registers_of_its_width(program, budget):
    # The spill loop must terminate and never leave a value without a register.
    for name in STRATEGIES:
        plan = predicted_plan(allocate(name, program, budget))
        assert all(plan.program.values[n].width == len(r) for n, r in plan.assignment.items())


def test_unknown_allocator_is_rejected_before_any_work():
    with pytest.raises(AllocationError, match=r"unknown allocator 'greedy' \(known: chaitin-briggs, dsatur, linear-scan, linear-scan-hull, naive, optimal\)"):
        allocate("greedy", None)


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_budget_below_one_instructions_needs_names_the_instruction(name):
    program = parse(".kernel k\n.block b\n  %p:u64 = param P\n  %x:f32 = mov 1\n  %y:f32 = fma %x, %x, %x\n  st.global %p, 0, %y\n  exit\n")
    with pytest.raises(AllocationError, match=r"a budget of 2 registers is too small for k: %.* gets no register at instruction \d+"):
        allocate(name, program, 2)


@pytest.mark.parametrize("name", STRATEGIES)
def test_spilling_past_the_last_slot_a_plan_may_name_is_refused(name):
    """The program's own spill code at the last slot leaves none for the allocator: its plan could not be loaded."""
    loads = "".join(f"  %v{i}:f32 = ld.global %pa, {4 * i}\n" for i in range(8))
    stores = "".join(f"  st.global %pa, {4 * i}, %v{i}\n" for i in range(8))
    text = f".kernel k\n.block b\n  %pa:u64 = param A\n  %w:f32 = mov 1\n  st.local {{}}, %w\n{loads}{stores}  exit\n"
    with pytest.raises(AllocationError, match=rf"{name}: k would spill to slots 131072\.\.131\d+, beyond 131071"):
        allocate(name, parse(text.format(MAX_SPILL_SLOT)), 6)
    allocation = allocate(name, parse(text.format(MAX_SPILL_SLOT - 8)), 6)
    assert allocation.spills and max(allocation.spills.values()) <= MAX_SPILL_SLOT
    plan_from_dict(plan_to_dict(allocation.plan()), "spilled.json")


def test_wrong_assignment_is_caught_by_execution_as_well():
    program = parse(".kernel k\n.block b\n  %p:u64 = param P\n  %x:f32 = mov 1\n  %y:f32 = mov 2\n  st.global %p, 0, %x\n  st.global %p, 4, %y\n  exit\n")
    bad = {"p": (0, 1), "x": (2,), "y": (2,)}
    assert [c.kind for c in static_conflicts(program, bad, {}, 8)] == ["overlap"]
    with pytest.raises(VerificationError, match=r"seed 0: store #0 wrote 0x2 to global\[.*\], the original program wrote 0x1"):
        verify_execution(program, bad, {})


def test_sixty_four_bit_values_get_even_pairs():
    program = parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  %p:u64 = param P\n  %d:f64 = cvt %x\n  st.global %p, 0, %d\n  st.global %p, 0, %x\n  exit\n")
    for name in STRATEGIES:
        plan = predicted_plan(allocate(name, program))
        for v in ("p", "d"):
            r = plan.assignment[v]
            assert r[0] % 2 == 0 and r[1] == r[0] + 1
        verify_plan(plan)


@given(st.data(), programs(mixed=True), st.sampled_from([255, 16, 8, 4, 3]), st.booleans())
def test_the_written_out_hull_scan_equals_its_reference_loop(data, program, budget, high):
    """scan (one loop, the visit written out) and scan_reference (one _Scan.visit per value) agree exactly,
    spills and the too-small error included."""
    import numpy as np

    from engine.alloc.linear_scan_hull import scan, scan_reference

    a = analyze(program)
    values = np.flatnonzero(a.widths > 0)
    unspillable = np.array(data.draw(st.lists(st.booleans(), min_size=len(a.names), max_size=len(a.names))),
                           dtype=bool)
    results = []
    for run in (scan, scan_reference):
        try:
            base, spilled = run(a, budget, values, unspillable, high)
            results.append((base.tolist(), spilled))
        except AllocationError as e:
            results.append(str(e))
    assert results[0] == results[1]


@given(programs(mixed=True), st.sampled_from([255, 16, 8, 3]))
def test_the_squeeze_from_the_pairs_rows_equals_the_squeeze_from_every_entry(program, budget):
    import numpy as np

    from engine.alloc.chaitin_briggs import _squeeze, _squeeze_reference

    a = analyze(program)
    (key, dec), (want_key, want_dec) = _squeeze(a.interference, a.widths, budget), \
        _squeeze_reference(a.interference, a.widths, budget)
    assert key.dtype == want_key.dtype and dec.dtype == want_dec.dtype
    assert np.array_equal(key, want_key) and np.array_equal(dec, want_dec)


@given(program=programs(mixed=True), budget=st.sampled_from([255, 16, 8]))
def test_linear_scan_with_holes_never_needs_more_registers_than_the_hull_scan(program, budget):
    """Every overlap of two values' segments is an overlap of their hulls, so holes only take conflicts away;
    first fit is not monotone in its conflicts, so this is checked, not proved: without spills the scan with
    holes uses at most the hull scan's registers (and its plans verify)."""
    analysis = analyze(program)
    holes, hull = allocate("linear-scan", program, budget, analysis), allocate("linear-scan-hull", program, budget, analysis)
    if not hull.spills:
        assert not holes.spills
        assert registers_used(holes.assignment) <= registers_used(hull.assignment)
    verify_plan(predicted_plan(holes))


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_program_of_one_exit_allocates_to_nothing(name):
    """A program with no value at all (Chaitin-Briggs's spill cost once raised OverflowError on it)."""
    plan = predicted_plan(allocate(name, parse(".kernel k\n.block b\n  exit\n"), 8))
    assert plan.assignment == {} and plan.spills == {} and plan.predicted.registers == 0
