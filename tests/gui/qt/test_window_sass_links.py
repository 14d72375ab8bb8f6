"""The plan and its SASS linked in the real window (pytest-qt, offscreen), as Compiler Explorer links source and
assembly: a click on a plan instruction marks its SASS instructions, a click on a SASS instruction selects its plan
instruction. The kernel is built with NVVM, ptxas and nvdisasm."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.alloc.hand import Move
from engine.analysis.liveness import analyze
from gui.model.timeline import SASS_UNMAPPED, sass_chains
from engine.workloads import BuildOptions
from gui.qt.qt_compare import QtSassView
from gui.qt.qt_main_window import QtMainWindow
from kernels.control import parse_hex
from kernels.pipeline import measure

WORKLOAD, OPTIONS = {"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}, BuildOptions(tile=(4, 4))


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
    assert view.listing.rows_model.linked == set(rows)            # the listing marks the same rows
    assert view.listing.rows_model.data(view.listing.rows_model.index(rows[0], 1),
                                        Qt.ItemDataRole.BackgroundRole).name() == "#fff3b0"
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
    # nothing ties its ranges to the plan any more: every one is grey, and no row names a plan instruction
    assert list(view.timeline.data.role_bars()) == [SASS_UNMAPPED]
    assert all(r.ir is None for r in view.rows)


def _marked_ranges(m, arch: str, rows) -> set[int]:
    """The live ranges the SASS ``rows`` write or read, read here from nvdisasm's marks in the listing's text
    (``^`` writes the range starting on the row, ``v`` reads the range covering it, ``x`` reads the range ending
    on the row above and writes the one starting on it), not through kernels.sass's read arrays."""
    s = m.sass_liveness(arch)
    lines = m.listings.sass[arch].splitlines()
    header = next(line for line in lines if "//" in line and "#" in line)
    first = header.split("//", 1)[1].split("|")[1].index("#") + 2
    found = set()
    for r in rows:
        line = next(line for line in lines if f"/*{s.offsets[r]}*/" in line)
        marks = line.split("//", 1)[1].split("|")[1][first:]
        for reg, mark in enumerate(marks):
            on = s.registers == reg
            if mark in "^x":
                found |= set(np.flatnonzero(on & (s.start == r)).tolist())
            if mark == "x":
                found |= set(np.flatnonzero(on & (s.end == r - 1)).tolist())
            if mark == "v":
                found |= set(np.flatnonzero(on & (s.start <= r) & (s.end >= r)).tolist())
            if mark in "^vx":           # a marked register is an operand the instruction names
                assert re.search(rf"\bR{reg}\b", s.texts[r]), (reg, s.texts[r])
    return _whole_values(s, lambda row, reg: (_marks(lines, first, s.offsets[row]) + " " * (reg + 1))[reg], found)


def _marks(lines, first: int, offset: str) -> str:
    line = next(line for line in lines if f"/*{offset}*/" in line)
    return line.split("//", 1)[1].split("|")[1][first:]


def _whole_values(s, mark, ranges: set[int]) -> set[int]:
    """``ranges`` with the other ranges of their values: a range on the row after another of its register ended,
    with no write mark (``^``/``x``) there, goes on with the same value (the parse splits a value at a read)."""
    found, todo = set(), list(ranges)
    while todo:
        k = todo.pop()
        if k in found:
            continue
        found.add(k)
        reg = int(s.registers[k])
        before = np.flatnonzero((s.registers == reg) & (s.end == s.start[k] - 1))
        if len(before) and mark(int(s.start[k]), reg) not in "^x":
            todo += before.tolist()
        for j in np.flatnonzero((s.registers == reg) & (s.start == s.end[k] + 1)).tolist():
            if mark(int(s.start[j]), reg) not in "^x":
                todo.append(j)
    return found


def _outlined(timeline) -> list[tuple[float, float]]:
    opts = timeline.operand_item.opts
    return sorted(zip(np.asarray(opts["y"], dtype=float).tolist(), np.asarray(opts["x0"], dtype=float).tolist()))


