"""Work bounded before it starts: programs whose graph or run would take the machine are refused in one line."""

import time

import pytest
from hypothesis import given, settings

from engine.analysis.bounds import check_program
from engine.base.errors import LimitError
from engine.analysis.interference import (
    build_interference,
    interference_pairs,
    pairs_lower_bound,
)
from engine.check.interp import run
from engine.ir.parser import parse
from engine.base.limits import MAX_INTERFERENCE_EDGES, MAX_NESTING
from engine.analysis.liveness import analyze
from engine.ir.cfg import NestingError, run_bound, structure
from tests.bench.programs import (
    HUGE_GRAPH,
    long_loop,
    many_loops,
    nested_loops,
    sliding_window,
)
from tests.engine.strategies import examples, programs


@pytest.mark.slow
def test_a_program_of_4e8_edges_is_refused_within_a_second_of_being_read():
    program = parse(sliding_window(**HUGE_GRAPH), "huge.txt")
    wall, cpu = time.perf_counter(), time.process_time()
    with pytest.raises(LimitError, match="^huge.txt: its live ranges make about 397,760,220 interference edges, "
                                         f"above the limit of {MAX_INTERFERENCE_EDGES:,}"):
        check_program(program, "huge.txt")
    # 0.5 s of CPU here; wall time is generous: the machine running the tests may be shared
    assert time.process_time() - cpu < 1.0 and time.perf_counter() - wall < 5.0


def test_a_program_just_above_the_edge_limit_is_refused_when_read_and_one_under_it_is_not():
    check_program(parse(sliding_window(10_000, 1_000)), "under.txt")      # 9.5 million pairs
    with pytest.raises(LimitError, match="^over.txt: .* about 10,500,500 interference edges"):
        check_program(parse(sliding_window(11_000, 1_000)), "over.txt")


def test_an_interference_graph_above_the_limit_is_refused_before_its_edges_are_listed():
    a = analyze(parse(sliding_window(11_000, 1_000)))       # 10.5 million overlapping pairs
    start = time.perf_counter()
    with pytest.raises(LimitError, match=f"about 10,500,500 interference edges, above the limit of "
                                         f"{MAX_INTERFERENCE_EDGES:,}"):
        build_interference(a)
    assert time.perf_counter() - start < 1.0


def test_the_pair_count_is_the_edge_count_of_a_graph_under_the_limit():
    g = build_interference(analyze(parse(sliding_window(2_000, 100))))
    # each value meets the 99 defined after it before its last use, the last 100 stay live to their stores,
    # and the pointer %p meets every value
    assert g.n_edges == 1_900 * 99 + 100 * 99 // 2 + 2_000


@settings(max_examples=examples(300))
@given(programs())
def test_the_pairs_seen_without_liveness_are_a_lower_bound(program):
    assert pairs_lower_bound(program) <= interference_pairs(analyze(program))


@settings(max_examples=examples(200))
@given(programs(control=False))
def test_the_pairs_seen_without_liveness_are_exact_in_one_block(program):
    assert pairs_lower_bound(program) == interference_pairs(analyze(program))


def test_a_nest_as_deep_as_the_limit_is_structured_and_walked_and_one_deeper_is_refused_in_one_line():
    from engine.model.ilp import executed_path

    deepest = parse(nested_loops(MAX_NESTING, 1))
    assert str(structure(deepest)).count("loop") == MAX_NESTING
    assert len(executed_path(deepest)) == len(deepest.instructions)     # one trip each: every block once
    with pytest.raises(NestingError, match=f"^block head{MAX_NESTING}: loops and ifs nested more than "
                                           f"{MAX_NESTING} deep"):
        structure(parse(nested_loops(MAX_NESTING + 1, 1)))


@pytest.mark.parametrize("text, header, trips, nested", [
    (long_loop(7), "loop", 7, 0), (many_loops(5, 3), "loop4", 3, 0), (nested_loops(4, 3), "head0", 3, 3)])
def test_the_run_bound_of_counted_loops_is_what_the_interpreter_runs_up_to_the_last_block(text, header, trips, nested):
    program = parse(text)
    bound = run_bound(program, limit=10 ** 18)
    assert (bound.header, bound.trips, bound.nested) == (header, trips, nested)
    assert bound.steps == run(program).steps - 2       # the block after the loops stores and exits


@settings(max_examples=examples(300))
@given(programs())
def test_every_run_executes_at_least_the_run_bound(program):
    bound = run_bound(program, limit=10 ** 18)        # these programs have no early exit: every run ends
    assert all(run(program, seed).steps >= (bound.steps if bound else 0) for seed in (0, 1, 2))


@pytest.mark.parametrize("text, line", [
    (long_loop(2_000_000_000), "the loop at block loop (2,000,000,000 trips) has executed at least 8,000,000,003"),
    (many_loops(1_022, 1_000), "the loop at block loop499 (1,000 trips) has executed at least 2,001,024"),
    (nested_loops(MAX_NESTING, 2), "the loop at block head46 (2 trips, with 17 counted loops nested in it)"),
    (nested_loops(511, 2), "block head64: loops and ifs nested more than 64 deep")])
def test_loops_too_long_for_the_step_limit_are_refused_before_running_quickly(text, line):
    program = parse(text, "loops.txt")
    start = time.process_time()
    with pytest.raises(LimitError, match="^loops.txt: ") as refused:
        check_program(program, "loops.txt")
    assert line in str(refused.value) and time.process_time() - start < 0.5


def test_a_loop_whose_trips_are_not_known_up_front_is_left_to_the_step_limit():
    counted = long_loop(2_000_000_000)
    for text in (counted.replace("%i:i32 = mov 0", "%i:i32 = ld.global %pc, 0"),      # counter from memory
                 counted.replace("%i:i32 = add %i, 1", "%i:i32 = add %i, 2"),          # another step
                 counted.replace("cbr %p, loop, done", "cbr %p, done, loop")):         # leaves while below
        check_program(parse(text), "loop.txt")


def test_a_plan_with_millions_of_conflicts_is_refused_without_building_them():
    """Every value in R0: the conflicts are counted in arrays and only the first becomes a message (building
    one object a conflict took 20 s and 2.1 GB for 3.5e6 of them; 25 s for these 2.5e6, 0.8 s now)."""
    from engine.base.errors import PlanError
    from engine.ir.parser import parse
    from engine.plan import Plan
    from engine.planfile import check_plan
    from tests.bench.programs import sliding_window

    program = parse(sliding_window(3_000, 1_000))          # about 2.5e6 overlapping pairs
    assignment = {name: (0,) for name, v in program.values.items() if v.width == 1} | {"p": (2, 3)}
    start = time.process_time()
    with pytest.raises(PlanError, match=r"^hostile.json: %v0 and %v1 share R0 while both live at instruction 2 "
                                        r".*\(and (\d{7}) more\)$") as caught:
        check_plan(Plan(program, assignment, {}, 4, "hand"), "hostile.json")
    assert time.process_time() - start < 10
    assert int(caught.value.args[0].rsplit("(and ", 1)[1].split()[0]) > 2_000_000
