"""The interpreter's lockstep runs and the executed-spill figures built on them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.allocators import allocate
from engine.interp import run, run_together
from engine.ir import parse, print_program
from engine.predict import execution_figures
from engine.spill import remove_spill_code, spill_code_of
from engine.verify import deepest_seed
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
  %c:pred = setp.lt %x, 2147483648
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
