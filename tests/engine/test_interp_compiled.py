"""The interpreter's compiled path against its loop, the reference: the same traces, the same errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.check.interp_compiled as compiled_module
from engine.alloc import ALLOCATORS, allocate
from engine.base.errors import InterpreterError
from engine.check import interp
from engine.check.interp import compiled, decode, run, run_together
from engine.ir.parser import parse
from engine.workloads import input_model
from engine.workloads.mha import Mha, build_mha
from tests.engine.strategies import examples, programs
from tests.engine.test_interp_reference import ASSIGNMENT, EVERY_SHAPE

SEEDS = (0, 1, 2)


def _outcome(call):
    """A run's trace as plain data, or its error's type and message."""
    try:
        out = call()
    except InterpreterError as exc:
        return type(exc).__name__, str(exc)
    traces = out if isinstance(out, list) else [out] if out is not None else None
    return None if traces is None else [(t.stores, t.steps, list(t.executed), t.taken) for t in traces]


def _same_both_ways(program, registers, max_steps: int = interp.MAX_STEPS, model_kw=None) -> list:
    model_kw = model_kw or {}
    outcomes = []
    for seed in range(4):
        loop = _outcome(lambda s=seed: run(program, s, registers, max_steps, compiled_path=False, **model_kw))
        fast = _outcome(lambda s=seed: run(program, s, registers, max_steps, compiled_path=True, **model_kw))
        assert fast == loop, seed
        outcomes.append(loop)
    loop = _outcome(lambda: run_together(program, SEEDS, registers, max_steps, compiled_path=False, **model_kw))
    fast = _outcome(lambda: run_together(program, SEEDS, registers, max_steps, compiled_path=True, **model_kw))
    assert fast == loop
    return outcomes


@settings(max_examples=examples(60), deadline=None)
@given(program=programs())
def test_virtual_registers_run_alike_on_both_paths(program):
    _same_both_ways(program, None)


@settings(max_examples=examples(60), deadline=None)
@given(program=programs(), name=st.sampled_from(sorted(ALLOCATORS)), budget=st.sampled_from([255, 10, 6]))
def test_physical_registers_and_spill_slots_run_alike_on_both_paths(program, name, budget):
    plan = allocate(name, program, budget)
    _same_both_ways(plan.program, plan.assignment)


@settings(max_examples=examples(40), deadline=None)
@given(program=programs(), data=st.data())
def test_a_wrong_assignment_and_a_short_step_limit_run_alike_on_both_paths(program, data):
    """Registers shared by accident, and a step limit met part way (the compiled run hands over to the loop
    at a segment's start, so the limit is reported at the same instruction)."""
    plan = allocate("linear-scan", program, 255)
    values = plan.program.values
    a = data.draw(st.sampled_from(sorted(n for n, v in values.items() if v.width)))
    b = data.draw(st.sampled_from(sorted(n for n, v in values.items() if v.width == values[a].width)))
    wrong = {**plan.assignment, a: plan.assignment[b]}
    limit = data.draw(st.integers(0, 40))
    _same_both_ways(plan.program, wrong)
    _same_both_ways(plan.program, wrong, max_steps=limit)
    _same_both_ways(program, None, max_steps=limit)


@pytest.mark.parametrize("registers", [None, ASSIGNMENT], ids=["virtual", "physical"])
def test_every_opcode_shape_runs_alike_on_both_paths(registers):
    outcomes = _same_both_ways(parse(EVERY_SHAPE), registers)
    assert all(type(o) is list and o[0][0] for o in outcomes)


def test_a_value_read_before_its_definition_is_reported_by_the_loop_in_its_words():
    program = parse(".kernel k\n.block b\n  %x:i32 = mov 5\n  %y:i32 = add %w, %x\n  %w:i32 = mov 1\n  exit\n")
    with pytest.raises(InterpreterError) as caught:
        run(program, 0, compiled_path=True)
    assert str(caught.value) == "%w is read before any definition at instruction 1 (%y:i32 = add %w, %x)"


def test_the_note_example_and_its_naive_plan_run_alike_on_both_paths_and_choose_the_compiled_one():
    w = Mha(32, 64, 64, 4)
    program, options = build_mha(w)
    naive = allocate("naive", program, 255)
    model = {"model": input_model(w.as_dict(), options)}
    for prog, registers in ((program, None), (naive.program, naive.assignment)):
        loop = run_together(prog, SEEDS, registers, compiled_path=False, **model)
        decoded = decode(prog, registers)
        fast = run_together(prog, SEEDS, registers, decoded=decoded, **model)       # the interpreter's choice
        assert decoded.worth is True and decoded.compiled is compiled(decoded)
        assert [(t.stores, t.steps, t.executed, t.taken) for t in fast] == \
            [(t.stores, t.steps, t.executed, t.taken) for t in loop]
        assert loop[0].steps > 190_000 and loop[0].stores


def test_a_straight_line_program_stays_on_the_loop():
    program = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  st.global %pa, 0, %pa\n  exit\n")
    decoded = decode(program)
    run(program, 0, decoded=decoded)
    assert decoded.worth is False and decoded.compiled is None


def test_both_paths_number_the_kinds_alike():
    names = "FMA LOCAL_LOAD LOCAL_STORE NARROW1 POINTER_LOAD POINTER_STORE NARROW OP LOAD STORE BRANCH CBRANCH EXIT"
    assert [getattr(compiled_module, n) for n in names.split()] == [getattr(interp, n) for n in names.split()]
