"""QtComparePanel, QtSassView, QtBudgetSweep: planned against actual, the compiled kernel, the spill cliff.

Planned figures come from the plan at once; measured ones after Build &
measure (a worker process per build). The views read the typed results of
kernels.measurement; a figure that could not be had shows why ("no CUDA
device"), a plan without a measurement shows "not built". The best value
of each row is marked.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.model.arch import DEFAULT_BUILD_ARCHS
from gui.model.sass_rows import sass_rows
from gui.model.timeline import StallStrip, sass_roles, stall_strip
from gui.qt.qt_sass import QtSassTable
from gui.qt.qt_timeline import QtTimeline
from kernels.control import ControlError
from kernels.report import Column, compare_rows

MODEL_NOTE = ("The (model) rows come from engine/model/ilp.py's dependence-graph model on the plan's arch latencies: "
              "a model, not a measurement. The model time rows come from engine/model/timemodel.py (issue cycles, "
              "occupancy, waves, bytes moved): a model, never a measured time. A reused register (a false "
              "dependence) costs no wait after a fixed-latency reader (ALU, FMA: operands read at issue), the read "
              "scoreboard after a memory or MUFU reader, the write scoreboard after a memory writer; what it "
              "really costs is the load it keeps from being hoisted: the model's cycles let a list scheduler order "
              "each block within the plan's registers, as ptxas orders its input (hover a model row for the figures "
              "and sources).")
NOT_BUILT = "Build & measure (Ctrl+B) fills the measured rows; \u2605 marks the best value in each row."


def built_caption(names: list, measurements: dict) -> str:
    """What the compare table's measured rows hold: nothing built yet, some plans or all of them.

    Examples
    --------
    >>> built_caption(["naive", "dsatur"], {"dsatur": object()})
    'Measured: dsatur (1 of 2 plans; Build & measure (Ctrl+B) measures the rest); \u2605 marks the best value in each row.'
    >>> built_caption(["naive"], {"naive": object()})
    'Measured: all 1 plan (built by Build & measure); \u2605 marks the best value in each row.'
    """
    built = [n for n in names if n in measurements]
    best = "; \u2605 marks the best value in each row."
    if not built:
        return NOT_BUILT
    if len(built) == len(names):
        return f"Measured: all {len(names)} plan{'s' * (len(names) != 1)} (built by Build & measure){best}"
    return (f"Measured: {', '.join(built)} ({len(built)} of {len(names)} plans; Build & measure (Ctrl+B) measures "
            f"the rest){best}")


class QtComparePanel(QWidget):
    """Plans side by side: planned against actual; the best value in each row is marked with a star. Above the
    table, the current plan's next occupancy step with a *Tune* button beside it (``tuneRequested``: reorder the
    schedule within its dependences toward that step, :mod:`engine.tune`)."""

    tuneRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.next_step = QLabel("")
        self.next_step.setWordWrap(True)
        self.tune_button = QPushButton("Tune")
        self.tune_button.setToolTip("Reorder the current plan's instructions within their dependences to lower "
                                    "MAXLIVE toward the next occupancy step; each move is an undo step")
        self.tune_button.setEnabled(False)
        self.tune_button.clicked.connect(self.tuneRequested.emit)
        step_row = QHBoxLayout()
        step_row.addWidget(self.next_step, 1)
        step_row.addWidget(self.tune_button)
        self.table = QTableWidget()
        self.caption = QLabel(NOT_BUILT)
        self.caption.setWordWrap(True)
        self.model_note = QLabel(MODEL_NOTE)
        self.model_note.setWordWrap(True)
        self.table.setWordWrap(True)       # long cells wrap: every plan's column fits the tab's width
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        # rows follow the columns' width: fitted once, a narrower window elided "free 87 registers (to ..."
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addLayout(step_row)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.model_note)
        self.cells: dict = {}

    def show_plans(self, planned: dict, measurements: dict, models: dict | None = None) -> None:
        """``planned``: name -> kernels.measurement.Planned; ``measurements``: name -> Measurement (missing: not
        built yet); ``models``: name -> engine.model.ilp.IlpFigures, or why there are none (the two model rows)."""
        names = list(planned)
        columns = [Column(planned[name], measurements.get(name)) for name in names]
        rows = [(label, better, [get(c) for c in columns]) for label, better, get in compare_rows(DEFAULT_BUILD_ARCHS)]
        rows += model_rows([(models or {}).get(name, "not computed") for name in names])
        self.table.clear()
        self.table.setRowCount(len(rows))
        self.table.setColumnCount(len(names))
        self.table.setHorizontalHeaderLabels(names)
        self.table.setVerticalHeaderLabels([label for label, _, _ in rows])
        self.cells = {}
        bold = QFont()
        bold.setBold(True)
        for i, (label, better, values) in enumerate(rows):
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
        self.table.resizeRowsToContents()
        self.caption.setText(built_caption(names, measurements))
        self._explain_model_rows(rows, [(models or {}).get(name) for name in names])

    def _explain_model_rows(self, rows: list, figures: list) -> None:
        """The model rows' headers and the note under the table explain what a false dependence costs
        (gui.model.why.false_dependence_why), on the first plan's arch."""
        from engine.model.ilp import IlpFigures
        from gui.model.why import false_dependence_why

        known = [f for f in figures if isinstance(f, IlpFigures)]
        if not known:
            return
        text = false_dependence_why(known[0].arch)
        self.model_note.setToolTip(text)
        for i, (label, _better, _values) in enumerate(rows):
            if label in ("ILP (model)", "cycles/warp (model)"):
                header = self.table.verticalHeaderItem(i)
                if header is not None:
                    header.setToolTip(text)

    def show_next_step(self, plan_name: str | None, text: str, reachable: bool) -> None:
        """The current plan's next occupancy step in words; *Tune* is enabled when registers limit occupancy."""
        self.next_step.setText(f"Next occupancy step ({plan_name}): {text}" if plan_name else "")
        self.tune_button.setEnabled(bool(plan_name) and reachable)

    def cell(self, row_label: str, plan: str) -> str:
        return self.cells.get((row_label, plan), "")


