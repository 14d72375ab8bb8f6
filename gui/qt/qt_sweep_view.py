"""QtSweepView: a sweep store's rows as a heatmap over M x N (GEMM) or head_dim x groups (MHA), the other config
fields and options chosen by a box each, coloured by one figure; hovering a cell names its config and figures, a
double-click (on a cell or a worst-configs row) asks the window to open that config in the main views.

The rows come from the store (engine/store.py) through the filter box, in the sweep filter language; a filter
that does not parse shows its one-line error under the box and the view keeps what it showed. The grid, the
words of a cell and the worst rows are gui.model.sweep_view's.

Invariant: the heatmap is one ImageItem updated with ``setImage`` (STYLE 16), redrawn from the model's grid
only when the rows, the figure or a slice box change; the view never writes to the store.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.base.errors import RegtuneError
from engine.sweep_figures import FIGURES, figure
from gui.model.sweep_view import (
    AXES,
    VIEW_FIGURES,
    WORST,
    SweepGrid,
    cell_words,
    range_of,
    worst_rows,
)

#: the worst-configs tables' columns
WORST_COLUMNS = ("config", "figure", "allocator", "budget", "arch, cap")


def _text(value) -> str:
    return "" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))


def _where(row: dict) -> str:
    """A row's arch/cap ('analysis' for a row without ptxas)."""
    return "analysis" if row.get("arch") in (None, "-") else f"{row.get('arch')}/{row.get('cap')}"


