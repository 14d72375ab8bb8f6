"""Benchmark: every registered allocator on a sample of GEMM and MHA programs, as a table (issue 24).

For each program and budget, each allocator's plan: registers, spilled values, static spill instructions
(``st.local`` + ``ld.local`` in the plan's program), executed spill instructions (stores + loads run on the
execution check's deepest input, :func:`engine.predict.execution_figures`), stack bytes (the plan's spill
slots, ``local_bytes``), seconds to allocate, and whether the plan passed the static checker. Where the
``optimal`` allocator is registered (issue 24's optimal reference), ``optimal_gap`` is each heuristic's
excess over it: registers at budget 255, executed spill instructions under a budget; absent, the column
says so once.

The sample: GEMM sizes by schedule, the design note's MHA config under each strategy and further MHA
configs (:func:`sample`). ``--small`` takes a few of each for the test; ``--limit N`` the first N.
Seconds are the median of ``--repeat`` runs of the allocation alone, printed beside ``sum(range(10**7))``
timed in the same run.

Run: ``python -m tests.bench.bench_allocators [--small] [--repeat N] [--csv FILE]``
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

from engine.alloc import ALLOCATORS, allocate
from engine.analysis.liveness import analyze
from engine.base.process import configure_process
from engine.check.verify import ReferenceRuns, static_conflicts
from engine.predict import planned_and_run

#: (M, N, K) of the GEMM sample, each under all three schedules
GEMM_SIZES = ((2, 2, 2), (4, 4, 4), (4, 8, 3), (6, 6, 6), (8, 8, 8), (5, 7, 11), (3, 9, 4), (12, 3, 9), (7, 10, 7))
MHA_STRATEGIES = ((), ("qk-symmetric",), ("sliding-window",), ("fp16-softmax",), ("head-shared",),
                  ("group-pools",), ("sliding-window", "head-shared"),
                  ("qk-symmetric", "sliding-window", "fp16-softmax", "head-shared", "group-pools"))
MHA_CONFIGS = ((16, 1, 32, 1), (16, 1, 32, 2), (40, 4, 80, 8), (64, 16, 96, 2), (32, 1, 128, 8), (16, 4, 64, 1))
#: the programs also run at budgets 32, 64 and 96 (16 of them)
BUDGET_SAMPLE = ("gemm 4x4x4 k-outer", "gemm 8x8x8 load-all-first", "gemm 8x8x8 k-outer", "gemm 8x8x8 dot",
                 "gemm 6x6x6 load-all-first", "gemm 6x6x6 k-outer", "gemm 5x7x11 k-outer", "gemm 7x10x7 k-outer",
                 "gemm 12x3x9 dot", "gemm 4x8x3 load-all-first",
                 "mha note baseline", "mha note head-shared", "mha note fp16-softmax",
                 "mha 16x1x32x2 baseline", "mha 40x4x80x8 baseline", "mha 32x1x128x8 baseline")
BUDGETS = (32, 64, 96)


def sample(small: bool = False) -> dict:
    """Label -> (program, workload dict, options) of the sample (``small``: a few, for the test)."""
    from engine.claims import NOTE_EXAMPLE
    from engine.workloads.gemm import SCHEDULES, Gemm, build_gemm
    from engine.workloads.mha import Mha, build_mha

    found = {}
    for m, n, k in GEMM_SIZES[:3] if small else GEMM_SIZES:
        for s in SCHEDULES:
            w = Gemm(m, n, k)
            program, options = build_gemm(w, schedule=s)
            found[f"gemm {m}x{n}x{k} {s}"] = (program, w.as_dict(), options)
    for strategies in MHA_STRATEGIES[:2] if small else MHA_STRATEGIES:
        program, options = build_mha(NOTE_EXAMPLE, strategies)
        found[f"mha note {'+'.join(strategies) or 'baseline'}"] = (program, NOTE_EXAMPLE.as_dict(), options)
    for h, b, d, g in MHA_CONFIGS[:1] if small else MHA_CONFIGS:
        w = Mha(h, b, d, g)
        program, options = build_mha(w)
        found[f"mha {h}x{b}x{d}x{g} baseline"] = (program, w.as_dict(), options)
    return found


def yardstick() -> float:
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def row(label: str, program, workload: dict, options: dict, budget: int, name: str, repeat: int,
        runs: ReferenceRuns, analysis) -> dict:
    """One allocator's figures on one program at one budget."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        allocation = allocate(name, program, budget, analysis)
        times.append(time.perf_counter() - t)
    plan = planned_and_run(allocation, runs, workload=workload, options=options)
    f = plan.predicted
    conflicts = static_conflicts(plan.program, plan.assignment, plan.spills, budget, allocation.analysis,
                                 allocation.spill_code)
    executed = None if f.spill_stores_executed is None else f.spill_stores_executed + f.spill_loads_executed
    return {"program": label, "budget": budget, "allocator": name, "maxlive": analysis.maxlive,
            "registers": f.registers, "spilled": f.spilled_values, "static_spill": f.spill_stores + f.spill_loads,
            "executed_spill": executed, "stack_bytes": f.local_bytes, "seconds": statistics.median(times),
            "verified": not conflicts}


