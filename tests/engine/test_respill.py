"""The analysis updated after spill insertion equals the analysis made from scratch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from engine.analysis.respill import _Fallback, _Update, analyze_spilled
from engine.ir.spill import first_free_slot, spill_insertion
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
