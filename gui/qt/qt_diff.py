"""QtDiffView: two listings side by side, the lines and registers that differ marked, as Compiler Explorer's diff.

A listing is a plan (each instruction with the registers of what it writes) or the SASS of a built plan on one
architecture, so the view compares two plans, two plans' kernels, or one kernel on sm_80 against sm_90. The
rows come from gui.model.diff: a row whose lines differ in registers only is tinted amber and its differing
registers named in its tooltip, one with the same opcode and other operands blue; a line on one side only is red
(left) or green (right), the other side empty.
The two combo boxes choose the sides; the window hands the listings in with :meth:`QtDiffView.set_sources`.

Invariant: the table shows :attr:`QtDiffView.rows`, the diff of the two chosen listings; it is recomputed only
when a side's choice or its listing changes.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gui.model.diff import DiffRow, diff_rows, differing_registers, summary

#: row tints by kind (the text stays black on them)
TINTS = {"registers": QColor("#ffe0a3"), "operands": QColor("#d9e4ff"), "left": QColor("#ffc9c9"),
         "right": QColor("#c8ecc8")}
WORDS = {"same": "the same", "registers": "registers differ", "operands": "the same opcode, other operands",
         "left": "only on the left", "right": "only on the right"}


class QtDiffRows(QAbstractTableModel):
    """The aligned rows: left line, right line."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[DiffRow] = []
        self.titles = ("left", "right")

    def set_rows(self, rows: list[DiffRow], titles: tuple[str, str]) -> None:
        self.beginResetModel()
        self.rows, self.titles = list(rows), titles
        self.endResetModel()

    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else 2

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        text = row.left if index.column() == 0 else row.right
        if role == Qt.ItemDataRole.DisplayRole:
            return text or ""
        if role == Qt.ItemDataRole.BackgroundRole and row.kind in TINTS:
            return TINTS[row.kind]
        if role == Qt.ItemDataRole.ForegroundRole and row.kind in TINTS:
            return QColor("#000000")
        if role == Qt.ItemDataRole.ToolTipRole:
            if row.kind == "registers":
                a, b = differing_registers(row.left, row.right)
                return f"{row.left}\n{row.right}\nregisters differ: {', '.join(a)} (left) against {', '.join(b)} (right)"
            return f"{text or '(nothing on this side)'}\n{WORDS[row.kind]}"
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.titles[section]
        return None


class QtDiffView(QWidget):
    """Two listings side by side (see the module docstring)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.left_box, self.right_box = QComboBox(), QComboBox()
        for box in (self.left_box, self.right_box):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(18)
            box.currentIndexChanged.connect(lambda _: self.refresh())
        self.caption = QLabel("Build & measure (Ctrl+B) adds each plan's SASS to the listings compared here; "
                              "plans can be compared at once.")
        self.caption.setWordWrap(True)
        self.model = QtDiffRows(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setFont(QFont("DejaVu Sans Mono", 9))
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 4)
        top = QHBoxLayout()
        top.addWidget(QLabel("left"))
        top.addWidget(self.left_box, 1)
        top.addWidget(QLabel("right"))
        top.addWidget(self.right_box, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)
        self.sources: dict[str, list[str]] = {}
        self.rows: list[DiffRow] = []
        self._shown = None

    def set_sources(self, sources: dict[str, list[str]], left: str | None = None, right: str | None = None) -> None:
        """The listings there are (label -> lines); each side keeps its choice while that label exists, else
        takes ``left``/``right`` (or the first two)."""
        self.sources = dict(sources)
        labels = list(self.sources)
        for box, default, k in ((self.left_box, left, 0), (self.right_box, right, 1)):
            keep = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems(labels)
            choice = keep if keep in self.sources else default if default in self.sources else \
                (labels[min(k, len(labels) - 1)] if labels else "")
            box.setCurrentIndex(max(box.findText(choice), 0))
            box.blockSignals(False)
        self._shown = None
        self.refresh()

    def refresh(self) -> None:
        left, right = self.left_box.currentText(), self.right_box.currentText()
        key = (left, right, id(self.sources.get(left)), id(self.sources.get(right)))
        if key == self._shown:
            return
        self._shown = key
        if left not in self.sources or right not in self.sources:
            self.rows = []
            self.model.set_rows([], ("left", "right"))
            return
        self.rows = diff_rows(self.sources[left], self.sources[right])
        self.model.set_rows(self.rows, (left, right))
        self.caption.setText(f"{left} against {right}: {summary(self.rows)}. Amber: the same instruction in "
                             "other registers (hover for which); blue: the same opcode, other operands; red: only "
                             "on the left; green: only on the right.")
