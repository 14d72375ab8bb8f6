"""QtInterferenceGraph: the interference graph as one GraphItem, nodes coloured by register.

What to show comes from gui.model.graph, read from the analysis's
interference CSR: the whole graph up to ``FULL_LIMIT`` values, else the
neighbourhood of the selected value (radius set by a spin box) instead of a
hairball. Spilled values are drawn as crosses; selecting a node selects the
value everywhere and its neighbours are ringed.

Invariant: no graph of the whole program is built here; layouts are
computed once per (program, selection, radius) and kept in the widget's
own bounded :class:`gui.model.graph.GraphLayouts`.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.plan import Plan
from gui.model.graph import GraphLayouts, GraphShown, graph_shown

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac", "#1f77b4", "#d62728"]


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
        self.layouts = GraphLayouts()
        self.brushes = [pg.mkBrush(c) for c in PALETTE] + [pg.mkBrush("#888888")]

    def show_plan(self, plan: Plan, analysis, selection: str | None = None) -> None:
        self.plan, self.analysis, self.selection = plan, analysis, selection
        self.refresh()

    def set_selection(self, name: str | None) -> None:
        self.selection = name
        self.refresh()

    def refresh(self) -> None:
        if self.plan is None:
            return
        interference = self.analysis.interference
        shown = graph_shown(interference, self.selection, self.radius.value())
        self.radius.setEnabled(shown.rings is not None)     # None: the whole graph, no radius to choose
        self.caption.setText(shown.caption)
        self._draw(shown, () if shown.rings is None else (self.selection, self.radius.value()))

    def _draw(self, shown: GraphShown, key) -> None:
        self.shown = list(shown.names)
        if not shown.names:
            self.graph_item.setData(pos=np.zeros((0, 2)), adj=np.zeros((0, 2), dtype=int))
            self.ring.setData([], [])
            return
        pos = self.layouts.positions(shown, self.plan.program, key)
        brushes, symbols = [], []
        for n in shown.names:       # shared brush objects: pyqtgraph renders one symbol per distinct brush
            regs = self.plan.assignment.get(n, ())
            brushes.append(self.brushes[regs[0] % len(PALETTE)] if regs else self.brushes[-1])
            symbols.append("x" if n in self.plan.spills else "o")
        sizes = [16 if n == self.selection else 11 for n in shown.names]
        self.graph_item.setData(pos=pos, adj=shown.edges, symbolBrush=brushes, symbol=symbols, size=sizes,
                                pxMode=True, pen=pg.mkPen((150, 150, 150, 90), width=1),
                                data=np.array(shown.names, dtype=object))
        self._ring(shown, pos)

    def _ring(self, shown: GraphShown, pos: np.ndarray) -> None:
        """Ring the selected value and its neighbours among the shown nodes."""
        index = shown.index()
        if self.selection not in index:
            self.ring.setData([], [])
            return
        interference = self.analysis.interference
        near = interference.neighbors(interference.names.index(self.selection)).tolist()
        ring = [index[self.selection]] + [index[m] for m in (interference.names[u] for u in near) if m in index]
        self.ring.setData(pos[ring, 0], pos[ring, 1])

    def _clicked(self, _scatter, points, *args) -> None:
        if len(points):
            name = points[0].data()
            if name is not None:
                self.valueSelected.emit(str(name))

    def click_node(self, name: str) -> None:
        """Select a node as a click on it does (used by the window and tests)."""
        if name in self.shown:
            self.valueSelected.emit(name)
