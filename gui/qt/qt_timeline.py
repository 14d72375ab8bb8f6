"""QtTimeline: live ranges per physical register over the instruction order, and the pressure under it.

x = instruction index; one row per register (R0 at the top), spill slots in
their own rows below; one bar per live segment of every value on each of
its registers, coloured by role (one BarGraphItem per colour, so thousands
of bars redraw in milliseconds); kernel phases and loop bodies shaded
behind; conflicts outlined in red, the selected value in yellow. The
pressure plot underneath shares the x axis and shows the budget, MAXLIVE
and the peak. Hover shows a value's name, type, interval, definition and
uses; a click selects an instruction (and the value under the pointer); a
drag of a bar onto another row asks for an assignment edit
(``valueDropped``).

The same view draws a compiled kernel: :meth:`QtTimeline.show_sass` takes
nvdisasm's live ranges (kernels.sass) instead of a plan.
"""

from __future__ import annotations

import bisect
import zlib

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QToolTip, QVBoxLayout, QWidget

from engine.plan import Plan, registers_used
from engine.workloads.roles import ROLES, role_of

ROLE_COLOURS = {"A fragment": "#4e79a7", "B fragment": "#59a14f", "accumulator": "#e15759",
                "softmax temporary": "#b07aa1", "address": "#f28e2b", "index": "#9c755f", "scalar": "#76b7b2",
                "predicate": "#bab0ac", "spill slot": "#555555", "SASS live range": "#4e79a7"}
PHASE_ALPHA = 26


def phase_colour(name: str) -> QColor:
    palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]
    c = QColor(palette[zlib.crc32(name.encode()) % len(palette)])
    c.setAlpha(PHASE_ALPHA)
    return c


class TimelineData:
    """Bars, rows and lookups for one plan or one SASS listing (no Qt)."""

    def __init__(self, names, types, roles, seg_value, seg_start, seg_end, registers_of, pressure,
                 phases=(), loops=(), slots=None, describe=None, positions=False):
        """``positions``: segments are the engine's positions (2i before instruction i reads, 2i+1 after it
        writes), drawn from i+0.5 (after a definition) to j+0.5 (the last read); otherwise whole rows."""
        self.names, self.types, self.roles = names, types, roles
        self.pressure = np.asarray(pressure)
        self.phases, self.loops = phases, loops
        self.describe = describe
        x0, x1, row, value = [], [], [], []
        for v, s, e in zip(seg_value.tolist(), seg_start.tolist(), seg_end.tolist()):
            if positions:
                s, e = s / 2, (e + 1) / 2 - 1
            for r in registers_of(v):
                x0.append(s)
                x1.append(e + 1)
                row.append(r)
                value.append(v)
        self.rows_used = (max(row) + 1) if row else 0
        for name, (slot, s, e) in (slots or {}).items():
            x0.append(s + 0.5)
            x1.append(e + 0.5)
            row.append(-1 - slot)      # spill slots: negative rows, placed below the registers
            value.append(names.index(name) if name in names else -1)
        self.x0, self.x1 = np.array(x0, dtype=float), np.array(x1, dtype=float)
        self.row, self.value = np.array(row, dtype=np.int64), np.array(value, dtype=np.int64)
        self.slot_rows = sorted({-r - 1 for r in row if r < 0})
        self._index = None

    def y(self, row) -> np.ndarray:
        """Screen row: registers 0..R-1, then a gap, then spill slots."""
        row = np.asarray(row)
        return np.where(row >= 0, row, self.rows_used + 1 + (-row - 1))

    def row_at(self, y: float) -> int | None:
        r = int(round(y))
        if 0 <= r < self.rows_used:
            return r
        if r > self.rows_used and r - self.rows_used - 1 in self.slot_rows:
            return -1 - (r - self.rows_used - 1)
        return None

    def value_at(self, x: float, row: int) -> int | None:
        """The value whose bar covers instruction x on row (None if none)."""
        if self._index is None:
            self._index = {}
            order = np.lexsort((self.x0, self.row))
            for r in np.unique(self.row):
                sel = order[self.row[order] == r]
                self._index[int(r)] = (self.x0[sel].tolist(), self.x1[sel].tolist(), self.value[sel].tolist())
        starts, ends, values = self._index.get(row, ([], [], []))
        for k in range(bisect.bisect_right(starts, x) - 1, -1, -1):   # a row holds at most a few thousand bars
            if starts[k] <= x < ends[k]:
                return values[k] if values[k] >= 0 else None
        return None


def _runs(labels) -> list[tuple[int, int, str]]:
    out, start = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            if labels[start]:
                out.append((start, i, labels[start]))
            start = i
    return out


