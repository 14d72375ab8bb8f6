"""Hand edits: exact conflicts, exact undo, schedule moves within dependences."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.alloc import allocate
from engine.predict import predict
from engine.alloc.hand import Assign, Move, Spill, Swap, Unspill, apply_edit, move_problem
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts, verify_execution
from tests.engine.strategies import programs
from tests.engine.test_ir import DESIGN_EXAMPLE


@pytest.fixture
def plan():
    return allocate("linear-scan", parse(DESIGN_EXAMPLE), 16).plan()


def test_conflicting_assignment_reports_the_exact_conflict(plan):
    reg = plan.assignment["a_0_0"]
    result = apply_edit(plan, Assign("b_0_0", reg))
    assert result.rejected is None
    assert [(c.kind, c.values, c.instruction, c.register) for c in result.conflicts] == [
        ("overlap", ("a_0_0", "b_0_0"), 4, reg[0])]
    assert result.conflicts[0].message == (
        f"%a_0_0 and %b_0_0 share R{reg[0]} while both live at instruction 4 (%b_0_0:f32 = ld.global %pb, 0)")
    undone = apply_edit(result.plan, result.inverse)
    assert undone.plan == plan and undone.conflicts == ()


def test_edits_that_keep_the_program_reuse_the_callers_analysis(plan):
    analysis = analyze(plan.program)
    kept = [apply_edit(plan, edit, analysis) for edit in (Assign("b_0_0", plan.assignment["a_0_0"]),
                                                          Swap(0, 3), Assign("nothing", (0,)))]
    assert all(r.analysis is analysis for r in kept)
    assert kept[0].conflicts == apply_edit(plan, Assign("b_0_0", plan.assignment["a_0_0"])).conflicts != ()
    spilled = apply_edit(plan, Spill("acc_0_0"), analysis)    # a new program: analysed anew
    assert spilled.analysis is not analysis and spilled.analysis.program is spilled.plan.program
    other = analyze(parse(DESIGN_EXAMPLE))
    with pytest.raises(ValueError, match="not that of the plan's program"):
        apply_edit(plan, Swap(0, 3), other)


def test_every_conflict_is_shown_at_once(plan):
    everything_in_r0 = plan
    for name, value in plan.program.values.items():
        everything_in_r0 = apply_edit(everything_in_r0, Assign(name, (0, 1)[: value.width])).plan
    conflicts = static_conflicts(everything_in_r0.program, everything_in_r0.assignment, {}, 16)
    assert len(conflicts) == analyze(plan.program).interference.n_edges


def test_swap_is_its_own_inverse_and_misalignment_is_a_conflict(plan):
    pa = plan.assignment["pa"][0]
    result = apply_edit(plan, Swap(pa, pa + 3))
    assert any(c.kind == "alignment" and c.values == ("pa",) for c in result.conflicts)
    assert apply_edit(result.plan, result.inverse).plan == plan


def test_spill_keeps_the_plan_valid_and_unspill_restores_it(plan):
    spilled = apply_edit(plan, Spill("acc_0_0"))
    assert spilled.conflicts == ()
    assert "st.local" in str(spilled.plan.program) and spilled.plan.spills == {"acc_0_0": 0}
    figures = predict(spilled.plan, spilled.analysis)
    assert figures["spill_stores"] == 2 and figures["spill_loads"] == 2
    verify_execution(spilled.plan.program, spilled.plan.assignment, spilled.plan.spills)
    back = apply_edit(spilled.plan, spilled.inverse)
    assert back.plan == plan
    again = apply_edit(back.plan, back.inverse)
    assert again.plan == spilled.plan


def test_bad_edits_are_rejected_with_the_reason_and_change_nothing(plan):
    for edit, reason in [
        (Assign("nope", (1,)), "the program has no value %nope"),
        (Unspill("pa"), "%pa is not spilled"),
        (Move(5, 3), "cannot move instruction 5 (%acc_0_0:f32 = mul %a_0_0, %b_0_0) before instruction 4 "
                     "(%b_0_0:f32 = ld.global %pb, 0): it reads %b_0_0, which that instruction defines"),
        (Move(9, 8), "cannot move instruction 9 (st.global %pc, 0, %acc_0_0) before instruction 8 "
                     "(%acc_0_0:f32 = fma %a_0_1, %b_1_0, %acc_0_0): it reads %acc_0_0, which that instruction defines"),
        (Move(10, 2), "cannot move instruction 10 (exit) before instruction 9 (st.global %pc, 0, %acc_0_0): "
                      "'exit' must stay last in its block"),
        (Move(3, 40), "instruction 40 is outside the program (0-10)"),
        (Spill("acc_0_0", 131072), "spill slot 131072 is outside 0..131071"),
        (Spill("acc_0_0", -1), "spill slot -1 is outside 0..131071"),
    ]:
        result = apply_edit(plan, edit)
        assert result.rejected == reason
        assert result.plan is plan


def test_stores_do_not_pass_loads_that_may_alias():
    program = parse(""".kernel k