def test_a_plan_instruction_outlines_the_live_ranges_of_its_sass_instructions(window, measured):
    plan, m = measured
    fma = next(i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "fma")
    window.tabs.setCurrentWidget(window.timeline)
    QApplication.processEvents()
    _click(window.timeline, fma + 0.5, -0.4)
    view = window.sass_view
    rows = view.timeline.linked
    assert rows and view.timeline.instruction is None          # only the linked rows are marked on the SASS side
    ranges = _marked_ranges(m, "sm_80", rows)
    assert len(ranges) >= 3 * len(rows) - 1                    # an FFMA reads three ranges and writes one
    s = m.sass_liveness("sm_80")
    assert _outlined(view.timeline) == sorted((float(s.registers[k]), float(s.start[k])) for k in ranges)
    assert len(view.timeline.operand_item.opts["x0"]) == len(ranges)
    window.doc.select_instruction(-1)                          # no selection: no outline
    QApplication.processEvents()
    assert _outlined(view.timeline) == [] and _outlined(window.timeline) == []


def test_a_sass_instruction_outlines_the_values_of_its_plan_instruction(window, measured):
    plan, m = measured
    sass = m.sass_liveness("sm_80")
    row = next(i for i, t in enumerate(sass.texts) if _opcode(t) == "FFMA")
    _click(window.sass_view.timeline, row + 0.5, -0.4)
    ir = m.sass["sm_80"].ir_map.ir[row]
    ins = plan.program.instructions[ir]
    assert window.doc.instruction == ir and ins.opcode == "fma"
    names = {d.name for d in ins.defs} | set(ins.uses)
    a = analyze(plan.program)
    # each live segment on each register of the value (the plan has no spills)
    assert not plan.spills
    expected = sorted((float(r), s / 2) for n in names for s, _e in a.live_positions(n) for r in plan.assignment[n])
    assert len(expected) >= 3 and _outlined(window.timeline) == expected
    # the SASS side outlines the ranges of every SASS instruction of that plan instruction, the clicked one's too
    linked = window.sass_view.timeline.linked
    assert row in linked
    assert len(window.sass_view.timeline.operand_item.opts["x0"]) == len(_marked_ranges(m, "sm_80", linked))


def test_the_stall_strip_draws_the_encoded_stall_cycles_of_each_sass_row(window, measured):
    _plan, m = measured
    view = window.sass_view
    for arch in ("sm_80", "sm_90"):
        view.arch.setCurrentText(arch)
        QApplication.processEvents()
        listing = parse_hex(m.listings.hex[arch])
        rows = len(m.sass_liveness(arch).texts)                # -hex also prints the NOPs padding the code
        assert {ins.opcode for ins in listing.instructions[rows:]} <= {"NOP"}
        decoded = [ins.control.stall for ins in listing.instructions[:rows]]
        assert np.asarray(view.timeline.stall_item.opts["height"]).tolist() == decoded
        assert np.asarray(view.timeline.stall_item.opts["x0"]).tolist() == [i + 0.1 for i in range(len(decoded))]
        waits = [i + 0.5 for i, ins in enumerate(listing.instructions) if ins.control.wait_mask]
        assert waits and view.timeline.wait_item.data["x"].tolist() == waits
        assert "Under the pressure: each instruction's stall cycles as encoded" in view.caption.text()
    ldg = next(i for i, ins in enumerate(listing.instructions) if ins.opcode.startswith("LDG"))
    c = listing.instructions[ldg].control
    text = view.timeline.stalls.describe(ldg)
    assert f"stall {c.stall} cycle" in text and f"sets write barrier SB{c.write_barrier}" in text


