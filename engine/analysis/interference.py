"""The register interference graph, built from live segments.

Invariant: values u and v (both non-predicate, u != v) are adjacent exactly
when some position is covered by a segment of each, i.e. when both hold a
register at the same moment. Any two overlapping segments witness such a
moment, and every such moment has one: so the edges are found by sorting
segments by start and pairing each with the segments that start inside it,
never by comparing every pair of values.

The number of such pairs is known from the sorted segments before any is
listed, so a graph above :data:`engine.base.limits.MAX_INTERFERENCE_EDGES` is
refused before its memory is taken.

The canonical form is a CSR adjacency (numpy) used by the allocators; a
``networkx.Graph`` is built from it on demand for display and for networkx's
own algorithms.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.analysis.liveness import analyze
>>> g = analyze(parse('''.kernel k
... .block entry
...   %x:f32 = mov 1
...   %y:f32 = mov 2
...   %z:f32 = add %x, %y
...   st.global %z, 0, %z
...   exit
... ''')).interference
>>> sorted(g.graph.edges)
[('x', 'y')]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from engine.base.errors import LimitError
from engine.base.limits import MAX_INTERFERENCE_EDGES, MAX_LIVE
from engine.ir.core import Program, Use


@dataclass(frozen=True, eq=False)
class Interference:
    """Undirected interference graph over the values of one analysis.

    Attributes
    ----------
    names, widths : as in the analysis (predicates have no edges)
    indptr, indices : CSR adjacency, both directions (neighbours unsorted)
    """

    names: tuple[str, ...]
    widths: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray

    def neighbors(self, v: int) -> np.ndarray:
        """Value numbers adjacent to value ``v``."""
        return self.indices[self.indptr[v] : self.indptr[v + 1]]

    @cached_property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    @cached_property
    def edges(self) -> np.ndarray:
        """(E, 2) array of value numbers, each row u < v, each pair once."""
        row = np.repeat(np.arange(len(self.names)), self.degree)
        up = row < self.indices
        return np.stack([row[up], self.indices[up]], axis=1)

    @property
    def n_edges(self) -> int:
        return len(self.indices) // 2

    @cached_property
    def graph(self) -> nx.Graph:
        """The graph as ``networkx.Graph`` on value names, widths as node data."""
        g = nx.Graph()
        g.add_nodes_from((n, {"width": int(w)}) for n, w in zip(self.names, self.widths) if w > 0)
        names = np.array(self.names, dtype=object)
        g.add_edges_from(zip(names[self.edges[:, 0]], names[self.edges[:, 1]]))
        return g


def overlapping_pairs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i != j, of closed intervals that overlap.

    Each overlapping pair is reported once, from the interval that starts
    first (ties by index order after sorting).

    Examples
    --------
    >>> i, j = overlapping_pairs(np.array([0, 2, 5]), np.array([3, 4, 6]))
    >>> sorted(zip(i.tolist(), j.tolist()))
    [(0, 1)]
    """
    order = np.argsort(starts, kind="stable")
    src, dst = _sorted_pairs(starts[order], ends[order])
    return order[src], order[dst]


