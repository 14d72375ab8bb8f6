"""The interference-graph view's model, Qt-free: which values to show and which edges, read from the interference CSR.

Invariant: nodes and edges come from :class:`engine.interference.Interference`'s
``indptr``/``indices`` arrays only (no graph of the whole program is built);
a small graph (at most ``FULL_LIMIT`` values with registers) is shown whole,
a larger one as the breadth-first tree of the selected value's
neighbourhood, neighbours visited in name order, with each node's ring
(distance); a layout is computed once per program and key and kept in a bounded dict
owned by whoever holds the :class:`GraphLayouts`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import networkx as nx
import numpy as np

FULL_LIMIT = 250


@dataclass(frozen=True)
class GraphShown:
    """What the graph view draws: node names, edges as (E, 2) indices into them, rings (None: whole graph)."""

    names: tuple[str, ...]
    edges: np.ndarray
    rings: tuple[int, ...] | None
    caption: str

    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}


def neighbours(interference, name: str) -> list[str]:
    """The values interfering with ``name``, sorted by name.

    Examples
    --------
    >>> from engine.ir import parse
    >>> from engine.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> neighbours(a.interference, "x"), neighbours(a.interference, "z")
    (['y'], [])
    """
    v = interference.names.index(name)
    return sorted(interference.names[u] for u in interference.neighbors(v).tolist())


def neighbourhood_tree(interference, centre: int, radius: int) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Values within ``radius`` steps of value ``centre``: (nodes, rings, tree edges as value-number pairs).

    Each value is joined to the one it is first reached from; neighbours are visited in name order.
    """
    order = np.argsort(np.array(interference.names, dtype=object), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ring_of = {centre: 0}
    nodes, rings, edges, frontier = [centre], [0], [], [centre]
    for ring in range(1, radius + 1):
        nxt = []
        for u in frontier:
            near = interference.neighbors(u)
            for v in near[np.argsort(rank[near], kind="stable")].tolist():
                if v not in ring_of:
                    ring_of[v] = ring
                    nodes.append(v)
                    rings.append(ring)
                    edges.append((u, v))
                    nxt.append(v)
        frontier = nxt
    return nodes, rings, edges


def graph_shown(interference, selection: str | None, radius: int, full_limit: int = FULL_LIMIT) -> GraphShown:
    """The whole graph when it is small, else the selected value's neighbourhood tree (or nothing).

    Examples
    --------
    >>> from engine.ir import parse
    >>> from engine.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> shown = graph_shown(a.interference, None, 1)
    >>> shown.names, shown.edges.tolist(), shown.caption
    (('x', 'y', 'z'), [[0, 1]], '3 values, 1 interferences')
    >>> graph_shown(a.interference, "x", 1, full_limit=2).names
    ('x', 'y')
    """
    g = interference
    with_registers = np.flatnonzero(np.asarray(g.widths) > 0)
    counts = f"{len(with_registers)} values, {g.n_edges} interferences"
    if len(with_registers) <= full_limit:
        return _whole(g, with_registers, counts)
    centre = g.names.index(selection) if selection in g.names else None
    if centre is None or g.widths[centre] == 0:
        return GraphShown((), np.zeros((0, 2), dtype=np.int64), (), counts + ": too many to read; select a value "
                          "(table, timeline) to see its neighbourhood")
    nodes, rings, edges = neighbourhood_tree(g, centre, radius)
    at = {v: i for i, v in enumerate(nodes)}
    caption = (f"{counts}: too many to read; showing %{selection} and the {len(nodes) - 1} values within "
               f"{radius} step(s), in rings by distance (edges: how each is reached; edges among them are not drawn)")
    return GraphShown(tuple(g.names[v] for v in nodes),
                      np.array([(at[u], at[v]) for u, v in edges], dtype=np.int64).reshape(-1, 2), tuple(rings),
                      caption)


def _whole(g, nodes: np.ndarray, caption: str) -> GraphShown:
    at = np.full(len(g.names), -1, dtype=np.int64)
    at[nodes] = np.arange(len(nodes))
    return GraphShown(tuple(g.names[v] for v in nodes.tolist()), at[g.edges].reshape(-1, 2), None, caption)


class GraphLayouts:
    """Node positions per shown graph, computed once per (program, key), the oldest dropped beyond ``limit``.

    Keyed by the program's identity (an entry keeps its program alive, so the id is never reused meanwhile).
    """

    def __init__(self, limit: int = 64):
        self.limit = limit
        self._positions: OrderedDict = OrderedDict()

    def positions(self, shown: GraphShown, program, key=()) -> np.ndarray:
        """(N, 2) positions of ``shown``'s nodes: rings by distance for a tree, else a spring layout."""
        full = (id(program), *key)
        entry = self._positions.get(full)
        if entry is None or entry[0] is not program:
            entry = (program, _layout(shown))
            self._positions[full] = entry
            if len(self._positions) > self.limit:
                self._positions.popitem(last=False)
        return entry[1]


def _layout(shown: GraphShown) -> np.ndarray:
    if not shown.names:
        return np.zeros((0, 2))
    small = nx.Graph()                   # only the shown nodes: a few hundred at most
    small.add_nodes_from(range(len(shown.names)))
    if shown.rings is not None:
        shells: dict[int, list[int]] = {}
        for i, ring in enumerate(shown.rings):
            shells.setdefault(ring, []).append(i)
        pos = nx.shell_layout(small, [shells[r] for r in sorted(shells)])
    else:
        small.add_edges_from(map(tuple, shown.edges.tolist()))
        pos = nx.spring_layout(small, seed=1, iterations=60)
    return np.array([pos[i] for i in range(len(shown.names))], dtype=float)
