"""The fast interpreter against the plain reference one, state by state after every instruction."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.alloc import ALLOCATORS, allocate
from engine.base.errors import InterpreterError
from engine.check.interp import run
from engine.check.interp_reference import STEP_LIMIT, Machine, tag
from engine.ir.immediates import mix
from engine.ir.parser import parse
from tests.engine.strategies import examples, programs


def _memory(cells: dict, seed: int, keys) -> dict:
    """Memory as a function of the address: a cell written (or already read) holds its value, any other
    its input, so the fast interpreter's memo of inputs read makes no difference."""
    return {key: cells[key] if key in cells else mix(seed, tag(key[0]), key[1]) for key in keys}


#: steps compared at most (each comparison reruns the fast interpreter from the start): a wrong assignment can
#: clobber a loop's counter with a negative i32, and the loop then runs for 2**31 trips
COMPARED_STEPS = 3000


def _same_state_after_every_step(program, seed: int, registers: dict | None) -> int:
    """Compare registers, memory and stores after each step (the first :data:`COMPARED_STEPS`); the number of
    steps compared."""
    machine = Machine(program, seed, registers)
    while machine.steps < COMPARED_STEPS and machine.step():
        fast = run(program, seed, registers, stop_after=machine.steps)
        env, cells = fast.state
        where = f"step {machine.steps} (instruction {machine.pc - 1}: {program.instructions[machine.pc - 1]})"
        assert fast.steps == machine.steps, where
        assert env == machine.registers(), where
        keys = cells.keys() | machine.memory.keys()
        assert _memory(cells, seed, keys) == _memory(machine.memory, seed, keys), where
        assert fast.stores == machine.stores, where
    if machine.steps < COMPARED_STEPS:            # the run ended: the fast one ends there too
        assert run(program, seed, registers).steps == machine.steps
    return machine.steps


@settings(max_examples=examples(40), deadline=None)
@given(program=programs(), seed=st.integers(0, 3))
def test_virtual_registers_agree_after_every_instruction(program, seed):
    assert _same_state_after_every_step(program, seed, None) > 0


@settings(max_examples=examples(40), deadline=None)
@given(program=programs(), seed=st.integers(0, 3), name=st.sampled_from(sorted(ALLOCATORS)),
       budget=st.sampled_from([255, 10, 6]))
def test_physical_registers_and_spill_slots_agree_after_every_instruction(program, seed, name, budget):
    plan = allocate(name, program, budget)
    assert _same_state_after_every_step(plan.program, seed, plan.assignment) > 0


@settings(max_examples=examples(30), deadline=None)
@given(program=programs(), seed=st.integers(0, 3), data=st.data())
def test_a_wrong_assignment_runs_alike_in_both(program, seed, data):
    """Registers shared by accident overwrite each other the same way in both interpreters."""
    plan = allocate("linear-scan", program, 255)
    values = plan.program.values
    a = data.draw(st.sampled_from(sorted(n for n, v in values.items() if v.width)))
    b = data.draw(st.sampled_from(sorted(n for n, v in values.items() if v.width == values[a].width)))
    assert _same_state_after_every_step(plan.program, seed, {**plan.assignment, a: plan.assignment[b]}) > 0


