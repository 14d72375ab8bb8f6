"""Benchmark: the plan's ILP model (engine/model/ilp.py) held against the SASS control-bit model of the same kernel.

For each plan of a sample (GEMM configs x schedules x allocators, and MHA
strategies x allocators, budget 255, arch sm_80) it computes the plan
model's issue cycles per warp (``plan_ilp(...).cycles``, "cycles/warp
(model)") and the SASS model's (:func:`kernels.plan_ptx.plan_ptx_issue_cycles`:
the plan's own PTX through real ptxas at the plan cap and nvdisasm, priced
from the control bits by :func:`kernels.control.issue_cycles`, the code a
predicated forward branch guards run, as the plan model runs the longer side
of each ``if``). It prints one row a plan, then the median of plan/SASS and
Spearman's rank correlation of the two (tests/gpu/run_gpu.py's
``spearman``), and the median time of several runs of the plan model over
the sample beside ``sum(range(10**7))`` timed in the same run.

Further columns take the plan model apart: ``in order`` is the plan's
issue cycles with nothing moved (the warp issues the plan's own order, the
model before its list scheduler), ``dataflow`` the plan's critical path
(all dependences, the plan's own registers, unlimited issue: no schedule of
the plan's assignment is shorter), ``reference`` the model's cycles with
unlimited registers (true dependences only, list-scheduled); and the SASS
side: ``waits``, the SASS model's cycles spent waiting on scoreboards (the
variable-latency loads' latencies, from the same arch table). A plan the
SASS model cannot price (a loop ptxas unrolled, a loop shape it refuses) is
listed with its reason and left out of the figures.

Run: ``python -m tests.bench.bench_model_vs_sass [--repeat N] [--tiny] [--before JSON]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from engine.alloc import allocate
from engine.model.ilp import plan_ilp
from engine.workloads.gemm import Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha
from kernels.control import ControlError
from kernels.plan_ptx import PlanPtxError, plan_ptx_issue_cycles
from tests.gpu.run_gpu import spearman

ARCH = "sm_80"
ALLOCATORS = ("naive", "linear-scan", "chaitin-briggs", "dsatur")
GEMMS = ((4, 4, 4), (8, 8, 8), (6, 6, 6), (8, 8, 4))
GEMM_SCHEDULES = ("k-outer", "load-all-first", "dot")
MHAS = ((), ("qk-symmetric",), ("fp16-softmax",))
NOTE = Mha(heads=32, batch=64, head_dim=64, groups=4)


def yardstick() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def sample(tiny: bool = False) -> list[tuple[str, object]]:
    """(label, plan) of every plan in the sample (``tiny``: 2 GEMM programs x 2 allocators)."""
    programs = []
    gemms, schedules, allocators = (GEMMS[:2], ("k-outer",), ALLOCATORS[::3]) if tiny else \
        (GEMMS, GEMM_SCHEDULES, ALLOCATORS)
    for cfg in gemms:
        for schedule in schedules:
            program, options = build_gemm(Gemm(*cfg), schedule=schedule)
            programs.append((f"gemm {'x'.join(map(str, cfg))} {schedule}", program, options))
    if not tiny:
        for strategies in MHAS:
            program, options = build_mha(NOTE, strategies)
            programs.append((f"mha {'+'.join(strategies) or 'baseline'}", program, options))
    out = []
    for label, program, options in programs:
        for name in allocators:
            a = allocate(name, program, 255)
            out.append((f"{label} {name}", a.plan(options={**options, "arch": ARCH}), a.original))
    return out


def measure(plans) -> list[dict]:
    """One row a plan: plan-model cycles and bounds, SASS-model cycles (or why none)."""
    rows = []
    for label, plan, original in plans:
        f = plan_ilp(plan, ARCH, original=original)
        row = {"plan": label, "registers": 1 + max((r for rs in plan.assignment.values() for r in rs), default=-1),
               "model": f.cycles, "in_order": f.in_order_cycles, "dataflow": f.critical_path,
               "reference": f.reference_cycles}
        try:
            r, ptxas_registers = plan_ptx_issue_cycles(plan, ARCH)
            row.update(sass=r.cycles, waits=r.barrier_wait_cycles, ptxas_registers=ptxas_registers)
        except (ControlError, PlanPtxError) as e:
            row["why"] = str(e)
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """Median plan/SASS ratio and Spearman's rank correlation over the priced rows."""
    priced = [r for r in rows if "sass" in r]
    ratios = [r["model"] / r["sass"] for r in priced]
    return {"priced": len(priced), "of": len(rows),
            "median_ratio": statistics.median(ratios) if ratios else None,
            "spearman": spearman([r["model"] for r in priced], [r["sass"] for r in priced]),
            "median_in_order_ratio": statistics.median(r["in_order"] / r["sass"] for r in priced) if priced else None,
            "median_dataflow_ratio": statistics.median(r["dataflow"] / r["sass"] for r in priced) if priced else None,
            "median_reference_ratio": statistics.median(r["reference"] / r["sass"] for r in priced) if priced else None}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="2 GEMM programs x 2 allocators")
    parser.add_argument("--before", metavar="JSON", help="plan label -> plan-model cycles of another version of "
                        "the model (e.g. main's), held against the same SASS figures")
    args = parser.parse_args(argv)
    plans = sample(args.tiny)
    rows = measure(plans)
    print(f"{'plan':44} {'regs':>4} {'ptxas':>5} {'model':>10} {'SASS':>9} {'ratio':>6} {'in order':>10} "
          f"{'dataflow':>10} {'reference':>9} {'waits':>9}")
    for r in rows:
        if "sass" in r:
            print(f"{r['plan']:44} {r['registers']:4d} {r['ptxas_registers']:5d} {r['model']:10,d} {r['sass']:9,d} "
                  f"{r['model'] / r['sass']:6.2f} {r['in_order']:10,d} {r['dataflow']:10,d} {r['reference']:9,d} "
                  f"{r['waits']:9,d}")
        else:
            print(f"{r['plan']:44} {r['registers']:4d} {'':5} {r['model']:8,d} {'-':>7}  not priced: {r['why']}")
    s = summary(rows)
    times, marks = [], []
    for _ in range(args.repeat):
        marks.append(yardstick())
        t = time.perf_counter()
        for _label, plan, original in plans:
            plan_ilp(plan, ARCH, original=original)
        times.append(time.perf_counter() - t)
    s["model_s"], s["yardstick_s"] = statistics.median(times), statistics.median(marks)
    ratio = "-" if s["median_ratio"] is None else f"{s['median_ratio']:.2f}"
    print(f"\n{s['priced']} of {s['of']} plans priced by the SASS model (sm_80, ptxas at the plan cap)")
    print(f"plan-model cycles / SASS-model cycles: median {ratio}; Spearman rank correlation {s['spearman']}")
    if s["priced"]:
        print(f"the plan issued in its own order / SASS: median {s['median_in_order_ratio']:.2f}; "
              f"the plan's dataflow critical path / SASS: median {s['median_dataflow_ratio']:.2f}; "
              f"the model with unlimited registers / SASS: median {s['median_reference_ratio']:.2f}")
    print(f"plan model over the sample: median {s['model_s'] * 1000:.1f} ms of {args.repeat} runs; "
          f"sum(range(10**7)) {s['yardstick_s'] * 1000:.1f} ms")
    if args.before:
        old = json.loads(Path(args.before).read_text(encoding="utf-8"))
        both = [r for r in rows if "sass" in r and r["plan"] in old]
        if both:
            print(f"before ({args.before}, {len(both)} plans): median "
                  f"{statistics.median(old[r['plan']] / r['sass'] for r in both):.2f}; Spearman "
                  f"{spearman([old[r['plan']] for r in both], [r['sass'] for r in both])}")
    s["rows"] = rows
    return s


if __name__ == "__main__":
    main()
