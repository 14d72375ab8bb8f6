"""``regtune tune PLAN --target-registers N | --next-step``: a schedule that frees registers, measured by ptxas.

Invariant: no Qt here; the plan is admitted as every command admits one
(:func:`gui.cli.common.admit_plan`) before any search; the tuned plan is
checked (:func:`engine.planfile.check_plan`, the symbolic checker, the
identity proof) before it is printed or written, and ptxas's figures are
ptxas's own (``kernels.plan_ptx``), or the reason there are none.
"""

from __future__ import annotations

import json

from engine.base.errors import RegtuneError
from gui.cli.common import admit_plan, budget, seconds, setting


def _arch_of(plan) -> str:
    from engine.model.arch import DEFAULT_ARCH

    return (plan.options or {}).get("arch") or DEFAULT_ARCH


def target_of(plan, target: int | None, next_step: bool) -> tuple[int, str]:
    """The register count to aim at and where it comes from (the next occupancy step, or the flag)."""
    from engine.model.arch import load_arch, next_register_step
    from engine.plan import registers_used
    from kernels.report import threads_per_block

    regs = registers_used(plan.assignment)
    if not next_step:
        return target, f"--target-registers {target}"
    arch = _arch_of(plan)
    step = next_register_step(load_arch(arch), regs, threads_per_block(plan))
    if step is None:
        raise RegtuneError(f"--next-step: registers do not limit occupancy at {regs} registers on {arch} "
                           f"({threads_per_block(plan)} threads per block): there is no step to reach")
    return step[0], f"the next occupancy step on {arch}: {step[0]} registers give {step[1]} warps"


def _occupancy(plan, registers: int) -> str:
    from engine.model.arch import load_arch, occupancy
    from kernels.report import threads_per_block

    occ = occupancy(load_arch(_arch_of(plan)), registers, threads_per_block(plan))
    return f"{occ.active_warps} warps ({occ.occupancy:.0%}, limited by {', '.join(occ.limited_by)})"


def at_cap_line(plan, cap: int, label: str) -> str:
    """ptxas on ``plan``'s own PTX at ``-maxrregcount=cap`` (real ptxas, not cached): registers and spills."""
    from kernels.plan_ptx import plan_ptx
    from kernels.toolchain import ptxas

    arch = _arch_of(plan)
    try:
        report, _cubin = ptxas(plan_ptx(plan, arch).text, arch, cap)
    except RegtuneError as e:
        return f"ptxas {arch} at -maxrregcount={cap} on {label}: {e}"
    spills = report.spill_store_bytes + report.spill_load_bytes
    return (f"ptxas {arch} at the target cap ({' '.join(report.flags)}) on {label}: {report.registers} registers, "
            f"{report.spill_store_bytes} B spill stores, {report.spill_load_bytes} B spill loads: "
            + ("fits without spilling" if not spills else "spills"))


def ptxas_lines(tuned, step_registers: int, original=None) -> list[str]:
    """ptxas on the tuned plan's own PTX at the plan cap and with no cap (real ptxas), and, when the tuned plan
    needs more than ``step_registers``, at that cap too (beside the original plan at the same cap)."""
    from kernels.measurement import Unavailable
    from kernels.pipeline import plan_ptx_or_why

    arch = _arch_of(tuned)
    figures = plan_ptx_or_why(tuned, (arch,))
    if isinstance(figures, Unavailable):
        return [f"ptxas: {figures.reason}"]
    out = []
    for label, got in (("plan cap", figures.ptxas[arch]), ("no cap", figures.ptxas_compiler[arch])):
        flags = " ".join(got.flags)
        spills = got.spill_store_bytes + got.spill_load_bytes
        out.append(f"ptxas {arch} {label} ({flags}): {got.registers} registers, {got.spill_store_bytes} B spill "
                   f"stores, {got.spill_load_bytes} B spill loads, {got.occupancy.active_warps} warps"
                   + ("" if label == "no cap" else
                      f" -> {'reaches' if got.registers <= step_registers and not spills else 'does not reach'} "
                      f"{step_registers} registers without spilling"))
    if figures.ptxas[arch].registers > step_registers:
        out.append(at_cap_line(tuned, step_registers, "the tuned plan"))
        if original is not None:
            out.append(at_cap_line(original, step_registers, "the original plan"))
    return out