def plan_timeline(plan: Plan, analysis) -> TimelineData:
    """Bars of a plan: each segment on each register of its value, spill slots below."""
    program = plan.program
    names = list(analysis.names)
    values = [program.values[n] for n in names]
    assignment = plan.assignment
    regs = [tuple(assignment.get(n, ())) for n in names]
    slots = {}
    firsts, lasts = {}, {}
    for i, ins in enumerate(program.instructions):
        if ins.opcode in ("st.local", "ld.local") and ins.operands:
            slot = ins.operands[0].text
            firsts.setdefault(slot, i)
            lasts[slot] = i
    for name, slot in plan.spills.items():
        key = str(slot)
        if key in firsts:
            slots[name] = (int(slot), firsts[key], lasts[key])
    phases = _runs([ins.phase or "" for ins in program.instructions])
    loops = [(s, e, "loop") for s, e, _ in _runs(["loop" if d > 0 else "" for d in analysis.loop_depth.tolist()])]

    def describe(v: int) -> str:
        name = names[v]
        seg = [(int(s) // 2, int(e) // 2) for s, e, val in zip(analysis.seg_start, analysis.seg_end,
                                                                analysis.seg_value) if val == v]
        defs = [i for i, ins in enumerate(program.instructions) if any(d.name == name for d in ins.defs)]
        uses = [i for i, ins in enumerate(program.instructions) if name in ins.uses]
        where = ", ".join(f"{s}-{e}" for s, e in seg[:6]) + (" ..." if len(seg) > 6 else "")
        reg = ":".join(f"R{r}" for r in regs[v]) or "none"
        spill = f", spilled to slot {plan.spills[name]}" if name in plan.spills else ""
        return (f"%{name}: {values[v].type} ({role_of(values[v])}) in {reg}{spill}\n"
                f"live {where}\ndefined at {_short(defs)}; used at {_short(uses)}")

    return TimelineData(names, [v.type for v in values], [role_of(v) for v in values], analysis.seg_value,
                        analysis.seg_start, analysis.seg_end, lambda v: regs[v], analysis.pressure, phases, loops,
                        slots, describe, positions=True)


def sass_timeline(sass) -> TimelineData:
    """Bars of a compiled kernel's SASS: nvdisasm's live ranges on their physical registers."""
    names = list(sass.names)
    regs = sass.registers.tolist()

    def describe(v: int) -> str:
        s, e = int(sass.start[v]), int(sass.end[v])
        return (f"{names[v]} (R{regs[v]})\nlive SASS rows {s}-{e}\n"
                f"defined by /*{sass.offsets[s]}*/ {sass.texts[s]}\nlast read by /*{sass.offsets[e]}*/ {sass.texts[e]}")

    return TimelineData(names, ["b32"] * len(names), ["SASS live range"] * len(names), sass.seg_value,
                        sass.seg_start, sass.seg_end, lambda v: (regs[v],), sass.pressure, describe=describe)


