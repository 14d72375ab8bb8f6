"""Benchmark: what each way of keeping a plan's load placement through NVVM costs (kernels.codegen.LOAD_ORDERS).

Left alone ("nvvm"), NVVM places each global load at its first use, so a
load-all-first plan's PTX equals k-outer's. The other orders keep the
plan's placement: "barrier" (an empty inline-asm compiler barrier after each
run of loads, the default), "fence" (``membar.cta`` there) and "volatile"
(``ld.volatile`` loads). For a fixed set of GEMM plans (DSatur at budget
255), each order is built with the real toolchain (NVVM, then ptxas at the
plan cap and with no ``-maxrregcount``, nvdisasm), and one line per plan
and order prints:

- how much of the plan's load placement the PTX keeps (read from the PTX's
  line info, :func:`kernels.sass_lines.ptx_ir_of`), and the SASS's ``LDG``
  instructions at the plan cap (read from the SASS's line info,
  :mod:`kernels.sass_lines`): "order" (the plan's order), "runs" (each load
  in its run of loads, the runs in order, the order within a run aside) or
  "no"; and how far ahead of their uses the loads are, in the plan, the
  PTX and the SASS (:func:`ahead`: the most loaded values waiting for their
  first use at once);
- PTX instructions, and SASS instructions at the plan cap (the ``MEMBAR``
  and ``LDG...STRONG`` among them);
- ptxas's registers and spill bytes at the plan cap and with no cap;
- those against "nvvm", the reference built in the same run.

The figures are static counts from NVIDIA's tools, the same on every run:
what a fence or a volatile load costs at run time needs a GPU and is not
measured here. The NVVM
time printed is the median of ``--repeat`` compiles (the build cache is not
used; 1 by default, a single compile) and its ratio against "nvvm"'s.

Run: ``python -m tests.bench.bench_load_order [--arch sm_80] [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics

from engine.alloc import allocate
from engine.model.arch import load_arch
from engine.plan import Plan, registers_used
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from kernels.build import build_plan
from kernels.codegen import LOAD_ORDERS
from kernels.sass_lines import PTX_GLOBAL_LOADS, ptx_ir_lines, ptx_ir_of

#: (M, N, K, tile or None for the default, schedule): small and large tiles, both schedules
PLANS = ((8, 8, 8, (4, 4), "load-all-first"), (8, 8, 8, (4, 4), "k-outer"), (8, 8, 8, None, "load-all-first"),
         (16, 16, 16, (4, 4), "load-all-first"), (16, 16, 16, None, "k-outer"), (12, 8, 16, None, "load-all-first"))
REFERENCE = "nvvm"


def plan_of(m: int, n: int, k: int, tile, schedule: str) -> Plan:
    w = Gemm(m, n, k)
    program, options = build_gemm(w, tile, schedule)
    return planned_and_run(allocate("dsatur", program, 255), workload=w.as_dict(), options=options)


def ptx_instructions(ptx: str) -> int:
    """PTX instructions: lines of the function body that are not directives, labels, braces or comments."""
    count = 0
    for line in ptx.splitlines():
        text = line.strip()
        if text and text.endswith(";") and not text.startswith((".", "//", "{", "}")):
            count += 1
    return count


def measure(plan: Plan, order: str, arch: str, repeat: int) -> dict:
    """One plan built with one load order: the counts above (``repeat`` uncached NVVM compiles, median ms)."""
    times, build = [], None
    for _ in range(max(1, repeat)):
        build = build_plan(plan, (arch,), use_cache=False, load_order=order)
        times.append(build.timings_ms["nvvm"])
    planned = [i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "ld.global"]
    in_ptx = ptx_ir_of(build.ptx_lines, PTX_GLOBAL_LOADS, build.source.ir_of_line())
    b = build.archs[arch]
    opcodes = b.sass.opcodes()
    in_sass = [b.ir_map.ir[row] if b.ir_map is not None else None
               for row, op in enumerate(opcodes) if op.startswith("LDG")]
    run = _runs(plan)
    instructions = plan.program.instructions
    ptx_events = [(ir, text.startswith(PTX_GLOBAL_LOADS))
                  for ir, text in ptx_ir_lines(build.ptx_lines, build.source.ir_of_line())]
    sass_events = [(b.ir_map.ir[row] if b.ir_map is not None else None, op.startswith("LDG"))
                   for row, op in enumerate(opcodes)]
    return {"kept": _kept(in_ptx, planned, run), "loads": len(in_ptx), "statements": build.source.load_barriers,
            "sass_kept": _kept(in_sass, planned, run), "sass_loads": len(in_sass),
            "ahead": {"plan": ahead([(i, True) for i in range(len(instructions))], instructions),
                      "ptx": ahead(ptx_events, instructions), "sass": ahead(sass_events, instructions)},
            "membar": sum(op.startswith("MEMBAR") for op in opcodes),
            "strong": sum(op.startswith("LDG") and ".STRONG." in op for op in opcodes),
            "ptx": ptx_instructions(build.ptx), "sass": len(b.sass.texts),
            "at_plan": b.report.registers, "cap": b.report.max_registers,
            "spill_bytes": b.report.spill_store_bytes + b.report.spill_load_bytes,
            "no_cap": b.compiler.registers,
            "no_cap_spill_bytes": b.compiler.spill_store_bytes + b.compiler.spill_load_bytes,
            "nvvm_ms": statistics.median(times)}


def ahead(events, instructions) -> int:
    """The most loaded values waiting for their first use at once, walking ``events`` ((IR instruction or
    None, whether the event is a global load) in the order of the program, PTX or SASS): a load adds the value
    it loads, any event of an instruction that reads a waiting value takes it off. How far ahead of their uses
    the loads are placed: the plan's figure against its PTX's and SASS's.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %a:u64 = param A\\n  %x:f32 = ld.global %a, 0\\n"
    ...           "  %y:f32 = ld.global %a, 4\\n  %z:f32 = add %x, %y\\n  exit\\n")
    >>> code = p.instructions
    >>> ahead([(i, True) for i in range(5)], code), ahead([(1, True), (3, False), (2, True), (3, False)], code)
    (2, 1)
    """
    waiting, most = set(), 0
    for ir, is_load in events:
        if ir is None:
            continue
        ins = instructions[ir]
        waiting.difference_update(ins.uses)
        if is_load and ins.opcode == "ld.global":
            waiting.add(ins.defs[0].name)
            most = max(most, len(waiting))
    return most


def _runs(plan: Plan) -> dict:
    """The run of each global load of ``plan``'s program (a run: the loads between two other instructions)."""
    run, runs, in_run = {}, -1, False
    for i, ins in enumerate(plan.program.instructions):
        if ins.opcode == "ld.global":
            runs += 0 if in_run else 1
            run[i], in_run = runs, True
        else:
            in_run = False
    return run


