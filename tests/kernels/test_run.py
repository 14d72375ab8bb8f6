"""Kernels run in a worker process: numba's simulator against numpy, crashes and hangs contained, GPU figures honest."""

from __future__ import annotations

import os
import time

import pytest

from engine.alloc import ALLOCATORS
from engine.base.jobs import Cancelled
from engine.alloc.hand import Assign, Move, Spill, apply_edit
from kernels.measurement import GpuRun, SimulatorCheck, Unavailable
from kernels.run import run_on_gpu, run_worker, simulate
from kernels.toolchain import cuda_device
from tests.kernels.conftest import gemm_plan, mha_plan


@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_simulator_matches_numpy_for_every_allocator(allocator):
    result = simulate(gemm_plan(5, 6, 7, allocator, budget=32, tile=(5, 3)))
    assert isinstance(result, SimulatorCheck), result
    assert result.ok and result.max_error <= result.tolerance * 7 and result.runs == 2


def test_simulator_matches_numpy_for_hand_edited_plans():
    plan = gemm_plan(4, 4, 8, "chaitin-briggs", tile=(2, 2), schedule="load-all-first")
    spilled = apply_edit(plan, Spill("a_1_3"))
    assert spilled.rejected is None and spilled.plan.spills
    stores = [i for i, ins in enumerate(spilled.plan.program.instructions) if ins.opcode == "st.global"]
    moved = apply_edit(spilled.plan, Move(stores[-1], stores[0]))
    assert moved.rejected is None
    reassigned = apply_edit(moved.plan, Assign("b_0_0", (40,)))
    for plan in (spilled.plan, moved.plan, reassigned.plan):
        result = simulate(plan.with_(allocator="hand"))
        assert isinstance(result, SimulatorCheck) and result.ok, result


def test_a_kernel_that_computes_wrong_numbers_is_reported_not_raised():
    plan = gemm_plan(3, 3, 3, "linear-scan", tile=(3, 3))
    from kernels.codegen import kernel_source

    source = kernel_source(plan)
    broken = source.text.replace("cuda.fma(a_0_1, b_1_0, acc_0_0", "cuda.fma(a_0_1, b_1_1, acc_0_0", 1)
    assert broken != source.text
    result = run_worker({"source": broken, "kernel": source.name, "mode": "simulator"}, True, 300)
    assert result["ok"] is False and result["max_error"] > result["tolerance"]


def test_a_crash_or_a_hang_in_the_worker_is_an_error_value():
    crash = run_worker({"source": "import os\nos._exit(3)\n", "kernel": "k", "mode": "simulator"}, True, 60)
    assert crash["error"].startswith("the kernel worker exited with 3")
    hang = run_worker({"source": "while True:\n    pass\n", "kernel": "k", "mode": "simulator"}, True, 3)
    assert hang == {"error": "the kernel worker did not finish within 3 s (killed with its process group)"}
    bad = run_worker({"source": "raise ValueError('bad kernel')\n", "kernel": "k", "mode": "simulator"}, True, 60)
    assert bad == {"error": "ValueError: bad kernel"}


def test_a_worker_killed_at_its_limit_takes_its_process_group_along(tmp_path):
    pid_file = tmp_path / "child.pid"
    source = ("import subprocess\n"
              f"child = subprocess.Popen(['sleep', '300'])\nopen({str(pid_file)!r}, 'w').write(str(child.pid))\n"
              "while True:\n    pass\n")
    result = run_worker({"source": source, "kernel": "k", "mode": "simulator"}, True, 5)
    assert "killed with its process group" in result["error"]
    child = int(pid_file.read_text())
    time.sleep(0.5)
    with open(f"/proc/{child}/stat") if os.path.exists(f"/proc/{child}/stat") else open(os.devnull) as f:
        state = f.read().split(") ")[-1][:1]
    assert state in ("", "Z"), f"the worker's child {child} still runs (state {state})"


