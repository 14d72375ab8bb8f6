"""Side panels: why-this-many, the instruction list (schedule edits), conflicts, the plans list.

Invariant: a panel only shows what the document computed (gui.model) and
asks for changes through signals; it never changes the document, and the
window turns each request into one undoable command.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QIcon,
    QKeySequence,
    QPainter,
    QPixmap,
    QShortcut,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.plan import registers_used
from gui.model.registers import natural_key, register_text
from gui.model.why import WhyReport
from gui.model.words import conflict_summary

BROKEN_COLOUR = "#d62728"


def broken_badge(size: int = 16) -> QIcon:
    """The badge of a plan with conflicts: a red disc with a white "!" (seen in any theme, beside any text)."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(BROKEN_COLOUR))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(0, 0, size, size)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(int(size * 0.8))
    painter.setFont(font)
    painter.setPen(QColor("white"))
    painter.drawText(QRectF(0, 0, size, size), Qt.AlignmentFlag.AlignCenter, "!")
    painter.end()
    return QIcon(pixmap)


WHY_COLUMNS = ("value", "register", "type", "role", "defined at", "used at")


class _NaturalItem(QTreeWidgetItem):
    """A row that sorts as a reader counts: ``%s_3_2`` before ``%s_3_14``, R9 before R10, 9 before 10."""

    def __lt__(self, other) -> bool:
        column = self.treeWidget().sortColumn() if self.treeWidget() else 0
        return natural_key(self.text(column)) < natural_key(other.text(column))


class QtWhyPanel(QWidget):
    """At the peak (or the instruction the user picked): the values live there, where each is defined and used."""

    valueSelected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(list(WHY_COLUMNS))      # the register beside the value: on screen in the dock
        self.tree.setRootIsDecorated(False)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(0, Qt.SortOrder.AscendingOrder)     # Qt's own default is descending
        self.tree.itemClicked.connect(lambda item, _col: self.valueSelected.emit(item.text(0).lstrip("%")))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.tree)
        self.report: WhyReport | None = None

    def show_report(self, report: WhyReport | None) -> None:
        """Show the document's why-this-many report (gui.model.why); None clears the panel."""
        if report is not None and report == self.report:
            return                  # an edit elsewhere in the plan: the same rows
        self.report = report
        self.tree.clear()
        if report is None:
            self.caption.setText("")
            return
        self.caption.setText(report.caption)
        items = [_NaturalItem([f"%{r.name}", register_text(r.registers), r.type, r.role,
                               ", ".join(map(str, r.defined)), ", ".join(map(str, r.used)) or "-"])
                 for r in report.rows]
        for item in items:
            for c in range(len(WHY_COLUMNS)):
                item.setToolTip(c, item.text(c))
        self.tree.addTopLevelItems(items)
        for c in range(len(WHY_COLUMNS)):
            self.tree.resizeColumnToContents(c)


class QtInstructionList(QWidget):
    """The program in order; drag an instruction (or Alt+Up / Alt+Down) to move it within its dependences."""

    moveRequested = Signal(int, int)
    instructionSelected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.model().rowsMoved.connect(self._moved)
        self.list.currentRowChanged.connect(self._current)
        up, down = QPushButton("Move earlier (Alt+Up)"), QPushButton("Move later (Alt+Down)")
        up.clicked.connect(lambda: self.move_selected(-1))
        down.clicked.connect(lambda: self.move_selected(1))
        QShortcut(QKeySequence("Alt+Up"), self.list, activated=lambda: self.move_selected(-1))
        QShortcut(QKeySequence("Alt+Down"), self.list, activated=lambda: self.move_selected(1))
        buttons = QHBoxLayout()
        buttons.addWidget(up)
        buttons.addWidget(down)
        note = QLabel("Schedule edits change the kernel that gets built.")
        note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(note)
        layout.addWidget(self.list)
        layout.addLayout(buttons)
        self._quiet = False
        self.program = None

    def show_program(self, program, index: int | None = None) -> None:
        if program is self.program:        # an assignment edit: same instructions, only the selection may move
            if index is not None and 0 <= index < self.list.count() and index != self.list.currentRow():
                self._quiet = True
                self.list.setCurrentRow(index)
                self._quiet = False
            return
        old = self.program
        if old is not None and len(old.instructions) == len(program.instructions) \
                and old.block_starts == program.block_starts:
            self._retext(old, program, index)       # a schedule edit: rewrite only the rows that changed
            return
        self._quiet = True
        current = self.list.currentRow()
        self.list.clear()
        self.program = program
        for i, ins in enumerate(program.instructions):
            item = QListWidgetItem(self._row_text(program, i))
            if ins.phase:
                item.setToolTip(f"phase {ins.phase}, block {program.blocks[program.block_of(i)].name}")
            if ins.opcode in ("st.local", "ld.local"):
                item.setForeground(QColor("#b07aa1"))
            self.list.addItem(item)
        target = index if index is not None and index >= 0 else current
        if 0 <= target < self.list.count():
            self.list.setCurrentRow(target)
        self._quiet = False

    @staticmethod
    def _row_text(program, i: int) -> str:
        """The instruction's row; the first of a block carries the block's label."""
        first = program.block_starts[program.block_of(i)] == i
        prefix = f"{program.blocks[program.block_of(i)].name}:\n" if first else ""
        return f"{prefix}{i:5d}  {program.instructions[i]}"

    def _retext(self, old, program, index) -> None:
        self._quiet = True
        for i, (a, b) in enumerate(zip(old.instructions, program.instructions)):
            if a is not b:
                self.list.item(i).setText(self._row_text(program, i))
        self.program = program
        if index is not None and 0 <= index < self.list.count():
            self.list.setCurrentRow(index)
        self._quiet = False

    def _current(self, row: int) -> None:
        if not self._quiet and row >= 0:
            self.instructionSelected.emit(row)

    def _moved(self, _parent, start, _end, _dest, row) -> None:
        if self._quiet:
            return
        to = row if row < start else row - 1
        self.moveRequested.emit(start, to)

    def move_selected(self, step: int) -> None:
        row = self.list.currentRow()
        if row >= 0:
            self.moveRequested.emit(row, row + step)

    def request_move(self, index: int, to: int) -> None:
        """What a drag of row ``index`` to row ``to`` asks for (the window validates it)."""
        self.moveRequested.emit(index, to)


