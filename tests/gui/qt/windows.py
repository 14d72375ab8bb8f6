"""A real RegTune window for the window tests (pytest-qt, offscreen): shown, sized, a GEMM config allocated."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from engine.workloads import BuildOptions
from gui.qt.qt_main_window import QtMainWindow


def open_window(qtbot, m: int, n: int, k: int, options: dict, current: str | None = None) -> QtMainWindow:
    """A window on GEMM MxNxK built with ``options`` (:class:`engine.workloads.BuildOptions` fields), its four
    allocators' plans made, ``current`` shown."""
    w = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(w)
    w.resize(1500, 950)
    w.show()
    w.allocate_now({"kind": "gemm", "m": m, "n": n, "k": k, "dtype": "f32"}, BuildOptions(**options))
    if current is not None:
        w.doc.set_current(current)
    QApplication.processEvents()
    return w
