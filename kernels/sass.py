"""SASS and its register life ranges, parsed from ``nvdisasm -c -plr -lrm narrow``.

nvdisasm ends each instruction line with ``// | <count> <one char per
register> | PRED | UGPR |``; the header rows above the function number the
register columns. Characters: space dead, ``:`` live, ``^`` defined,
``v`` used (last use when the next row is blank), ``x`` used and
redefined. The count is the number of live general registers on that row.

This module turns that into the engine's model: a *live range* is one
definition of a physical register to its last use (the SASS counterpart of
a value), with segments, an interval per range and the pressure at every
instruction, so the views that draw a plan draw the compiled kernel too.

Invariant: ``pressure[i]`` is nvdisasm's count on row i, equal to the number of live
ranges covering row i (an ``x`` row closes the old range just before it); the parser
checks it equals the number of registers it reads as live on that row
(a mismatch is an error, not a guess). ``read_value``/``read_row`` are the
``v`` and ``x`` marks, each on the range live in its register just before
(an ``x`` row reads the range that ends on the row above it). A ``v`` read
that the register outlives ends its range there and a new one, not
``defined``, starts on the next row: one value can be several ranges
(gui.model.timeline.sass_chains joins them for the views).

Examples
--------
>>> text = '''// | GPR | PRED |
... // |     0000 | # 0 |
... // |     0000 | # 0 |
... // |   # 0123 | # 0 |
...         /*0000*/   MOV R0, c[0x0][0x0] ;   // |   1 ^    | 0   |
...         /*0010*/   MOV R1, R0 ;            // |   2 v^   | 0   |
...         /*0020*/   FFMA R2, R1, R1, R1 ;   // |   2  v^  | 0   |
...         /*0030*/   STG.E [R2], R2 ;        // |   1   v  | 0   |
...         /*0040*/   EXIT ;                  // |   0      | 0   |'''
>>> s = parse_sass(text)
>>> s.maxlive, s.pressure.tolist(), s.names
(2, [1, 2, 2, 1, 0], ('R0@0000', 'R1@0010', 'R2@0020'))
>>> s.read_value.tolist(), s.read_row.tolist(), s.defined.tolist()    # R0 read on row 1, R1 on 2, R2 on 3
([0, 1, 2], [1, 2, 3], [True, True, True])
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from engine.model.arch import BankModel
from engine.base.errors import RegtuneError
from engine.analysis.liveness import PressureFigures

_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*(//.*)?$")
_REGISTER = re.compile(r"(?<![\w.])R(\d+)(?![\w])")
#: SASS opcode prefixes per instruction-mix category.
MIX = {
    "global loads": ("LDG",), "global stores": ("STG",), "shared": ("LDS", "STS"),
    "spill loads (LDL)": ("LDL",), "spill stores (STL)": ("STL",),
    "FMA": ("FFMA", "HFMA2", "DFMA", "IMAD", "FMUL", "FADD", "HADD2", "HMUL2"),
    "shuffles": ("SHFL",), "special functions": ("MUFU",), "branches": ("BRA", "EXIT", "BSYNC", "BSSY", "RET"),
}


class SassError(RegtuneError):
    """nvdisasm output this parser does not understand (quotes the line)."""


@dataclass(frozen=True)
class SassLiveness(PressureFigures):
    """The compiled kernel's instructions and register live ranges, in the engine's terms.

    Attributes
    ----------
    offsets, texts : each SASS instruction's byte offset and text (opcode and operands)
    names : one name per live range, ``R<reg>@<offset of its definition>``
    registers : the physical register of each live range
    seg_value, seg_start, seg_end : segments (instruction rows, inclusive), as in the engine's Analysis
    start, end : each range's interval
    pressure : live general registers at each instruction (nvdisasm's count)
    register_columns : how many register columns nvdisasm printed
    read_value, read_row : range ``read_value[k]`` is read by the instruction on row ``read_row[k]`` (nvdisasm's
        ``v`` and ``x`` marks), sorted by row
    defined : whether each range starts at an instruction that writes it (``^`` or ``x``); False for a
        register live before the first instruction and for a range that goes on after a read
    """

    offsets: tuple
    texts: tuple
    names: tuple
    registers: np.ndarray
    seg_value: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pressure: np.ndarray
    register_columns: int
    read_value: np.ndarray
    read_row: np.ndarray
    defined: np.ndarray

    @property
    def assignment(self) -> dict:
        """Live range -> (register,): the shape of a plan's assignment, for drawing."""
        return {n: (int(r),) for n, r in zip(self.names, self.registers)}

    def opcodes(self) -> list[str]:
        return [t.split()[0] if not t.startswith("@") else t.split()[1] for t in self.texts]

    def mix(self) -> dict:
        """Instruction counts per category (see :data:`MIX`) and in all."""
        counts = Counter()
        for op in self.opcodes():
            for category, prefixes in MIX.items():
                if op.startswith(prefixes):
                    counts[category] += 1
                    break
        return {"instructions": len(self.texts), **{c: counts.get(c, 0) for c in MIX}}

    def highest_register(self) -> int:
        """The highest general register any instruction names (-1 for none)."""
        return max((int(r) for t in self.texts for r in _REGISTER.findall(t)), default=-1)

    def bank_conflicts(self, model: BankModel) -> int:
        """Extra cycles the arch's bank model charges the real SASS (source registers of each instruction)."""
        total = 0
        for text in self.texts:
            operands = text.split(None, 2)[1:] if not text.startswith("@") else text.split(None, 3)[2:]
            parts = " ".join(operands).split(",")
            sources = [int(r) for part in parts[1:] for r in _REGISTER.findall(part)]
            total += model.conflicts(sources)
        return total


def _columns(lines: list[str]) -> tuple[int, int]:
    """Offset (within the GPR field) of register 0 and the number of register columns."""
    for line in lines:
        if "//" in line and "#" in line:
            field = line.split("//", 1)[1].split("|")[1]
            m = re.match(r"^(\s*#\s)(\d+)", field)
            if m:
                return len(m.group(1)), len(m.group(2))
    raise SassError("nvdisasm output has no life-range header ('// |   # 0123...'); was it run with -plr?")


def _rows(text: str) -> tuple[list, list, list, int]:
    lines = text.splitlines()
    first, width = _columns(lines)
    offsets, texts, rows = [], [], []
    for line in lines:
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        comment = m.group(3) or ""
        fields = comment[2:].split("|") if comment.startswith("//") else []
        if len(fields) < 2:
            raise SassError(f"instruction without a life-range column: {line.strip()[:120]!r}")
        gpr = fields[1].ljust(first + width)
        count = gpr[:first].strip()
        if not count.isdigit() and count != "":
            raise SassError(f"unreadable live count {count!r} in: {line.strip()[:120]!r}")
        offsets.append(m.group(1))
        texts.append(re.sub(r"\s+", " ", m.group(2)))
        rows.append((int(count or 0), gpr[first:first + width]))
    if not rows:
        raise SassError("nvdisasm output has no instructions")
    return offsets, texts, rows, width


def parse_sass(text: str) -> SassLiveness:
    """Parse ``nvdisasm -c -plr -lrm narrow`` output of one kernel (vectorised over the mark grid)."""
    offsets, texts, rows, width = _rows(text)
    counts = np.array([c for c, _ in rows], dtype=np.int64)
    grid = np.frombuffer("".join(chars for _, chars in rows).encode("ascii", "replace"), dtype=np.uint8)
    grid = grid.reshape(len(rows), width)
    bad = ~np.isin(grid, np.frombuffer(b" :^vx", dtype=np.uint8))
    if bad.any():
        i, reg = map(int, np.argwhere(bad)[0])
        raise SassError(f"unknown life-range mark {chr(grid[i, reg])!r} for R{reg} at /*{offsets[i]}*/")
    live = grid != ord(" ")
    marks = live.sum(axis=1)
    if (marks != counts).any():
        i = int(np.flatnonzero(marks != counts)[0])
        raise SassError(f"nvdisasm counts {counts[i]} live registers at /*{offsets[i]}*/, the marks show {marks[i]}")
    n = len(rows)
    col = grid.T.reshape(-1)                      # column-major: register r's rows are r*n .. r*n+n-1
    alive = live.T.reshape(-1)
    pos = np.arange(col.size)
    first_row = pos % n == 0
    prev_live = np.r_[False, alive[:-1]] & ~first_row
    prev_v = np.r_[False, col[:-1] == ord("v")] & ~first_row
    starts = np.flatnonzero(alive & (np.isin(col, (ord("^"), ord("x"))) | ~prev_live | prev_v))
    last_live = np.maximum.accumulate(np.where(alive, pos, -1))
    reg = starts // n
    nxt = np.r_[starts[1:], col.size]
    same = np.r_[reg[1:] == reg[:-1], False]
    column_end = (reg + 1) * n
    bound = np.where(same, nxt, column_end)
    end = last_live[bound - 1]
    redefined = same & (col[np.minimum(nxt, col.size - 1)] == ord("x"))
    end = np.where(redefined, nxt - 1, end)   # an x row reads the old value and starts the new one: counted once
    start_row, end_row = starts % n, end % n
    order = np.lexsort((reg, start_row))
    reg, start_row, end_row = reg[order], start_row[order], end_row[order]
    names = tuple(f"R{r}@{offsets[i]}" for r, i in zip(reg.tolist(), start_row.tolist()))
    index = np.arange(len(names), dtype=np.int64)
    read_value, read_row = _reads(col, starts, end, n, np.argsort(order))
    defined = np.isin(col[starts], (ord("^"), ord("x")))[order]
    return SassLiveness(tuple(offsets), tuple(texts), names, reg.astype(np.int64), index, start_row, end_row,
                        start_row, end_row, counts, width, read_value, read_row, defined)


def _reads(col, starts, ends, n: int, rank) -> tuple[np.ndarray, np.ndarray]:
    """(range, row) of every ``v`` and ``x`` mark of the column-major grid ``col``; ``starts``/``ends`` are the
    ranges' first and last flat positions (ascending), ``rank`` maps them to the returned range order."""
    at = np.flatnonzero((col == ord("v")) | (col == ord("x")))
    k = np.searchsorted(starts, at, side="right") - 1 - (col[at] == ord("x"))   # x: the range before its new one
    ok = (k >= 0) & (at // n == starts[np.maximum(k, 0)] // n) & (ends[np.maximum(k, 0)] >= at - (col[at] == ord("x")))
    value, row = rank[k[ok]], at[ok] % n
    order = np.lexsort((value, row))
    return value[order].astype(np.int64), row[order].astype(np.int64)
