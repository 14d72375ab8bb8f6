"""QtDocument: the Qt face of the Qt-free document (gui/model/document.py): its change events as Qt signals.

Invariant: this class holds no state and no logic of its own: every read
and change goes to ``self.model``, and every event the model emits is
re-emitted as the matching signal, once, in the model's order.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from gui.model.document import Document
from gui.model.session import Session


class QtDocument(QObject):
    """Signals: ``plansChanged`` (the list), ``planChanged(name)``, ``currentChanged``, ``workloadChanged``,
    ``selectionChanged(value or "")``, ``instructionChanged(index or -1)``, ``measurementsChanged(name)``."""

    plansChanged = Signal()
    planChanged = Signal(str)
    currentChanged = Signal()
    workloadChanged = Signal()
    selectionChanged = Signal(str)
    instructionChanged = Signal(int)
    measurementsChanged = Signal(str)

    def __init__(self, session: Session | None = None, autosave: bool = True, parent=None):
        super().__init__(parent)
        self.model = Document(session, autosave)
        events = self.model.events
        events.plans.connect(self.plansChanged.emit)
        events.plan.connect(self.planChanged.emit)
        events.current.connect(self.currentChanged.emit)
        events.workload.connect(self.workloadChanged.emit)
        events.selection.connect(lambda value: self.selectionChanged.emit(value or ""))
        events.instruction.connect(lambda index: self.instructionChanged.emit(-1 if index is None else index))
        events.measurements.connect(self.measurementsChanged.emit)

    def __getattr__(self, name: str):
        """Reads and calls go to the model (``session``, ``plan``, ``selection``, ``conflicts()``, ``set_plan()``...)."""
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)

    @property
    def session(self) -> Session:
        return self.model.session

    @session.setter
    def session(self, session: Session) -> None:
        self.model.replace_session(session)

    @property
    def autosave_enabled(self) -> bool:
        return self.model.autosave_enabled

    @autosave_enabled.setter
    def autosave_enabled(self, value: bool) -> None:
        self.model.autosave_enabled = value

    @property
    def autosave_file(self):
        return self.model.autosave_file

    @autosave_file.setter
    def autosave_file(self, path) -> None:
        self.model.autosave_file = path
