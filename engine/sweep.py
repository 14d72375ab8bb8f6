"""Sweeps: every allocator over whole config spaces, statically verified.

Invariant: a row is computed from the config alone (default options,
budget 255), so rows computed in different processes agree; every plan in
a row has passed :func:`engine.check.verify.static_conflicts`, or the row
carries the error.
Per-thread MHA programs depend on (heads, head_dim, groups, strategies),
not on batch (which only sizes the grid): configs that share one are
evaluated once and the row is reused.

The command's sweeps (``regtune sweep``) are :class:`SweepTask` s: the configs that share one per-thread program,
the options asked for, the allocators and budgets. :func:`task_rows` makes the store's rows of a task
(:mod:`engine.store`, one per config, allocator and budget, analysis-only: arch, cap and toolchain '-'); the
kernels layer adds the compiled rows (kernels/sweep.py). :func:`run_sweep` runs tasks on any
``concurrent.futures`` executor (a local process pool, :func:`local_pool`, or a Dask cluster's), skips every task
whose rows are stored, and writes each finished chunk in its own transaction.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import signal
import time
from dataclasses import dataclass

from engine.alloc import ALLOCATORS, allocate
from engine.alloc.naive import naive_demand
from engine.analysis.liveness import analyze
from engine.base.errors import RegtuneError
from engine.base.jobs import Cancelled, NullProgress
from engine.base.process import configure_process
from engine.check.verify import static_conflicts
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.plan import registers_used
from engine.workloads.gemm import Gemm, gemm_build
from engine.workloads.mha import Mha, build_mha

#: what an analysis-only row's measured_why says
NOT_BUILT = "analysis only: no kernel built (--compile builds the plan PTX, --numba the Numba kernel)"


def evaluate_program(program, budget: int = 255, analysis=None) -> dict:
    """MAXLIVE and each allocator's registers and spills for one program (``analysis``: the program's, when the
    caller has it)."""
    t = time.perf_counter()
    analysis = analysis if analysis is not None else analyze(program)
    row = {"instructions": len(program.instructions), "maxlive": analysis.maxlive,
           "naive_demand": naive_demand(analysis), "allocators": {}}
    for name in sorted(ALLOCATORS):
        a = allocate(name, program, budget, analysis)
        conflicts = static_conflicts(a.program, a.assignment, a.spills, a.budget, a.analysis, a.spill_code)
        if conflicts:
            raise RegtuneError(f"{program.name}: {name} plan is invalid: {conflicts[0].message}")
        row["allocators"][name] = {"registers": registers_used(a.assignment), "spilled": len(a.spills)}
    row["seconds"] = time.perf_counter() - t
    return row


def parses_back(program) -> bool:
    """Whether the program's printed text parses to the same program."""
    return parse(print_program(program)) == program


def evaluate_gemm(w: Gemm) -> dict:
    built = gemm_build(w)     # choosing the tile analysed the program: the row reuses that analysis
    return {"workload": w.as_dict(), "options": built.options, **evaluate_program(built.program, 255, built.analysis)}


def evaluate_mha_program(heads: int, head_dim: int, groups: int, strategies=()) -> dict:
    program, options = build_mha(Mha(heads, 64, head_dim, groups), strategies)
    return {"options": options, **evaluate_program(program)}


def _safe(fn, item):
    try:
        return fn(item)
    except RegtuneError as exc:
        return {"error": str(exc)}


def _worker_init() -> None:
    configure_process()   # a process start: see engine.base.process (the collector ran 15% of a sweep at defaults)
    # Ctrl+C reaches the whole process group: the parent stops the sweep, the workers stay quiet (they
    # start with SIGINT blocked, see run_parallel, so one that arrived during start-up is dropped here)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _chunk(fn, items):
    return [_safe(fn, item) for item in items]


def local_pool(workers: int | None = None) -> concurrent.futures.ProcessPoolExecutor:
    """A local process pool of ``workers`` fresh interpreters (spawned, not forked: a forked worker inherits the
    parent's heap, a test runner's or a Qt window's, and its garbage collector then walks and copies all of it;
    forking a process that runs Qt is unsafe besides), each quiet on Ctrl+C (the parent stops them)."""
    context = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init)


