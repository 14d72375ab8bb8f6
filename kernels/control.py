"""ptxas's own schedule, read from the control bits of the SASS (``nvdisasm -hex``), and the issue cycles it implies.

Since Volta (sm_70, and so sm_80..sm_90) every instruction is 128 bits,
printed by ``nvdisasm -hex`` as two 64-bit words, low word first. The top
23 bits of the high word (bits 105..127 of the instruction, ``hi >> 41``)
are the control code ptxas wrote, from bit 0 of the code up:

======  =====  ==========================================================
bits    field  meaning
======  =====  ==========================================================
0-3     stall  cycles the warp waits before issuing its next instruction
4       yield  0 = the scheduler may switch warps here (printed ``Y``)
5-7     wbar   scoreboard this instruction's result releases (7: none)
8-10    rbar   scoreboard released once its sources are read (7: none)
11-16   wait   mask of scoreboards to wait on before issuing
17-20   reuse  operand reuse-cache flags, one per source slot
======  =====  ==========================================================

Source of the layout: CuAssembler (github.com/cloudcores/CuAssembler),
``CuAsm/CuSMVersion.py`` ``splitControlCodes_7x_8x`` (``code2 >> 41``, the
23-bit control code of sm_7x/8x) and ``CuAsm/common.py`` ``decodeCtrlCodes``
(the field masks above, yield printed ``Y`` when its bit is 0, barrier 7 as
none), which cite the maxas wiki "Control-Codes" and Jia et al. 2019,
"Dissecting the NVidia Turing T4 GPU via Microbenchmarking" (arXiv
1903.07486), continuing Jia et al. 2018 ("Dissecting the NVIDIA Volta GPU
Architecture via Microbenchmarking", arXiv 1804.06826).

Issue cycles per warp (:func:`issue_cycles`) is a model, labelled as one:
one warp alone, in order, along the executed path. Each instruction issues
when the scoreboards its wait mask names are released, then holds the warp
``max(stall, 1)`` cycles (the stall as encoded; the issue slot is at least
one cycle). A write barrier is released its latency after its instruction
issues: the variable latencies are not in the SASS, they come from the
architecture's latency table (resources/arch/*.toml, every figure with its
source), the opcode's class by :data:`CLASSES`; a read barrier is taken as released
within the instruction's own encoded stall (no published figure is in the
table for the operand read of a memory instruction). Loops: see
:func:`executed_path`.

Invariant: every figure is decoded from the words nvdisasm printed or
taken from the architecture's latency table; a listing this parser does not understand, or
a control flow it cannot price, is an error naming the instruction, never
a guess.

Examples
--------
>>> c = decode_control(0x001FC800078E38FF)    # LEA R0, R3, R0, 0x7 after two S2R (sm_80)
>>> c.stall, c.yield_hint, c.write_barrier, c.read_barrier, c.wait_mask, c.reuse
(4, True, None, None, 1, 0)
>>> str(c)
'----:B0-----:R-:W-:Y:S04'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.base.errors import RegtuneError

#: SASS opcode prefixes -> class of the architecture's latency table (``[latency]`` in resources/arch/*.toml,
#: :func:`engine.model.arch.load_latencies`), first match wins; an opcode that sets a write barrier and is in none
#: (S2R, LDC, ...) is priced at the table's ``default``.
CLASSES = (("ld_shared", ("LDS", "LDSM", "ATOMS")), ("st_shared", ("STS",)), ("ld_local", ("LDL",)),
           ("st_local", ("STL",)), ("st_global", ("STG", "ST.", "ST ")),
           ("ld_global", ("LDG", "LD.", "LD ", "ATOM", "RED")), ("mufu", ("MUFU",)), ("shfl", ("SHFL",)),
           ("cvt", ("F2F", "F2I", "I2F", "I2I", "FRND")), ("dfma", ("DFMA", "DADD", "DMUL")))
NO_BARRIER = 7


class ControlError(RegtuneError):
    """An ``nvdisasm -hex`` listing this parser does not understand, or a path it cannot price."""


@dataclass(frozen=True)
class Control:
    """The control code of one instruction (see the module docstring for the bit layout)."""

    stall: int
    yield_hint: bool
    write_barrier: int | None
    read_barrier: int | None
    wait_mask: int
    reuse: int

    def __str__(self) -> str:
        """CuAssembler's notation: ``reuse:Bwait:Rread:Wwrite:Y:Sstall``."""
        reuse = "".join("R" if self.reuse >> i & 1 else "-" for i in range(4))
        wait = "".join(str(i) if self.wait_mask >> i & 1 else "-" for i in range(6))
        bar = (lambda b: "-" if b is None else str(b))
        return (f"{reuse}:B{wait}:R{bar(self.read_barrier)}:W{bar(self.write_barrier)}:"
                f"{'Y' if self.yield_hint else '-'}:S{self.stall:02d}")


