"""QtComparePanel, QtSassView, QtBudgetSweep: planned against actual, the compiled kernel, the spill cliff.

Planned figures come from the plan at once; measured ones after Build &
measure (a worker process per build). A figure that could not be had shows
why ("no CUDA device", "not built"). The best value of each row is marked.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from gui.qt_timeline import QtTimeline

ARCHS = ("sm_80", "sm_90")


def compare_rows(archs=ARCHS) -> list[tuple[str, str, object]]:
    """(label, better: 'min' | 'max' | '', getter(planned, report) -> value or str)."""
    rows = [("planned registers", "min", lambda p, r: p["registers"]),
            ("planned MAXLIVE", "min", lambda p, r: p["maxlive"]),
            ("planned spills (values)", "min", lambda p, r: p["spills"]),
            ("bank conflicts (plan model)", "min", lambda p, r: p["bank_conflicts"]),
            ("occupancy, planned (warps/SM)", "max", lambda p, r: p["occupancy"]["active_warps"]),
            ("next occupancy step", "", lambda p, r: p["next_step"])]
    for a in archs:
        rows += [(f"{a} ptxas registers", "min", lambda p, r, a=a: r["ptxas"][a]["registers"] if r else "not built"),
                 (f"{a} allocated registers (8/thread)", "min",
                  lambda p, r, a=a: r["ptxas"][a]["allocated_registers"] if r else "not built"),
                 (f"{a} spill bytes (st/ld)", "min",
                  lambda p, r, a=a: (r["ptxas"][a]["spill_store_bytes"] + r["ptxas"][a]["spill_load_bytes"])
                  if r else "not built"),
                 (f"{a} occupancy (warps/SM)", "max",
                  lambda p, r, a=a: r["ptxas"][a]["occupancy"]["active_warps"] if r else "not built"),
                 (f"{a} SASS MAXLIVE", "min", lambda p, r, a=a: r["sass"][a]["maxlive"] if r else "not built")]
    rows += [("simulator check", "", lambda p, r: _result(r["simulator"]) if r else "not built"),
             ("GPU time (ms)", "min", lambda p, r: _gpu(r["gpu"]) if r else "not built"),
             ("GPU registers / local bytes (driver)", "",
              lambda p, r: (r["gpu"]["error"] if "error" in r["gpu"] else
                            f"{r['gpu']['registers']} / {r['gpu']['local_bytes']}") if r else "not built")]
    return rows


def _result(sim: dict) -> str:
    if "error" in sim:
        return sim["error"]
    return f"{'ok' if sim.get('ok') else 'MISMATCH'} (max err {sim['max_error']:.1e})"


def _gpu(gpu: dict):
    if "error" in gpu:
        return gpu["error"]
    return round(float(gpu["median_ms"]), 4)


class QtComparePanel(QWidget):
    """Plans side by side: planned against actual; the best value in each row is marked with a star."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = QTableWidget()
        self.caption = QLabel("Build & measure (Ctrl+B) fills the measured rows.")
        self.caption.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)
        self.cells: dict = {}

    def show_plans(self, planned: dict, reports: dict) -> None:
        """``planned``: name -> kernels.report.planned(); ``reports``: name -> build report (or missing)."""
        rows = compare_rows()
        names = list(planned)
        self.table.clear()
        self.table.setRowCount(len(rows))
        self.table.setColumnCount(len(names))
        self.table.setHorizontalHeaderLabels(names)
        self.table.setVerticalHeaderLabels([label for label, _, _ in rows])
        self.cells = {}
        bold = QFont()
        bold.setBold(True)
        for i, (label, better, get) in enumerate(rows):
            values = []
            for name in names:
                try:
                    values.append(get(planned[name], reports.get(name)))
                except (KeyError, TypeError):
                    values.append("not measured")
            numeric = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            best = (min(numeric) if better == "min" else max(numeric)) if numeric and better else None
            for j, v in enumerate(values):
                marked = best is not None and v == best and len(numeric) > 1
                item = QTableWidgetItem(f"{v} \u2605" if marked else str(v))
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                if marked:
                    item.setFont(bold)
                    item.setBackground(QColor(89, 161, 79, 60))
                self.table.setItem(i, j, item)
                self.cells[(label, names[j])] = item.text()
        self.table.resizeColumnsToContents()

    def cell(self, row_label: str, plan: str) -> str:
        return self.cells.get((row_label, plan), "")


