"""Liveness, live segments, intervals and register pressure of a program.

Invariant (DESIGN.md's convention): a value is live from just after a
definition to its last use, so a result may take the register of an operand
whose last use it is. Positions number the two moments of instruction ``i``:
``2*i`` when it reads its operands and ``2*i+1`` when it writes its results.
A *segment* is a maximal run of consecutive positions where a value is
live (segments of consecutive blocks in layout order are joined); a value
defined and never used gets the one-position segment of its definition. The pressure at ``i`` is the width of the values covering
position ``2*i+1``: the values live after ``i`` plus the results of ``i``
that are never used. Predicate values (width 0) are tracked but never count.

Liveness is an iterative backward data-flow over the control-flow graph, so
a value defined before a loop and used after it is live across the back
edge. A guarded (``@%p``) definition does not kill the value: the old value
must survive when the guard is false.

Examples
--------
>>> from engine.ir.parser import parse
>>> a = analyze(parse('''.kernel k
... .block entry
...   %x:f32 = mov 1
...   %y:f32 = mov 2
...   %z:f32 = add %x, %y
...   %w:u64 = mov 8
...   st.global %w, 0, %z
...   exit
... '''))
>>> a.pressure.tolist(), a.maxlive, a.peak
([1, 2, 1, 3, 0, 0], 3, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import numpy as np

from engine.ir.core import Program, successors


class PressureFigures:
    """MAXLIVE and its peak from a ``pressure`` array (planned programs and compiled SASS alike)."""

    pressure: np.ndarray

    @property
    def maxlive(self) -> int:
        """The largest pressure (0 for an empty program)."""
        return int(self.pressure.max()) if len(self.pressure) else 0

    @property
    def peak(self) -> int:
        """The first instruction where the pressure reaches MAXLIVE."""
        return int(self.pressure.argmax()) if len(self.pressure) else 0


@dataclass(frozen=True, eq=False)
class Analysis(PressureFigures):
    """Everything the allocators and the views need about one program.

    Attributes
    ----------
    program : the analysed program
    names : value names, indexed by value number (first-definition order)
    widths : register width of each value (0 for predicates)
    seg_value, seg_start, seg_end : the live segments (positions inclusive)
    start, end : each value's interval on the linear order (hull of its segments)
    pressure : 32-bit registers live at each instruction
    loop_depth : loop nesting depth of each instruction
    undefined : values live on entry, i.e. read before any definition on some path
    operand_reads : (instruction, value) rows, each value an instruction reads (guards included;
        a value read twice appears twice), in no particular order
    definitions : (instruction, value) rows, each value an instruction writes
    live_out : the values live out of each block, as bit sets over value numbers
    """

    program: Program
    names: tuple[str, ...]
    widths: np.ndarray
    seg_value: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pressure: np.ndarray
    loop_depth: np.ndarray
    undefined: tuple[str, ...]
    operand_reads: np.ndarray
    definitions: np.ndarray
    live_out: tuple[int, ...] = ()
    #: (previous analysis, values the spill code changed) when this analysis follows a spill insertion whose
    #: previous analysis had built its graph (:func:`engine.analysis.respill.analyze_spilled`); taken, and so
    #: let go, when :attr:`interference` is first read
    interference_basis: list = field(default_factory=list, compare=False, repr=False)

    @cached_property
    def index(self) -> dict[str, int]:
        """Value number of each name."""
        return {n: i for i, n in enumerate(self.names)}

    @cached_property
    def interference(self):
        """The interference graph (see :mod:`engine.analysis.interference`).

        Built from the segments; or, for an analysis after spill code whose previous analysis had its
        graph built (:func:`engine.analysis.respill.analyze_spilled` notes that previous analysis and the
        values the spill code changed), updated from that graph, with the same edges.
        """
        from engine.analysis.interference import build_interference, updated_interference

        if not self.interference_basis:
            return build_interference(self)
        previous, changed = self.interference_basis.pop()
        return updated_interference(previous, previous.interference, self, changed)

    @cached_property
    def occurrences(self) -> np.ndarray:
        """(instruction, value) rows: each value an instruction reads or writes, once, sorted."""
        rows = np.concatenate([self.operand_reads, self.definitions])
        n = max(len(self.names), 1)
        codes = np.sort(rows[:, 0] * n + rows[:, 1])
        codes = codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes
        return np.stack([codes // n, codes % n], axis=1)

    @cached_property
    def spill_weight(self) -> np.ndarray:
        """Instructions reading or writing each value, each weighted by 10**loop depth."""
        occ = self.occurrences
        return np.bincount(occ[:, 1], weights=10.0 ** self.loop_depth[occ[:, 0]], minlength=len(self.names))

    def live_at(self, instruction: int) -> list[str]:
        """Names of the values counted in the pressure at ``instruction``, sorted."""
        pos = 2 * instruction + 1
        hit = (self.seg_start <= pos) & (self.seg_end >= pos)
        return sorted({self.names[v] for v in self.seg_value[hit] if self.widths[v] > 0})

    @cached_property
    def segments(self) -> dict[str, list[tuple[int, int]]]:
        """Each value's live segments as (start, end) positions, in order."""
        out: dict[str, list[tuple[int, int]]] = {n: [] for n in self.names}
        order = np.lexsort((self.seg_start, self.seg_value))
        for v, s, e in zip(self.seg_value[order].tolist(), self.seg_start[order].tolist(), self.seg_end[order].tolist()):
            out[self.names[v]].append((s, e))
        return out

    def live_positions(self, value: str) -> list[tuple[int, int]]:
        """The segments of one value as (start, end) positions, in order."""
        return self.segments[value]


