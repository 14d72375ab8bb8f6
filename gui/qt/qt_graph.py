"""QtInterferenceGraph: the interference graph as one GraphItem, nodes coloured by register.

The layout comes from networkx and is computed once per program (cached by
the program's hash). Graphs larger than ``FULL_LIMIT`` nodes are unreadable
as a whole: the view then shows the neighbourhood of the selected value
(radius set by a spin box) instead of a hairball. Spilled values are drawn
as crosses; selecting a node selects the value everywhere and its
neighbours are ringed.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.plan import Plan

FULL_LIMIT = 250
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac", "#1f77b4", "#d62728"]
_layouts: dict = {}


def neighbourhood_tree(graph: nx.Graph, centre: str, radius: int) -> nx.Graph:
    """The values within ``radius`` steps of ``centre``, each joined to the value it is reached from
    (a BFS tree), with node attribute ``ring`` = distance: readable where the full neighbourhood is not."""
    tree = nx.Graph()
    tree.add_node(centre, ring=0)
    frontier = [centre]
    for ring in range(1, radius + 1):
        nxt = []
        for u in frontier:
            for v in sorted(graph.neighbors(u)):
                if v not in tree:
                    tree.add_node(v, ring=ring)
                    tree.add_edge(u, v)
                    nxt.append(v)
        frontier = nxt
    return tree


def layout_of(graph: nx.Graph, key) -> dict:
    """A layout of ``graph``, cached under ``key``: rings by distance for a neighbourhood tree, else spring."""
    if key not in _layouts:
        if len(_layouts) > 64:
            _layouts.clear()
        if len(graph) and all("ring" in d for _, d in graph.nodes(data=True)):
            rings: dict = {}
            for n, d in graph.nodes(data=True):
                rings.setdefault(d["ring"], []).append(n)
            _layouts[key] = nx.shell_layout(graph, [rings[r] for r in sorted(rings)])
        else:
            _layouts[key] = nx.spring_layout(graph, seed=1, iterations=60) if len(graph) else {}
    return _layouts[key]


class QtInterferenceGraph(QWidget):
    valueSelected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setAspectLocked(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.graph_item = pg.GraphItem()
        self.plot.addItem(self.graph_item)
        self.ring = pg.ScatterPlotItem(size=22, pen=pg.mkPen("#ffd700", width=2), brush=None)
        self.plot.addItem(self.ring)
        self.graph_item.scatter.sigClicked.connect(self._clicked)
        self.radius = QSpinBox()
        self.radius.setRange(1, 4)
        self.radius.setValue(1)
        self.radius.setPrefix("neighbourhood radius ")
        self.radius.valueChanged.connect(lambda _: self.refresh())
        self.caption = QLabel()
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(self.radius)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.plot)
        self.plan: Plan | None = None
        self.analysis = None
        self.selection: str | None = None
        self.shown: list[str] = []

    def show_plan(self, plan: Plan, analysis, selection: str | None = None) -> None:
        self.plan, self.analysis, self.selection = plan, analysis, selection
        self.refresh()

    def set_selection(self, name: str | None) -> None:
        self.selection = name
        self.refresh()

    def graph(self) -> nx.Graph:
        return self.analysis.interference.graph

    def refresh(self) -> None:
        if self.plan is None:
            return
        g = self.graph()
        full = len(g) <= FULL_LIMIT
        self.radius.setEnabled(not full)
        if full:
            sub, key = g, ("full", hash(self.plan.program))
            self.caption.setText(f"{len(g)} values, {g.number_of_edges()} interferences")
        elif self.selection and self.selection in g:
            sub = neighbourhood_tree(g, self.selection, self.radius.value())
            key = ("ego", hash(self.plan.program), self.selection, self.radius.value())
            self.caption.setText(f"{len(g)} values, {g.number_of_edges()} interferences: too many to read; "
                                 f"showing %{self.selection} and the {len(sub) - 1} values within "
                                 f"{self.radius.value()} step(s), in rings by distance (edges: how each "
                                 "is reached; edges among them are not drawn)")
        else:
            sub, key = nx.Graph(), None
            self.caption.setText(f"{len(g)} values, {g.number_of_edges()} interferences: too many to read; "
                                 "select a value (table, timeline) to see its neighbourhood")
        self._draw(sub, key)

    def _draw(self, sub: nx.Graph, key) -> None:
        nodes = list(sub.nodes)
        self.shown = nodes
        if not nodes:
            self.graph_item.setData(pos=np.zeros((0, 2)), adj=np.zeros((0, 2), dtype=int))
            self.ring.setData([], [])
            return
        pos_map = layout_of(sub, key)
        pos = np.array([pos_map[n] for n in nodes], dtype=float)
        index = {n: i for i, n in enumerate(nodes)}
        adj = np.array([(index[a], index[b]) for a, b in sub.edges], dtype=int).reshape(-1, 2)
        brushes, symbols = [], []
        for n in nodes:
            regs = self.plan.assignment.get(n, ())
            brushes.append(pg.mkBrush(PALETTE[regs[0] % len(PALETTE)] if regs else "#888888"))
            symbols.append("x" if n in self.plan.spills else "o")
        sizes = [16 if n == self.selection else 11 for n in nodes]
        self.graph_item.setData(pos=pos, adj=adj, symbolBrush=brushes, symbol=symbols, size=sizes, pxMode=True,
                                pen=pg.mkPen((150, 150, 150, 90), width=1), data=np.array(nodes, dtype=object))
        if self.selection in index:
            ring = [index[self.selection]] + [index[m] for m in sub.neighbors(self.selection) if m in index]
            self.ring.setData(pos[ring, 0], pos[ring, 1])
        else:
            self.ring.setData([], [])

    def _clicked(self, _scatter, points, *args) -> None:
        if len(points):
            name = points[0].data()
            if name is not None:
                self.valueSelected.emit(str(name))

    def click_node(self, name: str) -> None:
        """Select a node as a click on it does (used by the window and tests)."""
        if name in self.shown:
            self.valueSelected.emit(name)
