"""The side tables at the default size (1500x950) in the real window (pytest-qt, offscreen): the columns a task
needs are on screen and read in full, names sort as a reader counts, and the toolbar keeps still."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolBar

from engine.alloc.hand import Move
from engine.workloads import BuildOptions
from gui.model.registers import natural_key
from gui.qt.qt_main_window import QtMainWindow
from tests.gui.qt.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


def _click_tab(tabs, widget) -> None:
    bar = tabs.tabBar()
    QTest.mouseClick(bar, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     bar.tabRect(tabs.indexOf(widget)).center())
    QApplication.processEvents()


def _column_shown(view, column: int, texts) -> bool:
    """Column ``column`` lies inside the viewport and is as wide as its widest text."""
    right = view.columnViewportPosition(column) + view.columnWidth(column)
    widest = max(view.fontMetrics().horizontalAdvance(t) for t in texts)
    return right <= view.viewport().width() and view.columnWidth(column) >= widest


@pytest.mark.parametrize("size", [(1500, 950), (1280, 800)])
def test_the_allocation_tables_value_and_register_columns_are_on_screen(qtbot, size):
    window = open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")
    window.resize(*size)
    _click_tab(window.side_tabs, window.table)
    assert window.side_tabs.currentWidget() is window.table
    view, model = window.table.view, window.table.model_
    names = [model.data(model.index(r, 0)) for r in range(model.rowCount())]
    assert names and all(n.startswith("%") for n in names)           # values as the IR spells them
    for column in (0, 1):
        texts = [model.headerData(column, Qt.Orientation.Horizontal)] + \
                [model.data(model.index(r, column)) for r in range(model.rowCount())]
        assert _column_shown(view, column, texts), (column, view.columnWidth(column), view.viewport().width())
    assert model.headerData(1, Qt.Orientation.Horizontal) == "registers"
    shown = [view.model().index(r, 0).data() for r in range(view.model().rowCount())]
    assert shown == sorted(shown, key=natural_key)                    # by value at the start, ascending
    tile = window.workload_panel.forms["gemm"].tile
    assert tile.width() >= tile.fontMetrics().horizontalAdvance(tile.currentText()) + 24   # the field reads whole


def test_sorting_the_allocation_table_by_value_is_natural(qtbot):
    window = open_window(qtbot, 4, 4, 12, {"tile": [4, 4]}, "dsatur")
    view = window.table.view
    _click_tab(window.side_tabs, window.table)
    header = view.horizontalHeader()
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     _section_centre(header, 0))          # sort by value, as a user does
    QApplication.processEvents()
    assert header.sortIndicatorSection() == 0
    shown = [view.model().index(r, 0).data() for r in range(view.model().rowCount())]
    if header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder:
        shown.reverse()
    assert shown == sorted(shown, key=natural_key) != sorted(shown)


def _section_centre(header, section):
    from PySide6.QtCore import QPoint

    return QPoint(header.sectionViewportPosition(section) + header.sectionSize(section) // 2, header.height() // 2)


@pytest.fixture(scope="module")
def mha_window(qapp):
    window = QtMainWindow(restore=False, start_jobs=False, autosave=False)
    window.resize(1500, 950)
    window.show()
    window.allocate_now({"kind": "mha", "heads": 32, "batch": 64, "head_dim": 64, "groups": 4, "seq_len": 2048,
                         "dtype": "f32"}, BuildOptions())
    QApplication.processEvents()
    yield window
    window.dispose()


def test_why_this_many_shows_its_register_column_whole_and_sorts_values_naturally(mha_window):
    tree = mha_window.why.tree
    rows = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    values = [item.text(0) for item in rows]
    assert "%s_3_14" in values and "%s_3_2" in values
    assert values == sorted(values, key=natural_key) != sorted(values)      # %s_3_2 before %s_3_14
    assert tree.headerItem().text(1) == "register"
    assert _column_shown(tree, 1, [tree.headerItem().text(1)] + [item.text(1) for item in rows])
    assert all(item.toolTip(1) == item.text(1) for item in rows)


def test_undo_and_redo_buttons_keep_one_word_so_build_and_measure_stays_put(qtbot):
    window = open_window(qtbot, 4, 4, 4, {}, "dsatur")
    bar = window.findChild(QToolBar)
    undo, build = bar.widgetForAction(window.undo_action), bar.widgetForAction(window.build_action)
    x = build.x()
    window.edit(Move(30, 29))
    QApplication.processEvents()
    assert undo.text() == "Undo" and bar.widgetForAction(window.redo_action).text() == "Redo"
    assert build.x() == x
    assert undo.toolTip() == window.undo_action.text() == f"Undo {window.stack.undoText()}"
    assert "move instruction 30 to 29" in undo.toolTip()
    history = window.history.model()
    assert "move instruction 30 to 29" in history.index(history.rowCount() - 1, 0).data()
    window.undo_action.trigger()
    QApplication.processEvents()
    assert build.x() == x and bar.widgetForAction(window.redo_action).text() == "Redo"


def test_mha_values_are_named_q_k_v_scores_softmax_state_and_output(qtbot):
    """Issue 22: MHA values were labelled 'A fragment / B fragment / accumulator'."""
    window = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(window)
    window.resize(1500, 950)
    window.show()
    window.allocate_now({"kind": "mha", "heads": 32, "batch": 64, "head_dim": 64, "groups": 2, "seq_len": 2048,
                         "dtype": "f32"}, BuildOptions())
    _click_tab(window.tabs, window.timeline)
    legend = [label.text for _sample, label in window.timeline.legend.items]
    assert {"Q", "K", "V", "scores", "softmax state", "output"} <= set(legend)
    assert not {"A fragment", "B fragment", "accumulator"} & set(legend)
    _click_tab(window.side_tabs, window.table)
    model = window.table.view.model()
    role_column = next(c for c in range(model.columnCount())
                       if model.headerData(c, Qt.Orientation.Horizontal) == "role")
    roles = {model.index(r, 0).data(): model.index(r, role_column).data() for r in range(model.rowCount())}
    assert roles["%q_0_0"] == "Q" and roles["%k_0_0"] == "K" and roles["%v_0_0"] == "V"
    assert roles["%s_0_0"] == "scores" and roles["%m_0"] == "softmax state" and roles["%o_0_0"] == "output"
