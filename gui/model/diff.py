"""Two listings side by side, Qt-free: two plans (each instruction with its registers) or two SASS listings (two
architectures, or two plans' kernels), aligned line by line as Compiler Explorer's diff aligns them.

Invariant: the rows of :func:`diff_rows` hold every line of both listings, each once and in order; lines are
aligned on their :func:`key` (a SASS line's opcode; a plan line's text with registers blanked out), so an
aligned pair is a "same" row (equal texts), a "registers" row (equal once registers are blanked: :func:`shape`)
or an "operands" row (the same opcode, other operands: another constant, an address form); a line of one side
only is a "left" or "right" row with nothing on the other side.

Examples
--------
>>> rows = diff_rows(["MOV R1, c[0x0][0x28]", "FFMA R2, R3, R4, R2", "EXIT"],
...                  ["MOV R1, c[0x0][0x28]", "FFMA R5, R3, R4, R5", "BRA 0x10", "EXIT"])
>>> [(r.kind, r.left, r.right) for r in rows]       # doctest: +NORMALIZE_WHITESPACE
[('same', 'MOV R1, c[0x0][0x28]', 'MOV R1, c[0x0][0x28]'), ('registers', 'FFMA R2, R3, R4, R2', 'FFMA R5, R3, R4, R5'),
 ('right', None, 'BRA 0x10'), ('same', 'EXIT', 'EXIT')]
>>> diff_rows(["LDG.E R19, [R4.64]"], ["LDG.E R21, desc[UR4][R4.64]"])[0].kind
'operands'
>>> differing_registers("FFMA R2, R3, R4, R2", "FFMA R5, R3, R4, R5")
(['R2'], ['R5'])
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

#: a register name in a plan line's register list or a SASS operand (R12, UR4, P0, R2.64)
REGISTER = re.compile(r"\b(?:U?R\d+|U?P\d+)\b")
KINDS = ("same", "registers", "operands", "left", "right")


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


def key(line: str) -> str:
    """What alignment compares: a SASS line's opcode (its guard kept), a plan line's :func:`shape`.

    Examples
    --------
    >>> key("@P0 LDG.E R2, [R4.64]"), key("%x:f32 = fma %a, %b, %x   ; R5")
    ('@P0 LDG.E', '%x:f32 = fma %a, %b, %x   ; R')
    """
    words = line.split()
    guarded = bool(words) and words[0].startswith("@") and len(words) > 1
    opcode = words[1] if guarded else words[0] if words else ""
    if not opcode[:1].isupper():
        return shape(line)
    return f"{words[0]} {opcode}" if guarded else opcode


def _kind(a: str, b: str) -> str:
    return "same" if a == b else "registers" if shape(a) == shape(b) else "operands"


def diff_rows(left: list[str], right: list[str]) -> list[DiffRow]:
    """``left`` and ``right`` aligned (see the module invariant)."""
    matcher = difflib.SequenceMatcher(a=[key(t) for t in left], b=[key(t) for t in right], autojunk=False)
    rows = []
    for op, i0, i1, j0, j1 in matcher.get_opcodes():
        if op == "equal":
            rows += [DiffRow(_kind(left[i], right[j]), left[i], right[j]) for i, j in zip(range(i0, i1), range(j0, j1))]
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
    '3 rows: 1 the same, 1 differing in registers only, 0 in other operands, 1 only on the left, 0 only on the right'
    """
    count = {k: sum(1 for r in rows if r.kind == k) for k in KINDS}
    return (f"{len(rows)} rows: {count['same']} the same, {count['registers']} differing in registers only, "
            f"{count['operands']} in other operands, {count['left']} only on the left, {count['right']} only on "
            "the right")


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