def decode_control(high_word: int) -> Control:
    """The control code in the top 23 bits of an instruction's high 64-bit word."""
    if not 0 <= high_word < 1 << 64:
        raise ControlError(f"not a 64-bit word: {high_word:#x}")
    code = high_word >> 41
    wbar, rbar = code >> 5 & 7, code >> 8 & 7
    return Control(code & 0xF, not code >> 4 & 1, None if wbar == NO_BARRIER else wbar,
                   None if rbar == NO_BARRIER else rbar, code >> 11 & 0x3F, code >> 17 & 0xF)


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction of a ``-hex`` listing: offset, text, its two words and their control code."""

    offset: int
    text: str
    low: int
    high: int
    control: Control

    @property
    def opcode(self) -> str:
        parts = self.text.split()
        return parts[1] if parts[0].startswith("@") else parts[0]

    @property
    def predicated(self) -> bool:
        return self.text.startswith("@") and not self.text.startswith("@PT ")


_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_SECOND = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_LABEL = re.compile(r"^([.$\w]+):\s*$")
_TARGET = re.compile(r"`\(([.$\w]+)\)")


@dataclass(frozen=True)
class Listing:
    """The instructions of one kernel's ``nvdisasm -hex`` listing, and where each label points."""

    instructions: tuple
    labels: dict

    def index(self, offset: int) -> int:
        return next(i for i, ins in enumerate(self.instructions) if ins.offset == offset)


def parse_hex(text: str) -> Listing:
    """Parse ``nvdisasm -hex -c`` output of a single kernel."""
    lines = text.splitlines()
    found, labels, pending = [], {}, []
    for n, line in enumerate(lines):
        if m := _LABEL.match(line.strip()):
            pending.append(m.group(1))
            continue
        m = _LINE.match(line)
        if not m:
            continue
        second = _SECOND.match(lines[n + 1]) if n + 1 < len(lines) else None
        if second is None:
            raise ControlError(f"instruction without its second 64-bit word: {line.strip()[:120]!r}")
        offset, high = int(m.group(1), 16), int(second.group(1), 16)
        found.append(Instruction(offset, re.sub(r"\s+", " ", m.group(2)), int(m.group(3), 16), high,
                                 decode_control(high)))
        labels.update({name: offset for name in pending})
        pending = []
    if not found:
        raise ControlError("nvdisasm output has no instructions with encodings; was it run with -hex?")
    return Listing(tuple(found), labels)


def _target(listing: Listing, ins: Instruction) -> int:
    m = _TARGET.search(ins.text)
    if not m or m.group(1) not in listing.labels:
        raise ControlError(f"branch without a known target at /*{ins.offset:04x}*/: {ins.text!r}")
    return listing.index(listing.labels[m.group(1)])


_JUMPS = ("BRA", "CALL", "JMP")


def loops(listing: Listing) -> list[tuple[int, int]]:
    """(first, last) instruction index of each SASS loop: a branch back to an earlier instruction (a branch to
    itself, the trap ptxas puts after the last EXIT, is not a loop)."""
    found = []
    for i, x in enumerate(listing.instructions):
        if x.opcode.startswith(_JUMPS) and (t := _target(listing, x)) < i:
            found.append((t, i))
    return found


