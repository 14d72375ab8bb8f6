"""Live ptxas figures while editing: after an edit, an undo (a real key press) or a plan chosen with a real
click, the plan PTX's figures of exactly the current plan appear beside the plans, in the background."""

import time

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.alloc.hand import Assign
from engine.model.arch import DEFAULT_BUILD_ARCHS
from engine.plan import registers_used
from engine.workloads import BuildOptions
from gui.qt.qt_main_window import QtMainWindow
from kernels.plan_ptx import plan_ptx_figures


def _window(qtbot) -> QtMainWindow:
    w = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(w)
    w.resize(1500, 950)
    w.show()
    w.live.enabled = True                   # the live figures only: no doctor job, no allocation job
    w.allocate_now({"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}, BuildOptions(tile=(4, 4)))
    return w


def _shown_for(qtbot, w, plan, timeout_ms=60000):
    qtbot.waitUntil(lambda: w.live.shown is not None and w.live.shown[0] is plan, timeout=timeout_ms)
    return w.live.shown


def _registers_line(figures, arch):
    return f"{arch}: {figures.ptxas[arch].registers} at the plan's cap"


def test_the_current_plans_figures_appear_and_follow_a_clicked_plan(qtbot):
    w = _window(qtbot)
    plan, _, shown = _shown_for(qtbot, w, w.doc.plan)
    want = plan_ptx_figures(plan, DEFAULT_BUILD_ARCHS)
    text = w.live_panel.text.text()
    for arch in DEFAULT_BUILD_ARCHS:
        assert shown.ptxas[arch].registers == want.ptxas[arch].registers
        assert _registers_line(want, arch) in text and f"SASS MAXLIVE {want.sass[arch].maxlive}" in text
    assert f"plan: {registers_used(plan.assignment)} registers" in text
    other = next(n for n in w.doc.session.plans if n != w.doc.session.current)
    view = w.plans_list.list
    row = next(i for i in range(view.count()) if view.item(i).data(Qt.ItemDataRole.UserRole) == other)
    view.scrollToItem(view.item(row))
    rect = view.visualItemRect(view.item(row))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center())
    assert w.doc.session.current == other
    plan2, seconds, shown2 = _shown_for(qtbot, w, w.doc.plan)
    assert plan2 is w.doc.session.plans[other] and seconds < 60
    assert shown2.ptxas == plan_ptx_figures(plan2, DEFAULT_BUILD_ARCHS).ptxas


def test_an_edit_and_its_undo_by_key_each_get_their_own_figures(qtbot):
    w = _window(qtbot)
    before = _shown_for(qtbot, w, w.doc.plan)[0]
    name = next(n for n, regs in before.assignment.items() if len(regs) == 1)
    free = registers_used(before.assignment)                # a register no value holds: the count goes up by one
    w.edit(Assign(name, (free,)))
    edited = w.doc.plan
    assert edited is not before and registers_used(edited.assignment) == free + 1
    shown = _shown_for(qtbot, w, edited)[2]
    assert shown.ptxas == plan_ptx_figures(edited, DEFAULT_BUILD_ARCHS).ptxas
    assert f"plan: {free + 1} registers" in w.live_panel.text.text()
    QTest.keyClick(w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    QApplication.processEvents()
    assert w.doc.plan == before
    t = time.monotonic()
    _shown_for(qtbot, w, w.doc.plan)
    assert time.monotonic() - t < 30
    assert f"plan: {free} registers" in w.live_panel.text.text()


def test_ptxas_figures_show_as_they_arrive_before_the_sass(qtbot, tmp_path, monkeypatch):
    """A cold request (a fresh cache) shows each ptxas figure as it comes, then the whole set with SASS MAXLIVE."""
    monkeypatch.setenv("REGTUNE_CACHE_DIR", str(tmp_path))
    w = _window(qtbot)
    seen: list[str] = []
    show = w.live_panel.show_lines
    monkeypatch.setattr(w.live_panel, "show_lines", lambda lines: (seen.append("\n".join(lines)), show(lines)))
    before = _shown_for(qtbot, w, w.doc.plan)[0]
    seen.clear()
    name = next(n for n, regs in before.assignment.items() if len(regs) == 1)
    w.edit(Assign(name, (registers_used(before.assignment),)))      # a new plan: its PTX is not in the cache
    _, seconds, figures = _shown_for(qtbot, w, w.doc.plan)
    partial = [t for t in seen if "first figures in" in t]
    assert partial and "SASS MAXLIVE to follow" in partial[0] and seen[-1] not in partial
    first_arch = DEFAULT_BUILD_ARCHS[0]
    assert _registers_line(figures, first_arch) in partial[-1] or f"{first_arch}: plan cap: running" in partial[-1]
    assert w.live.first_seconds is not None and w.live.first_seconds <= seconds