.block b
  %p:u64 = param P
  %q:u64 = param Q
  %x:f32 = ld.global %p, 0
  st.global %q, 0, %x
  %y:f32 = ld.global %q, 4
  %z:f32 = ld.global %p, 8
  st.global %p, 4, %y
  exit
""")
    assert move_problem(program, 4, 3) is None  # q+4 and q+0: same base, disjoint bytes
    assert move_problem(program, 6, 5) is None  # p+4 and p+8: same base, disjoint bytes
    assert move_problem(program, 5, 3).endswith(
        "before instruction 3 (st.global %q, 0, %x): a ld.global and a st.global may touch the same memory")
    assert move_problem(program, 6, 4).endswith("it reads %y, which that instruction defines")
    assert move_problem(program, 3, 2).endswith("it reads %x, which that instruction defines")


def test_schedule_edit_recomputes_pressure_and_keeps_the_assignment(plan):
    # Sinking the 64-bit %pc to just before its only use frees its pair at the peak.
    before = analyze(plan.program).maxlive
    result = apply_edit(plan, Move(2, 8))
    assert result.rejected is None and result.conflicts == ()
    assert str(result.plan.program.instructions[8]) == "%pc:u64 = param C"
    assert analyze(result.plan.program).maxlive == before - 2 == predict(result.plan, result.analysis)["maxlive"]
    assert result.plan.assignment == plan.assignment
    assert apply_edit(result.plan, result.inverse).plan == plan


def test_schedule_edit_that_breaks_the_assignment_is_shown_as_broken():
    tight = allocate("chaitin-briggs", parse(DESIGN_EXAMPLE), 8).plan()
    n = len(tight.program.instructions)
    legal = [apply_edit(tight, Move(i, j)) for i in range(n) for j in range(n) if i != j]
    legal = [r for r in legal if r.rejected is None]
    broken = [r for r in legal if r.conflicts]
    assert legal and broken
    for r in broken:
        assert all(c.kind == "overlap" for c in r.conflicts)
        assert apply_edit(r.plan, r.inverse).plan == tight


def _edits(plan):
    names = sorted(n for n, v in plan.program.values.items() if v.width)
    n = len(plan.program.instructions)
    return st.lists(st.one_of(
        st.builds(Assign, st.sampled_from(names), st.lists(st.integers(0, 20), min_size=1, max_size=2).map(tuple)),
        st.builds(Swap, st.integers(0, 20), st.integers(0, 20)),
        st.builds(Spill, st.sampled_from(names)),
        st.builds(Unspill, st.sampled_from(names)),
        st.builds(Move, st.integers(0, n - 1), st.integers(0, n - 1)),
    ), max_size=6)


@given(st.data(), programs())
def test_any_sequence_of_edits_undoes_to_an_identical_plan(data, program):
    plan = allocate("dsatur", program, 24).plan()
    history, current = [], plan
    for edit in data.draw(_edits(plan)):
        result = apply_edit(current, edit)
        assert list(result.conflicts) == static_conflicts(result.plan.program, result.plan.assignment,
                                                          result.plan.spills, result.plan.budget)
        if result.rejected is None:
            history.append(result.inverse)
            current = result.plan
    for inverse in reversed(history):
        current = apply_edit(current, inverse).plan
    assert current == plan
