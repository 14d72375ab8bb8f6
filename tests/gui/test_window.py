"""The real window, driven by pytest-qt offscreen (QT_QPA_PLATFORM is set in tests/conftest.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.alloc.hand import Move
from engine.analysis.liveness import analyze
from engine.planfile import load_plan, plan_to_dict
from gui.model.session import autosave_path
from gui.qt.qt_main_window import QtMainWindow
from tests.gui.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    return open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")


def _bars(window) -> int:
    return sum(len(item.opts["x0"]) for item in window.timeline.bar_items.values())


def test_timeline_has_a_bar_per_live_segment_and_the_pressure_peak_is_maxlive(window):
    plan = window.doc.plan
    a = analyze(plan.program)
    expected = int(sum(a.widths[v] for v in a.seg_value.tolist() if a.widths[v] > 0))
    expected += len(plan.spills)
    assert _bars(window) == expected
    x, y = window.timeline.curve.getData()
    assert int(np.max(y)) == a.maxlive == plan.predicted["maxlive"]
    px, py = window.timeline.peak.getData()
    assert int(py[0]) == a.maxlive and int(px[0]) == a.peak
    assert window.timeline.maxlive_line.value() == a.maxlive


def _drag(view, start: QPointF, end: QPointF) -> None:
    """A real left-button drag on a graphics view's viewport (press, moves with the button held, release)."""
    viewport = view.viewport()
    a, b = view.mapFromScene(start), view.mapFromScene(end)

    def send(kind, pos, buttons, button):
        event = QMouseEvent(kind, QPointF(pos), QPointF(viewport.mapToGlobal(pos)), button, buttons,
                            Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, event)

    send(QEvent.Type.MouseButtonPress, a, Qt.MouseButton.LeftButton, Qt.MouseButton.LeftButton)
    for t in np.linspace(0, 1, 8)[1:]:
        p = QPoint(int(a.x() + (b.x() - a.x()) * t), int(a.y() + (b.y() - a.y()) * t))
        QTest.qWait(20)   # pyqtgraph drops moves faster than its mouse rate limit (100 per second)
        send(QEvent.Type.MouseMove, p, Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton)
        QApplication.processEvents()
    send(QEvent.Type.MouseButtonRelease, b, Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton)
    QApplication.processEvents()


def test_dragging_a_value_onto_a_busy_register_shows_the_conflict_and_undo_restores_the_plan(window):
    before = plan_to_dict(window.doc.plan)
    name = "acc_0_0"
    plan = window.doc.plan
    a = analyze(plan.program)
    v = a.index[name]
    mid = (int(a.start[v]) + int(a.end[v])) // 4      # positions are 2 per instruction
    busy = next(n for n in a.interference.graph.neighbors(name) if plan.program.values[n].width == 1)
    target = plan.assignment[busy][0]
    window.timeline.layout_.grab()      # lay the view out before mapping coordinates
    vb = window.timeline.view
    start = vb.mapViewToScene(QPointF(mid + 0.5, plan.assignment[name][0]))
    end = vb.mapViewToScene(QPointF(mid + 0.5, target))
    _drag(window.timeline.layout_, start, end)
    assert window.doc.session.current == "hand 1"      # an allocator's plan is never edited in place
    edited = window.doc.plan
    assert edited.assignment[name] == (target,)
    messages = window.conflicts.messages()
    assert messages and any(f"R{target}" in m and name in m for m in messages)
    assert "BROKEN" in window.conflicts.status.text()
    assert len(window.timeline.conflict_item.opts["x0"]) > 0
    window.undo_action.trigger()
    assert "hand 1" not in window.doc.session.plans
    assert plan_to_dict(window.doc.session.plans["chaitin-briggs"]) == before
    window.redo_action.trigger()
    assert window.doc.session.plans["hand 1"].assignment[name] == (target,)


