"""``regtune doctor | build | compare | budget-sweep``: kernels built from plans, measured by NVIDIA's tools.

Invariant: no Qt here; the engine and kernels modules (numpy, networkx,
numba) are imported only when a command runs or its parser is filled in; a
figure that could not be had prints the reason instead of a number.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from engine.base.errors import RegtuneError
from engine.base.limits import CHECK_SECONDS, MAX_REGISTERS
from gui.cli.common import (
    admit_plan,
    budget,
    budget_of,
    positive,
    seconds,
    setting,
    workload_program,
)
from gui.cli.compare_output import FORMATS

#: what the model rows of a compare table are
MODEL_NOTE = ("(model) rows: engine/model/ilp.py, one thread's dependence graph along its executed path under the plan's "
              "arch latency table (resources/arch); a model, not a measurement\n"
              "model time rows: engine/model/timemodel.py, issue cycles per warp (the plan's or the SASS's, as the row "
              "says), occupancy, waves and bytes moved on the product named in resources/arch [throughput]; a "
              "model, never a measured time (the GPU rows)")


def _build_archs() -> str:
    """The default ``--arch`` of build and compare (comma-separated)."""
    from engine.model.arch import DEFAULT_BUILD_ARCHS

    return ",".join(DEFAULT_BUILD_ARCHS)


def _archs(text: str) -> tuple[str, ...]:
    from engine.model.arch import load_arch

    archs = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in archs:
        load_arch(a)
    if not archs:
        raise RegtuneError(f"--arch needs at least one architecture, e.g. {_build_archs()}")
    return archs


def cmd_doctor(args) -> int:
    from kernels.toolchain import doctor

    found = doctor()
    if args.json:
        print(json.dumps({"found": dict(found.rows), "missing": list(found.missing), "ok": found.ok}, indent=1))
        return 0 if found.ok else 1
    for what, finding in found.rows:
        print(f"{what:12} {finding}")
    for line in found.missing:
        print(f"missing: {line}")
    return 0 if found.ok else 1


def _out_dir(text: str) -> Path:
    """``--out-dir``, made and tried before any work: an existing folder or one that can be created, that
    takes new files."""
    from engine.base.files import check_writable

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


def _no_simulate(args, metrics=None) -> str:
    """Why the simulator is not started: --no-simulate, or --metrics without its row; "" when it runs."""
    return "not run (--no-simulate)" if args.no_simulate else _not_asked(metrics, "simulator")


def _not_asked(metrics, metric: str) -> str:
    """Why a check whose rows are ``metric`` is not started: ``metrics`` (None: all) has none of them."""
    return "" if metrics is None or metric in metrics else f"not run (--metrics has no {metric})"


#: the steps of one plan's measurement (kernels.pipeline.measure reports 3)
MEASURE_STEPS = ("build (NVVM, ptxas, nvdisasm)", "simulator check", "GPU run, if a CUDA device")


def output_stem(plan, path: str) -> str:
    """The name a build's files carry: the plan's allocator and its file's name (a hand copy's included),
    so two plans built into one folder keep their own files.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> output_stem(SimpleNamespace(allocator="hand"), "out/my copy #2.json")
    'hand-my_copy_2'
    >>> output_stem(SimpleNamespace(allocator="dsatur"), "dsatur.json")
    'dsatur'
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(path).stem).strip("._") or "plan"
    return plan.allocator if stem == plan.allocator else f"{plan.allocator}-{stem}"


def _measured(progress, label: str, plan, archs, args, base: int = 0, metrics=None, **kw):
    """``plan`` measured, its steps counted on ``progress``'s stage from ``base``; the simulator and the GPU
    run only when a row of ``metrics`` (None: all) shows them."""
    from gui.cli.progress import Steps
    from kernels.pipeline import measure

    steps = Steps(progress, base, label, MEASURE_STEPS)
    m = measure(plan, archs, limits=_limits(args), skip_simulator=_no_simulate(args, metrics),
                sim_timeout=args.sim_timeout, progress=steps, skip_gpu=_not_asked(metrics, "gpu"), **kw)
    _warn(m)
    return m


