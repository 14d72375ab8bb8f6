"""QtLiveFigures: ptxas on the plan being edited, live: after every edit (debounced, in the background, the
result of an older edit dropped), the plan PTX's registers and spills at the plan's cap and with no cap, and
its SASS MAXLIVE, per arch (:func:`gui.model.live.live_lines`).

Invariant: it shows only figures of the plan that is current when they arrive; the full Build & measure
(the Numba kernel, the simulator) stays its own explicit action.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from engine.analysis.liveness import analyze
from engine.ir.spill import remove_spill_code
from engine.plan import Plan, registers_used
from gui.model.live import live_lines, partial_lines
from gui.qt.qt_jobs import QtJobRunner

#: edit to request: a run of edits (an undo held down, a drag) asks ptxas once
DEBOUNCE_MS = 150


def _live_job(progress, plan: Plan, archs: tuple) -> tuple:
    """The plan PTX's figures (or why there are none) and the plan's MAXLIVE (its program without spill code);
    each ptxas figure goes to ``progress.partial`` as it arrives, before the SASS is read."""
    from kernels.pipeline import plan_ptx_or_why

    heard = getattr(progress, "partial", None)
    return plan_ptx_or_why(plan, archs, on_ptxas=None if heard is None else lambda *f: heard(f)), \
        analyze(remove_spill_code(plan.program, plan.spills)).maxlive


class QtLiveFigures(QWidget):
    """The panel: a title and the lines, selectable, word-wrapped, each line's full text in the tooltip."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel("<b>Live ptxas</b> (the plan's own PTX)")
        self.text = QLabel("no plan yet")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        self.lines: list[str] = []

    def pending(self, name: str) -> None:
        self.text.setText(f"{name}: ptxas running on the plan's PTX..." if not self.lines
                          else "\n".join(self.lines) + f"\n({name}: updating...)")

    def show_lines(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self.text.setText("\n".join(lines))
        self.setToolTip("\n".join(lines))


class LiveFigures(QObject):
    """The debounce and the background job between the window's document and the panel."""

    def __init__(self, window, panel: QtLiveFigures, archs: tuple, enabled: bool = True):
        super().__init__(window)
        self.window, self.panel, self.archs, self.enabled = window, panel, tuple(archs), enabled
        self.jobs = QtJobRunner(self)          # its own pool: never the window's busy state or Cancel
        self.jobs.pool.setMaxThreadCount(1)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._start)
        self.shown: tuple | None = None        # (plan, seconds, figures) last shown
        self.edited_at = 0.0
        self.heard: dict = {}                  # (arch, cap) -> PtxasFigures of the request running now
        self.first_seconds: float | None = None   # edit to the first ptxas figure of the plan shown

    def plan_changed(self) -> None:
        plan = self.window.doc.plan
        if not self.enabled or plan is None or (self.shown is not None and self.shown[0] is plan):
            return
        self.edited_at = time.monotonic()
        self.panel.pending(self.window.doc.session.current or "plan")
        self.timer.start(DEBOUNCE_MS)

    def _start(self) -> None:
        plan = self.window.doc.plan
        if plan is None:
            return
        asked = (plan, self.edited_at)
        self.heard, self.first_seconds = {}, None
        self.jobs.start("live-ptx", _live_job, (plan, self.archs), on_done=lambda r: self._done(asked, r),
                        on_error=lambda m, _d: self._done(asked, None, m),
                        on_partial=lambda f: self._partial(asked, f))

    def _partial(self, asked: tuple, figure: tuple) -> None:
        """One ptxas figure of the running request (arch, cap, PtxasFigures), shown before the rest arrives."""
        plan, edited = asked
        if self.window.doc.plan is not plan:
            return
        arch, cap, at = figure
        self.heard[arch, cap] = at
        if self.first_seconds is None:
            self.first_seconds = time.monotonic() - edited
        self.panel.show_lines(partial_lines(self.heard, self.archs, registers_used(plan.assignment),
                                            time.monotonic() - edited))

    def _done(self, asked: tuple, result, error: str | None = None) -> None:
        plan, edited = asked
        if self.window.doc.plan is not plan:
            return                              # an older edit's figures: the newer request is on its way
        seconds = time.monotonic() - edited
        if result is None:
            self.panel.show_lines([f"plan PTX: {error}"])
            return
        figures, maxlive = result
        self.shown = (plan, seconds, figures)
        self.panel.show_lines(live_lines(figures, registers_used(plan.assignment), maxlive, seconds))

    def now(self) -> None:
        """The current plan's figures, computed here and shown (for a screenshot: no event loop to wait in)."""
        plan = self.window.doc.plan
        if plan is not None:
            asked = (plan, time.monotonic())
            try:
                self._done(asked, _live_job(None, plan, self.archs))
            except Exception as e:  # noqa: BLE001 - shown as the job's failure would be
                self._done(asked, None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)

    def wait(self, msecs: int = 60000) -> bool:
        return self.jobs.wait(msecs)
