"""The time model (engine/model/timemodel.py): hand-worked cases, monotonic properties, and the machine's sources.

The hand counts use the arch files' own machine figures (SMs, clock,
bandwidth, schedulers), written out in each docstring.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.alloc import allocate
from engine.model.arch import ARCHS
from engine.base.errors import RegtuneError
from engine.model.ilp import plan_ilp
from engine.ir.parser import parse
from engine.plan import Plan
from engine.model.timemodel import MACHINE_FIGURES, load_machine, model_time, thread_traffic
from engine.workloads.gemm import Gemm, gemm_program


def test_every_arch_has_a_machine_with_a_source_for_each_figure():
    for arch in ARCHS:
        m = load_machine(arch)
        assert m.product and set(m.sources) == set(MACHINE_FIGURES)
        assert all(len(s) > 20 for s in m.sources.values())


def test_issue_bound_one_wave_on_sm_80():
    """A100: 108 SMs, 1410 MHz, 4 schedulers. 32 registers x 128 threads: 4 warps a block, 1024 registers a
    warp, 16 warps per sub-partition x 4 = 64 warps = 16 blocks per SM. 108 x 16 = 1728 blocks: 1 wave.
    Issue: 64 warps x 100 instructions / 4 = 1600 cycles > 1000 of one warp's chain, so issue-bound:
    1600 / 1410 MHz = 1.13475 us; no bytes."""
    t = model_time("sm_80", 1000, 100, 32, 128, 1728, 0, "plan")
    assert (t.active_blocks, t.warps_per_sm, t.waves, t.cycles_per_wave, t.bound) == (16, 64, 1, 1600, "issue")
    assert t.model_time_us == pytest.approx(1600 / 1410)
    assert t.memory_us == 0 and t.source == "plan"


def test_latency_bound_three_waves_on_sm_86():
    """A10: 72 SMs, 1695 MHz. 128 registers x 128 threads: 4096 registers a warp, 4 warps per sub-partition
    x 4 = 16 warps = 4 blocks per SM. 72 x 4 x 3 = 864 blocks: 3 waves. Issue: 16 x 100 / 4 = 400 cycles <
    3390 of one warp's chain, so latency-bound: 3 x 3390 / 1695 MHz = 6.0 us."""
    t = model_time("sm_86", 3390, 100, 128, 128, 864, 0, "sass")
    assert (t.active_blocks, t.warps_per_sm, t.waves, t.cycles_per_wave, t.bound) == (4, 16, 3, 3390, "latency")
    assert t.model_time_us == pytest.approx(6.0)


def test_memory_bound_on_sm_90():
    """H100 SXM5: 132 SMs, 1980 MHz, 3350 GB/s. 32 registers x 256 threads: 8 blocks, 64 warps per SM;
    1056 blocks = 1 wave of max(2000, 64 x 50 / 4 = 800) = 2000 cycles = 1.0101 us. Bytes: 1056 x 256 x 64 =
    17,301,504 at 3350 GB/s (3.35e6 bytes a microsecond) = 5.16463 us > 1.0101: memory-bound."""
    t = model_time("sm_90", 2000, 50, 32, 256, 1056, 64, "plan")
    assert t.compute_us == pytest.approx(2000 / 1980) and t.bytes_moved == 17_301_504
    assert t.memory_us == pytest.approx(17_301_504 / 3.35e6) and t.bound == "memory"
    assert t.model_time_us == t.memory_us


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(RegtuneError, match="unknown issue-cycle source 'measured'"):
        model_time("sm_80", 10, 10, 32, 128, 1, 0, "measured")
    with pytest.raises(RegtuneError, match="does not fit on an SM"):
        model_time("sm_80", 10, 10, 255, 1024, 1, 0, "plan")
    with pytest.raises(RegtuneError, match="bytes >= 0"):
        model_time("sm_80", 10, 10, 32, 128, 1, -4, "plan")


