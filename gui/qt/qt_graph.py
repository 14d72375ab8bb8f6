"""QtInterferenceGraph: the interference view, readable from 10 to 10,000 values.

Left, the interference matrix: one ImageItem of the codes gui.model.graph builds from the interference
CSR (values ordered by live-range start or by register; cells coloured by the row value's register, or
plain, with the plan's conflicts in red either way, and ringed in red to show at any size); hovering a cell names its two values, clicking it
selects the row's value everywhere; the selection is crossed, and a chosen register's values are marked
on the diagonal. Right, the selected value's neighbourhood with every interference among its members (the
induced subgraph), x the live-range start and y the register as on the timeline, conflicting pairs in red.

Invariant: no graph of the whole program is built here; every item is created once and updated in place
(``setImage``/``setData``); the matrix is rebuilt only when the plan, the order or the colouring changes.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.plan import Plan
from engine.workloads.roles import role_of
from gui.model.graph import (
    COLOURINGS,
    CONFLICT,
    GROUP_LIMIT,
    GROUPINGS,
    ORDERS,
    PALETTE,
    InterferenceMatrix,
    conflict_pairs,
    edges_to_draw,
    first_registers,
    group_neighbours,
    grouping_of,
    interference_matrix,
    interferences_among,
    lookup_table,
    neighbourhood,
    neighbourhood_layout,
    register_class,
    restrict,
    value_order,
)
from gui.qt.qt_timeline import ROLE_COLOURS

SELECTED, CLASS = "#ffd700", "#00e5ff"
#: what the neighbourhood pane says before anything is selected (instead of an empty plot)
NO_SELECTION = ("Select a value to see its neighbourhood here: click a cell of the matrix (its row's value), a bar "
                "on the timeline or a row of the Allocation table. Each neighbour is drawn at its live-range start "
                "(x) and register (y), with every interference among them; above "
                f"{GROUP_LIMIT} neighbours they are grouped by role (or register), and 'show' picks one group.")


def _names(names, values, limit: int = 8) -> str:
    shown = ", ".join("%" + names[v] for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


class QtInterferenceGraph(QWidget):
    valueSelected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plan: Plan | None = None
        self.analysis = None
        self.conflicts: list = []
        self.selection: str | None = None
        self.register: int | None = None
        self.matrix: InterferenceMatrix | None = None
        self.shown: list[str] = []
        self._matrix_key = None
        self._registers = np.zeros(0, dtype=np.int64)
        self._build_controls()
        self._build_matrix()
        self._build_neighbourhood()
        self._lay_out()

    # -- construction ----------------------------------------------------------------------
    def _build_controls(self) -> None:
        self.order_box = QComboBox()
        self.order_box.addItems([f"order: {o}" for o in ORDERS])
        self.colour_box = QComboBox()
        self.colour_box.addItems([f"colour: {c}" for c in COLOURINGS])
        self.register_box = QComboBox()
        self.radius = QSpinBox()
        self.radius.setRange(1, 2)
        self.radius.setPrefix("neighbourhood radius ")
        self.order_box.currentIndexChanged.connect(lambda _: self.refresh())
        self.colour_box.currentIndexChanged.connect(lambda _: self.refresh())
        self.register_box.currentIndexChanged.connect(self._register_chosen)
        self.radius.valueChanged.connect(lambda _: self._draw_neighbourhood())
        self.group_box = QComboBox()
        self.group_box.addItems([f"group: {g}" for g in GROUPINGS])
        self.group_box.setToolTip(f"group the neighbours by register or role (auto: by role above {GROUP_LIMIT})")
        self.group_box.currentIndexChanged.connect(lambda _: self._regroup())
        self.filter_box = QComboBox()
        self.filter_box.setToolTip("show every group, or the neighbours of one group one by one")
        self.filter_box.currentIndexChanged.connect(lambda _: self._draw_neighbourhood())
        self.groups: list = []
        self._group_key = None
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.hover = QLabel("hover a cell to name its two values; click it to select the row's value")
        self.hover.setWordWrap(True)          # unwrapped, its width held the matrix pane wide at 1280x800
        self.neighbourhood_caption = QLabel()
        self.neighbourhood_caption.setWordWrap(True)

    def _build_matrix(self) -> None:
        self.matrix_plot = pg.PlotWidget()
        # not aspect-locked: the matrix fills its axes whatever the pane's shape (a locked square left y from
        # -100 to 600 for 469 rows); the axes stop at the matrix
        self.matrix_plot.getViewBox().invertY(True)
        self.matrix_plot.setLabel("left", "values (row)")
        self.matrix_plot.setLabel("bottom", "values (column)")
        self.image = pg.ImageItem()
        self.lut = lookup_table()
        self.matrix_plot.addItem(self.image)
        self.row_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(SELECTED, width=1))
        self.col_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(SELECTED, width=1))
        self.class_marks = pg.ScatterPlotItem(symbol="s", size=7, pen=pg.mkPen(CLASS, width=1.5), brush=None)
        # a conflict is one cell, a pixel or two on screen: ringed so that it shows at any size
        self.conflict_marks = pg.ScatterPlotItem(symbol="o", size=13, pen=pg.mkPen("#ff2020", width=2), brush=None)
        for item in (self.row_line, self.col_line, self.class_marks, self.conflict_marks):
            item.setZValue(10)
            self.matrix_plot.addItem(item)
        self.matrix_plot.scene().sigMouseMoved.connect(self._hovered)
        self.matrix_plot.scene().sigMouseClicked.connect(self._matrix_clicked)

    def _build_neighbourhood(self) -> None:
        self.plot = pg.PlotWidget()
        self.plot.getViewBox().invertY(True)
        self.plot.setLabel("bottom", "live-range start (instruction)")
        self.plot.setLabel("left", "register (-1: none)")
        self.graph_item = pg.GraphItem()
        self.plot.addItem(self.graph_item)
        self.ring = pg.ScatterPlotItem(size=20, pen=pg.mkPen(SELECTED, width=2), brush=None)
        self.class_ring = pg.ScatterPlotItem(size=15, pen=pg.mkPen(CLASS, width=2), brush=None)
        self.plot.addItem(self.ring)
        self.plot.addItem(self.class_ring)
        self.conflict_edges = pg.PlotDataItem([], [], connect="pairs", pen=pg.mkPen("#ff2020", width=2))
        self.plot.addItem(self.conflict_edges)
        self.graph_item.scatter.sigClicked.connect(self._node_clicked)
        self.brushes = [pg.mkBrush(c) for c in PALETTE] + [pg.mkBrush("#888888")]
        self.group_labels: list[pg.TextItem] = []
        self.hint = QLabel(NO_SELECTION)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setMargin(24)
        self.pane = QStackedWidget()
        self.pane.addWidget(self.hint)
        self.pane.addWidget(self.plot)

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        for w in (self.order_box, self.colour_box, self.register_box, self.radius):
            top.addWidget(w)
        top.addStretch(1)
        left, right = QWidget(), QWidget()
        lv, rv = QVBoxLayout(left), QVBoxLayout(right)
        lv.setContentsMargins(0, 0, 0, 0)
        rv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.caption)
        lv.addWidget(self.matrix_plot, 1)
        lv.addWidget(self.hover)
        pick = QHBoxLayout()
        pick.addWidget(self.group_box)
        pick.addWidget(self.filter_box, 1)
        rv.addLayout(pick)
        rv.addWidget(self.neighbourhood_caption)
        rv.addWidget(self.pane, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(right)
        self.splitter.setSizes([500, 500])
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.splitter, 1)

    # -- data ------------------------------------------------------------------------------
    def show_plan(self, plan: Plan, analysis, selection: str | None = None, conflicts=()) -> None:
        self.plan, self.analysis, self.selection, self.conflicts = plan, analysis, selection, list(conflicts)
        self._registers = first_registers(analysis.names, plan.assignment)
        self._fill_registers()
        self.refresh()

    def set_selection(self, name: str | None) -> None:
        self.selection = name
        if self.plan is not None:
            self._draw_selection()
            self._draw_neighbourhood()

    def set_register(self, register: int | None) -> None:
        """Mark the values register ``register`` holds (None: no register chosen)."""
        index = 0 if register is None else self.register_box.findData(register)
        self.register_box.setCurrentIndex(max(index, 0))

    @property
    def order(self) -> str:
        return ORDERS[self.order_box.currentIndex()]

    @property
    def colouring(self) -> str:
        return COLOURINGS[self.colour_box.currentIndex()]

    def refresh(self) -> None:
        if self.plan is None:
            return
        key = (self.plan, self.order, self.colouring)        # the plan itself: an id can be reused
        if self._matrix_key is None or key[0] is not self._matrix_key[0] or key[1:] != self._matrix_key[1:]:
            self._draw_matrix()
            self._matrix_key = key
        self._draw_selection()
        self._draw_class()
        self._draw_neighbourhood()

    def _fill_registers(self) -> None:
        used = sorted({r for regs in self.plan.assignment.values() for r in (regs or ())})
        keep = self.register
        self.register_box.blockSignals(True)
        self.register_box.clear()
        self.register_box.addItem("register: none", None)
        for r in used:
            self.register_box.addItem(f"register: R{r}", r)
        self.register_box.setCurrentIndex(max(self.register_box.findData(keep), 0) if keep is not None else 0)
        self.register = self.register_box.currentData()
        self.register_box.blockSignals(False)

    def _register_chosen(self, _index: int) -> None:
        self.register = self.register_box.currentData()
        if self.plan is not None:
            self._draw_class()
            self._draw_neighbourhood()

    # -- the matrix ------------------------------------------------------------------------
    def _draw_matrix(self) -> None:
        order = value_order(self.analysis, self.plan.assignment, self.order)
        self.matrix = m = interference_matrix(self.analysis.interference, order, self._registers, self.colouring,
                                              conflict_pairs(self.conflicts))
        self.image.setImage(m.image.T, levels=(0, 255), lut=self.lut, autoLevels=False)
        self.image.setRect(0, 0, m.side, m.side)
        red = np.argwhere(m.image == CONFLICT) + 0.5
        self.conflict_marks.setData(red[:, 1], red[:, 0])
        self.matrix_plot.getViewBox().setLimits(xMin=0, xMax=m.side, yMin=0, yMax=m.side)
        self.matrix_plot.setRange(xRange=(0, m.side), yRange=(0, m.side), padding=0)

    def matrix_caption(self) -> str:
        m = self.matrix
        colour = ("cell colour: the row value's register" if self.colouring == "register"
                  else "cells: interfering pairs")
        if m.per_pixel > 1:
            colour = f"one pixel = {m.per_pixel}x{m.per_pixel} values, lighter = more of them interfere"
        conflicts = f"{m.conflicts} conflicts (red)" if m.conflicts else "no conflicts"
        return (f"{len(m.order)} values, {m.interferences:,} interferences, {conflicts}; rows and columns by "
                f"{self.order}; {colour}")

    def _draw_selection(self) -> None:
        pixel = self._pixel(self.selection)
        for line in (self.row_line, self.col_line):
            line.setVisible(pixel is not None)
            if pixel is not None:
                line.setValue(pixel + 0.5)

    def _pixel(self, name: str | None) -> int | None:
        if name is None or self.matrix is None or name not in self.analysis.index:
            return None
        return self.matrix.pixel_of(self.analysis.index[name])

    def _class_values(self) -> np.ndarray:
        if self.register is None:
            return np.zeros(0, dtype=np.int64)
        return register_class(self.analysis.names, self.plan.assignment, self.register)

    def _draw_class(self) -> None:
        members = self._class_values()
        pixels = [p + 0.5 for p in (self.matrix.pixel_of(v) for v in members) if p is not None]
        self.class_marks.setData(pixels, pixels)
        self.caption.setText(self.matrix_caption() + self._class_caption(members))

    def _class_caption(self, members: np.ndarray) -> str:
        if self.register is None:
            return ""
        clashes = interferences_among(self.analysis.interference, members)
        verdict = "no two of them interfere" if not clashes else f"{clashes} pairs of them interfere (conflicts)"
        return (f"\nR{self.register} holds {len(members)} values (marked in cyan on the diagonal): "
                f"{_names(self.analysis.names, members)}; {verdict}")

    def cell_text(self, row: int, col: int) -> str | None:
        """What the matrix cell at (``row``, ``col``) stands for, in words (None outside the matrix)."""
        rows, cols = self.matrix.values_at(row, col) if self.matrix is not None else ((), ())
        if not len(rows) or not len(cols):
            return None
        code = int(self.matrix.image[row, col])
        if len(rows) > 1 or len(cols) > 1:
            return (f"{_names(self.analysis.names, rows, 2)} x {_names(self.analysis.names, cols, 2)}: "
                    + ("a conflict among them" if code == CONFLICT else "some of them interfere" if code else "none interfere"))
        return self._pair_text(int(rows[0]), int(cols[0]), code)

    def _pair_text(self, u: int, v: int, code: int) -> str:
        names, regs = self.analysis.names, self._registers
        where = [f"%{names[x]} ({'R' + str(regs[x]) if regs[x] >= 0 else 'no register'}, live from "
                 f"{self.analysis.start[x] // 2})" for x in (u, v)]   # an instruction, as on the timeline
        if u == v:
            return f"{where[0]}: itself"
        together = "interfere" if v in self.analysis.interference.neighbors(u) else "do not interfere"
        if (names[u], names[v]) in self._conflict_set() or (names[v], names[u]) in self._conflict_set():
            together = "CONFLICT: both live in one register"
        return f"{where[0]} and {where[1]}: {together}"

    def _conflict_set(self) -> set:
        return set(conflict_pairs(self.conflicts))

    def _cell_at(self, scene_pos) -> tuple[int, int] | None:
        if self.matrix is None or not self.matrix_plot.getViewBox().sceneBoundingRect().contains(scene_pos):
            return None
        p = self.matrix_plot.getViewBox().mapSceneToView(scene_pos)
        row, col = int(np.floor(p.y())), int(np.floor(p.x()))
        return (row, col) if 0 <= row < self.matrix.side and 0 <= col < self.matrix.side else None

    def _hovered(self, scene_pos) -> None:
        cell = self._cell_at(scene_pos)
        if cell is not None:
            self.hover.setText(self.cell_text(*cell))

    def _matrix_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        cell = self._cell_at(event.scenePos())
        if cell is not None:
            event.accept()
            self.click_cell(*cell)

    def click_cell(self, row: int, col: int) -> None:
        """Select the value of matrix row ``row`` as a click on a cell does, and name the cell's two values."""
        rows, _cols = self.matrix.values_at(row, col)
        if len(rows):
            self.hover.setText(self.cell_text(row, col))
            self.valueSelected.emit(self.analysis.names[int(rows[0])])

    def cell_centre(self, row: int, col: int) -> QPointF:
        """The scene position of a matrix cell's centre (for tests and scripts that click it)."""
        return self.matrix_plot.getViewBox().mapViewToScene(QPointF(col + 0.5, row + 0.5))

    # -- the neighbourhood -----------------------------------------------------------------
    def _draw_neighbourhood(self) -> None:
        a = self.analysis
        centre = a.index.get(self.selection) if self.selection else None
        if centre is None or a.widths[centre] == 0:
            self._clear_neighbourhood("No value selected: select a value to see its neighbourhood.")
            return
        h = neighbourhood(a.interference, centre, self.radius.value())
        self._fill_groups(h)
        chosen = self.filter_box.currentData()
        if chosen is not None and chosen < len(self.groups):      # one group's neighbours, one by one
            self._draw_values(restrict(h, self.groups[chosen].members), self.groups[chosen].label)
        elif self.groups:
            self._draw_groups(h)
        else:
            self._draw_values(h)
        self.pane.setCurrentWidget(self.plot)

    @property
    def grouping(self) -> str:
        return GROUPINGS[self.group_box.currentIndex()]

    def _regroup(self) -> None:
        self._group_key = None
        self._draw_neighbourhood()

    def _fill_groups(self, h) -> None:
        """The groups of the neighbourhood in the grouping in force, and the 'show' box's entries for them."""
        by = grouping_of(self.grouping, len(h.nodes) - 1)
        key = (self.plan, self.selection, h.radius, by)
        if key == self._group_key:
            return
        self._group_key = key
        values, names = self.plan.program.values, self.analysis.names
        roles = {int(v): role_of(values[names[v]]) for v in h.nodes.tolist()} if by == "role" else {}
        self.groups = group_neighbours(h.nodes, self._registers, roles, by)
        self.filter_box.blockSignals(True)
        self.filter_box.clear()
        self.filter_box.addItem("show: every group" if self.groups else "show: every neighbour", None)
        for k, g in enumerate(self.groups):
            self.filter_box.addItem(f"show: {g.label} ({len(g.members)})", k)
        self.filter_box.setEnabled(bool(self.groups))
        self.filter_box.blockSignals(False)

    def _draw_values(self, h, group: str | None = None) -> None:
        """One node per value of ``h``, at its live-range start and register, every edge among them."""
        a = self.analysis
        edges = edges_to_draw(h)
        pos = neighbourhood_layout(a, h.nodes, self._registers)
        self.shown = [a.names[v] for v in h.nodes]
        regs = self._registers[h.nodes]
        brushes = [self.brushes[r % len(PALETTE)] if r >= 0 else self.brushes[-1] for r in regs.tolist()]
        symbols = ["x" if n in self.plan.spills else "o" for n in self.shown]
        self.graph_item.setData(pos=pos, adj=edges, symbolBrush=brushes, symbol=symbols, size=9, pxMode=True,
                                pen=pg.mkPen((170, 170, 170, 12), width=1), data=np.array(self.shown, dtype=object))
        self.ring.setData(pos[:1, 0], pos[:1, 1])
        inside = np.isin(h.nodes, self._class_values())
        self.class_ring.setData(pos[inside, 0], pos[inside, 1])
        self._draw_conflict_edges(h, pos)
        self._label_groups([])
        text = self._neighbourhood_caption(h, len(edges))
        if group is not None:
            text = f"{group} only: " + text
        self.neighbourhood_caption.setText(text)

    def _draw_groups(self, h) -> None:
        """One node per group (at its members' mean live-range start and register, sized by how many), joined
        to the centre: a fan of hundreds of lines says nothing."""
        a = self.analysis
        start = np.asarray(a.start) / 2
        centre = h.nodes[0]
        pos = np.array([[start[centre], self._registers[centre]]]
                       + [[start[g.members].mean(), self._registers[g.members].mean()] for g in self.groups], float)
        sizes = [12] + [min(9 + 3 * float(np.sqrt(len(g.members))), 44) for g in self.groups]
        adj = np.array([[0, k + 1] for k in range(len(self.groups))], dtype=int).reshape(-1, 2)
        self.shown = [a.names[centre]]
        by = grouping_of(self.grouping, len(h.nodes) - 1)
        # a role's group in the role's colour on the timeline; a register's in that register's colour here
        brushes = [self.brushes[-1]] + [pg.mkBrush(ROLE_COLOURS.get(g.label, "#888888")) if by == "role"
                                        else self.brushes[int(self._registers[g.members[0]]) % len(PALETTE)]
                                        for g in self.groups]
        self.graph_item.setData(pos=pos, adj=adj, symbolBrush=brushes, symbol="o", size=sizes, pxMode=True,
                                pen=pg.mkPen((170, 170, 170, 120), width=1),
                                data=np.array([a.names[centre]] + [None] * len(self.groups), dtype=object))
        self.ring.setData(pos[:1, 0], pos[:1, 1])
        self.class_ring.setData([], [])
        self.conflict_edges.setData([], [])
        self._label_groups([(f"{g.label} \u00d7{len(g.members)}", p) for g, p in zip(self.groups, pos[1:])])
        (x0, y0), (x1, y1) = pos.min(axis=0), pos.max(axis=0)
        span = max(x1 - x0, 1.0)                 # room on the right for the labels, on top for the largest node
        self.plot.getViewBox().setRange(xRange=(x0 - 0.5 * span, x1 + 0.5 * span),
                                        yRange=(y0 - 3, y1 + 3), padding=0)
        self.neighbourhood_caption.setText(
            f"%{self.selection} and its {len(h.nodes) - 1} neighbours in {len(self.groups)} groups by {by} (one "
            f"node per group, sized by its count; {len(h.edges):,} interferences among them): pick a group in "
            "'show' to see its values one by one")

    def _label_groups(self, labels: list) -> None:
        """Text beside each group node; the labels are made once and reused (hidden when not needed)."""
        while len(self.group_labels) < len(labels):
            item = pg.TextItem(color="#f0f0f0", anchor=(0, 0.5))
            self.plot.addItem(item)
            self.group_labels.append(item)
        middle = float(np.mean([p[0] for _t, p in labels])) if labels else 0.0
        for k, item in enumerate(self.group_labels):
            if k < len(labels):
                item.setText(labels[k][0])
                item.setPos(*labels[k][1])
                item.setAnchor((1.1, 0.5) if labels[k][1][0] > middle else (-0.1, 0.5))   # towards the middle
                item.show()
            else:
                item.hide()

    def _draw_conflict_edges(self, h, pos: np.ndarray) -> None:
        """The neighbourhood's edges whose two values share a register, in red (drawn whatever the limit)."""
        conflicts = self._conflict_set()
        names = self.analysis.names
        red = [e for e in h.edges.tolist()
               if (names[h.nodes[e[0]]], names[h.nodes[e[1]]]) in conflicts
               or (names[h.nodes[e[1]]], names[h.nodes[e[0]]]) in conflicts] if conflicts else []
        ends = pos[np.array(red, dtype=np.int64).reshape(-1)] if red else np.zeros((0, 2))
        self.conflict_edges.setData(ends[:, 0], ends[:, 1])

    def _neighbourhood_caption(self, h, drawn: int) -> str:
        within = "its neighbours" if h.radius == 1 else f"the values within {h.radius} steps"
        text = (f"%{self.selection} and {within} ({len(h.nodes) - 1}): {len(h.edges):,} interferences among them; "
                "x: live-range start, y: register")
        if drawn < len(h.edges):
            text += f"; too many to draw: only %{self.selection}'s own {drawn} are drawn"
        return text

    def _clear_neighbourhood(self, caption: str) -> None:
        """Nothing selected: the pane says what to do instead of showing an empty plot."""
        self.pane.setCurrentWidget(self.hint)
        self.groups, self._group_key = [], None
        self.filter_box.blockSignals(True)
        self.filter_box.clear()
        self.filter_box.addItem("show: every neighbour", None)
        self.filter_box.setEnabled(False)
        self.filter_box.blockSignals(False)
        self._label_groups([])
        self.shown = []
        self.graph_item.setData(pos=np.zeros((0, 2)), adj=np.zeros((0, 2), dtype=int))
        self.ring.setData([], [])
        self.class_ring.setData([], [])
        self.conflict_edges.setData([], [])
        self.neighbourhood_caption.setText(caption)

    def _node_clicked(self, _scatter, points, *args) -> None:
        if len(points):
            name = points[0].data()
            if name is not None:
                self.valueSelected.emit(str(name))
            elif self.groups and 0 < points[0].index() <= len(self.groups):     # a group: show its values
                self.filter_box.setCurrentIndex(points[0].index())

    def click_node(self, name: str) -> None:
        """Select a node of the neighbourhood as a click on it does (used by the window and tests)."""
        if name in self.shown:
            self.valueSelected.emit(name)