def test_moving_instructions_changes_the_pressure_and_the_built_kernel_follows(window, qtbot):
    window.allocate_now({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"},
                        {"tile": [4, 4], "schedule": "load-all-first"})
    window.doc.set_current("linear-scan")
    window.flush()
    program = window.doc.plan.program
    maxlive = analyze(program).maxlive
    curve_before = window.timeline.curve.getData()[1].copy()
    load = next(i for i, ins in enumerate(program.instructions) if str(ins).startswith("%b_7_3"))
    use = next(i for i, ins in enumerate(program.instructions) if "b_7_3" in ins.uses)
    moved = window.instructions.list.model().moveRows(window.instructions.list.rootIndex(), load, 1,
                                                      window.instructions.list.rootIndex(), use)
    assert moved
    after = window.doc.plan
    assert after.program.instructions[use - 1].defs[0].name == "b_7_3"
    assert analyze(after.program).maxlive != maxlive
    assert not np.array_equal(window.timeline.curve.getData()[1], curve_before)
    stores = [i for i, ins in enumerate(after.program.instructions) if ins.opcode == "st.global"]
    window.instructions.request_move(stores[-1], stores[0])
    assert window.doc.plan.program.instructions[stores[0]].operands[1].text == "108"   # C[3][3] of the 4x4 tile
    window.build_and_measure({window.doc.session.current: window.doc.plan})
    window.wait_for_jobs()
    assert window.last_error is None, window.last_error
    m = window.doc.session.measurement(window.doc.session.current)
    import re

    offsets = [int(x or 0) for x in re.findall(r"st\.global\.f32\s+\[%rd\d+\+?(\d+)?\]", m.listings.ptx)]
    assert offsets[:2] == [108, 0]
    assert m.simulator.ok is True
    assert "sm_80" in window.sass_view.sass and window.sass_view.timeline.data is not None
    window.tabs.setCurrentWidget(window.compare)
    assert window.compare.caption.text().startswith(f"Measured: {window.doc.session.current} (1 of ")
    label = "sm_80 ptxas registers, plan cap"
    assert window.compare.cell(label, window.doc.session.current).split()[0].isdigit()


def test_a_rejected_schedule_edit_says_why_and_changes_nothing(window):
    before = window.session_json()
    program = window.doc.plan.program
    load = next(i for i, ins in enumerate(program.instructions) if str(ins).startswith("%a_0_0"))
    use = next(i for i, ins in enumerate(program.instructions) if "a_0_0" in ins.uses)
    window.instructions.request_move(use, load)
    text = window.conflicts.status.text()
    assert f"cannot move instruction {use}" in text and "it reads %b_0_0, which that instruction defines" in text
    assert window.session_json() == before
    window.instructions.request_move(40, 0)
    assert "can move only within block" in window.conflicts.status.text()


def test_opening_a_broken_plan_shows_the_error_and_keeps_the_session(window, tmp_path):
    before = window.session_json()
    path = tmp_path / "broken.json"
    data = plan_to_dict(window.doc.plan)
    data["assignment"]["acc_0_0"] = [999]
    path.write_text(json.dumps(data))
    assert window.open_plan(str(path)) is False
    assert "broken.json" in window.last_error and "acc_0_0" in window.last_error
    assert window.session_json() == before
    # issue 19: a plan whose program is not its workload's is refused like check refuses it
    data = plan_to_dict(window.doc.plan)
    line = next(ln for ln in data["program"].splitlines() if "setp.lt %mat, %batch" in ln)
    data["program"] = data["program"].replace(line, line.replace("setp.lt", "setp.le"))
    path.write_text(json.dumps(data))
    assert window.open_plan(str(path)) is False
    assert "is not gemm" in window.last_error and "setp.le %mat, %batch" in window.last_error
    assert window.session_json() == before


def test_save_reopen_and_compare_plans_equal(window, tmp_path):
    window.edit(Move(60, 59))
    path = tmp_path / "mine.json"
    window.save_plan(str(path))
    saved = window.doc.plan
    assert window.open_plan(str(path))
    window.wait_for_jobs()
    assert window.last_error is None, window.last_error
    assert window.doc.session.current == "mine"
    assert plan_to_dict(window.doc.plan) == plan_to_dict(saved) == plan_to_dict(load_plan(path))
    assert {"naive", "linear-scan", "chaitin-briggs", "dsatur"} <= set(window.doc.session.plans)


def test_every_edit_is_autosaved_and_a_restart_restores_it(qtbot, window):
    window.edit(Move(60, 59))
    assert window.autosave_slot.path == autosave_path() and autosave_path().exists()
    saved = json.loads(autosave_path().read_text())
    assert "hand 1" in saved["plans"] and saved["edits"]
    window.autosave_slot.release()          # as a crash would: the lock goes, the autosave stays
    again = QtMainWindow(restore=True, start_jobs=False)
    qtbot.addWidget(again)
    assert plan_to_dict(again.doc.session.plans["hand 1"]) == plan_to_dict(window.doc.session.plans["hand 1"])
    assert "restored" in again.status_text.text()


def test_screenshot_command_renders_the_window_to_a_png(qtbot, tmp_path):
    from PySide6.QtGui import QImage

    from gui.entry import command as main

    out = tmp_path / "shot.png"
    assert main(["screenshot", "--gemm", "4x4x4", "--view", "timeline", "--out", str(out)]) == 0
    image = QImage(str(out))
    assert not image.isNull() and image.width() > 400 and image.height() > 300
    assert main(["gui", str(tmp_path / "missing.json")]) == 2
    assert main(["screenshot", "--view", "nowhere", "--out", str(out)]) == 2


def test_spill_and_unspill_from_the_value_menu_are_undoable(window):
    before = plan_to_dict(window.doc.plan)
    menu = window.value_menu_actions("acc_2_2")
    spill = next(a for a in menu.actions() if a.text().startswith("Spill"))
    spill.trigger()
    assert "acc_2_2" in window.doc.plan.spills
    assert any(i.opcode == "st.local" for i in window.doc.plan.program.instructions)
    assert any(row < 0 for row in window.timeline.data.row.tolist())      # the slot row below the registers
    unspill = next(a for a in window.value_menu_actions("acc_2_2").actions() if a.text().startswith("Unspill"))
    unspill.trigger()
    assert "acc_2_2" not in window.doc.plan.spills
    window.undo_action.trigger()
    window.undo_action.trigger()
    window.flush()
    assert plan_to_dict(window.doc.session.plans["chaitin-briggs"]) == before and "hand 1" not in window.doc.session.plans


def test_dropping_a_plan_file_on_the_window_opens_it(window, tmp_path):
    from PySide6.QtCore import QMimeData, QUrl
    from PySide6.QtGui import QDropEvent

    path = tmp_path / "dropped.json"
    window.save_plan(str(path))
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    window.wait_for_jobs()
    assert window.doc.session.current == "dropped"


def test_pictures_of_a_view_export_as_png_and_svg(window, tmp_path):
    window.export_picture(str(tmp_path / "v.png"))
    window.export_picture(str(tmp_path / "v.svg"))
    assert (tmp_path / "v.png").stat().st_size > 1000
    assert "<svg" in (tmp_path / "v.svg").read_text()[:500]


def test_plans_list_duplicate_rename_delete_are_undoable(window):
    names = list(window.doc.session.plans)
    window.duplicate_plan("dsatur")
    assert window.doc.session.current == "hand 1" and window.doc.plan.allocator == "hand"
    window.rename_plan("hand 1", "tight")
    assert "tight" in window.doc.session.plans and "hand 1" not in window.doc.session.plans
    window.rename_plan("tight", "naive")            # a name in use: refused, nothing changes
    assert "already exists" in window.conflicts.status.text() or window.doc.rejection
    window.delete_plan("tight")
    assert list(window.doc.session.plans) == names
    for _ in range(3):
        window.undo_action.trigger()
    window.flush()
    assert list(window.doc.session.plans) == names
    texts = [window.plans_list.list.item(i).text() for i in range(window.plans_list.list.count())]
    assert len(texts) == 4 and all("regs, MAXLIVE" in t for t in texts)


def test_dragging_a_plan_in_the_list_reorders_the_plans_undoably(window):
    names = list(window.doc.session.plans)
    root = window.plans_list.list.rootIndex()
    assert window.plans_list.list.model().moveRows(root, 3, 1, root, 0)      # dsatur to the top
    window.flush()
    assert list(window.doc.session.plans) == ["dsatur", *names[:3]]
    assert window.doc.session.current == "chaitin-briggs"
    assert window.plans_list.names == list(window.doc.session.plans)
    window.undo_action.trigger()
    window.flush()
    assert list(window.doc.session.plans) == names == window.plans_list.names
