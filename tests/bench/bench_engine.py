"""Benchmark: the engine pipeline on 5,000-instruction programs.

Prints, as the median of several runs, the time to parse, analyse, build
the interference graph and run all four allocators, each followed by the
prediction stage (static and executed-spill figures) and verification
(static check and execution on 3 random inputs), on a straight-line program
and a loop-shaped one, each with about 300 values live at the peak; and
the interference graph's construction beside the all-pairs construction it
replaces, measured in the same run.

Run: ``python -m tests.bench.bench_engine [--repeat N]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from engine.alloc import ALLOCATORS, allocate
from engine.analysis.interference import build_interference, build_interference_all_pairs
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from engine.predict import planned_and_run
from engine.base.process import configure_process
from engine.check.verify import ReferenceRuns, static_conflicts, verify_execution
from tests.bench.programs import loop_shaped, straight_line

PROGRAMS = {"straight-line": straight_line, "loop-shaped": loop_shaped}


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def pipeline_once(text: str) -> dict:
    """One cold run of the whole pipeline; seconds per stage.

    The previous run's objects are collected first (outside the timing),
    so each run starts from the same heap instead of one grown by its
    predecessor's garbage (programs and their analyses form cycles).
    """
    gc.collect()
    times = {}
    program, times["parse"] = _timed(lambda: parse(text))
    analysis, times["analyse"] = _timed(lambda: analyze(program))
    _, times["interference"] = _timed(lambda: analysis.interference)
    runs = ReferenceRuns()     # reference runs shared by the plans of this program, as the regtune command shares them
    for name in sorted(ALLOCATORS):
        allocation, times[name] = _timed(lambda: allocate(name, program, 255, analysis))
        plan, times[f"{name} predict"] = _timed(lambda: planned_and_run(allocation, runs))
        conflicts, times[f"{name} static"] = _timed(
            lambda: static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget, allocation.analysis,
                                   allocation.spill_code))
        assert conflicts == [], conflicts[:1]
        _, times[f"{name} execution"] = _timed(
            lambda: verify_execution(plan.program, plan.assignment, plan.spills, runs=runs,
                                     original=allocation.original))
        times[f"{name} figures"] = plan.predicted
    return times


def measure(name: str, repeat: int) -> dict:
    text = PROGRAMS[name]()
    runs = [pipeline_once(text) for _ in range(repeat)]
    stages = [k for k in runs[0] if not k.endswith("figures")]
    median = {k: statistics.median(r[k] for r in runs) for k in stages}
    program = parse(text)
    analysis = analyze(program)
    fast = [_timed(lambda: build_interference(analysis))[1] for _ in range(repeat)]
    slow = [_timed(lambda: build_interference_all_pairs(analysis))[1] for _ in range(max(1, repeat // 2))]
    graph = build_interference(analysis)
    reference = build_interference_all_pairs(analysis)
    same = set(map(tuple, graph.edges.tolist())) == set(map(tuple, reference.edges.tolist()))
    _, networkx_s = _timed(lambda: graph.graph)
    return {
        "name": name, "instructions": len(program.instructions), "values": len(analysis.names),
        "maxlive": analysis.maxlive, "edges": graph.n_edges, "median": median,
        "total": sum(median.values()), "graph": statistics.median(fast), "all_pairs": statistics.median(slow),
        "same_graph": same, "networkx": networkx_s,
        "figures": {a: runs[0][f"{a} figures"] for a in sorted(ALLOCATORS)},
    }


def report(r: dict, repeat: int) -> str:
    m = r["median"]
    lines = [f"{r['name']}: {r['instructions']} instructions, {r['values']} values, MAXLIVE {r['maxlive']}, "
             f"{r['edges']} interference edges (median of {repeat} cold runs, budget 255)"]
    lines += [f"  {'parse':<26}{m['parse'] * 1000:8.1f} ms", f"  {'analyse':<26}{m['analyse'] * 1000:8.1f} ms",
              f"  {'interference graph (CSR)':<26}{m['interference'] * 1000:8.1f} ms"]
    for a in sorted(ALLOCATORS):
        f = r["figures"][a]
        lines.append(f"  {a:<26}{m[a] * 1000:8.1f} ms  + predict {m[a + ' predict'] * 1000:6.1f} ms"
                     f"  + static {m[a + ' static'] * 1000:6.1f} ms"
                     f"  + execution {m[a + ' execution'] * 1000:7.1f} ms   ({f['registers']} registers, "
                     f"{f['spilled_values']} spilled, {f['spill_stores']} st.local / {f['spill_loads']} ld.local)")
    lines.append(f"  {'TOTAL':<26}{r['total'] * 1000:8.1f} ms  (target: under 1000 ms)")
    lines.append(f"  interference graph: {r['graph'] * 1000:.1f} ms from segments vs {r['all_pairs'] * 1000:.1f} ms "
                 f"all pairs = {r['all_pairs'] / r['graph']:.0f}x faster (target: 10x); same edges: {r['same_graph']}")
    lines.append(f"  networkx.Graph for display (built on demand, not in TOTAL): {r['networkx'] * 1000:.1f} ms")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    configure_process()   # the settings the regtune command runs with
    results = []
    for name in PROGRAMS:
        r = measure(name, args.repeat)
        print(report(r, args.repeat), flush=True)
        results.append(r)
    return results


if __name__ == "__main__":
    main()
