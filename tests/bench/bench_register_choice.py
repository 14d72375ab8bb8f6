"""Benchmark (an experiment with the plan model): how much of a plan's model cycles is which free register it took.

The allocators give a value the lowest free register (linear-scan: "the
current interval takes the lowest register"), so the register a value just
freed is the next one taken: in GEMM's epilogue every C load lands in the
register the previous one left, and each load waits for the last read of
the one before (a false dependence, 400 cycles a load on sm_80). ptxas
allocates the plan PTX's registers again, so its kernel has no such line.

For each GEMM plan of :mod:`tests.bench.bench_model_vs_sass`'s sample
without spill code (naive, which reuses nothing, left out), the same values
get registers again at the same count, each taking the free register that
was freed longest ago (lowest first among equals; an even-aligned pair for
a 64-bit value): a straight-line scan in layout order, each value live from
its first definition to its last use. A plan whose re-picked assignment
:func:`engine.check.verify.static_conflicts` refuses (the scan's intervals
do not fit the count) is listed and left out. Both assignments are priced
by the plan model (``plan_ilp(...).cycles``) beside the SASS model of the
plan's kernel (the plan PTX carries no assignment, so the two have one
kernel). It prints one row a plan, the medians of model/SASS for both and
Spearman's rank correlation, and the time of the re-pick and the model runs
beside ``sum(range(10**7))``.

Run: ``python -m tests.bench.bench_register_choice [--tiny] [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from engine.check.verify import static_conflicts
from engine.ir.cfg import loop_trips
from engine.model.ilp import plan_ilp
from engine.plan import registers_used
from kernels.control import ControlError
from kernels.plan_ptx import PlanPtxError, plan_ptx_issue_cycles
from tests.bench.bench_model_vs_sass import ARCH, sample, yardstick
from tests.gpu.run_gpu import spearman

WIDTHS = {"u64": 2, "f64": 2, "pred": 0}


def least_recently_freed(program, registers: int) -> dict | None:
    """value -> registers, each value taking the free register (or even-aligned pair) freed longest ago, in
    ``registers`` registers; None when the scan runs out of them.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %a:f32 = mov 1\\n  %b:f32 = add %a, 1\\n  %c:f32 = add %b, 1\\n"
    ...           "  %d:f32 = add %c, 1\\n  exit\\n")
    >>> least_recently_freed(p, 3)     # lowest-first would give a and c R0, b and d R1
    {'a': (0,), 'b': (1,), 'c': (2,), 'd': (0,)}
    """
    first, last, width = {}, {}, {}
    for i, ins in enumerate(program.instructions):
        for name in ins.uses:
            last[name] = i
        for d in ins.defs:
            first.setdefault(d.name, i)
            last[d.name] = max(last.get(d.name, i), i)
            width[d.name] = WIDTHS.get(d.type, 1)
    freed = [-1] * registers           # when each register was freed (-1: never taken)
    holder: list = [None] * registers
    out = {}
    for name in sorted(first, key=lambda n: (first[n], n)):
        w = width[name]
        if not w:
            continue
        at = first[name]
        for r, held in enumerate(holder):
            if held is not None and last[held] < at:
                holder[r], freed[r] = None, last[held]
        starts = range(0, registers - w + 1, w)
        free = [r for r in starts if all(holder[r + k] is None for k in range(w))]
        if not free:
            return None
        r = min(free, key=lambda r: (max(freed[r:r + w]), r))
        for k in range(w):
            holder[r + k] = name
        out[name] = tuple(range(r, r + w))
    return out


def measure(plans) -> tuple[list[dict], list]:
    """One row a plan; and (plan, re-picked plan, original) of each plan compared."""
    rows, compared = [], []
    for label, plan, original in plans:
        if plan.spills or label.endswith(" naive"):
            continue
        count = 1 + max(r for rs in plan.assignment.values() for r in rs)
        if loop_trips(plan.program):
            rows.append({"plan": label, "registers": count, "why": "a loop: the straight-line scan does not apply"})
            continue
        again = least_recently_freed(plan.program, count)
        if again is None or static_conflicts(plan.program, again, {}, count):
            rows.append({"plan": label, "registers": count, "why": "the scan's intervals do not fit the count"})
            continue
        compared.append((plan, plan.with_(assignment=again), original))
        row = {"plan": label, "registers": count,
               "lowest": plan_ilp(plan, ARCH, original=original).cycles,
               "oldest": plan_ilp(compared[-1][1], ARCH, original=original).cycles}
        try:
            row["sass"] = plan_ptx_issue_cycles(plan, ARCH)[0].cycles
        except (ControlError, PlanPtxError) as e:
            row["why"] = str(e)
        rows.append(row)
    return rows, compared


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="bench_model_vs_sass's tiny sample")
    args = parser.parse_args(argv)
    plans = sample(args.tiny)
    rows, compared = measure(plans)
    print(f"{'plan':44} {'regs':>4} {'lowest free':>11} {'oldest free':>11} {'SASS':>7} {'ratios':>13}")
    for r in rows:
        if "sass" in r:
            print(f"{r['plan']:44} {r['registers']:4d} {r['lowest']:11,d} {r['oldest']:11,d} {r['sass']:7,d} "
                  f"{r['lowest'] / r['sass']:6.2f} {r['oldest'] / r['sass']:6.2f}")
        else:
            print(f"{r['plan']:44} {r['registers']:4d}  not compared: {r['why']}")
    priced = [r for r in rows if "sass" in r]
    s = {"compared": len(priced), "of": len(rows), "rows": rows}
    if priced:
        s.update(lowest=statistics.median(r["lowest"] / r["sass"] for r in priced),
                 oldest=statistics.median(r["oldest"] / r["sass"] for r in priced),
                 spearman_lowest=spearman([r["lowest"] for r in priced], [r["sass"] for r in priced]),
                 spearman_oldest=spearman([r["oldest"] for r in priced], [r["sass"] for r in priced]))
        print(f"\n{len(priced)} of {len(rows)} plans compared (sm_80); plan-model cycles / SASS-model cycles, median: "
              f"lowest free register {s['lowest']:.2f} (Spearman {s['spearman_lowest']}), the one freed longest ago "
              f"{s['oldest']:.2f} (Spearman {s['spearman_oldest']})")
    times, marks = [], []
    for _ in range(args.repeat):
        marks.append(yardstick())
        t = time.perf_counter()
        for plan, _again, original in compared:
            plan_ilp(plan.with_(assignment=least_recently_freed(plan.program, registers_used(plan.assignment))),
                     ARCH, original=original)
        times.append(time.perf_counter() - t)
    s["seconds"], s["yardstick_s"] = statistics.median(times), statistics.median(marks)
    print(f"re-pick and model over the compared plans: median {s['seconds'] * 1000:.1f} ms of {args.repeat} runs; "
          f"sum(range(10**7)) {s['yardstick_s'] * 1000:.1f} ms")
    return s


if __name__ == "__main__":
    main()