def _pair_counts(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For intervals sorted by start: how many later ones start inside each (its pairs, before any is listed)."""
    return np.maximum(np.searchsorted(s, e, side="right") - np.arange(1, len(s) + 1), 0)


def _sorted_pairs(s: np.ndarray, e: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping pairs (i, j), i < j, of intervals already sorted by start: j starts inside i."""
    counts = _pair_counts(s, e) if counts is None else counts
    total = int(counts.sum())
    src = np.repeat(np.arange(len(s)), counts)
    # dst runs src+1, src+2, ... within each source's block: a cumulative sum of ones that jumps at each block
    active = np.flatnonzero(counts)
    c = counts[active]
    block = np.cumsum(c) - c
    step = np.ones(total, dtype=np.intp)
    if total:
        step[block] = active + 1
        step[block[1:]] -= active[:-1] + c[:-1]
    return src, np.cumsum(step, out=step)


def too_many_edges(pairs: int, where: str) -> LimitError:
    """The one-line refusal of a program whose graph would have ``pairs`` overlapping segment pairs."""
    return LimitError(f"{where}: its live ranges make about {pairs:,} interference edges, above the limit of "
                      f"{MAX_INTERFERENCE_EDGES:,} (the graph takes 64 bytes an edge while it is built); "
                      "refused before building it")


def interference_pairs(analysis) -> int:
    """Overlapping pairs of the non-predicate segments of ``analysis``: the rows :func:`build_interference`
    would list (each edge once, an edge between values with several segments possibly more often)."""
    keep = analysis.widths[analysis.seg_value] > 0
    starts = analysis.seg_start[keep]
    order = np.argsort(starts, kind="stable")
    return int(_pair_counts(starts[order], analysis.seg_end[keep][order]).sum())


def pairs_lower_bound(program: Program) -> int:
    """A lower bound on :func:`interference_pairs` of ``program``'s analysis, without the analysis.

    One pass over the instructions and a few sorts (0.3-0.5 s at 190,000
    instructions; the analysis takes 2 s): within each block, a value is
    live from each unguarded definition, or from the block's start, to the
    last use before its next unguarded definition (one range where that
    definition's instruction also reads the value). Each such range lies in
    one live segment, and a segment holds at most one of them in each
    block; counting, for each range that starts at a definition, the ranges
    it starts inside counts each overlapping pair of segments at most once.
    It is exact for a program of one block without guarded definitions.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...           "  st.global %z, 0, %z\\n  exit\\n")
    >>> pairs_lower_bound(p)
    1
    """
    value, pos, kill = _block_occurrences(program)
    block = np.searchsorted(np.array(program.block_starts, dtype=np.int64), pos // 2, side="right") - 1
    order = np.lexsort((pos, block, value))
    value, pos, kill, block = value[order], pos[order], kill[order], block[order]
    group = np.r_[True, (value[1:] != value[:-1]) | (block[1:] != block[:-1])] if len(pos) else np.zeros(0, bool)
    # a range begins at the block's start or at a definition, unless the same instruction read the value
    # (the analysis joins the touching segments: ``fma %a, %b, %acc`` into %acc continues it)
    first = group | (kill & (np.r_[-2, pos[:-1]] != pos - 1))
    start = np.where(kill[first], pos[first], 2 * np.array(program.block_starts, dtype=np.int64)[block[first]])
    end = pos[np.r_[np.flatnonzero(first)[1:] - 1, len(pos) - 1]] if len(pos) else start  # rows run in order
    by_start = np.argsort(start, kind="stable")
    s, defined = start[by_start], kill[first][by_start]
    before = np.arange(len(s)) - np.searchsorted(np.sort(end), s, side="left")
    return int(before[defined].sum())


def _block_occurrences(program: Program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value number, position and whether it is an unguarded definition, of each read (at ``2*i``) and each
    such definition (at ``2*i+1``) of a non-predicate value."""
    used, used_at, killed, killed_at = [], [], [], []
    use, use_at, kill, kill_at = used.append, used_at.append, killed.append, killed_at.append
    for i, ins in enumerate(program.instructions):
        for op in ins.operands:
            if op.__class__ is Use:
                use(op.name)
                use_at(i)
        if ins.guard is None:
            for d in ins.defs:
                kill(d.name)
                kill_at(i)
    number = {n: k for k, n in enumerate(program.values)}.__getitem__
    value = np.fromiter(map(number, used + killed), dtype=np.int64, count=len(used) + len(killed))
    pos = np.concatenate([np.array(used_at, dtype=np.int64) * 2, np.array(killed_at, dtype=np.int64) * 2 + 1])
    keep = np.array([v.width > 0 for v in program.values.values()] or [False])[value]
    return value[keep], pos[keep], (np.arange(len(value)) >= len(used))[keep]


def build_interference(analysis) -> Interference:
    """Interference graph of ``analysis`` from its live segments.

    Refused before any work when more than :data:`engine.base.limits.MAX_LIVE`
    registers are live at once (the graph grows with the square of that),
    and before any edge array is allocated when its segments overlap in
    more than :data:`engine.base.limits.MAX_INTERFERENCE_EDGES` pairs (counted
    from the sorted segments alone, in milliseconds).
    """
    n = len(analysis.names)
    by_start, s, e, counts = _sorted_segments(analysis)
    i, j = _sorted_pairs(s, e, counts)
    u, v = by_start[i], by_start[j]
    del i, j
    several = np.bincount(by_start, minlength=n) > 1
    if several.any():  # only a value with several segments can meet itself or another value twice
        u, v = _distinct_pairs(n, u, v, several)
    return _csr(analysis.names, analysis.widths, u, v)


def _sorted_segments(analysis):
    """The non-predicate segments sorted by start: their values, starts, ends and pair counts, once the
    limits are checked (see :func:`build_interference`)."""
    if analysis.maxlive > MAX_LIVE:
        raise LimitError(f"program too large: {analysis.maxlive} registers live at once at instruction "
                         f"{analysis.peak} (RegTune's limit is {MAX_LIVE}; the interference graph grows with "
                         "the square of it)")
    keep = analysis.widths[analysis.seg_value] > 0
    seg_value, starts = analysis.seg_value[keep], analysis.seg_start[keep]
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], analysis.seg_end[keep][order]
    counts = _pair_counts(s, e)
    if int(counts.sum()) > MAX_INTERFERENCE_EDGES:
        raise too_many_edges(int(counts.sum()), f"kernel {analysis.program.name}")
    return seg_value[order], s, e, counts


def updated_interference(previous, graph: Interference, analysis, changed) -> Interference:
    """The interference graph of ``analysis``, the analysis after spill code of ``previous`` (whose graph is
    ``graph``), from ``graph`` and the segments of the values the spill code ``changed`` (names: the
    spilled values and the copies it made); equal, edge for edge, to :func:`build_interference` of ``analysis``.

    Spill code moves the other values' segments without changing which of them overlap (positions map in
    order; each block keeps its entry and exit), so their edges are ``graph``'s, renumbered; only the changed
    values' short segments are paired anew: each with the segments that start inside it and, for the
    unchanged ones, with those it starts inside. The work is the size of the graph in array passes plus the
    changed values' edges, instead of pairing every segment again. The limits are checked as there.
    Neighbours within a row come in another order (no consumer depends on it).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.ir.spill import spill_insertion
    >>> from engine.analysis.liveness import analyze
    >>> from engine.analysis.respill import analyze_spilled
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...           "  st.global %z, 0, %x\\n  exit\\n")
    >>> a = analyze(p); r = spill_insertion(p, {"x": 0}); b = analyze_spilled(a, r)
    >>> g = updated_interference(a, a.interference, b, set(r.slots) | r.copies)
    >>> sorted(map(tuple, g.edges.tolist())) == sorted(map(tuple, build_interference(b).edges.tolist()))
    True
    """
    n = len(analysis.names)
    by_start, s, e, _ = _sorted_segments(analysis)
    index = analysis.index
    is_changed = np.zeros(n, dtype=bool)
    is_changed[[index[name] for name in changed if name in index]] = True
    remap = np.array([-1 if name in changed else index[name] for name in previous.names], dtype=np.int64)
    u, v = _changed_pairs(by_start, s, e, is_changed)
    return _renumbered(graph, remap, analysis.names, analysis.widths, u, v)


def _changed_pairs(by_start, s, e, is_changed):
    """Each edge with a changed value at one end once, as (u, v) with u < v, from the sorted segments."""
    mine = is_changed[by_start]
    c = np.flatnonzero(mine)
    # (a) segments starting inside a changed one (itself included: dropped below as u == v)
    lo, hi = np.searchsorted(s, s[c], side="left"), np.searchsorted(s, e[c], side="right")
    src_a = np.repeat(c, hi - lo)
    dst_a = flat_ranges(lo, hi)
    # (b) changed segments starting inside an unchanged one, strictly after its start
    q = s[c]  # sorted, since s is
    k = np.flatnonzero(~mine)
    lo, hi = np.searchsorted(q, s[k], side="right"), np.searchsorted(q, e[k], side="right")
    src_b = np.repeat(k, hi - lo)
    dst_b = c[flat_ranges(lo, hi)]
    a, b = by_start[np.concatenate([src_a, src_b])], by_start[np.concatenate([dst_a, dst_b])]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    n = max(int(len(is_changed)), 1)
    codes = np.sort(lo[keep] * n + hi[keep])
    codes = codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes
    return codes // n, codes % n


def flat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``concatenate([arange(l, h) for l, h in zip(lo, hi)])``, without the loop (e.g. the adjacency
    entries of some rows: ``flat_ranges(indptr[rows], indptr[rows + 1])``).

    Examples
    --------
    >>> flat_ranges(np.array([0, 5]), np.array([2, 8])).tolist()
    [0, 1, 5, 6, 7]
    """
    counts = hi - lo
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts - lo, counts)