def test_listings_that_do_not_align_draw_no_stalls(qtbot, measured):
    plan, m = measured
    lines = m.listings.hex["sm_80"].splitlines()
    at = next(i for i, line in enumerate(lines) if "/*0040*/" in line)
    dropped = "\n".join(lines[:at] + lines[at + 2:])            # one instruction (both its words) left out
    view = QtSassView()
    qtbot.addWidget(view)
    view.show_build(replace(m, listings=replace(m.listings, hex={**m.listings.hex, "sm_80": dropped})), plan.budget)
    assert len(view.timeline.stall_item.opts["height"]) == 0 and len(view.timeline.wait_item.data) == 0
    sass = m.sass_liveness("sm_80")
    assert view.caption.text().endswith(
        f"Stall cycles not drawn: the -hex listing does not match the life-range listing at row 4 "
        f"(/*0050*/ {_opcode_of(lines, '/*0050*/')} against /*0040*/ {sass.opcodes()[4]}).")
    view.arch.setCurrentText("sm_90")                           # the other arch's listing is whole: drawn
    assert len(view.timeline.stall_item.opts["height"]) == len(m.sass_liveness("sm_90").texts)
    view.show_build(replace(m, listings=replace(m.listings, hex={})), plan.budget)
    assert len(view.timeline.stall_item.opts["height"]) == 0
    assert view.caption.text().endswith("Stall cycles not drawn: the measurement has no nvdisasm -hex listing "
                                        "(a report from before it was kept).")


def _opcode_of(lines, offset: str) -> str:
    line = next(line for line in lines if offset in line)
    return _opcode(line.split(offset, 1)[1].split(";")[0])


# -- the listing: a table with Nsight Compute's Source-page columns, clicked with real events ---------------

def _click_row(table, row: int, column: int = 1, double: bool = False) -> None:
    """A real left click (or double click) on the listing's cell ``row``, ``column``."""
    index = table.model().index(row, column)
    table.scrollTo(index)
    QApplication.processEvents()
    centre = table.visualRect(index).center()
    if double:
        QTest.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    else:
        QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    QApplication.processEvents()


def test_a_single_click_on_a_sass_line_selects_it_and_its_plan_instruction(window, measured):
    plan, m = measured
    view = window.sass_view
    sass, mapped = m.sass_liveness("sm_80"), m.sass["sm_80"].ir_map
    row = next(i for i, t in enumerate(sass.texts) if _opcode(t) == "FFMA" and i > 20)
    before = window.doc.instruction
    _click_row(view.listing, row)
    ir = mapped.ir[row]
    assert ir is not None and ir != before and window.doc.instruction == ir
    assert plan.program.instructions[ir].opcode == "fma"
    assert window.instructions.list.currentRow() == ir               # the plan's views show it
    model = view.listing.rows_model
    assert model.clicked == row and view.row == row
    assert model.data(model.index(row, 0), Qt.ItemDataRole.BackgroundRole).name() == "#ffd700"
    assert row in view.timeline.linked and view.timeline.linked == mapped.sass_of(ir)
    assert view.timeline.instruction == row                          # the timeline's cursor on the same row
    # another row, by its plan-instruction cell: a click anywhere on the row selects it
    other = next(i for i, t in enumerate(sass.texts) if _opcode(t) == "LDG")
    _click_row(view.listing, other, column=4)
    assert window.doc.instruction == mapped.ir[other] and model.clicked == other
    # a double click selects the row too (there is no text to select)
    _click_row(view.listing, row, double=True)
    assert window.doc.instruction == ir and model.clicked == row


def test_the_listing_has_live_registers_stall_cycles_and_the_plan_instruction_of_each_row(window, measured):
    plan, m = measured
    view = window.sass_view
    for arch in ("sm_80", "sm_90"):
        view.arch.setCurrentText(arch)
        QApplication.processEvents()
        sass, mapped = m.sass_liveness(arch), m.sass[arch].ir_map
        stalls = [ins.control.stall for ins in parse_hex(m.listings.hex[arch]).instructions[:len(sass.texts)]]
        model = view.listing.rows_model
        assert model.rowCount() == len(sass.texts)
        def cell(r, c, model=model):
            return model.data(model.index(r, c))

        assert [cell(r, 1) for r in range(len(sass.texts))] == list(sass.texts)
        assert [int(cell(r, 2)) for r in range(len(sass.texts))] == sass.pressure.tolist()
        assert [int(cell(r, 3)) for r in range(len(sass.texts))] == stalls
        code = plan.program.instructions
        for r, ir in enumerate(mapped.ir):
            text = cell(r, 4)
            assert (text == "") if ir is None else text.startswith(f"{ir}: {code[ir].opcode}")
        assert sum(1 for r in range(len(sass.texts)) if cell(r, 4)) == mapped.mapped > 0
        assert "stall" in model.data(model.index(0, 3), Qt.ItemDataRole.ToolTipRole)