def cmd_build(args) -> int:
    from engine.base.files import write_files_atomic
    from gui.cli.compare_output import comparison, render
    from gui.cli.progress import CommandProgress
    from kernels.facts import PlanFacts

    archs = _archs(args.arch)
    out = _out_dir(args.out_dir)
    plan = admit_plan(args.plan, args.time_limit).plan     # build accepts exactly what check accepts
    stem = output_stem(plan, args.plan)
    facts = PlanFacts(plan)
    with CommandProgress("build") as progress:
        m = _measured(progress.stage(stem, len(MEASURE_STEPS)), stem, plan, archs, args, spills=args.spills,
                      facts=facts)
    report = m.to_dict()
    names = [f"{stem}.py", f"{stem}.ptx", *(f"{stem}.{arch}.sass" for arch in m.listings.sass), f"{stem}.report.json"]
    texts = [m.listings.source, m.listings.ptx, *m.listings.sass.values(), json.dumps(report, indent=1) + "\n"]
    if args.pressure_csv:
        from engine.analysis.liveness import analyze
        from gui.model.sass_rows import plan_pressure_csv

        names.append(f"{stem}.pressure.csv")
        texts.append(plan_pressure_csv(plan, analyze(plan.program).pressure, m))
    write_files_atomic(out, dict(zip(names, texts)))   # all of them or none
    if args.json:
        print(json.dumps(report, indent=1))
        return _failed_checks([(stem, m)], args)
    header = f"{plan.allocator}{setting(plan.workload, plan.options)}, budget {plan.budget}"
    print(render(comparison([(plan.allocator, m)], archs, [facts.ilp()]), "table", header), end="")
    print(MODEL_NOTE)
    for arch in archs:
        for sentence in m.sass[arch].explanation:
            print(f"  {arch}: {sentence}")
    print(f"wrote {', '.join(names)} to {out}")
    return _failed_checks([(stem, m)], args)


def failed_checks(columns: list, simulated: bool) -> list[str]:
    """The checks of measured plans that failed or raised, one line each: a simulator check that disagreed,
    or that was asked for (``simulated``) and gave no result, and a GPU run that disagreed or failed on a
    device. A check not run on purpose (``--no-simulate``, ``--metrics`` without its rows, no CUDA device) is
    not a failure."""
    from kernels.measurement import Unavailable

    out = []
    for name, m in columns:
        sim, gpu = m.simulator, m.gpu
        if isinstance(sim, Unavailable):
            if simulated:
                out.append(f"{name}: the simulator check raised: {sim.reason}")
        elif not sim.ok:
            out.append(f"{name}: the simulator check failed: {sim}")
        if isinstance(gpu, Unavailable):
            if gpu.reason != "no CUDA device" and not gpu.reason.startswith("not run ("):
                out.append(f"{name}: the GPU run failed: {gpu.reason}")
        elif not gpu.ok:
            out.append(f"{name}: the GPU run disagrees with numpy: {gpu}")
    return out


def _failed_checks(columns: list, args, metrics=None) -> int:
    """1 (the failures on stderr, after the report) when a check of ``columns`` failed, else 0."""
    failures = failed_checks(columns, not _no_simulate(args, metrics))
    for line in failures:
        print(f"regtune: {line}", file=sys.stderr)
    return 1 if failures else 0


