"""Run generated kernels in a worker process with a time limit: numba's simulator or a GPU.

Invariant: these functions never raise for a kernel that crashes, hangs or
computes wrong numbers: :func:`run_worker` returns the worker's reply dict
(the process boundary), whose ``error`` (one line) or ``ok``/``max_error``
says what happened, and the functions above it return the typed results
of :mod:`kernels.measurement`, an ``Unavailable`` with that line when there
is no figure; a crash in a kernel never takes the caller down. A GPU
figure without a GPU is ``Unavailable("no CUDA device")``, never a number.
They raise only ``Cancelled``, when the caller's progress object says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from engine.base.jobs import Cancelled, Progress
from engine.ir.cfg import adjust_trips
from engine.model.arch import (
    DEFAULT_ARCH,
    DEFAULT_BUILD_ARCHS,
    load_arch,
    plan_register_cap,
)
from engine.plan import Plan
from kernels.codegen import KernelSource, kernel_source
from kernels.facts import PlanFacts, facts_of
from kernels.harness import harness_for

SIMULATOR_TIMEOUT_S = 600
GPU_TIMEOUT_S = 300
#: K/V tiles an MHA simulator run covers (the simulator is slow; the kernel is the same but for the trip count)
SIMULATOR_TRIPS = 2


#: how often a waiting caller asks its progress object whether the job was cancelled
CANCEL_POLL_S = 0.05

#: address space a worker may map unless the caller says otherwise (a GEMM 16x16x16 compile takes under 2 GB)
WORKER_MEMORY_MB = 8192


def run_worker(request: dict, simulator: bool, timeout: float, memory_mb: int | None = WORKER_MEMORY_MB,
               progress: Progress | None = None) -> dict:
    """Send ``request`` to ``python -m kernels.worker``; its reply, or an error for a crash, a hang or a
    worker past its limits.

    The worker runs in a process group of its own, capped at ``memory_mb``
    of address space (None: no cap; a GPU run needs the driver's large
    mappings); past ``timeout`` seconds, on Ctrl+C here, or within
    :data:`CANCEL_POLL_S` of ``progress.cancelled()`` turning true (which
    then raises ``Cancelled``), the whole group is killed, so nothing it
    started lives on.
    """
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if simulator else "0"}
    request = {**request, "memory_mb": memory_mb}
    proc = subprocess.Popen([sys.executable, "-m", "kernels.worker", "--parent", str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    with _LOCK:
        _RUNNING.add(proc)
    try:
        stdout, stderr = _communicate(proc, json.dumps(request), timeout, progress)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return {"error": f"the kernel worker did not finish within {timeout:g} s (killed with its process group)"}
    except BaseException:       # Ctrl+C or the caller's own cancel: nothing of the worker survives
        _kill_group(proc)
        proc.communicate()
        raise
    finally:
        with _LOCK:
            _RUNNING.discard(proc)
            stopped = proc in _STOPPED
            _STOPPED.discard(proc)
    if stopped:
        return {"error": "the kernel worker was stopped (the command was interrupted or the window closed)"}
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (stderr or stdout or "").strip().splitlines()
        why = tail[-1] if tail else "no output"
        if proc.returncode < 0 or "MemoryError" in why:
            why += f" (its memory limit was {memory_mb} MB)" if memory_mb else ""
        return {"error": f"the kernel worker exited with {proc.returncode}: {why[:300]}"}
    return json.loads(lines[-1])


def _communicate(proc: subprocess.Popen, text: str, timeout: float, progress: Progress | None) -> tuple[str, str]:
    """``proc.communicate`` that also raises ``Cancelled`` once ``progress`` is cancelled (polled every
    :data:`CANCEL_POLL_S`); TimeoutExpired past ``timeout``."""
    if progress is None:
        return proc.communicate(text, timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        if progress.cancelled():
            raise Cancelled(f"the kernel worker {proc.pid} was cancelled")
        left = deadline - time.monotonic()
        try:
            return proc.communicate(text, timeout=max(0.0, min(CANCEL_POLL_S, left)))
        except subprocess.TimeoutExpired:
            if left <= CANCEL_POLL_S:
                raise
        text = None         # sent with the first call; a retry only goes on reading


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the worker's process group (the worker leads it); a group already gone is fine."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: the workers running now (every thread's), so that an interrupted command or a closing window can stop them
_RUNNING: set = set()
_STOPPED: set = set()
_LOCK = threading.Lock()


def stop_workers() -> int:
    """Kill every running worker and its process group (Ctrl+C, SIGTERM, the window closing); how many.

    The threads waiting on them get an error value back at once. A worker
    whose parent dies without calling this ends by itself too (it watches
    its parent, see :mod:`kernels.worker`).
    """
    with _LOCK:
        running = list(_RUNNING)
        _STOPPED.update(running)
    for proc in running:
        _kill_group(proc)
    return len(running)


def simulator_trips(plan: Plan, facts: PlanFacts | None = None) -> dict:
    """The loops' trip counts a simulator run keeps: ``SIMULATOR_TRIPS`` where the workload's harness asks for
    shortened loops (MHA), else none (empty: the kernel runs as built)."""
    harness = harness_for(plan)
    if harness is None or harness.simulator_scope is None:
        return {}
    return {label: min(n, SIMULATOR_TRIPS) for label, n in facts_of(plan, facts).trips.items()}


def simulator_source(plan: Plan, spills: str = "plan", facts: PlanFacts | None = None,
                     built: KernelSource | None = None) -> tuple[KernelSource, dict]:
    """The kernel as the simulator runs it: loops shortened to ``SIMULATOR_TRIPS`` trips where the workload's
    harness asks for it (MHA), nothing else changed; ``built``: the caller's kernel source of ``plan`` with
    ``spills``, used as it is where no loop is shortened."""
    facts = facts_of(plan, facts)
    trips = simulator_trips(plan, facts)
    if not trips and built is not None and (built.spills, built.load_order) == (spills, "barrier"):
        return built, {}
    return kernel_source(plan, spills, trips or None, facts=facts), trips


def simulate(plan: Plan, spills: str = "plan", timeout: float = SIMULATOR_TIMEOUT_S, seed: int = 0,
             facts: PlanFacts | None = None, built: KernelSource | None = None):
    """Run the plan's kernel in numba's CUDA simulator: a :class:`~kernels.measurement.SimulatorCheck`, or an
    ``Unavailable`` saying why the worker gave none.

    Two checks, each on the same seeded inputs: against numpy where the
    workload has a numpy reference (GEMM, MHA), and, where the plan has
    spill code, against the kernel of the same program without it
    (:func:`kernels.codegen.without_spill_code`, compiler spills), every
    array compared bit for bit: that the plan's spill code keeps the
    program's meaning. ``facts``: the caller's :class:`kernels.facts.PlanFacts` of ``plan``; ``built``: its
    kernel source as built (see :func:`simulator_source`).

    Where the workload's harness chooses a grid for coverage (GEMM, MHA:
    its ``coverage``), only the blocks and threads it names run, and the
    check's ``scope`` says which, why, and what the engine's interpreter
    found those same threads do at every conditional branch of the
    simulated program (:func:`branch_coverage`).
    """
    from kernels.measurement import SimulatorCheck, Unavailable

    facts = facts_of(plan, facts)
    source, trips = simulator_source(plan, spills, facts, built)
    request = {"source": source.text, "kernel": source.name, "mode": "simulator", "seed": seed}
    harness = harness_for(plan)
    runs = harness.coverage(plan, trips or facts.trips) if harness is not None and harness.coverage else None
    if runs:
        request["runs"] = runs
    plain = facts.plain
    if spills == "plan" and plain is not plan and plain.program != plan.program:
        reference = kernel_source(plain, "compiler", trips or None, facts=PlanFacts(plain, trips=facts.trips))
        request.update(reference_source=reference.text, reference_kernel=reference.name)
    result = run_worker(request, simulator=True, timeout=timeout)
    if "error" in result:
        return Unavailable(result["error"])
    if "reference_source" not in request:
        result["spill_code"] = ("no spill code in the plan" if spills == "plan" else
                                "the kernel has compiler spills itself (spills 'compiler')") + \
            ": nothing to compare with compiler spills"
    scope = []
    if trips:
        result["trips"] = trips
        scope.append(harness.simulator_scope(SIMULATOR_TRIPS, max(facts.trips.values())))
    if runs:
        program = adjust_trips(plan.program, trips) if trips else plan.program
        ran = result.pop("ran", None)
        scope += [f"run {k + 1}: {r['what']}" for k, r in enumerate(runs)]
        scope.append(branch_coverage(program, runs))
        if ran:
            scope.append(f"{ran['threads']} threads in {ran['blocks']} blocks ran")
    if scope:
        result["scope"] = "; ".join(scope)
    return SimulatorCheck.from_dict(result)


def _bits(value) -> int:
    """A run's scalar parameter as the interpreter reads it: an int as it is, a float as its float32 bits."""
    import struct

    return int(value) if isinstance(value, int) else struct.unpack("<I", struct.pack("<f", float(value)))[0]


