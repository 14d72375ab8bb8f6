"""The plan and its SASS linked in the real window (pytest-qt, offscreen), as Compiler Explorer links source and
assembly: a click on a plan instruction marks its SASS instructions, a click on a SASS instruction selects its plan
instruction. The kernel is built with NVVM, ptxas and nvdisasm."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.edits import Move
from gui.qt.qt_main_window import QtMainWindow
from kernels.pipeline import measure

WORKLOAD, OPTIONS = {"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}, {"tile": [4, 4]}


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture(scope="module")
def measured(qapp):
    """The linear-scan plan of GEMM 4x4x4 as the window makes it, built and measured once for the module."""
    w = QtMainWindow(restore=False, start_jobs=False, autosave=False)
    w.allocate_now(WORKLOAD, OPTIONS)
    plan = w.doc.session.plans["linear-scan"]
    w.dispose()
    return plan, measure(plan, ("sm_80", "sm_90"), skip_simulator="not run (test)")


@pytest.fixture
def window(qtbot, measured):
    plan, m = measured
    w = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(w)
    w.resize(1500, 950)
    w.show()
    w.allocate_now(WORKLOAD, OPTIONS)
    w.doc.set_current("linear-scan")
    assert str(w.doc.plan.program) == str(plan.program)
    w._built({"linear-scan": m})          # what a finished build job hands the window
    w.tabs.setCurrentWidget(w.sass_view)
    QApplication.processEvents()
    return w


def _click(timeline, x: float, y: float) -> None:
    """A real left click on ``timeline`` at instruction column ``x``, register row ``y``."""
    view = timeline.layout_
    scene = timeline.view.mapViewToScene(QPointF(x, y))
    point = view.mapFromScene(scene)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(point.x(), point.y()))
    QApplication.processEvents()


def _opcode(text: str) -> str:
    words = text.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def test_a_plan_instruction_marks_its_sass_instructions(window, measured):
    plan, m = measured
    code = plan.program.instructions
    fma = next(i for i, ins in enumerate(code) if ins.opcode == "fma" and ins.defs[0].type == "f32")
    window.tabs.setCurrentWidget(window.timeline)
    QApplication.processEvents()
    _click(window.timeline, fma + 0.5, -0.4)
    assert window.doc.instruction == fma
    view = window.sass_view
    rows = view.timeline.linked
    assert rows == m.sass["sm_80"].ir_map.sass_of(fma) and len(rows) >= 1
    texts = m.sass_liveness("sm_80").texts
    assert [_opcode(texts[r]) for r in rows] == ["FFMA"] * len(rows)
    assert list(view.timeline.linked_item.opts["x0"]) == [float(r) for r in rows]
    assert [s.cursor.blockNumber() for s in view.text.extraSelections()] == list(rows)
    # another arch: the same plan instruction, that arch's SASS
    view.arch.setCurrentText("sm_90")
    QApplication.processEvents()
    assert view.timeline.linked == m.sass["sm_90"].ir_map.sass_of(fma)
    assert "link to a plan instruction" in view.caption.text()


def test_a_sass_instruction_selects_its_plan_instruction(window, measured):
    plan, m = measured
    sass = m.sass_liveness("sm_80")
    mapped = m.sass["sm_80"].ir_map
    row = next(i for i, t in enumerate(sass.texts) if _opcode(t) == "LDG")
    _click(window.sass_view.timeline, row + 0.5, -0.4)
    ir = mapped.ir[row]
    assert plan.program.instructions[ir].opcode == "ld.global"
    assert window.doc.instruction == ir
    assert window.instructions.list.currentRow() == ir                  # the plan's views show it
    assert window.timeline.cursor2.isVisible() and window.timeline.cursor2.value() == ir + 0.5
    # the SASS view marks every SASS instruction of that plan instruction, the clicked one among them
    assert row in window.sass_view.timeline.linked
    assert window.sass_view.timeline.linked == mapped.sass_of(ir)
    assert f"{mapped.mapped} of {len(mapped.ir)} SASS instructions link" in window.sass_view.caption.text()


def test_a_kernel_of_an_older_plan_links_nothing(window, measured):
    plan, _ = measured
    code = plan.program.instructions
    store = max(i for i, ins in enumerate(code) if ins.opcode == "st.global")
    window.edit(Move(store, store - 1))              # a schedule edit: the built kernel is not this plan's
    window.flush()
    QApplication.processEvents()
    assert window.doc.session.measurement(window.doc.session.current) is None
    view = window.sass_view
    assert view.ir_map() is None and view.timeline.linked == ()
    assert "not the current plan's kernel" in view.caption.text()
    window.doc.select_instruction(5)
    _click(view.timeline, 20.5, -0.4)
    assert window.doc.instruction == 5 and view.timeline.linked == ()