def stop_pool(pool) -> None:
    """Stop a pool's work now instead of finishing its chunks (Ctrl+C, a cancel, an error)."""
    # ProcessPoolExecutor has no public way to stop running work before Python 3.14 (terminate_workers);
    # its worker table is the one handle on them, and shutdown() clears it
    # (its futures are not cancelled: on Python 3.11 the pool's manager thread then fails to mark them broken,
    # InvalidStateError, a traceback on stderr; uncancelled, they end as BrokenProcessPool, which nobody reads)
    workers_running = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False)
    for process in workers_running:
        process.terminate()


def stream(fn, chunks: list, pool):
    """``fn`` over each chunk of items on ``pool`` (any concurrent.futures executor), yielding ``(k, results)``
    as chunk ``k`` finishes; the caller stops the pool if it stops early (:func:`stop_pool`; a Dask client's
    executor: closing the client cancels its futures)."""
    # the workers start (and inherit this thread's signal mask) on the first submit: with SIGINT
    # blocked meanwhile, a Ctrl+C during their start-up waits for this thread instead of printing a
    # traceback from each of them
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        futures = {pool.submit(_chunk, fn, c): k for k, c in enumerate(chunks)}
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    for future in concurrent.futures.as_completed(futures):
        yield futures[future], future.result()


def run_parallel(fn, items, workers: int | None = None, progress=None, chunk: int = 8) -> list:
    """``fn`` over ``items`` on a local process pool, results in input order.

    Items travel in chunks of ``chunk`` to keep inter-process traffic small.
    """
    progress = progress or NullProgress()
    items = list(items)
    chunks = [items[k : k + chunk] for k in range(0, len(items), chunk)]
    results: list = [None] * len(items)
    pool = local_pool(workers)
    try:
        done = 0
        for k, got in stream(fn, chunks, pool):
            results[k * chunk : k * chunk + len(chunks[k])] = got
            done += len(chunks[k])
            progress.advance(done, len(items))
            if progress.cancelled():
                raise Cancelled(f"sweep cancelled after {done} of {len(items)} items")
    except BaseException:           # Ctrl+C or a cancel: stop the workers instead of finishing their chunks
        stop_pool(pool)
        raise
    pool.shutdown()
    return results


def sweep_gemm(configs, workers=None, progress=None) -> list[dict]:
    """One row per GEMM config, in the order given.

    The work is handed out largest first (M*N*K), so no worker is left
    with a big config at the end while the other idles.
    """
    configs = list(configs)
    order = sorted(range(len(configs)), key=lambda k: -configs[k].m * configs[k].n * configs[k].k)
    rows = run_parallel(evaluate_gemm, [configs[k] for k in order], workers, progress)
    out: list = [None] * len(configs)
    for k, row in zip(order, rows):
        out[k] = row
    return out


def sweep_mha(configs, strategies=(), workers=None, progress=None) -> list[dict]:
    """One row per MHA config; configs sharing a per-thread program share its row.

    The programs are handed out largest first (head_dim * groups sizes the per-thread program), so no
    worker is left with a big one at the end while the other idles.
    """
    configs = list(configs)
    keys = sorted({program_key(c) for c in configs}, key=lambda k: (-k[1] * k[2], k))
    rows = run_parallel(_mha_key, [(*k, tuple(strategies)) for k in keys], workers, progress)
    by_key = dict(zip(keys, rows))
    return [{"workload": c.as_dict(), **by_key[program_key(c)]} for c in configs]


def program_key(c: Mha) -> tuple[int, int, int]:
    """What the per-thread MHA program depends on: batch only changes the grid."""
    return c.heads, c.head_dim, c.groups


def _mha_key(key):
    return evaluate_mha_program(*key)


# ---- the command's sweeps: tasks, their rows, the run into the store