class _CancelWhenRunning:
    """A real progress object (engine.base.jobs.Progress) whose job is cancelled once the worker wrote ``pid_file``."""

    def __init__(self, pid_file):
        self.pid_file, self.at = pid_file, None

    def advance(self, done: int, total: int) -> None:
        pass

    def cancelled(self) -> bool:
        if self.at is None and self.pid_file.exists() and self.pid_file.read_text():
            self.at = time.monotonic()
        return self.at is not None


def test_a_cancelled_wait_kills_the_worker_group_at_once(tmp_path):
    pid_file = tmp_path / "worker.pid"
    source = f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n"
    progress = _CancelWhenRunning(pid_file)
    with pytest.raises(Cancelled, match="was cancelled"):
        run_worker({"source": source, "kernel": "k", "mode": "simulator"}, True, 300, progress=progress)
    assert time.monotonic() - progress.at < 0.5
    worker = int(pid_file.read_text())
    assert not os.path.exists(f"/proc/{worker}"), f"worker {worker} outlived the cancel"


def test_a_worker_ends_when_its_parent_is_killed(tmp_path):
    """A ``regtune`` killed with SIGKILL cannot stop its workers: they watch their parent and end themselves."""
    import subprocess
    import sys

    script = ("from kernels.run import run_worker\n"
              "run_worker({'source': 'while True:\\n    pass\\n', 'kernel': 'k', 'mode': 'simulator'}, True, 300)\n")
    parent = subprocess.Popen([sys.executable, "-c", script])
    worker = None
    for _ in range(100):
        found = subprocess.run(["pgrep", "-P", str(parent.pid), "-f", "kernels.worker"], capture_output=True, text=True)
        if found.stdout.split():
            worker = int(found.stdout.split()[0])
            break
        time.sleep(0.1)
    assert worker is not None, "the worker did not start"
    parent.kill()
    parent.wait()
    for _ in range(50):
        if not os.path.exists(f"/proc/{worker}") or open(f"/proc/{worker}/stat").read().split(") ")[-1][:1] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"worker {worker} outlived its parent")


def test_a_worker_past_its_memory_limit_is_an_error_value():
    hog = "block = bytearray(3 * 1024 ** 3)\n"
    result = run_worker({"source": hog, "kernel": "k", "mode": "simulator"}, True, 60, memory_mb=1024)
    assert result["error"].startswith("MemoryError") and "memory limit: 1024 MB" in result["error"]


def test_without_a_gpu_the_gpu_figures_say_why():
    if cuda_device() is not None:
        pytest.skip("a CUDA device is present: this checks the figures of a machine without one")
    from kernels.codegen import kernel_source

    source = kernel_source(gemm_plan(2, 2, 2))
    # the worker itself asks the driver (no simulator) and answers with the reason, not a number
    result = run_worker({"source": source.text, "kernel": source.name, "mode": "gpu"}, False, 120)
    assert result == {"error": "no CUDA device"}
    assert run_on_gpu(gemm_plan(2, 2, 2), device=None) == Unavailable("no CUDA device")


def test_on_a_gpu_the_kernel_is_checked_timed_and_its_registers_read():
    device = cuda_device()
    if device is None:
        pytest.skip("no CUDA device: GPU launch and timing need one")
    result = run_on_gpu(gemm_plan(8, 8, 8), device=device, repeats=5)
    assert isinstance(result, GpuRun), result
    assert result.ok and result.median_ms > 0 and result.registers > 0


@pytest.mark.slow
def test_simulator_matches_numpy_for_mha_at_a_small_size():
    for plan in (mha_plan(allocator="dsatur"), mha_plan(head_dim=32, groups=2, strategies=("fp16-softmax",))):
        result = simulate(plan)
        assert isinstance(result, SimulatorCheck) and result.ok, result
        assert result.trips and "K/V tiles per loop" in result.scope
