"""The compiled rows of a sweep (``regtune sweep --compile / --numba``) and its Dask executor.

:func:`task_rows` is the worker function of a compiled sweep: the engine's analysis rows of a task
(:func:`engine.sweep.task_plans`) and, for each plan, arch and cap ('plan': ``-maxrregcount`` = the plan's count;
'none': no flag), a row with the plan PTX's ptxas figures (:func:`kernels.plan_ptx.plan_ptx_figures_and_listings`),
its SASS MAXLIVE (plan cap only: nvdisasm runs on the plan-cap cubin) and, with ``numba``, the Numba kernel's
ptxas figures (:func:`kernels.pipeline.measure`, no simulator). Every compiled row carries the toolchain of the
process that made it (``ptxas --version``'s release line), so a worker with its own install says which it used.

Invariant: a worker whose toolchain differs from the client's is refused before any task is sent
(:func:`check_workers`), so one store key never mixes two ptxas versions; ``distributed`` is imported only when a
scheduler is asked for, and its absence is one line naming the extra to install.
"""

from __future__ import annotations

import time

from engine.base.errors import RegtuneError
from engine.sweep import SweepTask, task_plans

#: the store's cap names -> the kernels layer's (kernels.build.CAPS)
CAPS = {"plan": "plan", "none": "compiler"}
NO_DEVICE = "no CUDA device"


class ClusterError(RegtuneError):
    """The Dask cluster cannot be used (not installed, unreachable, a worker with another toolchain)."""


def toolchain() -> str:
    """This process's ptxas version (its release line), the toolchain column of its compiled rows."""
    from kernels.toolchain import tool_version

    return tool_version("ptxas")


def _why_not_timed(numba: bool) -> str:
    from kernels.toolchain import no_device_files

    if no_device_files():
        return NO_DEVICE
    return "" if numba else "timed only with --numba (the Numba kernel is what runs on the GPU)"


def task_rows(task: SweepTask) -> list[dict]:
    """Every row of ``task``: the analysis rows, then per plan, arch and cap the compiled rows."""
    plans = task_plans(task)
    rows = [row for row, _ in plans]
    if not task.caps():
        return rows
    version = toolchain()
    why = _why_not_timed(task.numba)
    done: dict = {}         # one compile per plan: configs sharing a program share its plan (MHA batches)
    for row, plan in plans:
        if row["allocator"] not in task.allocators:
            continue
        key = (row["allocator"], row["budget"])
        if key not in done:
            done[key] = _compiled(plan, task, row.get("error"), why)
        for (arch, cap), figures in done[key].items():
            rows.append({**row, "arch": arch, "cap": cap, "toolchain": version, **figures})
    return rows


def _compiled(plan, task: SweepTask, error: str | None, why: str) -> dict:
    """(arch, cap) -> the compiled figures of one plan (or the error that stopped them)."""
    from kernels.plan_ptx import plan_ptx_figures_and_listings

    out = {(a, c): {"measured_ms": None, "measured_why": why or None, "error": error} for a, c in task.caps()}
    if error is not None or plan is None:
        return out
    t = time.perf_counter()
    if task.compile:
        try:
            figures, listings = plan_ptx_figures_and_listings(plan, task.archs)
        except RegtuneError as exc:
            for v in out.values():
                v["error"] = "plan PTX: " + " ".join(str(exc).split())[:400]
        else:
            for (arch, cap), v in out.items():
                name = _arch_name(arch)
                r = (figures.ptxas if cap == "plan" else figures.ptxas_compiler)[name]
                v.update(ptxas_registers=r.registers, ptxas_spill_stores=r.spill_store_bytes,
                         ptxas_spill_loads=r.spill_load_bytes, ptxas_stack=r.stack_frame_bytes,
                         ptxas_log=ptxas_log(r))
                v["occupancy_warps"] = _occupancy(plan, name)
                if cap == "plan":
                    v.update(sass_maxlive=figures.sass[name].maxlive, sass_digest=_digest(listings[name]),
                             listings=(listings[name],))
    if task.numba:
        _numba(plan, task, out, why)
    seconds = (time.perf_counter() - t) / max(len(out), 1)
    for v in out.values():
        v["seconds"] = seconds
    return out


def _numba(plan, task: SweepTask, out: dict, why: str) -> None:
    from kernels.measurement import Unavailable
    from kernels.pipeline import measure

    try:
        m = measure(plan, task.archs, skip_simulator="not part of a sweep", skip_gpu=why)
    except RegtuneError as exc:
        for v in out.values():
            v["error"] = (v["error"] + "; " if v["error"] else "") + "Numba kernel: " + " ".join(str(exc).split())[:300]
        return
    for (arch, cap), v in out.items():
        name = _arch_name(arch)
        r = (m.ptxas if cap == "plan" else m.ptxas_compiler)[name]
        v.update(numba_registers=r.registers, numba_spill_stores=r.spill_store_bytes,
                 numba_spill_loads=r.spill_load_bytes)
        if cap == "plan" and not isinstance(m.gpu, Unavailable):
            v.update(measured_ms=m.gpu.median_ms, measured_why=None)
        elif isinstance(m.gpu, Unavailable):
            v["measured_why"] = m.gpu.reason
        else:
            v["measured_why"] = "timed at the plan cap only (the kernel the GPU runs)"


def ptxas_log(r) -> str:
    """What a row keeps of one ptxas run: its command line's flags and every warning ptxas printed (its ``-v``
    figures are the row's typed columns)."""
    lines = ["ptxas " + " ".join(r.flags)] + [f"ptxas warning: {w}" for w in r.warnings]
    return "\n".join(lines)


def _occupancy(plan, arch: str) -> int:
    from engine.model.arch import load_arch, occupancy
    from kernels.report import threads_per_block

    return occupancy(load_arch(arch), max(plan.predicted.registers, 1), threads_per_block(plan)).active_warps


def _arch_name(arch: str) -> str:
    from engine.model.arch import load_arch

    return load_arch(arch).name


def _digest(text: str) -> str:
    from engine.store import digest

    return digest(text)


# ---- Dask

def dask_client(address: str):
    """A ``distributed.Client`` of the scheduler at ``address`` (``tcp://host:8786``); one-line errors."""
    try:
        import distributed
    except ImportError:
        raise ClusterError(f"--scheduler {address}: the Dask cluster support is not installed; "
                           "pip install 'regtune[cluster]'") from None
    try:
        return distributed.Client(address, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"--scheduler {address}: cannot reach the scheduler ({exc})") from None


def check_workers(client, expected: str | None = None) -> dict:
    """Every worker's ptxas version (address -> version); a worker whose version differs from ``expected``
    (None: this process's, :func:`toolchain`) is refused by name, with both versions, before any work."""
    expected = toolchain() if expected is None else expected
    try:
        versions = client.run(toolchain)
    except RegtuneError as exc:
        raise ClusterError(f"a Dask worker has no usable ptxas: {' '.join(str(exc).split())}") from None
    if not versions:
        raise ClusterError("the Dask cluster has no workers")
    for address, version in sorted(versions.items()):
        if version != expected:
            raise ClusterError(f"Dask worker {address} has ptxas {version!r}, this client {expected!r}: "
                               "refused (one store key never mixes two toolchains)")
    return versions
