"""The workload panel in the real window (pytest-qt, offscreen): the picker shows exactly the config typed or
refuses it in words, and every field of the checked workload is on screen at the default size."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.gui.qt.windows import open_window


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    return open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")


def _type(panel, text: str) -> None:
    panel.picker.setFocus()
    panel.picker.clear()
    QTest.keyClicks(panel.picker, text)
    QTest.keyClick(panel.picker, Qt.Key.Key_Return)
    QApplication.processEvents()


@pytest.mark.parametrize("typed, reason", [
    ("gemm 8x8x99", "field 'k' must be an integer in 2..16, got 99"),
    ("gemm 17x8x8", "field 'm' must be an integer in 2..16, got 17"),
    ("mha heads 33 batch 64 head_dim 64 groups 4", "field 'heads' must be one of 16, 32, 40, 64, 96, 128, got 33"),
    ("gemm 8x8", "not a config: 'gemm 8x8'"),
])
def test_the_picker_refuses_a_config_it_cannot_show_and_keeps_the_session(window, typed, reason):
    panel = window.workload_panel
    before = window.session_json()
    asked = []
    panel.workloadRequested.connect(lambda w, o: asked.append(w))
    _type(panel, typed)
    assert asked == [] and window.session_json() == before
    assert reason in panel.picker_error.text() and panel.picker_error.isVisible()
    assert panel.workload() == window.doc.session.workload          # the form shows what is loaded, not 8x8x16
    label = panel.picker_error
    assert label.wordWrap() and label.height() >= label.heightForWidth(label.width())   # the reason is not cut


def test_the_picker_loads_exactly_the_config_typed_and_clears_its_error(window):
    panel = window.workload_panel
    _type(panel, "gemm 8x8x99")
    asked = []
    panel.workloadRequested.connect(lambda w, o: asked.append(w))
    _type(panel, "gemm 8x8x12")
    assert asked == [{"kind": "gemm", "m": 8, "n": 8, "k": 12, "dtype": "f32"}]
    assert not panel.picker_error.isVisible()


def _on_screen(widget, area) -> bool:
    """``widget`` is shown whole inside the scroll area's viewport and its text is not shortened."""
    viewport = area.viewport()
    rect = QRect(widget.mapTo(viewport, widget.rect().topLeft()), widget.size())
    return viewport.rect().contains(rect) and widget.width() >= widget.sizeHint().width()


def test_mha_strategy_boxes_are_on_screen_at_the_default_size(window):
    panel = window.workload_panel
    radio = panel.radios["mha"]
    QTest.mouseClick(radio, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(8, radio.height() // 2))       # on the button, not the empty space beside "MHA"
    QApplication.processEvents()
    window.wait_for_jobs()
    area = panel.parentWidget().parentWidget()          # the dock's scroll area
    boxes = list(panel.forms["mha"].strategies.values())
    assert panel.forms["mha"].isVisible() and not panel.forms["gemm"].isVisible()
    assert all(_on_screen(b, area) for b in boxes), [(b.text(), b.geometry()) for b in boxes]
    assert area.horizontalScrollBar().maximum() == 0
