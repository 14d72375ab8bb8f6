"""GEMM workloads: the config space, programs that parse back and verify, schedule theory."""

import random

import pytest

from engine.alloc import ALLOCATORS, allocate
from engine.predict import predicted_plan
from engine.base.errors import RegtuneError
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts, verify_execution
from engine.workloads.gemm import SCHEDULES, Gemm, build_gemm, default_tile, gemm_configs, gemm_program, tiles

SAMPLE = random.Random(7).sample(gemm_configs(), 12)


def test_config_space_is_the_seeds():
    configs = gemm_configs()
    assert len(configs) == 3375 == len(set(configs))
    assert min(c.m for c in configs) == 2 and max(c.k for c in configs) == 16


@pytest.mark.parametrize("w", SAMPLE, ids=str)
def test_sampled_configs_parse_back_and_verify_under_every_allocator(w):
    program, options = build_gemm(w)
    assert parse(print_program(program)) == program
    for name in sorted(ALLOCATORS):
        plan = predicted_plan(allocate(name, program, 255))
        assert static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget) == []
        verify_execution(plan.program, plan.assignment, plan.spills, seeds=(0, 1))


@pytest.mark.parametrize("w", SAMPLE, ids=str)
def test_schedules_order_maxlive_as_theory_says(w):
    for tile in tiles(w)[::3]:
        first, outer, dot = (analyze(gemm_program(w, tile, s)).maxlive for s in SCHEDULES)
        assert first >= outer >= dot


def test_default_tile_keeps_a_quarter_of_the_architectures_limit_free():
    w = Gemm(16, 16, 16)
    tile = default_tile(w)
    assert analyze(gemm_program(w, tile)).maxlive <= 0.75 * 255
    bigger = [t for t in tiles(w) if t[0] * t[1] > tile[0] * tile[1]]
    assert all(analyze(gemm_program(w, t)).maxlive > 0.75 * 255 for t in bigger)
    assert default_tile(w, limit=64) != tile


def test_names_follow_the_workload_and_c_is_loaded_only_when_beta_is_not_zero():
    program = gemm_program(Gemm(2, 2, 2), (2, 2), "k-outer")
    names = set(program.values)
    assert {"a_0_0", "a_1_1", "b_0_1", "acc_1_1", "c_0_0", "ta", "tb", "tc"} <= names
    beta = program.blocks[[b.name for b in program.blocks].index("beta")]
    assert [i.opcode for i in beta.instructions].count("ld.global") == 4
    assert {i.phase for i in program.instructions} >= {"index", "load", "compute", "epilogue"}


@pytest.mark.parametrize("args, message", [
    ((Gemm(1, 4, 4), None, "k-outer"), "GEMM M=1 is outside the config space 2..16"),
    ((Gemm(4, 4, 4), (3, 4), "k-outer"), "tile 3x4 does not divide C (4x4)"),
    ((Gemm(4, 4, 4), (2, 2), "zigzag"), "unknown GEMM schedule 'zigzag' (known: load-all-first, k-outer, dot)"),
])
def test_bad_workloads_are_named(args, message):
    with pytest.raises(RegtuneError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_gemm(*args)


def test_the_registered_workload_builds_what_build_gemm_builds():
    from engine.workloads import workload_named

    w = workload_named("gemm")
    config, options = w.from_flags({"m": 8, "n": 4, "k": 3, "tile": "2x4", "schedule": "dot"})
    assert w.build(config, {**options, "budget": 64}) == build_gemm(Gemm(8, 4, 3), (2, 4), "dot")
    assert w.build(Gemm(8, 8, 8), {"budget": 64, "headroom": 0.5}) == build_gemm(Gemm(8, 8, 8), headroom=0.5)
    assert w.build(Gemm(8, 8, 8), {"tile": "fit", "budget": 64, "headroom": 0.5}) \
        == build_gemm(Gemm(8, 8, 8), limit=64, headroom=0.5)


def test_the_budget_never_changes_the_default_tile_and_fit_asks_for_it():
    """Issue 13: --budget 32 used to shrink GEMM 16x16x16's tile so that nothing spilled."""
    from engine.workloads import workload_named

    w = workload_named("gemm")
    big = Gemm(16, 16, 16)
    default = w.build(big, {"budget": 255})[1]["tile"]
    assert w.build(big, {"budget": 32})[1]["tile"] == default
    fitted = w.build(big, {"budget": 32, "tile": "fit"})[1]["tile"]
    assert fitted[0] * fitted[1] < default[0] * default[1]
    assert analyze(gemm_program(big, tuple(fitted))).maxlive <= 0.75 * 32
    with pytest.raises(RegtuneError, match="--tile must be TMxTN"):
        w.from_flags({"m": 8, "n": 4, "k": 3, "tile": "2y4", "schedule": "dot"})