def _cut(table) -> list[tuple[int, int]]:
    """The (row, column) cells whose text is wider than their column (what an elided cell would hide)."""
    metrics = table.fontMetrics()
    model = table.model()
    return [(r, c) for c in range(model.columnCount()) for r in range(model.rowCount())
            if metrics.horizontalAdvance(model.data(model.index(r, c))) + 6 > table.columnWidth(c)]


@pytest.mark.parametrize("size", [(1500, 950), (1280, 800)])
def test_the_sass_listing_is_never_cut_at_the_right(window, measured, size):
    window.resize(*size)
    QApplication.processEvents()
    table = window.sass_view.listing
    assert table.textElideMode() == Qt.TextElideMode.ElideNone and not table.wordWrap()
    assert _cut(table) == []
    # the widest SASS line can be scrolled into full view: the columns' width is the scrollable width
    longest = max(range(table.model().rowCount()), key=lambda r: len(table.row_text(r)))
    whole = sum(table.columnWidth(c) for c in range(table.model().columnCount()))
    bar = table.horizontalScrollBar()
    assert whole <= table.viewport().width() + bar.maximum() + 1
    assert table.model().data(table.model().index(longest, 1), Qt.ItemDataRole.ToolTipRole) == \
        table.row_text(longest)


def test_sass_live_ranges_take_the_colour_of_the_plan_value_they_came_from(window, measured):
    plan, m = measured
    view = window.sass_view
    sass, mapped = m.sass_liveness("sm_80"), m.sass["sm_80"].ir_map
    roles = view.timeline.data.roles
    code = plan.program.instructions
    chain = sass_chains(sass)
    first = {}
    for k in np.argsort(sass.start, kind="stable").tolist():
        first.setdefault(int(chain[k]), k)
    by_role = {}
    for k, role in enumerate(roles):
        head = first[int(chain[k])]
        ir = mapped.ir[int(sass.start[head])] if sass.defined[head] else None
        if ir is None or not code[ir].defs:
            assert role == SASS_UNMAPPED, (k, role)
        else:
            by_role.setdefault(role, set()).add(code[ir].defs[0].name.split("_")[0])
    # what an FFMA writes is an accumulator, what an LDG of A writes an A fragment; the rest grey
    assert {"accumulator", "A fragment", "B fragment"} <= set(by_role) and "acc" in by_role["accumulator"]
    assert SASS_UNMAPPED in roles                      # the kernel's own set-up (the stack pointer, indices)
    drawn = view.timeline.data.role_bars()
    assert SASS_UNMAPPED in drawn and "accumulator" in drawn
    items = view.timeline.bar_items
    assert items["accumulator"].opts["brush"] != items[SASS_UNMAPPED].opts["brush"]


# -- issue 22: the diff view and the pressure CSV, from the window ------------------------------------------

def _click_tab(tabs, widget) -> None:
    bar = tabs.tabBar()
    QTest.mouseClick(bar, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     bar.tabRect(tabs.indexOf(widget)).center())
    QApplication.processEvents()


def test_the_diff_tab_sets_sm_80_against_sm_90_and_marks_what_differs(window, measured):
    _plan, m = measured
    _click_tab(window.tabs, window.diff)
    view = window.diff
    assert view.left_box.currentText() == "SASS sm_80: linear-scan"
    assert view.right_box.currentText() == "SASS sm_90: linear-scan"
    a, b = list(m.sass_liveness("sm_80").texts), list(m.sass_liveness("sm_90").texts)
    rows = view.rows
    assert [r.left for r in rows if r.left is not None] == a and [r.right for r in rows if r.right is not None] == b
    assert all((r.left == r.right) == (r.kind == "same") for r in rows)
    assert all(r.kind not in ("registers", "operands") or (r.left != r.right and r.left.split()[0] == r.right.split()[0]) for r in rows)
    assert {r.kind for r in rows} - {"same"}                        # the two archs' kernels differ somewhere
    model = view.table.model()
    k = next(i for i, r in enumerate(rows) if r.kind != "same")
    tint = model.data(model.index(k, 0), Qt.ItemDataRole.BackgroundRole)
    assert tint is not None and tint.name() in ("#ffe0a3", "#d9e4ff", "#ffc9c9", "#c8ecc8")
    assert "only on the right" in view.caption.text() and "sm_80: linear-scan against SASS sm_90" in view.caption.text()


