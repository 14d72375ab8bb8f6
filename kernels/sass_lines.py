"""Each SASS instruction's IR instruction, read from the kernel's line info (``nvdisasm -c -g``).

numba's ``lineinfo=True`` puts ``.loc`` lines in the PTX; they name lines of
the generated module, where every line an IR instruction wrote names that
one instruction (:attr:`kernels.codegen.KernelSource.ir_lines`). ptxas keeps
them as the cubin's ``.debug_line`` and ``nvdisasm -g`` prints them back as
``//## File "...", line N`` before the first instruction of each run; an
instruction without such a line above it belongs to the line above (the
table maps address ranges).

Measured (tests/kernels/test_sass_lines.py): the PTX with line info is the
PTX without it plus ``.loc``/``.file`` lines, and ptxas gives the same SASS
instructions and registers for both. The measured kernel is therefore
assembled from the PTX with those lines removed; the listing with line
info comes from a second ptxas run of the same PTX with them, and a map is
made only when its instructions equal the measured kernel's, offset by
offset (otherwise :func:`ir_map` says why there is none).

Invariant: ``SassIrMap.ir[i]`` is the IR instruction (linear index in the
plan's program) whose line SASS instruction ``i`` of the measured listing
came from, or None when its line was written by no IR instruction (the
function's entry, numba's own code) or it has no line.

Examples
--------
>>> text = '''        .text.k:
... \\t//## File "/x/<regtune-kernel>", line 55
...         /*0000*/                   MOV R1, c[0x0][0x28] ;
...         /*0010*/                   S2R R0, SR_TID.X ;
... \\t//## File "/x/<regtune-kernel>", line 57
...         /*0020*/                   EXIT ;'''
>>> listing = parse_line_listing(text)
>>> listing.lines
(55, 55, 57)
>>> m = ir_map("sm_80", listing, listing.offsets, listing.texts, {55: 3})
>>> m.ir, m.mapped
((3, 3, None), 2)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernels.sass import SassError

_LINE = re.compile(r'^\s*//## File "[^"]*", line (\d+)')
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
#: a PTX line-info directive (``.loc``, ``.file``), not ``.local``
_LINE_INFO = re.compile(r"^\s*\.(loc|file)\s")

#: the file name a generated module is compiled under (the name its line info in PTX and SASS carries; the
#: worker compiles every kernel module under it)
MODULE_FILE = "<regtune-kernel>"


def strip_line_info(ptx: str) -> str:
    """``ptx`` without its ``.loc`` and ``.file`` lines: the PTX numba writes without ``lineinfo``.

    Examples
    --------
    >>> strip_line_info(".file 1 \\"k\\"\\n.local .b8 d[4];\\n\\t.loc\\t1 5 0\\nret;\\n")
    '.local .b8 d[4];\\nret;'
    """
    return "\n".join(line for line in ptx.splitlines() if not _LINE_INFO.match(line)).rstrip()


_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
#: the opcode prefixes of a global load in PTX, whichever load order wrote it (kernels.codegen.LOAD_ORDERS)
PTX_GLOBAL_LOADS = ("ld.global", "ld.volatile.global")
#: a PTX instruction's guard (``@%p1``, ``@!%p1``), before its opcode
_PTX_GUARD = re.compile(r"^@!?%\w+\s+")


def ptx_ir_lines(ptx: str, ir_of_line: dict, module: str = MODULE_FILE) -> list[tuple]:
    """(IR instruction, text) of every PTX instruction of ``ptx`` (PTX with line info), in PTX order: the IR
    instruction (linear index; None when its line was written by none) from the last ``.loc`` line before it,
    when that names the file whose name ends in ``module`` (the generated module, as numba names it; NVVM
    declares the files after the code); the text without a guard (``@%p1``).

    Examples
    --------
    >>> ptx = ('\\t.loc\\t1 40 3\\n\\tld.global.f32 \\t%f1, [%rd1];\\n\\t.loc\\t2 7 1\\n\\tld.global.f32 \\t%f3, [%rd2];\\n'
    ...        '$L__BB0_2:\\n\\t.loc\\t1 41 3\\n\\t@%p1 add.f32 \\t%f2, %f1, %f1;\\n\\t.file\\t1 "/x/<regtune-kernel>"')
    >>> [(ir, text.split()[0]) for ir, text in ptx_ir_lines(ptx, {40: 7, 41: 6, 7: 0})]   # file 2: not the module
    [(7, 'ld.global.f32'), (None, 'ld.global.f32'), (6, 'add.f32')]
    """
    lines = ptx.splitlines()
    files = {m.group(1) for m in map(_FILE.match, lines) if m and m.group(2).endswith(module)}
    found, line = [], None
    for text in lines:
        loc = _LOC.match(text)
        if loc:
            line = int(loc.group(2)) if loc.group(1) in files else None
            continue
        text = text.strip()
        if text.endswith(";") and not text.startswith((".", "//", "{", "}")):
            found.append((ir_of_line.get(line), _PTX_GUARD.sub("", text)))
    return found


def ptx_ir_of(ptx: str, opcode_prefix: str | tuple, ir_of_line: dict, module: str = MODULE_FILE) -> list:
    """The IR instruction of every PTX instruction whose opcode starts with ``opcode_prefix`` (a string or a
    tuple of them), in PTX order (:func:`ptx_ir_lines`): where NVVM put the plan's loads, say.

    Examples
    --------
    >>> ptx = "\\t.loc\\t1 40 3\\n\\tld.global.f32 \\t%f1, [%rd1];\\n\\tadd.f32 %f2, %f1, %f1;\\n\\t.file\\t1 \\"k<regtune-kernel>\\""
    >>> ptx_ir_of(ptx, "ld.global", {40: 7}), ptx_ir_of(ptx, ("ld.", "add."), {40: 7})
    ([7], [7, 7])
    """
    return [ir for ir, text in ptx_ir_lines(ptx, ir_of_line, module) if text.startswith(opcode_prefix)]


def _plain(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class LineListing:
    """An ``nvdisasm -c -g`` listing: each instruction's offset, text and source line (None before any)."""

    offsets: tuple
    texts: tuple
    lines: tuple


