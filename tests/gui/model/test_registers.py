"""free_registers against the plain segment scan it replaced, and what its offers do to a valid plan."""

import numpy as np
import pytest

from engine.alloc.hand import Assign, apply_edit
from engine.analysis.liveness import analyze
from gui.model.registers import free_registers, parse_registers, register_text


def reference_free_registers(plan, analysis, name):
    """The window's first implementation: every value with a segment overlapping one of ``name``'s."""
    v = analysis.index[name]
    width = int(analysis.widths[v])
    if width == 0:
        return []
    mine = analysis.seg_value == v
    others = analysis.seg_value != v
    overlap = np.zeros(len(analysis.seg_value), dtype=bool)
    for s, e in zip(analysis.seg_start[mine].tolist(), analysis.seg_end[mine].tolist()):
        overlap |= others & (analysis.seg_start <= e) & (analysis.seg_end >= s)
    busy = set()
    for other in np.unique(analysis.seg_value[overlap]).tolist():
        busy.update(plan.assignment.get(analysis.names[other], ()))
    step = 2 if width == 2 else 1
    return [tuple(range(r, r + width)) for r in range(0, plan.budget - width + 1, step)
            if not busy.intersection(range(r, r + width))]


@pytest.mark.parametrize("allocator", ["naive", "linear-scan", "chaitin-briggs", "dsatur"])
def test_free_registers_agree_with_the_segment_scan_for_every_value(gemm_plans, allocator):
    plan = gemm_plans[allocator]
    a = analyze(plan.program)
    for name in a.names:
        assert free_registers(plan, a, name) == reference_free_registers(plan, a, name), name


def test_every_offered_register_keeps_a_valid_plan_valid(gemm_plans):
    plan = gemm_plans["dsatur"].with_(budget=64)
    a = analyze(plan.program)
    for name in a.names[::7]:
        for regs in free_registers(plan, a, name)[:3]:
            result = apply_edit(plan, Assign(name, regs))
            assert not result.rejected and not result.conflicts, (name, regs, result.conflicts[:1])


def test_pairs_are_even_aligned_and_predicates_get_none(gemm_plans):
    plan = gemm_plans["linear-scan"]
    a = analyze(plan.program)
    pair = next(n for n in a.names if a.widths[a.index[n]] == 2)
    assert all(len(r) == 2 and r[0] % 2 == 0 for r in free_registers(plan, a, pair))
    predicates = [n for n in a.names if a.widths[a.index[n]] == 0]
    assert all(free_registers(plan, a, n) == [] for n in predicates)


def test_register_text_round_trips_and_bad_text_raises():
    for regs in ((0,), (12, 13), (254,)):
        assert parse_registers(register_text(regs)) == regs
    with pytest.raises(ValueError):
        parse_registers("Rx")
