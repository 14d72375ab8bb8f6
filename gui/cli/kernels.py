"""``regtune doctor | build | compare | budget-sweep``: kernels built from plans, measured by NVIDIA's tools.

Invariant: no Qt here; numba is imported only when a command needs it; a
figure that could not be had prints the reason instead of a number.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.allocators import ALLOCATORS, allocate, check_allocator
from engine.arch import (
    ARCHS,
    DEFAULT_ARCH,
    DEFAULT_BUILD_ARCHS,
    check_register_cap,
    load_arch,
)
from engine.errors import RegtuneError
from engine.limits import CHECK_SECONDS
from engine.plan import MAX_REGISTERS, check_writable, write_text_atomic
from engine.predict import planned_and_run

_BUILD_ARCHS = ",".join(DEFAULT_BUILD_ARCHS)


def _archs(text: str) -> tuple[str, ...]:
    archs = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in archs:
        load_arch(a)
    if not archs:
        raise RegtuneError(f"--arch needs at least one architecture, e.g. {_BUILD_ARCHS}")
    return archs


def cmd_doctor(args) -> int:
    from kernels.toolchain import doctor

    rows, missing = doctor()
    for what, finding in rows:
        print(f"{what:12} {finding}")
    for line in missing:
        print(f"missing: {line}")
    return 1 if missing else 0


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


def _warn(m) -> None:
    """The build cache's note of a measurement, once per command, on stderr."""
    if m.cache_warning and m.cache_warning not in _WARNED:
        _WARNED.add(m.cache_warning)
        print(f"regtune: warning: {m.cache_warning}", file=sys.stderr)


def _limits(args):
    from kernels.build import Limits

    return Limits(args.timeout, args.memory)


def _no_simulate(args) -> str:
    return "not run (--no-simulate)" if args.no_simulate else ""


def cmd_build(args) -> int:
    from gui.cli.main import admit_plan
    from kernels.pipeline import measure

    archs = _archs(args.arch)
    out = _out_dir(args.out_dir)
    plan = admit_plan(args.plan, args.time_limit).plan     # build accepts exactly what check accepts
    m = measure(plan, archs, args.spills, _limits(args), _no_simulate(args), args.sim_timeout)
    _warn(m)
    report = m.to_dict()
    stem = m.kernel.entry       # the kernel's short name, as in its PTX and SASS
    write_text_atomic(out / f"{stem}.py", m.listings.source)
    write_text_atomic(out / f"{stem}.ptx", m.listings.ptx)
    for arch, text in m.listings.sass.items():
        write_text_atomic(out / f"{stem}.{arch}.sass", text)
    write_text_atomic(out / "report.json", json.dumps(report, indent=1) + "\n")
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(_table([(plan.allocator, m)], archs))
    for arch in archs:
        for sentence in m.sass[arch].explanation:
            print(f"  {arch}: {sentence}")
    print(f"wrote {stem}.py, {stem}.ptx, {len(archs)} SASS listings (plan cap) and report.json to {out}")
    return 0


def _table(columns: list, archs) -> str:
    """``columns``: (name, Measurement) pairs, as a planned-vs-actual table."""
    from kernels.report import Column, compare_rows

    header = ["", *[name for name, _ in columns]]
    cells = [Column(m.planned, m) for _, m in columns]
    body = [[label, *[str(get(c)) for c in cells]] for label, _, get in compare_rows(archs)]
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
    from kernels.pipeline import measure

    archs = _archs(args.arch)
    extra = [(Path(p).stem, admit_plan(p, args.time_limit).plan) for p in args.plan or []]
    program, workload, options = workload_program(args)
    plans = [(n, planned_and_run(allocate(n, program, args.budget), workload=workload, options=options))
             for n in _allocators(args.allocators)] + extra
    columns = []
    for name, plan in plans:
        m = measure(plan, archs, limits=_limits(args), skip_simulator=_no_simulate(args), sim_timeout=args.sim_timeout)
        _warn(m)
        columns.append((name, m))
    if args.json:
        print(json.dumps({name: m.to_dict() for name, m in columns}, indent=1))
    else:
        print(_table(columns, archs))
    spilled = [f"{name} on {a}" for name, m in columns for a in archs
               if m.ptxas[a].spill_bytes or m.kernel.ptx_st_local]
    if args.fail_on_spill and spilled:
        print(f"regtune: spills in: {', '.join(spilled)}")
        return 1
    return 0