def cmd_tune(args) -> int:
    from engine.analysis.dependence import moved_instructions
    from engine.base.files import check_writable
    from engine.identity import prove_identity
    from engine.ir.spill import remove_spill_code
    from engine.planfile import check_plan, write_plan
    from engine.tune import describe_edit, tune
    from gui.cli.main import prove

    if args.out:
        check_writable(args.out, "--out")
    plan = admit_plan(args.plan).plan
    target, why = target_of(plan, args.target_registers, args.next_step)
    r = tune(plan, target, args.allocator, args.time_limit)
    tuned = r.plan
    check_plan(tuned, args.out or "the tuned plan")
    prove(tuned, "tune")
    identity = prove_identity(tuned.program, tuned.spills, tuned.workload, tuned.options)
    if args.json:
        print(json.dumps(_report(args, plan, r, why, identity), indent=1))
    else:
        _print(args, plan, r, why, identity, moved_instructions(remove_spill_code(tuned.program, tuned.spills),
                                                                remove_spill_code(plan.program, plan.spills)),
               describe_edit)
    if args.out:
        write_plan(tuned, args.out)
        print(f"wrote the tuned plan to {args.out}")
    return 0


def _print(args, plan, r, why, identity, moved, describe_edit) -> None:
    program = plan.program
    print(f"{args.plan}: {plan.allocator} plan{setting(plan.workload, plan.options)}, {r.registers_before} registers; "
          f"target {r.target} ({why})")
    print(f"edits ({r.moves} schedule edits, {moved} instructions moved, then a re-allocation):")
    current = list(program.instructions)
    for k, e in enumerate(r.edits, 1):
        text = describe_edit(e)
        if hasattr(e, "index"):
            ins = current.pop(e.index)
            current.insert(e.to, ins)
            text = f"move instruction {e.index} ({ins}) to {e.to}"
        print(f"  {k}. {text}")
    optimal = ", so no reordering does better" if r.maxlive_after == r.lower_bound else ""
    print(f"MAXLIVE {r.maxlive_before} -> {r.maxlive_after} (lower bound over every reordering within blocks: {r.lower_bound}"
          f"{optimal}); "
          f"search: " + ", ".join(f"{name} {m}" for name, m in r.phases) + f"; {r.seconds:.2f} s")
    again = r.plan.predicted.rematerialised_values if r.plan.predicted else 0
    print(f"{r.allocator} at the new schedule: {r.registers_after} registers of {r.plan.budget} "
          f"(was {r.registers_before}), {len(r.plan.spills)} spilled values"
          + (f", {again} computed again where read (rematerialised: no slot, no store)" if again else ""))
    print(f"occupancy ({_arch_of(plan)}, {plan.options.get('threads_per_block', 128)} threads per block): "
          f"{_occupancy(plan, r.registers_before)} -> {_occupancy(plan, r.registers_after)}")
    print("target " + ("reached" if r.reached else "not reached: " + r.why_not))
    print("identity proof: " + (identity.text if identity is not None else "a plan from an IR file has no workload "
                                "to rebuild; the tuned program is proved a reordering of the plan's within its "
                                "dependences (structurally)"))
    print("allocation proof: the symbolic checker proved the tuned plan's registers (every path, every input)")
    if not args.no_ptxas:
        for line in ptxas_lines(r.plan, r.target, plan):
            print(line)


def _report(args, plan, r, why, identity) -> dict:
    from engine.ir.spill import spill_code_of
    from engine.tune import describe_edit

    out = {"plan": args.plan, "target": r.target, "target_from": why, "edits": [describe_edit(e) for e in r.edits],
           "maxlive_before": r.maxlive_before, "maxlive_after": r.maxlive_after, "lower_bound": r.lower_bound,
           "lower_bound_reason": r.bound_reason, "peak": r.peak, "allocator": r.allocator,
           "registers_before": r.registers_before, "registers_after": r.registers_after, "budget_after": r.plan.budget,
           "rematerialised_after": sorted(spill_code_of(r.plan.program, r.plan.spills).rematerialised),
           "reached": r.reached, "why_not": r.why_not, "seconds": round(r.seconds, 3),
           "phases": [list(p) for p in r.phases], "identity": None if identity is None else identity.text}
    if not args.no_ptxas:
        out["ptxas"] = ptxas_lines(r.plan, r.target, plan)
    return out


def tune_flags(p) -> None:
    from engine.alloc import ALLOCATORS
    from engine.tune import TIME_LIMIT

    p.add_argument("plan", help="plan file (JSON), without spill code")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--target-registers", type=budget, help="registers per thread to reach, 1..255")
    which.add_argument("--next-step", action="store_true",
                       help="aim at the next occupancy step (the most registers that give more warps)")
    p.add_argument("--allocator", default=None,
                   help=f"allocator at the new schedule, one of: {', '.join(sorted(ALLOCATORS))} "
                        "(default: the plan's own; dsatur for a hand plan)")
    p.add_argument("--time-limit", type=seconds, default=TIME_LIMIT,
                   help=f"seconds the local search may run (default {TIME_LIMIT:g})")
    p.add_argument("--out", help="write the tuned plan to this file (JSON)")
    p.add_argument("--no-ptxas", action="store_true", help="skip ptxas on the tuned plan's PTX")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_tune)
