"""Register choice: which free register each value takes, once the colouring has fixed how many.

A colouring decides the count; which of the free registers a value gets
decides the false dependences of the plan (:mod:`engine.model.ilp`). The
colourings here take the lowest free register, so the register a value
just freed is the next one taken: in GEMM's epilogue each C load lands in
the register the previous C value left and must wait until that value's
last read has read it (a store reads late and holds a read scoreboard),
which chains every load behind the one before. ptxas allocates the plan's
PTX again and keeps no such chain, so a plan that has one is slower in the
model than the kernel built from it.

:func:`spread` chooses again at the same count, as a round-robin choice
does (the register freed longest ago): the values are visited by the start
of their live range, and each takes, of the registers (even-aligned pairs
for 64-bit values) below the count that none of its interfering
neighbours holds at that moment:

1. the register of a value it is copied from or to (``%v = mov %u``),
   where free: the copy then moves nothing (biased colouring, Briggs);
2. else, of the registers whose last holder so far ended at least
   :data:`RECENT` positions before its start, one in the bank that adds
   fewest bank conflicts to the instructions reading it (the default
   arch's bank model, :func:`engine.model.arch.bank_conflicts`), the one
   freed longest ago;
3. else the one freed longest ago.

Registers not yet held count as freed longest ago, the lowest first.

Invariant: a value only ever moves to a register that no value it
interferes with holds, so a valid allocation stays valid; the register
count, the spills, the program and every value's width and alignment are
unchanged.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.alloc.linear_scan_hull import linear_scan_hull
>>> from engine.analysis.liveness import analyze
>>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n"
...           "  %x:f32 = ld.global %pa, 0\\n  st.global %pa, 0, %x\\n"
...           "  %y:f32 = ld.global %pa, 4\\n  st.global %pa, 4, %y\\n"
...           "  %z:f32 = ld.global %pa, 8\\n  %w:f32 = ld.global %pa, 12\\n"
...           "  st.global %pa, 8, %z\\n  st.global %pa, 12, %w\\n  exit\\n")
>>> lowest = linear_scan_hull(p, analyze(p), 8)   # the textbook scan: the lowest free register
>>> [lowest.assignment[n] for n in "xyzw"]        # y's load waits for the store of x to read R2
[(2,), (2,), (2,), (3,)]
>>> [spread(lowest).assignment[n] for n in "xyzw"]
[(2,), (3,), (2,), (3,)]
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.alloc.common import Allocation, _assignment
from engine.model.arch import DEFAULT_ARCH, load_arch

__all__ = ["RECENT", "spread"]

#: how many positions (two an instruction) before a value's start a register must have been freed for the
#: choice to weigh its bank: a register freed more recently is taken only if none older is free, the one freed
#: longest ago first, as its last reader may still be reading it
RECENT = 128


def spread(allocation: Allocation) -> Allocation:
    """``allocation`` with each value in the free register freed longest ago, at the same count (see the
    module's text): the same program, spills and count, fewer false dependences.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.alloc.dsatur import dsatur
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n"
    ...           "  %x:f32 = ld.global %pa, 0\\n  st.global %pa, 0, %x\\n"
    ...           "  %y:f32 = ld.global %pa, 4\\n  st.global %pa, 4, %y\\n"
    ...           "  %z:f32 = ld.global %pa, 8\\n  %w:f32 = ld.global %pa, 12\\n"
    ...           "  st.global %pa, 8, %z\\n  st.global %pa, 12, %w\\n  exit\\n")
    >>> a = dsatur(p, analyze(p), 8)        # spread already: y takes R3, not the R2 that x just left
    >>> {n: r for n, r in a.assignment.items() if n != "pa"}
    {'x': (2,), 'y': (3,), 'z': (2,), 'w': (3,)}
    """
    analysis = allocation.analysis
    widths = analysis.widths
    base = np.full(len(widths), -1, dtype=np.int64)
    index = analysis.index
    for name, registers in allocation.assignment.items():
        base[index[name]] = registers[0]
    count = int(max((base + np.maximum(widths, 1)).max(initial=0), 0))
    choice = _Choice(analysis, base, count)
    for v in np.lexsort((np.arange(len(widths)), analysis.start)).tolist():
        if base[v] >= 0:
            choice.choose(v)
    return replace(allocation, assignment=_assignment(analysis, choice.base))


_HELD = np.iinfo(np.int64).max     # the key of a register a neighbour holds: never taken
_RECENTLY = 1 << 60                # added to the key of a register freed less than RECENT positions ago
_STALL = 1 << 40                   # added to the key per bank stall the register would add


class _Choice:
    """The state of one :func:`spread`: where each value is now, when each register was last freed."""

    def __init__(self, analysis, base: np.ndarray, count: int):
        self.base, self.count, self.graph = base, count, analysis.interference
        self.widths, self.start, self.end = (a.tolist() for a in (analysis.widths, analysis.start, analysis.end))
        # a neighbour at ``base`` holds ``base`` and ``base + top``: itself again, or a pair's odd half (a predicate,
        # at -1 with top -1, marks the two rows past the count, which are held anyway)
        self.top = np.where(analysis.widths == 2, 1, np.where(analysis.widths == 0, -1, 0))
        self.banks, self.copies = _Banks(analysis, base), _copies(analysis)
        self.bank_of = np.arange(count + 2) % self.banks.banks
        self.freed = np.full(count + 2, -1, dtype=np.int64)   # the end of each register's last holder (-1: none)
        self.freed[count:] = _HELD
        self.key_old, self.key_recent = self.freed + 1, self.freed + 1 + _RECENTLY
        self.key_old[count:] = self.key_recent[count:] = _HELD

    def choose(self, v: int) -> None:
        """Move ``v`` to its register: a copy partner's if it is free, else the lowest :meth:`key`."""
        w = self.widths[v]
        key = self.key(v, w)
        nb = self.graph.neighbors(v)
        at = self.base[nb]
        key[at] = _HELD
        key[at + self.top[nb]] = _HELD
        r = _copy_register(self.base, self.copies.get(v, ()), key, w)
        if r < 0:
            r = int(key[: self.count].argmin()) if w == 1 else \
                2 * int(np.maximum(key[0 : self.count : 2], key[1 : self.count + 1 : 2])[: self.count // 2].argmin())
        self.base[v] = self.banks.base[v] = r
        for k in range(r, r + w):
            if self.end[v] > self.freed[k]:
                self.freed[k] = self.end[v]
                self.key_old[k], self.key_recent[k] = self.end[v] + 1, self.end[v] + 1 + _RECENTLY

    def key(self, v: int, width: int) -> np.ndarray:
        """Each register's key for ``v`` before its neighbours' are marked (the lowest is taken): registers
        freed at least :data:`RECENT` positions before ``v`` starts first, by the bank stalls they add to
        ``v``'s readers (a single register only: a pair spans both banks) and then by age; the others after
        them by age."""
        old = self.freed < self.start[v] - RECENT
        key = np.where(old, self.key_old, self.key_recent)
        added = self.banks.added(v) if width == 1 else None
        if added is not None and any(added):
            key += np.where(old, np.asarray(added, dtype=np.int64)[self.bank_of] * _STALL, 0)   # old: not the last two
        return key


class _Banks:
    """What a register's bank adds to the bank conflicts of the instructions reading a value, under the
    default arch's bank model (:func:`engine.model.arch.bank_conflicts`): an instruction stalls once more
    for each further ``reads_per_bank`` distinct source registers in one bank."""

    def __init__(self, analysis, base: np.ndarray):
        model = load_arch(DEFAULT_ARCH).bank_model
        self.banks, self.reads, self.base = model.banks, model.reads_per_bank, base.tolist()
        self.pairs = (analysis.widths == 2).tolist()
        reads, widths = analysis.operand_reads, analysis.widths
        n = max(len(widths), 1)
        codes = np.sort(reads[widths[reads[:, 1]] > 0] @ np.array([n, 1]))
        codes = codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes
        ins, val = codes // n, codes % n                                  # each (instruction, value) read once
        words = np.bincount(ins, weights=widths[val])                     # source registers of each instruction
        bank_fills = words[ins] - widths[val] >= self.reads               # the other sources could fill a bank
        self.operands: dict[int, list[int]] = {}
        self.readers: dict[int, list[int]] = {}
        for i, v in zip(ins.tolist(), val.tolist()):
            self.operands.setdefault(i, []).append(v)
        for i, v in zip(ins[bank_fills].tolist(), val[bank_fills].tolist()):
            self.readers.setdefault(v, []).append(i)

    def added(self, v: int) -> list[int]:
        """The stalls each bank would add to ``v``'s readers, with their other operands where they are now."""
        out = [0] * self.banks
        for i in self.readers.get(v, ()):
            regs = set()
            for u in self.operands[i]:
                r = self.base[u]
                if u != v and r >= 0:
                    regs.add(r)
                    if self.pairs[u]:
                        regs.add(r + 1)
            if len(regs) < self.reads:
                continue
            per = [0] * self.banks
            for r in regs:
                per[r % self.banks] += 1
            for b, c in enumerate(per):
                out[b] += c > 0 and c % self.reads == 0
        return out


def _copies(analysis) -> dict:
    """value -> the values it is copied from or to (``%v = mov %u``, unguarded, the same width), in program order."""
    out: dict = {}
    index, widths = analysis.index, analysis.widths
    for ins in analysis.program.instructions:
        if ins.opcode == "mov" and ins.guard is None and len(ins.uses) == 1 and len(ins.defs) == 1:
            v, u = index[ins.defs[0].name], index[ins.uses[0]]
            if widths[u] == widths[v] and u != v:
                out.setdefault(v, []).append(u)
                out.setdefault(u, []).append(v)
    return out


def _copy_register(base: np.ndarray, partners, key: np.ndarray, width: int) -> int:
    """The register of the first value of ``partners`` (copied to or from the value) that no neighbour holds
    (``key``); -1 if none."""
    for u in partners:
        r = int(base[u])
        if r >= 0 and (key[r:r + width] < _HELD).all():
            return r
    return -1
