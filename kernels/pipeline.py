"""The kernels pipeline, once: measure a plan (build, simulate, run) and sweep its register cap.

``regtune build``, ``regtune compare``, ``regtune budget-sweep``, the
window's Build & measure and Budget sweep (through the worker's ``build``
and ``sweep`` modes) all call :func:`measure` and :func:`budget_sweep`;
nothing else builds a report or a sweep.

Invariant: each function returns a typed result
(:class:`~kernels.measurement.Measurement`, :class:`~kernels.measurement.Sweep`);
a simulator or GPU figure that could not be had is an ``Unavailable`` with
its reason, and the GPU runs the very kernel that was built (same spills);
the plan PTX's figures are measured beside it, or are an ``Unavailable``
saying why the plan has none.
It reports its stages to a progress object and stops with ``Cancelled``
between them once that object says so.

Examples
--------
>>> sweep_caps(32, 255)[-3:], sweep_caps(24, 40)
([240, 248, 255], [24, 32, 40])
"""

from __future__ import annotations

import functools
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace

from engine.base.errors import RegtuneError
from engine.base.jobs import Cancelled, NullProgress, Progress
from engine.model.arch import (
    DEFAULT_ARCH,
    DEFAULT_BUILD_ARCHS,
    Arch,
    check_register_cap,
    load_arch,
    occupancy,
)
from engine.plan import Plan
from kernels.build import (
    Limits,
    StageCache,
    build_plan,
    code_digest,
    compile_ptx,
    rename_entry,
    toolchain,
)
from kernels.codegen import kernel_source
from kernels.facts import PlanFacts, facts_of
from kernels.measurement import (
    Measurement,
    PlanPtxFigures,
    SimulatorCheck,
    Sweep,
    SweepRow,
    Unavailable,
)
from kernels.plan_ptx import plan_ptx_figures
from kernels.report import measurement, threads_per_block
from kernels.run import SIMULATOR_TIMEOUT_S, run_on_gpu, simulate
from kernels.toolchain import CompileReport, cuda_device, ptxas

#: the step between the caps of a budget sweep
SWEEP_STEP = 8


def _stage(progress: Progress, done: int, total: int, what: str) -> None:
    if progress.cancelled():
        raise Cancelled(f"{what} cancelled")
    progress.advance(done, total)


@functools.lru_cache(maxsize=1)
def _device() -> str | None:
    """The CUDA device, asked once per process (each ask starts a Python that imports numba)."""
    return cuda_device()


#: what the simulator and GPU figures of a stored report are until this measurement's own replace them
_PENDING = Unavailable("not run yet")


def measure(plan: Plan, archs=DEFAULT_BUILD_ARCHS, spills: str = "plan", limits: Limits = Limits(),
            skip_simulator: str = "", sim_timeout: float = SIMULATOR_TIMEOUT_S,
            progress: Progress | None = None, facts: PlanFacts | None = None, skip_gpu: str = "") -> Measurement:
    """Build ``plan``'s kernel for ``archs``, measure it, check it in the simulator and, with a device, on the GPU.

    ``skip_simulator`` / ``skip_gpu``: when not empty, the simulator (the GPU
    run) is not started and this is the reason its figure shows. ``facts``:
    the caller's :class:`kernels.facts.PlanFacts` of ``plan`` (an
    allocation's analyses), from which every derived figure is read; without
    them each is derived once here. A note on an unusable cache is in
    ``Measurement.cache_warning``.

    Cached by content: the report (everything but the simulator and GPU
    figures) under the plan's digest, ``archs``, ``spills``, the toolchain's
    versions and :func:`kernels.build.code_digest`; the simulator check
    likewise (:func:`simulator_check`). A second identical measurement runs
    no tool, no simulator and derives nothing but the GPU run (with a device).
    """
    progress = progress or NullProgress()
    facts = facts_of(plan, facts)
    archs = tuple(archs)
    _stage(progress, 0, 3, "build")
    m, built = _report(plan, archs, spills, limits, facts)
    _stage(progress, 1, 3, "simulator check")
    sim = Unavailable(skip_simulator) if skip_simulator else simulator_check(plan, spills, sim_timeout, facts, built)
    _stage(progress, 2, 3, "GPU run")
    gpu = Unavailable(skip_gpu) if skip_gpu else run_on_gpu(plan, spills, device=_device(), built=built)
    progress.advance(3, 3)
    return replace(m, simulator=sim, gpu=gpu)


def _report_key(facts: PlanFacts, archs: tuple, spills: str) -> tuple[str, ...]:
    return (facts.digest, ",".join(archs), spills, code_digest())


def _valid_report(text: str) -> bool:
    try:
        Measurement.from_reply(json.loads(text))
        return True
    except Exception:  # noqa: BLE001 - any entry this version cannot read back is a miss
        return False


