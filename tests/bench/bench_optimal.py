"""Benchmark: the optimal allocator's solvers compared, and the program sizes it proves optimal in 10 s and 60 s.

Part 1 (``solvers``) builds the same 0-1 models (engine.alloc.optimal: the registers-live relaxation, the
full spill model, the colouring model) for GEMM and MHA programs and solves each with OR-Tools CP-SAT and with
HiGHS (scipy.optimize.milp), printing status, objective, bound and seconds of each, each the median of
``--repeat`` runs. Part 2 (``sizes``) runs ``allocate("optimal", ...)`` on GEMM and MHA programs at budgets
255, MAXLIVE - 4 and MAXLIVE / 2 with each time limit of ``--limits``, and prints, per limit, whether it was
proved and the largest program (instructions, values) proved. Every figure is printed beside the time of
``sum(range(10**7))`` measured in the same run.

Part 3 (``--gaps``, on its own) prints every heuristic's gap to ``optimal`` on the programs of part 2.

Run: ``python -m tests.bench.bench_optimal [--tiny] [--limits 10,60] [--repeat 3] [--workers N] [--gaps]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from engine.alloc import allocate
from engine.alloc.optimal import (
    _symmetry_fix,
    executed_spill_instructions,
    is_proved,
    pressure_model,
    register_model,
    registers_of,
    solve,
    spill_costs,
    spill_model,
)
from engine.analysis.liveness import analyze
from engine.analysis.respill import analyze_spilled
from engine.ir.parser import parse
from engine.ir.spill import first_free_slot, spill_insertion
from engine.workloads.gemm import Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha
from tests.engine.test_optimal import CYCLE5

NOTE_MHA = Mha(heads=32, batch=64, head_dim=64, groups=4)


def reference_loop() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def programs(tiny: bool) -> list[tuple[str, object]]:
    """(label, program) pairs, smallest first."""
    out = [("cycle5", parse(CYCLE5)), ("gemm 2x2x2", build_gemm(Gemm(2, 2, 2))[0])]
    if tiny:
        return out
    out += [("gemm 4x4x4", build_gemm(Gemm(4, 4, 4))[0]), ("gemm 8x8x8", build_gemm(Gemm(8, 8, 8))[0]),
            ("gemm 16x16x16", build_gemm(Gemm(16, 16, 16))[0]),
            ("mha note", build_mha(NOTE_MHA)[0]), ("mha note head-shared", build_mha(NOTE_MHA, ("head-shared",))[0]),
            ("mha 128/256/8", build_mha(Mha(heads=128, batch=64, head_dim=256, groups=8))[0])]
    return out


def _models(label, program, budget):
    """The models optimal builds for ``program`` at ``budget``: (name, model) pairs."""
    a = analyze(program)
    cost = spill_costs(a)
    relaxed, columns = pressure_model(a, budget, cost)
    out = [(f"{label} @{budget}: registers-live relaxation", relaxed)]
    if len(program.instructions) <= 400:
        out.append((f"{label} @{budget}: full spill model", spill_model(a, budget, cost, set())[0]))
    if budget >= a.maxlive:
        out.append((f"{label}: colouring model", register_model(a, a.maxlive + 2, a.maxlive, _symmetry_fix(a))[0]))
    else:  # colour the relaxation's choice exactly (what optimal does when the heuristics do not colour it)
        sol = solve(relaxed, "cp-sat", 60)
        chosen = sorted(v for v, c in columns.items() if sol.values and sol.values[c])
        if chosen:
            slot = first_free_slot(program)
            q = spill_insertion(program, {a.names[v]: slot + k for k, v in enumerate(chosen)})
            b = analyze_spilled(a, q)
            out.append((f"{label} @{budget}: colouring its relaxation's choice",
                        register_model(b, budget, min(b.maxlive, budget), _symmetry_fix(b))[0]))
    return out


def compare_solvers(tiny: bool, repeat: int, limit: float, workers: int | None) -> list[dict]:
    cases = [("cycle5", parse(CYCLE5), 4), ("gemm 2x2x2", build_gemm(Gemm(2, 2, 2))[0], 6)]
    if not tiny:
        cases += [("gemm 4x4x4", build_gemm(Gemm(4, 4, 4))[0], 16), ("gemm 8x8x8", build_gemm(Gemm(8, 8, 8))[0], 44),
                  ("mha note", build_mha(NOTE_MHA)[0], 32),
                  ("mha note head-shared", build_mha(NOTE_MHA, ("head-shared",))[0], 32)]
    rows = []
    for label, program, budget in cases:
        for name, model in _models(label, program, budget):
            row = {"model": name, "columns": model.size, "rows": len(model.rows)}
            for solver in ("cp-sat", "highs"):
                runs = [solve(model, solver, limit, workers) for _ in range(repeat)]
                row[solver] = {"status": runs[0].status, "objective": runs[0].objective, "bound": runs[0].bound,
                               "seconds": statistics.median(r.seconds for r in runs)}
            rows.append(row)
            print(_solver_line(row), flush=True)
    return rows


def _fmt(x):
    return "-" if x is None else f"{x:g}"


def _solver_line(row: dict) -> str:
    parts = [f"{s}: {row[s]['status']} {_fmt(row[s]['objective'])} (bound {_fmt(row[s]['bound'])}) "
             f"{row[s]['seconds']:.2f} s" for s in ("cp-sat", "highs")]
    return f"  {row['model']} [{row['columns']} columns, {row['rows']} rows]: " + "; ".join(parts)


def sizes(tiny: bool, limits: list[float], workers: int | None) -> dict:
    results: dict = {limit: [] for limit in limits}
    for label, program in programs(tiny):
        a = analyze(program)
        budgets = sorted({255, max(a.maxlive - 4, 4), max(a.maxlive // 2, 4)}, reverse=True)
        for budget in budgets:
            for limit in limits:
                started = time.perf_counter()
                found = allocate("optimal", program, budget, a, time_limit=limit, workers=workers)
                seconds = time.perf_counter() - started
                proved = is_proved(found)
                row = {"program": label, "instructions": len(program.instructions), "values": len(a.names),
                       "maxlive": a.maxlive, "budget": budget, "limit": limit, "seconds": seconds,
                       "proved": proved, "registers": registers_of(found),
                       "executed_spills": executed_spill_instructions(found), "note": found.notes[-1]}
                results[limit].append(row)
                print(f"  {label} ({row['instructions']} instructions, {row['values']} values, MAXLIVE "
                      f"{a.maxlive}) @{budget}, limit {limit:g} s: {seconds:.2f} s, "
                      f"{'proved' if proved else 'NOT proved'}: {found.notes[-1]}", flush=True)
                if proved:
                    break  # a longer limit proves it too
    return results


def gaps(tiny: bool, limit: float) -> dict:
    """Part 3 (``--gaps``): every fast allocator's gap to ``optimal`` (engine.alloc.optimal.gap_rows) on the
    programs and budgets of part 2, and per heuristic the median and mean gap over the cases ``optimal``
    proved: in executed spill instructions where the optimum spills, in registers where nothing spills."""
    from engine.alloc.optimal import gap_rows

    per: dict = {}
    for label, program in programs(tiny):
        a = analyze(program)
        for budget in sorted({255, max(a.maxlive - 4, 4), max(a.maxlive // 2, 4)}, reverse=True):
            rows = gap_rows(program, budget, time_limit=limit, analysis=a)
            best, line = rows[-1], []
            if rows[0].gap is None:
                print(f"  {label} @{budget}: optimal not proved in {limit:g} s ({best.executed_spill_instructions} "
                      "executed spill instructions found)", flush=True)
                continue
            kind = "spill" if best.spilled_values else "registers"
            least = None
            for r in rows[:-1]:
                mine, theirs = ((r.executed_spill_instructions, best.executed_spill_instructions) if kind == "spill"
                                else (r.registers, best.registers))
                pct = 100 * (mine - theirs) / theirs if theirs and not (kind == "registers" and r.spilled_values) \
                    else None
                if r.allocator != "naive" and pct is not None:
                    per.setdefault((r.allocator, kind), []).append(pct)
                    least = pct if least is None else min(least, pct)
                line.append(f"{r.allocator} {r.registers} r / {r.executed_spill_instructions} x"
                            + (f" ({pct:+.0f}%)" if pct is not None else " (spills)"))
            if least is not None:
                per.setdefault(("best heuristic", kind), []).append(least)
            print(f"  {label} @{budget}: optimal {best.registers} r / {best.executed_spill_instructions} x; "
                  + "; ".join(line), flush=True)
    for (name, kind), v in sorted(per.items()):
        print(f"  {name}, gap in {kind}: {len(v)} cases, median {statistics.median(v):.1f}%, mean "
              f"{statistics.mean(v):.1f}%, max {max(v):.0f}%", flush=True)
    return per


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="two small programs only (the test's run)")
    parser.add_argument("--limits", default="10,60", help="time limits of part 2, comma-separated seconds")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each solver on each model (median)")
    parser.add_argument("--solver-limit", type=float, default=60.0, help="seconds per solver run in part 1")
    parser.add_argument("--workers", type=int, default=None, help="CP-SAT workers (default: its own choice)")
    parser.add_argument("--skip-solvers", action="store_true", help="part 2 only")
    parser.add_argument("--gaps", action="store_true",
                        help="part 3 only: each heuristic's gap to optimal (limit: the last of --limits)")
    args = parser.parse_args(argv)
    limits = [float(x) for x in args.limits.split(",")]
    before = reference_loop()
    print(f"reference loop sum(range(10**7)): {before * 1000:.0f} ms", flush=True)
    out: dict = {"reference": [before]}
    if args.gaps:
        print("part 3: each heuristic's gap to optimal (r: registers, x: executed spill instructions)", flush=True)
        out["gaps"] = gaps(args.tiny, limits[-1])
        print(f"reference loop sum(range(10**7)) again: {reference_loop() * 1000:.0f} ms", flush=True)
        return out
    if not args.skip_solvers:
        print("part 1: the same models, CP-SAT against HiGHS (scipy.optimize.milp)", flush=True)
        out["solvers"] = compare_solvers(args.tiny, args.repeat, args.solver_limit, args.workers)
    print(f"part 2: optimal proved within {', '.join(f'{x:g} s' for x in limits)}", flush=True)
    out["sizes"] = sizes(args.tiny, limits, args.workers)
    for limit, rows in out["sizes"].items():
        done = [r for r in rows if r["proved"] and r["limit"] == limit]
        big = max(done, key=lambda r: r["instructions"], default=None)
        print(f"within {limit:g} s: {len(done)} of {len({(r['program'], r['budget']) for r in rows})} cases proved"
              + (f"; largest {big['program']} @{big['budget']}: {big['instructions']} instructions, "
                 f"{big['values']} values" if big else ""), flush=True)
    after = reference_loop()
    out["reference"].append(after)
    print(f"reference loop sum(range(10**7)) again: {after * 1000:.0f} ms", flush=True)
    return out


if __name__ == "__main__":
    main()