def cmd_budget_sweep(args) -> int:
    from gui.cli.main import admit_plan
    from kernels.pipeline import budget_sweep

    arch = load_arch(args.arch)
    if not 1 <= args.start <= args.stop <= MAX_REGISTERS:
        raise RegtuneError(f"--from/--to must satisfy 1 <= from <= to <= {MAX_REGISTERS}")
    try:
        check_register_cap(arch, args.start)
    except RegtuneError as e:
        raise RegtuneError(f"--from {args.start}: {e}") from None
    plan = admit_plan(args.plan, args.time_limit).plan
    sweep = budget_sweep(plan, arch.name, args.start, args.stop, _limits(args))
    if args.json:
        print(json.dumps({"arch": sweep.arch, "plan": args.plan, **sweep.to_dict()}, indent=1))
        return 0
    print(f"{args.plan} on {sweep.arch}, {sweep.threads_per_block} threads per block")
    print(f"{'maxrregcount':>12} {'registers':>9} {'spill st B':>10} {'spill ld B':>10} {'stack B':>8} "
          f"{'warps':>5} {'occupancy':>9}")
    for r in sweep.rows:
        print(f"{r.maxrregcount:>12} {r.registers:>9} {r.spill_store_bytes:>10} {r.spill_load_bytes:>10} "
              f"{r.stack_frame_bytes:>8} {r.active_warps:>5} {r.occupancy:>9.1%}{_sweep_mark(sweep, r)}")
    own = sweep.no_cap
    print(f"{'no flag':>12} {own.registers:>9} {own.spill_store_bytes:>10} {own.spill_load_bytes:>10} "
          f"{own.stack_frame_bytes:>8} {own.active_warps:>5} {own.occupancy:>9.1%}  <- ptxas's own choice "
          "(no -maxrregcount)")
    if sweep.rows[-1].maxrregcount < sweep.plan_registers:
        print(f"the plan's count, {sweep.plan_registers} registers, is above every cap swept")
    return 0


def _sweep_mark(sweep, row) -> str:
    """The mark of the plan's register count on the sweep's row for it (the first cap at or above it)."""
    first = next((r for r in sweep.rows if r.maxrregcount >= sweep.plan_registers), None)
    if row is not first:
        return ""
    at = "" if row.maxrregcount == sweep.plan_registers else " (first cap at or above it)"
    return f"  <- the plan's count, {sweep.plan_registers} registers{at}"


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
    p.add_argument("--arch", default=_BUILD_ARCHS, help=f"comma-separated architectures (default {_BUILD_ARCHS})")
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
    p.add_argument("--arch", default=_BUILD_ARCHS, help=f"comma-separated architectures (default {_BUILD_ARCHS})")
    p.add_argument("--no-simulate", action="store_true", help="skip the simulator checks")
    p.add_argument("--fail-on-spill", action="store_true", help="exit 1 when any kernel spills (CI)")
    p.add_argument("--json", action="store_true")
    _limit_flags(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("budget-sweep", help="ptxas registers, spills and occupancy against -maxrregcount")
    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--arch", default=DEFAULT_ARCH, help=f"one of: {', '.join(ARCHS)} (default {DEFAULT_ARCH})")
    p.add_argument("--from", dest="start", type=budget, default=32)
    p.add_argument("--to", dest="stop", type=budget, default=MAX_REGISTERS)
    p.add_argument("--json", action="store_true")
    _limit_flags(p, simulator=False)
    p.set_defaults(func=cmd_budget_sweep)
