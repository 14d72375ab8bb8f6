"""The execution check's coverage (issue 11): inputs from the workload's model enter the kernel's body, the
seed search covers every instruction, and a conflict only the body shows is caught."""

from __future__ import annotations

import pytest

from engine.alloc import allocate
from engine.base.errors import VerificationError
from engine.check.inputs import GENERIC, Input, InputModel
from engine.check.interp import run
from engine.ir.parser import parse
from engine.predict import execution_figures
from engine.ir.spill import remove_spill_code
from engine.check.verify import CANDIDATES, SEEDS, choose_seeds, deepest_seed, static_conflicts, verify_execution
from engine.workloads import input_model
from engine.workloads.gemm import SCHEDULES, Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha

#: the issue's measurement: 10 GEMM configs x 3 schedules
GEMM_CONFIGS = ((2, 2, 2), (3, 3, 3), (4, 8, 3), (5, 7, 11), (6, 10, 4), (8, 8, 8), (9, 12, 16), (12, 3, 9),
                (16, 2, 7), (16, 16, 16))
#: instructions of the early exit path: the index phase up to the guard, then `exit`
EARLY_EXIT_STEPS = 13


def _gemm(config, schedule):
    w = Gemm(*config)
    program, options = build_gemm(w, schedule=schedule)
    return program, input_model(w.as_dict(), options)


def _check(program, model, **kw):
    plan = allocate("dsatur", program, 255).plan()
    return verify_execution(plan.program, plan.assignment, plan.spills, model=model, **kw)


def test_pointers_are_distinct_aligned_and_sizes_in_their_ranges():
    model = InputModel.of({"batch": (5, 9)})
    for seed in range(64):
        bases = [model.value(Input(name, pointer=k), seed) for k, name in enumerate("ABC")]
        assert all(b % 256 == 0 for b in bases)
        assert all(b - a >= 1 << 39 for a, b in zip(bases, bases[1:]))
        assert 5 <= model.value(Input("batch"), seed) <= 9
        assert 1 <= model.value(Input("alpha"), seed) <= 1024
        assert 0 <= model.value(Input("%tid.x"), seed) <= 127


def test_an_input_is_the_same_on_virtual_and_physical_registers_and_depends_on_the_seed():
    p = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %n:i32 = param n\n  %t:i32 = sreg.tid.x\n"
              "  %s:i32 = add %n, %t\n  st.global %pa, 0, %s\n  exit\n")
    model = InputModel.of({"n": (100, 100), "%tid.x": (7, 7)})
    stores = run(p, 3, model=model).stores
    assert [v for _, _, v in stores] == [107]
    assert run(p, 3, registers={"pa": (0, 1), "n": (2,), "t": (3,), "s": (2,)}, model=model).stores == stores
    assert len({run(p, s).stores[0][1] for s in range(8)}) == 8   # A's base moves with the seed


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_gemm_8x8x8_check_runs_the_early_exit_and_the_whole_body(schedule):
    program, model = _gemm((8, 8, 8), schedule)
    check = _check(program, model)
    assert check.covered and check.verified and check.stores > 0
    steps = [run(program, s, model=model).steps for s in check.seeds]
    assert min(steps) == EARLY_EXIT_STEPS and max(steps) > EARLY_EXIT_STEPS
    assert any(run(program, s, model=model).steps > EARLY_EXIT_STEPS for s in SEEDS), "a default seed enters the body"


@pytest.mark.slow
@pytest.mark.parametrize("config", GEMM_CONFIGS)
def test_every_gemm_program_of_the_measurement_is_fully_covered(config):
    for schedule in SCHEDULES:
        program, model = _gemm(config, schedule)
        check = _check(program, model)
        assert check.verified, (config, schedule, check)
        assert set(SEEDS) <= set(check.seeds) and len(check.seeds) <= CANDIDATES


@pytest.mark.slow
def test_mha_programs_are_covered_by_the_default_seeds():
    for heads, batch, head_dim, groups, strategies in ((16, 1, 32, 1, ("fp16-softmax",)), (32, 64, 64, 4, ())):
        w = Mha(heads, batch, head_dim, groups)
        program, options = build_mha(w, strategies)
        check = _check(program, input_model(w.as_dict(), options))
        assert check.verified and check.seeds == SEEDS


def _beta_conflict():
    """A dsatur plan of GEMM 8x8x8 with %c_0_0 (C's element, loaded only when beta is not 0) forced into the
    register of %acc_0_1, which is live beside it."""
    program, model = _gemm((8, 8, 8), "k-outer")
    plan = allocate("dsatur", program, 255).plan()
    return plan, {**plan.assignment, "c_0_0": plan.assignment["acc_0_1"]}, model


