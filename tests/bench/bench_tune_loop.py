"""Benchmark: the tuning loop, edit to live ptxas figures, as the window runs it (gui/qt/qt_live.py).

For GEMM 8x8x8, GEMM 16x16x16 and the design note's MHA example (linear-scan at budget 255) it applies one
hand edit (a value moved to a register no value holds: the plan's count goes up by one), then asks for the
plan-PTX figures of the edited plan (:func:`kernels.pipeline.plan_ptx_or_why`, what the window's job runs):
emission, ptxas per arch at the plan cap and with no cap, nvdisasm, cold (a fresh cache folder) and cached
(the same request again). Beside them, in the same run: the same ptxas and nvdisasm runs on the same PTX
called directly, the same way (side by side in a pool of one thread per core, as plan_ptx_figures runs them), which is the tools' own time;
our share is the cold figure less that. And ``sum(range(10**7))``, this machine's pace right now. Medians of
``--repeat`` runs.

The first arch's ptxas figures (both caps) reach the live panel before the rest (``on_ptxas``): the line
gives edit to those too.

Target (issue 21): edit to figures under 1 s for GEMM 16x16x16 and the MHA example; our share at most the
tools' own time.

Run: ``python -m tests.bench.bench_tune_loop [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from engine.alloc.hand import Assign, apply_edit
from engine.plan import registers_used
from kernels.build import CAPS, cap_registers
from kernels.pipeline import plan_ptx_or_why
from kernels.plan_ptx import plan_ptx, tool_threads
from kernels.toolchain import nvdisasm, ptxas
from tests.bench.bench_kernels import plans
from tests.bench.bench_plan_ptx import _in_fresh_cache, yardstick

ARCHS = ("sm_80", "sm_90")


def edited(plan):
    """The plan with one value moved to a free register (the edit a tuner makes to see whether ptxas follows)."""
    name = next(n for n, regs in plan.assignment.items() if len(regs) == 1)
    return apply_edit(plan, Assign(name, (registers_used(plan.assignment),))).plan


def tools_alone(plan) -> float:
    """Seconds of the same ptxas and nvdisasm runs on the same PTX, called directly, side by side."""
    first = plan_ptx(plan, ARCHS[0])
    runs = [(first.for_arch(a), cap) for a in ARCHS for cap in CAPS]

    def one(run):
        ptx, cap = run
        _, cubin = ptxas(ptx.text, ptx.arch, cap_registers(cap, ptx.arch, ptx.registers))
        if cap == "plan":
            nvdisasm(cubin)

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(len(runs), tool_threads())) as pool:     # as plan_ptx_figures runs them
        list(pool.map(one, runs))
    return time.perf_counter() - t


def _once(plan) -> dict:
    t = time.perf_counter()
    after = edited(plan)
    edit = time.perf_counter() - t
    heard: dict = {}
    t = time.perf_counter()
    cold = plan_ptx_or_why(after, ARCHS, on_ptxas=lambda a, cap, f: heard.setdefault((a, cap), time.perf_counter() - t))
    cold_s = time.perf_counter() - t
    first = max(heard[ARCHS[0], cap] for cap in CAPS)      # the first arch's ptxas figures, both caps
    t = time.perf_counter()
    again = plan_ptx_or_why(after, ARCHS)
    cached_s = time.perf_counter() - t
    assert not cold.cached and again.cached, (cold, again)
    return {"edit": edit, "cold": cold_s, "first": first, "cached": cached_s, "stages": cold.timings_ms,
            "tools": tools_alone(after), "registers": {a: cold.ptxas[a].registers for a in ARCHS},
            "planned": registers_used(after.assignment)}


def measure(plan, repeat: int) -> dict:
    runs = [_in_fresh_cache(lambda: _once(plan)) for _ in range(max(1, repeat))]
    yard = [yardstick() for _ in range(max(1, repeat))]
    med = {k: statistics.median(r[k] for r in runs) for k in ("edit", "cold", "first", "cached", "tools")}
    stages = {k: statistics.median(r["stages"][k] for r in runs) for k in runs[0]["stages"]}
    return {**med, "stages": stages, "yardstick": statistics.median(yard), "repeat": len(runs),
            "instructions": len(plan.program.instructions), "registers": runs[-1]["registers"],
            "planned": runs[-1]["planned"], "share": med["edit"] + med["cold"] - med["tools"]}


def line(label: str, r: dict) -> str:
    s = r["stages"]
    tools = "; ".join(f"{a}: ptxas {s[f'ptxas {a} plan cap']:.0f}/{s[f'ptxas {a} no cap']:.0f} ms (plan cap/no cap), "
                      f"nvdisasm {s[f'nvdisasm {a}']:.0f} ms" for a in ARCHS)
    regs = ", ".join(f"{a} {n}" for a, n in r["registers"].items())
    return (f"{label}: {r['instructions']} IR instructions; edit {r['edit'] * 1000:.0f} ms, emission "
            f"{s['emit']:.0f} ms; {tools}; edit to the first ptxas figures ({ARCHS[0]}, both caps) "
            f"{r['edit'] + r['first']:.2f} s; edit to figures cold {r['edit'] + r['cold']:.2f} s, cached "
            f"{(r['edit'] + r['cached']) * 1000:.0f} ms; the tools alone {r['tools']:.2f} s, our share "
            f"{r['share']:.2f} s ({r['share'] / r['tools']:.2f}x the tools); median of {r['repeat']}; "
            f"sum(range(10**7)) {r['yardstick'] * 1000:.0f} ms in this run; plan {r['planned']} registers, "
            f"ptxas at the plan cap {regs}")


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"edit to live plan-PTX figures for {', '.join(ARCHS)}, median of {args.repeat} "
          "(each cold run in a fresh cache)")
    results = []
    for label, plan in plans().items():
        r = measure(plan, args.repeat)
        r["label"] = label
        results.append(r)
        print(line(label, r))
    return results


if __name__ == "__main__":
    main()
