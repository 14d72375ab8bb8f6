"""Why this many: the rows are the analysis's own live_at, and definitions and uses match a plain scan of the program."""

import pytest

from engine.analysis.liveness import analyze
from gui.model.why import why_this_many


def reference_defs_uses(program):
    defs, uses = {}, {}
    for i, x in enumerate(program.instructions):
        for d in x.defs:
            defs.setdefault(d.name, []).append(i)
        for u in x.uses:
            uses.setdefault(u, []).append(i)
    return defs, uses


@pytest.mark.parametrize("allocator", ["linear-scan", "dsatur"])
def test_rows_are_the_values_live_there_and_add_up_to_the_pressure(gemm_plans, allocator):
    plan = gemm_plans[allocator]
    a = analyze(plan.program)
    defs, uses = reference_defs_uses(plan.program)
    for index in (None, 0, a.peak // 2, len(a.pressure) - 1, len(a.pressure) + 5):
        report = why_this_many(plan, a, index)
        at = a.peak if index is None or index >= len(a.pressure) else index
        assert report.index == at
        assert [r.name for r in report.rows] == a.live_at(at)
        assert sum(plan.program.values[r.name].width for r in report.rows) == report.pressure == a.pressure[at]
        for r in report.rows:
            d = [i for i in defs.get(r.name, []) if i <= at][-1:] or defs.get(r.name, [])[:1]
            u = sorted(set(i for i in uses.get(r.name, []) if i > at))[:3]
            assert (list(r.defined), list(r.used), r.registers) == (d, u, plan.assignment[r.name]), r.name


def test_the_caption_names_the_peak_and_the_plans_registers(gemm_plans):
    plan = gemm_plans["chaitin-briggs"]
    a = analyze(plan.program)
    report = why_this_many(plan, a)
    assert report.caption.startswith(f"instruction {a.peak} (the peak): ")
    assert f"MAXLIVE {a.maxlive} at {a.peak}" in report.caption
    assert "the selected instruction" in why_this_many(plan, a, a.peak + 1).caption


def test_a_plan_with_spill_code_names_its_peak_so_and_never_calls_it_maxlive():
    """Issue 13: MAXLIVE is the program's before spill code; the spilled plan's largest pressure is not."""
    from engine.alloc import allocate
    from engine.ir.parser import parse

    p = parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  %y:f32 = mov 2\n  %w:f32 = mov 3\n"
              "  %z:f32 = add %x, %y\n  %v:f32 = add %z, %w\n  st.global %v, 0, %v\n  exit\n")
    plan = allocate("linear-scan", p, budget=2).plan()
    a = analyze(plan.program)
    caption = why_this_many(plan, a).caption
    # the constants are computed again where they are read (rematerialised), spill code all the same
    assert plan.program.instructions != p.instructions and not plan.spills
    assert f"(peak with spill code {a.maxlive} at {a.peak})" in caption and "MAXLIVE" not in caption
