"""The analysis of a program after spill-code insertion, from the analysis before it.

An allocator that spills repeats its work on the program with spill code;
analysing that program from scratch walks every instruction again. Spill
code changes little: a value that is not spilled keeps its definitions and
uses (the instructions only move), and every spilled value and every copy
the insertion makes (reloads ``v.rK``, later definitions ``v.dK``, rematerialised copies ``v.mK``) lives
inside the few instructions around one rewritten instruction, its
*window* (the reloads before it, the instruction, the stores after it).

Invariant: :func:`analyze_spilled` returns an analysis equal, field by
field, to :func:`engine.analysis.liveness.analyze` of the new program (rows of
reads and definitions in another order, which no consumer depends on),
or it analyses the new program from scratch where that cannot be shown
(an empty block, an insertion it does not know). The property tests
compare the two on random programs, spill sets and rounds.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.analysis.liveness import analyze
>>> from engine.ir.spill import spill_insertion
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n"
...           "  st.global %y, 0, %x\\n  exit\\n")
>>> q = spill_insertion(p, {"x": 0})
>>> analyze_spilled(analyze(p), q).pressure.tolist() == analyze(q.program).pressure.tolist()
True
"""

from __future__ import annotations

import numpy as np

from engine.analysis.liveness import (
    Analysis,
    _bits,
    _bitset,
    _pressure,
    analyze,
    merge_adjacent,
)
from engine.ir.spill import SpillInsertion


class _Fallback(Exception):
    """The new program is analysed from scratch."""


def analyze_spilled(previous: Analysis, insertion: SpillInsertion) -> Analysis:
    """The analysis of ``insertion.program``, updated from ``previous``, the analysis of ``insertion.before``.

    When ``previous`` has built its interference graph (a colouring allocator asked for it), the new
    analysis's graph, if it is asked for, is updated from it for the values the insertion changed
    (:func:`engine.analysis.interference.updated_interference`) instead of being built again; an
    allocator that never reads the graph (linear scan, naive) pays for neither.
    """
    try:
        analysis = _Update(previous, insertion).analysis()
    except _Fallback:
        analysis = analyze(insertion.program)
    if "interference" in previous.__dict__ and insertion.before is previous.program:  # the cached graph is there
        analysis.interference_basis.append((previous, set(insertion.changed)))
    return analysis


