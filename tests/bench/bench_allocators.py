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
from engine.alloc.optimal import is_proved
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
        runs: ReferenceRuns, analysis, **solver) -> dict:
    """One allocator's figures on one program at one budget (``solver``: ``optimal``'s time limit)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        allocation = allocate(name, program, budget, analysis, **solver)
        times.append(time.perf_counter() - t)
    plan = planned_and_run(allocation, runs, workload=workload, options=options)
    f = plan.predicted
    conflicts = static_conflicts(plan.program, plan.assignment, plan.spills, budget, allocation.analysis,
                                 allocation.spill_code)
    executed = None if f.spill_stores_executed is None else f.spill_stores_executed + f.spill_loads_executed
    return {"program": label, "budget": budget, "allocator": name, "maxlive": analysis.maxlive,
            "registers": f.registers, "spilled": f.spilled_values, "static_spill": f.spill_stores + f.spill_loads,
            "executed_spill": executed, "stack_bytes": f.local_bytes, "seconds": statistics.median(times),
            "verified": not conflicts, "proved": is_proved(allocation),
            "_allocation": allocation}


def _gaps(rows: list[dict], program, analysis, time_limit: float) -> None:
    """Each heuristic row's ``optimal_gap`` (and its ``gap_unit``) against the optimal row of the same program
    and budget, where optimal proved its result: :func:`engine.alloc.optimal.gap_rows`, the heuristics run again
    in optimal's spill-everywhere model (``spill_everywhere_executed``: their executed spill instructions
    there, by the trip-count model), so the gap compares like for like; None elsewhere."""
    from engine.alloc.optimal import gap_rows

    best = next(r for r in rows if r["allocator"] == "optimal")
    found = {g.allocator: g for g in gap_rows(program, best["budget"], best["_allocation"], time_limit, analysis)}
    for r in rows:
        g = found[r["allocator"]]
        r.update(optimal_gap=g.excess, gap_unit=g.unit, spill_everywhere_executed=g.executed_spill_instructions)


def run(small: bool = False, repeat: int = 1, limit: int | None = None, progress=None,
        optimal: float | None = None) -> list[dict]:
    """Every allocator's row on each program and budget; with ``optimal`` (seconds), an ``optimal`` row too
    (one run, that time limit) and each row's gap to it."""
    programs = sample(small)
    labels = list(programs)[:limit] if limit else list(programs)
    rows = []
    for label in labels:
        program, workload, options = programs[label]
        analysis = analyze(program)
        runs = ReferenceRuns()
        budgets = (255,) + (BUDGETS if label in BUDGET_SAMPLE or small else ())
        for budget in budgets:
            these = [row(label, program, workload, options, budget, name, repeat, runs, analysis)
                     for name in sorted(ALLOCATORS)]
            if optimal:
                these.append(row(label, program, workload, options, budget, "optimal", 1, runs, analysis,
                                 time_limit=optimal))
                _gaps(these, program, analysis, optimal)
            for r in these:
                r.pop("_allocation")
                r.setdefault("optimal_gap", None)
            rows += these
        if progress:
            progress(label)
    return rows


def _mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def _gap_cell(gaps: list, units: list) -> str:
    """The sum of the proved gaps by unit, and how many cases were proved."""
    if not gaps:
        return "—"
    parts = [f"{sum(g for g, u in zip(gaps, units) if u == unit):+d} {unit.split()[0]}"
             for unit in sorted(set(units), key=len)]
    return ", ".join(parts) + f" ({len(gaps)} proved)"