def test_the_diff_tab_compares_two_plans_chosen_with_the_keyboard(window):
    _click_tab(window.tabs, window.diff)
    view = window.diff
    view.left_box.setFocus()
    target = view.left_box.findText("plan: linear-scan")
    while view.left_box.currentIndex() != target:               # keys, as a user picks the entry
        QTest.keyClick(view.left_box, Qt.Key.Key_Down if view.left_box.currentIndex() < target else Qt.Key.Key_Up)
    view.right_box.setFocus()
    target = view.right_box.findText("plan: dsatur")
    while view.right_box.currentIndex() != target:
        QTest.keyClick(view.right_box, Qt.Key.Key_Down if view.right_box.currentIndex() < target else Qt.Key.Key_Up)
    QApplication.processEvents()
    left, right = window.doc.session.plans["linear-scan"], window.doc.session.plans["dsatur"]
    assert str(left.program) == str(right.program)                 # one program: only registers can differ
    rows = view.rows
    assert {r.kind for r in rows} <= {"same", "registers"} and len(rows) == len(left.program.instructions)
    differ = [i for i, ins in enumerate(left.program.instructions)
              if any(left.assignment.get(d.name) != right.assignment.get(d.name) for d in ins.defs)]
    assert [i for i, r in enumerate(rows) if r.kind == "registers"] == differ and differ
    tip = view.table.model().data(view.table.model().index(differ[0], 1), Qt.ItemDataRole.ToolTipRole)
    assert "registers differ: R" in tip


def test_file_export_pressure_writes_the_plan_and_sass_rows_as_csv(window, measured, tmp_path):
    import csv

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QFileDialog, QLineEdit

    plan, m = measured
    path = tmp_path / "pressure.csv"

    typed = []

    def type_the_name():
        """Once the dialog is up: the file name typed into it and Return pressed (tried every 100 ms)."""
        dialog = next((w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()),
                      None)
        if dialog is None:
            typed.append(None)
            if len(typed) < 100:
                QTimer.singleShot(100, type_the_name)
            return
        name = dialog.findChild(QLineEdit, "fileNameEdit")          # Qt's own dialog: its file-name field
        typed.append(str(path))
        if name is not None:
            name.setFocus()
            name.selectAll()
            QTest.keyClicks(name, str(path))
            QTest.keyClick(name, Qt.Key.Key_Return)
        if dialog.isVisible():       # never left open (a test run must end): the name chosen as typed
            dialog.selectFile(str(path))
            dialog.accept()

    QTimer.singleShot(100, type_the_name)
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    QApplication.processEvents()
    assert typed[-1:] == [str(path)], "the file dialog did not open"
    rows = list(csv.DictReader(path.open()))
    planned = [r for r in rows if r["source"] == "plan"]
    assert [int(r["live_registers"]) for r in planned] == window.doc.analysis().pressure.tolist()
    for arch in ("sm_80", "sm_90"):
        sass = [r for r in rows if r["source"] == "sass" and r["arch"] == arch]
        assert [int(r["live_registers"]) for r in sass] == m.sass_liveness(arch).pressure.tolist()
        ir = m.sass[arch].ir_map.ir
        assert [r["plan_instruction"] for r in sass] == ["" if i is None else str(i) for i in ir]
    assert f"wrote the pressure of linear-scan to {path}" == window.status_text.text()


def test_the_marked_sass_row_is_in_view_when_the_tab_is_shown(window, measured):
    plan, m = measured
    fma = max(i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "fma")
    window.tabs.setCurrentWidget(window.timeline)
    QApplication.processEvents()
    window.doc.select_instruction(fma)                  # chosen while the SASS tab is hidden
    QApplication.processEvents()
    _click_tab(window.tabs, window.sass_view)
    QApplication.processEvents()
    table = window.sass_view.listing
    row = m.sass["sm_80"].ir_map.sass_of(fma)[0]
    rect = table.visualRect(table.model().index(row, 1))
    assert table.viewport().rect().contains(rect.center()), (row, rect)