def branch_coverage(program, runs: list) -> str:
    """What the threads of ``runs`` (a harness's coverage runs) do at the conditional branches of ``program``,
    by the engine's interpreter (:func:`engine.check.interp.run`) on each thread's block and thread indices and
    its run's parameters: every branch taken both ways, or the first taken one way only or never reached.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block e\\n  %t:i32 = sreg.tid.x\\n  %n:i32 = param n\\n  %c:pred = setp.lt %t, %n\\n"
    ...           "  cbr %c, body, done\\n.block body\\n  exit\\n.block done\\n  exit\\n")
    >>> branch_coverage(p, [{"params": {"n": 1}, "blocks": [[[0, 0, 0], [0, 1]]]}])
    'the engine interpreter on those 2 threads: all 1 conditional branches taken both ways'
    >>> branch_coverage(p, [{"params": {"n": 1}, "blocks": [[[0, 0, 0], [0]]]}])
    'the engine interpreter on those 1 threads: the branch at instruction 3 (cbr %c, body, done) went only one way'
    """
    from engine.check.inputs import InputModel
    from engine.check.interp import decode, run

    cases = {}
    for k, r in enumerate(runs):
        params = {name: _bits(v) for name, v in r.get("params", {}).items()}
        for block, threads in r["blocks"]:
            for t in threads:
                cases[f"run {k} block {tuple(block)} thread {t}"] = {
                    "%tid.x": t, "%ctaid.x": block[0], "%ctaid.y": block[1], "%ctaid.z": block[2], **params}
    model, decoded = InputModel.of({}, cases), decode(program)
    ways, reached = set(), set()
    for seed in model.case_seeds:
        trace = run(program, seed, model=model, decoded=decoded)
        ways |= trace.taken
        reached |= {i for i, n in enumerate(trace.executed) if n}
    branches = [i for i, ins in enumerate(program.instructions) if ins.opcode == "cbr" and len(set(ins.targets)) == 2]
    head = f"the engine interpreter on those {len(cases)} threads: "
    for i in branches:
        if (i, True) not in ways or (i, False) not in ways:
            how = "went only one way" if i in reached else "was never reached"
            return head + f"the branch at instruction {i} ({program.instructions[i]}) {how}"
    return head + f"all {len(branches)} conditional branches taken both ways"