def parse_line_listing(text: str) -> LineListing:
    """The instructions of an ``nvdisasm -c -g`` listing with the source line each belongs to."""
    offsets, texts, lines = [], [], []
    current = None
    for raw in text.splitlines():
        if m := _LINE.match(raw):
            current = int(m.group(1))
        elif m := _INSTRUCTION.match(raw):
            offsets.append(int(m.group(1), 16))
            texts.append(_plain(m.group(2)))
            lines.append(current)
    if not offsets:
        raise SassError("nvdisasm -g printed no instructions")
    return LineListing(tuple(offsets), tuple(texts), tuple(lines))


@dataclass(frozen=True)
class SassIrMap:
    """SASS instruction index -> IR instruction index (or None) for one architecture's measured kernel.

    ``note`` is empty when the map holds; otherwise it says why there is none and ``ir`` is empty.
    """

    arch: str
    ir: tuple
    note: str = ""

    @property
    def mapped(self) -> int:
        """How many SASS instructions map to an IR instruction."""
        return sum(1 for i in self.ir if i is not None)

    @property
    def coverage(self) -> float:
        """The share of SASS instructions that map to an IR instruction (0 without a map)."""
        return self.mapped / len(self.ir) if self.ir else 0.0

    def sass_of(self, ir_index: int) -> tuple[int, ...]:
        """The SASS instructions that came from IR instruction ``ir_index``."""
        return tuple(i for i, j in enumerate(self.ir) if j == ir_index)

    def to_dict(self) -> dict:
        return {"arch": self.arch, "ir": list(self.ir), "note": self.note,
                "mapped": self.mapped, "instructions": len(self.ir)}

    @classmethod
    def from_dict(cls, data: dict) -> SassIrMap:
        return cls(str(data["arch"]), tuple(None if i is None else int(i) for i in data["ir"]), str(data["note"]))


def ir_map(arch: str, listing: LineListing, offsets: tuple, texts: tuple, ir_of_line: dict) -> SassIrMap:
    """The map of the measured SASS (``offsets``, ``texts``) through ``listing``, the same kernel built with
    line info; no map (with a note) when the two differ in any instruction."""
    measured = tuple(_plain(t) for t in texts)
    offsets = tuple(int(o, 16) if isinstance(o, str) else int(o) for o in offsets)   # kernels.sass keeps hex text
    n = len(measured)
    padding = listing.texts[n:]          # the life-range listing leaves out the NOPs that pad the function
    if offsets != listing.offsets[:n] or measured != listing.texts[:n] or any(t != "NOP" for t in padding):
        differ = next((i for i, (a, b) in enumerate(zip(measured, listing.texts)) if a != b), min(n, len(padding) + n))
        return SassIrMap(arch, (), f"{arch}: the kernel built with line info differs from the measured one "
                                   f"at SASS instruction {differ} ({n} against {len(listing.texts)} instructions, "
                                   "padding included): no SASS-to-IR map")
    return SassIrMap(arch, tuple(None if line is None else ir_of_line.get(line) for line in listing.lines[:n]))
