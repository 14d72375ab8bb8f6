"""The claims report's ILP section (engine/claims.py over engine/model/ilp.py): rows and losses from real plans."""

import pytest

from engine.alloc import allocate
from engine.model.ilp import plan_ilp
from engine.claims import BEST, ilp_drops, ilp_row, ilp_section
from engine.workloads.gemm import Gemm, build_gemm


def test_an_ilp_row_holds_each_allocators_model_figures():
    row = ilp_row(Gemm(2, 2, 2))
    program, options = build_gemm(Gemm(2, 2, 2))
    assert set(row["allocators"]) == {"naive", *BEST} and row["arch"] == "sm_80"
    for name, figures in row["allocators"].items():
        f = plan_ilp(allocate(name, program, 255).plan(options=options))
        assert figures["ilp"] == f.ilp and figures["cycles"] == f.cycles
        assert figures["ilp"] <= row["reference_ilp"]


def test_the_ratio_is_naive_over_the_best_and_naive_ahead_is_counted():
    rows = [ilp_row(Gemm(2, 2, 2)), ilp_row(Gemm(3, 2, 4))]
    d = ilp_drops(rows + [{"error": "a config that failed"}])
    assert d["configs"] == 2
    for row, ratio in zip(rows, d["best"]):
        a = row["allocators"]
        assert ratio == pytest.approx(a["naive"]["ilp"] / max(a[n]["ilp"] for n in BEST))
    # naive never reuses a register below its budget: no false dependence, so at least the ILP of any allocator
    assert d["naive_higher"] == sum(v > 1 for v in d["best"]) == 2 and d["spilling"] == []


def test_the_ilp_section_says_it_is_a_model_and_which_sample():
    text = "\n".join(ilp_section(stride=1125, workers=1))
    assert "Over 3 GEMM configs (every 1125th of 3,375, a deterministic sample)" in text
    assert "A model, not a measurement" in text and "| 0.39x (61% less) |" in text
