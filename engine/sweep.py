"""Sweeps: every allocator over whole config spaces, statically verified.

Invariant: a row is computed from the config alone (default options,
budget 255), so rows computed in different processes agree; every plan in
a row has passed :func:`engine.check.verify.static_conflicts`, or the row
carries the error.
Per-thread MHA programs depend on (heads, head_dim, groups, strategies),
not on batch (which only sizes the grid): configs that share one are
evaluated once and the row is reused.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import signal
import time

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


def run_parallel(fn, items, workers: int | None = None, progress=None, chunk: int = 8) -> list:
    """``fn`` over ``items`` on a local process pool, results in input order.

    Items travel in chunks of ``chunk`` to keep inter-process traffic small.
    """
    progress = progress or NullProgress()
    items = list(items)
    chunks = [items[k : k + chunk] for k in range(0, len(items), chunk)]
    results: list = [None] * len(items)
    # Fresh interpreters, not forks: a forked worker inherits the parent's heap
    # (a test runner's, or a Qt window's) and its garbage collector then walks
    # and copies all of it; forking a process that runs Qt is unsafe besides.
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init)
    try:
        # the workers start (and inherit this thread's signal mask) on the first submit: with SIGINT
        # blocked meanwhile, a Ctrl+C during their start-up waits for this thread instead of printing a
        # traceback from each of them
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {pool.submit(_chunk, fn, c): k for k, c in enumerate(chunks)}
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        done = 0
        for future in concurrent.futures.as_completed(futures):
            k = futures[future]
            results[k * chunk : k * chunk + len(chunks[k])] = future.result()
            done += len(chunks[k])
            progress.advance(done, len(items))
            if progress.cancelled():
                for f in futures:
                    f.cancel()
                raise Cancelled(f"sweep cancelled after {done} of {len(items)} items")
    except BaseException:           # Ctrl+C or a cancel: stop the workers instead of finishing their chunks
        # ProcessPoolExecutor has no public way to stop running work before Python 3.14 (terminate_workers);
        # its worker table is the one handle on them, and shutdown() clears it
        workers_running = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers_running:
            process.terminate()
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