def _block_sets(program: Program, index: dict[str, int]):
    """Upward-exposed uses and killed values of each block, as bit sets."""
    gen, kill = [], []
    for b in program.blocks:
        g, k = set(), set()
        for ins in reversed(b.instructions):
            if ins.guard is None:
                for d in ins.defs:
                    v = index[d.name]
                    g.discard(v)
                    k.add(v)
            g.update(map(index.__getitem__, ins.uses))
        gen.append(_bitset(g, len(index)))
        kill.append(_bitset(k, len(index)))
    return gen, kill


def _bitset(members: set, size: int) -> int:
    """The integer whose bit ``v`` is set for each ``v`` in ``members``."""
    mask = np.zeros(max(size, 1), dtype=bool)
    mask[np.fromiter(members, dtype=np.int64, count=len(members))] = True
    return int.from_bytes(np.packbits(mask, bitorder="little").tobytes(), "little")


def block_liveness(program: Program, index: dict[str, int]) -> tuple[list[int], list[int]]:
    """Live-in and live-out bit sets of every block, by iterative data-flow."""
    succ = successors(program)
    gen, kill = _block_sets(program, index)
    n = len(program.blocks)
    live_in, live_out = [0] * n, [0] * n
    changed = True
    while changed:
        changed = False
        for b in reversed(range(n)):
            out = 0
            for s in succ[b]:
                out |= live_in[s]
            new_in = gen[b] | (out & ~kill[b])
            if out != live_out[b] or new_in != live_in[b]:
                live_out[b], live_in[b], changed = out, new_in, True
    return live_in, live_out


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def _block_segments(program: Program, index, live_out):
    """Walk each block backwards, closing a segment at each killing definition.

    Returns the segments as rows (value, start, end), and the (instruction,
    value) rows of every read and every definition met on the way.
    """
    flat: list[int] = []
    reads: list[int] = []
    defs: list[int] = []
    add, read, define = flat.extend, reads.extend, defs.extend
    for block, first, out in zip(program.blocks, program.block_starts, live_out):
        i = first + len(block.instructions) - 1
        open_end = dict.fromkeys(_bits(out), 2 * i + 1)
        for ins in reversed(block.instructions):
            pos = 2 * i + 1
            for d in ins.defs:
                v = index[d.name]
                define((i, v))
                if v not in open_end:
                    add((v, pos, pos))
                elif ins.guard is None:
                    add((v, pos, open_end.pop(v)))
            for u in ins.uses:
                v = index[u]
                read((i, v))
                open_end.setdefault(v, pos - 1)
            i -= 1
        for v, e in open_end.items():
            add((v, 2 * first, e))
    return tuple(np.array(rows, dtype=np.int64).reshape(-1, k) for rows, k in ((flat, 3), (reads, 2), (defs, 2)))


