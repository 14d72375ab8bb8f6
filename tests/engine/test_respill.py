"""The analysis updated after spill insertion equals the analysis made from scratch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.liveness import analyze
from engine.analysis.respill import _Fallback, _Update, analyze_spilled
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.ir.spill import first_free_slot, remat_definitions, remove_spill_code, spill_code_of, spill_insertion
from tests.bench.programs import loop_shaped
from tests.engine.strategies import programs

ARRAYS = ("widths", "seg_value", "seg_start", "seg_end", "start", "end", "pressure", "loop_depth")


def _rows(a: np.ndarray) -> list:
    return sorted(map(tuple, a.tolist()))


def assert_same(updated, scratch) -> None:
    assert updated.names == scratch.names
    for field in ARRAYS:
        assert np.array_equal(getattr(updated, field), getattr(scratch, field)), field
    assert updated.undefined == scratch.undefined
    assert updated.live_out == scratch.live_out
    assert _rows(updated.operand_reads) == _rows(scratch.operand_reads)
    assert _rows(updated.definitions) == _rows(scratch.definitions)


def _spill_round(data, program, analysis):
    candidates = [n for n, v in program.values.items() if v.width > 0 and "." not in n]
    chosen = data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=6)) if candidates else []
    slot = first_free_slot(program)
    insertion = spill_insertion(program, {n: slot + k for k, n in enumerate(chosen)})
    updated = _Update(analysis, insertion).analysis()
    assert_same(updated, analyze(parse(print_program(insertion.program))))
    return insertion.program, updated


@settings(max_examples=150, deadline=None)
@given(st.data(), programs(mixed=True))
def test_update_equals_scratch_over_two_spill_rounds(data, program):
    analysis = analyze(program)
    for _ in range(2):
        program, analysis = _spill_round(data, program, analysis)


def test_update_is_used_on_the_loop_benchmark_program_and_equals_scratch():
    program = parse(loop_shaped(n=600, peak=40))
    chosen = [n for n in program.values if n.startswith(("acc", "t"))][::3]
    insertion = spill_insertion(program, {n: k for k, n in enumerate(chosen)})
    assert_same(_Update(analyze(program), insertion).analysis(), analyze(parse(print_program(insertion.program))))


def test_an_insertion_made_from_another_program_is_analysed_from_scratch():
    program = parse(loop_shaped(n=200, peak=10))
    other = parse(print_program(program))     # equal, but not the object the insertion started from
    insertion = spill_insertion(other, {"acc0": 0})
    with pytest.raises(_Fallback):
        _Update(analyze(program), insertion)
    assert_same(analyze_spilled(analyze(program), insertion), analyze(insertion.program))


TWO_RESULTS = """.kernel k
.block a
  %x:f32, %y:f32, %w:f32 = split 5
.block b
  %z:f32 = add %x, %w
  st.global %z, 0, %z
  exit
