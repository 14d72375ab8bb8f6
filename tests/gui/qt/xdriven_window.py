"""The real window on a real X display, for tests/gui/test_xvfb.py: it says where to click, and what a click did.

Run as ``python -m tests.gui.qt.xdriven_window`` with DISPLAY set (Xvfb). It opens the window on GEMM 4x4x4 (its
plans made in the foreground), prints ``READY <x> <y> <plan>`` with the screen position of the naive plan's entry
in the plans list and the plan shown, then waits for a click from outside (xdotool); when the current plan
changes it prints ``CURRENT <plan>`` and quits. Nothing here sends an event: the click comes from the X server.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QTimer


def main() -> int:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    from engine.base.errors import RegtuneError
    from gui.qt.display import check_display

    try:
        check_display()          # a missing xcb library is one line here, not Qt's abort
    except RegtuneError as e:
        print(f"NO-WINDOW {e}", flush=True)
        return 2
    from gui.qt.qt_app import application
    from gui.qt.qt_main_window import QtMainWindow
    from engine.workloads import BuildOptions

    app = application()
    window = QtMainWindow(restore=False, start_jobs=False, autosave=False)
    window.resize(1280, 800)
    window.move(0, 0)
    window.allocate_now({"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}, BuildOptions())
    window.show()
    window.raise_()
    window.activateWindow()
    before = window.doc.session.current

    def ready():
        view = window.plans_list.list
        row = list(window.doc.session.plans).index("naive")
        centre = view.visualItemRect(view.item(row)).center()
        point = view.viewport().mapToGlobal(centre)
        print(f"READY {point.x()} {point.y()} {before}", flush=True)

    def watch():
        if window.doc.session.current != before:
            print(f"CURRENT {window.doc.session.current}", flush=True)
            app.quit()

    QTimer.singleShot(1500, ready)         # mapped and laid out on the X server by then
    poll = QTimer()
    poll.timeout.connect(watch)
    poll.start(50)
    QTimer.singleShot(60_000, app.quit)    # never left running
    code = app.exec()
    window.dispose()
    return code


if __name__ == "__main__":
    sys.exit(main())
