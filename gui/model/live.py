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


def partial_lines(heard: dict, archs, plan_registers: int, seconds: float) -> list[str]:
    """Lines while a request runs: the ptxas figures heard so far (``heard``: (arch, cap) -> PtxasFigures, cap
    "plan" or "compiler"), the rest named as still running; ``seconds``: edit to now.

    Examples
    --------
    >>> from types import SimpleNamespace as F
    >>> lines = partial_lines({("sm_80", "plan"): F(registers=40, max_registers=40, spill_store_bytes=0,
    ...                                             spill_load_bytes=8)}, ("sm_80", "sm_90"), 40, 0.31)
    >>> lines[1]
    "sm_80: 40 at the plan's cap 40 (8 B spill traffic), no cap: running; ptxas follows the plan"
    >>> lines[2]
    'sm_90: ptxas running'
    """
    lines = [f"plan PTX (ptxas on the plan as written): first figures in {seconds:.2f} s, SASS MAXLIVE to follow"]
    for arch in archs:
        at, own = heard.get((arch, "plan")), heard.get((arch, "compiler"))
        if at is None and own is None:
            lines.append(f"{arch}: ptxas running")
            continue
        parts = []
        if at is not None:
            cap = f"cap {at.max_registers}" if at.max_registers is not None else "no cap"
            parts.append(f"{at.registers} at the plan's {cap} ({at.spill_store_bytes + at.spill_load_bytes} B "
                         "spill traffic)")
        else:
            parts.append("plan cap: running")
        parts.append("no cap: running" if own is None else
                     f"{own.registers} with no cap ({own.spill_store_bytes + own.spill_load_bytes} B)")
        follows = f"; {_follows(plan_registers, at.registers)}" if at is not None else ""
        lines.append(f"{arch}: {', '.join(parts)}{follows}")
    return lines


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