class QtSassView(QWidget):
    """The compiled kernel: nvdisasm's live ranges as a timeline and pressure curve, the SASS text beside."""

    instructionSelected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.arch = QComboBox()
        self.arch.addItems(list(ARCHS))
        self.arch.currentTextChanged.connect(lambda _: self.refresh())
        self.caption = QLabel("Build & measure (Ctrl+B) to see what ptxas made of the current plan.")
        self.caption.setWordWrap(True)
        self.timeline = QtTimeline(editable=False)
        self.timeline.instructionSelected.connect(self.highlight)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFont("DejaVu Sans Mono", 9))
        top = QHBoxLayout()
        top.addWidget(QLabel("arch"))
        top.addWidget(self.arch)
        top.addWidget(self.caption, 1)
        split = QSplitter()
        split.addWidget(self.timeline)
        split.addWidget(self.text)
        split.setSizes([700, 400])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self.sass = {}
        self.report = None
        self.budget = None

    def show_build(self, sass: dict, report: dict | None, budget: int | None) -> None:
        """``sass``: arch -> kernels.sass.SassLiveness."""
        self.sass, self.report, self.budget = sass, report, budget
        self.refresh()

    def refresh(self) -> None:
        s = self.sass.get(self.arch.currentText())
        if s is None:
            self.text.setPlainText("")
            return
        self.timeline.show_sass(s, self.budget)
        self.text.setPlainText("\n".join(f"/*{o}*/ {t}" for o, t in zip(s.offsets, s.texts)))
        r = self.report
        if r:
            a = self.arch.currentText()
            self.caption.setText(f"{a}: ptxas {r['ptxas'][a]['registers']} registers, SASS MAXLIVE {s.maxlive} "
                                 f"(plan: {r['planned']['registers']} registers, MAXLIVE {r['planned']['maxlive']}); "
                                 + " ".join(r["sass"][a]["explanation"][:2]))

    def highlight(self, row: int) -> None:
        block = self.text.document().findBlockByNumber(row)
        if not block.isValid():
            return
        cursor = QTextCursor(block)
        cursor.select(QTextCursor.SelectionType.LineUnderCursor)
        fmt = QTextCharFormat()
        fmt.setBackground(QColor("#ffd700"))
        selection = QPlainTextEdit.ExtraSelection()
        selection.cursor, selection.format = cursor, fmt
        self.text.setExtraSelections([selection])
        self.text.setTextCursor(QTextCursor(block))
        self.text.centerCursor()
        self.timeline.set_instruction(row)


class QtBudgetSweep(QWidget):
    """ptxas registers, spill bytes and occupancy against -maxrregcount for the selected plan."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel("Run the budget sweep from the Kernel menu.")
        self.widget = pg.GraphicsLayoutWidget()
        self.regs = self.widget.addPlot(row=0, col=0)
        self.regs.setLabel("left", "registers / warps")
        self.regs.addLegend()
        self.spills = self.widget.addPlot(row=1, col=0)
        self.spills.setLabel("left", "spill bytes")
        self.spills.setLabel("bottom", "-maxrregcount")
        self.spills.setXLink(self.regs)
        self.reg_curve = self.regs.plot([], [], pen=pg.mkPen("#4e79a7", width=2), symbol="o", name="ptxas registers")
        self.warp_curve = self.regs.plot([], [], pen=pg.mkPen("#59a14f", width=2), symbol="t",
                                         name="active warps / SM")
        self.spill_curve = self.spills.plot([], [], pen=pg.mkPen("#e15759", width=2), symbol="s")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.widget, 1)
        self.rows = []

    def show_sweep(self, result: dict, plan_name: str) -> None:
        self.rows = result.get("sweep", [])
        caps = [r["maxrregcount"] for r in self.rows]
        self.reg_curve.setData(caps, [r["registers"] for r in self.rows])
        self.warp_curve.setData(caps, [r["active_warps"] for r in self.rows])
        self.spill_curve.setData(caps, [r["spill_store_bytes"] + r["spill_load_bytes"] for r in self.rows])
        cliff = next((r["maxrregcount"] for r in reversed(self.rows)
                      if r["spill_store_bytes"] or r["spill_load_bytes"]), None)
        self.caption.setText(f"{plan_name} on {result.get('arch')}: "
                             + (f"ptxas spills at -maxrregcount {cliff} and below" if cliff
                                else "no spills at any cap swept"))