def _renumbered(graph: Interference, remap: np.ndarray, names, widths, u: np.ndarray, v: np.ndarray) -> Interference:
    """CSR adjacency of ``graph``'s entries between values ``remap`` keeps (old number -> new, -1: dropped)
    plus the edges (u, v), each given once."""
    n = len(names)
    ok = remap >= 0
    kept_values = remap[ok]
    if len(kept_values) > 1 and (kept_values[1:] <= kept_values[:-1]).any():  # out of order: sort, as a build does
        rows = remap[np.repeat(np.arange(len(graph.names)), graph.degree)]
        cols = remap[graph.indices]
        once = (rows >= 0) & (cols >= 0) & (rows < cols)
        return _csr(names, widths, np.concatenate([rows[once], u]), np.concatenate([cols[once], v]))
    # the entries that stay: in rows that stay (a dropped value's row is one range), at values that stay
    keep = ok[graph.indices]
    bounds = graph.indptr
    dropped = np.flatnonzero(~ok)
    for c in dropped.tolist():
        keep[bounds[c] : bounds[c + 1]] = False
    cols = remap[graph.indices[keep]]
    # a kept row loses one entry per dropped neighbour, and by symmetry those are the dropped rows' entries
    lost = np.bincount(graph.indices[flat_ranges(bounds[dropped], bounds[dropped + 1])], minlength=len(remap))
    kept = np.zeros(n, dtype=np.int64)
    kept[kept_values] = (graph.degree - lost)[ok]
    src, dst = np.concatenate([u, v]), np.concatenate([v, u])
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept + np.bincount(src, minlength=n), out=indptr[1:])
    # each row: its kept entries in their old order, then its new ones (inserted at the end of its kept run)
    indices = np.insert(cols, np.cumsum(kept)[src], dst.astype(cols.dtype, copy=False))
    return Interference(names, widths, indptr, indices)