#: every shape the interpreters give a kind of its own; known opcodes in the one shape the parser takes
#: (engine.ir.rules), the general forms (an address summed from several operands, a store of two values,
#: an operation of five operands) through opaque opcodes of the same base
EVERY_SHAPE = """.kernel k
.block entry
  %pa:u64 = param A
  %pb:u64 = param B
  %i:i32 = mov 0
.block loop
  %x:f32 = ld.global %pa, 8
  %y:f32 = ld.global.nc %pa, %i
  %w:u64 = ld.shared %pb, 16
  %z:f32 = fma %x, %y, %x
  %u:u64 = fma %w, %w, %w
  %v:f32, %s:f32 = ld.global.v2 %pb, 4, %i
  %m:i32 = max.s32 %x, %y, %i
  %h:f32 = shfl %z, 1
  %e:f32 = exp %h
  %q:f16x2 = tex.opaque %e, %u
  %n:i32 = sub %x, %y
  %t:i32 = mul %n, %n
  %c:f64 = cvt %t
  %g:pred = setp.lt %n, 2147483648
  %g2:pred = setp.lt.s32 %n, 2147483648
  %g3:pred = setp.lt %x, %y
  %a0:i32 = param n0
  %tid:i32 = sreg.tid.x
  %nb:i32 = param n
  %k2:i32 = param pair
  %k3:i32 = sreg.tid.y
  %pc:u64 = param C
  %dq:i32 = div.u32 %tid, %nb
  %dr:i32 = rem.u32 %k3, %nb
  %dz:i32 = div.u32 %tid, 0
  %rz:i32 = rem.u32 %nb, 0
  %ds:i32 = div.s32 %k2, %nb
  %dq:i32 = add.s32 %dq, %dr, %dz, %rz, %ds
  st.global %pc, 0, %dq
  %a1:i32 = tex.lt %x, %y
  %a2:i32 = add %a0, %a1
  %a2:i32 = @%g2 add %a2, 1
  %a2:i32 = @!%g3 add %a2, 2
  %z:f32 = @!%g add %z, 7
  st.local 3, %z
  %r:f32 = ld.local 3
  st.shared %pb, 8, %u
  %o:u64 = ld.shared %pb, 8
  st.global %pa, 4, %r
  st.shared %pb, 0, %o
  @%g st.global %pa, 12, %q
  st.global %pa, 16, %c
  st.global %pa, 20, %m
  st.global %pa, 32, %a2
  st.global.v2 %pa, 24, %v, %s
  %i:i32 = add %i, 1
  %p:pred = setp.lt %i, 3
  @%p br loop
.block tail
  @%g exit
.block last
  st.global %pa, 28, %i
  exit
"""

ASSIGNMENT = {"pa": (0, 1), "pb": (2, 3), "i": (4,), "x": (5,), "y": (6,), "w": (8, 9), "z": (7,), "u": (10, 11),
              "v": (5,), "s": (12,), "m": (13,), "h": (14,), "e": (14,), "q": (15,), "n": (16,), "t": (16,),
              "c": (18, 19), "r": (6,), "o": (8, 9), "a0": (20,),
              "a1": (21,), "a2": (20,), "tid": (22,), "nb": (23,), "k2": (24,), "k3": (25,), "pc": (26, 27),
              "dq": (28,), "dr": (29,), "dz": (30,), "rz": (31,), "ds": (32,)}


@pytest.mark.parametrize("registers", [None, ASSIGNMENT], ids=["virtual", "physical"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_every_opcode_shape_agrees_after_every_instruction(registers, seed):
    assert _same_state_after_every_step(parse(EVERY_SHAPE), seed, registers) > 30


def test_a_run_stopped_after_two_steps_returns_the_state_after_them():
    program = parse(".kernel k\n.block b\n  %x:i32 = mov 5\n  %y:i32 = add %x, 1\n  %z:i32 = add %y, 1\n  exit\n")
    trace = run(program, 0, stop_after=2)
    assert (trace.steps, trace.state, trace.executed) == (2, ({"x#0": 5, "y#0": 6}, {}), [1, 1, 0, 0])
    assert run(program, 0, stop_after=10).state == ({"x#0": 5, "y#0": 6, "z#0": 7}, {})


def test_the_reference_reports_a_value_read_before_its_definition():
    program = parse(".kernel k\n.block b\n  %x:i32 = mov 5\n  %y:i32 = add %x, %w\n  %w:i32 = mov 1\n  exit\n")
    with pytest.raises(InterpreterError, match="w is read before any definition"):
        Machine(program).run()


def test_the_fast_interpreter_names_the_value_read_before_its_definition_and_where():
    program = parse(".kernel k\n.block b\n  %x:i32 = mov 5\n  %y:i32 = add %w, %x\n  %w:i32 = mov 1\n  exit\n")
    with pytest.raises(InterpreterError) as caught:
        run(program, 0)
    assert str(caught.value) == "%w is read before any definition at instruction 1 (%y:i32 = add %w, %x)"


def test_the_reference_stops_at_its_step_limit_and_has_the_fast_ones_by_default():
    program = parse(".kernel k\n.block b\n  br b\n")
    machine = Machine(program)
    with pytest.raises(InterpreterError, match="step limit of 10"):
        machine.run(max_steps=10)
    assert machine.steps == 11
    assert STEP_LIMIT == inspect.signature(run).parameters["max_steps"].default