def _short(items: list[int]) -> str:
    return ", ".join(map(str, items[:8])) + (f" ... ({len(items)} in all)" if len(items) > 8 else "") or "-"


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

    def __init__(self, parent=None, editable: bool = True):
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
        self.legend = self.plot.addLegend(offset=(-10, 10), labelTextSize="8pt")
        self.conflict_item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.9, pen=pg.mkPen("#ff0000", width=2),
                                             brush=None)
        self.select_item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.95, pen=pg.mkPen("#ffd700", width=2.5),
                                           brush=None)
        self.drop_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#ffd700", style=Qt.PenStyle.DotLine))
        self.drop_line.hide()
        for item in (self.conflict_item, self.select_item, self.drop_line):
            item.setZValue(10)
            self.plot.addItem(item)
        self.curve = self.pressure_plot.plot([], [], stepMode="center", fillLevel=0,
                                             brush=(78, 121, 167, 90), pen=pg.mkPen("#4e79a7", width=1.5))
        self.budget_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#e15759", style=Qt.PenStyle.DashLine),
                                           label="budget {value:.0f}", labelOpts={"position": 0.02})
        self.maxlive_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#59a14f", style=Qt.PenStyle.DotLine),
                                            label="MAXLIVE {value:.0f}", labelOpts={"position": 0.15})
        self.peak = pg.ScatterPlotItem(size=10, brush="#e15759", symbol="t")
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ffd700"))
        self.cursor2 = pg.InfiniteLine(angle=90, pen=pg.mkPen("#ffd700"))
        for item in (self.budget_line, self.maxlive_line, self.peak, self.cursor):
            self.pressure_plot.addItem(item)
        self.plot.addItem(self.cursor2)
        self.cursor.hide()
        self.cursor2.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.layout_)
        self.layout_.scene().sigMouseMoved.connect(self._hover)
        self._legend_roles: tuple = ()

    # -- data ------------------------------------------------------------------------------
    def show_plan(self, plan: Plan, analysis, conflicts=(), selection: str | None = None) -> None:
        self.set_data(plan_timeline(plan, analysis), budget=plan.budget, conflicts=conflicts, selection=selection,
                      rows=max(registers_used(plan.assignment), 1))

    def show_sass(self, sass, budget: int | None = None) -> None:
        self.set_data(sass_timeline(sass), budget=budget, rows=max(sass.register_columns, 1))

    def set_data(self, data: TimelineData, budget=None, conflicts=(), selection=None, rows=None) -> None:
        self.data = data
        ys = data.y(data.row)
        for role in list(self.bar_items):
            self.bar_items[role].setOpts(x0=[], x1=[], y=[], height=0.8)
        roles_present = []
        role_of_bar = np.array(data.roles, dtype=object)[data.value] if len(data.value) else np.array([])
        slot_bar = data.row < 0
        for role in (*ROLES, "SASS live range", "spill slot"):
            if role == "spill slot":
                mask = slot_bar
            else:
                mask = (role_of_bar == role) & ~slot_bar if len(role_of_bar) else np.zeros(0, bool)
            if not mask.any():
                continue
            roles_present.append(role)
            item = self.bar_items.get(role)
            if item is None:
                item = pg.BarGraphItem(x0=[], x1=[], y=[], height=0.8, brush=ROLE_COLOURS[role], pen=None)
                self.bar_items[role] = item
                self.plot.addItem(item)
            item.setOpts(x0=data.x0[mask], x1=data.x1[mask], y=ys[mask], height=0.8)
        if tuple(roles_present) != self._legend_roles:
            self.legend.clear()
            for role in roles_present:
                self.legend.addItem(self.bar_items[role], role)
            self._legend_roles = tuple(roles_present)
        n = len(data.pressure)
        height = (data.rows_used + (1 + len(data.slot_rows) if data.slot_rows else 0)) or 1
        self._background(data, height)
        self.set_conflicts(conflicts)
        self.set_selection(selection)
        x = np.arange(n + 1)
        self.curve.setData(x, data.pressure)
        if budget is not None:
            self.budget_line.setValue(budget)
            self.budget_line.show()
        else:
            self.budget_line.hide()
        maxlive = int(data.pressure.max()) if n else 0
        peak = int(data.pressure.argmax()) if n else 0
        self.maxlive_line.setValue(maxlive)
        self.peak.setData([peak + 0.5], [maxlive])
        self.plot.setLimits(xMin=-n * 0.05 - 1, xMax=n * 1.05 + 1, yMin=-2, yMax=height + 2)
        self.plot.setYRange(-0.5, height, padding=0)
        self.plot.setXRange(0, max(n, 1), padding=0.01)
        self.pressure_plot.setYRange(0, max(maxlive, budget or 0) * 1.1 + 1, padding=0)

    def _background(self, data: TimelineData, height: float) -> None:
        if data.phases:
            x0 = [s for s, _, _ in data.phases]
            x1 = [e for _, e, _ in data.phases]
            brushes = [phase_colour(p) for _, _, p in data.phases]
            self.background.setOpts(x0=x0, x1=x1, y0=[-0.5] * len(x0), y1=[height] * len(x0), brushes=brushes)
        else:
            self.background.setOpts(x0=[], x1=[], y0=[], y1=[], brushes=[])
        if data.loops:
            self.loop_item.setOpts(x0=[s for s, _, _ in data.loops], x1=[e for _, e, _ in data.loops],
                                   y0=[-0.5] * len(data.loops), y1=[height] * len(data.loops))
        else:
            self.loop_item.setOpts(x0=[], x1=[], y0=[], y1=[])

    def set_conflicts(self, conflicts) -> None:
        d = self.data
        if d is None or not conflicts:
            self.conflict_item.setOpts(x0=[], x1=[], y=[])
            return
        index = {n: i for i, n in enumerate(d.names)}
        x0, x1, ys = [], [], []
        for c in conflicts:
            for name in c.values:
                v = index.get(name)
                if v is None:
                    continue
                at = c.instruction + 0.5
                mask = (d.value == v) & (d.x0 <= at) & (d.x1 >= at)
                x0 += d.x0[mask].tolist()
                x1 += d.x1[mask].tolist()
                ys += d.y(d.row[mask]).tolist()
        self.conflict_item.setOpts(x0=x0, x1=x1, y=ys, height=0.9)

    def set_selection(self, name: str | None) -> None:
        d = self.data
        if d is None or not name or name not in d.names:
            self.select_item.setOpts(x0=[], x1=[], y=[])
            return
        mask = d.value == d.names.index(name)
        self.select_item.setOpts(x0=d.x0[mask], x1=d.x1[mask], y=d.y(d.row[mask]), height=0.95)

    def set_instruction(self, index: int | None) -> None:
        for line in (self.cursor, self.cursor2):
            if index is None or index < 0:
                line.hide()
            else:
                line.setValue(index + 0.5)
                line.show()

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
        if self.data is None or self.data.describe is None:
            return
        if not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.view.mapSceneToView(pos)
        name = self.value_at_point(p)
        if name is None:
            QToolTip.hideText()
            return
        text = self.data.describe(self.data.names.index(name))
        QToolTip.showText(self.layout_.mapToGlobal(self.layout_.mapFromScene(pos)), text, self.layout_)
