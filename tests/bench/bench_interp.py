"""Benchmark: the interpreter's two paths, and where compiling a program pays.

For each program (the 5,000-instruction straight-line and loop-shaped
programs of tests/bench/programs.py, and the design note's MHA example,
without spill code and naive's allocation with it) it times, as medians of
``--repeat`` runs beside the reference loop ``sum(range(10**7))`` of the same
run: decoding, compiling the decoded program
(:mod:`engine.check.interp_compiled`), and the three seeds an execution check
always runs, in lockstep, on the loop and on the compiled function. The
break-even is the compile cost over what compiling saves per lockstep step,
in executions per instruction: a program that runs its instructions fewer
times than that is faster on the loop. The interpreter compiles a program
whose counted loops make every run execute its instructions at least
:data:`engine.check.interp.COMPILE_AT` times (:func:`engine.ir.cfg.run_bound`)
and runs any other on the loop; this benchmark is the measurement behind that
choice.

Run: ``python -m tests.bench.bench_interp [--repeat N]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from engine.alloc import allocate
from engine.base.process import configure_process
from engine.check.interp import _FIXED_FUNCTIONS, decode, run_together
from engine.check.interp_compiled import Compiled
from engine.ir.parser import parse
from engine.workloads import input_model
from engine.workloads.mha import build_mha
from tests.bench.bench_mha_check import EXAMPLE, reference_loop
from tests.bench.programs import loop_shaped, straight_line

SEEDS = (0, 1, 2)


def _programs():
    mha, options = build_mha(EXAMPLE)
    naive = allocate("naive", mha, 255)
    model = input_model(EXAMPLE.as_dict(), options)
    return [("straight-line 5k", parse(straight_line()), None, None),
            ("loop-shaped 5k", parse(loop_shaped()), None, None),
            ("MHA example", mha, None, model),
            ("MHA example, naive", naive.program, naive.assignment, model)]


def _timed(fn):
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def measure(repeat: int) -> dict:
    rows, loops = [], []
    for label, program, registers, model in _programs():
        model_kw = {} if model is None else {"model": model}
        times: dict = {"decode": [], "compile": [], "loop": [], "compiled": []}
        for _ in range(repeat):
            loops.append(reference_loop())
            decoded, t = _timed(lambda p=program, r=registers: decode(p, r))
            times["decode"].append(t)
            _, t = _timed(lambda d=decoded: Compiled(d[0], d[1], _FIXED_FUNCTIONS))
            times["compile"].append(t)
            plain, t = _timed(lambda p=program, r=registers, kw=model_kw: run_together(p, SEEDS, r, compiled_path=False,
                                                                                      **kw))
            times["loop"].append(t)
            fast, t = _timed(lambda p=program, r=registers, d=decoded, kw=model_kw: run_together(
                p, SEEDS, r, decoded=d, compiled_path=True, **kw))
            times["compiled"].append(t)
            assert [t.stores for t in plain] == [t.stores for t in fast]
        m = {k: statistics.median(v) for k, v in times.items()}
        n, steps = len(program.instructions), plain[0].steps
        saved = (m["loop"] - (m["compiled"] - m["compile"])) / steps   # seconds saved per lockstep step (the
        # compiled run compiles its own decoded program: its time less the compile is the run)
        rows.append({"label": label, "instructions": n, "steps": steps, **m,
                     "break_even": m["compile"] / saved / n if saved > 0 else float("inf")})
    return {"loop": statistics.median(loops), "rows": rows}


def report(r: dict, repeat: int) -> str:
    loop = r["loop"]
    lines = [(f"interpreter paths, 3 seeds in lockstep, median of {repeat} runs; reference loop "
              f"sum(range(10**7)) {loop * 1000:.0f} ms in this run")]
    for row in r["rows"]:
        lines.append(f"  {row['label']:<20} {row['instructions']:5d} instructions, {row['steps']:7d} steps a seed: "
                     f"decode {row['decode'] * 1000:5.0f} ms, compile {row['compile'] * 1000:5.0f} ms "
                     f"({row['compile'] / row['instructions'] * 1e6:.0f} us an instruction); run on the loop "
                     f"{row['loop'] * 1000:6.0f} ms = {row['loop'] / loop:4.1f}x, compiled {row['compiled'] * 1000:6.0f} ms"
                     f" = {row['compiled'] / loop:4.1f}x; compiling pays from {row['break_even']:.1f} lockstep "
                     f"executions an instruction (this program: {row['steps'] / row['instructions']:.1f})")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    configure_process()
    r = measure(args.repeat)
    print(report(r, args.repeat), flush=True)
    return r


if __name__ == "__main__":
    main()
