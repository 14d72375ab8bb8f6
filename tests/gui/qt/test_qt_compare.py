"""The compare table, the SASS view and the budget sweep show which cap each ptxas figure comes from.

One real build and one real sweep (NVVM and ptxas) of a GEMM 4x4x4 plan at budget 255, shared by the module.
"""

from __future__ import annotations

import pytest

from engine.plan import registers_used
from gui.qt.qt_compare import QtBudgetSweep, QtComparePanel, QtSassView
from kernels.pipeline import budget_sweep, measure
from kernels.report import planned
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