def run_on_gpu(plan: Plan, spills: str = "plan", timeout: float = GPU_TIMEOUT_S, device: str | None = None,
               repeats: int = 20, batch: int | None = None, built: KernelSource | None = None):
    """Launch, check and time the plan's kernel on the GPU: a :class:`~kernels.measurement.GpuRun`, or an
    ``Unavailable`` saying why there is none (``"no CUDA device"`` when ``device`` is None); ``built``: the
    caller's kernel source of ``plan`` with ``spills``."""
    from kernels.measurement import Unavailable, gpu_from_dict

    if device is None:
        return Unavailable("no CUDA device")
    source = built if built is not None and (built.spills, built.load_order) == (spills, "barrier") \
        else kernel_source(plan, spills)
    # the plan cap of a build (with the oldest arch's floor, the device's is not known here); never the budget
    request = {"source": source.text, "kernel": source.name, "mode": "gpu", "repeats": repeats,
               "max_registers": plan_register_cap(load_arch(DEFAULT_ARCH), source.registers)}
    if batch:
        request["batch"] = batch
    return gpu_from_dict(run_worker(request, simulator=False, timeout=timeout, memory_mb=None))


def ptx_param_types(plan: Plan) -> list[str]:
    """The IR type of each plan-PTX kernel parameter, in order (``u64``: an array), ``spill_zero``'s ``i32`` last.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block entry\\n  %pa:u64 = param A\\n  %n:i32 = param n\\n  exit\\n")
    >>> ptx_param_types(Plan(p, {"pa": [0, 1], "n": [2]}, {}, 255, "hand"))
    ['u64', 'i32', 'i32']
    """
    return [ins.defs[0].type for ins in plan.program.instructions if ins.opcode == "param"] + ["i32"]


