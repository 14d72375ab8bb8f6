"""``regtune doctor | build | compare | budget-sweep``: kernels built from plans, measured by NVIDIA's tools.

Invariant: no Qt here; numba is imported only when a command needs it; a
figure that could not be had prints the reason instead of a number.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engine.allocators import ALLOCATORS, allocate, check_allocator
from engine.arch import load_arch, occupancy
from engine.errors import RegtuneError
from engine.limits import CHECK_SECONDS
from engine.plan import MAX_REGISTERS, check_writable, write_text_atomic
from engine.predict import planned_and_run


def _archs(text: str) -> tuple[str, ...]:
    archs = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in archs:
        load_arch(a)
    if not archs:
        raise RegtuneError("--arch needs at least one architecture, e.g. sm_80,sm_90")
    return archs


def cmd_doctor(args) -> int:
    from kernels.toolchain import doctor

    rows, missing = doctor()
    for what, finding in rows:
        print(f"{what:12} {finding}")
    for line in missing:
        print(f"missing: {line}")
    return 1 if missing else 0


def _gpu(plan, device):
    from kernels.run import run_on_gpu

    return run_on_gpu(plan, device=device) if device else {"error": "no CUDA device"}


def _out_dir(text: str) -> Path:
    """``--out-dir``, made and tried before any work: an existing folder or one that can be created, that
    takes new files."""
    out = Path(text)
    if not text.strip():
        raise RegtuneError("--out-dir: an empty path")
    if out.exists() and not out.is_dir():
        raise RegtuneError(f"--out-dir {text}: is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RegtuneError(f"--out-dir {text}: cannot create it ({exc.strerror or exc})") from None
    check_writable(out / "report.json", "--out-dir")
    return out


_WARNED: set = set()


def _warn(build) -> None:
    """The build cache's note, once per command, on stderr."""
    if build.cache_warning and build.cache_warning not in _WARNED:
        _WARNED.add(build.cache_warning)
        print(f"regtune: warning: {build.cache_warning}", file=sys.stderr)


def _limits(args):
    from kernels.build import Limits

    return Limits(args.timeout, args.memory)


def cmd_build(args) -> int:
    from gui.cli.main import admit_plan
    from kernels.build import build_plan
    from kernels.report import build_report
    from kernels.run import simulate
    from kernels.toolchain import cuda_device

    archs = _archs(args.arch)
    out = _out_dir(args.out_dir)
    plan, _ = admit_plan(args.plan, args.time_limit)     # build accepts exactly what check accepts
    build = build_plan(plan, archs, spills=args.spills, limits=_limits(args))
    _warn(build)
    sim = simulate(plan, args.spills, timeout=args.sim_timeout) if not args.no_simulate \
        else {"error": "not run (--no-simulate)"}
    device = cuda_device()
    report = build_report(plan, build, sim, _gpu(plan, device))
    stem = plan.program.name
    write_text_atomic(out / f"{stem}.py", build.source.text)
    write_text_atomic(out / f"{stem}.ptx", build.ptx)
    for arch, b in build.archs.items():
        write_text_atomic(out / f"{stem}.{arch}.sass", b.sass_text)
    write_text_atomic(out / "report.json", json.dumps(report, indent=1) + "\n")
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(_table([(plan.allocator, plan, report)], archs))
    for arch in archs:
        for sentence in report["sass"][arch]["explanation"]:
            print(f"  {arch}: {sentence}")
    print(f"wrote {stem}.py, {stem}.ptx, {len(archs)} SASS listings and report.json to {out}")
    return 0


