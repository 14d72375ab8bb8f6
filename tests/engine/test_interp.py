"""The interpreter's lockstep runs and the executed-spill figures built on them."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.alloc import allocate
from engine.base.errors import InterpreterError, TimeLimitError
from engine.check.interp import (
    EXIT,
    FMA,
    LOAD,
    LOCAL_LOAD,
    LOCAL_STORE,
    NARROW1,
    OP,
    POINTER_LOAD,
    POINTER_STORE,
    STORE,
    decode,
    run,
    run_together,
)
from engine.check.verify import deepest_seed
from engine.ir.core import print_program
from engine.ir.immediates import mix
from engine.ir.parser import parse
from engine.ir.spill import remove_spill_code, spill_code_of
from engine.predict import execution_figures
from tests.engine.strategies import programs

SEEDS = (0, 1, 2)


def _fresh(program):
    """The same program as a new object, so nothing memoized on the first is seen."""
    return parse(print_program(program))


def _same_traces(a, b) -> bool:
    return a.stores == b.stores and a.steps == b.steps and list(a.executed) == list(b.executed)


def _check_lockstep(program, budget, name) -> list[bool]:
    plan = allocate(name, program, budget)
    together = []
    for prog, registers in ((program, None), (plan.program, plan.assignment)):
        traces = run_together(prog, SEEDS, registers)
        together.append(traces is not None)
        for k, seed in enumerate(SEEDS):
            alone = run(_fresh(prog), seed, registers)
            assert _same_traces(run(prog, seed, registers), alone)
            assert traces is None or _same_traces(traces[k], alone)
    return together


@settings(max_examples=40, deadline=None)
@given(program=programs(), budget=st.sampled_from([255, 12]), name=st.sampled_from(["chaitin-briggs", "naive"]))
def test_seeds_run_in_lockstep_or_alone_give_the_traces_of_single_runs(program, budget, name):
    _check_lockstep(program, budget, name)


@settings(max_examples=20, deadline=None)
@given(program=programs(control=False), budget=st.sampled_from([255, 12]), name=st.sampled_from(["dsatur", "naive"]))
def test_straight_line_programs_always_run_in_lockstep(program, budget, name):
    assert _check_lockstep(program, budget, name) == [True, True]


DIVERGENT = """.kernel k
.block entry
  %pa:u64 = param A
  %x:i32 = ld.global %pa, 0
  %c:pred = setp.lt %x, 0
  cbr %c, low, high
.block low
  st.global %pa, 4, %x
  exit
.block high
  st.global %pa, 8, %x
  exit
"""


def test_seeds_that_branch_apart_are_run_one_by_one_with_their_own_paths():
    program = parse(DIVERGENT)
    paths = {seed: tuple(run(_fresh(program), seed).executed) for seed in range(8)}
    assert len(set(paths.values())) == 2, "the test needs seeds that take both branches"
    seeds = tuple(range(8))
    assert run_together(program, seeds) is None
    assert {seed: tuple(run(program, seed).executed) for seed in seeds} == paths


@settings(max_examples=40, deadline=None)
@given(program=programs(), budget=st.sampled_from([16, 10]))
def test_executed_spill_figures_equal_what_the_allocated_program_runs(program, budget):
    plan = allocate("chaitin-briggs", program, budget).plan()
    seed = deepest_seed(remove_spill_code(plan.program, plan.spills))
    executed = run(plan.program, seed, registers=plan.assignment).executed
    spill = spill_code_of(plan.program, plan.spills).indices
    opcode = {i: plan.program.instructions[i].opcode for i in spill}
    figures = execution_figures(plan)
    assert figures["spill_stores_executed"] == sum(executed[i] for i in spill if opcode[i] == "st.local")
    assert figures["spill_loads_executed"] == sum(executed[i] for i in spill if opcode[i] == "ld.local")


# -- what the mutation run found untested (python -m tests.mutation) -----------------------------------------

SHAPES = """.kernel k
.block entry
  %pa:u64 = param A
  %x:f32 = ld.global %pa, 8
  %y:f32 = fma %x, %x, %x
  %z:f32 = add %x, %y
  %g:pred = setp.lt %x, 3
  %v:f32, %s:f32 = ld.global.v2 %pa, 4
  st.local 3, %z
  %r:f32 = ld.local 3
  st.global %pa, 4, %r
  st.global %pa, 8, %v
  %w:u64 = add %pa, 4
  st.local 5, %w
  exit
