"""The ILP model in the real window (pytest-qt, offscreen): the compare table's model rows and the critical path
overlaid on the timeline."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from engine.model.ilp import plan_ilp
from gui.model.timeline import CRITICAL_LABEL, critical_path_points
from tests.gui.qt.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    return open_window(qtbot, 4, 4, 4, {"tile": [2, 2]}, "linear-scan")


def _legend_labels(window) -> list[str]:
    return [label.text for _sample, label in window.timeline.legend.items]


def test_the_compare_table_has_the_model_rows_of_every_plan(window):
    window.tabs.setCurrentWidget(window.compare)
    QApplication.processEvents()
    figures = {name: plan_ilp(plan) for name, plan in window.doc.session.plans.items()}
    best = max(round(f.ilp, 3) for f in figures.values())
    for name, f in figures.items():
        ilp, cycles = window.compare.cell("ILP (model)", name), window.compare.cell("cycles/warp (model)", name)
        assert ilp.split()[0] == str(round(f.ilp, 3)) and cycles.split()[0] == str(f.cycles)
        assert ilp.endswith("\u2605") == (round(f.ilp, 3) == best)
    # naive never reuses a register here, so it keeps the ILP of unlimited registers; the others reuse and lose
    assert figures["naive"].ilp == figures["naive"].reference_ilp > figures["linear-scan"].ilp


def _overlay_off(window) -> bool:
    shown = window.timeline.critical_item.getData()[0]
    return (shown is None or len(shown) == 0) and CRITICAL_LABEL not in _legend_labels(window)


def test_the_timeline_overlays_the_current_plans_critical_path_when_asked(window):
    # off at start: the model is too slow to redo on the UI thread after every edit of a big program
    assert _overlay_off(window) and "(model)" not in window.status_line()
    window.critical_action.trigger()
    plan = window.doc.plan
    f = plan_ilp(plan)
    x, rows = critical_path_points(plan, f.critical)
    shown_x, shown_y = window.timeline.critical_item.getData()
    assert len(x) > 2 and np.array_equal(shown_x, x) and np.array_equal(shown_y, window.timeline.data.y(rows))
    assert CRITICAL_LABEL in _legend_labels(window) and "(model)" in window.status_line()
    window.critical_action.trigger()               # off: the overlay and its legend entry go
    assert _overlay_off(window)
    window.critical_action.trigger()
    assert np.array_equal(window.timeline.critical_item.getData()[0], x)


def test_the_overlay_follows_the_current_plan(window):
    window.critical_action.trigger()
    window.doc.set_current("naive")
    QApplication.processEvents()
    plan = window.doc.plan
    x, _rows = critical_path_points(plan, plan_ilp(plan).critical)
    assert np.array_equal(window.timeline.critical_item.getData()[0], x)


def test_the_status_line_names_the_tile_and_schedule_the_program_was_built_with(window):
    assert window.status_line().startswith("gemm 4x4x4, tile 2x2, schedule k-outer  |  linear-scan: ")


def test_the_model_rows_and_the_status_line_explain_what_a_false_dependence_costs(window):
    window.tabs.setCurrentWidget(window.compare)
    QApplication.processEvents()
    note = window.compare.model_note
    assert "fixed-latency reader" in note.text() and "read scoreboard" in note.text()
    tip = note.toolTip()
    assert "arXiv 1804.06826" in tip and "[read_scoreboard]" in tip and "sm_80" in tip
    headers = [window.compare.table.verticalHeaderItem(i) for i in range(window.compare.table.rowCount())]
    model = [h for h in headers if h.text() in ("ILP (model)", "cycles/warp (model)")]
    assert len(model) == 2 and all(h.toolTip() == tip for h in model)
    f = plan_ilp(window.doc.plan)
    status = window.status_tip()
    assert status.startswith(window.status_line()) and f"This plan: {f.war_free} writes after a fixed-latency" in status
    assert f.war_free + f.war_waiting + f.waw == f.false_edges
