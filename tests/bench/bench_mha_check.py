"""Benchmark: the execution check of one plan of the design note's MHA example, beside the reference loop.

The example is heads 32, batch 64, head_dim 64, groups 4 (engine.workloads.mha;
README), allocated by each allocator at the default budget. Per plan it
times, as the median of ``--repeat`` cold runs (a fresh memo of reference
runs each time, as one ``regtune check`` has):

- ``check``: :func:`engine.check.verify.verify_execution` alone: the seed
  choice and reference runs of the program without spill code, then the
  allocated program's runs (the figure the issue sets at most 3x the loop);
- ``predict + check``: the executed-spill figures
  (:func:`engine.predict.execution_figures`) and then the check sharing their
  reference runs, as ``regtune allocate`` does.

Beside them, ``sum(range(10**7))`` timed in the same run (median of as many
runs), so a slow machine can be told from a slow engine.

Run: ``python -m tests.bench.bench_mha_check [--repeat N]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from engine.alloc import ALLOCATORS, allocate
from engine.base.limits import MAX_REGISTERS
from engine.base.process import configure_process
from engine.check.verify import ReferenceRuns, verify_execution
from engine.predict import execution_figures, predicted_plan
from engine.workloads import input_model
from engine.workloads.mha import Mha, build_mha

EXAMPLE = Mha(heads=32, batch=64, head_dim=64, groups=4)


def reference_loop() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def _timed(fn):
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _predict_and_check(plan, allocation, model):
    """The executed-spill figures, then the check sharing their reference runs (as ``regtune allocate``)."""
    runs = ReferenceRuns()
    figures = execution_figures(plan, allocation.original, allocation.spill_code, runs)
    return figures, verify_execution(plan.program, plan.assignment, plan.spills, model=model, runs=runs,
                                     original=allocation.original)


def measure(repeat: int) -> dict:
    program, options = build_mha(EXAMPLE)
    model = input_model(EXAMPLE.as_dict(), options)
    rows, loops = {}, []
    for name in sorted(ALLOCATORS):
        allocation = allocate(name, program, MAX_REGISTERS)
        plan = predicted_plan(allocation, workload=EXAMPLE.as_dict(), options=options)
        check_s, both_s = [], []
        for _ in range(repeat):
            loops.append(reference_loop())
            check, seconds = _timed(lambda a=allocation, p=plan: verify_execution(
                p.program, p.assignment, p.spills, model=model, runs=ReferenceRuns(), original=a.original))
            check_s.append(seconds)
            (figures, _), seconds = _timed(lambda a=allocation, p=plan: _predict_and_check(p, a, model))
            both_s.append(seconds)
        rows[name] = {"check": statistics.median(check_s), "both": statistics.median(both_s),
                      "instructions": len(plan.program.instructions), "spilled": len(plan.spills),
                      "seeds": check.seeds, "verified": check.verified, "figures": figures}
    return {"loop": statistics.median(loops), "plans": rows, "instructions": len(program.instructions)}


def report(r: dict, repeat: int) -> str:
    loop = r["loop"]
    lines = [(f"MHA {EXAMPLE.heads}h b{EXAMPLE.batch} d{EXAMPLE.head_dim} g{EXAMPLE.groups} "
              f"({r['instructions']} instructions), median of {repeat} cold runs; "
              f"reference loop sum(range(10**7)) {loop * 1000:.0f} ms in this run")]
    for name, p in r["plans"].items():
        lines.append(f"  {name:<15} check {p['check'] * 1000:7.0f} ms = {p['check'] / loop:5.1f}x loop "
                     f"(target: at most 3x)   predict + check {p['both'] * 1000:7.0f} ms = {p['both'] / loop:5.1f}x  "
                     f"({p['instructions']} instructions, {p['spilled']} spilled, seeds {p['seeds']}, "
                     f"verified {p['verified']}, {p['figures']['spill_loads_executed']} spill loads run)")
    worst = max(p["check"] for p in r["plans"].values())
    lines.append(f"  slowest check {worst * 1000:.0f} ms = {worst / loop:.1f}x the reference loop")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    configure_process()   # the settings the regtune command runs with
    r = measure(args.repeat)
    print(report(r, args.repeat), flush=True)
    return r


if __name__ == "__main__":
    main()
