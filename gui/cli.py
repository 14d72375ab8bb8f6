"""The ``regtune`` command: headless analysis, allocation and plan checks.

Invariant: this module never imports Qt; every failure a user can cause
(a missing file, an unknown allocator, a bad program or plan) prints one
line ``regtune: error: ...`` on stderr and exits 2, never a traceback.

Examples
--------
>>> main(["check", "no-such-plan.json"])
2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.allocators import ALLOCATORS, allocate, check_allocator
from engine.errors import RegtuneError
from engine.ir import Program, parse
from engine.liveness import analyze
from engine.plan import MAX_REGISTERS, check_plan, load_plan, write_plan
from engine.verify import verify_execution


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line, like every other error."""

    def error(self, message):
        raise RegtuneError(f"{self.prog}: {message} (see --help)")


def read_program(path: str) -> Program:
    """Parse a program file, naming the file in every error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegtuneError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegtuneError(f"{path}: cannot read: {exc}") from None
    return parse(text, path)


def analysis_summary(program: Program) -> dict:
    """The figures ``regtune analyze`` prints, as a JSON-ready dict."""
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
    }


def cmd_analyze(args) -> int:
    s = analysis_summary(read_program(args.program))
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    print(f"{s['kernel']}: {s['instructions']} instructions in {s['blocks']} blocks, "
          f"{s['values']} values (+{s['predicates']} predicates)")
    print(f"MAXLIVE {s['maxlive']} registers at instruction {s['peak_instruction']}: {s['peak_text']}")
    print(f"interference graph: {s['interference']['nodes']} nodes, {s['interference']['edges']} edges")
    if s["undefined_on_entry"]:
        print("read before any definition on some path: " + ", ".join("%" + n for n in s["undefined_on_entry"]))
    return 0


def _plan_line(plan) -> str:
    p = plan.predicted
    return (f"{plan.allocator}: {p['registers']} registers of {plan.budget}, MAXLIVE {p['maxlive']}, "
            f"{p['spilled_values']} spilled values ({p['spill_stores']} stores, {p['spill_loads']} loads)")


def cmd_allocate(args) -> int:
    check_allocator(args.allocator)
    program = read_program(args.program)
    plan = allocate(args.allocator, program, args.budget)
    check_plan(plan, args.out)
    verified = ""
    if not args.no_verify:
        verify_execution(plan.program, plan.assignment, plan.spills)
        verified = ", verified by execution on 3 random inputs"
    write_plan(plan.with_(workload={"kind": "program", "name": program.name, "source": args.program}), args.out)
    print(f"{_plan_line(plan)}{verified} -> {args.out}")
    return 0


def cmd_check(args) -> int:
    plan = load_plan(args.plan)
    verify_execution(plan.program, plan.assignment, plan.spills)
    used = max((r for regs in plan.assignment.values() for r in regs), default=-1) + 1
    print(f"{args.plan}: valid {plan.allocator} plan for {plan.program.name}: {used} registers of "
          f"{plan.budget}, {len(plan.spills)} spilled values, verified by execution on 3 random inputs")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="regtune", description="Register allocation workbench for GPU kernels.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    p = sub.add_parser("analyze", help="liveness, MAXLIVE and interference of a program")
    p.add_argument("program", help="program in RegTune's IR text form")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_analyze)
    p = sub.add_parser("allocate", help="run an allocator and write a plan file")
    p.add_argument("program", help="program in RegTune's IR text form")
    p.add_argument("--allocator", required=True, help=f"one of: {', '.join(sorted(ALLOCATORS))}")
    p.add_argument("--budget", type=int, default=MAX_REGISTERS, help="registers per thread (default 255)")
    p.add_argument("--out", required=True, help="plan file to write (JSON)")
    p.add_argument("--no-verify", action="store_true", help="skip the check by execution")
    p.set_defaults(func=cmd_allocate)
    p = sub.add_parser("check", help="check a plan file statically and by execution")
    p.add_argument("plan", help="plan file (JSON)")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``regtune`` console script."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        return args.func(args)
    except RegtuneError as exc:
        print(f"regtune: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
