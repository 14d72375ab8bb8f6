"""The *Tune* button beside the next-step line: a real click, each schedule edit an undo step, undo restores."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from engine.analysis.dependence import reordering_problem
from engine.analysis.liveness import analyze
from engine.plan import registers_used
from tests.gui.qt.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    w = open_window(qtbot, 4, 4, 4, {"schedule": "load-all-first"}, "dsatur")
    w.live.enabled = False                 # the live ptxas panel is tested on its own
    yield w
    w.close()


def test_tune_click_pushes_each_edit_and_undo_walks_back(qtbot, window):
    window.tabs.setCurrentWidget(window.compare)
    window.refresh_compare()
    before = window.doc.plan
    assert "free" in window.compare.next_step.text() and window.compare.tune_button.isEnabled()
    depth = window.stack.count()
    qtbot.mouseClick(window.compare.tune_button, Qt.MouseButton.LeftButton)
    window.wait_for_jobs()                 # the search runs in the background
    QApplication.processEvents()
    after = window.doc.plan
    assert window.doc.session.current.startswith("hand")
    assert registers_used(after.assignment) < registers_used(before.assignment)
    assert analyze(after.program).maxlive < analyze(before.program).maxlive
    assert reordering_problem(after.program, before.program) is None
    assert window.doc.conflicts() == []
    pushed = window.stack.count() - depth
    texts = [window.stack.text(i) for i in range(depth, window.stack.count())]
    assert pushed > 2 and "re-allocate with dsatur" in texts[-1] and "move instruction" in texts[1]
    assert "MAXLIVE" in window.last_tune and window.last_tune in window.status_text.text()
    window.stack.undo()                    # the re-allocation alone
    assert window.doc.plan.program == after.program and window.doc.plan.assignment != after.assignment
    window.stack.undo()                    # the last move alone
    assert window.doc.plan.program != after.program
    while window.stack.count() and window.stack.index() > depth:
        window.stack.undo()
    assert window.doc.session.plans["dsatur"] is before


def test_a_tune_of_a_plan_changed_meanwhile_applies_nothing(window):
    from engine.alloc.hand import Swap
    from engine.tune import tune

    name, plan = window.doc.session.current, window.doc.plan
    result = tune(plan, 32)
    window.edit(Swap(0, 1))                # the user edits while the search runs: a hand copy is current now
    window.doc.session.plans[name] = plan.with_(allocator=plan.allocator)   # and the searched plan is gone
    depth = window.stack.count()
    window._tuned(plan, name, (32, 64), result)
    assert window.stack.count() == depth and "changed while" in window.doc.rejection


def test_compare_rows_refit_when_the_window_narrows(qtbot):
    """The next-step row's text wraps to the column's width at every window size: fitted once at 1500 px, a
    1280x800 window elided it to 'free 87 registers (to ...', losing the warps it reaches."""
    from PySide6.QtWidgets import QApplication

    from tests.gui.qt.windows import open_window

    w = open_window(qtbot, 8, 8, 8, {"schedule": "k-outer"})
    w.tabs.setCurrentWidget(w.compare)
    QApplication.processEvents()
    w.resize(1280, 800)
    QApplication.processEvents()
    table = w.compare.table
    row = next(i for i in range(table.rowCount()) if table.verticalHeaderItem(i).text() == "next occupancy step")
    assert table.rowHeight(row) >= table.sizeHintForRow(row) > 0
