"""Two listings side by side, Qt-free: two plans (each instruction with its registers) or two SASS listings (two
architectures, or two plans' kernels), aligned line by line as Compiler Explorer's diff aligns them.

Invariant: the rows of :func:`diff_rows` hold every line of both listings, each once and in order; lines are
aligned on their text with registers blanked out (:func:`shape`), so a line whose only difference is its
registers is one "registers" row (the two texts side by side), and a line of one side only is a "left" or "right"
row with nothing on the other side. "same" rows are equal texts.

Examples
--------
>>> rows = diff_rows(["MOV R1, c[0x0][0x28]", "FFMA R2, R3, R4, R2", "EXIT"],
...                  ["MOV R1, c[0x0][0x28]", "FFMA R5, R3, R4, R5", "BRA 0x10", "EXIT"])
>>> [(r.kind, r.left, r.right) for r in rows]       # doctest: +NORMALIZE_WHITESPACE
[('same', 'MOV R1, c[0x0][0x28]', 'MOV R1, c[0x0][0x28]'), ('registers', 'FFMA R2, R3, R4, R2', 'FFMA R5, R3, R4, R5'),
 ('right', None, 'BRA 0x10'), ('same', 'EXIT', 'EXIT')]
>>> differing_registers("FFMA R2, R3, R4, R2", "FFMA R5, R3, R4, R5")
(['R2'], ['R5'])
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

#: a register name in a plan line's register list or a SASS operand (R12, UR4, P0, R2.64)
REGISTER = re.compile(r"\b(?:U?R\d+|U?P\d+)\b")
KINDS = ("same", "registers", "left", "right")


@dataclass(frozen=True)
class DiffRow:
    """One aligned row: the left and right lines (None: that side has no line here), and how they differ."""

    kind: str
    left: str | None
    right: str | None


def shape(line: str) -> str:
    """A line with its registers blanked out: what alignment compares.

    Examples
    --------
    >>> shape("IADD3 R0, P0, R2, 0x4, RZ")
    'IADD3 R, P, R, 0x4, RZ'
    """
    return REGISTER.sub(lambda m: re.sub(r"\d+", "", m.group()), line)


def diff_rows(left: list[str], right: list[str]) -> list[DiffRow]:
    """``left`` and ``right`` aligned (see the module invariant)."""
    matcher = difflib.SequenceMatcher(a=[shape(t) for t in left], b=[shape(t) for t in right], autojunk=False)
    rows = []
    for op, i0, i1, j0, j1 in matcher.get_opcodes():
        if op == "equal":
            rows += [DiffRow("same" if left[i] == right[j] else "registers", left[i], right[j])
                     for i, j in zip(range(i0, i1), range(j0, j1))]
            continue
        rows += [DiffRow("left", left[i], None) for i in range(i0, i1)]
        rows += [DiffRow("right", None, right[j]) for j in range(j0, j1)]
    return rows


def differing_registers(left: str, right: str) -> tuple[list[str], list[str]]:
    """The registers of two aligned lines that differ, operand by operand (left's, right's)."""
    a, b = REGISTER.findall(left), REGISTER.findall(right)
    pairs = [(x, y) for x, y in zip(a, b) if x != y]
    return sorted({x for x, _ in pairs}, key=_natural), sorted({y for _, y in pairs}, key=_natural)


def _natural(name: str) -> tuple:
    return (re.sub(r"\d+", "", name), int(re.sub(r"\D", "", name) or 0))


def summary(rows: list[DiffRow]) -> str:
    """How the two sides differ, in words.

    Examples
    --------
    >>> summary([DiffRow("same", "a", "a"), DiffRow("registers", "R1", "R2"), DiffRow("left", "x", None)])
    '3 rows: 1 the same, 1 differing in registers only, 1 only on the left, 0 only on the right'
    """
    count = {k: sum(1 for r in rows if r.kind == k) for k in KINDS}
    return (f"{len(rows)} rows: {count['same']} the same, {count['registers']} differing in registers only, "
            f"{count['left']} only on the left, {count['right']} only on the right")


def plan_lines(plan) -> list[str]:
    """A plan's listing for the diff: each instruction, then the registers of the values it writes
    (``%acc_0_0:f32 = fma %a, %b, %acc_0_0   ; R5``; a spilled value: its slot)."""
    out = []
    for ins in plan.program.instructions:
        regs = []
        for d in ins.defs:
            if d.name in plan.spills:
                regs.append(f"slot {plan.spills[d.name]}")
            regs += [f"R{r}" for r in plan.assignment.get(d.name, ())]
        out.append(f"{ins}   ; {', '.join(regs)}" if regs else str(ins))
    return out
