"""QtSassTable: the SASS listing as a table, one row per instruction, Nsight Compute Source-page columns.

Columns (gui.model.sass_rows): offset, the SASS text, live registers, the
encoded stall cycles and the plan instruction it came from. A single click
on a row emits ``rowClicked`` (the SASS view selects the row and its plan
instruction); a double click does the same, there is no text to select.
No cell is elided: columns take their contents' width and the table
scrolls sideways; every cell's tooltip holds its whole text.

Invariant: the table shows the rows of :meth:`QtSassTable.set_rows`; its
marks (the linked rows pale, the clicked one gold) are a role of the model,
so marking redraws cells and never rebuilds the rows.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from gui.model.sass_rows import COLUMN_TIPS, COLUMNS, SassRow

LINKED = QColor("#fff3b0")
CLICKED = QColor("#ffd700")


class QtSassRows(QAbstractTableModel):
    """The rows of a SASS listing (read-only), with the linked and clicked rows marked."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[SassRow] = []
        self.cells: list[tuple[str, ...]] = []
        self.tips: list[str] = []
        self.linked: frozenset = frozenset()
        self.clicked: int | None = None

    def set_rows(self, rows: list[SassRow], tips: list[str] | None = None) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.cells = [r.cells() for r in self.rows]
        self.tips = list(tips) if tips is not None else [""] * len(self.rows)
        self.linked, self.clicked = frozenset(), None
        self.endResetModel()

    def set_marks(self, linked, clicked: int | None) -> None:
        changed = set(self.linked) ^ set(linked) | {self.clicked, clicked}
        self.linked, self.clicked = frozenset(linked), clicked
        for row in sorted(r for r in changed if r is not None and 0 <= r < len(self.rows)):
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.cells[row][col]
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = self.tips[row] if col == 3 and self.tips[row] else self.cells[row][col]
            return tip or None
        if role == Qt.ItemDataRole.BackgroundRole:
            if row == self.clicked:
                return CLICKED
            if row in self.linked:
                return LINKED
        if role == Qt.ItemDataRole.ForegroundRole and (row == self.clicked or row in self.linked):
            return QColor("#000000")
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (2, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMN_TIPS[section]
        return None


class QtSassTable(QTableView):
    """The SASS listing (see the module docstring)."""

    rowClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows_model = QtSassRows(self)
        self.setModel(self.rows_model)
        self.setFont(QFont("DejaVu Sans Mono", 9))
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)    # the marks are the model's
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.setWordWrap(False)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalHeader().hide()
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 4)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setStretchLastSection(True)
        self.setShowGrid(False)
        # a press selects (as in a list), a double click too: nothing waits for a release or a second click
        self.pressed.connect(lambda index: self.rowClicked.emit(index.row()))
        self.doubleClicked.connect(lambda index: self.rowClicked.emit(index.row()))

    def set_rows(self, rows: list[SassRow], tips: list[str] | None = None) -> None:
        self.rows_model.set_rows(rows, tips)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Each column as wide as its widest cell (nothing elided): measured over every row's text."""
        metrics = self.fontMetrics()
        header = self.horizontalHeader().fontMetrics()
        for col, title in enumerate(COLUMNS):
            texts = [c[col] for c in self.rows_model.cells]
            widest = max((metrics.horizontalAdvance(t) for t in texts), default=0)
            self.setColumnWidth(col, max(widest, header.horizontalAdvance(title) + 8) + 14)

    def mark(self, linked, clicked: int | None) -> None:
        self.rows_model.set_marks(linked, clicked)

    def scroll_to_row(self, row: int) -> None:
        if 0 <= row < self.rows_model.rowCount():
            self.scrollTo(self.rows_model.index(row, 1), QAbstractItemView.ScrollHint.PositionAtCenter)

    def row_text(self, row: int) -> str:
        return self.rows_model.cells[row][1] if 0 <= row < len(self.rows_model.cells) else ""