"""


def test_the_commonest_shapes_decode_to_the_fast_paths():
    """The fast kinds exist for the engine benchmark: a change that sent them to the general path would keep
    every result and lose the speed, so the decoded kinds are checked one by one."""
    program = parse(SHAPES)
    registers = {"pa": (0, 1), "x": (2,), "y": (3,), "z": (4,), "g": (), "v": (5,), "s": (6,), "r": (7,),
                 "w": (8, 9)}
    for keys in (None, registers):
        code, constants, inputs = decode(program, keys)
        kinds = [entry[0] for entry in code]
        assert kinds == [OP, POINTER_LOAD, FMA, NARROW1, NARROW1, LOAD, LOCAL_STORE, LOCAL_LOAD, POINTER_STORE,
                         POINTER_STORE, OP, STORE, EXIT], keys
        assert sorted(constants.values()) == [3, 4, 5, 8] and [i.name for i in inputs] == ["A"]
        assert code[6][6] == code[7][6][0] == ("local", 3)    # the spill pair: one slot key, fixed at decode time


def test_a_run_past_its_deadline_stops_with_the_instruction_it_reached():
    program = parse(".kernel k\n.block b\n  br b\n")
    for call in (lambda: run(program, 0, deadline=time.monotonic() - 1),
                 lambda: run_together(program, (0, 1), deadline=time.monotonic() - 1)):
        with pytest.raises(TimeLimitError, match=r"stopped at instruction 0 \(br b\)"):
            call()


def test_lockstep_runs_on_physical_registers_see_two_values_share_one():
    program = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %x:i32 = mov 5\n  %y:i32 = mov 7\n"
                    "  st.global %pa, 0, %x\n  exit\n")
    shared = {"pa": (0, 1), "x": (2,), "y": (2,)}    # %y overwrites %x's register before %x is stored
    virtual = [t.stores for t in run_together(program, (0, 1))]
    physical = [t.stores for t in run_together(program, (0, 1), shared)]
    assert [s[0][2] for s in virtual] == [5, 5] and [s[0][2] for s in physical] == [7, 7]
    assert physical == [run(program, seed, shared).stores for seed in (0, 1)]


def test_an_assignment_without_a_register_of_the_values_width_is_named():
    program = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %x:i32 = mov 5\n  st.global %pa, 0, %x\n  exit\n")
    for registers in ({"pa": (0, 1)}, {"pa": (0,), "x": (2,)}):
        with pytest.raises(InterpreterError, match=r"^%(x|pa) has no register of its width in the assignment$"):
            run(program, 0, registers)
    as_lists = run(program, 0, {"pa": [0, 1], "x": [2]})   # a plan read from JSON holds lists
    assert as_lists.stores == run(program, 0, {"pa": (0, 1), "x": (2,)}).stores == run(program, 0).stores


def test_the_mixing_hash_keeps_inputs_apart_and_uses_every_bit():
    """Inputs and opaque results come from ``mix``: two different operands must never hash alike, or a
    clobbered register could read back the value it should have lost. Each step is a bijection of 64 bits
    (xor, an odd multiplier, a right xorshift), so distinct last words give distinct hashes, high bits too;
    and every output bit varies."""
    words = [w << s for w in range(1, 1500) for s in (0, 20, 40, 52)] + [1 << 63 | w for w in range(200)]
    hashes = [mix(7, w) for w in words]
    assert len(set(hashes)) == len(words)
    assert mix(7, 1) != mix(8, 1) and mix(7, 1) != mix(7, 1, 0)
    every, none = 0, (1 << 64) - 1
    for h in hashes:
        every, none = every | h, none & h
    assert (every, none) == ((1 << 64) - 1, 0)
