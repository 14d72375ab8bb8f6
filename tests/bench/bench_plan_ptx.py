"""Benchmark: the plan's own PTX (kernels/plan_ptx.py), emission and ptxas, cold and cached.

For each plan (GEMM 8x8x8, GEMM 16x16x16 with its default tile, the design
note's MHA example: 32 heads, batch 64, head_dim 64, 4 groups; linear-scan
at budget 255, as bench_kernels.py) it prints, as the median of several
runs: the emission of the PTX, ptxas per arch at the plan cap and with no
cap, nvdisasm's life ranges per arch (the tools run side by side, so their
times overlap), the whole of :func:`kernels.plan_ptx.plan_ptx_figures`
cold (each run in a fresh cache folder) and cached (the same request
again: no tool runs). Beside them, ``sum(range(10**7))`` timed in the same
run, so figures from a loaded machine can be read against its speed.

Run: ``python -m tests.bench.bench_plan_ptx [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from kernels.plan_ptx import plan_ptx, plan_ptx_figures
from tests.bench.bench_kernels import plans

ARCHS = ("sm_80", "sm_90")


def yardstick() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def _in_fresh_cache(fn):
    old = os.environ.get("REGTUNE_CACHE_DIR")
    try:
        with tempfile.TemporaryDirectory(prefix="regtune-bench-") as tmp:
            os.environ["REGTUNE_CACHE_DIR"] = tmp
            return fn()
    finally:
        if old is None:
            os.environ.pop("REGTUNE_CACHE_DIR", None)
        else:
            os.environ["REGTUNE_CACHE_DIR"] = old


def _once(plan) -> dict:
    """One cold request and the same again, in a fresh cache: seconds of each, the cold stages (ms)."""
    t = time.perf_counter()
    plan_ptx(plan, ARCHS[0])
    emit = time.perf_counter() - t
    t = time.perf_counter()
    cold = plan_ptx_figures(plan, ARCHS)
    cold_s = time.perf_counter() - t
    t = time.perf_counter()
    again = plan_ptx_figures(plan, ARCHS)
    cached_s = time.perf_counter() - t
    assert again.cached and not cold.cached
    return {"emit": emit, "cold": cold_s, "cached": cached_s, "stages": cold.timings_ms, "figures": cold}


def measure(plan, repeat: int) -> dict:
    runs = [_in_fresh_cache(lambda: _once(plan)) for _ in range(max(1, repeat))]
    yard = [yardstick() for _ in range(max(1, repeat))]
    stages = {k: statistics.median(r["stages"][k] for r in runs) for k in runs[0]["stages"]}
    figures = runs[-1]["figures"]
    return {"instructions": len(plan.program.instructions), "repeat": len(runs),
            "emit": statistics.median(r["emit"] for r in runs), "cold": statistics.median(r["cold"] for r in runs),
            "cached": statistics.median(r["cached"] for r in runs), "stages": stages,
            "yardstick": statistics.median(yard),
            "registers": {a: (figures.ptxas_compiler[a].registers, figures.ptxas[a].registers) for a in ARCHS}}


def line(label: str, r: dict) -> str:
    s = r["stages"]
    tools = "; ".join(f"{a}: ptxas {s[f'ptxas {a} plan cap']:.0f} ms at the plan cap, {s[f'ptxas {a} no cap']:.0f} ms "
                      f"with no cap, nvdisasm {s[f'nvdisasm {a}']:.0f} ms" for a in ARCHS)
    regs = ", ".join(f"{a} {n}/{c}" for a, (n, c) in r["registers"].items())
    return (f"{label}: {r['instructions']} IR instructions; emission {r['emit'] * 1000:.0f} ms; {tools}; "
            f"cold {r['cold']:.2f} s, cached {r['cached'] * 1000:.0f} ms (median of {r['repeat']}); "
            f"sum(range(10**7)) {r['yardstick'] * 1000:.0f} ms in this run; ptxas registers no cap/plan cap {regs}")


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"plan PTX figures for {', '.join(ARCHS)}, median of {args.repeat} (each cold run in a fresh cache)")
    results = []
    for label, plan in plans().items():
        r = measure(plan, args.repeat)
        r["label"] = label
        results.append(r)
        print(line(label, r))
    return results


if __name__ == "__main__":
    main()
