"""Benchmark: ``engine.tune.tune`` (list scheduling + local search with incremental liveness) toward the next
occupancy step, on GEMM and MHA programs, DSatur's plan, with the lower bound of MAXLIVE over every reordering
within blocks (``engine.tune.program_bound``); the median of ``--repeat`` runs per program, beside
``sum(range(10**7))`` timed in the same run (the target: interactive, seconds for GEMM 16x16x16).

Run: ``python -m tests.bench.bench_tune [--repeat N] [--sample tiny]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from engine.alloc import allocate
from engine.model.arch import load_arch, next_register_step
from engine.predict import predicted_plan
from engine.tune import tune
from engine.workloads import BuildOptions, build_workload

PROGRAMS = {
    "gemm 8x8x8 k-outer": ({"kind": "gemm", "m": 8, "n": 8, "k": 8}, {"schedule": "k-outer"}),
    "gemm 16x16x16": ({"kind": "gemm", "m": 16, "n": 16, "k": 16}, {}),
    "mha 32/64/64/4": ({"kind": "mha", "heads": 32, "batch": 64, "head_dim": 64, "groups": 4}, {}),
}
TINY = {"gemm 4x4x4 load-all-first": ({"kind": "gemm", "m": 4, "n": 4, "k": 4}, {"schedule": "load-all-first"})}


def yardstick() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def run(name: str, workload: dict, options: dict, repeat: int) -> str:
    program, w, o = build_workload(workload, BuildOptions(**options))
    plan = predicted_plan(allocate("dsatur", program), workload=w, options=o)
    regs = plan.predicted.registers
    step = next_register_step(load_arch("sm_80"), regs, 128)
    target = step[0] if step else regs - 1
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = tune(plan, target)
        times.append(time.perf_counter() - t)
    above = ", above the target: no reordering within blocks reaches it" if result.lower_bound > target else ""
    return (f"{name}: {len(program.instructions)} instructions, target {target}: MAXLIVE {result.maxlive_before} -> "
            f"{result.maxlive_after} (lower bound {result.lower_bound}{above}), dsatur {regs} -> "
            f"{result.registers_after}, {result.moves} moves; median {statistics.median(times):.2f} s of {repeat} "
            "(the bound's own time included)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sample", choices=["all", "tiny"], default="all")
    args = p.parse_args(argv)
    programs = TINY if args.sample == "tiny" else PROGRAMS
    paces = []
    for name, (workload, options) in programs.items():
        paces.append(yardstick())
        print(run(name, workload, options, args.repeat))
    print(f"sum(range(10**7)): median {statistics.median(paces):.3f} s (same run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