@dataclass(frozen=True)
class SweepTask:
    """Work for one worker call: ``configs`` (workload dicts) that share one per-thread program, built with the
    ``options`` asked for (GEMM: tile and schedule; MHA: strategies), every allocator of ``allocators`` at every
    budget of ``budgets``; ``archs``, ``compile`` and ``numba`` for the kernels layer's rows."""

    workload: str
    configs: tuple
    options: tuple          # sorted (key, value) pairs, so the task hashes and pickles plainly
    allocators: tuple
    budgets: tuple = (255,)
    archs: tuple = ()
    compile: bool = False
    numba: bool = False

    @property
    def asked(self) -> dict:
        return dict(self.options)

    def caps(self) -> tuple:
        """The (arch, cap) pairs of its compiled rows (none without --compile or --numba)."""
        return tuple((a, c) for a in self.archs for c in ("plan", "none")) if self.compile or self.numba else ()

    def keys(self, toolchain: str) -> list[tuple]:
        """The store keys (:data:`engine.store.KEY`) of every row this task writes."""
        from engine.store import canonical
        from engine.workloads import workload_named

        w = workload_named(self.workload)
        opts = canonical(self.asked)
        out = []
        for c in self.configs:
            label = w.label(w.from_dict(c, "sweep"))
            for a in self.allocators:
                for b in self.budgets:
                    out.append((label, opts, a, b, "-", "-", "-"))
                    out += [(label, opts, a, b, arch, cap, toolchain) for arch, cap in self.caps()]
        return out


def _identity(w, config: dict) -> dict:
    fields_ = ("m", "n", "k", "heads", "batch", "head_dim", "groups")
    return {"workload": w.name, **{f: config.get(f) for f in fields_},
            "config": w.label(w.from_dict(config, "sweep"))}


def _build_options(task: SweepTask, budget: int):
    from engine.workloads.options import BuildOptions

    asked = task.asked
    if task.workload == "gemm":
        tile = asked.get("tile")
        if isinstance(tile, str) and tile != "fit":
            tile = tuple(int(x) for x in tile.split("x"))
        return BuildOptions(budget=budget, tile=tile, schedule=asked.get("schedule", DEFAULT_SCHEDULE_NAME))
    return BuildOptions(budget=budget, strategies=tuple(asked.get("strategies", ())))


DEFAULT_SCHEDULE_NAME = "k-outer"
#: the arch of an analysis row's occupancy_warps (its arch column is '-')
OCCUPANCY_ARCH = "sm_80"


def task_plans(task: SweepTask) -> list[tuple[dict, object]]:
    """The analysis rows of ``task`` (one per config, allocator and budget) with each row's plan (None on an
    error, which the row's ``error`` names): every plan statically verified
    (:func:`engine.check.verify.static_conflicts`), its predicted figures, its ILP model's cycles, its plan file
    text. The program is built once per budget only where the tile is fitted to it (``tile`` "fit")."""
    from engine.model.arch import load_arch, occupancy
    from engine.model.ilp import plan_ilp
    from engine.planfile import plan_to_dict
    from engine.predict import execution_figures, predicted_plan
    from engine.store import canonical
    from engine.workloads import workload_named

    w = workload_named(task.workload)
    first = w.from_dict(task.configs[0], "sweep")
    opts = canonical(task.asked)
    arch = load_arch(OCCUPANCY_ARCH)     # the analysis rows' occupancy (a compiled row has its own arch's)
    out = []
    built = {}
    for budget in task.budgets:
        t0 = time.perf_counter()
        base = {"options": opts, "budget": budget, "measured_why": NOT_BUILT}
        try:
            options = _build_options(task, budget)
            key = budget if options.tile == "fit" else None
            if key not in built:
                program, built_opts = w.build(first, options)
                built[key] = (program, built_opts, analyze(program))
            program, built_opts, analysis = built[key]
        except RegtuneError as exc:
            for c in task.configs:
                for name in task.allocators:
                    out.append(({**_identity(w, c), **base, "allocator": name, "error": _line(exc),
                                 "seconds": time.perf_counter() - t0}, None))
            continue
        tile = built_opts.get("tile")
        base.update(tile=None if tile is None else f"{tile[0]}x{tile[1]}", schedule=built_opts.get("schedule"),
                    strategies=",".join(built_opts["strategies"]) if "strategies" in built_opts else None,
                    instructions=len(program.instructions), maxlive=analysis.maxlive,
                    naive_demand=naive_demand(analysis))
        threads = int(built_opts.get("threads_per_block", 128))
        figures = {}
        for name in sorted(set(task.allocators) | {"naive"}):
            t = time.perf_counter()
            try:
                a = allocate(name, program, budget, analysis)
                conflicts = static_conflicts(a.program, a.assignment, a.spills, a.budget, a.analysis, a.spill_code)
                if conflicts:
                    raise RegtuneError(f"{program.name}: {name} plan is invalid: {conflicts[0].message}")
                plan = predicted_plan(a, workload=w.to_dict(first), options=built_opts)
                p = plan.predicted
                # straight-line code runs each spill instruction once: the interpreter only where there are blocks
                executed = p.spill_stores + p.spill_loads
                if plan.spills and len(program.blocks) > 1:
                    e = execution_figures(plan, a.original, a.spill_code)
                    executed = (None if e["spill_stores_executed"] is None else
                                e["spill_stores_executed"] + e["spill_loads_executed"])
                regs = p.registers
                f = {"registers": regs, "spilled": p.spilled_values, "spill_static": p.spill_stores + p.spill_loads,
                     "spill_executed": executed, "stack_bytes": p.local_bytes,
                     "occupancy_warps": occupancy(arch, max(regs, 1), threads).active_warps,
                     "model_cycles": plan_ilp(plan, original=a.original).cycles if name in task.allocators else None,
                     "plan_json": json.dumps(plan_to_dict(plan), indent=1) + "\n" if name in task.allocators else None}
                figures[name] = (f, plan, None)
            except RegtuneError as exc:
                figures[name] = ({}, None, _line(exc))
            figures[name] = (*figures[name], time.perf_counter() - t)
        ok = [(f["spilled"], f["registers"]) for name, (f, plan, err, _) in figures.items()
              if err is None and name in task.allocators]
        best = min(ok)[1] if ok else None
        naive = figures["naive"][0].get("registers")
        for c in task.configs:
            for name in task.allocators:
                f, plan, err, seconds = figures[name]
                out.append(({**_identity(w, c), **base, **f, "allocator": name, "naive_registers": naive,
                             "best_registers": best, "error": err, "seconds": seconds}, plan))
    return out


