"""Starting the window: ``regtune``, ``regtune gui [PLAN]`` and ``regtune screenshot``.

Invariant: this is the only entry point that creates a QApplication; the
headless commands of gui/cli/ import it only when asked for the window.
"""

from __future__ import annotations

import sys

from engine.errors import RegtuneError
from gui.qt.display import check_display

VIEW_TABS = {"timeline": 0, "graph": 1, "compare": 2, "sass": 3, "sweep": 4}


def application():
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("RegTune")
    return app


def run_gui(plan_path: str | None = None) -> int:
    check_display()
    app = application()
    from gui.qt.qt_main_window import QtMainWindow

    window = QtMainWindow(restore=None if plan_path is None else False)
    if plan_path:
        window.open_plan(plan_path)
    window.show()
    return app.exec()


def screenshot(out: str, plan_path: str | None = None, view: str = "timeline", size=(1500, 950),
               workload: dict | None = None, options: dict | None = None, build: bool = False,
               current: str | None = None, select: str | None = None) -> str:
    """Render the window offscreen to ``out`` (PNG); ``view`` is a tab name or 'all' (the whole window).
    ``build`` runs Build & measure first (the SASS and compare views need it)."""
    if view not in (*VIEW_TABS, "all"):
        raise RegtuneError(f"unknown view {view!r} (timeline, graph, compare, sass, sweep, all)")
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    check_display()
    app = application()
    from gui.qt.qt_main_window import QtMainWindow

    window = QtMainWindow(autosave=False, restore=False, start_jobs=False)
    window.resize(*size)
    if plan_path:
        if not window.open_plan(plan_path):
            raise RegtuneError(window.last_error or f"{plan_path}: cannot open")
        window.wait_for_jobs()
    else:
        window.allocate_now(workload or window.doc.session.workload, options or window.doc.session.options)
    from engine.jobs import NullProgress
    from gui.qt.qt_main_window import _doctor_job

    window.toolchain_label.setText(_doctor_job(NullProgress()))
    if current:
        window.doc.set_current(current)
    if select:
        window.doc.select(select)
    if build:
        window.build_and_measure()
        try:
            window.wait_for_jobs()
        except BaseException:          # Ctrl+C, SIGTERM: the builds stop with their workers before we go
            window.jobs.cancel_all()
            from kernels.run import stop_workers

            stop_workers()
            window.jobs.wait(10000)
            raise
    window.flush()
    window.tabs.setCurrentIndex(VIEW_TABS.get(view, 0))
    window.show()
    for _ in range(5):
        app.processEvents()
    widget = window if view == "all" else window.tabs.currentWidget()
    if not widget.grab().save(out):
        raise RegtuneError(f"{out}: could not write the picture")
    window.dispose()
    return out