"""


def test_a_dead_result_beside_a_spilled_one_at_a_block_end_stays_one_position_long():
    # spill code after the block's last instruction moves the block's exit: %w (live out) follows it, %y (dead) does not
    program = parse(TWO_RESULTS)
    insertion = spill_insertion(program, {"x": 0})
    updated, scratch = _Update(analyze(program), insertion).analysis(), analyze(parse(print_program(insertion.program)))
    assert_same(updated, scratch)
    y, w = scratch.index["y"], scratch.index["w"]
    assert scratch.end[y] == scratch.start[y] and scratch.start[w] <= 2 * 1 + 1 <= scratch.end[w]


def assert_same_graph(updated, built) -> None:
    assert updated.names == built.names and np.array_equal(updated.indptr, built.indptr)
    for v in range(len(built.names)):
        assert sorted(updated.neighbors(v).tolist()) == sorted(built.neighbors(v).tolist()), built.names[v]


@settings(max_examples=150, deadline=None)
@given(st.data(), programs(mixed=True))
def test_graph_updated_after_spill_code_equals_the_graph_built_again_over_two_rounds(data, program):
    from engine.analysis.interference import build_interference

    analysis = analyze(program)
    analysis.interference  # built, so the next analysis updates it
    for _ in range(2):
        candidates = [n for n, v in program.values.items() if v.width > 0 and "." not in n]
        chosen = data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=6)) if candidates else []
        slot = first_free_slot(program)
        insertion = spill_insertion(program, {n: slot + k for k, n in enumerate(chosen)})
        analysis = analyze_spilled(analysis, insertion)
        assert analysis.interference_basis      # to be updated, not built, when asked for
        assert_same_graph(analysis.interference, build_interference(analysis))
        program = insertion.program


@pytest.mark.parametrize("name", ["chaitin-briggs", "dsatur"])
def test_the_colouring_allocators_final_graph_equals_a_fresh_build_on_the_loop_program(name):
    from engine.alloc import allocate
    from engine.analysis.interference import build_interference

    program = parse(loop_shaped(n=800, peak=60))
    allocation = allocate(name, program, 40)
    assert allocation.spills and "interference" in allocation.analysis.__dict__   # the last round coloured it
    assert_same_graph(allocation.analysis.interference, build_interference(analyze(allocation.program)))


def test_an_allocator_that_never_reads_the_graph_neither_builds_nor_updates_one():
    from engine.alloc import allocate

    program = parse(loop_shaped(n=800, peak=60))
    analysis = analyze(program)
    analysis.interference      # the caller's graph (the regtune command's analysis has one)
    allocation = allocate("naive", program, 40, analysis)
    assert allocation.spills and "interference" not in allocation.analysis.__dict__


def test_linear_scan_reads_the_graph_of_its_final_program_only_for_the_register_choice():
    """Linear scan spills without a graph; its register choice (engine.alloc.choice.spread) reads the final
    program's, which must be that program's own."""
    from engine.alloc import allocate
    from engine.analysis.interference import build_interference

    program = parse(loop_shaped(n=800, peak=60))
    analysis = analyze(program)
    analysis.interference
    allocation = allocate("linear-scan", program, 40, analysis)
    assert allocation.spills and "interference" in allocation.analysis.__dict__
    assert_same_graph(allocation.analysis.interference, build_interference(analyze(allocation.program)))


def test_a_renumbering_out_of_order_still_gives_the_graph_of_the_kept_and_added_edges():
    from engine.analysis.interference import _csr, _renumbered

    program = parse(loop_shaped(n=200, peak=12))
    graph = analyze(program).interference
    n = len(graph.names)
    remap = np.random.default_rng(3).permutation(n)
    remap[::7] = -1
    u, v = np.array([0, 1]), np.array([n - 1, n - 2])
    got = _renumbered(graph, remap, graph.names, graph.widths, u, v)
    edges = [(int(remap[a]), int(remap[b])) for a, b in graph.edges.tolist() if remap[a] >= 0 and remap[b] >= 0]
    want = _csr(graph.names, graph.widths, np.array([a for a, _ in edges] + [0, 1]), np.array([b for _, b in edges] + [n - 1, n - 2]))
    assert_same_graph(got, want)


@settings(max_examples=150, deadline=None)
@given(st.data(), programs(mixed=True), st.sampled_from([1, 4, 32]))
def test_split_and_rematerialised_spill_code_is_still_spill_code(data, program, reuse):
    """Issue 24: spill code with reloads serving several reads (``reuse``) and rematerialised copies is
    removed exactly, found by a search exactly, and analysed by the update as from scratch."""
    names = sorted(n for n, v in program.values.items() if v.width and "." not in n)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=4)) if names else []
    others = sorted(set(remat_definitions(program)) - set(chosen))
    remat = data.draw(st.lists(st.sampled_from(others), unique=True, max_size=3)) if others else []
    slots = {n: 100 + k for k, n in enumerate(chosen)}
    r = spill_insertion(program, slots, remat=remat, reuse=reuse)
    assert remove_spill_code(r.program, slots) == program
    assert spill_code_of(r.program, slots) == r.code
    assert_same(analyze_spilled(analyze(program), r), analyze(parse(print_program(r.program))))