class _Update:
    """Old value and instruction numbers mapped to new ones, and the windows to walk."""

    def __init__(self, previous: Analysis, insertion: SpillInsertion):
        old, program = previous.program, insertion.program
        if insertion.before is not old or any(not b.instructions for b in old.blocks):
            raise _Fallback
        self.added, self.touching = insertion.added, list(insertion.touching)
        self.a, self.program = previous, program
        self.names = tuple(program.values)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.changed = set(insertion.changed)
        self.remap = np.array([-1 if n in self.changed else self.index[n] for n in previous.names], dtype=np.int64)
        total = self.added.sum(axis=0)
        self.moved = np.arange(len(total)) + np.cumsum(total) - total + self.added[0]

    def analysis(self) -> Analysis:
        program, names = self.program, self.names
        widths = np.array([program.values[n].width for n in names], dtype=np.int64)
        window_segments, reads, defs = self._windows()
        seg_value, seg_start, seg_end = merge_adjacent(np.concatenate([self._kept_segments(), window_segments]))
        n_ins = len(program.instructions)
        start = np.full(len(names), 2 * n_ins, dtype=np.int64)
        end = np.full(len(names), -1, dtype=np.int64)
        np.minimum.at(start, seg_value, seg_start)
        np.maximum.at(end, seg_value, seg_end)
        old_reads, old_defs = self._kept_rows(self.a.operand_reads), self._kept_rows(self.a.definitions)
        return Analysis(
            program=program, names=names, widths=widths,
            seg_value=seg_value, seg_start=seg_start, seg_end=seg_end, start=start, end=end,
            pressure=_pressure(n_ins, widths, seg_value, seg_start, seg_end),
            loop_depth=np.repeat(self.a.loop_depth[list(self.a.program.block_starts)],
                                 [len(b.instructions) for b in program.blocks]),
            undefined=tuple(n for n in self.a.undefined if n not in self.changed),
            operand_reads=np.concatenate([old_reads, reads]), definitions=np.concatenate([old_defs, defs]),
            live_out=tuple(self._live_out()),
        )

    def _kept_segments(self) -> np.ndarray:
        """The segments of values that keep their definitions and uses, at their new positions."""
        a = self.a
        keep = self.remap[a.seg_value] >= 0
        value, s, e = a.seg_value[keep], a.seg_start[keep], a.seg_end[keep]
        old, new = self.a.program, self.program
        first = np.array(old.block_starts)
        new_first = np.array(new.block_starts)
        last = first + [len(b.instructions) - 1 for b in old.blocks]
        new_last = new_first + [len(b.instructions) - 1 for b in new.blocks]
        block_of = np.repeat(np.arange(len(first)), [len(b.instructions) for b in old.blocks])
        # a start is a definition (odd) or a block's entry (even)
        ins = s // 2
        s = np.where(s % 2 == 1, 2 * self.moved[ins] + 1, 2 * new_first[block_of[ins]])
        # an end is a use (even), a block's exit for a value live out of it, or a definition never used
        ins, odd = e // 2, e % 2 == 1
        b = block_of[ins]
        exits = odd & (ins == last[b]) & self._live_out_of(value, b)
        e = np.where(~odd, 2 * self.moved[ins], np.where(exits, 2 * new_last[b] + 1, 2 * self.moved[ins] + 1))
        return np.stack([self.remap[value], s, e], axis=1)

    def _live_out_of(self, value: np.ndarray, block: np.ndarray) -> np.ndarray:
        out = np.zeros(len(value), dtype=bool)
        for b, bits in enumerate(self.a.live_out):
            here = block == b
            if here.any() and bits:
                members = np.zeros(len(self.a.names), dtype=bool)
                members[list(_bits(bits))] = True
                out[here] = members[value[here]]
        return out

    def _windows(self):
        """Segments of the changed values, and every read and definition, inside each window."""
        segs, reads, defs = [], [], []
        instructions, index, changed = self.program.instructions, self.index, self.changed
        touching = np.asarray(self.touching, dtype=np.int64)
        first = (self.moved[touching] - self.added[0, touching]).tolist()
        last = (self.moved[touching] + self.added[1, touching]).tolist()
        for lo, hi in zip(first, last):
            open_end: dict[int, int] = {}
            j = hi
            for ins in reversed(instructions[lo : hi + 1]):
                pos = 2 * j + 1
                for d in ins.defs:
                    v = index[d.name]
                    defs += (j, v)
                    if d.name in changed:
                        if v not in open_end:
                            segs += (v, pos, pos)
                        elif ins.guard is None:
                            segs += (v, pos, open_end.pop(v))
                for u in ins.uses:
                    v = index[u]
                    reads += (j, v)
                    if u in changed and v not in open_end:
                        open_end[v] = pos - 1
                j -= 1
            if open_end:  # a changed value live into its window: not the insertion's shape
                raise _Fallback
        return tuple(np.array(rows, dtype=np.int64).reshape(-1, k) for rows, k in ((segs, 3), (reads, 2), (defs, 2)))

    def _kept_rows(self, rows: np.ndarray) -> np.ndarray:
        """(instruction, value) rows of the instructions outside every window, renumbered."""
        outside = np.ones(len(self.moved), dtype=bool)
        outside[self.touching] = False
        rows = rows[outside[rows[:, 0]]]
        return np.stack([self.moved[rows[:, 0]], self.remap[rows[:, 1]]], axis=1)

    def _live_out(self):
        for bits in self.a.live_out:
            kept = self.remap[list(_bits(bits))] if bits else np.zeros(0, dtype=np.int64)
            yield _bitset(set(kept[kept >= 0].tolist()), len(self.names))