def _allocators(text: str) -> list[str]:
    from engine.alloc import ALLOCATORS, check_allocator

    order = ["naive", "linear-scan-hull", "linear-scan", "chaitin-briggs", "dsatur"]  # the rest after, by name
    names = sorted(ALLOCATORS, key=lambda n: (order.index(n) if n in order else len(order), n)) \
        if text == "all" else [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise RegtuneError("--allocators needs 'all' or at least one allocator name")
    for n in names:
        check_allocator(n)
    return names


def cmd_compare(args) -> int:
    from engine.alloc import allocate
    from engine.predict import planned_and_run
    from gui.cli.compare_output import comparison, parse_metrics, render
    from gui.cli.progress import CommandProgress
    from kernels.facts import PlanFacts

    archs = _archs(args.arch)
    metrics = parse_metrics(args.metrics)
    if metrics is not None:
        comparison([], archs, []).only(metrics)    # an unknown metric is named before any work
    fmt = "json" if args.json else args.format
    program, workload, options = workload_program(args)
    extra = [_same_workload(p, admit_plan(p, args.time_limit).plan, workload, options) for p in args.plan or []]
    budget = budget_of(args)
    made = [(n, allocate(n, program, budget)) for n in _allocators(args.allocators)]
    plans = [(n, planned_and_run(a, workload=workload, options=options)) for n, a in made] + extra
    facts = [PlanFacts.of_allocation(a, plan) for (_, a), (_, plan) in zip(made, plans)] + \
        [PlanFacts(plan) for _, plan in extra]       # what the allocators derived is measured, not derived again
    header = f"{setting(workload, options)[2:-1] or program.name}, budget {budget}; {', '.join(archs)}"
    columns = []
    try:
        with CommandProgress("compare") as progress:
            stage = progress.stage("plans", len(MEASURE_STEPS) * len(plans))
            for k, (name, plan) in enumerate(plans):
                columns.append((name, _measured(stage, name, plan, archs, args, len(MEASURE_STEPS) * k, metrics,
                                                facts=facts[k])))
    except KeyboardInterrupt:
        if columns:                             # Ctrl+C keeps what is done: the plans measured so far
            kept = f"{header} (interrupted: {len(columns)} of {len(plans)} plans measured)"
            models = [f.ilp() for f in facts[: len(columns)]]
            print(render(comparison(columns, archs, models).only(metrics), fmt, kept), end="", flush=True)
        raise
    models = [f.ilp() for f in facts]
    print(render(comparison(columns, archs, models).only(metrics), fmt, header), end="")
    if fmt == "table":
        print(MODEL_NOTE)
    failed = _failed_checks(columns, args, metrics)
    spilled = unasked_spills(columns, archs)
    if args.fail_on_spill and spilled:
        print(f"regtune: ptxas spills the plans did not ask for: {'; '.join(spilled)}", file=sys.stderr)
        return 1
    return failed


def _same_workload(path: str, plan, workload: dict, options: dict) -> tuple[str, object]:
    """A ``--plan`` column: refused unless its plan is of the compared workload (a program file's: the
    kernel of the same name); named with its own tile and schedule where they differ from the compared
    program's."""
    from engine.workloads import config_label

    def key(w):
        return ("program", w.get("name")) if w.get("kind") == "program" else w

    if key(plan.workload) != key(workload):
        raise RegtuneError(f"--plan {path}: a plan for {config_label(plan.workload)}, not for "
                           f"{config_label(workload)}: compare shows plans of one workload side by side "
                           "(give that plan a compare of its own)")
    name = Path(path).stem
    own = setting(plan.workload, plan.options)
    return (name if own == setting(workload, options) else f"{name}{own}"), plan


def unasked_spills(columns: list, archs) -> list[str]:
    """Where ptxas spilled at the plan cap: its own spill bytes, per plan and arch, with the cap. The plan's own
    spill code (st.local / ld.local in the PTX, naive's included) is what the plan asked for and is not counted:
    ptxas reports it as stack frame, not as spills."""
    return [f"{name} on {a}: {m.ptxas[a].spill_store_bytes} B stored, {m.ptxas[a].spill_load_bytes} B loaded at the "
            f"{m.ptxas[a].cap_text}" for name, m in columns for a in archs if m.ptxas[a].spill_bytes]


def cmd_budget_sweep(args) -> int:
    from engine.model.arch import check_register_cap, load_arch
    from kernels.pipeline import budget_sweep

    arch = load_arch(args.arch)
    if not 1 <= args.start <= args.stop <= MAX_REGISTERS:
        raise RegtuneError(f"--from/--to must satisfy 1 <= from <= to <= {MAX_REGISTERS}")
    from gui.cli.progress import CommandProgress, Steps
    from kernels.pipeline import sweep_caps

    try:
        check_register_cap(arch, args.start)
    except RegtuneError as e:
        raise RegtuneError(f"--from {args.start}: {e}") from None
    plan = admit_plan(args.plan, args.time_limit).plan
    total = len(sweep_caps(args.start, args.stop)) + 2     # NVVM, then ptxas at each cap and with no cap
    with CommandProgress("budget-sweep") as progress:
        steps = Steps(progress.stage("NVVM compile", total), 0, f"{arch.name}",
                      ("NVVM compile", *(["ptxas at each cap"] * (total - 1))))
        sweep = budget_sweep(plan, arch.name, args.start, args.stop, _limits(args), steps)
    if args.json:
        print(json.dumps({"arch": sweep.arch, "plan": args.plan, **sweep.to_dict()}, indent=1))
        return 0
    print(f"{args.plan}: {plan.allocator}{setting(plan.workload, plan.options)}, budget {plan.budget}, "
          f"on {sweep.arch}, {sweep.threads_per_block} threads per block")
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


def _metrics() -> list[str]:
    """The metrics the help names (without importing the kernels package; the rows themselves decide)."""
    from gui.cli.compare_output import METRICS

    return list(METRICS)


def add_kernel_commands(sub, workload_flags) -> None:
    """Register the kernel commands on the ``regtune`` parser's subcommands (:class:`gui.cli.main.Commands`: each
    command's arguments are added when it is chosen)."""
    sub.command("doctor", "NVVM, ptxas, nvdisasm and CUDA device: paths and versions", _doctor_flags)
    sub.command("build", "build a plan's kernel, measure it with ptxas/nvdisasm, check it", _build_flags)
    sub.command("compare", "plans side by side: planned against ptxas, SASS, simulator and GPU",
                lambda p: _compare_flags(p, workload_flags))
    sub.command("budget-sweep", "ptxas registers, spills and occupancy against -maxrregcount", _budget_sweep_flags)


def _doctor_flags(p) -> None:
    p.add_argument("--json", action="store_true", help="print what was found and what is missing as JSON")
    p.set_defaults(func=cmd_doctor)


def _build_flags(p) -> None:
    archs = _build_archs()
    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--arch", default=archs, help=f"comma-separated architectures (default {archs})")
    p.add_argument("--out-dir", required=True,
                   help="folder for ALLOCATOR-PLANFILE.py, .ptx, .ARCH.sass and .report.json (named after the plan)")
    p.add_argument("--spills", default="plan", choices=["plan", "compiler"],
                   help="keep the plan's spill code in the kernel (plan) or leave spilling to ptxas (compiler)")
    p.add_argument("--no-simulate", action="store_true", help="skip the simulator check")
    p.add_argument("--pressure-csv", action="store_true",
                   help="also write ALLOCATOR-PLANFILE.pressure.csv: the registers live at each plan instruction and "
                        "at each SASS instruction of each arch (with its encoded stalls and plan instruction)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _limit_flags(p)
    p.set_defaults(func=cmd_build)


def _compare_flags(p, workload_flags) -> None:
    from engine.alloc import ALLOCATORS, EXPENSIVE

    archs = _build_archs()
    workload_flags(p)
    p.add_argument("--budget", type=budget, default=MAX_REGISTERS, help="register budget, 1..255 (default 255)")
    p.add_argument("--allocators", default="all",
                   help=f"'all' ({', '.join(sorted(ALLOCATORS))}) or comma-separated names, also "
                        f"{', '.join(sorted(EXPENSIVE))} (a solver run of up to 10 s, so only by name)")
    p.add_argument("--plan", action="append", help="a plan file to add as a column (repeatable)")
    p.add_argument("--arch", default=archs, help=f"comma-separated architectures (default {archs})")
    p.add_argument("--no-simulate", action="store_true", help="skip the simulator checks")
    p.add_argument("--fail-on-spill", action="store_true",
                   help="exit 1 (naming them on stderr) when ptxas spills at a plan's own register count; the "
                        "plan's own spill code, naive's included, is not counted (CI)")
    p.add_argument("--metrics", help="comma-separated rows to show (default all), from: " + ", ".join(_metrics()))
    p.add_argument("--format", default="table", choices=FORMATS,
                   help="table (fits 100 columns; * marks the best value of a row), csv, json or markdown")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    _limit_flags(p)
    p.set_defaults(func=cmd_compare)


def _budget_sweep_flags(p) -> None:
    from engine.model.arch import ARCHS, DEFAULT_ARCH

    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--arch", default=DEFAULT_ARCH, help=f"one of: {', '.join(ARCHS)} (default {DEFAULT_ARCH})")
    p.add_argument("--from", dest="start", type=budget, default=32, help="first cap, 1..255 (default 32)")
    p.add_argument("--to", dest="stop", type=budget, default=MAX_REGISTERS,
                   help=f"last cap, 1..255 (default {MAX_REGISTERS}); caps go in steps of 8")
    p.add_argument("--json", action="store_true", help="print the sweep as JSON")
    _limit_flags(p, simulator=False)
    p.set_defaults(func=cmd_budget_sweep)