def _distinct_pairs(n: int, u: np.ndarray, v: np.ndarray, several: np.ndarray):
    distinct = u != v
    lo, hi = np.minimum(u, v)[distinct], np.maximum(u, v)[distinct]
    maybe_twice = several[lo] | several[hi]
    codes = np.sort(lo[maybe_twice].astype(np.int64) * n + hi[maybe_twice])
    codes = codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes
    return (np.concatenate([lo[~maybe_twice], (codes // n).astype(lo.dtype)]),
            np.concatenate([hi[~maybe_twice], (codes % n).astype(hi.dtype)]))


def _csr(names, widths, u: np.ndarray, v: np.ndarray) -> Interference:
    """CSR adjacency from each edge once as (u, v)."""
    n = len(names)
    # rows as 16-bit keys where they fit: numpy sorts those by radix, and they take a quarter of the memory
    src = np.concatenate([u, v], dtype=np.uint16 if n < 1 << 16 else np.int64, casting="unsafe")
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    del src
    return Interference(names, widths, indptr, np.concatenate([v, u])[order])


def build_interference_all_pairs(analysis) -> Interference:
    """Reference construction: test every pair of values for a shared position.

    Quadratic in the number of values; kept only to measure and cross-check
    :func:`build_interference` against.
    """
    n = len(analysis.names)
    masks = [0] * n
    for v, s, e in zip(analysis.seg_value.tolist(), analysis.seg_start.tolist(), analysis.seg_end.tolist()):
        if analysis.widths[v] > 0:
            masks[v] |= ((1 << (e - s + 1)) - 1) << s
    pairs = [(a, b) for a in range(n) if masks[a] for b in range(a + 1, n) if masks[a] & masks[b]]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return _csr(analysis.names, analysis.widths, edges[:, 0], edges[:, 1])
