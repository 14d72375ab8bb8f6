"""Registers as the allocation table shows and edits them: their text, and the registers a value could move to.

Invariant: :func:`free_registers` offers only registers that no value
interfering with the chosen one holds (the interference graph's own
neighbours, so the offer agrees with the conflict check), within the plan's
budget, pairs even-aligned; ``parse_registers(register_text(r)) == r``.
"""

from __future__ import annotations

import re

from engine.plan import Plan


def free_registers(plan: Plan, analysis, name: str) -> list[tuple[int, ...]]:
    """Register choices for value ``name`` that none of its interference neighbours holds.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  st.global %x, 0, %y\\n  exit\\n")
    >>> plan = Plan(p, {"x": (0,), "y": (1,)}, {}, 4, "hand")
    >>> free_registers(plan, analyze(p), "y")
    [(1,), (2,), (3,)]
    """
    v = analysis.index[name]
    width = int(analysis.widths[v])
    if width == 0:
        return []
    busy = set()
    for other in analysis.interference.neighbors(v).tolist():
        busy.update(plan.assignment.get(analysis.names[other], ()))
    step = 2 if width == 2 else 1
    return [tuple(range(r, r + width)) for r in range(0, plan.budget - width + 1, step)
            if not busy.intersection(range(r, r + width))]


def register_text(regs) -> str:
    """``R4`` or ``R4:R5``; ``-`` for none.

    Examples
    --------
    >>> register_text((4, 5)), register_text(())
    ('R4:R5', '-')
    """
    return ":".join(f"R{r}" for r in regs) if regs else "-"


def parse_registers(text: str) -> tuple[int, ...]:
    """The registers a user typed (``R12``, ``r12:r13``, ``12, 13``); ValueError for anything else.

    Examples
    --------
    >>> parse_registers("r12:R13")
    (12, 13)
    """
    parts = [p.strip().upper().lstrip("R") for p in text.replace(",", ":").split(":") if p.strip()]
    return tuple(int(p) for p in parts)


def natural_key(text: str) -> str:
    """A key that sorts names as a reader counts (``%s_3_2`` before ``%s_3_14``): every run of digits padded
    to ten places, so a plain string comparison (a Qt sort role) gives the natural order.

    Examples
    --------
    >>> sorted(["%s_3_14", "%s_3_2", "%s_3_1", "%s_10_0"], key=natural_key)
    ['%s_3_1', '%s_3_2', '%s_3_14', '%s_10_0']
    >>> natural_key("R4:R5")
    'R0000000004:R0000000005'
    """
    return re.sub(r"\d+", lambda m: m.group().zfill(10), text)
