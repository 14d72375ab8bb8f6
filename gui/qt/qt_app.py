"""Starting the window: ``regtune``, ``regtune gui [PLAN]`` and ``regtune screenshot``.

Invariant: this is the only entry point that creates a QApplication, and it installs the Qt message filter
(:func:`install_message_filter`) first; the headless commands of gui/cli/ import it only when asked for the
window.
"""

from __future__ import annotations

import sys

from engine.base.errors import RegtuneError
from gui.qt.display import check_display

VIEW_TABS = {"timeline": 0, "graph": 1, "compare": 2, "sass": 3, "sweep": 4, "diff": 5, "store": 6}


#: Qt messages that say nothing to a user: the offscreen platform's, printed on every offscreen run
NOISE = ("This plugin does not support propagateSizeHints()",)


def drop_noise(previous=None):
    """A Qt message handler that drops the messages of :data:`NOISE` and hands every other to ``previous``
    (a handler installed before, such as pytest-qt's) or, without one, prints it on stderr as Qt does."""
    def handle(kind, context, message: str) -> None:
        if message in NOISE:
            return
        if previous is not None:
            previous(kind, context, message)
        else:
            print(message, file=sys.stderr)
    return handle


def install_message_filter() -> None:
    """Install :func:`drop_noise` once per process, before the QApplication is made."""
    from PySide6.QtCore import qInstallMessageHandler

    global _filter_installed
    if not _filter_installed:
        previous = qInstallMessageHandler(None)       # None: Qt's own; returns what was installed
        qInstallMessageHandler(drop_noise(previous))
        _filter_installed = True


_filter_installed = False


def application():
    from PySide6.QtWidgets import QApplication

    install_message_filter()
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


def _choose(window, current: str | None, select: str | None) -> None:
    """Make plan ``current`` current and select value ``select`` (``%name`` or ``name``); an unknown one is a
    one-line error naming it (and, for a plan, the plans there are), raised before anything changes."""
    plans = window.doc.session.plans
    if current is not None and current not in plans:
        raise RegtuneError(f"--plan-name {current!r}: no such plan (the plans: {', '.join(plans)})")
    shown = current or window.doc.session.current
    name = select[1:] if select and select.startswith("%") else select
    if select is not None and name not in window.doc.analysis(plans[shown]).index:
        raise RegtuneError(f"--select {select}: the {shown} plan's program has no value %{name}")
    if current is not None:
        window.doc.set_current(current)
    if select is not None:
        window.doc.select(name)


def _mark_register(window, current: str | None, text: str | None) -> None:
    """Mark the values register ``text`` (``R5`` or ``5``) holds in the graph view; a register plan ``current``
    (the current one by default) does not use is a one-line error."""
    if text is None or (current is not None and current not in window.doc.session.plans):
        return                                          # an unknown plan: _choose names it
    name = current or window.doc.session.current
    used = sorted({r for regs in window.doc.session.plans[name].assignment.values() for r in regs})
    number = text[1:] if text[:1] in ("R", "r") else text
    if not number.isdigit() or int(number) not in used:
        uses = f"it uses R{used[0]}..R{used[-1]}" if used else "it uses none"
        raise RegtuneError(f"--register {text}: the {name} plan puts no value in such a register ({uses})")
    window.graph.register = int(number)


def screenshot(outs, plan_path: str | None = None, view: str = "timeline", size=(1500, 950),
               workload: dict | None = None, options=None, build: bool = False,
               current: str | None = None, select: str | None = None, register: str | None = None,
               instruction: int | None = None, store: str | None = None, store_filter: str | None = None):
    """Render the window offscreen to PNGs: ``outs`` is a path (of ``view``, a tab name or 'all', the whole
    window; the path is returned) or a list of (view, path) (the list of paths is returned). ``build`` runs
    Build & measure first (the SASS and compare views need it); ``instruction`` selects one of the plan's
    instructions (the SASS view marks the SASS instructions it became)."""
    single = isinstance(outs, str)
    outs = [(view, outs)] if single else list(outs)
    for shown, _path in outs:
        if shown not in (*VIEW_TABS, "all"):
            raise RegtuneError(f"unknown view {shown!r} (timeline, graph, compare, sass, sweep, diff, store, all)")
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
    from engine.base.jobs import NullProgress
    from gui.qt.qt_main_window import _doctor_job

    window.toolchain_label.setText(_doctor_job(NullProgress()))
    try:
        _mark_register(window, current, register)      # checks first: nothing has changed when one fails
        _choose(window, current, select)
        _choose_instruction(window, instruction)
    except RegtuneError:
        window.dispose()
        raise
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
    if store:
        window.sweep_view.open_store(store, store_filter)
    window.flush()
    window.live.now()                  # the live ptxas figures of the plan shown, as the window has them
    arch = options.arch if options is not None else None
    if arch:
        window.sass_view.arch.setCurrentText(arch)
    window.show()
    try:
        for shown, out in outs:
            _grab(app, window, shown, out)
    finally:
        window.dispose()
    return outs[0][1] if single else [out for _v, out in outs]


def _grab(app, window, view: str, out: str) -> None:
    """One picture: the tab ``view`` (the timeline's for 'all') shown, and the window or that tab grabbed."""
    window.tabs.setCurrentIndex(VIEW_TABS.get(view, 0))
    for _ in range(5):
        app.processEvents()
    widget = window if view == "all" else window.tabs.currentWidget()
    if not widget.grab().save(out):
        raise RegtuneError(f"{out}: could not write the picture")


def _choose_instruction(window, index: int | None) -> None:
    """Select the current plan's instruction ``index`` (a one-line error when the plan has no such one)."""
    if index is None:
        return
    count = len(window.doc.plan.program.instructions)
    if not 0 <= index < count:
        raise RegtuneError(f"--instruction {index}: the {window.doc.session.current} plan has instructions "
                           f"0..{count - 1}")
    window.doc.select_instruction(index)
