"""The live ptxas figures of the plan being edited, in words (Qt-free): ptxas on the plan's own PTX at the
plan's cap and with no cap, and the SASS MAXLIVE, per arch, beside what the plan itself says.

Invariant: every figure comes from a :class:`kernels.measurement.PlanPtxFigures` of exactly the plan shown
(the window drops a result that arrives for a plan no longer current); a plan the emitter refuses gets the
refusal, never a stale figure.

Examples
--------
>>> from kernels.measurement import Unavailable
>>> live_lines(Unavailable("no plan PTX: opaque opcode foo"), 40, 36, 0.1)
['plan PTX: no plan PTX: opaque opcode foo']
"""

from __future__ import annotations

from gui.model.words import counted


def _follows(plan_registers: int, ptxas_registers: int) -> str:
    if ptxas_registers == plan_registers:
        return "ptxas follows the plan"
    more = ptxas_registers - plan_registers
    return f"ptxas uses {abs(more)} {'more' if more > 0 else 'fewer'} than the plan"


def live_lines(figures, plan_registers: int, plan_maxlive: int, seconds: float) -> list[str]:
    """Lines for ``figures`` (:class:`kernels.measurement.PlanPtxFigures`, or an ``Unavailable`` saying why there
    are none) of a plan with ``plan_registers`` registers and MAXLIVE ``plan_maxlive``; ``seconds``: edit to
    figures."""
    if not hasattr(figures, "ptxas"):
        return [f"plan PTX: {figures.reason}"]
    runs = [k for k in figures.timings_ms if k != "emit"]          # the tool runs that ran (the rest were cached)
    ran = f"{len(runs)} tool runs ({', '.join(runs)})" if runs else "cached, no tool ran"
    lines = [f"plan PTX (ptxas on the plan as written): figures in {seconds:.2f} s, {ran}",
             f"plan: {counted(plan_registers, 'register')}, MAXLIVE {plan_maxlive}"]
    for arch, at in figures.ptxas.items():
        own, sass = figures.ptxas_compiler[arch], figures.sass[arch]
        spill = at.spill_store_bytes + at.spill_load_bytes
        own_spill = own.spill_store_bytes + own.spill_load_bytes
        cap = f"cap {at.max_registers}" if at.max_registers is not None else "no cap"
        lines.append(f"{arch}: {at.registers} at the plan's {cap} ({spill} B spill traffic), "
                     f"{own.registers} with no cap ({own_spill} B); SASS MAXLIVE {sass.maxlive}; "
                     f"{_follows(plan_registers, at.registers)}")
    return lines