def test_a_conflict_in_the_beta_block_passes_the_random_seeds_but_not_the_search_nor_the_cases():
    plan, bad, model = _beta_conflict()
    assert [c.values for c in static_conflicts(plan.program, bad, {}, 255)][:1] == [("acc_0_1", "c_0_0")]
    random_only = InputModel(model.ranges)            # the model without its chosen inputs
    partial = verify_execution(plan.program, bad, {}, model=random_only, candidates=0)
    assert partial.seeds == SEEDS and not partial.covered
    assert plan.program.instructions[partial.first_missed].opcode == "ld.global"   # the beta block's first load
    with pytest.raises(VerificationError, match=r"^seed (\d+): store #"):
        verify_execution(plan.program, bad, {}, model=random_only)
    # the workload's cases take beta != 0 whatever the random seeds do
    with pytest.raises(VerificationError, match=r"beta != 0: store #"):
        verify_execution(plan.program, bad, {}, model=model, candidates=0)


def test_the_seed_search_is_bounded_and_deterministic_and_reports_what_never_ran():
    p = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %n:i32 = param n\n  %c:pred = setp.lt %n, 2\n"
              "  cbr %c, small, done\n.block small\n  st.global %pa, 0, %n\n  exit\n.block done\n"
              "  st.global %pa, 4, %n\n  exit\n.block never\n  st.global %pa, 8, %n\n  exit\n")
    model = InputModel.of({"n": (1, 8)})
    seeds = choose_seeds(p, model)
    assert seeds[:3] == SEEDS and len(seeds) <= CANDIDATES and seeds == choose_seeds(parse(str(p)), model)
    check = _check(p, model)
    assert check.executed == check.instructions - 2 and not check.covered and not check.verified
    assert str(p.instructions[check.first_missed]) == "st.global %pa, 8, %n"


def test_a_generic_size_guard_is_taken_both_ways():
    p = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %n:i32 = param n\n  %c:pred = setp.lt %n, 512\n"
              "  cbr %c, small, done\n.block small\n  st.global %pa, 0, %n\n  exit\n.block done\n  exit\n")
    check = _check(p, GENERIC)
    assert check.verified


def test_executed_spill_figures_come_from_a_run_that_enters_the_body():
    w = Gemm(8, 8, 8)
    program, options = build_gemm(w, schedule="load-all-first")
    plan = allocate("dsatur", program, 32).plan(workload=w.as_dict(), options=options)
    figures = execution_figures(plan)
    model = input_model(plan.workload, plan.options)
    seed = deepest_seed(remove_spill_code(plan.program, plan.spills), model)
    executed = run(plan.program, seed, registers=plan.assignment, model=model).executed
    assert run(program, seed, model=model).steps > EARLY_EXIT_STEPS
    loads = sum(n for ins, n in zip(plan.program.instructions, executed) if ins.opcode == "ld.local")
    stores = sum(n for ins, n in zip(plan.program.instructions, executed) if ins.opcode == "st.local")
    assert figures["spill_loads_executed"] == loads > 0 and figures["spill_stores_executed"] == stores > 0


def test_a_schedule_edit_is_proved_its_workloads_program_and_a_changed_operation_is_not():
    from engine.alloc.hand import Move, apply_edit, move_problem
    from engine.base.errors import VerificationError
    from engine.check.verify import prove_identity

    w = Gemm(4, 4, 4)
    program, options = build_gemm(w)
    plan = allocate("dsatur", program, 255).plan(workload=w.as_dict(), options=options)
    assert prove_identity(plan.program, plan.spills, plan.workload, plan.options).text == \
        "its program, spill code removed, is the one gemm 4x4x4 builds, instruction for instruction (proved structurally)"
    n = len(plan.program.instructions)
    i = next(i for i in range(n - 1) if move_problem(plan.program, i, i + 1) is None
             and plan.program.instructions[i].opcode == "ld.global")
    moved = apply_edit(plan, Move(i, i + 1)).plan
    assert moved.program != plan.program
    proof = prove_identity(moved.program, moved.spills, moved.workload, moved.options)
    assert proof.moved == 2 and proof.inputs >= 6 and "every true, anti, output and memory dependence kept" in proof.text
    text = str(plan.program).replace("= fma %a_0_1, %b_1_1, %acc_0_1", "= add.f32 %a_0_1, %b_1_1, %acc_0_1", 1)
    assert text != str(plan.program)
    with pytest.raises(VerificationError, match="is not gemm 4x4x4's program nor a reordering.*add.f32 %a_0_1"):
        prove_identity(parse(text), {}, plan.workload, plan.options)
