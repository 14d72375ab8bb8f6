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

1. of the registers never held yet or whose last holder so far ended at
   least :data:`RECENT` positions before its start, one in the bank that
   adds fewest bank conflicts to the instructions reading it (the default
   arch's bank model, :func:`engine.model.arch.bank_conflicts`), the one
   freed longest ago (never held: the lowest first);
2. else the one freed longest ago.

Values a copy joins (``%v = mov %u``) that the colouring put in one
register move together, so a copy it coalesced stays free; and a value
copied from or to one chosen already takes that one's register where it
is free (biased colouring, Briggs et al. 1994), before rules 1 and 2.

Invariant: a value only ever moves to a register below the allocation's
count that no value it interferes with holds, so a valid allocation stays
valid and its register count never rises; the spills, the program and
every value's width and alignment are unchanged.

The example in :func:`spread` shows both: a load moved off the register a
store is still reading, and a copy kept with its source.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.alloc.common import Allocation, _assignment
from engine.model.arch import DEFAULT_ARCH, load_arch
from engine.plan import registers_used

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
    >>> from engine.alloc.linear_scan_hull import linear_scan_hull
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
    ...           "  %z:f32 = ld.global %pa, 8\\n  st.global %pa, 8, %z\\n  st.global %pa, 0, %x\\n"
    ...           "  %y:f32 = ld.global %pa, 4\\n  %c:f32 = mov %y\\n  st.global %pa, 4, %c\\n  exit\\n")
    >>> lowest = linear_scan_hull(p, analyze(p), 8)
    >>> {n: r for n, r in lowest.assignment.items() if n != "pa"}   # y's load waits for the store of x
    {'x': (2,), 'z': (3,), 'y': (2,), 'c': (2,)}
    >>> {n: r for n, r in spread(lowest).assignment.items() if n != "pa"}   # c, a copy of y, keeps y's register
    {'x': (2,), 'z': (3,), 'y': (3,), 'c': (3,)}
    """
    analysis = allocation.analysis
    widths = analysis.widths
    base = np.full(len(widths), -1, dtype=np.int64)
    index = analysis.index
    for name, registers in allocation.assignment.items():
        base[index[name]] = registers[0]
    choice = _Choice(analysis, base, registers_used(allocation.assignment))
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
        self.banks, (self.groups, self.partners) = _Banks(analysis, base), _coalesced(analysis, base)
        self.bank_of = np.arange(count + 2) % self.banks.banks
        self.done = [False] * len(self.widths)                 # chosen already (with its group)
        self.freed = np.full(count + 2, -1, dtype=np.int64)   # the end of each register's last holder (-1: none)
        self.key_old, self.key_recent = self.freed + 1, self.freed + 1 + _RECENTLY
        self.freed[count:] = self.key_old[count:] = self.key_recent[count:] = _HELD   # the two rows past the count

    def choose(self, v: int) -> None:
        """Move ``v``, and the values the colouring coalesced with it, to a copy partner's register if free
        (:meth:`partner_register`), else to the register of the lowest :meth:`key` that none of their
        neighbours holds."""
        if self.done[v]:
            return
        w = self.widths[v]
        key = self.key(v, w)
        members = self.groups.get(v, (v,))
        for u in members:
            nb = self.graph.neighbors(u)
            at = self.base[nb]
            key[at] = _HELD
            key[at + self.top[nb]] = _HELD
        r = self.partner_register(members, key, w)
        if r < 0:
            r = _lowest(key, w, self.count)
        for u in members:
            self.base[u] = self.banks.base[u] = r
            self.done[u] = True
            for k in range(r, r + w):
                if self.end[u] > self.freed[k]:
                    self.freed[k] = self.end[u]
                    self.key_old[k], self.key_recent[k] = self.end[u] + 1, self.end[u] + 1 + _RECENTLY

    def partner_register(self, members, key: np.ndarray, width: int) -> int:
        """The register of a value chosen already that one of ``members`` is copied from or to, where no
        neighbour holds it (``key``), so that copy moves nothing (biased colouring); -1 if none."""
        for u in members:
            for p in self.partners.get(u, ()):
                r = int(self.base[p])
                if self.done[p] and (key[r:r + width] < _HELD).all():
                    return r
        return -1

    def key(self, v: int, width: int) -> np.ndarray:
        """Each register's key for ``v`` before its neighbours' are marked (the lowest is taken): registers
        never held or freed at least :data:`RECENT` positions before ``v`` starts first, by the bank stalls they
        add to ``v``'s readers (a single register only: a pair spans both banks) and then by age; the others
        after them by age."""
        old = (self.freed <= self.start[v] - RECENT) | (self.freed < 0)
        key = np.where(old, self.key_old, self.key_recent)
        added = self.banks.added(v) if width == 1 else None
        if added is not None and any(added):
            key += np.where(old, np.asarray(added, dtype=np.int64)[self.bank_of] * _STALL, 0)   # old: not the last two
        return key


class _Banks:
    """What a register's bank adds to the bank conflicts of the instructions reading a value, under the
    default arch's bank model (:meth:`engine.model.arch.BankModel.stall_added`, the step of
    :func:`engine.model.arch.bank_conflicts`)."""

    def __init__(self, analysis, base: np.ndarray):
        self.model = model = load_arch(DEFAULT_ARCH).bank_model
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
                out[b] += self.model.stall_added(c)
        return out


def _lowest(key: np.ndarray, width: int, count: int) -> int:
    """The register (a pair's even base) of the lowest key below ``count``."""
    if width == 1:
        return int(key[:count].argmin())
    return 2 * int(np.maximum(key[0:count:2], key[1 : count + 1 : 2])[: count // 2].argmin())


def _coalesced(analysis, base: np.ndarray) -> tuple[dict, dict]:
    """value -> its group, for the values a copy (``%v = mov %u``, unguarded) joins that the colouring put in one
    register: they stay in one register, so the copy stays free (what coalescing bought is never undone); and
    value -> the values a copy joins it to in another register (partners to take the register of, where free)."""
    parent: dict = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    index, partners = analysis.index, {}
    for ins in analysis.program.instructions:
        if ins.opcode == "mov" and ins.guard is None and len(ins.uses) == 1 and len(ins.defs) == 1:
            v, u = index[ins.defs[0].name], index[ins.uses[0]]
            if u != v and base[u] == base[v] >= 0 and analysis.widths[u] == analysis.widths[v]:
                parent[root(v)] = root(u)
            elif u != v and analysis.widths[u] == analysis.widths[v] > 0:
                partners.setdefault(v, []).append(u)
                partners.setdefault(u, []).append(v)
    groups: dict = {}
    for x in list(parent):
        groups.setdefault(root(x), []).append(x)
    return {x: tuple(g) for g in groups.values() if len(g) > 1 for x in g}, partners

