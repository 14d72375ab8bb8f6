"""Benchmark: ``regtune sweep``'s pieces into a real store: an analysis sweep of the GEMM space with 1 and 2 local
workers, a compile sweep (plan PTX at both caps on sm_80 and sm_90) cold and again from the store, and queries
over a 50,000-row store.

Every figure is printed beside the reference loop ``sum(range(10**7))`` timed in the same run (median of the
loops around it). The analysis sweep writes every row the command writes (analysis, four allocators statically
verified, predicted figures, ILP model cycles, the plan file); the compile sweep's cold run has a fresh build cache
(``REGTUNE_CACHE_DIR`` set to an empty folder for its workers) and a fresh store; "from the store" runs the same
sweep again, every row found, nothing computed. The query store is the analysis sweep's real rows repeated under
other budgets (keys) until it holds ``--query-rows`` rows; each query is the median of ``--repeat`` runs.

Run: ``python -m tests.bench.bench_sweep_store [--sample N] [--compile-configs N] [--query-rows N]``
(``--sample 1``, the whole space of 3,375 configs, took about 70 s with 2 workers before the rows had the store's
figures (ILP cycles, plan files, executed spills); ``--sample 25 --compile-configs 5 --compile-allocators
dsatur,naive`` measured 5.9 configs/s with 1 worker and 6.9 with 2 on a shared 2-core machine, and 0.24 compiled
configs/s cold. Run the defaults once at most: the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from engine.alloc import ALLOCATORS
from engine.store import open_store
from engine.sweep import SweepTask, local_pool, run_sweep
from engine.workloads.gemm import gemm_configs

OPTIONS = (("schedule", "k-outer"), ("tile", None))
QUERIES = ("workload == 'gemm' and m <= 4 and n == k", "allocator == 'dsatur' and budget == 255 and k == 8",
           "m in (2, 8, 16) and not n < 12", "registers > 128 or spilled > 0")
#: the columns of a heatmap's query (the window's Sweep view asks for a few)
FEW = ("config", "m", "n", "k", "allocator", "registers")


def reference_loop() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def _loops(n: int = 2) -> list[float]:
    return [reference_loop() for _ in range(n)]


def _tasks(configs, compile_: bool = False, allocators=None) -> list[SweepTask]:
    return [SweepTask("gemm", (c.as_dict(),), OPTIONS, tuple(sorted(allocators or ALLOCATORS)), (255,),
                      ("sm_80", "sm_90"), compile_) for c in configs]


def _sweep(fn, tasks, path, workers: int, chunk: int, toolchain: str = "-") -> tuple[float, object]:
    with open_store(path) as store:
        pool = local_pool(workers)
        try:
            t = time.perf_counter()
            summary = run_sweep(fn, tasks, store, pool, toolchain=toolchain, chunk=chunk)
            seconds = time.perf_counter() - t
        finally:
            pool.shutdown()
    return seconds, summary


def analysis(configs, folder: Path, workers: int) -> dict:
    from engine.sweep import task_rows

    loops = _loops(3)
    seconds, summary = _sweep(task_rows, _tasks(configs), folder / f"analysis-{workers}.sqlite", workers, 4)
    loops += _loops(2)
    loop = statistics.median(loops)
    print(f"analysis sweep, {len(configs)} GEMM configs x {len(ALLOCATORS)} allocators, {workers} worker(s): "
          f"{seconds:.1f} s wall (pool start included) = {len(configs) / seconds:.1f} configs/s, "
          f"{summary.rows_new} rows; {seconds / loop:.0f}x sum(range(10**7)) at {loop * 1000:.0f} ms in this run",
          flush=True)
    return {"seconds": seconds, "loop": loop, "rows": summary.rows_new}


def compiled(configs, folder: Path, workers: int, allocators) -> dict:
    from kernels.sweep import task_rows, toolchain

    cache = tempfile.mkdtemp(prefix="regtune-bench-cache-", dir=folder)
    old = os.environ.get("REGTUNE_CACHE_DIR")
    os.environ["REGTUNE_CACHE_DIR"] = cache     # the workers start after this: an empty build cache, cold
    try:
        tasks = _tasks(configs, True, allocators)
        path = folder / "compile.sqlite"
        loops = _loops(3)
        cold, summary = _sweep(task_rows, tasks, path, workers, 1, toolchain())
        loops += _loops(2)
        stored, again = _sweep(task_rows, tasks, path, workers, 1, toolchain())
        loops += _loops(2)
    finally:
        if old is None:
            del os.environ["REGTUNE_CACHE_DIR"]
        else:
            os.environ["REGTUNE_CACHE_DIR"] = old
    loop = statistics.median(loops)
    runs = len(configs) * len(allocators) * 2 * 2
    print(f"compile sweep, {len(configs)} GEMM configs x {len(allocators)} allocators, plan PTX at both caps on "
          f"sm_80 and sm_90 ({runs} ptxas runs), {workers} worker(s): cold {cold:.1f} s = "
          f"{len(configs) / cold:.2f} configs/s ({summary.rows_new} rows); from the store {stored:.2f} s "
          f"({again.rows_new} rows new, {again.skipped_configs} configs skipped); "
          f"sum(range(10**7)) at {loop * 1000:.0f} ms in this run", flush=True)
    return {"cold": cold, "stored": stored, "loop": loop, "configs": len(configs)}


def queries(folder: Path, source: Path, rows: int, repeat: int) -> dict:
    with open_store(source, readonly=True) as s:
        base = s.rows(None, None)
    path = folder / "query.sqlite"
    with open_store(path) as store:
        budget, made = 255, 0
        while made < rows and budget > 0:
            batch = [{**r, "budget": budget} for r in base[: rows - made]]
            for r in batch:
                r.pop("plan_json", None)
            made += store.put(batch)
            budget -= 1
        n = store.count()
        out = {}
        loops = _loops(3)
        for q in (None, *QUERIES):
            times, few, got = [], [], 0
            for _ in range(repeat):
                t = time.perf_counter()
                got = len(store.rows(q))
                times.append(time.perf_counter() - t)
                t = time.perf_counter()
                store.rows(q, list(FEW))
                few.append(time.perf_counter() - t)
            out[q] = (statistics.median(times), got, statistics.median(few))
        counts = []
        for _ in range(repeat):
            t = time.perf_counter()
            store.count(QUERIES[0])
            counts.append(time.perf_counter() - t)
        loops += _loops(2)
    loop = statistics.median(loops)
    for q, (sec, got, few) in out.items():
        print(f"query over {n:,} rows: rows({q!r}) -> {got:,} rows: every column in {sec * 1000:.1f} ms, "
              f"{len(FEW)} columns in {few * 1000:.1f} ms (median of {repeat})", flush=True)
    print(f"query over {n:,} rows: count({QUERIES[0]!r}) in {statistics.median(counts) * 1000:.2f} ms; "
          f"sum(range(10**7)) at {loop * 1000:.0f} ms in this run", flush=True)
    return {"rows": n, "queries": out, "loop": loop}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=1, help="analysis sweep: every N-th GEMM config only")
    parser.add_argument("--workers", default="1,2", help="analysis sweep's worker counts (default 1,2)")
    parser.add_argument("--compile-configs", type=int, default=100, help="configs of the compile sweep (default 100)")
    parser.add_argument("--compile-workers", type=int, default=2)
    parser.add_argument("--compile-allocators", default=",".join(sorted(ALLOCATORS)))
    parser.add_argument("--query-rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    everything = gemm_configs()
    configs = everything[:: args.sample]
    step = max(len(everything) // max(args.compile_configs, 1), 1)
    compile_configs = everything[::step][: args.compile_configs]
    out = {}
    with tempfile.TemporaryDirectory(prefix="regtune-bench-sweep-") as tmp:
        folder = Path(tmp)
        for w in [int(x) for x in args.workers.split(",")]:
            out[f"analysis-{w}"] = analysis(configs, folder, w)
        out["compile"] = compiled(compile_configs, folder, args.compile_workers,
                                  tuple(args.compile_allocators.split(",")))
        first = int(args.workers.split(",")[0])
        out["query"] = queries(folder, folder / f"analysis-{first}.sqlite", args.query_rows, args.repeat)
    return out


if __name__ == "__main__":
    main()
