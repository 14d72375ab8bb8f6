"""Architecture data, occupancy (hand-worked from cuda_occupancy.h's rules) and bank conflicts."""

from engine.predict import predicted_plan
import pytest

from engine.model.arch import ARCHS, BankModel, bank_conflicts, load_arch, next_register_step, occupancy
from engine.base.errors import RegtuneError
from engine.ir.parser import parse


def test_every_arch_loads_with_the_register_file_of_all_recent_gpus():
    for name in ARCHS:
        a = load_arch(name)
        assert (a.registers_per_sm, a.max_registers_per_thread, a.register_allocation_unit) == (65536, 255, 256)
        assert a.max_warps_per_sm * a.warp_size == a.max_threads_per_sm
    assert (load_arch("sm_86").max_warps_per_sm, load_arch("sm_89").max_blocks_per_sm) == (48, 24)


@pytest.mark.parametrize(
    "arch, regs, threads, smem, blocks, warps, limited_by",
    [
        # 32 regs: 1024 regs/warp, 16 warps per sub-partition -> 64 warps; 8 warps per block -> 8 blocks.
        ("sm_80", 32, 256, 0, 8, 64, ("warps", "registers")),
        # 255 regs: 8160 -> 8192 regs/warp; 2 warps per sub-partition -> 8 warps -> 2 blocks of 4 warps.
        ("sm_80", 255, 128, 0, 2, 8, ("registers",)),
        # 128 regs: 4096/warp, 4 per sub-partition -> 16 warps -> 2 blocks of 8 warps.
        ("sm_90", 128, 256, 0, 2, 16, ("registers",)),
        # 64 regs x 1024 threads on sm_86: 32 warps fit the registers, 48/32 = 1 block by warps.
        ("sm_86", 64, 1024, 0, 1, 32, ("warps", "registers")),
        # 48 KB + 1 KB reserved = 50176 B, 128-B aligned; 167936 / 50176 = 3 blocks.
        ("sm_80", 32, 128, 49152, 3, 12, ("shared memory",)),
        # 255 regs x 1024 threads: 8192 x 32 warps = 262144 > 65536 registers per block: cannot launch.
        ("sm_80", 255, 1024, 0, 0, 0, ("registers",)),
        # 40 regs: 1280/warp, 12 per sub-partition -> 48 warps; 1 warp per block -> 32 blocks (block limit).
        ("sm_80", 40, 32, 0, 32, 32, ("blocks",)),
    ],
)
def test_occupancy_hand_worked_cases(arch, regs, threads, smem, blocks, warps, limited_by):
    occ = occupancy(load_arch(arch), regs, threads, smem)
    assert (occ.active_blocks, occ.active_warps, occ.limited_by) == (blocks, warps, limited_by)
    assert occ.occupancy == warps / load_arch(arch).max_warps_per_sm


def test_next_occupancy_step():
    a100 = load_arch("sm_80")
    assert next_register_step(a100, 130, 256) == (128, 16)
    assert next_register_step(a100, 32, 256) is None  # already at 64 warps


def test_bad_inputs_are_named():
    with pytest.raises(RegtuneError, match="unknown architecture 'sm_75'"):
        load_arch("sm_75")
    with pytest.raises(RegtuneError, match="threads per block must be 1..1024, got 2048"):
        occupancy(load_arch("sm_80"), 32, 2048)


def test_bank_conflicts_of_an_assignment():
    program = parse(".kernel k\n.block b\n  %a:f32 = mov 1\n  %b:f32 = mov 2\n  %c:f32 = mov 3\n"
                    "  %d:f32 = fma %a, %b, %c\n  st.global %d, 0, %d\n  exit\n")
    model = BankModel("two-banks-two-reads", 2, 2)
    assert bank_conflicts(program, {"a": (0,), "b": (2,), "c": (4,), "d": (0,)}, model) == (1, [(3, 1)])
    assert bank_conflicts(program, {"a": (0,), "b": (1,), "c": (2,), "d": (0,)}, model) == (0, [])
    strict = BankModel("one-read", 2, 1)
    assert bank_conflicts(program, {"a": (0,), "b": (1,), "c": (2,), "d": (0,)}, strict) == (1, [(3, 1)])


def test_plans_predict_bank_conflicts_under_their_arch():
    from engine.alloc import allocate
    from engine.workloads.gemm import Gemm, build_gemm

    program, _ = build_gemm(Gemm(4, 4, 4))
    plan = predicted_plan(allocate("dsatur", program))
    expected, _ = bank_conflicts(plan.program, plan.assignment, load_arch("sm_80").bank_model)
    assert plan.predicted["bank_conflicts"] == expected > 0
    assert plan.predicted["bank_model"] == "sm_80: two-banks-two-reads"
