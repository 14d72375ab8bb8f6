"""Issue 13: MAXLIVE is the program's, before spill code, in every plan; the pressure with spill code has
its own name."""

import pytest

from engine.alloc import ALLOCATORS, allocate
from engine.analysis.liveness import analyze
from engine.predict import predicted_plan, predict
from engine.workloads.mha import Mha, build_mha


@pytest.fixture(scope="module")
def mha_program():
    return build_mha(Mha(32, 64, 64, 4))[0]


def test_every_allocator_reports_the_programs_maxlive(mha_program):
    maxlive = analyze(mha_program).maxlive
    plans = {name: predicted_plan(allocate(name, mha_program, 255)) for name in sorted(ALLOCATORS)}
    assert {name: p.predicted["maxlive"] for name, p in plans.items()} == dict.fromkeys(plans, maxlive)
    for p in plans.values():
        assert p.predicted["peak_with_spill_code"] == analyze(p.program).maxlive
    naive = plans["naive"]
    assert naive.spills and naive.predicted["peak_with_spill_code"] != maxlive   # 107 against 115 (the issue)


def test_a_plan_read_back_without_its_allocation_gives_the_same_figures(mha_program):
    a = allocate("naive", mha_program, 255)
    plan = predicted_plan(a)
    assert predict(plan) == plan.predicted
