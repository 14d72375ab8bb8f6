"""The timeline's model: a bar per live segment per register, spill slots below, bars split by role, conflict and selection bars."""

import numpy as np

from engine.edits import Assign, Spill, apply_edit
from engine.liveness import analyze
from gui.model.timeline import BAR_ROLES, plan_timeline


def test_a_bar_per_segment_per_register_and_one_per_spill_slot(gemm_plans):
    plan = apply_edit(gemm_plans["dsatur"], Spill("acc_2_2")).plan
    a = analyze(plan.program)
    d = plan_timeline(plan, a)
    widths = a.widths[a.seg_value]
    assert len(d.x0) == int(widths.sum()) + len(plan.spills)
    assert (d.row < 0).sum() == len(plan.spills) and d.slot_rows == [plan.spills["acc_2_2"]]
    assert d.maxlive == a.maxlive and d.peak == a.peak
    bars = d.selection_bars("acc_0_0")
    v = a.index["acc_0_0"]
    segs = [(s / 2, (e + 1) / 2) for val, s, e in zip(a.seg_value, a.seg_start, a.seg_end) if val == v]
    assert sorted(zip(bars.x0.tolist(), bars.x1.tolist())) == sorted(segs)
    assert set(bars.y.tolist()) == set(plan.assignment["acc_0_0"])
    assert d.value_at(float(bars.x0[0]) + 0.01, int(bars.y[0])) == v


def test_the_role_bars_partition_every_bar(gemm_plans):
    d = plan_timeline(gemm_plans["linear-scan"], analyze(gemm_plans["linear-scan"].program))
    by_role = d.role_bars()
    assert list(by_role) == [r for r in BAR_ROLES if r in by_role]
    assert sum(len(b) for b in by_role.values()) == len(d.x0)
    assert np.isclose(sum(float((b.x1 - b.x0).sum()) for b in by_role.values()), float((d.x1 - d.x0).sum()))


def test_conflict_bars_cover_each_conflicts_instruction(gemm_plans):
    plan = gemm_plans["dsatur"]
    result = apply_edit(plan, Assign("acc_0_0", plan.assignment["acc_0_1"]))
    assert result.conflicts
    d = plan_timeline(result.plan, analyze(result.plan.program))
    bars = d.conflict_bars(result.conflicts)
    assert len(bars) >= 2
    at = result.conflicts[0].instruction + 0.5
    assert any(x0 <= at <= x1 for x0, x1 in zip(bars.x0.tolist(), bars.x1.tolist()))
    assert len(d.conflict_bars(())) == 0
