"""The SASS listing's rows, Qt-free: one per SASS instruction, with the columns of Nsight Compute's Source page.

Invariant: row ``i`` is the life-range listing's instruction ``i``
(:class:`kernels.sass.SassLiveness`): its offset and text, the general
registers live there (nvdisasm's count), the stall cycles its control bits
encode (None when the ``-hex`` listing did not align: no strip) and the plan
instruction the line map says it came from (None: no link). The same rows
make the CSV of per-instruction pressure (:func:`pressure_csv`), beside the plan's own rows
(:func:`plan_rows`: the engine's pressure at each plan instruction).

Examples
--------
>>> from types import SimpleNamespace
>>> import numpy as np
>>> sass = SimpleNamespace(offsets=("0000", "0010"), texts=("MOV R1, c[0x0][0x28]", "EXIT"),
...                        pressure=np.array([1, 0]))
>>> rows = sass_rows(sass, (None, 0), None, None)
>>> [(r.offset, r.live, r.stall, r.ir) for r in rows]
[('0000', 1, None, None), ('0010', 0, None, 0)]
>>> print(pressure_csv([], {"sm_80": rows}), end="")
source,arch,row,offset,instruction,live_registers,stall_cycles,plan_instruction
sass,sm_80,0,0000,"MOV R1, c[0x0][0x28]",1,,
sass,sm_80,1,0010,EXIT,0,,0
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

#: the listing's columns, left to right
COLUMNS = ("offset", "SASS", "live", "stall", "plan instruction")
COLUMN_TIPS = ("the instruction's byte offset in the kernel",
               "the SASS instruction as nvdisasm prints it",
               "general registers live at this instruction (nvdisasm --print-life-ranges)",
               "stall cycles ptxas encoded in the instruction's control bits (not run-time stalls)",
               "the plan instruction this SASS instruction came from (the kernel's line info)")


@dataclass(frozen=True)
class SassRow:
    """One SASS instruction's row (see the module invariant)."""

    offset: str
    text: str
    live: int
    stall: int | None
    ir: int | None
    ir_text: str = ""

    def cells(self) -> tuple[str, ...]:
        """The row's text in :data:`COLUMNS` order."""
        return (f"/*{self.offset}*/", self.text, str(self.live), "" if self.stall is None else str(self.stall),
                "" if self.ir is None else f"{self.ir}: {self.ir_text}".rstrip(": "))


def plan_instruction_text(ins) -> str:
    """A plan instruction in a few words: its opcode and what it writes (``fma -> %acc_1_2``)."""
    defs = ", ".join(f"%{d.name}" for d in ins.defs)
    return f"{ins.opcode} -> {defs}" if defs else ins.opcode


def sass_rows(sass, ir_of_row, strip, program) -> list[SassRow]:
    """The rows of ``sass`` (a SassLiveness); ``ir_of_row``: the line map's plan instruction of each row (a
    :attr:`kernels.sass_lines.SassIrMap.ir`, or None: no map); ``strip``: a
    :class:`gui.model.timeline.StallStrip` of the same rows, or None; ``program``: the plan's program (for the
    plan instruction's words), or None."""
    stalls = strip.stall.tolist() if strip is not None else [None] * len(sass.texts)
    irs = list(ir_of_row) if ir_of_row else [None] * len(sass.texts)
    code = program.instructions if program is not None else ()
    out = []
    for i, (offset, text) in enumerate(zip(sass.offsets, sass.texts)):
        ir = irs[i] if i < len(irs) else None
        words = plan_instruction_text(code[ir]) if ir is not None and ir < len(code) else ""
        out.append(SassRow(str(offset), text, int(sass.pressure[i]), stalls[i], ir, words))
    return out


@dataclass(frozen=True)
class PlanRow:
    """One plan instruction's row: its text and the registers live at it (the engine's pressure)."""

    text: str
    live: int


def plan_rows(program, pressure) -> list[PlanRow]:
    """The plan's rows: each instruction of ``program`` and ``pressure[i]`` (an Analysis's pressure).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
    >>> [(r.text, r.live) for r in plan_rows(p, analyze(p).pressure)]
    [('%x:f32 = mov 1', 1), ('st.global %x, 0, %x', 0), ('exit', 0)]
    """
    return [PlanRow(str(ins), int(live)) for ins, live in zip(program.instructions, pressure)]


#: the pressure CSV's columns: a row per plan instruction (source "plan") and per SASS instruction ("sass")
CSV_COLUMNS = ("source", "arch", "row", "offset", "instruction", "live_registers", "stall_cycles",
               "plan_instruction")


def pressure_csv(plan: list[PlanRow], sass: dict, plan_arch: str = "") -> str:
    """Per-instruction pressure as CSV: the plan's rows, then each arch's SASS rows (``sass``: arch -> rows of
    :func:`sass_rows`); empty cells where a figure does not apply or was not had."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for i, r in enumerate(plan):
        w.writerow(["plan", plan_arch, i, "", r.text, r.live, "", i])
    for arch, rows in sass.items():
        for i, r in enumerate(rows):
            w.writerow(["sass", arch, i, r.offset, r.text, r.live, "" if r.stall is None else r.stall,
                        "" if r.ir is None else r.ir])
    return buf.getvalue()


def sass_rows_of(m, arch: str, program) -> list[SassRow]:
    """The SASS rows of measurement ``m`` (a kernels.measurement.Measurement with listings) on ``arch``: its
    line map's plan instructions and its encoded stalls where the listings give them ([] without a listing)."""
    from gui.model.timeline import StallStrip, stall_strip
    from kernels.control import ControlError

    s = m.sass_liveness(arch)
    if s is None:
        return []
    mapped = m.sass[arch].ir_map if arch in m.sass else None
    try:
        listing = m.control_listing(arch)
        strip = stall_strip(s, listing) if listing is not None else None
    except ControlError:
        strip = None
    return sass_rows(s, mapped.ir if mapped is not None and mapped.ir else None,
                     strip if isinstance(strip, StallStrip) else None, program)


def plan_pressure_csv(plan, pressure, m=None) -> str:
    """The pressure CSV of ``plan`` (its per-instruction ``pressure``) and, when measurement ``m`` of that plan
    is given, of its SASS on every arch it was built for."""
    sass = {arch: sass_rows_of(m, arch, plan.program) for arch in m.archs} if m is not None else {}
    return pressure_csv(plan_rows(plan.program, pressure), sass, (plan.options or {}).get("arch", ""))
