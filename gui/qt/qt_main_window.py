"""QtMainWindow: the RegTune workbench, a Qt layer over the Qt-free document (gui/model/document.py).

Left: the workload panel and the plans list. Centre: timeline, interference
graph, compare, actual (SASS) and budget-sweep tabs. Right: why-this-many,
allocation table and instructions; under them the conflicts and the undo
history, in a dock of their own so that no tab hides behind tab-bar arrows. Every edit
is a QUndoCommand on one stack; long work runs in background jobs with a
progress bar and a Cancel button; errors come to one notification point and
show in a dialog with details, and the session is kept.

Invariant: the window changes the document only by pushing undo commands
(gui/qt/qt_commands.py) or by the document's selection calls; it redraws
from the document's change signals, once per batch of changes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QColor, QKeySequence, QPainter, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QUndoView,
    QVBoxLayout,
    QWidget,
)

from engine.admit import admit
from engine.alloc.hand import Assign, Move, Spill, Unspill
from engine.base.errors import RegtuneError
from engine.base.files import write_text_atomic
from engine.model.arch import ARCHS, DEFAULT_ARCH, DEFAULT_BUILD_ARCHS
from engine.model.ilp import IlpFigures, plan_ilp
from engine.plan import Plan
from engine.planfile import write_plan
from engine.workloads import BuildOptions, setting_label, workload_named
from gui.model import notifications
from gui.model.diff import plan_lines
from gui.model.eta import MovingRate, left_words
from gui.model.session import (
    AutosaveSlot,
    Session,
    allocate_all,
    best_plan,
    clear_autosave,
)
from gui.model.timeline import critical_path_points
from gui.model.words import conflict_summary
from gui.qt.qt_commands import WorkloadCommand, push_edit, push_plans
from gui.qt.qt_compare import QtBudgetSweep, QtComparePanel, QtSassView, sweep_step
from gui.qt.qt_diff import QtDiffView
from gui.qt.qt_document import QtDocument
from gui.qt.qt_graph import QtInterferenceGraph
from gui.qt.qt_jobs import QtJobRunner
from gui.qt.qt_live import LiveFigures, QtLiveFigures
from gui.qt.qt_panels import QtConflicts, QtInstructionList, QtPlansList, QtWhyPanel
from gui.qt.qt_sweep_view import QtSweepView
from gui.qt.qt_table import QtAllocationTable
from gui.qt.qt_timeline import QtTimeline
from gui.qt.qt_workload import QtWorkloadPanel, config_label

VIEWS = ("timeline", "graph", "compare", "sass", "sweep", "diff", "store")
#: the right-hand docks' width at the start (pixels): the allocation table's value and register columns fit
DETAILS_WIDTH = 380


def _planned(plan: Plan):
    from kernels.report import planned

    return planned(plan, (plan.options or {}).get("arch", DEFAULT_ARCH))


def _allocate_job(progress, workload: dict, options: BuildOptions) -> dict:
    return allocate_all(workload, options, progress)


def _build_job(progress, plans: dict, archs) -> dict:
    """name -> Measurement or Unavailable, each plan built in a worker that a cancel kills at once."""
    from kernels.run import build_in_worker

    out = {}
    for n, (name, plan) in enumerate(plans.items()):
        progress.advance(n, len(plans))
        out[name] = build_in_worker(plan, archs, progress=progress)
    progress.advance(len(plans), len(plans))
    return out


def _sweep_job(progress, plan: Plan, arch: str):
    """kernels.pipeline.budget_sweep on this thread: its NVVM compile runs in a worker process under time and
    memory limits and each ptxas run is a process, so nothing here can take the window down, and its progress
    (NVVM, then one step per ptxas run) reaches the status bar. An error becomes an ``Unavailable``."""
    from kernels.measurement import Unavailable
    from kernels.pipeline import budget_sweep

    try:
        return budget_sweep(plan, arch, progress=progress)
    except RegtuneError as e:
        return Unavailable(str(e))


def _tune_job(progress, plan: Plan, target: int):
    from engine.tune import tune

    return tune(plan, target)


def _doctor_job(progress) -> str:
    from kernels.toolchain import doctor

    found = doctor()
    ptxas, nvvm = found.tool("ptxas"), found.tool("nvvm")
    parts = [f"ptxas {ptxas.version}" if ptxas else "ptxas missing", nvvm.version if nvvm else "NVVM missing",
             "GPU: " + (found.device or "no CUDA device")]
    return "  |  ".join(parts + [f"missing: {m}" for m in found.missing])


class QtMainWindow(QMainWindow):
    def __init__(self, session: Session | None = None, autosave: bool = True, restore: bool | None = None,
                 start_jobs: bool = True):
        super().__init__()
        self.setWindowTitle("RegTune")
        self.resize(1500, 950)
        self.setAcceptDrops(True)
        self.doc = QtDocument(session, autosave=False)
        self.stack = QUndoStack(self)
        self.jobs = QtJobRunner(self)
        self.last_error: str | None = None
        #: the last tune's outcome in words (the status bar shows it until the next status)
        self.last_tune: str | None = None
        self._redraw_pending = False
        self._graph_stale = self._compare_stale = self._diff_stale = True
        self._planned_cache: dict = {}
        self.chosen: tuple | None = None     # (plan, why): the plan the window chose to show, and why
        self._ilp_cache: dict = {}           # plan name -> (plan, IlpFigures or why there are none)
        self.sweeping: tuple | None = None   # (plan name, arch, MovingRate) while a budget sweep runs
        self._build_widgets()
        self.live = LiveFigures(self, self.live_panel, DEFAULT_BUILD_ARCHS, enabled=start_jobs)
        self._build_actions()
        self._connect()
        notifications.subscribe(self._notified)
        self.autosave_slot = self._claim_autosave(autosave)
        orphaned = self.autosave_slot is not None and self.autosave_slot.orphaned
        if restore is None and orphaned:
            restore = QMessageBox.question(self, "RegTune", "RegTune did not close cleanly. Restore the last "
                                           "session, with every edit?") == QMessageBox.StandardButton.Yes
        if restore and orphaned:
            self.restore_autosave()
        elif not self.doc.session.plans and start_jobs:
            self.request_workload(self.doc.session.workload, self.doc.session.options)
        else:
            self.refresh_all()
        if start_jobs:
            self.jobs.start("doctor", _doctor_job, on_done=self.toolchain_label.setText,
                            on_error=lambda m, d: self.toolchain_label.setText(f"toolchain: {m}"))

    def _claim_autosave(self, autosave: bool) -> AutosaveSlot | None:
        """This window's own autosave slot (a second window takes another; a crashed window's is free)."""
        if not autosave:
            return None
        slot = AutosaveSlot.claim()
        self.doc.autosave_file = slot.path
        self.doc.autosave_enabled = True
        return slot

    # -- construction ----------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.workload_panel = QtWorkloadPanel()
        self.workload_panel.set_state(self.doc.session.workload, self.doc.session.options)
        self.plans_list = QtPlansList()
        self.timeline = QtTimeline()
        self.graph = QtInterferenceGraph()
        self.compare = QtComparePanel()
        self.sass_view = QtSassView()
        self.sweep = QtBudgetSweep()
        self.diff = QtDiffView()
        self.sweep_view = QtSweepView()
        self.tabs = QTabWidget()
        for widget, label in ((self.timeline, "Timeline"), (self.graph, "Interference graph"),
                              (self.compare, "Compare"), (self.sass_view, "Actual (SASS)"),
                              (self.sweep, "Budget sweep"), (self.diff, "Diff"), (self.sweep_view, "Sweep store")):
            self.tabs.addTab(widget, label)
        self.setCentralWidget(self.tabs)
        self.why = QtWhyPanel()
        self.table = QtAllocationTable()
        self.instructions = QtInstructionList()
        self.conflicts = QtConflicts()
        self.history = QUndoView(self.stack)
        self.history.setEmptyLabel("<session start>")
        # two docks of few tabs each, so every tab's label shows at the default size (no tab-bar arrows)
        self.side_tabs = self._tabs((self.why, "Why this many"), (self.table, "Allocation"),
                                    (self.instructions, "Instructions"))
        self.edit_tabs = self._tabs((self.conflicts, "Conflicts"), (self.history, "History"))
        scroll = QScrollArea()
        scroll.setWidget(self.workload_panel)
        scroll.setWidgetResizable(True)
        left = QWidget()
        layout = QVBoxLayout(left)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 5)          # the checked workload's fields and the options, unscrolled at 1500x950
        layout.addWidget(QLabel("Plans"))
        layout.addWidget(self.plans_list, 3)
        self.live_panel = QtLiveFigures()
        layout.addWidget(self.live_panel)
        docks = []
        for widget, title, area in ((left, "Workload and plans", Qt.DockWidgetArea.LeftDockWidgetArea),
                                    (self.side_tabs, "Details", Qt.DockWidgetArea.RightDockWidgetArea),
                                    (self.edit_tabs, "Conflicts and history", Qt.DockWidgetArea.RightDockWidgetArea)):
            dock = QDockWidget(title, self)
            dock.setObjectName(title)
            dock.setWidget(widget)
            self.addDockWidget(area, dock)
            docks.append(dock)
        self.details_dock, self.edits_dock = docks[1:]
        self.resizeDocks(docks, [300, DETAILS_WIDTH, DETAILS_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks(docks[1:], [3, 1], Qt.Orientation.Vertical)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self.jobs.cancel_all)
        self.toolchain_label = QLabel("toolchain: checking...")
        self.status_text = QLabel()
        # a long line never widens the window; the whole line is in the tooltip
        self.status_text.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar = self.statusBar()
        bar.addWidget(self.status_text, 1)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)
        bar.addPermanentWidget(self.toolchain_label)

    @staticmethod
    def _tabs(*pages) -> QTabWidget:
        tabs = QTabWidget()
        tabs.setUsesScrollButtons(False)
        for widget, label in pages:
            tabs.addTab(widget, label)
        return tabs

    def _action(self, menu, text, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        m = self.menuBar()
        file_menu, edit_menu, kernel_menu, view_menu = (m.addMenu(t) for t in ("&File", "&Edit", "&Kernel", "&View"))
        self.open_action = self._action(file_menu, "Open plan...", self.open_plan_dialog, QKeySequence.StandardKey.Open)
        self.save_action = self._action(file_menu, "Save plan...", self.save_plan_dialog, QKeySequence.StandardKey.Save)
        self._action(file_menu, "Export kernel source...", self.export_kernel_dialog)
        self._action(file_menu, "Export picture of the current view...", self.export_picture_dialog, "Ctrl+E")
        self._action(file_menu, "Export pressure as CSV...", self.export_pressure_dialog, "Ctrl+Shift+E")
        self._action(file_menu, "Open sweep store...", self.open_store_dialog)
        file_menu.addSeparator()
        self._action(file_menu, "Quit", self.close, QKeySequence.StandardKey.Quit)
        self.undo_action = self.stack.createUndoAction(self, "Undo")
        self.undo_action.setShortcut(QKeySequence("Ctrl+Z"))
        self.redo_action = self.stack.createRedoAction(self, "Redo")
        self.redo_action.setShortcut(QKeySequence("Ctrl+Shift+Z"))
        for action, word in ((self.undo_action, "Undo"), (self.redo_action, "Redo")):
            # the toolbar button keeps one short word, so the buttons after it never move; the menu item and
            # the tooltip carry the whole action ("Undo hand 1: assign %a_3_1 to R50"), as the History tab does
            action.setIconText(word)
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        edit_menu.addSeparator()
        self._action(edit_menu, "Spill selected value", lambda: self.spill_selected(True), "Ctrl+Shift+L")
        self._action(edit_menu, "Unspill selected value", lambda: self.spill_selected(False), "Ctrl+Shift+U")
        self._action(edit_menu, "New hand copy of the current plan", self.duplicate_current, "Ctrl+D")
        edit_menu.addSeparator()
        self._action(edit_menu, "Preferences...", self.preferences)
        self.build_action = self._action(kernel_menu, "Build && measure", self.build_and_measure, "Ctrl+B")
        self._action(kernel_menu, "Budget sweep of the current plan", self.budget_sweep, "Ctrl+Shift+B")
        self._action(kernel_menu, "Cancel running jobs", self.jobs.cancel_all, "Esc")
        self.critical_action = self._action(view_menu, "Critical path on the timeline (model)",
                                            lambda _=False: self._show_critical_path(), "Ctrl+Shift+P")
        self.critical_action.setCheckable(True)
        # off until asked for: the model walks the executed path (0.1 s per plan for GEMM 16x16x16, 2 s for the
        # note's MHA example), too slow to redo on the UI thread after every edit
        self.critical_action.setChecked(False)
        for i, label in enumerate(("Timeline", "Interference graph", "Compare", "Actual (SASS)", "Budget sweep",
                                   "Diff", "Sweep store")):
            self._action(view_menu, label, lambda _=False, i=i: self.tabs.setCurrentIndex(i), f"Ctrl+{i + 1}")
        tools = self.addToolBar("Main")
        tools.setObjectName("main toolbar")
        tools.setIconSize(QSize(16, 16))
        for action in (self.open_action, self.save_action, self.undo_action, self.redo_action, self.build_action):
            tools.addAction(action)

    def _connect(self) -> None:
        d = self.doc
        # document changes mark the views stale; one redraw follows (a compound edit emits several signals)
        d.plansChanged.connect(self.schedule_redraw)
        d.currentChanged.connect(self.schedule_redraw)
        d.planChanged.connect(self.schedule_redraw)
        d.workloadChanged.connect(lambda: self.workload_panel.set_state(d.session.workload, d.session.options))
        d.selectionChanged.connect(self._selection_changed)
        d.instructionChanged.connect(self._instruction_changed)
        d.measurementsChanged.connect(lambda _name: self._compare_changed())
        self.workload_panel.workloadRequested.connect(self.request_workload)
        self.plans_list.planSelected.connect(d.set_current)
        self.plans_list.duplicateRequested.connect(self.duplicate_plan)
        self.plans_list.renameRequested.connect(self.rename_plan)
        self.plans_list.deleteRequested.connect(self.delete_plan)
        self.plans_list.reorderRequested.connect(self.reorder_plans)
        for view in (self.timeline, self.graph, self.table, self.why):
            view.valueSelected.connect(d.select)
        for view in (self.timeline, self.instructions):
            view.instructionSelected.connect(d.select_instruction)
        self.conflicts.conflictSelected.connect(self.select_conflict)
        self.sass_view.irSelected.connect(d.select_instruction)    # a SASS instruction -> its plan instruction
        self.timeline.valueDropped.connect(self.drop_value)
        self.timeline.contextRequested.connect(self.value_menu)
        self.table.contextRequested.connect(self.value_menu)
        self.table.assignRequested.connect(lambda name, regs: self.edit(Assign(name, tuple(regs))))
        self.table.rejected.connect(d.reject)
        self.instructions.moveRequested.connect(lambda i, to: self.edit(Move(i, to)))
        self.compare.tuneRequested.connect(self.tune_current)
        self.tabs.currentChanged.connect(lambda _: self._refresh_visible())
        self.sweep_view.configRequested.connect(self.open_sweep_row)
        self.jobs.started.connect(lambda _k: self._busy(True))
        self.jobs.stopped.connect(lambda _k: self._busy(self.jobs.busy()))
        self.jobs.progress.connect(self._progress)

    # -- refresh ---------------------------------------------------------------------------
    def schedule_redraw(self, *_args) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            QTimer.singleShot(0, self.flush)

    def flush(self) -> None:
        """Redraw now if the document changed since the last redraw."""
        if self._redraw_pending:
            self._redraw_pending = False
            self.refresh_all()

    def _compare_changed(self) -> None:
        self._compare_stale = self._diff_stale = True
        self._refresh_visible()

    def refresh_all(self) -> None:
        self._redraw_pending = False
        self._plan_changed()

    def _plan_changed(self) -> None:
        plan = self.doc.plan
        s = self.doc.session
        if plan is None:
            self.plans_list.show_plans(s.plans, s.current, self.doc.conflicts)
            return
        analysis = self.doc.analysis()
        conflicts = self.doc.conflicts()
        self.timeline.show_plan(plan, analysis, conflicts, self.doc.selected)
        self.timeline.set_instruction(self.doc.instruction)
        self._show_critical_path()
        self.table.set_plan(plan, analysis, conflicts, self.doc.selected)
        self.why.show_report(self.doc.why(self.doc.instruction))
        self.instructions.show_program(plan.program, self.doc.instruction)
        self._show_conflicts(conflicts)
        self.plans_list.show_plans(s.plans, s.current, self.doc.conflicts)
        self._graph_stale = True
        self._compare_stale = self._diff_stale = True
        self._refresh_visible()
        self.status_text.setText(self.status_line())
        self.status_text.setToolTip(self.status_tip())
        self._show_sass_of_current()
        self.live.plan_changed()

    def _show_conflicts(self, conflicts) -> None:
        """List the conflicts; a plan that turns broken (or an edit refused) brings the Conflicts tab forward,
        its label red while there is something to read there."""
        was = bool(self.conflicts.conflicts) or bool(self.conflicts.status.styleSheet())
        self.conflicts.show_conflicts(conflicts, self.doc.rejection)
        now = bool(conflicts) or bool(self.doc.rejection)
        if now and not was:
            self.edit_tabs.setCurrentWidget(self.conflicts)
        index = self.edit_tabs.indexOf(self.conflicts)
        self.edit_tabs.tabBar().setTabTextColor(index, QColor("#d62728") if now else self.palette().windowText().color())

    def status_line(self) -> str:
        plan, s = self.doc.plan, self.doc.session
        if plan is None:
            return ""
        p = plan.predicted
        conflicts = self.doc.conflicts()
        f = self.ilp_of(s.current, plan) if self._ilp_wanted() else None
        model = (f"  |  ILP {f.ilp:.3f} ({f.reference_ilp:.3f} unlimited), {f.cycles} cycles/warp (model)"
                 if isinstance(f, IlpFigures) else "")
        return (f"{setting_label(plan.workload or s.workload, plan.options or {})}  |  {s.current}: "
                f"{p and p.registers} registers of {plan.budget}, "
                f"MAXLIVE {p and p.maxlive}, {p and p.spilled_values} spilled"
                + (f", {p.rematerialised_values} rematerialised" if p and p.rematerialised_values else "") + "  |  "
                + conflict_summary(conflicts) + model
                + (f"  |  {self.chosen[1]}" if self.chosen and self.chosen[0] is plan else ""))

    def status_tip(self) -> str:
        """The status line, and when it shows the ILP model's figures, what a false dependence costs in them."""
        plan, s = self.doc.plan, self.doc.session
        f = self.ilp_of(s.current, plan) if plan is not None and self._ilp_wanted() else None
        line = self.status_line()
        if not isinstance(f, IlpFigures):
            return line
        from gui.model.why import false_dependence_why

        return line + "\n\n" + false_dependence_why(f.arch, f)

    def _refresh_visible(self) -> None:
        current = self.tabs.currentWidget()
        if current is self.graph and self._graph_stale and self.doc.plan:
            self.graph.show_plan(self.doc.plan, self.doc.analysis(), self.doc.selection, self.doc.conflicts())
            self._graph_stale = False
        if current is self.compare and self._compare_stale:
            self.refresh_compare()
        if current is self.diff and self._diff_stale:
            self.refresh_diff()
        if current is self.sweep_view and self.sweep_view.store_path is None:
            self.open_default_store()

    # -- the sweep store -------------------------------------------------------------------
    def open_store(self, path) -> None:
        """Show the sweep store at ``path`` in the Sweep store tab (a one-line error if it cannot be read)."""
        self.sweep_view.open_store(path)
        self.status_text.setText(self.sweep_view.store_label.text())

    def open_default_store(self) -> None:
        """The default store (the one ``regtune sweep`` writes without --store), if there is one."""
        from engine.store import default_path

        path = default_path()
        if path.is_file():
            self._guard(lambda: self.open_store(path))
        else:
            self.sweep_view.store_label.setText(f"no sweep store at {path} yet: run `regtune sweep gemm` (or open "
                                                "one: File > Open sweep store...)")

    def open_store_dialog(self) -> None:
        self.tabs.setCurrentWidget(self.sweep_view)
        self.sweep_view.open_store_dialog()

    def open_sweep_row(self, row: dict) -> None:
        """A sweep row's config in the main views: its workload and options, built and allocated as the
        workload panel asks (in the background), the timeline brought forward."""
        from gui.model.sweep_view import open_request

        workload, options = open_request(row, self.doc.session.options)
        self.tabs.setCurrentWidget(self.timeline)
        self.request_workload(workload, options)

    def diff_sources(self) -> dict[str, list[str]]:
        """What the Diff tab can compare: every plan, and the SASS of every built plan on each arch."""
        s = self.doc.session
        sources = {f"plan: {name}": plan_lines(plan) for name, plan in s.plans.items()}
        for name, m in s.measurements.items():
            for arch in (m.archs if m.listings is not None else ()):
                sass = m.sass_liveness(arch)
                if sass is not None:
                    sources[f"SASS {arch}: {name}"] = list(sass.texts)
        return sources

    def refresh_diff(self) -> None:
        """The Diff tab's listings; by default the current plan's kernel on the two archs when it is built, else
        the current plan against the next one."""
        s = self.doc.session
        sources = self.diff_sources()
        built = [k for k in sources if k.startswith("SASS ") and k.endswith(f": {s.current}")]
        others = [k for k in sources if k.startswith("plan: ") and k != f"plan: {s.current}"]
        left, right = (built[0], built[-1]) if len(built) > 1 else (f"plan: {s.current}", others[0] if others else None)
        self.diff.set_sources(sources, left, right)
        self._diff_stale = False

    def refresh_compare(self) -> None:
        from kernels.measurement import Unavailable

        s = self.doc.session
        planned = {}
        for name, plan in s.plans.items():
            cached = self._planned_cache.get(name)
            if cached is None or cached[0] is not plan:
                try:
                    cached = (plan, _planned(plan))
                except RegtuneError as e:       # a plan whose own figures cannot be had has no column
                    cached = (plan, Unavailable(str(e)))
                self._planned_cache[name] = cached
            planned[name] = cached[1]
        self._compare_stale = False
        shown = {n: p for n, p in planned.items() if not isinstance(p, Unavailable)}
        self.compare.show_plans(shown, dict(s.measurements), {n: self.ilp_of(n, s.plans[n]) for n in shown})
        mine = shown.get(s.current)
        self.compare.show_next_step(s.current if mine else None, mine.next_step if mine else "",
                                    bool(mine) and mine.next_step.startswith("free"))

    def tune_current(self) -> None:
        """*Tune*: the current plan's schedule searched toward its next occupancy step (:func:`engine.tune.tune`)
        in the background; :meth:`_tuned` pushes its edits when it is done."""
        from engine.model.arch import load_arch, next_register_step
        from engine.plan import registers_used
        from kernels.report import threads_per_block

        plan, name = self.doc.plan, self.doc.session.current
        if plan is None:
            return
        step = next_register_step(load_arch((plan.options or {}).get("arch", DEFAULT_ARCH)),
                                  registers_used(plan.assignment), threads_per_block(plan))
        if step is None:
            self.doc.reject("registers do not limit this plan's occupancy: there is no step to tune toward")
            return
        self.status_text.setText(f"tune: searching a schedule of {name} toward {step[0]} registers ({step[1]} warps)...")
        self.jobs.start("tune", _tune_job, (plan, step[0]), on_done=lambda r: self._tuned(plan, name, step, r),
                        on_error=lambda m, _d: self.doc.reject(f"tune: {m}"))

    def _tuned(self, plan: Plan, name: str, step: tuple, r) -> None:
        """Push a finished tune's edits one by one (each an undo step; an allocator's plan gets its hand copy
        first), unless the plan changed meanwhile; the outcome goes to the status bar and ``last_tune``."""
        if self.doc.session.plans.get(name) is not plan:
            self.doc.reject(f"tune: {name} changed while its schedule was searched; nothing applied")
            return
        self.doc.set_current(name)
        saving, self.doc.autosave_enabled = self.doc.autosave_enabled, False   # one autosave, not one per move
        try:
            for e in r.edits if r.registers_after < r.registers_before else ():
                if push_edit(self.stack, self.doc, e).rejected:
                    break
        finally:
            self.doc.autosave_enabled = saving
            self.doc.autosave()
        self.flush()
        self.last_tune = (f"tune toward {step[0]} registers ({step[1]} warps): MAXLIVE {r.maxlive_before} -> "
                          f"{r.maxlive_after}, {r.allocator} {r.registers_before} -> {r.registers_after} registers in "
                          f"{r.moves} moves, {r.seconds:.1f} s" + ("" if r.reached else f"; not reached: {r.why_not}"))
        self.status_text.setText(self.last_tune)
        self.status_text.setToolTip(self.last_tune)

    def _ilp_wanted(self) -> bool:
        """Whether a view on screen shows the model's figures (the overlay, or the Compare tab)."""
        return self.critical_action.isChecked() or self.tabs.currentWidget() is self.compare

    def ilp_of(self, name: str, plan: Plan):
        """The plan's ILP figures (engine/model/ilp.py, a model), or why there are none; kept while the plan is."""
        cached = self._ilp_cache.get(name)
        if cached is None or cached[0] is not plan:
            try:
                cached = (plan, plan_ilp(plan))
            except RegtuneError as e:
                cached = (plan, str(e))
            self._ilp_cache[name] = cached
        return cached[1]

    def _show_critical_path(self) -> None:
        plan = self.doc.plan
        f = self.ilp_of(self.doc.session.current, plan) if plan and self.critical_action.isChecked() else None
        self.timeline.set_critical(*(critical_path_points(plan, f.critical) if isinstance(f, IlpFigures)
                                     else ((), ())))

    def select_conflict(self, values: tuple, instruction: int) -> None:
        """Select a conflict's values (all of them) and its instruction in every view."""
        self.doc.select(*values)
        self.doc.select_instruction(instruction)

    def _selection_changed(self, name: str) -> None:
        self.timeline.set_selection(self.doc.selected)
        self.table.set_selection(self.doc.selected)
        if self.tabs.currentWidget() is self.graph:
            self.graph.set_selection(name or None)
        else:
            self.graph.selection = name or None
            self._graph_stale = True

    def _instruction_changed(self, index: int) -> None:
        plan = self.doc.plan
        if plan is None:
            return
        self.timeline.set_instruction(index)
        self.instructions.show_program(plan.program, index)
        self.why.show_report(self.doc.why(index))
        self.sass_view.show_ir(index)       # the SASS instructions it became, as Compiler Explorer links them

    def _busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if not busy:
            self.progress.reset()
            self.progress.setFormat("%p%")

    def _progress(self, key: str, done: int, total: int) -> None:
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(done)
        if key == "sweep" and self.sweeping is not None and total > 2:
            name, arch, rate = self.sweeping
            rate.report(done, time.monotonic())
            left = left_words(rate, done, total)
            runs = total - 1                  # one per cap and one with no cap, after NVVM's compile
            self.progress.setFormat(f"{max(done - 1, 0)}/{runs} ptxas runs")
            self.status_text.setText(f"budget sweep of {name} on {arch}: {sweep_step(done, total)}{left}")
            self.sweep.show_progress(name, arch, done, total, left)

    # -- workload --------------------------------------------------------------------------
    def request_workload(self, workload: dict, options: BuildOptions) -> None:
        self.status_text.setText(f"building {config_label(workload)} and running the allocators...")
        self.jobs.start("allocate", _allocate_job, (workload, options),
                        on_done=lambda plans: self._workload_ready(workload, options, plans),
                        on_error=self._job_failed)

    def _workload_ready(self, workload: dict, options: BuildOptions, plans: dict) -> None:
        """Show the new workload's plans: the plan shown now if there is one of that name, else the best
        verified plan (the status line says which and why)."""
        text = f"workload {config_label(workload)} (tile {list(options.tile) if options.tile else 'auto'}, " \
               f"{options.schedule}, budget {options.budget})"
        best = None if self.doc.session.current in plans else best_plan(plans, self.doc.conflicts)
        self.chosen = (plans[best[0]], best[1]) if best else None
        self.stack.push(WorkloadCommand(self.doc, text, workload, options, plans, best[0] if best else None))

    def allocate_now(self, workload: dict, options: BuildOptions) -> None:
        """The same as changing the workload, in the foreground (scripts, screenshots, tests)."""
        self._workload_ready(workload, options, allocate_all(workload, options))
        self.flush()

    # -- edits -----------------------------------------------------------------------------
    def edit(self, edit) -> None:
        if self.doc.plan is None:
            return
        push_edit(self.stack, self.doc, edit)
        self.flush()

    def drop_value(self, name: str, row) -> None:
        plan = self.doc.plan
        if plan is None or row is None or name not in plan.program.values:
            return
        if row < 0:
            self.edit(Spill(name))
            return
        width = plan.program.values[name].width
        first = row - row % 2 if width == 2 else row
        self.edit(Assign(name, tuple(range(first, first + width))))

    def value_menu_actions(self, name: str) -> QMenu:
        """The menu of one value: spill or unspill it (assignment edits), or put it in a register."""
        plan = self.doc.plan
        menu = QMenu(self)
        menu.setTitle(f"%{name}")
        if name in plan.spills:
            menu.addAction(f"Unspill %{name} (keep it in its register)", lambda: self.edit(Unspill(name)))
        else:
            menu.addAction(f"Spill %{name} to local memory", lambda: self.edit(Spill(name)))
        menu.addAction(f"Select %{name} everywhere", lambda: self.doc.select(name))
        return menu

    def value_menu(self, name: str, global_pos) -> None:
        if self.doc.plan is not None and name in self.doc.plan.program.values:
            self._menu = self.value_menu_actions(name)
            self._menu.popup(global_pos)

    def spill_selected(self, spill: bool) -> None:
        name = self.doc.selection
        if name:
            self.edit(Spill(name) if spill else Unspill(name))

    def duplicate_current(self) -> None:
        if self.doc.session.current:
            self.duplicate_plan(self.doc.session.current)

    def duplicate_plan(self, name: str) -> None:
        push_plans(self.stack, self.doc, self.doc.duplicated(name))

    def rename_plan(self, old: str, new: str) -> None:
        if not push_plans(self.stack, self.doc, self.doc.renamed(old, new)):
            self.refresh_all()          # the list shows the old name again

    def delete_plan(self, name: str) -> None:
        push_plans(self.stack, self.doc, self.doc.deleted(name))

    def reorder_plans(self, names: list[str]) -> None:
        push_plans(self.stack, self.doc, self.doc.reordered(names))

    # -- files -----------------------------------------------------------------------------
    def open_plan(self, path: str) -> bool:
        """Open a plan file: its workload, options and assignment; an invalid file is explained, nothing lost."""
        try:
            plan = admit(path).plan
        except RegtuneError as e:
            notifications.notify(str(e), f"The file was not opened; the session is unchanged.\n\n{path}")
            return False
        workload = plan.workload or {"kind": "program", "name": plan.program.name}
        options = BuildOptions.of_plan(plan.options or {}, plan.budget)
        name = Path(path).stem
        self.stack.push(WorkloadCommand(self.doc, f"open {Path(path).name}", workload, options, {name: plan}))
        if workload_named(workload["kind"]).example is not None:   # a config space: the allocators rebuild it
            self.jobs.start("allocate", _allocate_job, (workload, options),
                            on_done=lambda plans: self._add_allocator_plans(plans, name), on_error=self._job_failed)
        return True

    def _add_allocator_plans(self, plans: dict, keep: str) -> None:
        push_plans(self.stack, self.doc, self.doc.added(plans, keep))

    def save_plan(self, path: str) -> None:
        plan = self.doc.plan
        if plan is not None:
            write_plan(plan, path)
            self.status_text.setText(f"saved {self.doc.session.current} to {path}")

    def export_kernel(self, path: str) -> None:
        from kernels.codegen import kernel_source

        write_text_atomic(path, kernel_source(self.doc.plan).text)

    def export_picture(self, path: str, widget: QWidget | None = None) -> None:
        widget = widget or self.tabs.currentWidget()
        if str(path).lower().endswith(".svg"):
            from PySide6.QtSvg import QSvgGenerator

            gen = QSvgGenerator()
            gen.setFileName(str(path))
            gen.setSize(widget.size())
            gen.setViewBox(QRectF(0, 0, widget.width(), widget.height()))
            painter = QPainter(gen)
            try:
                widget.render(painter, QPoint(0, 0))
            finally:
                painter.end()
        elif not widget.grab().save(str(path)):
            raise RegtuneError(f"{path}: could not write the picture")

    def open_plan_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open plan", "", "RegTune plans (*.json)")
        if path:
            self.open_plan(path)

    def save_plan_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save plan", f"{self.doc.session.current}.json", "*.json")
        if path:
            self._guard(lambda: self.save_plan(path))

    def export_kernel_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export kernel source", "kernel.py", "*.py")
        if path:
            self._guard(lambda: self.export_kernel(path))

    def export_pressure(self, path: str) -> None:
        """The current plan's per-instruction pressure, and its kernel's on each arch when built, as CSV."""
        from gui.model.sass_rows import plan_pressure_csv

        plan = self.doc.plan
        text = plan_pressure_csv(plan, self.doc.analysis().pressure,
                                 self.doc.session.measurement(self.doc.session.current))
        write_text_atomic(path, text)
        self.status_text.setText(f"wrote the pressure of {self.doc.session.current} to {path}")

    def export_pressure_dialog(self) -> None:
        if self.doc.plan is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export pressure as CSV",
                                              f"{self.doc.session.current}-pressure.csv", "CSV (*.csv)")
        if path:
            self.export_pressure(path)

    def export_picture_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export picture", "view.png", "PNG (*.png);;SVG (*.svg)")
        if path:
            self._guard(lambda: self.export_picture(path))

    def _guard(self, fn) -> None:
        try:
            fn()
        except (RegtuneError, OSError) as e:
            notifications.notify(str(e))

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_plan(url.toLocalFile())
                break

    # -- kernels ---------------------------------------------------------------------------
    def build_and_measure(self, plans: dict | None = None) -> None:
        plans = plans or dict(self.doc.session.plans)
        self.status_text.setText(f"building and measuring {len(plans)} kernels (NVVM, ptxas, nvdisasm, simulator)...")
        self.jobs.start("build", _build_job, (plans, DEFAULT_BUILD_ARCHS), on_done=self._built,
                        on_error=self._job_failed)

    def _built(self, results: dict) -> None:
        from kernels.measurement import Unavailable

        failures = [f"{name}: {r.reason}" for name, r in results.items() if isinstance(r, Unavailable)]
        for name, result in results.items():
            if not isinstance(result, Unavailable):
                self.doc.set_measurement(name, result)
        if failures:
            notifications.notify(failures[0], "\n".join(failures))
        self._show_sass_of_current()
        self.status_text.setText(f"built {len(results) - len(failures)} kernels" +
                                 (f", {len(failures)} failed" if failures else ""))

    def _show_sass_of_current(self) -> None:
        m = self.doc.session.measurement(self.doc.session.current)
        if m is not None:
            self.sass_view.ir_index = self.doc.instruction
            self.sass_view.show_build(m, self.doc.plan.budget, self.doc.plan.program)
        else:
            self.sass_view.forget_links()

    def budget_sweep(self) -> None:
        plan = self.doc.plan
        if plan is None:
            return
        name = self.doc.session.current
        arch = self.doc.session.options.arch
        self.sweeping = (name, arch, MovingRate())
        self.status_text.setText(f"budget sweep of {name} on {arch}: compiling the kernel with NVVM...")
        self.sweep.show_progress(name, arch, 0, 2)
        self.jobs.start("sweep", _sweep_job, (plan, arch),
                        on_done=lambda r: self._swept(r, name), on_error=self._job_failed)

    def _swept(self, result, name: str) -> None:
        from kernels.measurement import Unavailable

        swept, self.sweeping = self.sweeping, None
        if swept is not None:
            self.status_text.setText(f"budget sweep of {swept[0]} on {swept[1]}: done"
                                     + ("" if isinstance(result, Unavailable) else f", {len(result.rows)} caps"))
        if isinstance(result, Unavailable):
            notifications.notify(result.reason)
            return
        self.sweep.show_sweep(result, name)
        self.tabs.setCurrentWidget(self.sweep)

    # -- errors, preferences, session --------------------------------------------------------
    def _job_failed(self, message: str, details: str) -> None:
        notifications.notify(message, details)

    def _notified(self, note) -> None:
        self.last_error = note.message
        box = QMessageBox(QMessageBox.Icon.Warning, "RegTune", note.message, parent=self)
        if note.details:
            box.setDetailedText(note.details)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.error_box = box

    def preferences(self) -> None:
        dialog = QDialog(self)
        dialog.setWindowTitle("Preferences")
        form = QFormLayout(dialog)
        arch, theme = QComboBox(), QComboBox()
        arch.addItems(list(ARCHS))
        arch.setCurrentText(self.doc.session.options.arch)
        theme.addItems(["light", "dark"])
        form.addRow("architecture (occupancy, bank model)", arch)
        form.addRow("theme", theme)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        form.addRow(buttons)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.set_theme(theme.currentText())
            if arch.currentText() != self.doc.session.options.arch:
                self.request_workload(self.doc.session.workload, self.doc.session.options.with_(arch=arch.currentText()))

    def set_theme(self, theme: str) -> None:
        background, foreground = ("k", "w") if theme == "dark" else ("w", "k")
        for w in self.findChildren(pg.GraphicsView):
            w.setBackground(background)
        pg.setConfigOption("foreground", foreground)

    def restore_autosave(self) -> None:
        from gui.model.session import load_session

        try:
            session = load_session(self.autosave_slot.path if self.autosave_slot else None)
        except RegtuneError as e:
            notifications.notify(f"the autosaved session could not be restored: {e}")
            self.request_workload(self.doc.session.workload, self.doc.session.options)
            return
        edits = len(session.edits)
        self.doc.replace_session(session)
        self.refresh_all()
        self.status_text.setText(f"restored the autosaved session ({edits} edits)")

    def closeEvent(self, event) -> None:
        self.jobs.cancel_all()
        self.live.enabled = False
        self.live.timer.stop()
        self.live.jobs.cancel_all()
        self.live.wait(5000)
        if "kernels.run" in sys.modules:        # builds still running: their workers go with the window
            sys.modules["kernels.run"].stop_workers()
        self.jobs.wait(5000)
        notifications.unsubscribe(self._notified)
        if self.autosave_slot is not None:
            if self.doc.autosave_enabled:
                clear_autosave(self.autosave_slot.path)
            self.autosave_slot.release()
        super().closeEvent(event)

    # -- for scripts and tests ---------------------------------------------------------------
    def wait_for_jobs(self, timeout_ms: int = 600000) -> None:
        from PySide6.QtCore import QCoreApplication, QElapsedTimer

        timer = QElapsedTimer()
        timer.start()
        while self.jobs.busy() and timer.elapsed() < timeout_ms:
            QCoreApplication.processEvents()
            self.jobs.pool.waitForDone(20)
        QCoreApplication.processEvents()

    def dispose(self) -> None:
        """Close and delete now (windows made outside a running event loop: scripts, benchmarks)."""
        from PySide6.QtCore import QCoreApplication, QEvent

        self.doc.autosave_enabled = False
        self.close()
        self.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)

    def session_json(self) -> str:
        return json.dumps(self.doc.session.to_dict(), sort_keys=True)