def _kept(found: list, planned: list, run: dict) -> str:
    """"order": ``found`` (IR loads in PTX or SASS order) is the plan's order; "runs": every planned load is there
    once, and each run's loads come before the next run's (their order within a run aside); else "no".

    Examples
    --------
    >>> _kept([1, 2, 4], [1, 2, 4], {1: 0, 2: 0, 4: 1}), _kept([2, 1, 4], [1, 2, 4], {1: 0, 2: 0, 4: 1})
    ('order', 'runs')
    >>> _kept([1, 4, 2], [1, 2, 4], {1: 0, 2: 0, 4: 1}), _kept([1, None, 4], [1, 2, 4], {1: 0, 2: 0, 4: 1})
    ('no', 'no')
    """
    if found == planned:
        return "order"
    if sorted(found, key=lambda i: -1 if i is None else i) != planned:
        return "no"
    runs = [run[i] for i in found]
    return "runs" if runs == sorted(runs) else "no"


def _delta(value: int, reference: int) -> str:
    return f"{value} ({value - reference:+d})"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_80", help="the architecture ptxas builds for (default sm_80)")
    parser.add_argument("--repeat", type=int, default=1, help="uncached NVVM compiles per plan and order (median)")
    parser.add_argument("--plans", type=int, default=len(PLANS), help="the first N plans of the set (default all)")
    args = parser.parse_args(argv)
    arch = load_arch(args.arch).name
    rows = {}
    print(f"{min(args.plans, len(PLANS))} GEMM plans (dsatur, budget 255), ptxas {arch}; "
          f"each order against {REFERENCE!r} (+/-)", flush=True)
    for m, n, k, tile, schedule in PLANS[:args.plans]:
        plan = plan_of(m, n, k, tile, schedule)
        count = registers_used(plan.assignment)
        figures = {order: measure(plan, order, arch, args.repeat) for order in LOAD_ORDERS}
        rows[(m, n, k, tile, schedule)] = figures
        ref = figures[REFERENCE]
        tile_text = "x".join(map(str, plan.options.get("tile", ()))) or "default"
        print(f"GEMM {m}x{n}x{k} tile {tile_text} {schedule}: plan {count} registers, "
              f"{ref['loads']} global loads", flush=True)
        for order, f in figures.items():
            print(f"  {order:8s} loads in the plan's order in PTX: {f['kept']:5s} in SASS: {f['sass_kept']:5s} "
                  f"loaded values waiting for their use, at most: plan {f['ahead']['plan']}, PTX "
                  f"{f['ahead']['ptx']}, SASS at plan cap {f['ahead']['sass']}  statements {f['statements']:3d}  "
                  f"PTX instructions {_delta(f['ptx'], ref['ptx'])}  "
                  f"SASS instructions {_delta(f['sass'], ref['sass'])} (MEMBAR {f['membar']}, "
                  f"LDG .STRONG {f['strong']})  "
                  f"ptxas at plan cap {f['cap'] or 'none'}: {_delta(f['at_plan'], ref['at_plan'])} registers, "
                  f"{f['spill_bytes']} B spilled  no cap: {_delta(f['no_cap'], ref['no_cap'])} registers, "
                  f"{f['no_cap_spill_bytes']} B spilled  NVVM {f['nvvm_ms']:.0f} ms "
                  f"({f['nvvm_ms'] / ref['nvvm_ms']:.2f}x)", flush=True)
    return rows


if __name__ == "__main__":
    main()