def loop_depths(program: Program) -> np.ndarray:
    """Loop nesting depth of every instruction, from natural loops of back edges."""
    succ = successors(program)
    depth_of_block = np.zeros(len(program.blocks), dtype=np.int64)
    if program.blocks:
        cfg = nx.DiGraph()
        cfg.add_nodes_from(range(len(program.blocks)))
        cfg.add_edges_from((b, s) for b, ss in enumerate(succ) for s in ss)
        idom = nx.immediate_dominators(cfg, 0)
        for tail, head in cfg.edges:
            if _dominates(idom, head, tail):
                body = {head, tail}
                if tail != head:
                    body |= nx.ancestors(cfg.subgraph(n for n in cfg if n != head), tail)
                depth_of_block[list(body)] += 1
    sizes = [len(b.instructions) for b in program.blocks]
    return np.repeat(depth_of_block, sizes)


def _dominates(idom: dict, a: int, b: int) -> bool:
    while True:
        if a == b:
            return True
        up = idom.get(b)
        if up is None or up == b:
            return False
        b = up


def analyze(program: Program) -> Analysis:
    """Liveness, segments, intervals and pressure of ``program`` (computed on every call: the caller keeps it)."""
    names = tuple(program.values)
    index = {n: i for i, n in enumerate(names)}
    widths = np.array([program.values[n].width for n in names], dtype=np.int64)
    live_in, live_out = block_liveness(program, index)
    segments, reads, defs = _block_segments(program, index, live_out)
    seg_value, seg_start, seg_end = merge_adjacent(segments)
    n_ins = len(program.instructions)
    start = np.full(len(names), 2 * n_ins, dtype=np.int64)
    end = np.full(len(names), -1, dtype=np.int64)
    np.minimum.at(start, seg_value, seg_start)
    np.maximum.at(end, seg_value, seg_end)
    return Analysis(
        program=program, names=names, widths=widths,
        seg_value=seg_value, seg_start=seg_start, seg_end=seg_end,
        start=start, end=end,
        pressure=_pressure(n_ins, widths, seg_value, seg_start, seg_end),
        loop_depth=loop_depths(program),
        undefined=tuple(names[v] for v in _bits(live_in[0])) if program.blocks else (),
        operand_reads=reads, definitions=defs, live_out=tuple(live_out),
    )


def merge_adjacent(seg: np.ndarray):
    """Segments (value, start, end) with each value's touching segments joined.

    A value live out of one block and into the next in layout order covers
    consecutive positions: one segment says the same with less work later.

    Examples
    --------
    >>> [a.tolist() for a in merge_adjacent(np.array([[0, 4, 7], [0, 0, 3], [1, 2, 2], [0, 9, 9]]))]
    [[0, 0, 1], [0, 9, 2], [7, 9, 2]]
    """
    order = np.lexsort((seg[:, 1], seg[:, 0]))
    v, s, e = seg[order, 0], seg[order, 1], seg[order, 2]
    joins = np.r_[False, (v[1:] == v[:-1]) & (s[1:] == e[:-1] + 1)] if len(v) else np.zeros(0, bool)
    first = ~joins
    group = np.cumsum(first) - 1
    last_end = np.zeros(int(first.sum()), dtype=np.int64)
    np.maximum.at(last_end, group, e)
    return v[first], s[first], last_end


def _pressure(n_ins, widths, seg_value, seg_start, seg_end) -> np.ndarray:
    diff = np.zeros(2 * n_ins + 2, dtype=np.int64)
    w = widths[seg_value]
    diff += np.bincount(seg_start, weights=w, minlength=len(diff)).astype(np.int64)
    diff -= np.bincount(seg_end + 1, weights=w, minlength=len(diff)).astype(np.int64)
    return np.cumsum(diff)[1 : 2 * n_ins : 2]
