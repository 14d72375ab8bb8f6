"""Benchmark: analysis plus all four allocators, statically verified, over whole config spaces.

Prints the wall time of each sweep on a local process pool (one worker per
core), the median and slowest config, and the errors (there must be none).
Per-thread MHA programs depend on (heads, head_dim, groups), not on batch,
so the MHA sweep evaluates 168 programs for its 1,512 configs.

Run: ``python -m tests.bench.bench_sweeps [--sample N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from engine.sweep import program_key, sweep_gemm, sweep_mha
from engine.workloads.gemm import gemm_configs
from engine.workloads.mha import mha_configs


def _summary(name: str, rows: list[dict], seconds: float, reference: float, distinct: int) -> str:
    good = [r for r in rows if "error" not in r]
    slowest = max(good, key=lambda r: r["seconds"])
    w = {k: v for k, v in slowest["workload"].items() if k not in ("kind", "dtype", "seq_len")}
    return (f"{name}: {len(rows)} configs ({distinct} distinct programs) in {seconds:.1f} s wall on {os.cpu_count()} cores "
            f"(target: under 60 s); per program median {statistics.median(r['seconds'] for r in good) * 1000:.1f} ms, "
            f"slowest {slowest['seconds'] * 1000:.0f} ms at {w} ({slowest['instructions']} instructions, "
            f"MAXLIVE {slowest['maxlive']}); errors: {len(rows) - len(good)}; "
            f"one config analysed alone for reference: {reference * 1000:.1f} ms")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=1, help="every N-th config only")
    args = parser.parse_args(argv)
    from engine.sweep import evaluate_gemm

    t = time.perf_counter()
    evaluate_gemm(gemm_configs()[0])
    reference = time.perf_counter() - t
    out = {}
    for name, sweep, configs, key in (("GEMM", sweep_gemm, gemm_configs(), lambda c: c),
                                      ("MHA", sweep_mha, mha_configs(), program_key)):
        configs = configs[:: args.sample]
        t = time.perf_counter()
        rows = sweep(configs)
        seconds = time.perf_counter() - t
        print(_summary(name, rows, seconds, reference, len({key(c) for c in configs})), flush=True)
        out[name] = {"rows": rows, "seconds": seconds}
    return out


if __name__ == "__main__":
    main()
