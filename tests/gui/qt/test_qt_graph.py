"""The interference view in the real window (pytest-qt, offscreen): the matrix is drawn before anything is
selected, names the cell under the pointer, selects on a click and follows the selection made elsewhere;
the neighbourhood draws the edges among the neighbours; a register's class is marked; 10 to 10,000 values."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.alloc import allocate
from engine.alloc.hand import Assign
from engine.analysis.liveness import analyze
from engine.ir.parser import parse
from engine.predict import predicted_plan
from gui.model.graph import (
    CONFLICT,
    first_registers,
    neighbours,
    register_class,
    value_order,
)
from gui.qt.qt_graph import QtInterferenceGraph
from tests.bench.programs import straight_line
from tests.gui.qt.windows import open_window

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    w = open_window(qtbot, 8, 8, 8, {"tile": [4, 4]}, "chaitin-briggs")
    w.tabs.setCurrentWidget(w.graph)
    QApplication.processEvents()
    return w


def _viewport_point(graph, row: int, col: int) -> QPoint:
    view = graph.matrix_plot
    return view.mapFromScene(graph.cell_centre(row, col))


def test_the_matrix_is_drawn_before_any_selection_with_a_cell_per_interference(window):
    g = window.graph
    interference = window.doc.analysis().interference
    assert window.doc.selection is None and g.matrix is not None
    assert "graph" not in interference.__dict__            # no networkx graph of the whole program
    image = g.image.image                                 # what the ImageItem holds: the matrix, transposed
    assert image.shape == (g.matrix.side, g.matrix.side)
    assert np.count_nonzero(image) == 2 * interference.n_edges
    n = int(np.count_nonzero(window.doc.analysis().widths > 0))
    assert g.caption.text().startswith(f"{n} values, {interference.n_edges:,} interferences, no conflicts")
    assert "select a value" in g.neighbourhood_caption.text() and g.shown == []


def test_hovering_a_cell_names_its_two_values_and_a_click_selects_the_row_value(window):
    g = window.graph
    a = window.doc.analysis()
    order = g.matrix.order
    row = int(np.flatnonzero(order == a.index["acc_1_2"])[0])
    col = next(i for i, v in enumerate(order.tolist()) if a.names[v] in neighbours(a.interference, "acc_1_2"))
    point = _viewport_point(g, row, col)
    QTest.mouseMove(g.matrix_plot.viewport(), point)
    QApplication.processEvents()
    other = a.names[order[col]]
    assert g.hover.text().startswith("%acc_1_2 (R") and f"%{other} (R" in g.hover.text()
    assert g.hover.text().endswith(": interfere")
    QTest.mouseClick(g.matrix_plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    QApplication.processEvents()
    assert window.doc.selection == "acc_1_2"
    assert window.table.selected_name() == "acc_1_2"
    assert len(window.timeline.select_item.opts["x0"]) > 0       # the timeline outlines it too
    assert g.row_line.isVisible() and g.row_line.value() == row + 0.5 and g.col_line.value() == row + 0.5


def test_a_selection_made_elsewhere_shows_the_neighbourhood_with_the_edges_among_the_neighbours(window):
    window.doc.select("acc_1_2")            # as the table or the timeline select it
    QApplication.processEvents()
    g = window.graph
    a = window.doc.analysis()
    want = nx.ego_graph(a.interference.graph, "acc_1_2", radius=1)
    assert g.shown[0] == "acc_1_2" and set(g.shown) == set(want.nodes)
    assert len(g.graph_item.adjacency) == want.number_of_edges() > len(want) - 1    # not just a star
    assert g.neighbourhood_caption.text().startswith(
        f"%acc_1_2 and its neighbours ({len(want) - 1}): {want.number_of_edges():,} interferences among them")
    x, y = g.graph_item.pos[0]
    assert (x, y) == (a.start[a.index["acc_1_2"]] / 2, window.doc.plan.assignment["acc_1_2"][0])


def test_clicking_a_neighbour_selects_it_everywhere(window):
    window.doc.select("acc_1_2")
    QApplication.processEvents()
    target = window.graph.shown[3]
    window.graph.click_node(target)
    assert window.doc.selection == target and window.table.selected_name() == target
    assert window.graph.shown[0] == target


def test_the_order_and_colouring_switch_and_conflicts_show_red(window):
    g = window.graph
    plan, a = window.doc.plan, window.doc.analysis()
    g.order_box.setCurrentIndex(1)
    assert g.matrix.order.tolist() == value_order(a, plan.assignment, "register").tolist()
    assert "by register" in g.caption.text()
    g.colour_box.setCurrentIndex(1)
    assert "cells: interfering pairs" in g.caption.text()
    busy = next(n for n in neighbours(a.interference, "acc_1_2") if plan.program.values[n].width == 1)
    window.edit(Assign("acc_1_2", tuple(plan.assignment[busy])))
    QApplication.processEvents()
    overlaps = [c for c in window.doc.conflicts() if c.kind == "overlap"]
    assert overlaps and window.doc.session.current == "hand 1"
    assert np.count_nonzero(g.matrix.image == CONFLICT) == 2 * len(overlaps)
    ringed = {(int(x - 0.5), int(y - 0.5)) for x, y in zip(g.conflict_marks.data["x"], g.conflict_marks.data["y"])}
    assert ringed == {(int(c), int(r)) for r, c in np.argwhere(g.matrix.image == CONFLICT)}
    assert f"{len(overlaps)} conflict" in g.caption.text()
    row = g.matrix.pixel_of(window.doc.analysis().index["acc_1_2"])
    col = g.matrix.pixel_of(window.doc.analysis().index[busy])
    assert g.cell_text(row, col).endswith("CONFLICT: both live in one register")
    window.doc.select("acc_1_2")
    QApplication.processEvents()
    x, y = g.conflict_edges.getData()                       # pairs of ends: acc_1_2 to each value it clashes with
    clashing = {n for pair in (c.values for c in overlaps) for n in pair if "acc_1_2" in pair} - {"acc_1_2"}
    assert len(x) == 2 * len(clashing)
    a = window.doc.analysis()
    ends = {(float(a.start[a.index[n]] / 2), float(window.doc.plan.assignment[n][0])) for n in clashing}
    assert set(zip(x[1::2].tolist(), y[1::2].tolist())) | set(zip(x[0::2].tolist(), y[0::2].tolist())) >= ends


def test_choosing_a_register_marks_every_value_it_holds(window):
    g = window.graph
    plan, a = window.doc.plan, window.doc.analysis()
    counts = np.bincount([r for regs in plan.assignment.values() for r in regs])
    register = int(counts.argmax())                         # the register that holds the most values
    g.set_register(register)
    members = register_class(a.names, plan.assignment, register)
    assert len(members) == counts[register] > 1
    assert len(g.class_marks.data) == len(members)
    marked = sorted(int(x - 0.5) for x in g.class_marks.data["x"])
    assert marked == sorted(g.matrix.pixel_of(v) for v in members)
    assert f"R{register} holds {len(members)} values" in g.caption.text()
    assert "no two of them interfere" in g.caption.text()
    window.doc.select("acc_1_2")
    QApplication.processEvents()
    near = set(g.shown) & {a.names[v] for v in members}
    assert near and len(g.class_ring.data) == len(near)     # the class's members among the neighbours, ringed


@pytest.mark.parametrize("size", ["tiny", "large"])
def test_the_view_reads_from_ten_to_ten_thousand_values(qtbot, size):
    if size == "tiny":
        text = (ROOT / "resources" / "examples" / "gemm_m1n1k2.txt").read_text()
    else:
        text = straight_line(n=10_600, peak=120, seed=3)
    program = parse(text)
    plan = predicted_plan(allocate("linear-scan", program, 255))
    a = analyze(plan.program)
    view = QtInterferenceGraph()
    qtbot.addWidget(view)
    view.resize(1100, 800)
    view.show_plan(plan, a)
    n = int(np.count_nonzero(a.widths > 0))
    m = view.matrix
    assert len(m.order) == n
    if size == "tiny":
        assert n <= 12 and m.per_pixel == 1 and m.side == n
        assert np.count_nonzero(m.image) == 2 * a.interference.n_edges
    else:
        assert n >= 10_000 and m.side <= 2048 and m.per_pixel > 1
        assert "one pixel = " in view.caption.text()
    assert (first_registers(a.names, plan.assignment)[m.order] >= 0).all()


# -- issue 22: the matrix fills its axes, the pane says what to do, many neighbours are grouped ----------------

def _click_cell(g, row: int, col: int) -> None:
    QTest.mouseClick(g.matrix_plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     _viewport_point(g, row, col))
    QApplication.processEvents()


@pytest.mark.parametrize("size", [(1500, 950), (1280, 800)])
def test_the_matrix_fills_its_axes(window, size):
    window.resize(*size)
    QApplication.processEvents()
    g = window.graph
    (x0, x1), (y0, y1) = g.matrix_plot.getViewBox().viewRange()
    side = g.matrix.side
    assert (x0, x1) == pytest.approx((0, side), abs=side * 0.01)
    assert (y0, y1) == pytest.approx((0, side), abs=side * 0.01)      # not -100..600 for 469 rows


def test_the_neighbourhood_pane_says_what_to_do_until_a_value_is_selected(window):
    g = window.graph
    assert window.doc.selection is None
    assert g.hint.isVisible() and not g.plot.isVisible()
    assert g.hint.text().startswith("Select a value to see its neighbourhood here: click a cell of the matrix")
    a = window.doc.analysis()
    row = int(np.flatnonzero(g.matrix.order == a.index["acc_1_2"])[0])
    _click_cell(g, row, row)
    assert window.doc.selection == "acc_1_2"
    assert g.plot.isVisible() and not g.hint.isVisible() and g.shown[0] == "acc_1_2"


def test_above_a_hundred_neighbours_they_are_grouped_and_one_group_can_be_shown(window):
    g = window.graph
    a = window.doc.analysis()
    degree = {n: len(neighbours(a.interference, n)) for n in a.names if a.widths[a.index[n]]}
    busy = max(degree, key=degree.get)
    assert degree[busy] > 100
    row = int(np.flatnonzero(g.matrix.order == a.index[busy])[0])
    _click_cell(g, row, row)
    assert window.doc.selection == busy
    # auto: by role, one node per group and the centre
    roles = {r for r in (g.groups and [gr.label for gr in g.groups])}
    assert roles and roles <= {"A fragment", "B fragment", "accumulator", "address", "index", "scalar", "predicate"}
    assert len(g.graph_item.pos) == 1 + len(g.groups)
    assert sum(len(gr.members) for gr in g.groups) == degree[busy]
    assert f"{degree[busy]} neighbours in {len(g.groups)} groups by role" in g.neighbourhood_caption.text()
    assert [item.toPlainText() for item in g.group_labels if item.isVisible()] == \
        [f"{gr.label} \u00d7{len(gr.members)}" for gr in g.groups]
    # the user filters: the 'show' box, by keyboard, picks the first group and its values are drawn one by one
    g.filter_box.setFocus()
    QTest.keyClick(g.filter_box, Qt.Key.Key_Down)
    QApplication.processEvents()
    first = g.groups[0]
    assert g.filter_box.currentIndex() == 1
    assert g.shown == [busy] + [a.names[v] for v in first.members.tolist()]
    assert g.neighbourhood_caption.text().startswith(f"{first.label} only: %{busy} and its neighbours")
    # grouped by register instead
    g.group_box.setFocus()
    QTest.keyClick(g.group_box, Qt.Key.Key_Down)
    QTest.keyClick(g.group_box, Qt.Key.Key_Down)
    QApplication.processEvents()
    assert g.grouping == "register" and g.filter_box.currentIndex() == 0
    regs = first_registers(a.names, window.doc.plan.assignment)
    assert [gr.label for gr in g.groups] == [f"R{r}" for r in sorted({int(regs[a.index[n]])
                                                                     for n in neighbours(a.interference, busy)})]
    # a few neighbours: drawn one by one (auto does not group)
    window.doc.select("acc_1_2")
    QApplication.processEvents()
    g.group_box.setCurrentIndex(0)
    assert degree["acc_1_2"] <= 100 and g.groups == [] and g.shown[0] == "acc_1_2"
    assert not g.filter_box.isEnabled()
