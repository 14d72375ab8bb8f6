"""The compare table, the SASS view and the budget sweep show which cap each ptxas figure comes from.

One real build and one real sweep (NVVM and ptxas) of a GEMM 4x4x4 plan at budget 255, shared by the module.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.plan import registers_used
from gui.qt.qt_compare import QtBudgetSweep, QtComparePanel, QtSassView, symlog
from kernels.pipeline import budget_sweep, measure, sweep_caps
from kernels.report import planned
from tests.gui.qt.windows import open_window
from tests.kernels.conftest import gemm_plan


@pytest.fixture(scope="module")
def measured():
    plan = gemm_plan(4, 4, 4, "dsatur")
    m = measure(plan, ("sm_80", "sm_90"), skip_simulator="not run (test)")
    return plan, m, budget_sweep(plan, "sm_80", 24, 48)


def test_the_compare_table_shows_both_caps_and_their_flags(qtbot, measured):
    plan, m, _ = measured
    panel = QtComparePanel()
    qtbot.addWidget(panel)
    panel.show_plans({"dsatur": planned(plan)}, {"dsatur": m})
    cap = m.ptxas["sm_80"].max_registers
    assert cap == max(24, registers_used(plan.assignment))
    assert panel.cell("sm_80 ptxas flags, plan cap", "dsatur") == f"-arch=sm_80 -v -maxrregcount={cap}"
    assert panel.cell("sm_90 ptxas flags, no cap", "dsatur") == "-arch=sm_90 -v"
    assert panel.cell("sm_90 ptxas registers, no cap", "dsatur") == str(m.ptxas_compiler["sm_90"].registers)
    assert panel.cell("sm_80 ptxas registers, plan cap", "dsatur") == str(m.ptxas["sm_80"].registers)


def test_the_sass_view_names_its_kernel_and_cap(qtbot, measured):
    plan, m, _ = measured
    view = QtSassView()
    qtbot.addWidget(view)
    view.show_build(m, plan.budget)
    text = view.caption.text()
    cap = m.ptxas["sm_80"].max_registers
    assert text.startswith(f"sm_80, regtune_gemm_m4n4k4_t4x4_k_outer_dsatur at the plan cap -maxrregcount={cap}: "
                           f"ptxas {m.ptxas['sm_80'].registers} registers")
    assert f"no -maxrregcount (ptxas's own choice): {m.ptxas_compiler['sm_80'].registers} registers" in text


def test_the_sweep_marks_the_plans_count_and_ptxas_own_choice(qtbot, measured):
    plan, m, sweep = measured
    view = QtBudgetSweep()
    qtbot.addWidget(view)
    assert not view.plan_mark.isVisible() and not view.own_mark.isVisible()
    view.show_sweep(sweep, "dsatur")
    assert view.plan_mark.value() == sweep.plan_registers == registers_used(plan.assignment)
    assert view.own_mark.value() == sweep.no_cap.registers == m.ptxas_compiler["sm_80"].registers
    assert view.plan_mark.label.format == f"plan: {sweep.plan_registers}"
    assert view.own_mark.label.format == f"ptxas, no flag: {sweep.no_cap.registers}"
    assert view.plan_mark.label.textItem.toPlainText() == f"plan: {sweep.plan_registers}"      # drawn, not only set
    assert [r.maxrregcount for r in view.rows] == [24, 32, 40, 48]          # the curve is as it was
    assert f"ptxas with no -maxrregcount chose {sweep.no_cap.registers}" in view.caption.text()


# -- issue 22: the sweep's axes -----------------------------------------------------------------------------

def _axis_labels(view) -> list[str]:
    return [plot.getAxis(side).labelString() for plot in (view.regs, view.warps, view.spills)
            for side in ("left", "bottom")]


def test_the_sweep_has_no_si_prefix_and_one_x_range_before_a_run(qtbot):
    view = QtBudgetSweep()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    QApplication.processEvents()
    assert not any("(x" in text for text in _axis_labels(view)), _axis_labels(view)
    ranges = [tuple(round(x) for x in plot.getViewBox().viewRange()[0]) for plot in (view.regs, view.warps, view.spills)]
    assert len(set(ranges)) == 1 and ranges[0][0] <= 24 and ranges[0][1] >= 255       # the caps a sweep covers
    assert "Kernel > Budget sweep" in view.caption.text()


def test_registers_warps_and_spills_have_their_own_y_axes_and_every_spill_shows(qtbot, measured):
    _plan, _m, sweep = measured
    view = QtBudgetSweep()
    qtbot.addWidget(view)
    view.show_sweep(sweep, "dsatur")
    assert view.reg_curve in view.regs.listDataItems() and view.warp_curve in view.warps.listDataItems()
    assert view.warp_curve not in view.regs.listDataItems()
    assert view.regs.getAxis("left").labelString().startswith("<span") and "registers" in _axis_labels(view)[0]
    assert "warps" in _axis_labels(view)[2] and "spill bytes (log)" in _axis_labels(view)[4]
    spilled = [r.spill_store_bytes + r.spill_load_bytes for r in sweep.rows]
    _x, y = view.spill_curve.getData()
    assert y.tolist() == symlog(spilled).tolist()
    some = [k for k, b in enumerate(spilled) if b]
    assert len(view.spill_marks.data) == len(some)                        # a marker at every non-zero point
    shown = [item.toPlainText() for item in view.spill_labels if item.isVisible()]
    big = max(spilled) if some else 0
    named = sorted({some[0], some[-1], *(k for k in some if spilled[k] < 0.05 * big)}) if some else []
    assert shown == [f"{spilled[k]:,} B" for k in named]
    assert not any("(x" in text for text in _axis_labels(view))


def test_a_small_spill_is_drawn_well_above_zero_beside_a_large_one():
    small, large = symlog([8, 7000])
    assert small / large > 0.2           # on a linear axis to 7,000 B, 8 B is 0.1 % of the height
    assert symlog([0])[0] == 0


def test_the_window_shows_the_sweeps_progress_cap_by_cap(qtbot, tmp_path, monkeypatch):
    """Issue 22: the status bar said 'built 4 kernels, 0%' for minutes. A real sweep, started with its key."""
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))
    window = open_window(qtbot, 4, 4, 4, {"tile": [4, 4]}, "dsatur")
    seen = []
    window.jobs.progress.connect(lambda key, done, total: seen.append(
        (key, done, total, window.status_text.text(), window.progress.text())))
    QTest.keyClick(window, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    QApplication.processEvents()
    assert window.status_text.text().startswith("budget sweep of dsatur on sm_80: compiling the kernel with NVVM")
    qtbot.waitUntil(lambda: bool(window.sweep.rows), timeout=300_000)
    runs = len(sweep_caps(24, 255)) + 1                                   # each cap, and once with no cap
    steps = [(done, text, bar) for key, done, total, text, bar in seen if key == "sweep" and total == runs + 1]
    assert steps and [d for d, _t, _b in steps] == sorted(d for d, _t, _b in steps) and steps[-1][0] == runs + 1
    middle = [(d, t, b) for d, t, b in steps if 1 < d <= runs]
    assert len(middle) >= runs // 2                                       # the count moves as ptxas runs end
    d, text, bar = middle[-1]
    assert f"{d - 1} of {runs} ptxas runs done (each cap, then no cap)" in text and bar == f"{d - 1}/{runs} ptxas runs"
    assert ", about " in text and " left" in text                          # a time left once a rate is known
    assert window.tabs.currentWidget() is window.sweep
