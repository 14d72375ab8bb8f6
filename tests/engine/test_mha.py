"""MHA workloads: the config space, the fused pass's structure, strategies' honest effects."""

import pytest

from engine.alloc import ALLOCATORS, allocate
from engine.predict import predicted_plan
from engine.base.errors import RegtuneError
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts, verify_execution
from engine.workloads.mha import GROUPS, HEAD_DIMS, STRATEGIES, Mha, build_mha, mha_configs, threads_per_row

NOTE_EXAMPLE = Mha(heads=32, batch=64, head_dim=64, groups=4)


def test_config_space_is_the_seeds():
    configs = mha_configs()
    assert len(configs) == 1512 == len(set(configs))
    assert NOTE_EXAMPLE in configs
    assert all(16 <= c.heads <= 128 and 1 <= c.batch <= 1024 and 32 <= c.head_dim <= 256 and 1 <= c.groups <= 8
               and c.seq_len == 2048 for c in configs)


def test_the_kv_loop_is_a_real_loop_with_every_phase():
    program, options = build_mha(NOTE_EXAMPLE)
    a = analyze(program)
    assert options["trips"] == 2048 // options["bc"]
    assert max(a.loop_depth) == 1
    phases = {i.phase for i in program.instructions}
    assert {"scores", "softmax", "rescale", "weighted_sum", "epilogue"} <= phases
    opcodes = {i.opcode for i in program.instructions}
    assert {"shfl.sync.bfly", "exp", "max", "rcp", "cbr"} <= opcodes
    # values carried around the back edge: the running max, sum and output
    body = [i for i, b in enumerate(program.blocks) if b.name == "kv0"][0]
    start = program.block_starts[body]
    assert {"m_0", "l_0", "o_0_0", "q_0_0"} <= set(a.live_at(start))


@pytest.mark.parametrize("d", HEAD_DIMS)
def test_pressure_grows_with_the_group_size(d):
    maxlive = [analyze(build_mha(Mha(32, 64, d, g))[0]).maxlive for g in GROUPS]
    assert maxlive == sorted(maxlive) and maxlive[0] < maxlive[-1]
    assert d % threads_per_row(d) == 0


@pytest.mark.parametrize("strategies", [(), ("fp16-softmax",), ("head-shared",)])
def test_programs_parse_back_and_verify_under_every_allocator(strategies):
    program, _ = build_mha(Mha(16, 1, 32, 2), strategies, bc=4)
    assert parse(print_program(program)) == program
    for name in sorted(ALLOCATORS):
        plan = predicted_plan(allocate(name, program, 64))
        assert static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget) == []
        verify_execution(plan.program, plan.assignment, plan.spills, seeds=(0,))


def test_strategy_effects_are_what_their_docstrings_say():
    base = analyze(build_mha(NOTE_EXAMPLE)[0]).maxlive
    effect = {s: analyze(build_mha(NOTE_EXAMPLE, (s,))[0]).maxlive for s in STRATEGIES}
    assert effect["fp16-softmax"] < base
    assert effect["head-shared"] < base
    assert effect["qk-symmetric"] == effect["sliding-window"] == effect["group-pools"] == base
    assert build_mha(NOTE_EXAMPLE, ("sliding-window",))[1]["trips"] < build_mha(NOTE_EXAMPLE)[1]["trips"]
    single = Mha(32, 64, 64, 1)
    assert analyze(build_mha(single, ("head-shared",))[0]).maxlive == analyze(build_mha(single)[0]).maxlive
    plain = analyze(build_mha(NOTE_EXAMPLE, projection=True)[0]).maxlive
    assert analyze(build_mha(NOTE_EXAMPLE, ("qk-symmetric",), projection=True)[0]).maxlive < plain


@pytest.mark.parametrize("w, kw, message", [
    (Mha(33, 64, 64, 4), {}, "MHA heads=33 is outside the config space"),
    (Mha(32, 64, 64, 3), {}, "MHA groups=3 is outside the config space"),
    (NOTE_EXAMPLE, {"strategies": ("magic",)}, "unknown MHA strategy 'magic'"),
    (NOTE_EXAMPLE, {"bc": 7}, "keys per K/V tile bc=7 must be even and divide 2048"),
])
def test_bad_workloads_are_named(w, kw, message):
    with pytest.raises(RegtuneError, match=message):
        build_mha(w, **kw)


def test_the_registered_workload_builds_what_build_mha_builds():
    from engine.workloads import workload_named

    w = workload_named("mha")
    config, options = w.from_flags({"heads": 16, "batch": 1, "head_dim": 32, "groups": 2,
                                    "strategies": "fp16-softmax, head-shared", "bc": 4, "projection": False})
    assert options["strategies"] == ("fp16-softmax", "head-shared")
    assert w.build(config, options) == build_mha(Mha(16, 1, 32, 2), ("fp16-softmax", "head-shared"), 4)
    assert w.build(config, {"projection": True}) == build_mha(Mha(16, 1, 32, 2), projection=True)
