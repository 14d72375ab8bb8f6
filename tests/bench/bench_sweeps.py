"""Benchmark: analysis plus all four allocators, statically verified, over whole config spaces.

Prints the wall time of each sweep on a local process pool (``--workers``,
2 by default), the median of ``--repeat`` sweeps, beside the reference loop
``sum(range(10**7))`` timed in the same run (median of three before and two after each sweep)
and the ratio of the two (the issue's targets: GEMM at most 150x, MHA at most
30x), the median and slowest config, and the errors (there must be none).
Per-thread MHA programs depend on (heads, head_dim, groups), not on batch,
so the MHA sweep evaluates 168 programs for its 1,512 configs.

Run: ``python -m tests.bench.bench_sweeps [--sample N] [--repeat N] [--workers N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from engine.sweep import program_key, sweep_gemm, sweep_mha
from engine.workloads.gemm import gemm_configs
from engine.workloads.mha import mha_configs


def reference_loop() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def _summary(name: str, rows: list[dict], seconds: float, reference: float, distinct: int, loop: float,
             workers: int, repeat: int) -> str:
    good = [r for r in rows if "error" not in r]
    slowest = max(good, key=lambda r: r["seconds"])
    w = {k: v for k, v in slowest["workload"].items() if k not in ("kind", "dtype", "seq_len")}
    return (f"{name}: {len(rows)} configs ({distinct} distinct programs) in {seconds:.1f} s wall "
            f"(median of {repeat}) with {workers} workers on {os.cpu_count()} cores = {seconds / loop:.0f}x the "
            f"reference loop sum(range(10**7)) at {loop * 1000:.0f} ms in this run; per program median {statistics.median(r['seconds'] for r in good) * 1000:.1f} ms, "
            f"slowest {slowest['seconds'] * 1000:.0f} ms at {w} ({slowest['instructions']} instructions, "
            f"MAXLIVE {slowest['maxlive']}); errors: {len(rows) - len(good)}; "
            f"one config analysed alone for reference: {reference * 1000:.1f} ms")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=1, help="every N-th config only")
    parser.add_argument("--repeat", type=int, default=1, help="sweeps of each space (the median is printed)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    from engine.sweep import evaluate_gemm

    t = time.perf_counter()
    evaluate_gemm(gemm_configs()[0])
    reference = time.perf_counter() - t
    out = {}
    for name, sweep, configs, key in (("GEMM", sweep_gemm, gemm_configs(), lambda c: c),
                                      ("MHA", sweep_mha, mha_configs(), program_key)):
        configs = configs[:: args.sample]
        times, loops = [], []
        for _ in range(args.repeat):
            loops += [reference_loop() for _ in range(3)]     # the machine's pace around each sweep
            t = time.perf_counter()
            rows = sweep(configs, workers=args.workers)
            times.append(time.perf_counter() - t)
            loops += [reference_loop() for _ in range(2)]
        seconds, loop = statistics.median(times), statistics.median(loops)
        print(_summary(name, rows, seconds, reference, len({key(c) for c in configs}), loop, args.workers,
                       args.repeat), flush=True)
        out[name] = {"rows": rows, "seconds": seconds, "loop": loop, "runs": list(zip(times, loops))}
    return out


if __name__ == "__main__":
    main()
