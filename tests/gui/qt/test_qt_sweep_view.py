"""The Sweep store view in a real window (pytest-qt, offscreen): a real SQLite store read, the heatmap's cells
are the rows' figures, real mouse events hover and double-click a cell, the filter box refuses a bad expression
in one line and keeps the view, the worst-configs table opens its rows."""

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.alloc import ALLOCATORS
from engine.store import open_store
from tests.gui.qt.windows import open_window
from tests.sweep_fixture import gemm_rows

#: the store's rows: 19 configs, one row per allocator
ALL = 19 * len(ALLOCATORS)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "s.sqlite"
    with open_store(path) as s:
        s.put(gemm_rows([(m, n, k) for m in (2, 3, 5) for n in (2, 4, 5) for k in (2, 4)]
                            + [(16, 16, 16)]))         # naive spills there
    return path


@pytest.fixture
def window(qtbot, store):
    w = open_window(qtbot, 2, 2, 2, {})
    w.tabs.setCurrentWidget(w.sweep_view)
    w.open_store(store)
    QApplication.processEvents()
    return w


def _point(view, i, j):
    return view.plot.mapFromScene(view.cell_centre(i, j))


def test_the_heatmap_cells_are_the_rows_figures(window, store):
    v = window.sweep_view
    assert v.store_label.text() == f"store {store}: {ALL} rows of {ALL} (no filter)"
    v.slice_boxes["allocator"].setCurrentIndex(v.slice_boxes["allocator"].findData("dsatur"))
    v.slice_boxes["k"].setCurrentIndex(v.slice_boxes["k"].findData(4))
    v.redraw()
    c = v.cells
    assert c.xs == [2, 3, 5, 16] and c.ys == [2, 4, 5, 16] and c.shown == 9
    with open_store(store, readonly=True) as s:
        want = {(r["m"], r["n"]): r["registers"] for r in s.rows("k == 4 and allocator == 'dsatur'")}
    got = {(x, y): c.values[i, j] for i, y in enumerate(c.ys) for j, x in enumerate(c.xs) if c.rows[i][j]}
    assert got == want
    assert np.array_equal(v.image.image, c.values, equal_nan=True)          # the one ImageItem shows the grid
    v.figure.setCurrentIndex(v.figure.findData("ptxas_registers"))
    v.redraw()
    assert np.isnan(c.values[3]).all() and np.isnan(v.cells.values).all() and "0 of 16 cells have a ptxas registers figure" in v.caption.text()


def test_hover_names_the_config_and_a_double_click_opens_it(window, qtbot):
    v = window.sweep_view
    v.slice_boxes["k"].setCurrentIndex(v.slice_boxes["k"].findData(4))
    v.redraw()
    i, j = v.cells.ys.index(5), v.cells.xs.index(3)
    point = _point(v, i, j)
    QTest.mouseMove(v.plot.viewport(), point)
    QApplication.processEvents()
    assert v.hover.text().startswith("gemm 3x5x4  (tile ")
    assert f"> planned registers: {int(v.cells.values[i, j])}" in v.hover.text()
    with qtbot.waitSignal(v.configRequested, timeout=3000) as opened:
        QTest.mouseDClick(v.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    assert opened.args[0]["config"] == "gemm 3x5x4"
    window.wait_for_jobs()
    QApplication.processEvents()
    assert window.doc.session.workload == {"kind": "gemm", "m": 3, "n": 5, "k": 4, "dtype": "f32"}
    assert window.tabs.currentWidget() is window.timeline


def test_a_bad_filter_shows_its_error_and_keeps_the_view(window):
    v = window.sweep_view
    before = v.cells.values.copy()
    v.filter.setText("m <= ")
    QTest.keyClick(v.filter, Qt.Key.Key_Return)
    assert v.filter_error.isVisible() and v.filter_error.text().startswith("filter 'm <=' at column")
    assert "\n" not in v.filter_error.text() and len(v.rows) == ALL
    assert np.array_equal(v.cells.values, before, equal_nan=True)
    v.filter.setText("m <= 3 and allocator != 'naive'")
    QTest.keyClick(v.filter, Qt.Key.Key_Return)
    assert not v.filter_error.isVisible() and len(v.rows) == 12 * (len(ALLOCATORS) - 1) and v.cells.xs == [2, 3]
    assert f"{12 * (len(ALLOCATORS) - 1)} rows of {ALL} selected by \"m <= 3 and allocator != 'naive'\"" in v.store_label.text()


def test_the_worst_table_lists_the_most_spills_and_opens_a_row(window, qtbot, tmp_path):
    v = window.sweep_view
    table = v.worst_tables["planned spills"]
    shown = v.worst_shown["planned spills"]
    assert shown and [r["spilled"] for r in shown] == sorted((r["spilled"] for r in shown), reverse=True)
    assert table.item(0, 0).text() == shown[0]["config"] and int(table.item(0, 1).text()) == shown[0]["spilled"]
    with qtbot.waitSignal(v.configRequested, timeout=3000) as opened:
        table.cellDoubleClicked.emit(0, 0)
    assert opened.args[0] is shown[0]
    assert v.grab().save(str(tmp_path / "sweep.png"))


def test_the_store_tab_fits_a_1280x800_window(qtbot, tmp_path):
    """A compiled store's slice row (k, schedule, allocator, budget, arch, cap, toolchain) and the three worst
    tabs once set the tab's minimum width to 1220 px: a 1280x800 window grew to 1795 px wide."""
    path = tmp_path / "compiled.sqlite"
    rows = gemm_rows([(m, n, 4) for m in (2, 3) for n in (2, 3)])
    with open_store(path) as s:
        s.put([{**r, "arch": arch, "cap": cap, "toolchain": "release 13.5, V13.5.37"}
               for r in rows for arch in ("sm_80", "sm_90") for cap in ("none", "plan")])
    w = open_window(qtbot, 2, 2, 2, {})
    w.resize(1280, 800)
    w.tabs.setCurrentWidget(w.sweep_view)
    w.open_store(path)
    w.show()
    QApplication.processEvents()
    assert len(w.sweep_view.slice_boxes) >= 6
    assert w.sweep_view.minimumSizeHint().width() < 700
    assert w.width() == 1280
    placeholder = w.sweep_view.filter.placeholderText()
    assert w.sweep_view.filter.width() >= w.sweep_view.filter.fontMetrics().horizontalAdvance(placeholder)


def test_an_empty_worst_table_says_none_on_its_tab(window):
    v = window.sweep_view
    texts = [v.worst.tabText(i) for i in range(v.worst.count())]
    assert texts[0] == "planned spills"              # naive spills at gemm 16x16x16
    assert "ptxas spills: none" in texts             # no row of this store was compiled


def test_a_filter_that_keeps_no_row_says_so_and_draws_nothing(window):
    """It raised ZeroDivisionError in pyqtgraph (an empty image's rect); the screenshot command died with a
    traceback, the window with an exception in the slot."""
    v = window.sweep_view
    v.filter.setText("m == 99")
    v.apply_filter()
    assert v.filter_error.isHidden()
    assert v.store_label.text().endswith(f"0 rows of {ALL} selected by 'm == 99'")
    assert v.caption.text() == "no gemm rows selected by 'm == 99': nothing to draw"
    assert not v.colorbar.isVisible()     # no invented 0..1 scale
    v.filter.setText("")
    v.apply_filter()                      # and back: every row drawn again
    assert "rows in this slice" in v.caption.text() and v.colorbar.isVisible()