def test_traffic_counts_loop_trips_and_widths():
    """A loop of 3 trips loading one f32 (4 bytes) and one u64 pointer-wide value (8 bytes): 36 bytes global;
    one f32 spill store and reload after it: 8 bytes local."""
    p = parse(".kernel k\n.block a\n  %pa:u64 = param A\n  %i:i32 = mov 0\n.block loop\n"
              "  %x:f32 = ld.global %pa, 0\n  %q:u64 = ld.global %pa, 8\n  %i:i32 = add %i, 1\n"
              "  %p:pred = setp.lt %i, 3\n  cbr %p, loop, done\n.block done\n"
              "  st.local 0, %x\n  %y:f32 = ld.local 0\n  exit\n")
    assert (thread_traffic(p).global_bytes, thread_traffic(p).local_bytes) == (36, 8)


def test_spill_traffic_never_makes_the_model_faster():
    """GEMM 4x4x4 under a 24-register budget spills; its local bytes raise the traffic and, priced with
    its own issue cycles, its model time is never below the same program with unlimited registers."""
    program = gemm_program(Gemm(4, 4, 4), (4, 4))
    free, tight = allocate("linear-scan", program, 255), allocate("linear-scan", program, 24)
    assert not free.spills and tight.spills
    plain, spilled = thread_traffic(free.program), thread_traffic(tight.program)
    assert spilled.local_bytes > 0 == plain.local_bytes and spilled.global_bytes == plain.global_bytes
    times = []
    for a, traffic in ((free, plain), (tight, spilled)):
        f = plan_ilp(Plan(a.program, a.assignment, a.spills, 255, "linear-scan", options={"arch": "sm_80"}))
        times.append(model_time("sm_80", f.cycles, f.instructions, 32, 128, 4096, traffic.total, "plan"))
    assert times[1].model_time_us >= times[0].model_time_us and times[1].bytes_moved > times[0].bytes_moved


@settings(max_examples=200, deadline=None)
@given(arch=st.sampled_from(ARCHS), cycles=st.integers(1, 20_000), instructions=st.integers(1, 2_000),
       registers=st.integers(16, 255), threads=st.sampled_from([32, 64, 128, 256, 512]),
       blocks=st.integers(1, 50_000), nbytes=st.integers(0, 4096), more=st.integers(1, 4096))
def test_more_bytes_cycles_or_blocks_never_make_the_model_faster(arch, cycles, instructions, registers, threads,
                                                                 blocks, nbytes, more):
    try:
        base = model_time(arch, cycles, instructions, registers, threads, blocks, nbytes, "plan").model_time_us
    except RegtuneError:          # this many registers per block does not fit: nothing to compare
        return
    assert model_time(arch, cycles, instructions, registers, threads, blocks, nbytes + more,
                      "plan").model_time_us >= base
    assert model_time(arch, cycles + more, instructions, registers, threads, blocks, nbytes,
                      "plan").model_time_us >= base
    assert model_time(arch, cycles, instructions + more, registers, threads, blocks, nbytes,
                      "plan").model_time_us >= base
    bigger = model_time(arch, cycles, instructions, registers, threads, blocks + more, nbytes, "plan")
    assert bigger.model_time_us >= base and bigger.waves >= model_time(
        arch, cycles, instructions, registers, threads, blocks, nbytes, "plan").waves


def test_lower_occupancy_at_a_latency_bound_point_never_makes_it_faster():
    """A 20,000-cycle chain of 100 instructions is latency-bound at every occupancy (64 warps x 100 / 4 =
    1600 < 20,000); raising the registers from 24 to 255 lowers the blocks per SM step by step, and the
    model time never falls."""
    for arch in ARCHS:
        last_blocks, last_time = None, 0.0
        for registers in range(24, 256):
            t = model_time(arch, 20_000, 100, registers, 128, 20_000, 16, "plan")
            assert t.bound in ("latency", "memory")
            if last_blocks is not None:
                assert t.active_blocks <= last_blocks and t.model_time_us >= last_time
            last_blocks, last_time = t.active_blocks, t.model_time_us
        assert last_blocks < model_time(arch, 20_000, 100, 24, 128, 20_000, 16, "plan").active_blocks