def _table(columns: list, archs) -> str:
    header = ["", *[name for name, _, _ in columns]]
    from kernels.report import compare_rows

    body = [[label, *[str(get(report)) for _, _, report in columns]] for label, _, get in compare_rows(archs)]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _allocators(text: str) -> list[str]:
    names = sorted(ALLOCATORS, key=["naive", "linear-scan", "chaitin-briggs", "dsatur"].index) \
        if text == "all" else [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise RegtuneError("--allocators needs 'all' or at least one allocator name")
    for n in names:
        check_allocator(n)
    return names


def cmd_compare(args) -> int:
    from gui.cli.main import admit_plan, workload_program
    from kernels.build import build_plan
    from kernels.report import build_report
    from kernels.run import simulate
    from kernels.toolchain import cuda_device

    archs = _archs(args.arch)
    extra = [(Path(p).stem, admit_plan(p, args.time_limit)[0]) for p in args.plan or []]
    program, workload, options = workload_program(args)
    plans = [(n, planned_and_run(allocate(n, program, args.budget), workload=workload, options=options))
             for n in _allocators(args.allocators)] + extra
    device = cuda_device()
    columns = []
    for name, plan in plans:
        build = build_plan(plan, archs, limits=_limits(args))
        _warn(build)
        sim = simulate(plan, timeout=args.sim_timeout) if not args.no_simulate \
            else {"error": "not run (--no-simulate)"}
        columns.append((name, plan, build_report(plan, build, sim, _gpu(plan, device))))
    if args.json:
        print(json.dumps({name: report for name, _, report in columns}, indent=1))
    else:
        print(_table(columns, archs))
    spilled = [f"{name} on {a}" for name, _, r in columns for a in archs
               if r["ptxas"][a]["spill_store_bytes"] or r["ptxas"][a]["spill_load_bytes"]
               or r["kernel"]["ptx_st_local"]]
    if args.fail_on_spill and spilled:
        print(f"regtune: spills in: {', '.join(spilled)}")
        return 1
    return 0


def cmd_budget_sweep(args) -> int:
    from gui.cli.main import admit_plan
    from kernels.build import compile_ptx
    from kernels.codegen import kernel_source
    from kernels.report import threads_per_block
    from kernels.toolchain import ptxas

    arch = load_arch(args.arch)
    if not 1 <= args.start <= args.stop <= MAX_REGISTERS:
        raise RegtuneError(f"--from/--to must satisfy 1 <= from <= to <= {MAX_REGISTERS}")
    plan, _ = admit_plan(args.plan, args.time_limit)
    source = kernel_source(plan)
    ptx = compile_ptx(source, arch.compute_capability, _limits(args))
    caps = list(range(args.start, args.stop + 1, 8))
    if caps[-1] != args.stop:
        caps.append(args.stop)
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda c: ptxas(ptx, arch.name, c)[0], caps))
    threads = threads_per_block(plan)
    rows = []
    for cap, r in zip(caps, reports):
        occ = occupancy(arch, r.registers, threads)
        rows.append({"maxrregcount": cap, "registers": r.registers, "spill_store_bytes": r.spill_store_bytes,
                     "spill_load_bytes": r.spill_load_bytes, "stack_frame_bytes": r.stack_frame_bytes,
                     "active_warps": occ.active_warps, "occupancy": round(occ.occupancy, 4)})
    if args.json:
        print(json.dumps({"arch": arch.name, "plan": args.plan, "threads_per_block": threads, "sweep": rows},
                         indent=1))
        return 0
    print(f"{args.plan} on {arch.name}, {threads} threads per block")
    print(f"{'maxrregcount':>12} {'registers':>9} {'spill st B':>10} {'spill ld B':>10} {'stack B':>8} "
          f"{'warps':>5} {'occupancy':>9}")
    for r in rows:
        print(f"{r['maxrregcount']:>12} {r['registers']:>9} {r['spill_store_bytes']:>10} {r['spill_load_bytes']:>10} "
              f"{r['stack_frame_bytes']:>8} {r['active_warps']:>5} {r['occupancy']:>9.1%}")
    return 0


def _limit_flags(p, simulator: bool = True) -> None:
    from gui.cli.main import positive, seconds
    from kernels.build import Limits
    from kernels.run import SIMULATOR_TIMEOUT_S

    p.add_argument("--timeout", type=seconds, default=Limits.seconds,
                   help=f"seconds one NVVM compile may run in its worker (default {Limits.seconds:g})")
    p.add_argument("--memory", type=positive, default=Limits.memory_mb,
                   help=f"MB of address space for that worker (default {Limits.memory_mb})")
    p.add_argument("--time-limit", type=seconds, default=CHECK_SECONDS,
                   help=f"seconds the execution check of a plan file may run (default {CHECK_SECONDS:g})")
    if simulator:
        p.add_argument("--sim-timeout", type=seconds, default=SIMULATOR_TIMEOUT_S,
                       help=f"seconds a simulator run may take (default {SIMULATOR_TIMEOUT_S})")


def add_kernel_commands(sub, workload_flags) -> None:
    """Register the kernel commands on the ``regtune`` parser's subcommands."""
    from gui.cli.main import budget

    p = sub.add_parser("doctor", help="NVVM, ptxas, nvdisasm and CUDA device: paths and versions")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("build", help="build a plan's kernel, measure it with ptxas/nvdisasm, check it")
    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--arch", default="sm_80,sm_90", help="comma-separated architectures (default sm_80,sm_90)")
    p.add_argument("--out-dir", required=True, help="folder for the kernel .py, .ptx, SASS and report.json")
    p.add_argument("--spills", default="plan", choices=["plan", "compiler"],
                   help="keep the plan's spill code in the kernel (plan) or leave spilling to ptxas (compiler)")
    p.add_argument("--no-simulate", action="store_true", help="skip the simulator check")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _limit_flags(p)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("compare", help="plans side by side: planned against ptxas, SASS, simulator and GPU")
    workload_flags(p)
    p.add_argument("--budget", type=budget, default=MAX_REGISTERS, help="register budget, 1..255 (default 255)")
    p.add_argument("--allocators", default="all", help="'all' or comma-separated allocator names")
    p.add_argument("--plan", action="append", help="a plan file to add as a column (repeatable)")
    p.add_argument("--arch", default="sm_80,sm_90", help="comma-separated architectures")
    p.add_argument("--no-simulate", action="store_true", help="skip the simulator checks")
    p.add_argument("--fail-on-spill", action="store_true", help="exit 1 when any kernel spills (CI)")
    p.add_argument("--json", action="store_true")
    _limit_flags(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("budget-sweep", help="ptxas registers, spills and occupancy against -maxrregcount")
    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--arch", default="sm_80")
    p.add_argument("--from", dest="start", type=budget, default=32)
    p.add_argument("--to", dest="stop", type=budget, default=MAX_REGISTERS)
    p.add_argument("--json", action="store_true")
    _limit_flags(p, simulator=False)
    p.set_defaults(func=cmd_budget_sweep)