def model_rows(figures: list) -> list[tuple[str, str, list]]:
    """The compare table's two model rows (engine/model/ilp.py) over one entry per plan: its IlpFigures, or a
    string saying why there are none."""
    def cell(f, get):
        return f if isinstance(f, str) else get(f)
    return [("ILP (model)", "max", [cell(f, lambda f: round(f.ilp, 3)) for f in figures]),
            ("cycles/warp (model)", "min", [cell(f, lambda f: f.cycles) for f in figures])]


class QtSassView(QWidget):
    """The compiled kernel: nvdisasm's live ranges as a timeline and pressure curve, the SASS text beside.

    Linked to the plan as Compiler Explorer links source and assembly, through the measurement's SASS-to-IR
    map (kernels.sass_lines): a single click on a SASS instruction (a row of the listing, gui.qt.qt_sass, or a
    column of the timeline) emits ``irSelected`` with the plan instruction it came from; :meth:`show_ir` marks the SASS instructions of a plan instruction and the timeline outlines the
    live ranges they write or read. A kernel shown after its plan changed (:meth:`forget_links`) links nothing.

    Under the pressure, the stall cycles encoded in each SASS instruction's control bits (the measurement's
    ``nvdisasm -hex`` listing, aligned with the life-range rows by offset); when the two listings do not
    align nothing is drawn and the caption says why. The listing's columns are Nsight Compute's Source page's:
    live registers, encoded stall cycles, the plan instruction; live ranges take their plan value's role
    colour where the line map ties them to one (gui.model.timeline.sass_roles), grey elsewhere.
    """

    instructionSelected = Signal(int)
    #: the plan's (IR) instruction that a clicked SASS instruction came from
    irSelected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.arch = QComboBox()
        self.arch.addItems(list(DEFAULT_BUILD_ARCHS))
        self.arch.currentTextChanged.connect(lambda _: self.refresh())
        self.caption = QLabel("Build & measure (Ctrl+B) to see what ptxas made of the current plan.")
        self.caption.setWordWrap(True)
        self.timeline = QtTimeline(editable=False, stalls=True)
        self.timeline.instructionSelected.connect(self.sass_clicked)
        self.listing = QtSassTable()
        self.listing.rowClicked.connect(self.sass_clicked)
        top = QHBoxLayout()
        top.addWidget(QLabel("arch"))
        top.addWidget(self.arch)
        top.addWidget(self.caption, 1)
        # the listing under the timeline, the tab's whole width: its five columns fit at 1280x800 uncut
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.timeline)
        self.split.addWidget(self.listing)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.split, 1)
        self.measurement = None
        self.budget = None
        self.program = None
        self.rows: list = []
        self.linkable = False
        self.ir_index: int | None = None
        self.row: int | None = None

    @property
    def sass(self) -> dict:
        """arch -> kernels.sass.SassLiveness of the measurement shown."""
        m = self.measurement
        return {a: m.sass_liveness(a) for a in m.archs} if m is not None and m.listings is not None else {}

    def show_build(self, measurement, budget: int | None, program=None) -> None:
        """Show a kernels.measurement.Measurement that has its listings, built from the current plan
        (``program``: that plan's program, which names the plan instructions and colours the ranges)."""
        self.measurement, self.budget, self.linkable, self.program = measurement, budget, True, program
        self.refresh()

    def forget_links(self) -> None:
        """The kernel shown is not the current plan's (it changed, or another plan is current): link nothing,
        and draw its ranges grey (no plan value)."""
        if self.linkable:
            self.linkable = False
            self.ir_index = None
            self.refresh()
            self.caption.setText(self.caption.text() + " (not the current plan's kernel: build it to link "
                                 "its instructions)")

    def ir_map(self):
        """The shown arch's kernels.sass_lines.SassIrMap (None: no map, or a kernel not of the current plan)."""
        m, a = self.measurement, self.arch.currentText()
        if not self.linkable or m is None or a not in m.sass:
            return None
        mapped = m.sass[a].ir_map
        return mapped if mapped is not None and mapped.ir else None

    def sass_clicked(self, row: int) -> None:
        """A SASS instruction clicked: mark it, and emit the plan instruction it came from (if any)."""
        self.highlight(row)
        mapped = self.ir_map()
        if mapped is not None and 0 <= row < len(mapped.ir) and mapped.ir[row] is not None:
            self.irSelected.emit(mapped.ir[row])

    def show_ir(self, index: int | None) -> None:
        """Mark the SASS instructions that came from the plan's instruction ``index`` (None or -1: none)."""
        self.ir_index = None if index is None or index < 0 else index
        mapped = self.ir_map()
        rows = mapped.sass_of(self.ir_index) if mapped is not None and self.ir_index is not None else ()
        self.timeline.set_linked(rows)
        self._mark_text()
        if rows and (self.row is None or self.row not in rows):
            self.listing.scroll_to_row(rows[0])

    def refresh(self) -> None:
        a, m = self.arch.currentText(), self.measurement
        s = m.sass_liveness(a) if m is not None else None
        if s is None:
            self.rows = []
            self.listing.set_rows([])
            self.timeline.set_stalls(None)
            return
        mapped = self.ir_map()
        ir_of_row = mapped.ir if mapped is not None else None
        self.timeline.show_sass(s, self.budget, sass_roles(s, ir_of_row, self.program))
        self.row = None
        at_plan, own = m.ptxas[a], m.ptxas_compiler[a]
        self.caption.setText(f"{a}, {m.kernel.entry} at the {at_plan.cap_text}: ptxas {at_plan.registers} "
                             f"registers, SASS MAXLIVE {s.maxlive} (plan: {m.planned.registers} registers, MAXLIVE "
                             f"{m.planned.maxlive}; {own.cap_text}: {own.registers} registers). "
                             + self._link_text(m.sass[a].ir_map if a in m.sass else None) + " "
                             + self._stalls(m, a, s))
        strip = self.timeline.stalls
        self.rows = sass_rows(s, ir_of_row, strip, self.program)
        self.listing.set_rows(self.rows, [strip.describe(i) for i in range(len(self.rows))] if strip else None)
        self.show_ir(self.ir_index)

    def _stalls(self, m, arch: str, sass) -> str:
        """Draw the encoded stalls of ``arch`` under the pressure, or nothing; the caption's sentence on them."""
        try:
            listing = m.control_listing(arch)
            strip = (stall_strip(sass, listing) if listing is not None
                     else "the measurement has no nvdisasm -hex listing (a report from before it was kept)")
        except ControlError as e:
            strip = f"its nvdisasm -hex listing is unreadable ({e})"
        self.timeline.set_stalls(strip if isinstance(strip, StallStrip) else None)
        if isinstance(strip, StallStrip):
            return ("Under the pressure: each instruction's stall cycles as encoded in its control bits "
                    "(hover for yield and scoreboards).")
        return f"Stall cycles not drawn: {strip}."

    @staticmethod
    def _link_text(mapped) -> str:
        if mapped is None:
            return "No SASS-to-plan links (a report from before they were measured)."
        if not mapped.ir:
            return mapped.note
        return (f"{mapped.mapped} of {len(mapped.ir)} SASS instructions link to a plan instruction "
                "(line info): click one (a row of the listing or a column of the timeline) to select its plan "
                "instruction; ranges take the colour of the plan value they hold, grey where no link says.")

    def highlight(self, row: int) -> None:
        if not 0 <= row < len(self.rows):
            return
        self.row = row
        self._mark_text()
        self.listing.scroll_to_row(row)
        self.timeline.set_instruction(row)

    def showEvent(self, event) -> None:
        """Shown (its tab chosen): the marked row in view (a scroll asked for while hidden does nothing)."""
        super().showEvent(event)
        rows = ([self.row] if self.row is not None else []) or list(self.timeline.linked)
        if rows:
            QTimer.singleShot(0, lambda: self.listing.scroll_to_row(rows[0]))

    def _mark_text(self) -> None:
        """The listing's marks: the linked instructions pale, the clicked one gold."""
        self.listing.mark(self.timeline.linked, self.row)