def executed_path(listing: Listing, trips: dict, forward_taken: bool = True) -> tuple[list[int], str]:
    """Indices of the instructions one warp issues, and a sentence saying how loops were weighted.

    The path starts at offset 0 and ends at the first unpredicated EXIT;
    a predicated EXIT is not taken (the thread is inside the grid). An
    unpredicated BRA/JMP is followed, a CALL pushes its return and RET pops
    it. A predicated forward branch is taken (ptxas guards its slow paths,
    e.g. of a reciprocal, by branching to the common path). Loops: when the
    SASS has exactly one and the program exactly one counted loop
    (``trips``: label -> N from :func:`engine.ir.cfg.loop_trips`), the
    instructions from its first to its back edge run N times; on the last
    pass a predicated branch out of the body (ptxas's loop exit, a BRA or a
    ``CALL.REL.NOINC``) is taken, on the others it is not. With
    ``forward_taken=False`` a predicated forward branch outside that role is
    not taken: the guarded code runs, as the plan's ILP model runs the
    longer side of an ``if`` (GEMM's ``beta != 0`` epilogue), so the two
    models price the same work. The SASS loop is
    assumed to be the program's loop once per trip (see
    :func:`kernels.report.schedule_figures` for the check against unrolling).
    Any other loop shape is an error.
    """
    ins = listing.instructions
    found = loops(listing)
    if found and (len(found) != 1 or len(trips) != 1):
        raise ControlError(f"{len(found)} loop(s) in the SASS and {len(trips)} counted loop(s) in the program: "
                           "issue cycles are priced only for one SASS loop matched to one program loop")
    first, last = found[0] if found else (-1, -1)
    runs = next(iter(trips.values())) if found else 0
    path, returns, i, passes = [], [], 0, 1
    while True:
        if not 0 <= i < len(ins):
            raise ControlError("the executed path runs past the last instruction without an EXIT")
        if len(path) >= 50_000_000:
            raise ControlError("the executed path is longer than 50,000,000 instructions")
        x = ins[i]
        path.append(i)
        if x.opcode == "EXIT" and not x.predicated:
            break
        i = _next(listing, i, returns, (first, last), passes >= runs, forward_taken)
        if i == first and path[-1] == last:
            passes += 1
    note = (f"the SASS loop /*{ins[first].offset:04x}*/../*{ins[last].offset:04x}*/ weighted by the program "
            f"loop's {runs} trips" if found else "straight-line path (no loop in the SASS)")
    return path, note


def _next(listing: Listing, i: int, returns: list, loop: tuple, last_pass: bool, forward_taken: bool = True) -> int:
    """The index issued after instruction ``i`` (rules in :func:`executed_path`)."""
    x = listing.instructions[i]
    first, last = loop
    if x.opcode.startswith("RET"):
        if x.predicated or not returns:
            raise ControlError(f"a return the path cannot follow at /*{x.offset:04x}*/: {x.text!r}")
        return returns.pop()
    if not x.opcode.startswith(_JUMPS):
        return i + 1
    target = _target(listing, x)
    if i == last:
        if last_pass and not x.predicated:
            raise ControlError(f"the loop ending at /*{x.offset:04x}*/ has no predicated branch out of its body "
                               "to leave it by")
        return i + 1 if last_pass else target
    if x.predicated and first <= i < last and not first <= target <= last:
        taken = last_pass                         # the loop's exit
    else:
        taken = x.predicated and target > i and forward_taken or not x.predicated
    if taken and x.opcode.startswith("CALL"):
        returns.append(i + 1)
    return target if taken else i + 1


def latency_class(opcode: str) -> str:
    """The latency-table class of a SASS opcode that sets a write barrier (see :data:`CLASSES`)."""
    name = opcode + " "
    return next((c for c, prefixes in CLASSES if name.startswith(prefixes)), "default")


@dataclass(frozen=True)
class IssueCycles:
    """Issue cycles per warp along the executed path (a model; see the module docstring)."""

    cycles: int
    stall_cycles: int
    barrier_wait_cycles: int
    instructions: int
    loop: str