def _gaps(rows: list[dict]) -> None:
    """``optimal_gap`` of each row against the optimal row of its program and budget (None where absent)."""
    best = {(r["program"], r["budget"]): r for r in rows if r["allocator"] == "optimal"}
    for r in rows:
        o = best.get((r["program"], r["budget"]))
        if o is None:
            r["optimal_gap"] = None
        elif r["budget"] == 255 and not o["spilled"]:
            r["optimal_gap"] = r["registers"] - o["registers"]
        else:
            ours, theirs = r["executed_spill"], o["executed_spill"]
            r["optimal_gap"] = None if ours is None or theirs is None else ours - theirs


def run(small: bool = False, repeat: int = 1, limit: int | None = None, progress=None) -> list[dict]:
    programs = sample(small)
    labels = list(programs)[:limit] if limit else list(programs)
    rows = []
    for label in labels:
        program, workload, options = programs[label]
        analysis = analyze(program)
        runs = ReferenceRuns()
        budgets = (255,) + (BUDGETS if label in BUDGET_SAMPLE or small else ())
        for budget in budgets:
            for name in sorted(ALLOCATORS):
                rows.append(row(label, program, workload, options, budget, name, repeat, runs, analysis))
        if progress:
            progress(label)
    _gaps(rows)
    return rows


def _mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def summary(rows: list[dict]) -> list[str]:
    """Per budget and allocator: programs, mean registers, totals of the spill figures, seconds."""
    lines = ["| budget | allocator | programs | mean registers | regs = MAXLIVE | spilled values | static spill "
             "| executed spill | stack bytes | seconds | all verified | optimal gap |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for budget in sorted({r["budget"] for r in rows}, reverse=True):
        for name in sorted(ALLOCATORS):
            rs = [r for r in rows if r["budget"] == budget and r["allocator"] == name]
            executed = [r["executed_spill"] for r in rs]
            gaps = [r["optimal_gap"] for r in rs if r["optimal_gap"] is not None]
            lines.append(
                f"| {budget} | {name} | {len(rs)} | {_mean(r['registers'] for r in rs):.1f} "
                f"| {sum(r['registers'] == r['maxlive'] for r in rs)} "
                f"| {sum(r['spilled'] for r in rs)} | {sum(r['static_spill'] for r in rs)} "
                f"| {sum(e for e in executed if e is not None)}{'' if None not in executed else ' (some not run)'} "
                f"| {sum(r['stack_bytes'] for r in rs)} | {sum(r['seconds'] for r in rs):.3f} "
                f"| {all(r['verified'] for r in rs)} | {sum(gaps) if gaps else '—'} |")
    return lines


def wins(rows: list[dict]) -> list[str]:
    """Under a budget: how often each allocator executes the fewest spill instructions (ties count for all)."""
    cases = {}
    for r in rows:
        if r["budget"] != 255:
            cases.setdefault((r["program"], r["budget"]), []).append(r)
    spilling = {k: rs for k, rs in cases.items() if any(r["executed_spill"] for r in rs if r["allocator"] != "naive")}
    count = dict.fromkeys(sorted(ALLOCATORS), 0)
    for rs in spilling.values():
        least = min(r["executed_spill"] for r in rs if r["executed_spill"] is not None)
        for r in rs:
            count[r["allocator"]] += r["executed_spill"] == least
    return [f"fewest executed spill instructions in {len(spilling)} spilling cases (ties count for each): "
            + ", ".join(f"{k} {v}" for k, v in count.items())]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a few programs (the test's sample)")
    parser.add_argument("--repeat", type=int, default=3, help="allocation runs per figure (median)")
    parser.add_argument("--limit", type=int, help="the first N programs only")
    parser.add_argument("--csv", help="write every row to this CSV file")
    args = parser.parse_args(argv)
    configure_process()
    loops = [yardstick()]
    rows = run(args.small, args.repeat, args.limit,
               progress=lambda label: print(f"  done: {label}", file=sys.stderr, flush=True))
    loops.append(yardstick())
    programs = len({r["program"] for r in rows})
    budgeted = len({r["program"] for r in rows if r["budget"] != 255})
    print(f"{programs} programs at budget 255, {budgeted} of them at budgets {', '.join(map(str, BUDGETS))}; "
          f"allocators: {', '.join(sorted(ALLOCATORS))}")
    print("\n".join(summary(rows)))
    print("\n".join(wins(rows)))
    if "optimal" not in ALLOCATORS:
        print("optimal_gap: no 'optimal' allocator is registered here, so the column is empty")
    print(f"sum(range(10**7)): {statistics.median(loops) * 1000:.0f} ms in this run (median of {len(loops)})")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=list(rows[0]))
            out.writeheader()
            out.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
