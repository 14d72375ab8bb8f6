"""Benchmark: does ptxas fit the plan's register count, and what does it choose with no cap, over GEMM configs.

A deterministic sample of the GEMM config space (every N-th of
:func:`engine.workloads.gemm.gemm_configs`, default tile and schedule),
each allocated by the best allocator at budget 255 (of
:data:`engine.claims.BEST`, the plan with the fewest spilled values, then
the fewest registers, then the first in that list) and built once (real
NVVM, then ptxas per arch at the plan cap and with no ``-maxrregcount``,
:mod:`kernels.build`). Prints one line per config and, per arch:

- how often ptxas fits the plan's count: no spill bytes at the plan cap;
- the median (and range) of ptxas's registers with no flag over the plan's
  registers.

Builds use the build cache ($REGTUNE_CACHE_DIR), so a second run is quick;
the figures are ptxas's either way.

Run: ``python -m tests.bench.bench_caps --sample N [--arch sm_80,sm_90]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from engine.alloc import allocate
from engine.model.arch import DEFAULT_BUILD_ARCHS, load_arch
from engine.base.errors import RegtuneError
from engine.plan import Plan, registers_used
from engine.predict import planned_and_run
from engine.claims import BEST
from engine.workloads.gemm import Gemm, build_gemm, gemm_configs
from kernels.build import build_plan

BUDGET = 255


def sample(every: int) -> list[Gemm]:
    """Every ``every``-th GEMM config, from the first."""
    if every < 1:
        raise RegtuneError(f"--sample must be at least 1, got {every}")
    return gemm_configs()[::every]


def best_plan(w: Gemm) -> Plan:
    """The best allocator's plan of ``w`` at budget 255: fewest spilled values, then fewest registers."""
    program, options = build_gemm(w)          # the default tile, against the arch's register limit
    plans = [planned_and_run(allocate(name, program, BUDGET), workload=w.as_dict(), options=options) for name in BEST]
    return min(plans, key=lambda p: (len(p.spills), registers_used(p.assignment), BEST.index(p.allocator)))


def measure(w: Gemm, archs) -> dict:
    """One config: the plan's count and, per arch, ptxas at the plan cap and with no cap."""
    plan = best_plan(w)
    build = build_plan(plan, archs)
    count = registers_used(plan.assignment)
    per_arch = {a: {"cap": b.report.max_registers, "at_plan": b.report.registers,
                    "spill_bytes": b.report.spill_store_bytes + b.report.spill_load_bytes,
                    "no_cap": b.compiler.registers} for a, b in build.archs.items()}
    return {"config": (w.m, w.n, w.k), "allocator": plan.allocator, "registers": count, "archs": per_arch,
            "cached": build.cached}


def summary(rows: list[dict], arch: str) -> str:
    figures = [r["archs"][arch] for r in rows]
    fits = sum(1 for f in figures if f["spill_bytes"] == 0)
    ratios = [f["no_cap"] / r["registers"] for r, f in zip(rows, figures)]
    raised = sum(1 for r, f in zip(rows, figures) if f["cap"] is not None and f["cap"] > r["registers"])
    return (f"{arch}: ptxas fit the plan's count without spilling in {fits} of {len(rows)} plans "
            f"({raised} of them capped at ptxas's floor, the plan needing fewer); ptxas with no -maxrregcount / "
            f"plan registers: median {statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})")


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=67, help="every N-th GEMM config (default 67: 51 configs)")
    parser.add_argument("--arch", default=",".join(DEFAULT_BUILD_ARCHS), help="comma-separated architectures")
    args = parser.parse_args(argv)
    archs = tuple(load_arch(a.strip()).name for a in args.arch.split(",") if a.strip())
    configs = sample(args.sample)
    print(f"{len(configs)} GEMM configs (every {args.sample}-th), best allocator at budget {BUDGET}, "
          f"ptxas on {', '.join(archs)} at the plan cap and with no cap", flush=True)
    rows = []
    for w in configs:
        t = time.perf_counter()
        r = measure(w, archs)
        rows.append(r)
        each = "; ".join(f"{a} plan cap {f['cap'] or 'none'}: {f['at_plan']} registers, {f['spill_bytes']} B spilled, "
                         f"no cap: {f['no_cap']}" for a, f in r["archs"].items())
        print(f"GEMM {'x'.join(map(str, r['config']))} {r['allocator']} {r['registers']} registers: {each} "
              f"({time.perf_counter() - t:.1f} s{', cached' if r['cached'] else ''})", flush=True)
    for a in archs:
        print(summary(rows, a))
    return rows


if __name__ == "__main__":
    main()