class QtSweepView(QWidget):
    """The Sweep view; :meth:`open_store` reads a store, :meth:`set_rows` shows rows handed in."""

    configRequested = Signal(object)      # a row (a dict): open its config in the main views

    def __init__(self, parent=None):
        super().__init__(parent)
        self.store_path: Path | None = None
        self.total: int | None = None
        self.rows: list[dict] = []
        self.where: str | None = None
        self.grid: SweepGrid | None = None
        self.cells = None
        self.redraw_seconds = 0.0
        self._quiet = False
        self.store_label = QLabel("no store open (File > Open sweep store...)")
        self.store_label.setWordWrap(True)
        self.open_button = QPushButton("Open store...")
        self.open_button.clicked.connect(self.open_store_dialog)
        self.workload = QComboBox()
        self.workload.addItems(list(AXES))
        self.figure = QComboBox()
        # the longest figure's name would set the tab's minimum width; the box shows 22 characters, the list all
        self.figure.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.figure.setMinimumContentsLength(22)
        for name in VIEW_FIGURES:
            self.figure.addItem(FIGURES[name].label, name)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter, e.g. m <= 8 and allocator == 'dsatur' (Enter)")
        self.filter.returnPressed.connect(self.apply_filter)
        self.filter_error = QLabel()
        self.filter_error.setStyleSheet("color: #d62728")
        self.filter_error.setWordWrap(True)
        self.filter_error.hide()
        self.slices = QHBoxLayout()
        self.slice_boxes: dict[str, QComboBox] = {}
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(False, False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False, width=14)
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.hover = QLabel("hover a cell: its config and figures; double-click it: open it in the main views")
        self.hover.setWordWrap(True)
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.worst = QTabWidget()
        self.worst.setUsesScrollButtons(True)     # all three tabs' titles would otherwise set a minimum width
        self.worst_tables: dict[str, QTableWidget] = {}
        self.worst_shown: dict[str, list[dict]] = {}
        self._layout()
        self.workload.activated.connect(lambda _i: self._rebuild())
        self.figure.activated.connect(lambda _i: self.redraw())
        self.plot.scene().sigMouseMoved.connect(self._hovered)
        # a double-click reaches the viewport before pyqtgraph's items (the view box takes the press for itself)
        self.plot.viewport().installEventFilter(self)

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(QLabel("workload"))
        top.addWidget(self.workload)
        top.addWidget(QLabel("colour by"))
        top.addWidget(self.figure)
        top.addStretch(1)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        # the slice boxes (seven for gemm, more for mha) in one row that scrolls sideways when the window is
        # narrow, rather than setting the whole window's minimum width (1220 px for gemm: wider than 1280x800
        # less the docks)
        inner = QWidget()
        inner.setLayout(self.slices)
        self.slices.setContentsMargins(0, 0, 0, 0)
        self.slice_area = QScrollArea()
        self.slice_area.setWidget(inner)
        self.slice_area.setWidgetResizable(True)
        self.slice_area.setFrameShape(QScrollArea.Shape.NoFrame)
        self.slice_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.slice_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self._fit_slice_area()
        lv.addWidget(self.slice_area)
        lv.addWidget(self.plot, 1)
        lv.addWidget(self.hover)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        worst_title = QLabel("Worst configs (of the filtered rows; double-click: open)")
        worst_title.setWordWrap(True)       # else its one line is the side's minimum width, and the map's loss
        rv.addWidget(worst_title)
        rv.addWidget(self.worst, 1)
        for title in worst_rows([]):
            table = QTableWidget(0, len(WORST_COLUMNS))
            table.setHorizontalHeaderLabels(list(WORST_COLUMNS))
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
            table.verticalHeader().hide()
            table.horizontalHeader().setStretchLastSection(True)
            table.setWordWrap(False)
            table.cellDoubleClicked.connect(lambda r, _c, t=title: self._worst_opened(t, r))
            self.worst_tables[title] = table
            self.worst.addTab(table, title)
            self.worst.setTabToolTip(self.worst.count() - 1, f"the rows with the {title}, worst first "
                                     "(a gap by its size, either way)")
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(self.store_label)
        layout.addLayout(top)
        layout.addWidget(self.filter)       # its own row: beside the boxes a 1280x800 window left it 'filt...'
        layout.addWidget(self.filter_error)
        layout.addWidget(self.caption)
        layout.addWidget(split, 1)

    # -- the rows ---------------------------------------------------------------------------
    def open_store(self, path, where: str | None = None) -> None:
        """Read the rows of the store at ``path`` (``where``: a filter); a one-line error if it cannot be read."""
        from engine.store import open_store

        with open_store(path, readonly=True) as store:
            rows = store.rows(where)
            total = store.count()
        self.store_path = Path(path)
        self.total = total
        self.filter.setText(where or "")
        self.set_rows(rows, where)

    def apply_filter(self) -> None:
        """The filter box's expression, applied by the store; a bad one: its error, and the view as it was."""
        where = self.filter.text().strip() or None
        if self.store_path is None:
            self._filter_failed("open a store first (File > Open sweep store...)")
            return
        try:
            self.open_store(self.store_path, where)
        except RegtuneError as e:
            self._filter_failed(str(e))
            return
        self.filter_error.hide()

    def _filter_failed(self, message: str) -> None:
        self.filter_error.setText(message)
        self.filter_error.show()

    def set_rows(self, rows: list[dict], where: str | None = None) -> None:
        """Show ``rows`` (the store's, selected by ``where``): the workload with rows first, its default slice."""
        self.rows, self.where = list(rows), where
        kinds = [k for k in AXES if any(r.get("workload") == k for r in self.rows)]
        if kinds and self.workload.currentText() not in kinds:
            self.workload.setCurrentText(kinds[0])
        source = f"store {self.store_path}" if self.store_path else "rows handed in"
        of = f" of {self.total:,}" if self.total is not None and self.store_path else ""
        self.store_label.setText(f"{source}: {len(self.rows):,} rows{of}"
                                 + (f" selected by {where!r}" if where else " (no filter)"))
        self._rebuild()
        self._fill_worst()

    def _rebuild(self) -> None:
        """A grid over the chosen workload's rows, and a box per field its slice varies by."""
        self.grid = SweepGrid(self.rows, self.workload.currentText())
        while self.slices.count():
            w = self.slices.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.slice_boxes = {}
        default = self.grid.default()
        for field in self.grid.fields:
            box = QComboBox()
            for v in self.grid.choices(field):
                box.addItem("-" if v is None else ("none" if v == "" else _text(v)), v)
            box.setCurrentIndex(max(box.findData(default[field]), 0))
            box.setEnabled(box.count() > 1)
            box.activated.connect(lambda _i: self.redraw())
            self.slices.addWidget(QLabel(field))
            self.slices.addWidget(box)
            self.slice_boxes[field] = box
        self.slices.addStretch(1)
        self._fit_slice_area()
        self.redraw()

    def _fit_slice_area(self) -> None:
        """The slice row's height: one row of boxes and room for the sideways scroll bar."""
        row = max(self.slice_area.widget().sizeHint().height(), QComboBox().sizeHint().height())
        self.slice_area.setFixedHeight(row + self.slice_area.horizontalScrollBar().sizeHint().height())

    def fixed(self) -> dict:
        """The slice the boxes choose: field -> value."""
        return {f: box.currentData() for f, box in self.slice_boxes.items()}

    def figure_name(self) -> str:
        return self.figure.currentData()

    # -- drawing ----------------------------------------------------------------------------
    def redraw(self) -> None:
        """The heatmap of the chosen figure over the chosen slice (its time kept in :attr:`redraw_seconds`)."""
        t = time.perf_counter()
        g, name = self.grid, self.figure_name()
        self.cells = cells = g.grid(name, self.fixed())
        if not cells.xs or not cells.ys:       # no row of this workload (a filter that keeps none): no image
            self.image.clear()
            self.colorbar.hide()               # no scale and no ticks: nothing here has a value
            item = self.plot.getPlotItem()
            for side in ("bottom", "left"):
                item.getAxis(side).setTicks([[]])
                item.setLabel(side, "")
            item.setTitle(f"{FIGURES[name].label}: no {g.workload} rows")
            self.caption.setText(f"no {g.workload} rows"
                                 + (f" selected by {self.where!r}" if self.where else " in the store")
                                 + ": nothing to draw")
            self.redraw_seconds = time.perf_counter() - t
            return
        lo, hi = range_of(cells.values)
        self.colorbar.show()
        self.image.setImage(cells.values, levels=(lo, hi), autoLevels=False)
        self.image.setRect(QRectF(-0.5, -0.5, max(len(cells.xs), 1), max(len(cells.ys), 1)))
        self.colorbar.setLevels((lo, hi))
        item = self.plot.getPlotItem()
        item.getAxis("bottom").setTicks([[(j, _text(v)) for j, v in enumerate(cells.xs)]])
        item.getAxis("left").setTicks([[(i, _text(v)) for i, v in enumerate(cells.ys)]])
        item.setLabel("bottom", g.x)
        item.setLabel("left", g.y)
        item.setTitle(f"{FIGURES[name].label} over {g.x} x {g.y}")
        self.plot.getViewBox().setRange(xRange=(-0.5, len(cells.xs) - 0.5), yRange=(-0.5, len(cells.ys) - 0.5),
                                        padding=0)
        have = int(np.isfinite(cells.values).sum())
        self.caption.setText(f"{cells.shown:,} rows in this slice ({', '.join(f'{k} {_text(v)}' for k, v in self.fixed().items())}); "
                             f"{have:,} of {len(cells.xs) * len(cells.ys):,} cells have a {FIGURES[name].label} "
                             f"figure (the others are empty: no row, or not measured)"
                             + (f"; range {lo:g} to {hi:g}" if have else "")
                             + ("; SASS MAXLIVE is read from the plan-cap cubin only: choose cap 'plan'"
                                if name == "sass_maxlive" and self.fixed().get("cap") not in (None, "plan") else ""))
        self.redraw_seconds = time.perf_counter() - t

    def _fill_worst(self) -> None:
        for title, rows in worst_rows(self.rows).items():
            table = self.worst_tables[title]
            name = WORST[title]
            table.setRowCount(len(rows))
            self.worst_shown[title] = rows
            # an empty table says so on its tab, rather than looking like rows not loaded yet
            self.worst.setTabText(list(self.worst_tables).index(title), title if rows else f"{title}: none")
            for i, r in enumerate(rows):
                for j, col in enumerate(WORST_COLUMNS):
                    value = {"figure": figure(name, r), "arch, cap": _where(r)}.get(col, r.get(col))
                    item = QTableWidgetItem(_text(value))
                    item.setToolTip(f"{r.get('config')}: {r.get('allocator')}, budget {r.get('budget')}, {_where(r)}")
                    table.setItem(i, j, item)
            header = QTableWidgetItem(name)
            header.setToolTip(FIGURES[name].label)
            table.setHorizontalHeaderItem(WORST_COLUMNS.index("figure"), header)
            table.resizeColumnsToContents()

    # -- the mouse --------------------------------------------------------------------------
    def cell_centre(self, i: int, j: int) -> QPointF:
        """The scene position of cell (row ``i``, column ``j``)'s centre."""
        return self.plot.getViewBox().mapViewToScene(QPointF(j, i))

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """The (row, column) of the cell under a scene position, None outside the grid."""
        if self.cells is None:
            return None
        p = self.plot.getViewBox().mapSceneToView(scene_pos)
        j, i = int(np.floor(p.x() + 0.5)), int(np.floor(p.y() + 0.5))
        if 0 <= i < len(self.cells.ys) and 0 <= j < len(self.cells.xs):
            return i, j
        return None

    def _hovered(self, scene_pos) -> None:
        cell = self.cell_at(scene_pos)
        if cell is not None:
            text = cell_words(self.cells, *cell, self.figure_name())
            head, _, rest = text.partition("\n")
            self.hover.setText(head + "\n" + rest.replace("\n", ";  "))     # two lines: the plot keeps its size
            self.plot.setToolTip(text)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.plot.viewport() and event.type() == QEvent.Type.MouseButtonDblClick:
            cell = self.cell_at(self.plot.mapToScene(event.position().toPoint()))
            if cell is not None and self.cells.rows[cell[0]][cell[1]]:
                self.configRequested.emit(self.cells.rows[cell[0]][cell[1]][0])
                return True
        return super().eventFilter(watched, event)

    def _worst_opened(self, title: str, index: int) -> None:
        rows = self.worst_shown.get(title, [])
        if 0 <= index < len(rows):
            self.configRequested.emit(rows[index])

    def open_store_dialog(self) -> None:
        from engine.store import default_path

        path, _ = QFileDialog.getOpenFileName(self, "Open sweep store", str(default_path().parent),
                                              "Sweep stores (*.sqlite *.db);;All files (*)")
        if path:
            try:
                self.open_store(path)
            except RegtuneError as e:
                self._filter_failed(str(e))