#: the spill axis's ticks (bytes): a symmetric-log axis, log10(1 + bytes), so 8 B shows beside 7,000 B and 0 is 0
SPILL_TICKS = (0, 10, 100, 1000, 10000, 100000)


def symlog(values) -> np.ndarray:
    """log10(1 + bytes): the spill plot's y (0 stays 0, 8 B is 0.95, 7,000 B is 3.85).

    Examples
    --------
    >>> symlog([0, 9, 999]).tolist()
    [0.0, 1.0, 3.0]
    """
    return np.log10(1 + np.asarray(values, dtype=float))


def sweep_step(done: int, total: int) -> str:
    """A running sweep's step in words: NVVM's compile (step 0), then ptxas runs (``total - 1``: each cap, then
    no cap).

    Examples
    --------
    >>> sweep_step(0, 32), sweep_step(5, 32)
    ('compiling the kernel with NVVM', '4 of 31 ptxas runs done (each cap, then no cap)')
    """
    if done < 1:
        return "compiling the kernel with NVVM"
    return f"{min(done - 1, total - 1)} of {total - 1} ptxas runs done (each cap, then no cap)"


def _bytes(v: int) -> str:
    return f"{v // 1000}k" if v >= 1000 else str(v)


class QtBudgetSweep(QWidget):
    """ptxas registers, active warps and spill bytes against -maxrregcount for the selected plan, one plot each
    (their own y axes, one shared x axis), with two marks: the plan's register count (a vertical line) and
    ptxas's own choice with no flag (a horizontal line). Spill bytes are on a symmetric-log axis with a marker
    and its figure at every non-zero point, so a small spill is seen beside a large one. No axis takes an SI
    prefix ("(x0.001)"); before a run every plot spans the caps a sweep covers."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel("Run the budget sweep from the Kernel menu (Kernel > Budget sweep): ptxas at each "
                              "-maxrregcount from 24 to 255, the status bar counts the caps done.")
        self.caption.setWordWrap(True)
        self.widget = pg.GraphicsLayoutWidget()
        self.regs = self.widget.addPlot(row=0, col=0)
        self.regs.setLabel("left", "ptxas registers")
        self.regs.addLegend(offset=(-10, 10))
        self.warps = self.widget.addPlot(row=1, col=0)
        self.warps.setLabel("left", "active warps / SM")
        self.spills = self.widget.addPlot(row=2, col=0)
        self.spills.setLabel("left", "spill bytes (log)")
        self.spills.setLabel("bottom", "-maxrregcount")
        for plot in (self.regs, self.warps, self.spills):
            for side in ("left", "bottom"):
                plot.getAxis(side).enableAutoSIPrefix(False)
            plot.setXRange(24, 255, padding=0.02)
        self.warps.setXLink(self.regs)
        self.spills.setXLink(self.regs)
        self.spills.getAxis("left").setTicks([[(float(symlog([v])[0]), _bytes(v)) for v in SPILL_TICKS]])
        self.spills.setYRange(0, 1, padding=0.05)
        self.widget.ci.layout.setRowStretchFactor(0, 2)
        self.reg_curve = self.regs.plot([], [], pen=pg.mkPen("#4e79a7", width=2), symbol="o", name="ptxas registers")
        self.warp_curve = self.warps.plot([], [], pen=pg.mkPen("#59a14f", width=2), symbol="t")
        self.spill_curve = self.spills.plot([], [], pen=pg.mkPen("#e15759", width=2), symbol="s", symbolSize=5)
        #: a marker and the figure at every cap that spills, however small
        self.spill_marks = pg.ScatterPlotItem([], [], symbol="o", size=11, brush="#e15759",
                                              pen=pg.mkPen("#ffffff", width=1))
        self.spills.addItem(self.spill_marks)
        self.spill_labels: list = []
        dashed = {"width": 1, "style": Qt.PenStyle.DashLine}
        self.plan_mark = pg.InfiniteLine(angle=90, pen=pg.mkPen("#b07aa1", **dashed), movable=False,
                                         label="", labelOpts={"position": 0.9, "color": "#b07aa1"})
        self.own_mark = pg.InfiniteLine(angle=0, pen=pg.mkPen("#f28e2b", **dashed), movable=False,
                                        label="", labelOpts={"position": 0.15, "color": "#f28e2b"})
        for mark in (self.plan_mark, self.own_mark):
            mark.setVisible(False)
            self.regs.addItem(mark)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.widget, 1)
        self.rows = []

    def show_progress(self, plan_name: str, arch: str, done: int, total: int, left: str = "") -> None:
        """What a running sweep has done: NVVM's compile, then each ptxas run (``total`` steps in all)."""
        self.caption.setText(f"Budget sweep of {plan_name} on {arch}, running: {sweep_step(done, total)}{left}.")

    def show_sweep(self, sweep, plan_name: str) -> None:
        """Show a kernels.measurement.Sweep."""
        self.rows = list(sweep.rows)
        caps = [r.maxrregcount for r in self.rows]
        self.reg_curve.setData(caps, [r.registers for r in self.rows])
        self.warp_curve.setData(caps, [r.active_warps for r in self.rows])
        spilled = [r.spill_store_bytes + r.spill_load_bytes for r in self.rows]
        y = symlog(spilled)
        self.spill_curve.setData(caps, y)
        some = [k for k, b in enumerate(spilled) if b > 0]
        self.spill_marks.setData([caps[k] for k in some], y[some] if some else [])
        # figures where they do not crowd: the largest spill, the smallest (the cliff's edge), and any under 5 % of
        # the largest (the ones a linear axis would draw as 0)
        big = max(spilled) if some else 0
        named = sorted({some[0], some[-1], *(k for k in some if spilled[k] < 0.05 * big)}) if some else []
        self._label_spills([(caps[k], float(y[k]), f"{spilled[k]:,} B") for k in named])
        self.spills.setYRange(0, max(float(y.max()) if len(y) else 0.0, 1.0) * 1.3, padding=0)
        self.warps.setYRange(0, max([r.active_warps for r in self.rows] or [1]) * 1.1, padding=0)
        self._mark(sweep)
        cliff = sweep.cliff()
        self.caption.setText(f"{plan_name} on {sweep.arch}: "
                             + (f"ptxas spills at -maxrregcount {cliff} and below" if cliff
                                else "no spills at any cap swept")
                             + f"; the plan's count is {sweep.plan_registers} registers, ptxas with no "
                               f"-maxrregcount chose {sweep.no_cap.registers}")

    def _label_spills(self, labels: list) -> None:
        """The byte count over each spilling cap's marker (text items made once, reused, hidden when unused)."""
        while len(self.spill_labels) < len(labels):
            item = pg.TextItem(color="#e15759", anchor=(0.5, 1.2))
            self.spills.addItem(item)
            self.spill_labels.append(item)
        for k, item in enumerate(self.spill_labels):
            item.setVisible(k < len(labels))
            if k < len(labels):
                item.setText(labels[k][2])
                item.setPos(labels[k][0], labels[k][1])

    def _mark(self, sweep) -> None:
        """The plan's count at x = its registers; ptxas's own choice at y = its registers."""
        for mark, value, text in ((self.plan_mark, sweep.plan_registers, f"plan: {sweep.plan_registers}"),
                                  (self.own_mark, sweep.no_cap.registers,
                                   f"ptxas, no flag: {sweep.no_cap.registers}")):
            mark.setVisible(True)               # first: a hidden line's label does not take new text
            mark.setValue(value)
            mark.label.setFormat(text)
