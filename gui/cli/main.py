"""The ``regtune`` command: headless analysis, allocation, plan checks and kernels; the window on request.

Invariant: this package never imports Qt (an import-linter contract): ``gui``,
``screenshot`` and no arguments run the window functions that gui.entry passes
in; every failure a user can cause
(a missing file, an unknown allocator, a bad program or plan) prints one
line ``regtune: error: ...`` on stderr and exits 2, never a traceback. Each
command imports the engine and kernels modules it uses where it runs, and
its parser is filled in only when it is chosen (:class:`Commands`), so
``regtune --version``, ``--help`` and a mistyped command import neither
numpy nor networkx nor numba (the start-up is part of every answer).

Examples
--------
>>> main(["check", "no-such-plan.json"])
2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from engine.base.errors import RegtuneError
from engine.base.fields import excerpt
from engine.base.limits import CHECK_SECONDS, MAX_REGISTERS, OPTIMAL_SECONDS
from gui.cli.common import (
    Parser,
    admit_plan,
    budget,
    budget_of,
    one_line,
    positive,
    seconds,
    setting,
    workload_flags,
    workload_program,
)
from gui.cli.kernels import add_kernel_commands
from gui.cli.tune import tune_flags

if TYPE_CHECKING:
    from engine.check.verify import ExecutionCheck
    from engine.ir.core import Program
    from engine.model.ilp import IlpFigures


def ilp_summary(f: IlpFigures) -> dict:
    """ILP figures (a model) as a JSON-ready dict, labelled as a model."""
    return {"model": "engine/model/ilp.py: dependence graph along the executed path, latency table of " + f.arch,
            "arch": f.arch, "path": f.path, "instructions": f.instructions, "critical_path_cycles": f.critical_path,
            "ilp": round(f.ilp, 4), "issue_cycles_per_warp": f.cycles,
            "in_order_issue_cycles_per_warp": f.in_order_cycles,
            "reference": {"instructions": f.reference_instructions, "critical_path_cycles": f.reference_critical_path,
                          "ilp": round(f.reference_ilp, 4), "issue_cycles_per_warp": f.reference_cycles,
                          "in_order_issue_cycles_per_warp": f.reference_in_order_cycles},
            "false_dependences": f.false_edges, "false_dependences_on_critical_path": f.critical_false}


def analysis_summary(program: Program, arch: str | None = None) -> dict:
    """The figures ``regtune analyze`` prints, as a JSON-ready dict (ILP: a model on ``arch``'s latencies)."""
    from engine.analysis.liveness import analyze
    from engine.model.ilp import program_ilp

    a = analyze(program)
    g = a.interference
    gpr = [n for n, w in zip(a.names, a.widths) if w > 0]
    return {
        "kernel": program.name,
        "instructions": len(program.instructions),
        "blocks": len(program.blocks),
        "values": len(gpr),
        "predicates": len(a.names) - len(gpr),
        "maxlive": a.maxlive,
        "peak_instruction": a.peak,
        "peak_text": str(program.instructions[a.peak]) if program.instructions else "",
        "live_at_peak": a.live_at(a.peak) if program.instructions else [],
        "interference": {"nodes": len(gpr), "edges": g.n_edges},
        "undefined_on_entry": list(a.undefined),
        "pressure": a.pressure.tolist(),
        "ilp_model": ilp_summary(program_ilp(program, arch or _default_arch())),
    }


def _default_arch() -> str:
    from engine.model.arch import DEFAULT_ARCH

    return DEFAULT_ARCH


def cmd_analyze(args) -> int:
    program, workload, options = workload_program(args)
    s = analysis_summary(program, options.get("arch") or _default_arch())
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    print(f"{s['kernel']}{setting(workload, options)}: {s['instructions']} instructions in {s['blocks']} blocks, "
          f"{s['values']} values (+{s['predicates']} predicates)")
    print(f"MAXLIVE {s['maxlive']} registers at instruction {s['peak_instruction']}: {s['peak_text']}")
    print(f"interference graph: {s['interference']['nodes']} nodes, {s['interference']['edges']} edges")
    if s["undefined_on_entry"]:
        print("read before any definition on some path: " + ", ".join("%" + n for n in s["undefined_on_entry"]))
    m = s["ilp_model"]
    print(f"ILP (model, {m['arch']} latencies, unlimited registers): {m['ilp']:.3f} = {m['instructions']} instructions "
          f"/ {m['critical_path_cycles']} cycles of critical path; {m['issue_cycles_per_warp']} cycles/warp (model, "
          f"list-scheduled issue; {m['in_order_issue_cycles_per_warp']} in the program's order)")
    return 0


def _plan_line(plan, original=None) -> str:
    """A plan in one line: allocator, workload, tile and schedule, registers, MAXLIVE (the program's, before
    spill code) and, when spill code changes it, the peak pressure with spill code (``original``: the
    program without spill code, when the caller has it)."""
    from engine.model.ilp import plan_ilp

    p = plan.predicted
    peak = p.peak_with_spill_code
    with_spills = f" (peak with spill code {peak})" if peak != p.maxlive else ""
    f = plan_ilp(plan, original=original)
    return (f"{plan.allocator}{setting(plan.workload, plan.options)}: {p.registers} registers of {plan.budget}, "
            f"MAXLIVE {p.maxlive}{with_spills}, {p.spilled_values} spilled values "
            f"({p.spill_stores} stores, {p.spill_loads} loads), "
            + (f"{p.rematerialised_values} rematerialised ({p.remat_instructions} instructions computing them "
               "again), " if p.rematerialised_values else "")
            + f"ILP {f.ilp:.3f} (model, {f.arch}; {f.reference_ilp:.3f} with unlimited registers), "
            f"{f.cycles} cycles/warp (model)")


def cmd_allocate(args) -> int:
    from engine.alloc import allocate, check_allocator
    from engine.base.files import check_writable
    from engine.check.verify import ReferenceRuns, verify_execution
    from engine.planfile import check_plan, write_plan
    from engine.predict import planned_and_run
    from engine.workloads import input_model

    check_allocator(args.allocator)
    check_writable(args.out, "--out")
    if args.time_limit is not None and args.allocator != "optimal":
        raise RegtuneError(f"--time-limit is the optimal allocator's (its solver's limit), not {args.allocator}'s")
    program, workload, options = workload_program(args)
    runs = ReferenceRuns()      # the figures' reference runs, shared with the check
    solver = {} if args.allocator != "optimal" else {"time_limit": args.time_limit or OPTIMAL_SECONDS}
    allocation = allocate(args.allocator, program, budget_of(args), **solver)
    plan = planned_and_run(allocation, runs, workload=workload, options=options)
    check_plan(plan, args.out)
    prove(plan, f"allocate --allocator {args.allocator}")
    verified = "; allocation proved by the symbolic checker (every path, every input)"
    if not args.no_verify:
        check = verify_execution(plan.program, plan.assignment, plan.spills, model=input_model(workload, options),
                                 runs=runs, original=allocation.original)
        verified += "; execution check (sampled): " + execution_summary(check, plan.program)
    write_plan(plan, args.out)
    print(f"{_plan_line(plan, allocation.original)}{verified} -> {args.out}")
    if args.allocator == "optimal":
        print(gap_table(allocation, program, budget_of(args)))
    return 0


def gap_table(best, program: Program, budget: int) -> str:
    """What ``optimal`` proved (its notes) and every fast allocator beside it with its gap to it, as text."""
    from engine.alloc.optimal import gap_rows

    rows = gap_rows(program, budget, best, analysis=best.original_analysis)
    lines = [f"  {note}" for note in best.notes]
    lines.append("  executed spill instructions: the trip-count model (each loop its trip count; ifs both sides)")
    head = ("allocator", "registers", "spilled", "spill instr.", "executed", "gap to optimal")
    table = [head] + [(r.allocator, str(r.registers), str(r.spilled_values), str(r.spill_instructions),
                       str(r.executed_spill_instructions), r.gap if r.gap is not None else "- (not proved)")
                      for r in rows]
    widths = [max(len(row[k]) for row in table) for k in range(len(head))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join(lines)


def execution_summary(check: ExecutionCheck, program: Program) -> str:
    """What the execution check ran, in words (after "execution check (sampled): "). It samples, so it never
    says "proved": it names its inputs, the stores it compared, the instructions that ran and the branches
    taken both ways.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.check.verify import ExecutionCheck
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
    >>> execution_summary(ExecutionCheck((0, 1, 2), 3, 3, 3, None), p)
    'the same stores on 3 inputs (3 stores compared, all 3 instructions executed)'
    >>> execution_summary(ExecutionCheck((0, 1, 2), 0, 1, 3, 1), p)
    '3 inputs, 1 of 3 instructions executed (the rest never ran: first is instruction 1 (st.global %x, 0, %x)), \
0 stores compared: it covers part of the program only'
    """
    chosen = f", {check.cases} chosen at the guards' edges" if check.cases else ""
    inputs = f"{len(check.seeds)} input{'s' * (len(check.seeds) != 1)}"
    ways = ""
    if check.branches:
        ways = ((", its branch taken both ways" if check.branches == 1 else
                 f", each of {check.branches} branches taken both ways")
                if check.branches_covered else
                f", {check.both_ways} of {check.branches} branches taken both ways (instruction "
                f"{check.first_one_way} went one way only)")
    if check.verified:
        return (f"the same stores on {inputs}{chosen} ({check.stores} stores compared, "
                f"all {check.instructions} instructions executed{ways})")
    ran = f"all {check.instructions} instructions executed"
    if not check.covered:
        first = excerpt(str(program.instructions[check.first_missed]), 60)[1:-1]
        ran = (f"{check.executed} of {check.instructions} instructions executed (the rest never ran: first is "
               f"instruction {check.first_missed} ({first}))")
    return (f"{inputs}{chosen}, {ran}{ways}, {check.stores} stores compared: it covers "
            "part of the program only")


#: what the symbolic checker's proof covers, in words
ALLOCATION_PROOF = ("the symbolic checker proved the registers and spill slots right for this program (every path, "
                    "every input: each read finds the value the program reads there)")


def prove(plan, where: str) -> str:
    """The symbolic checker's verdict on ``plan`` in words; a one-line VerificationError naming the first
    read it cannot prove (``where``: the file or the command)."""
    from engine.admit import prove_allocation

    prove_allocation(plan, where)
    return ALLOCATION_PROOF


def claims(admitted) -> list[tuple[str, str]]:
    """The three claims of an admitted plan (:class:`engine.admit.Admission`), in the command's words."""
    return admitted.claims(ALLOCATION_PROOF, execution_summary(admitted.check, admitted.plan.program))


def check_report(path: str, admitted) -> dict:
    """What ``check`` found, JSON-ready: the plan, and each claim with what it covers."""
    from engine.plan import registers_used

    plan, check, identity = admitted.plan, admitted.check, admitted.identity
    return {"plan": path, "valid": True, "allocator": plan.allocator, "kernel": plan.program.name,
            "workload": plan.workload, "options": plan.options, "registers": registers_used(plan.assignment),
            "budget": plan.budget, "spilled_values": len(plan.spills),
            "claims": dict(claims(admitted)),
            "identity": None if identity is None else {"workload": identity.label, "moved": identity.moved,
                                                       "second_opinion_inputs": identity.inputs},
            "execution_check": {"inputs": list(check.seeds), "chosen_inputs": check.cases,
                                "stores_compared": check.stores, "instructions": check.instructions,
                                "executed": check.executed, "first_never_run": check.first_missed,
                                "branches": check.branches, "branches_both_ways": check.both_ways,
                                "first_branch_one_way": check.first_one_way, "verified": check.verified,
                                "summary": execution_summary(check, plan.program)},
            "kernel_module": "can be generated"}


def cmd_check(args) -> int:
    from engine.plan import registers_used

    admitted = admit_plan(args.plan, args.time_limit)
    plan = admitted.plan
    if args.json:
        print(json.dumps(check_report(args.plan, admitted), indent=1))
        return 0
    used = registers_used(plan.assignment)
    print(f"{args.plan}: valid {plan.allocator} plan for {plan.program.name}{setting(plan.workload, plan.options)}: "
          f"{used} registers of {plan.budget}, {len(plan.spills)} spilled values")
    for claim, text in claims(admitted):
        print(f"  {claim}: {text}")
    print("  kernel module: can be generated")
    return 0


def cmd_configs(args) -> int:
    from engine.workloads import workload_named

    w = workload_named(args.space)
    configs = [w.to_dict(c) for c in w.configs()]
    if args.count:
        print(len(configs))
    elif args.json:
        print(json.dumps(configs))
    else:
        for c in configs:
            print(" ".join(f"{k}={v}" for k, v in c.items() if k not in ("kind", "dtype")))
    return 0


def cmd_program(args) -> int:
    from engine.ir.core import print_program

    print(print_program(workload_program(args)[0]), end="")
    return 0


def cmd_occupancy(args) -> int:
    from engine.model.arch import load_arch, next_register_step, occupancy

    arch = load_arch(args.arch)
    occ = occupancy(arch, args.regs, args.threads, args.smem)
    if args.json:
        print(json.dumps(occ.__dict__, indent=1))
        return 0
    print(f"{arch.name} ({arch.gpu}): {args.regs} registers x {args.threads} threads, {args.smem} B shared")
    print(f"  registers per warp allocated: {occ.registers_per_warp}; shared per block allocated: {occ.shared_per_block_allocated} B")
    print("  blocks per SM allowed by " + ", ".join(f"{k}: {v}" for k, v in occ.limits.items()))
    print(f"  active: {occ.active_blocks} blocks, {occ.active_warps} of {arch.max_warps_per_sm} warps "
          f"= {occ.occupancy:.1%} occupancy, limited by {' and '.join(occ.limited_by)}")
    step = next_register_step(arch, args.regs, args.threads, args.smem)
    if step:
        print(f"  free {args.regs - step[0]} registers (to {step[0]}) to reach {step[1]} warps")
    return 0


def cmd_report(args) -> int:
    from engine.base.files import check_writable, write_text_atomic
    from engine.claims import claims_report
    from gui.cli.progress import CommandProgress

    if args.which == "sweep":
        from gui.cli.sweep_report import cmd_report_sweep

        return cmd_report_sweep(args)
    if args.store is not None or args.filter is not None:
        raise RegtuneError(f"report claims: {'--store' if args.store is not None else '--filter'} is for "
                           "'report sweep' only (claims evaluates the config spaces itself)")
    args.out = args.out or "claims-report.md"
    check_writable(args.out, "--out")
    with CommandProgress("report claims") as progress:
        text = claims_report(args.sample, args.workers, progress.stage("GEMM configs, every allocator each", 0),
                             args.ilp_sample, progress.stage("ILP model over GEMM configs", 0))
    write_text_atomic(args.out, text)
    print(text)
    print(f"(written to {args.out})")
    return 0


class Commands(argparse._SubParsersAction):
    """``regtune``'s subcommands, each parser's arguments added only when its command is chosen (or its
    ``--help`` asked for): a command line builds, and imports for, its own command alone.

    :meth:`command` registers a command by its name, its one-line help and
    a function that adds its arguments; the top-level parser lists every
    command without filling any in.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._unfilled: dict = {}

    def command(self, name: str, help: str, fill) -> None:
        """Register command ``name``: ``fill(parser)`` adds its arguments when it is chosen."""
        self._unfilled[name] = (self.add_parser(name, help=help), fill)

    def filled(self, name: str) -> argparse.ArgumentParser:
        """Command ``name``'s parser with its arguments, its ``--version`` and its examples."""
        parser, fill = self._unfilled.pop(name, (None, None))
        if fill is not None:
            fill(parser)
            _example_and_version(name, parser)
        return self._name_parser_map[name]

    def __call__(self, parser, namespace, values, option_string=None):
        if values and values[0] in self._name_parser_map:
            self.filled(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    """The ``regtune`` parser: every command listed, none filled in until it is chosen (:class:`Commands`)."""
    from engine.workloads import WORKLOADS

    parser = Parser(prog="regtune", description="Register allocation workbench for GPU kernels.")
    sub = parser.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND", action=Commands)
    spaces = {name: len(w.configs()) for name, w in WORKLOADS.items() if w.example is not None}
    sub.command("configs", "list a config space (" + "; ".join(f"{name}: {count:,}" for name, count in spaces.items())
                + ")", lambda p: _configs_flags(p, list(spaces)))
    sub.command("program", "print the per-thread program of a workload", _program_flags)
    sub.command("analyze", "liveness, MAXLIVE and interference of a program", _analyze_flags)
    sub.command("allocate", "run an allocator and write a plan file", _allocate_flags)
    sub.command("occupancy", "active warps per SM for a register count", _occupancy_flags)
    sub.command("report", CLAIMS, _report_flags)
    sub.command("export", "write a sweep store's rows as CSV, JSON, Parquet or a Kernel Tuner cache file",
                _export_flags)
    sub.command("check", "check a plan file statically and by execution", _check_flags)
    sub.command("sweep", "every config of a space, every allocator, into the results store (--compile: ptxas)",
                _sweep_flags)
    add_kernel_commands(sub, workload_flags)
    sub.command("tune", "reorder a plan's schedule within its dependences to free registers (then ptxas)", tune_flags)
    sub.command("example", "list the example programs shipped with regtune, or write one to a file", _example_flags)
    sub.command("gui", "open the window (also: regtune with no arguments)", _gui_flags)
    sub.command("screenshot", "render the window offscreen to a PNG", _screenshot_flags)
    parser.add_argument("--version", action=_Version)
    return parser


#: the example programs shipped as package data (resources/examples): name -> file, what it is
EXAMPLE_PROGRAMS = {"gemm-loop": ("gemm_m1n1k2_loop.txt", ("GEMM 1x1x2 and a counted loop of four more fma's (a "
                                                           "branch, a loop-carried accumulator)")),
                    "gemm": ("gemm_m1n1k2.txt", "GEMM 1x1x2, straight-line: four loads, a mul, an fma, a store")}


def cmd_example(args) -> int:
    """``regtune example``: the examples' names; ``regtune example NAME``: its IR text on stdout, or in
    ``--out FILE`` (any folder: the file is read from the installed package, not from a checkout)."""
    from importlib.resources import files

    from engine.base.files import check_writable, write_text_atomic

    if args.name is None:
        for name, (_file, what) in EXAMPLE_PROGRAMS.items():
            print(f"{name:10s} {what}")
        return 0
    if args.name not in EXAMPLE_PROGRAMS:
        raise RegtuneError(f"example {args.name!r}: no such example (the examples: {', '.join(EXAMPLE_PROGRAMS)})")
    if args.out:
        check_writable(args.out, "--out")
    text = (files("resources") / "examples" / EXAMPLE_PROGRAMS[args.name][0]).read_text()
    if args.out:
        write_text_atomic(args.out, text)
        print(f"wrote {args.name} to {args.out}")
    else:
        print(text, end="")
    return 0


def _example_flags(p) -> None:
    p.add_argument("name", nargs="?", help="an example's name (none: list them)")
    p.add_argument("--out", help="write it to this file instead of printing it")
    p.set_defaults(func=cmd_example)


def _configs_flags(p, spaces: list) -> None:
    p.add_argument("space", choices=spaces)
    p.add_argument("--count", action="store_true", help="print only the number of configs")
    p.add_argument("--json", action="store_true", help="print the configs as a JSON list")
    p.set_defaults(func=cmd_configs)


def _program_flags(p) -> None:
    workload_flags(p)
    p.add_argument("--budget", type=budget, default=None,
                   help="1..255: the budget 'gemm --tile fit' fits the tile to (no other effect on the program)")
    p.set_defaults(func=cmd_program)


def _analyze_flags(p) -> None:
    workload_flags(p)
    p.add_argument("--budget", type=budget, default=None,
                   help="1..255: the budget 'gemm --tile fit' fits the tile to (no other effect on the program)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_analyze)


def _allocate_flags(p) -> None:
    from engine.alloc import all_allocators

    workload_flags(p)
    p.add_argument("--allocator", required=True,
                   help=f"one of: {', '.join(all_allocators())} (optimal: an exact 0-1 program, CP-SAT; it "
                        "prints every allocator's gap to it)")
    p.add_argument("--budget", type=budget, default=MAX_REGISTERS, help="registers per thread, 1..255 (default 255)")
    p.add_argument("--out", required=True, help="plan file to write (JSON)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the check by execution (the symbolic checker's proof always runs)")
    p.add_argument("--time-limit", type=seconds, default=None,
                   help=f"optimal only: seconds its solver may run (default {OPTIMAL_SECONDS:g}); stopped early, "
                        "it prints the best bound and the gap")
    p.set_defaults(func=cmd_allocate)


def _occupancy_flags(p) -> None:
    from engine.model.arch import ARCHS, DEFAULT_ARCH

    p.add_argument("--arch", default=DEFAULT_ARCH, help=f"one of: {', '.join(ARCHS)} (default {DEFAULT_ARCH})")
    p.add_argument("--regs", type=budget, required=True, help="registers per thread, 1..255")
    p.add_argument("--threads", type=int, required=True, help="threads per block, e.g. 256")
    p.add_argument("--smem", type=int, default=0, help="shared memory per block in bytes (default 0)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_occupancy)


CLAIMS = ("'claims': the published claims of the design note this tool started from (a write-up of register "
          "allocation for batched small GEMMs and attention; its config spaces are RegTune's), re-measured by "
          "RegTune's engine")


def _report_flags(p) -> None:
    from engine.claims import ILP_SAMPLE

    p.description = CLAIMS
    from gui.cli.sweep_report import store_flags

    p.add_argument("which", choices=["claims", "sweep"],
                   help="claims: each figure the design note RegTune started from publishes (register file, naive "
                        "against the best allocator over the GEMM space, MHA strategies, accumulators), beside "
                        "RegTune's own; sweep: a sweep store's rows as a Markdown report with PNG plots")
    p.add_argument("--out", default=None,
                   help="claims: the Markdown file to write (default claims-report.md); sweep: the folder for "
                        "report.md and its plots (default sweep-report)")
    store_flags(p)
    p.add_argument("--sample", type=positive, default=1, help="evaluate every N-th GEMM config only (default: all)")
    p.add_argument("--ilp-sample", type=positive, default=ILP_SAMPLE,
                   help=f"the ILP section (a model) evaluates every N-th GEMM config (default {ILP_SAMPLE})")
    p.add_argument("--workers", type=positive, default=None, help="processes, at least 1 (default: one per core)")
    p.set_defaults(func=cmd_report)


def _export_flags(p) -> None:
    from gui.cli.sweep_report import export_flags

    export_flags(p)


def _sweep_flags(p) -> None:
    from gui.cli.sweep import sweep_flags

    sweep_flags(p)


def _check_flags(p) -> None:
    p.add_argument("plan", help="plan file (JSON)")
    p.add_argument("--time-limit", type=seconds, default=CHECK_SECONDS,
                   help=f"seconds the execution check may run (default {CHECK_SECONDS:g})")
    p.add_argument("--json", action="store_true", help="print what the checks found and covered as JSON")
    p.set_defaults(func=cmd_check)


def _gui_flags(p) -> None:
    p.add_argument("plan", nargs="?", help="a plan file to open")
    p.set_defaults(func=_window("gui"))


def _screenshot_flags(p) -> None:
    p.add_argument("--plan", help="plan file to show (default: GEMM 8x8x8)")
    p.add_argument("--gemm", help="MxNxK to show instead, e.g. 16x16x16")
    _screenshot_mha_flags(p)
    p.add_argument("--view", default="all",
                   help="timeline, graph, compare, sass, sweep (the budget sweep), diff, store (the Sweep store "
                        "view, with --store) or all (default)")
    p.add_argument("--store", metavar="PATH", help="a sweep store the Sweep store view shows (--view store)")
    p.add_argument("--filter", metavar="EXPR", help="with --store: the rows it shows, in the sweep filter language")
    p.add_argument("--plan-name", dest="current", metavar="NAME",
                   help="which plan to show: naive, linear-scan, chaitin-briggs, dsatur or the --plan file's name "
                        "(default: the best verified plan, the one the window opens on)")
    p.add_argument("--select", metavar="VALUE", help="a value to select, as the IR spells it (%%acc_1_2) or bare")
    p.add_argument("--register", metavar="REG", help="a register (R5 or 5) whose values the graph view marks")
    p.add_argument("--instruction", type=int, metavar="N",
                   help="select the plan's instruction N (the sass view marks the SASS instructions it became)")
    p.add_argument("--build", action="store_true", help="Build & measure first (compare and sass views)")
    p.add_argument("--size", default="1500x950", metavar="WxH", help="the window's size (default 1500x950)")
    p.add_argument("--arch", help="the session's architecture (sm_80 or sm_90), the one the sass view shows")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", help="PNG file to write")
    out.add_argument("--out-dir", metavar="DIR",
                     help="write every view instead: DIR/window.png and DIR/VIEW.png for each of --view's views")
    p.set_defaults(func=_window("screenshot"))


#: an example per command, shown under its --help
EXAMPLES = {
    "configs": ["regtune configs gemm --count", "regtune configs mha --json"],
    "program": ["regtune program gemm --m 8 --n 8 --k 8 --schedule k-outer",
                "regtune program gemm --m 16 --n 16 --k 16 --tile fit --budget 64"],
    "analyze": ["regtune analyze mha --heads 32 --batch 64 --head-dim 64 --groups 4 --strategies fp16-softmax",
                "regtune example gemm-loop --out loop.txt && regtune analyze loop.txt --json"],
    "allocate": ["regtune allocate gemm --m 8 --n 8 --k 8 --allocator dsatur --out plan.json",
                 "regtune allocate loop.txt --allocator naive --budget 6 --out p.json   # loop.txt: regtune example"],
    "occupancy": ["regtune occupancy --arch sm_80 --regs 130 --threads 256"],
    "example": ["regtune example", "regtune example gemm-loop --out loop.txt"],
    "report": ["regtune report claims --sample 8 --out claims-report.md",
               "regtune report sweep --store sweeps.sqlite --filter \"workload == 'gemm'\" --out sweep-report/"],
    "export": ["regtune export sweep --format csv --out sweep.csv",
               "regtune export sweep --store s.sqlite --format kerneltuner --filter \"arch == 'sm_80'\" --out kt.json"],
    "check": ["regtune check plan.json", "regtune check plan.json --json"],
    "sweep": ["regtune sweep gemm --filter \"m <= 4 and n == k\"",
              "regtune sweep gemm --filter \"m == 8\" --compile --arch sm_80,sm_90 --store s.sqlite",
              "regtune sweep mha --strategies none,fp16-softmax --scheduler tcp://host:8786"],
    "doctor": ["regtune doctor", "regtune doctor --json"],
    "build": ["regtune build plan.json --arch sm_80,sm_90 --out-dir out/"],
    "compare": ["regtune compare gemm --m 8 --n 8 --k 8",
                "regtune compare gemm --m 4 --n 4 --k 4 --metrics registers,spills --format csv"],
    "budget-sweep": ["regtune budget-sweep plan.json --arch sm_80 --from 32 --to 255"],
}


class _Version(argparse._VersionAction):
    """``--version``, the package metadata read only when it is asked for (importlib.metadata costs 10 ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = version()
        super().__call__(parser, namespace, values, option_string)


def version() -> str:
    """The installed regtune's version (from the package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return f"regtune {installed('regtune')}"
    except PackageNotFoundError:
        return "regtune (not installed: no version recorded)"


def _example_and_version(name: str, p) -> None:
    """``--version`` on a subcommand, and its examples under its help."""
    p.add_argument("--version", action=_Version)
    if name in EXAMPLES:
        p.formatter_class = argparse.RawDescriptionHelpFormatter
        p.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])


def _window(command: str):
    """The parser's handler of a window command: run by the one the caller passed to :func:`main`."""
    def handler(args, window=None) -> int:
        if window is None:
            raise RegtuneError(f"'{command}' opens the window: run it through the regtune command (gui.entry)")
        return window[command](args)
    handler.window = True
    return handler


def _screenshot_mha_flags(p) -> None:
    """``screenshot --mha`` and the MHA flags of the commands that build a program (the window shows no
    projection phase, so ``--projection`` is not among them)."""
    from engine.workloads import workload_named

    mha = workload_named("mha")
    g = p.add_argument_group(f"{mha.title}, with --mha")
    g.add_argument("--mha", action="store_true", help="show an MHA config instead (needs the flags below)")
    for f in mha.flags:
        if not f.switch:
            g.add_argument(f.name, dest=f.dest, type=f.type, default=f.default, help=f.help)


def main(argv=None, window=None) -> int:
    """Run one ``regtune`` command (no arguments: the window).

    ``window`` maps ``"gui"`` and ``"screenshot"`` to the functions that run
    them; this package never imports Qt, so the caller (gui.entry) supplies them.
    """
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        if not argv:
            argv = ["gui"]
        args, extra = parser.parse_known_args(argv)
        if extra:       # named after the command, not "regtune: error: regtune: ..."
            where = f"regtune {args.command}" if getattr(args, "command", None) else "regtune"
            raise RegtuneError(f"{where}: unrecognized arguments: {' '.join(extra)} (see --help)")
        if args.command is None:
            parser.print_help()
            return 0
        if getattr(args.func, "window", False):
            return args.func(args, window)
        return args.func(args)
    except RegtuneError as exc:
        print(f"regtune: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        from gui.cli.interrupt import interrupted

        return interrupted(exc)
    except BrokenPipeError:  # the reader (head, less) closed the pipe: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
