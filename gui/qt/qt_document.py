"""QtDocument: the session behind Qt signals, with autosave after every change.

Views read ``doc.session`` and the derived data here (analysis, conflicts);
they change it only through the undo commands in gui/qt/qt_commands.py, whose
redo/undo call the ``set_*`` methods below.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.liveness import analyze
from engine.plan import Plan
from engine.verify import static_conflicts
from gui.model.notifications import notify
from gui.model.session import Session, save_session


class QtDocument(QObject):
    """Signals: ``plansChanged`` (list or names), ``planChanged(name)``, ``currentChanged``,
    ``workloadChanged``, ``selectionChanged(value)``, ``instructionChanged(index)``,
    ``measurementsChanged(name)``."""

    plansChanged = Signal()
    planChanged = Signal(str)
    currentChanged = Signal()
    workloadChanged = Signal()
    selectionChanged = Signal(str)
    instructionChanged = Signal(int)
    measurementsChanged = Signal(str)

    def __init__(self, session: Session | None = None, autosave: bool = True, parent=None):
        super().__init__(parent)
        self.session = session or Session()
        self.autosave_enabled = autosave
        #: the document's own memo of what it derived from immutable plans: id -> (object, result), bounded
        self._derived: dict = {}
        self.selection: str | None = None
        self.instruction: int | None = None
        self.rejection: str | None = None

    # -- derived -----------------------------------------------------------------------------
    @property
    def plan(self) -> Plan | None:
        return self.session.plan

    def _memo(self, kind: str, source, compute):
        """``compute(source)``, kept while ``source`` (an immutable program or plan) is one of the last 64 asked for."""
        key = (kind, id(source))
        hit = self._derived.get(key)
        if hit is None or hit[0] is not source:
            if len(self._derived) >= 64:
                self._derived.pop(next(iter(self._derived)))
            hit = self._derived[key] = (source, compute(source))
        return hit[1]

    def analysis(self, plan: Plan | None = None):
        plan = plan or self.plan
        return self._memo("analysis", plan.program, analyze) if plan else None

    def conflicts(self, plan: Plan | None = None) -> list:
        plan = plan or self.plan
        if plan is None:
            return []
        return self._memo("conflicts", plan, lambda p: static_conflicts(
            p.program, p.assignment, p.spills, p.budget, self.analysis(p)))

    # -- changes (called by undo commands) -----------------------------------------------------
    def set_plan(self, name: str, plan: Plan, note: str | None = None) -> None:
        self.session.set_plan(name, plan)
        if note:
            self.session.edits.append(note)
        self.rejection = None
        self.planChanged.emit(name)
        self.autosave()

    def set_plans(self, plans: dict, current: str | None) -> None:
        self.session.plans = dict(plans)
        self.session.measurements = {k: v for k, v in self.session.measurements.items() if k in plans}
        self.session.current = current if current in plans else next(iter(plans), None)
        self.plansChanged.emit()
        self.currentChanged.emit()
        self.autosave()

    def set_workload(self, workload: dict, options: dict, plans: dict, current: str | None) -> None:
        self.session.workload, self.session.options = dict(workload), dict(options)
        self.session.measurements = {}
        self.selection, self.instruction = None, None
        self.workloadChanged.emit()
        self.set_plans(plans, current)

    def set_current(self, name: str) -> None:
        if name in self.session.plans and name != self.session.current:
            self.session.current = name
            self.currentChanged.emit()
            self.autosave()

    def select(self, value: str | None) -> None:
        if value != self.selection:
            self.selection = value
            self.selectionChanged.emit(value or "")

    def select_instruction(self, index: int | None) -> None:
        if index != self.instruction:
            self.instruction = index
            self.instructionChanged.emit(-1 if index is None else index)

    def set_measurement(self, name: str, report: dict) -> None:
        self.session.measurements[name] = report
        self.measurementsChanged.emit(name)

    def reject(self, reason: str) -> None:
        """An edit that could not be applied: shown, nothing changed."""
        self.rejection = reason
        self.planChanged.emit(self.session.current or "")

    def autosave(self) -> None:
        if not self.autosave_enabled:
            return
        try:
            save_session(self.session)
        except OSError as e:
            notify(f"autosave failed: {e}")
