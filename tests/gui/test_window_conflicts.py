"""A conflict in the real window (pytest-qt, offscreen): it stands out whatever the role colours, it is named in
full and clicking it selects what conflicts; the window opens on the best verified plan and says so."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from engine.alloc.hand import Assign
from engine.analysis.liveness import analyze
from gui.qt.qt_timeline import CONFLICT_COLOUR
from tests.gui.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


def _conflicting(window, value: str = "a_3_1"):
    """Put ``value`` on the register of an accumulator live beside it (the issue's %a_4_1 on %acc_5_5's R48)."""
    plan = window.doc.plan
    busy = next(n for n in analyze(plan.program).interference.graph.neighbors(value) if n.startswith("acc"))
    window.edit(Assign(value, plan.assignment[busy]))
    QApplication.processEvents()
    return busy


@pytest.fixture
def broken(qtbot):
    window = open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")
    return window, _conflicting(window)


def _pixels(widget, rect) -> list[QColor]:
    image = widget.grab().toImage()
    return [image.pixelColor(x, y) for x in range(int(rect.left()), int(rect.right()))
            for y in range(int(rect.top()), int(rect.bottom()))]


def test_conflicting_bars_are_hatched_and_outlined_in_a_colour_no_role_has(broken):
    window, busy = broken
    t = window.timeline
    item = t.conflict_item
    assert item.opts["brush"].style() == Qt.BrushStyle.BDiagPattern
    bars = t.data.conflict_bars(window.doc.conflicts())
    assert len(item.opts["x0"]) == len(bars) > 0
    # zoomed in on the conflicting register where the two values meet: the hatch and the outline are drawn
    at = window.doc.conflicts()[0]
    row = float(window.doc.plan.assignment[busy][0])
    t.plot.setXRange(at.instruction - 3, at.instruction + 4, padding=0)
    t.plot.setYRange(row - 2, row + 2, padding=0)
    QApplication.processEvents()
    vb = t.view
    top_left = t.layout_.mapFromScene(vb.mapViewToScene(QPointF(at.instruction, row - 0.45)))
    bottom_right = t.layout_.mapFromScene(vb.mapViewToScene(QPointF(at.instruction + 1, row + 0.45)))
    from PySide6.QtCore import QRect

    seen = _pixels(t.layout_, QRect(top_left, bottom_right))
    magenta = QColor(CONFLICT_COLOUR)
    assert any(abs(c.red() - magenta.red()) + abs(c.green() - magenta.green()) + abs(c.blue() - magenta.blue()) < 60
               for c in seen)
    assert any(min(c.red(), c.green(), c.blue()) > 200 for c in seen)        # the white hatch


def test_the_pressure_strip_marks_the_conflicting_instruction(broken):
    window, _busy = broken
    t = window.timeline
    at = sorted({c.instruction for c in window.doc.conflicts()})
    x, y = t.conflict_marks.getData()
    assert x.tolist() == [i + 0.5 for i in at]
    assert y.tolist() == [float(t.data.pressure[i]) for i in at]
    assert t.conflict_columns.opts["x0"].tolist() == [float(i) for i in at]
    window.undo_action.trigger()
    window.flush()
    assert len(t.conflict_marks.getData()[0]) == 0 and len(t.conflict_columns.opts["x0"]) == 0


def _fits_in(view, item) -> bool:
    """Every line of ``item``'s text is as wide as the list's viewport at most, beside its icon."""
    fm = view.fontMetrics()
    icon = view.iconSize().width() + 8 if not item.icon().isNull() else 0
    return all(fm.horizontalAdvance(line) + icon <= view.viewport().width() for line in item.text().split("\n"))


def test_the_plans_list_badges_a_broken_plan_and_counts_its_conflicts_in_words(broken):
    window, _busy = broken
    view = window.plans_list.list
    rows = {view.item(i).data(Qt.ItemDataRole.UserRole): view.item(i) for i in range(view.count())}
    item = rows["hand 1"]
    assert item.text().endswith("BROKEN: 1 conflict") and not item.icon().isNull()
    assert "1 conflict" in item.toolTip() and window.doc.conflicts()[0].message in item.toolTip()
    assert all(rows[n].icon().isNull() and "BROKEN" not in rows[n].text() for n in rows if n != "hand 1")
    assert all(_fits_in(view, i) for i in rows.values())
    _conflicting(window, "a_3_2")
    item = next(view.item(i) for i in range(view.count()) if view.item(i).data(Qt.ItemDataRole.UserRole) == "hand 1")
    count = len(window.doc.conflicts())
    assert count >= 2 and item.text().endswith(f"BROKEN: {count} conflicts") and _fits_in(view, item)
    assert window.status_text.text().endswith(f"BROKEN: {count} conflicts")
    assert window.conflicts.status.text().startswith(f"BROKEN: {count} conflicts")


def _tabs_all_shown(tabs) -> bool:
    bar = tabs.tabBar()
    return all(bar.tabRect(i).right() <= bar.width() and bar.tabRect(i).width() >= bar.fontMetrics()
               .horizontalAdvance(bar.tabText(i)) for i in range(bar.count()))


def test_the_conflict_text_reads_in_full_in_a_tab_no_arrow_hides(broken):
    window, _busy = broken
    assert window.edit_tabs.tabText(window.edit_tabs.indexOf(window.conflicts)) == "Conflicts"
    window.edit_tabs.setCurrentWidget(window.conflicts)
    QApplication.processEvents()
    for tabs in (window.side_tabs, window.edit_tabs):
        assert tabs.isVisible() and _tabs_all_shown(tabs), [tabs.tabText(i) for i in range(tabs.count())]
    view = window.conflicts.list
    item = view.item(0)
    message = window.doc.conflicts()[0].message
    assert item.text() == message == item.toolTip()
    rect = view.visualItemRect(item)
    needed = view.fontMetrics().boundingRect(0, 0, view.viewport().width(), 10000, Qt.TextFlag.TextWordWrap,
                                             message)
    assert rect.right() <= view.viewport().width() and rect.height() >= needed.height() > view.fontMetrics().height()


def test_a_plan_that_turns_broken_brings_the_conflicts_tab_forward(qtbot):
    window = open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")
    window.edit_tabs.setCurrentWidget(window.history)
    _conflicting(window)
    assert window.edit_tabs.currentWidget() is window.conflicts
    bar = window.edit_tabs.tabBar()
    assert bar.tabTextColor(window.edit_tabs.indexOf(window.conflicts)) == QColor("#d62728")


def test_clicking_a_conflict_selects_both_values_and_the_instruction(broken):
    from PySide6.QtTest import QTest

    window, busy = broken
    window.edit_tabs.setCurrentWidget(window.conflicts)
    QApplication.processEvents()
    conflict = window.doc.conflicts()[0]
    assert set(conflict.values) == {"a_3_1", busy}
    view = window.conflicts.list
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     view.visualItemRect(view.item(0)).center())
    QApplication.processEvents()
    assert window.doc.selected == tuple(conflict.values) and window.doc.instruction == conflict.instruction
    drawn = window.timeline.select_item.opts
    bars = window.timeline.data.selection_bars(conflict.values)
    assert len(drawn["x0"]) == len(bars) > len(window.timeline.data.selection_bars(conflict.values[0]))
    assert sorted(window.table.selected_names()) == sorted(conflict.values)
    assert window.instructions.list.currentRow() == conflict.instruction
    assert window.why.report.index == conflict.instruction


def test_the_window_opens_on_the_best_verified_plan_and_says_which(qtbot):
    from gui.qt.qt_main_window import QtMainWindow

    window = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(window)
    window.show()
    window.allocate_now({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"}, {"tile": [4, 4]})
    plans = window.doc.session.plans
    figures = {n: (p.predicted["registers"], p.predicted["spilled_values"]) for n, p in plans.items()}
    best = min(figures.values())
    current = window.doc.session.current
    assert figures[current] == best and figures["naive"] > best
    assert list(plans).index(current) == min(list(plans).index(n) for n in plans if figures[n] == best)
    assert f"showing {current}: of 4 verified plans, the fewest registers ({best[0]}), then spills ({best[1]})" \
        in window.status_text.text()
    window.doc.set_current("naive")
    window.flush()
    assert "showing" not in window.status_text.text()
