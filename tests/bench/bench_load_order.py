"""Benchmark: what each way of keeping a plan's load placement through NVVM costs (kernels.codegen.LOAD_ORDERS).

Left alone ("nvvm"), NVVM places each global load at its first use, so a
load-all-first plan's PTX equals k-outer's. The other orders keep the
plan's placement: "barrier" (an empty inline-asm compiler barrier after each
run of loads, the default), "fence" (``membar.cta`` there) and "volatile"
(``ld.volatile`` loads). For a fixed set of GEMM plans (DSatur at budget
255), each order is built with the real toolchain (NVVM, then ptxas at the
plan cap and with no ``-maxrregcount``, nvdisasm), and one line per plan
and order prints:

- whether the PTX's global loads are in the plan's order (read from the
  PTX's line info, :func:`kernels.sass_lines.ptx_ir_of`);
- PTX instructions, and SASS instructions at the plan cap;
- ptxas's registers and spill bytes at the plan cap and with no cap;
- those against "nvvm", the reference built in the same run.

The figures are counts from NVIDIA's tools, the same on every run; the NVVM
time printed is the median of ``--repeat`` compiles (the build cache is not
used; 1 by default, a single compile) and its ratio against "nvvm"'s.

Run: ``python -m tests.bench.bench_load_order [--arch sm_80] [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics

from engine.allocators import allocate
from engine.arch import load_arch
from engine.plan import Plan, registers_used
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from kernels.build import build_plan
from kernels.codegen import LOAD_ORDERS
from kernels.sass_lines import ptx_ir_of

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
    in_ptx = ptx_ir_of(build.ptx_lines, ("ld.global", "ld.volatile.global"), build.source.ir_of_line())
    b = build.archs[arch]
    return {"kept": in_ptx == planned, "loads": len(in_ptx), "statements": build.source.load_barriers,
            "ptx": ptx_instructions(build.ptx), "sass": len(b.sass.texts),
            "at_plan": b.report.registers, "cap": b.report.max_registers,
            "spill_bytes": b.report.spill_store_bytes + b.report.spill_load_bytes,
            "no_cap": b.compiler.registers, "no_cap_spill_bytes": b.compiler.spill_store_bytes,
            "nvvm_ms": statistics.median(times)}


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
            print(f"  {order:8s} plan's load order in PTX: {'yes' if f['kept'] else 'no '}  "
                  f"statements {f['statements']:3d}  PTX instructions {_delta(f['ptx'], ref['ptx'])}  "
                  f"SASS instructions {_delta(f['sass'], ref['sass'])}  "
                  f"ptxas at plan cap {f['cap'] or 'none'}: {_delta(f['at_plan'], ref['at_plan'])} registers, "
                  f"{f['spill_bytes']} B spilled  no cap: {_delta(f['no_cap'], ref['no_cap'])} registers, "
                  f"{f['no_cap_spill_bytes']} B spilled  NVVM {f['nvvm_ms']:.0f} ms "
                  f"({f['nvvm_ms'] / ref['nvvm_ms']:.2f}x)", flush=True)
    return rows


if __name__ == "__main__":
    main()