class QtConflicts(QWidget):
    """Every conflict of the current plan at once, and the reason of the last rejected edit; a click on a
    conflict asks for its values and its instruction to be selected (``conflictSelected``)."""

    conflictSelected = Signal(tuple, int)     # the conflict's values, its instruction (-1: none)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.list = QListWidget()
        self.list.setWordWrap(True)             # a conflict's sentence wraps in the dock, never cut
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.list.itemClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.status)
        layout.addWidget(self.list)
        self.conflicts = []

    def show_conflicts(self, conflicts, rejection: str | None = None) -> None:
        self.conflicts = list(conflicts)
        self.list.clear()
        for c in self.conflicts:
            item = QListWidgetItem(c.message)
            item.setToolTip(c.message)
            item.setForeground(QColor(BROKEN_COLOUR))
            self.list.addItem(item)
        text = conflict_summary(self.conflicts) if self.conflicts else "valid: no conflicts"
        if rejection:
            text += f"\nlast edit not applied: {rejection}"
        self.status.setText(text)
        self.status.setStyleSheet("color: #d62728; font-weight: bold" if self.conflicts or rejection else "")

    def messages(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def _clicked(self, item) -> None:
        c = self.conflicts[self.list.row(item)]
        self.conflictSelected.emit(tuple(c.values), c.instruction)


class QtPlansList(QWidget):
    """The plans with their headline figures: select, duplicate (a hand copy), rename, delete, drag to reorder."""

    planSelected = Signal(str)
    reorderRequested = Signal(list)
    duplicateRequested = Signal(str)
    renameRequested = Signal(str, str)
    deleteRequested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setWordWrap(True)             # a narrow dock wraps a line rather than cutting it
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.currentItemChanged.connect(self._current)
        self.list.itemChanged.connect(self._renamed)
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.model().rowsMoved.connect(self._moved)
        dup, ren, dele = QPushButton("Duplicate"), QPushButton("Rename"), QPushButton("Delete")
        dup.clicked.connect(lambda: self._with_current(self.duplicateRequested.emit))
        ren.clicked.connect(lambda: self.list.editItem(self.list.currentItem()) if self.list.currentItem() else None)
        dele.clicked.connect(lambda: self._with_current(self.deleteRequested.emit))
        row = QHBoxLayout()
        for b in (dup, ren, dele):
            row.addWidget(b)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        layout.addLayout(row)
        self._quiet = False
        self.names: list[str] = []
        self.badge = broken_badge()

    def show_plans(self, plans: dict, current: str | None, conflicts_of) -> None:
        self._quiet = True
        self.list.clear()
        self.names = list(plans)
        for name, plan in plans.items():
            broken = conflicts_of(plan)
            item = QListWidgetItem(self.plan_text(name, plan, broken))
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            item.setToolTip(item.text() + "".join(f"\n{c.message}" for c in broken[:5])
                            + (f"\n... ({len(broken)} in all: the Conflicts tab lists them)" if len(broken) > 5 else ""))
            if broken:
                item.setForeground(QColor(BROKEN_COLOUR))
                item.setIcon(self.badge)
            self.list.addItem(item)
            if name == current:
                self.list.setCurrentItem(item)
        self._quiet = False

    @staticmethod
    def plan_text(name: str, plan, broken) -> str:
        """A plan's row: its name, its headline figures and, when it has conflicts, how many (a line each)."""
        p = plan.predicted
        return (f"{name}\n  {p.registers if p else registers_used(plan.assignment)} regs, MAXLIVE "
                f"{p.maxlive if p else '?'}, {p.spilled_values if p else len(plan.spills)} spilled"
                + (f", {p.rematerialised_values} remat" if p and p.rematerialised_values else "")
                + (f"\n  {conflict_summary(broken)}" if broken else ""))

    def _with_current(self, fn) -> None:
        item = self.list.currentItem()
        if item is not None:
            fn(item.data(Qt.ItemDataRole.UserRole))

    def _current(self, item, _prev) -> None:
        if not self._quiet and item is not None:
            self.planSelected.emit(item.data(Qt.ItemDataRole.UserRole))

    def _moved(self, *_args) -> None:
        if not self._quiet:
            self.reorderRequested.emit([self.list.item(i).data(Qt.ItemDataRole.UserRole)
                                        for i in range(self.list.count())])

    def _renamed(self, item) -> None:
        if self._quiet:
            return
        old = item.data(Qt.ItemDataRole.UserRole)
        new = item.text().split("\n")[0].strip()
        if new and new != old:
            self.renameRequested.emit(old, new)
