"""QtTimeline: live ranges per physical register over the instruction order, and the pressure under it.

x = instruction index; one row per register (R0 at the top), spill slots in
their own rows below; one bar per live segment of every value on each of
its registers, coloured by role (one BarGraphItem per colour, so thousands
of bars redraw in milliseconds); kernel phases and loop bodies shaded
behind; conflicting bars hatched in white and outlined in magenta (one
item, whatever their role colours), the selected values in yellow. The
pressure plot underneath shares the x axis and shows the budget, MAXLIVE,
the peak and a magenta cross over each conflicting instruction, whose
column the register plot tints in magenta (seen at any zoom, where a bar
is too thin to show its hatch). Hover shows a value's name, type, interval, definition and
uses; a click selects an instruction (and the value under the pointer); a
drag of a bar onto another row asks for an assignment edit
(``valueDropped``).

Columns marked in yellow (:meth:`QtTimeline.set_linked`) are the
instructions linked to one selected in another view: a plan instruction's
SASS instructions, or a SASS instruction's plan instruction. The bars of
the values the marked instructions (the linked ones and the selected one)
write or read are outlined in cyan.

With ``stalls=True`` (the SASS view) a third plot under the pressure shows
each SASS row's encoded stall cycles (:meth:`QtTimeline.set_stalls`, the
control bits of ``nvdisasm -hex``), rows that wait on a scoreboard marked
with an orange triangle; hovering a row says its stall, yield and barriers.

The same view draws a compiled kernel: :meth:`QtTimeline.show_sass` takes
nvdisasm's live ranges (kernels.sass) instead of a plan.

Invariant: every bar, row, curve and span comes from gui.model.timeline
(numpy arrays); this module only hands them to pyqtgraph items created
once, updated with ``setOpts``/``setData``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QToolTip, QVBoxLayout, QWidget

from engine.plan import Plan
from gui.model import timeline as timeline_model
from gui.model.timeline import (
    Bars,
    StallStrip,
    TimelineData,
    plan_timeline,
    sass_timeline,
)

#: GEMM's and attention's roles never meet in one program: Q, K and output share A, B and accumulator's colours
ROLE_COLOURS = {"A fragment": "#4e79a7", "B fragment": "#59a14f", "accumulator": "#e15759",
                "Q": "#4e79a7", "K": "#59a14f", "V": "#499894", "scores": "#b07aa1", "softmax state": "#ff9da7",
                "output": "#e15759", "address": "#f28e2b", "index": "#9c755f", "scalar": "#76b7b2",
                "predicate": "#bab0ac", "spill slot": "#555555", "SASS, no plan value": "#8c8c8c"}
PHASE_ALPHA = 26
#: conflicts: a colour no role has, and a white hatch that shows on every role colour and on the background
CONFLICT_COLOUR = "#ff00ff"
CONFLICT_HATCH = QBrush(QColor("#ffffff"), Qt.BrushStyle.BDiagPattern)


def phase_colour(name: str) -> QColor:
    palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]
    c = QColor(palette[zlib.crc32(name.encode()) % len(palette)])
    c.setAlpha(PHASE_ALPHA)
    return c


class _ViewBox(pg.ViewBox):
    """Left-drag on a bar moves the value; elsewhere pans; a click selects."""

    def __init__(self, owner):
        super().__init__(invertY=True)
        self.owner = owner
        self._dragging = None

    def mouseDragEvent(self, ev, axis=None):
        if ev.button() == Qt.MouseButton.LeftButton and self.owner.editable:
            if ev.isStart():
                p = self.mapSceneToView(ev.buttonDownScenePos())
                self._dragging = self.owner.value_at_point(p)
            if self._dragging is not None:
                ev.accept()
                p = self.mapSceneToView(ev.scenePos())
                self.owner.show_drop_target(p.y())
                if ev.isFinish():
                    name, self._dragging = self._dragging, None
                    self.owner.drop(name, p.y())
                return
        super().mouseDragEvent(ev, axis)

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self.owner.clicked_at(self.mapSceneToView(ev.scenePos()))
            return
        if ev.button() == Qt.MouseButton.RightButton and self.owner.editable:
            name = self.owner.value_at_point(self.mapSceneToView(ev.scenePos()))
            if name is not None:      # on a bar: the value's menu (spill, unspill); elsewhere pyqtgraph's own
                ev.accept()
                self.owner.valueSelected.emit(name)
                self.owner.contextRequested.emit(name, ev.screenPos().toPoint())
                return
        super().mouseClickEvent(ev)


class QtTimeline(QWidget):
    """The live-range timeline and the pressure curve (see the module docstring)."""

    valueSelected = Signal(str)
    instructionSelected = Signal(int)
    valueDropped = Signal(str, object)   # value name, register row (int) or None when dropped off the rows
    contextRequested = Signal(str, object)   # value name, global position: the window shows the value's menu

    def __init__(self, parent=None, editable: bool = True, stalls: bool = False):
        super().__init__(parent)
        self.editable = editable
        self.data: TimelineData | None = None
        self.layout_ = pg.GraphicsLayoutWidget()
        self.view = _ViewBox(self)
        self.plot = self.layout_.addPlot(row=0, col=0, viewBox=self.view)
        self.plot.setLabel("left", "register")
        self.plot.showGrid(x=False, y=False)
        self.pressure_plot = self.layout_.addPlot(row=1, col=0)
        self.pressure_plot.setLabel("left", "pressure")
        self.pressure_plot.setLabel("bottom", "instruction")
        self.pressure_plot.setXLink(self.plot)
        self.pressure_plot.setMouseEnabled(y=False)
        self.layout_.ci.layout.setRowStretchFactor(0, 3)
        self.layout_.ci.layout.setRowStretchFactor(1, 1)
        self.background = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[], brushes=[], pen=None)
        self.background.setZValue(-10)
        self.loop_item = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[],
                                         pen=pg.mkPen("#777777", style=Qt.PenStyle.DashLine), brush=None)
        self.loop_item.setZValue(-9)
        self.plot.addItem(self.background)
        self.plot.addItem(self.loop_item)
        self.bar_items: dict[str, pg.BarGraphItem] = {}
        self.legend = self.plot.addLegend(offset=(-10, 10), labelTextSize="8pt", labelTextColor="#f0f0f0",
                                         brush=pg.mkBrush(20, 20, 24, 220), pen=pg.mkPen("#777777"))
        self.conflict_item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.9, brush=CONFLICT_HATCH,
                                             pen=pg.mkPen(CONFLICT_COLOUR, width=2.5))
        self.select_item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.95, pen=pg.mkPen("#ffd700", width=2.5),
                                           brush=None)
        self.critical_item = pg.PlotDataItem([], [], pen=pg.mkPen("#d62728", width=1.5), symbol="o", symbolSize=5,
                                             symbolBrush="#d62728", symbolPen=None)
        self.critical_item.setZValue(9)
        self.plot.addItem(self.critical_item)
        #: the instructions linked to one selected elsewhere (a plan's IR instruction <-> its SASS instructions)
        self.linked_item = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[], brush=pg.mkBrush(255, 215, 0, 70),
                                           pen=pg.mkPen(255, 215, 0, 160))
        self.linked_item.setZValue(8)
        self.plot.addItem(self.linked_item)
        self.linked: tuple = ()
        #: the bars of the values the linked instructions and the selected one write or read
        self.operand_item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.6, brush=pg.mkBrush(0, 229, 255, 90),
                                            pen=pg.mkPen("#00e5ff", width=2))
        self.operand_item.setZValue(9.5)
        self.plot.addItem(self.operand_item)
        self.instruction: int | None = None
        self.drop_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#ffd700", style=Qt.PenStyle.DotLine))
        self.drop_line.hide()
        for item in (self.conflict_item, self.select_item, self.drop_line):
            item.setZValue(10)
            self.plot.addItem(item)
        self.curve = self.pressure_plot.plot([], [], stepMode="center", fillLevel=0,
                                             brush=(78, 121, 167, 90), pen=pg.mkPen("#4e79a7", width=1.5))
        self.budget_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#e15759", style=Qt.PenStyle.DashLine),
                                           label="budget {value:.0f}",
                                           labelOpts={"position": 0.01, "anchors": [(0, 0), (0, 0)]})  # left-aligned: not clipped
        self.maxlive_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#59a14f", style=Qt.PenStyle.DotLine),
                                            label="MAXLIVE {value:.0f}", labelOpts={"position": 0.15})
        self.peak = pg.ScatterPlotItem(size=10, brush="#e15759", symbol="t")
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ffd700"))
        self.cursor2 = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ffd700"))
        self.conflict_marks = pg.ScatterPlotItem([], [], symbol="x", size=16, brush=CONFLICT_COLOUR,
                                                 pen=pg.mkPen("#ffffff", width=1))
        self.conflict_marks.setZValue(10)
        self.conflict_columns = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[], brush=pg.mkBrush(255, 0, 255, 50),
                                                pen=pg.mkPen(255, 0, 255, 170))
        self.conflict_columns.setZValue(7)
        self.plot.addItem(self.conflict_columns)
        for item in (self.budget_line, self.maxlive_line, self.peak, self.cursor, self.conflict_marks):
            self.pressure_plot.addItem(item)
        self.plot.addItem(self.cursor2)
        self.cursor.hide()
        self.cursor2.hide()
        self.stall_plot = self._stall_plot() if stalls else None
        self.stalls: StallStrip | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.layout_)
        self.layout_.scene().sigMouseMoved.connect(self._hover)
        self._legend_roles: tuple = ()

    def _stall_plot(self):
        """The strip of encoded stall cycles under the pressure, its bars and wait marks created once."""
        plot = self.layout_.addPlot(row=2, col=0)
        plot.setLabel("left", "stall")
        self.pressure_plot.setLabel("bottom", "")
        plot.setLabel("bottom", "instruction")
        plot.setXLink(self.plot)
        plot.setMouseEnabled(y=False)
        self.layout_.ci.layout.setRowStretchFactor(2, 1)
        legend = plot.addLegend(offset=(-10, 1), labelTextSize="8pt", labelTextColor="#f0f0f0",
                                brush=pg.mkBrush(20, 20, 24, 220), pen=pg.mkPen("#777777"), verSpacing=-6)
        self.stall_item = pg.BarGraphItem(x0=[], x1=[], y0=[], height=[], brush="#8f9fd8", pen=None)
        self.wait_item = pg.ScatterPlotItem([], [], symbol="t1", size=7, brush="#f28e2b", pen=None)
        plot.addItem(self.stall_item)
        plot.addItem(self.wait_item)
        legend.addItem(self.stall_item, timeline_model.STALL_LABEL)
        legend.addItem(self.wait_item, timeline_model.WAIT_LABEL)
        return plot

    # -- data ------------------------------------------------------------------------------
    def show_plan(self, plan: Plan, analysis, conflicts=(), selection: str | None = None) -> None:
        self.set_data(plan_timeline(plan, analysis), budget=plan.budget, conflicts=conflicts, selection=selection)

    def show_sass(self, sass, budget: int | None = None, roles=None) -> None:
        """nvdisasm's live ranges; ``roles``: each range's role (gui.model.timeline.sass_roles), None: grey."""
        self.set_data(sass_timeline(sass, roles), budget=budget)

    def set_data(self, data: TimelineData, budget=None, conflicts=(), selection=None) -> None:
        self.data = data
        self._bars(data.role_bars())
        n, height, maxlive = len(data.pressure), data.height, data.maxlive
        self._background(data, height)
        self.set_conflicts(conflicts)
        self.set_selection(selection)
        self.curve.setData(*data.pressure_steps())
        if budget is not None:
            self.budget_line.setValue(budget)
            self.budget_line.show()
        else:
            self.budget_line.hide()
        self.maxlive_line.label.setFormat(data.peak_label + " {value:.0f}")
        self.maxlive_line.setValue(maxlive)
        self.peak.setData([data.peak + 0.5], [maxlive])
        self.plot.setLimits(xMin=-n * 0.05 - 1, xMax=n * 1.05 + 1, yMin=-2, yMax=height + 2)
        self.plot.setYRange(-0.5, height, padding=0)
        self.set_linked(())
        self.plot.setXRange(0, max(n, 1), padding=0.01)
        self.pressure_plot.setYRange(0, max(maxlive, budget or 0) * 1.1 + 1, padding=0)

    def _bars(self, by_role: dict[str, Bars]) -> None:
        """One BarGraphItem per role, created on first use and emptied when the role is absent."""
        for role, item in self.bar_items.items():
            if role not in by_role:
                item.setOpts(x0=[], x1=[], y=[], height=0.8)
        for role, bars in by_role.items():
            item = self.bar_items.get(role)
            if item is None:
                item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.8, brush=ROLE_COLOURS[role], pen=None)
                self.bar_items[role] = item
                self.plot.addItem(item)
            item.setOpts(x0=bars.x0, x1=bars.x1, y=bars.y, height=0.8)
        if tuple(by_role) != self._legend_roles:
            self.legend.clear()
            for role in by_role:
                self.legend.addItem(self.bar_items[role], role)
            self._legend_roles = tuple(by_role)
            self._critical_legend(len(self.critical_item.xData if self.critical_item.xData is not None else ()))

    def _background(self, data: TimelineData, height: float) -> None:
        x0, x1 = data.spans(data.phases)
        self.background.setOpts(x0=x0, x1=x1, y0=np.full(len(x0), -0.5), y1=np.full(len(x0), float(height)),
                                brushes=[phase_colour(p) for _, _, p in data.phases])
        x0, x1 = data.spans(data.loops)
        self.loop_item.setOpts(x0=x0, x1=x1, y0=np.full(len(x0), -0.5), y1=np.full(len(x0), float(height)))

    def set_conflicts(self, conflicts) -> None:
        bars = self.data.conflict_bars(conflicts) if self.data is not None and conflicts else None
        x, y = self.data.conflict_points(conflicts) if bars is not None else (np.zeros(0), np.zeros(0))
        if bars is None:
            self.conflict_item.setOpts(x0=[], x1=[], y=[])
        else:
            self.conflict_item.setOpts(x0=bars.x0, x1=bars.x1, y=bars.y, height=0.9)
        self.conflict_marks.setData(x, y)
        top = float(self.data.height) if self.data is not None else 0.0
        self.conflict_columns.setOpts(x0=x - 0.5, x1=x + 0.5, y0=np.full(len(x), -0.5), y1=np.full(len(x), top))
        self.legend.removeItem(self.conflict_item)
        if bars is not None and len(bars):
            self.legend.addItem(self.conflict_item, timeline_model.CONFLICT_LABEL)

    def set_selection(self, name) -> None:
        """Outline the bars of value ``name`` (or of each value of a tuple of names; None: none)."""
        bars = self.data.selection_bars(name) if self.data is not None else None
        if bars is None or not len(bars):
            self.select_item.setOpts(x0=[], x1=[], y=[])
        else:
            self.select_item.setOpts(x0=bars.x0, x1=bars.x1, y=bars.y, height=0.95)

    def set_critical(self, x, rows) -> None:
        """Overlay a critical path (engine/model/ilp.py, a model): points at ``x`` on register ``rows``, joined."""
        n = len(x)
        y = self.data.y(rows) if self.data is not None and n else np.zeros(0)
        self.critical_item.setData(np.asarray(x, dtype=float) if n else np.zeros(0), np.asarray(y, dtype=float))
        self._critical_legend(n)

    def _critical_legend(self, n: int) -> None:
        self.legend.removeItem(self.critical_item)
        if n:
            self.legend.addItem(self.critical_item, timeline_model.CRITICAL_LABEL)

    def set_linked(self, indices) -> None:
        """Mark the instructions ``indices`` (columns over every row): those linked to the one selected in
        another view."""
        self.linked = tuple(sorted(int(i) for i in indices))
        x = np.asarray(self.linked, dtype=float)
        top = float(self.data.height) if self.data is not None else 0.0
        self.linked_item.setOpts(x0=x, x1=x + 1, y0=np.full(len(x), -0.5), y1=np.full(len(x), top))
        self._operands()

    def set_instruction(self, index: int | None) -> None:
        self.instruction = None if index is None or index < 0 else int(index)
        for line in (self.cursor, self.cursor2):
            if self.instruction is None:
                line.hide()
            else:
                line.setValue(self.instruction + 0.5)
                line.show()
        self._operands()

    def _operands(self) -> None:
        """Outline the bars the linked instructions and the selected one write or read."""
        rows = set(self.linked) | ({self.instruction} if self.instruction is not None else set())
        bars = self.data.operand_bars(rows) if self.data is not None and rows else None
        if bars is None or not len(bars):
            self.operand_item.setOpts(x0=[], x1=[], y=[], height=0.6)
        else:
            self.operand_item.setOpts(x0=bars.x0, x1=bars.x1, y=bars.y, height=0.6)
        self.legend.removeItem(self.operand_item)
        if bars is not None and len(bars):
            self.legend.addItem(self.operand_item, timeline_model.OPERAND_LABEL)

    def set_stalls(self, strip: StallStrip | None) -> None:
        """Draw each SASS row's encoded stall cycles and mark the rows that wait on a scoreboard (None: nothing,
        the rows and the -hex listing did not align)."""
        if self.stall_plot is None:
            return
        self.stalls = strip
        stall = strip.stall if strip is not None else np.zeros(0, dtype=np.int64)
        waits = strip.waits if strip is not None else np.zeros(0, dtype=np.int64)
        x = np.arange(len(stall), dtype=float)
        self.stall_item.setOpts(x0=x + 0.1, x1=x + 0.9, y0=np.zeros(len(x)), height=stall.astype(float))
        self.wait_item.setData(waits + 0.5, stall[waits] + 0.8 if len(waits) else np.zeros(0))
        # the top part is the legend's: the tallest bar stays under it
        self.stall_plot.setYRange(0, (int(stall.max()) if len(stall) else 0) * 1.8 + 3, padding=0)

    # -- interaction -----------------------------------------------------------------------
    def value_at_point(self, p: QPointF) -> str | None:
        if self.data is None:
            return None
        row = self.data.row_at(p.y())
        if row is None:
            return None
        v = self.data.value_at(p.x(), row)
        return None if v is None else self.data.names[v]

    def clicked_at(self, p: QPointF) -> None:
        if self.data is None:
            return
        n = len(self.data.pressure)
        x = int(np.floor(p.x()))
        if 0 <= x < n:
            self.instructionSelected.emit(x)
        name = self.value_at_point(p)
        if name is not None:
            self.valueSelected.emit(name)

    def show_drop_target(self, y: float) -> None:
        self.drop_line.setValue(round(y))
        self.drop_line.show()

    def drop(self, name: str, y: float) -> None:
        self.drop_line.hide()
        row = self.data.row_at(y) if self.data else None
        self.valueDropped.emit(name, row)

    def _hover(self, pos) -> None:
        if self.stalls is not None and self.stall_plot.sceneBoundingRect().contains(pos):
            row = int(np.floor(self.stall_plot.vb.mapSceneToView(pos).x()))
            if 0 <= row < len(self.stalls.controls):
                QToolTip.showText(self.layout_.mapToGlobal(self.layout_.mapFromScene(pos)),
                                  self.stalls.describe(row), self.layout_)
            return
        if self.data is None or self.data.describe is None:
            return
        if not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.view.mapSceneToView(pos)
        name = self.value_at_point(p)
        if name is None:
            QToolTip.hideText()
            return
        text = self.data.describe(self.data.number[name])
        QToolTip.showText(self.layout_.mapToGlobal(self.layout_.mapFromScene(pos)), text, self.layout_)
