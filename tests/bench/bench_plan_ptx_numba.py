"""Benchmark: the two realisations of a plan side by side, plan PTX against the Numba kernel, over GEMM configs.

A deterministic sample of the GEMM config space (every N-th of
:func:`engine.workloads.gemm.gemm_configs`, default tile and schedule,
the best allocator's plan at budget 255 as in bench_caps.py) and the design
note's MHA example (32 heads, batch 64, head_dim 64, 4 groups; its best
plan too). Each plan is realised twice: its own PTX
(:func:`kernels.plan_ptx.plan_ptx_figures`, volatile spill code) and the
Numba kernel (:func:`kernels.build.build_plan`: numba-cuda and NVVM, about
3 s a plan). One line per plan and, per arch, ptxas's registers with no
cap and at the plan cap for both, and their ratios (plan PTX / Numba
kernel): the median, the range and the plans furthest from 1, with the
two PTX texts' instruction counts (all, ``ld.global``, ``fma``/``mad``) as
a hint of what NVVM changed.

Builds use the build cache ($REGTUNE_CACHE_DIR), so a second run is quick.

Run: ``python -m tests.bench.bench_plan_ptx_numba [--sample N] [--arch sm_80] [--no-mha]``
"""

from __future__ import annotations

import argparse
import statistics

from engine.alloc import allocate
from engine.model.arch import load_arch
from engine.plan import Plan, registers_used
from engine.predict import planned_and_run
from engine.claims import BEST
from engine.workloads.mha import Mha, build_mha
from kernels.build import build_plan
from kernels.plan_ptx import plan_ptx, plan_ptx_figures
from tests.bench.bench_caps import best_plan, sample
from tests.bench.bench_load_order import ptx_instructions

MHA_EXAMPLE = Mha(32, 64, 64, 4)


def best_mha_plan(w: Mha = MHA_EXAMPLE) -> Plan:
    """The best allocator's plan of ``w`` at budget 255 (as :func:`tests.bench.bench_caps.best_plan`)."""
    program, options = build_mha(w)
    plans = [planned_and_run(allocate(name, program, 255), workload=w.as_dict(), options=options) for name in BEST]
    return min(plans, key=lambda p: (len(p.spills), registers_used(p.assignment), BEST.index(p.allocator)))


def counts(ptx: str) -> dict:
    """Instructions of a PTX text (its comments aside): all, global loads, fused multiply-adds."""
    body = [line.split("//")[0].strip() for line in ptx.splitlines()]
    return {"all": ptx_instructions("\n".join(body)), "ld.global": sum(1 for t in body if t.startswith("ld.global")),
            "fma": sum(1 for t in body if t.startswith(("fma.", "mad.")))}


def measure(label: str, plan: Plan, archs) -> dict:
    """One plan realised both ways: per arch (no cap, plan cap) registers of each, and both PTX texts' counts."""
    mine = plan_ptx_figures(plan, archs)
    numba = build_plan(plan, archs)
    per_arch = {a: {"plan_ptx": (mine.ptxas_compiler[a].registers, mine.ptxas[a].registers),
                    "numba": (numba.archs[a].compiler.registers, numba.archs[a].report.registers),
                    "plan_ptx_spill_bytes": mine.ptxas[a].spill_bytes,
                    "numba_spill_bytes": numba.archs[a].report.spill_store_bytes
                    + numba.archs[a].report.spill_load_bytes} for a in archs}
    return {"label": label, "allocator": plan.allocator, "registers": registers_used(plan.assignment),
            "archs": per_arch, "counts": {"plan_ptx": counts(plan_ptx(plan, archs[0]).text),
                                          "numba": counts(numba.ptx)}}


def row_line(r: dict) -> str:
    figures = "; ".join(f"{a} plan PTX {f['plan_ptx'][0]}/{f['plan_ptx'][1]}, Numba kernel {f['numba'][0]}/"
                        f"{f['numba'][1]}" for a, f in r["archs"].items())
    c = r["counts"]
    return (f"{r['label']} ({r['allocator']}, {r['registers']} planned): {figures} (no cap/plan cap); PTX "
            f"instructions {c['plan_ptx']['all']} vs {c['numba']['all']}, ld.global {c['plan_ptx']['ld.global']} vs "
            f"{c['numba']['ld.global']}, fma/mad {c['plan_ptx']['fma']} vs {c['numba']['fma']}")


def summary(rows: list[dict], arch: str, worst: int = 3) -> list[str]:
    out = []
    for k, cap in enumerate(("no cap", "plan cap")):
        ratios = [(r["archs"][arch]["plan_ptx"][k] / r["archs"][arch]["numba"][k], r) for r in rows]
        values = [x for x, _ in ratios]
        far = sorted(ratios, key=lambda xr: -abs(xr[0] - 1))[:worst]
        equal = sum(1 for x in values if x == 1)
        out.append(f"{arch} {cap}: plan PTX / Numba kernel registers median {statistics.median(values):.3f} "
                   f"({min(values):.3f}..{max(values):.3f}), equal in {equal} of {len(rows)}; furthest: "
                   + "; ".join(f"{r['label']} {x:.3f}" for x, r in far))
    return out


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=67, help="every N-th GEMM config (default 67: 51 configs)")
    parser.add_argument("--arch", default="sm_80", help="comma-separated architectures (default sm_80)")
    parser.add_argument("--no-mha", action="store_true", help="leave out the MHA example")
    args = parser.parse_args(argv)
    archs = tuple(load_arch(a.strip()).name for a in args.arch.split(",") if a.strip())
    plans = [(f"gemm {w.m}x{w.n}x{w.k}", lambda w=w: best_plan(w)) for w in sample(args.sample)]
    if not args.no_mha:
        plans.append(("mha 32h b64 d64 g4", best_mha_plan))
    rows = []
    for label, make in plans:
        rows.append(measure(label, make(), archs))
        print(row_line(rows[-1]), flush=True)
    for a in archs:
        for text in summary(rows, a):
            print(text)
    return rows


if __name__ == "__main__":
    main()