def run_plan_ptx_on_gpu(plan: Plan, timeout: float = GPU_TIMEOUT_S, device: str | None = None, repeats: int = 20,
                        batch: int | None = None):
    """The plan's own PTX (:func:`kernels.plan_ptx.plan_ptx`, volatile spill code) launched, checked and timed on
    the GPU like :func:`run_on_gpu`: ptxas of this toolchain assembles it for the device's architecture at the
    plan cap, numba-cuda's driver API loads and launches it on the Numba kernel harness's inputs and grid. A
    :class:`~kernels.measurement.GpuRun` (with ``ptxas_registers`` and ``arch``), or an ``Unavailable`` saying
    why there is none (``"no CUDA device"`` when ``device`` is None, the emitter's refusal)."""
    from kernels.measurement import Unavailable, gpu_from_dict
    from kernels.plan_ptx import PlanPtxError, plan_ptx

    if device is None:
        return Unavailable("no CUDA device")
    try:
        ptx = plan_ptx(plan, DEFAULT_ARCH)
    except PlanPtxError as e:
        return Unavailable(f"no plan PTX: {e}")
    source = kernel_source(plan, "plan")
    request = {"source": source.text, "kernel": source.name, "mode": "gpu-ptx", "repeats": repeats,
               "ptx": ptx.text, "entry": ptx.entry, "params": list(ptx.params), "param_types": ptx_param_types(plan),
               "max_registers": plan_register_cap(load_arch(DEFAULT_ARCH), ptx.registers)}
    if batch:
        request["batch"] = batch
    return gpu_from_dict(run_worker(request, simulator=False, timeout=timeout, memory_mb=None))


def build_in_worker(plan: Plan, archs=DEFAULT_BUILD_ARCHS, skip_simulator: str = "", timeout: float = 900,
                    progress: Progress | None = None):
    """:func:`kernels.pipeline.measure` of ``plan`` in a worker process (the window's Build & measure).

    A :class:`~kernels.measurement.Measurement`, or an ``Unavailable`` saying
    why the worker gave none; ``Cancelled`` (the worker killed at once) when
    ``progress`` is cancelled.
    """
    from engine.planfile import plan_to_dict
    from kernels.measurement import Measurement, Unavailable

    reply = run_worker({"mode": "build", "plan": plan_to_dict(plan), "archs": list(archs),
                        "skip_simulator": skip_simulator}, simulator=False, timeout=timeout, progress=progress)
    return Unavailable(reply["error"]) if "error" in reply else Measurement.from_reply(reply)


def sweep_in_worker(plan: Plan, arch: str = DEFAULT_ARCH, start: int = 24, stop: int = 255, timeout: float = 600,
                    progress: Progress | None = None):
    """:func:`kernels.pipeline.budget_sweep` of ``plan`` in a worker process: a
    :class:`~kernels.measurement.Sweep`, or an ``Unavailable`` saying why there is none."""
    from engine.planfile import plan_to_dict
    from kernels.measurement import Sweep, Unavailable

    reply = run_worker({"mode": "sweep", "plan": plan_to_dict(plan), "arch": arch, "start": start, "stop": stop},
                       simulator=False, timeout=timeout, progress=progress)
    return Unavailable(reply["error"]) if "error" in reply else Sweep.from_dict(reply)
