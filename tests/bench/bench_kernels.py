"""Benchmark: building and measuring kernels from plans, cold and cached.

For each plan, the time per stage of a cold build (codegen, NVVM through
numba-cuda, then ptxas at two caps and nvdisasm per architecture, run side by side)
and of a cached one (the same request again: nothing compiles), as the
median of several runs, each cold run in a fresh cache folder. Plans: GEMM
8x8x8 (target: cold under 5 s for sm_80 + sm_90), the largest GEMM config
16x16x16 with its default tile (under 20 s), the source note's MHA example
(32 heads, batch 64, head_dim 64, 4 groups; under 20 s); cached under
0.2 s. The reference measured in the same run: the cached build, so the
ratio cold/cached says what the cache saves.

Run: ``python -m tests.bench.bench_kernels [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from engine.alloc import allocate
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha
from kernels.build import build_plan

ARCHS = ("sm_80", "sm_90")


def plans() -> dict:
    out = {}
    for label, w, (program, options) in (
            ("GEMM 8x8x8", Gemm(8, 8, 8), build_gemm(Gemm(8, 8, 8))),
            ("GEMM 16x16x16 (largest)", Gemm(16, 16, 16), build_gemm(Gemm(16, 16, 16))),
            ("MHA 32h b64 d64 g4 (the note's example)", Mha(32, 64, 64, 4), build_mha(Mha(32, 64, 64, 4)))):
        plan = planned_and_run(allocate("linear-scan", program), workload=w.as_dict(), options=options)
        out[label] = plan
    return out


def measure(plan, repeat: int) -> dict:
    cold, cached, stages = [], [], []
    old = os.environ.get("REGTUNE_CACHE_DIR")
    try:
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="regtune-bench-") as tmp:
                os.environ["REGTUNE_CACHE_DIR"] = tmp
                t = time.perf_counter()
                build = build_plan(plan, ARCHS)
                cold.append(time.perf_counter() - t)
                stages.append(build.timings_ms)
                t = time.perf_counter()
                again = build_plan(plan, ARCHS)
                cached.append(time.perf_counter() - t)
                assert again.cached and not build.cached
    finally:
        if old is None:
            os.environ.pop("REGTUNE_CACHE_DIR", None)
        else:
            os.environ["REGTUNE_CACHE_DIR"] = old
    keys = stages[0].keys()
    return {"instructions": len(plan.program.instructions), "cold": statistics.median(cold),
            "cached": statistics.median(cached),
            "stages": {k: statistics.median(s[k] for s in stages) for k in keys},
            "registers": {a: b.report.registers for a, b in build.archs.items()}}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results = []
    print(f"kernel builds for {', '.join(ARCHS)}, median of {args.repeat} (each cold run in a fresh cache)")
    for label, plan in plans().items():
        r = measure(plan, args.repeat)
        r["label"] = label
        results.append(r)
        s = r["stages"]
        per_arch = "  ".join(f"ptxas {a} {s[f'ptxas {a} plan cap']:.0f} ms at the plan cap and "
                             f"{s[f'ptxas {a} no cap']:.0f} ms with no cap, nvdisasm {a} {s[f'nvdisasm {a}']:.0f} ms"
                             for a in ARCHS)
        print(f"{label}: {r['instructions']} IR instructions; cold {r['cold']:.2f} s (codegen {s['codegen']:.0f} ms, "
              f"NVVM {s['nvvm']:.0f} ms, {per_arch}); cached {r['cached'] * 1000:.0f} ms; "
              f"cold/cached {r['cold'] / r['cached']:.0f}x; ptxas registers at the plan cap {r['registers']}")
    return results


if __name__ == "__main__":
    main()