def issue_cycles(listing: Listing, latencies: dict, trips: dict | None = None,
                 forward_taken: bool = True) -> IssueCycles:
    """Price the executed path of ``listing``: encoded stalls plus waits on scoreboards, each released the
    ``latencies`` (class -> cycles, an arch's latency table) of its instruction's class after it issued
    (``forward_taken``: see :func:`executed_path`).

    Examples
    --------
    >>> word = lambda code: code << 41
    >>> text = '''  /*0000*/ LDG.E R0, [R2.64] ; /* 0x0000000002007981 */
    ...                                     /* 0x%016x */
    ...   /*0010*/ FADD R0, R0, R0 ; /* 0x0000000000007221 */
    ...                                     /* 0x%016x */
    ...   /*0020*/ EXIT ; /* 0x000000000000794d */
    ...                                     /* 0x%016x */''' % (word(0x701), word(0x7E4 | 1 << 11), word(0x7E5))
    >>> r = issue_cycles(parse_hex(text), {"ld_global": 234, "default": 4})
    >>> r.stall_cycles, r.barrier_wait_cycles, r.cycles    # LDG at 0, FADD waits to 234, EXIT at 238
    (10, 233, 243)
    """
    path, note = executed_path(listing, trips or {}, forward_taken)
    ready = [0] * 6
    now = stalls = waited = 0
    for i in path:
        x = listing.instructions[i]
        c = x.control
        start = max([now] + [ready[b] for b in range(6) if c.wait_mask >> b & 1])
        waited += start - now
        if c.write_barrier is not None:
            ready[c.write_barrier] = max(ready[c.write_barrier], start + latencies[latency_class(x.opcode)])
        if c.read_barrier is not None:
            ready[c.read_barrier] = max(ready[c.read_barrier], start + max(c.stall, 1))
        stalls += c.stall
        now = start + max(c.stall, 1)
    return IssueCycles(now, stalls, waited, len(path), note)


#: SASS memory opcodes (the part before the first dot) -> which traffic they are: global or local (spills)
_TRAFFIC = {"LDG": "global", "STG": "global", "LDL": "local", "STL": "local"}
#: a width suffix of a SASS load or store -> its bytes per thread (no suffix: 32 bits)
_WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


@dataclass(frozen=True)
class SassTraffic:
    """Bytes one thread moves along the SASS's executed path: global (LDG, STG) and local (LDL, STL)."""

    global_bytes: int
    local_bytes: int

    @property
    def total(self) -> int:
        return self.global_bytes + self.local_bytes


def traffic(listing: Listing, trips: dict | None = None) -> SassTraffic:
    """The bytes one thread loads and stores along the executed path (:func:`executed_path`), by each
    opcode's width suffix (``.64``: 8 bytes, ``.128``: 16, ``.U8``: 1, none: 4).

    Examples
    --------
    >>> text = '''  /*0000*/ LDG.E.64 R0, [R2.64] ; /* 0x0000000002007981 */
    ...                                     /* 0x000fe20000000000 */
    ...   /*0010*/ STL [R1], R0 ; /* 0x0000000000007221 */
    ...                                     /* 0x000fe20000000000 */
    ...   /*0020*/ LDG.E.U8 R4, [R2.64] ; /* 0x0000000002007981 */
    ...                                     /* 0x000fe20000000000 */
    ...   /*0030*/ EXIT ; /* 0x000000000000794d */
    ...                                     /* 0x000fe20000000000 */'''
    >>> traffic(parse_hex(text))
    SassTraffic(global_bytes=9, local_bytes=4)
    """
    path, _ = executed_path(listing, trips or {})
    moved = {"global": 0, "local": 0}
    for i in path:
        parts = listing.instructions[i].opcode.split(".")
        if parts[0] in _TRAFFIC:
            moved[_TRAFFIC[parts[0]]] += next((_WIDTHS[p] for p in parts[1:] if p in _WIDTHS), 4)
    return SassTraffic(moved["global"], moved["local"])
