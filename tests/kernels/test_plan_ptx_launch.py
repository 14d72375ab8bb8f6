"""The plan PTX on a GPU (kernels.run.run_plan_ptx_on_gpu, the worker's ``gpu-ptx`` mode): what can be checked
without a device (the arguments it passes match the PTX's parameters one by one, for every workload's
harness) and the launch itself where there is one."""

from __future__ import annotations

import ctypes
import re

import pytest

from engine.alloc import allocate
from engine.plan import Plan
from engine.workloads.program import read
from kernels.codegen import kernel_source
from kernels.measurement import GpuRun, Unavailable
from kernels.plan_ptx import plan_ptx
from kernels.run import ptx_param_types, run_plan_ptx_on_gpu, run_worker
from kernels.toolchain import cuda_device
from kernels.worker import _module, ptx_arguments
from tests.kernels.conftest import gemm_plan, mha_plan
from tests.kernels.test_plan_ptx import EXAMPLES

#: the bytes of each PTX parameter type the plan PTX declares
PARAM_BYTES = {"u64": 8, "f32": 4, "f64": 8, "u32": 4, "u8": 1}


def _plans() -> list[Plan]:
    program, config = read(str(EXAMPLES[0]))
    example = allocate("linear-scan", program, 255)
    example = Plan(example.program, example.assignment, example.spills, 255, "linear-scan",
                   workload={"kind": "program", "name": config.name})
    return [gemm_plan(4, 4, 4), gemm_plan(3, 5, 7, budget=24), mha_plan(16, 4, 32, 2), example]


@pytest.mark.parametrize("plan", _plans(), ids=["gemm-4x4x4", "gemm-3x5x7-spilled", "mha", "program-example"])
def test_the_arguments_passed_match_the_plan_ptxs_parameters_one_by_one(plan):
    ptx = plan_ptx(plan)
    m = _module(kernel_source(plan, "plan").text)
    assert ptx.params == tuple(m.PARAMS)          # the worker refuses a launch where these differ
    run = m.gpu_run({"batch": 3})
    args = ptx_arguments(m.launch_args(run["inputs"]), ptx_param_types(plan), lambda a: a.ctypes.data)
    declared = re.findall(r"\.param \.(\w+) ", ptx.text)
    assert [ctypes.sizeof(a) for a in args] == [PARAM_BYTES[t] for t in declared]
    # each array's fifth word is its data pointer, the one the PTX reads (ld.param of _param_{first + 4})
    first = 0
    for name, value in zip(m.PARAMS, m.launch_args(run["inputs"])):
        if name in m.ARRAYS:
            assert args[first + 4].value == value.ctypes.data and args[first + 2].value == value.size
            assert f"[{ptx.entry}_param_{first + 4}]" in ptx.text
            first += 7
        else:
            first += 1


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="2 launch arguments for 1 PTX parameters"):
        ptx_arguments([1, 2], ["i32"], id)
    with pytest.raises(ValueError, match="no plan PTX parameter of type f16x2"):
        ptx_arguments([1], ["f16x2"], id)


def test_without_a_device_there_is_no_figure_only_the_reason():
    plan = gemm_plan(2, 2, 2)
    assert run_plan_ptx_on_gpu(plan, device=None) == Unavailable("no CUDA device")
    if cuda_device() is None:
        source = kernel_source(plan, "plan")
        ptx = plan_ptx(plan)
        reply = run_worker({"mode": "gpu-ptx", "source": source.text, "ptx": ptx.text, "entry": ptx.entry,
                            "params": list(ptx.params), "param_types": ptx_param_types(plan)}, False, 120)
        assert reply == {"error": "no CUDA device"}


@pytest.mark.gpu
def test_on_a_gpu_the_plan_ptx_is_launched_checked_and_timed():
    device = cuda_device()
    if device is None:
        pytest.skip("no CUDA device: launching the plan PTX needs one")
    for plan in (gemm_plan(8, 8, 8), gemm_plan(3, 5, 7, budget=24), mha_plan(16, 4, 32, 2)):
        result = run_plan_ptx_on_gpu(plan, device=device, repeats=5)
        assert isinstance(result, GpuRun), result
        assert result.ok and result.median_ms > 0
        # the driver's count for the cubin it loaded is ptxas's own for that cubin
        assert result.registers == result.ptxas_registers