def summary(rows: list[dict], optimal: dict | None = None) -> list[str]:
    """Per budget and allocator: programs, mean registers, totals of the spill figures, seconds, and the gap to
    ``optimal`` where it proved its result. ``optimal``, (program, budget) -> the optimal row of another run, gives
    rows of a version without it (spill-everywhere, as every allocator was) their gap to that run's: registers
    where nothing spills, else executed spill instructions on the same input."""
    lines = ["| budget | allocator | programs | mean registers | regs = MAXLIVE | spilled values | static spill "
             "| executed spill | stack bytes | seconds | all verified | gap to optimal |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    names = sorted({r["allocator"] for r in rows} - {"optimal"}) + (["optimal"] if any(
        r["allocator"] == "optimal" for r in rows) else [])
    for budget in sorted({r["budget"] for r in rows}, reverse=True):
        for name in names:
            rs = [r for r in rows if r["budget"] == budget and r["allocator"] == name]
            if not rs:
                continue
            executed = [r["executed_spill"] for r in rs]
            if optimal is not None:
                pairs = [(r, optimal.get((r["program"], r["budget"]))) for r in rs]
                pairs = [(r, o) for r, o in pairs if o is not None and o["proved"]
                         and None not in (r["executed_spill"], o["executed_spill"])]
                gaps = [r["registers"] - o["registers"] if not o["spilled"] and not r["spilled"] else
                        r["executed_spill"] - o["executed_spill"] for r, o in pairs]
                units = ["registers" if not o["spilled"] and not r["spilled"] else "executed" for r, o in pairs]
            else:
                proved = [r for r in rs if r["optimal_gap"] is not None]
                gaps, units = [r["optimal_gap"] for r in proved], [r["gap_unit"] for r in proved]
            lines.append(
                f"| {budget} | {name} | {len(rs)} | {_mean(r['registers'] for r in rs):.1f} "
                f"| {sum(r['registers'] == r['maxlive'] for r in rs)} "
                f"| {sum(r['spilled'] for r in rs)} | {sum(r['static_spill'] for r in rs)} "
                f"| {sum(e for e in executed if e is not None)}{'' if None not in executed else ' (some not run)'} "
                f"| {sum(r['stack_bytes'] for r in rs)} | {sum(r['seconds'] for r in rs):.3f} "
                f"| {all(r['verified'] for r in rs)} "
                f"| {'proved ' + str(sum(r['proved'] for r in rs)) + ' of ' + str(len(rs)) if name == 'optimal' else _gap_cell(gaps, units)} |")
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
        rs = [r for r in rs if r["allocator"] in count]
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
    parser.add_argument("--optimal", type=float, metavar="SECONDS",
                        help="run optimal on every program and budget with this time limit, and each gap to it")
    parser.add_argument("--before", metavar="CSV", help="another version's rows (this script's --csv, e.g. run on "
                        "an older checkout) to print as a table of their own, with gaps to this run's optimal")
    args = parser.parse_args(argv)
    if args.before and not args.optimal:
        parser.error("--before prints gaps to this run's optimal: give --optimal SECONDS too")
    configure_process()
    loops = [yardstick()]
    rows = run(args.small, args.repeat, args.limit,
               progress=lambda label: print(f"  done: {label}", file=sys.stderr, flush=True), optimal=args.optimal)
    loops.append(yardstick())
    programs = len({r["program"] for r in rows})
    budgeted = len({r["program"] for r in rows if r["budget"] != 255})
    print(f"{programs} programs at budget 255, {budgeted} of them at budgets {', '.join(map(str, BUDGETS))}; "
          f"allocators: {', '.join(sorted({r['allocator'] for r in rows}))}")
    print("\n".join(summary(rows)))
    print("\n".join(wins(rows)))
    if args.optimal:
        print(f"gap to optimal ({args.optimal:g} s limit): the heuristics run again in optimal's spill-everywhere "
              "model (no splitting, no rematerialisation), registers where nothing spills, else executed spill "
              "instructions by the trip-count model; the executed spill column is the full heuristic's, on the "
              "execution check's deepest input")
    else:
        print("gap to optimal: not run (--optimal SECONDS runs it)")
    if args.before:
        before = _read_rows(args.before)
        best = {(r["program"], r["budget"]): r for r in rows if r["allocator"] == "optimal"}
        print(f"\n{args.before} ({len(before)} rows), gaps to this run's optimal where it proved its result:")
        print("\n".join(summary(before, best)))
    print(f"sum(range(10**7)): {statistics.median(loops) * 1000:.0f} ms in this run (median of {len(loops)})")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.DictWriter(f, fieldnames=list(rows[0]))
            out.writeheader()
            out.writerows(rows)
    return rows


def _read_rows(path: str) -> list[dict]:
    """Rows written by ``--csv``, their numbers and flags typed again."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("budget", "maxlive", "registers", "spilled", "static_spill", "stack_bytes"):
            r[k] = int(r[k])
        r["executed_spill"] = int(r["executed_spill"]) if r["executed_spill"] not in ("", "None") else None
        r["seconds"] = float(r["seconds"])
        r["verified"], r["proved"] = r["verified"] == "True", r.get("proved") == "True"
    return rows


if __name__ == "__main__":
    main()
