"""QtAllocationTable: every value with its type, width, role, interval, registers, spill slot and conflicts.

Invariant: a Qt model over the current plan (sortable, filterable through a
proxy) that changes nothing itself: the register cell offers the registers
free for that value (gui.model.registers.free_registers) and an edit there
is only a request (``assignRequested``), which the window pushes as one
undoable assignment edit.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelectionModel,
    QModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.plan import Plan
from engine.workloads.roles import role_of
from gui.model.registers import (
    free_registers,
    natural_key,
    parse_registers,
    register_text,
)

#: the columns, the two a hand edit needs first (on screen in the narrow dock); FIELDS: each one's place in a row
COLUMNS = ("value", "registers", "type", "width", "role", "interval", "spill slot", "conflicts")
FIELDS = ("value", "type", "width", "role", "interval", "registers", "spill slot", "conflicts")
REGISTER_COLUMN = COLUMNS.index("registers")


class QtAllocationModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.plan: Plan | None = None
        self.analysis = None
        self.rows: list[tuple] = []
        self.conflicted: dict[str, int] = {}

    def set_plan(self, plan: Plan | None, analysis, conflicts) -> bool:
        """Show ``plan``; True when the rows were rebuilt (a new program), False when only cells changed."""
        same = (plan is not None and self.plan is not None and self.analysis is not None
                and tuple(analysis.names) == tuple(self.analysis.names))     # same values: cells change only
        if not same:
            self.beginResetModel()
        old = self.rows
        self.plan, self.analysis = plan, analysis
        self.conflicted = {}
        for c in conflicts:
            for n in c.values:
                self.conflicted[n] = self.conflicted.get(n, 0) + 1
        self.rows = self._rows(plan, analysis, old if same else None)
        if same:
            self._changed([i for i, (a, b) in enumerate(zip(old, self.rows)) if a != b])
        else:
            self.endResetModel()
        return not same

    def _rows(self, plan: Plan | None, analysis, old: list[tuple] | None) -> list[tuple]:
        """One row per value; name, type, width and role are reused from ``old`` (the same values)."""
        if plan is None:
            return []
        rows = []
        for v, name in enumerate(analysis.names):
            if old is None:
                value = plan.program.values[name]
                fixed = (name, value.type, int(value.width), role_of(value))
            else:
                fixed = old[v][:4]
            rows.append((*fixed, (int(analysis.start[v]) // 2, int(analysis.end[v]) // 2),
                         tuple(plan.assignment.get(name, ())), plan.spills.get(name), self.conflicted.get(name, 0)))
        return rows

    def _changed(self, rows: list[int]) -> None:
        """dataChanged for each run of consecutive changed rows (a proxy re-sorts only what changed)."""
        start = None
        for k, row in enumerate(rows):
            if start is None:
                start = row
            if k + 1 == len(rows) or rows[k + 1] != row + 1:
                self.dataChanged.emit(self.index(start, 0), self.index(row, len(COLUMNS) - 1))
                start = None

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()):
        return len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        row = self.rows[index.row()]
        column = COLUMNS[index.column()]
        cell = row[FIELDS.index(column)]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(column, cell)
        if role == Qt.ItemDataRole.EditRole:
            return register_text(cell) if column == "registers" else self._text(column, cell)
        if role == Qt.ItemDataRole.UserRole:   # sort keys
            return self._sort_key(column, cell)
        if role == Qt.ItemDataRole.BackgroundRole and row[-1]:
            return QColor(255, 90, 90, 70)
        if role == Qt.ItemDataRole.ToolTipRole:
            return ("double-click to choose a register free over this value's interval" if column == "registers"
                    else self._text(column, cell))
        return None

    @staticmethod
    def _text(column: str, cell):
        """A cell as it reads: a value as the IR spells it (``%acc_0_0``), registers as ``R4:R5``."""
        if column == "value":
            return f"%{cell}"
        if column == "interval":
            return f"{cell[0]}-{cell[1]}"
        if column == "registers":
            return register_text(cell)
        if column == "spill slot":
            return "" if cell is None else str(cell)
        if column == "conflicts":
            return str(cell) if cell else ""
        return cell if column == "width" else str(cell)

    @staticmethod
    def _sort_key(column: str, cell):
        if column == "value":
            return natural_key(cell)
        if column == "interval":
            return cell[0]
        if column == "registers":
            return cell[0] if cell else -1
        if column == "spill slot":
            return -1 if cell is None else cell
        return cell

    def flags(self, index):
        flags = super().flags(index)
        if index.column() == REGISTER_COLUMN and self.rows[index.row()][2] > 0:
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def name_at(self, row: int) -> str:
        return self.rows[row][0]

    def row_of(self, name: str) -> int | None:
        for i, r in enumerate(self.rows):
            if r[0] == name:
                return i
        return None


class _RegisterDelegate(QStyledItemDelegate):
    def __init__(self, table):
        super().__init__(table)
        self.table = table

    def createEditor(self, parent, option, index):
        combo = QComboBox(parent)
        combo.setEditable(True)
        model = self.table.model_
        name = model.name_at(self.table.proxy.mapToSource(index).row())
        choices = free_registers(model.plan, model.analysis, name)
        combo.addItems([register_text(r) for r in choices])
        return combo

    def setEditorData(self, editor, index):
        editor.setCurrentText(index.data(Qt.ItemDataRole.EditRole))

    def setModelData(self, editor, model, index):
        name = self.table.model_.name_at(self.table.proxy.mapToSource(index).row())
        try:
            regs = parse_registers(editor.currentText())
        except ValueError:
            self.table.rejected.emit(f"%{name}: {editor.currentText()!r} is not a register (write R12 or R12:R13)")
            return
        self.table.assignRequested.emit(name, regs)


class QtAllocationTable(QWidget):
    valueSelected = Signal(str)
    assignRequested = Signal(str, object)
    rejected = Signal(str)
    contextRequested = Signal(str, object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_ = QtAllocationModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model_)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter values (name, type, role, register...)")
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)     # by value, natural order (Qt's default: descending)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setItemDelegateForColumn(REGISTER_COLUMN, _RegisterDelegate(self))
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.view.horizontalHeader().setResizeContentsPrecision(64)   # size columns from 64 rows, not all
        self.view.verticalHeader().setVisible(False)
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter)
        layout.addWidget(self.view)
        self._quiet = False

    def set_plan(self, plan, analysis, conflicts, selection=None) -> None:
        self._quiet = True
        if self.model_.set_plan(plan, analysis, conflicts):
            self.view.resizeColumnsToContents()
            self._fit_value_column()
        self._quiet = False
        self.set_selection(selection)

    def _fit_value_column(self) -> None:
        """The value column as wide as its longest name (Qt sizes columns from a sample of 64 rows)."""
        fm = self.view.fontMetrics()
        wide = max((fm.horizontalAdvance(f"%{r[0]}") for r in self.model_.rows), default=0)
        self.view.setColumnWidth(0, max(self.view.columnWidth(0), wide + 16))

    def _row_changed(self, current, _previous) -> None:
        if self._quiet or not current.isValid():
            return
        self.valueSelected.emit(self.model_.name_at(self.proxy.mapToSource(current).row()))

    def _context(self, pos) -> None:
        index = self.view.indexAt(pos)
        if index.isValid():
            name = self.model_.name_at(self.proxy.mapToSource(index).row())
            self.valueSelected.emit(name)
            self.contextRequested.emit(name, self.view.viewport().mapToGlobal(pos))

    def set_selection(self, names) -> None:
        """Select the row of value ``names`` (or the rows of a tuple of names, the first current; None: none)."""
        names = (names,) if isinstance(names, str) else tuple(names or ())
        rows = [r for r in map(self.model_.row_of, names) if r is not None]
        self._quiet = True
        self.view.clearSelection()
        for k, row in enumerate(rows):
            index = self.proxy.mapFromSource(self.model_.index(row, 0))
            if not index.isValid():
                continue
            if k == 0:
                self.view.setCurrentIndex(index)
                self.view.scrollTo(index)
            else:
                self.view.selectionModel().select(index, QItemSelectionModel.SelectionFlag.Select
                                                  | QItemSelectionModel.SelectionFlag.Rows)
        self._quiet = False

    def selected_names(self) -> list[str]:
        """The values of the selected rows, in table order."""
        rows = self.view.selectionModel().selectedRows()
        return [self.model_.name_at(self.proxy.mapToSource(i).row()) for i in sorted(rows, key=lambda i: i.row())]

    def selected_name(self) -> str | None:
        index = self.view.currentIndex()
        return self.model_.name_at(self.proxy.mapToSource(index).row()) if index.isValid() else None