def _line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:400]


def task_rows(task: SweepTask) -> list[dict]:
    """The store rows of ``task`` without a kernel (analysis, allocation, figures): arch, cap, toolchain '-'."""
    return [row for row, _ in task_plans(task)]


@dataclass
class SweepSummary:
    """What a sweep did: rows new, tasks skipped (stored already), seconds, the store's path."""

    tasks: int
    skipped: int
    rows_new: int
    seconds: float
    path: str
    done: int = 0
    skipped_configs: int = 0


def run_sweep(fn, tasks: list, store, pool, progress=None, toolchain: str = "-", chunk: int = 1,
              summary: SweepSummary | None = None) -> SweepSummary:
    """``fn`` (a task -> rows function, importable by the workers) over every task whose rows are not all in
    ``store`` already (``summary``: the caller's record, kept up to date as chunks land, for an interrupt), on ``pool`` (a concurrent.futures executor; the caller owns and stops it), each finished
    chunk of ``chunk`` tasks written in one transaction, so an interrupt loses only the chunks in flight.
    ``toolchain``: the version the compiled rows' keys carry (the client's; workers are checked to match)."""
    progress = progress or NullProgress()
    t0 = time.perf_counter()
    stored = store.keys()
    todo = [t for t in tasks if not set(t.keys(toolchain)) <= stored]
    summary = summary or SweepSummary(len(tasks), 0, 0, 0.0, str(store.path))
    summary.skipped = len(tasks) - len(todo)
    summary.skipped_configs = sum(len(t.configs) for t in tasks) - sum(len(t.configs) for t in todo)
    chunks = [todo[k : k + chunk] for k in range(0, len(todo), chunk)]
    total = sum(len(t.configs) for t in todo)
    if total:
        progress.advance(0, total)
    for k, results in stream(fn, chunks, pool):
        rows = []
        for task, got in zip(chunks[k], results):
            if isinstance(got, dict) and set(got) == {"error"}:        # the worker's own failure (engine.sweep._safe)
                got = [{**key_row, "error": got["error"]} for key_row in _error_rows(task, toolchain)]
            rows += got
        summary.rows_new += store.put(rows)
        summary.done += sum(len(t.configs) for t in chunks[k])
        summary.seconds = time.perf_counter() - t0
        progress.advance(summary.done, total)
        if progress.cancelled():
            raise Cancelled(f"sweep cancelled after {summary.done} of {total} configs")
    summary.seconds = time.perf_counter() - t0
    return summary


def _error_rows(task: SweepTask, toolchain: str) -> list[dict]:
    from engine.store import KEY

    return [dict(zip(KEY, key)) for key in task.keys(toolchain)]