def _report(plan: Plan, archs: tuple, spills: str, limits: Limits, facts: PlanFacts):
    """The measurement without its simulator and GPU figures (stored, or built and measured now), and the kernel
    source when it was generated here (None: read from the cache)."""
    t = time.perf_counter()
    cache = StageCache.open(toolchain())
    key = _report_key(facts, archs, spills)
    stored = cache.read("report", _valid_report, *key)
    if stored is not None:
        m = Measurement.from_reply(json.loads(stored))
        own = m.plan_ptx
        if isinstance(own, PlanPtxFigures):
            own = replace(own, timings_ms={}, cached=True)
        return replace(m, timings_ms={"report cache": round((time.perf_counter() - t) * 1000, 1)}, cached=True,
                       plan_ptx=own, cache_warning=cache.warning), None
    with ThreadPoolExecutor(max_workers=1) as pool:        # the plan PTX's ptxas runs beside NVVM's build
        own = pool.submit(plan_ptx_or_why, plan, archs)
        build = build_plan(plan, archs, spills=spills, limits=limits, facts=facts)
        own = own.result()
    m = measurement(plan, build, _PENDING, _PENDING, own, facts)
    cache.write(json.dumps(m.to_reply()), "report", *key)
    return replace(m, cache_warning=m.cache_warning or cache.warning), build.source


def _simulator_key(facts: PlanFacts, spills: str, seed: int) -> tuple[str, ...]:
    from importlib.metadata import version

    return (facts.digest, spills, str(seed), code_digest(), f"numba {version('numba')}",
            f"numba-cuda {version('numba-cuda')}", f"numpy {version('numpy')}")


def _valid_check(text: str) -> bool:
    try:
        return isinstance(SimulatorCheck.from_dict(json.loads(text)), SimulatorCheck)
    except Exception:  # noqa: BLE001 - any entry this version cannot read back is a miss
        return False


def simulator_check(plan: Plan, spills: str = "plan", timeout: float = SIMULATOR_TIMEOUT_S,
                    facts: PlanFacts | None = None, built=None, seed: int = 0) -> SimulatorCheck | Unavailable:
    """:func:`kernels.run.simulate`, cached by the plan's digest, ``spills``, the seed, RegTune's code and
    numba's, numba-cuda's and numpy's versions: a check that ran (agreed or not) is stored; a worker that gave
    no result (a time limit, a crash) is not, and runs again next time."""
    facts = facts_of(plan, facts)
    cache = StageCache.open("simulator")
    key = _simulator_key(facts, spills, seed)
    stored = cache.read("simulator", _valid_check, *key)
    if stored is not None:
        return SimulatorCheck.from_dict(json.loads(stored))
    check = simulate(plan, spills, timeout, seed, facts, built)
    if isinstance(check, SimulatorCheck):
        cache.write(json.dumps(check.to_dict()), "simulator", *key)
    return check


def plan_ptx_or_why(plan: Plan, archs, on_ptxas=None) -> PlanPtxFigures | Unavailable:
    """ptxas on ``plan``'s own PTX (:func:`kernels.plan_ptx.plan_ptx_figures`, ``on_ptxas`` hearing of each
    ptxas figure as it arrives), or why there is none: the emitter's refusal (an opaque opcode of a program
    file) or ptxas's error, never an exception."""
    try:
        return plan_ptx_figures(plan, archs, on_ptxas=on_ptxas)
    except RegtuneError as e:
        return Unavailable(f"no plan PTX: {e}")


def sweep_caps(start: int, stop: int) -> list[int]:
    """The caps a sweep from ``start`` to ``stop`` tries: every :data:`SWEEP_STEP`-th, and ``stop`` itself."""
    caps = list(range(start, stop + 1, SWEEP_STEP))
    return caps if caps[-1] == stop else [*caps, stop]


def budget_sweep(plan: Plan, arch: str = DEFAULT_ARCH, start: int = 24, stop: int = 255,
                 limits: Limits = Limits(), progress: Progress | None = None) -> Sweep:
    """ptxas registers, spill and stack bytes and occupancy of ``plan``'s PTX at each cap of :func:`sweep_caps`,
    with the marks of its curve: the plan's register count and ptxas with no cap.

    Every cap is checked against the arch before any work (one line for a
    cap ptxas would not apply as given). The PTX is compiled once (NVVM, in
    a worker under ``limits``, its kernel renamed as a build's); ptxas runs
    once per cap and once with no ``-maxrregcount``, two at a time.
    """
    progress = progress or NullProgress()
    a = load_arch(arch)
    caps = [check_register_cap(a, cap) for cap in sweep_caps(start, stop)]
    _stage(progress, 0, len(caps) + 2, "budget sweep")
    source = kernel_source(plan)
    ptx = rename_entry(compile_ptx(source, a.compute_capability, limits), source.entry)
    _stage(progress, 1, len(caps) + 2, "budget sweep")
    with ThreadPoolExecutor(max_workers=2) as pool:       # one step of progress per ptxas run, as each ends
        futures = [pool.submit(lambda cap=cap: ptxas(ptx, a.name, cap)[0]) for cap in [*caps, None]]
        for n, _ in enumerate(as_completed(futures)):
            _stage(progress, min(n + 2, len(caps) + 1), len(caps) + 2, "budget sweep")
        reports = [f.result() for f in futures]
    threads = threads_per_block(plan)
    rows = [_sweep_row(a, r, threads) for r in reports]
    progress.advance(len(caps) + 2, len(caps) + 2)
    return Sweep(a.name, threads, tuple(rows[:-1]), source.registers, rows[-1])


def _sweep_row(arch: Arch, report: CompileReport, threads: int) -> SweepRow:
    occ = occupancy(arch, report.registers, threads)
    return SweepRow(report.max_registers, report.registers, report.spill_store_bytes, report.spill_load_bytes,
                    report.stack_frame_bytes, occ.active_warps, round(occ.occupancy, 4))
