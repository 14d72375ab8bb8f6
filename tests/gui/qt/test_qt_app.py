"""Starting the window: ``regtune screenshot``'s flags, Qt's offscreen noise filtered, one autosave per open
window, and the timeline's legend and budget label readable (pytest-qt on the real window, offscreen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from engine.alloc.hand import Move, Spill
from engine.workloads import BuildOptions
from gui.entry import command
from gui.model.session import autosave_path
from gui.qt.qt_app import NOISE, drop_noise
from gui.qt.qt_main_window import QtMainWindow
from tests.gui.qt.windows import open_window

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def session_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))


@pytest.fixture
def window(qtbot):
    return open_window(qtbot, 4, 4, 4, {})


# -- screenshot --------------------------------------------------------------------------------------

def test_screenshot_selects_a_value_spelt_as_the_ir_spells_it(qtbot, tmp_path, capsys):
    out = tmp_path / "graph.png"
    assert command(["screenshot", "--gemm", "4x4x4", "--view", "graph", "--plan-name", "dsatur",
                    "--select", "%acc_1_2", "--register", "R2", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert not QImage(str(out)).isNull()


@pytest.mark.parametrize("flags, message", [
    # without --plan-name the window shows the best verified plan (linear-scan here), as it opens (issue 22)
    # --select is checked on the program alone, before any plan is made (issue 22)
    (["--select", "%nope"], "regtune: error: --select %nope: the gemm 2x2x2 program has no value %nope\n"),
    (["--select", "acc_9_9", "--plan-name", "dsatur"],
     "regtune: error: --select acc_9_9: the gemm 2x2x2 program has no value %acc_9_9\n"),
    (["--select", "%acc_0_0.r7"], "regtune: error: --select %acc_0_0.r7: the linear-scan plan's program has no "
                                  "value %acc_0_0.r7\n"),        # a spill name: the plan's own check, later
    (["--plan-name", "fastest"], ("regtune: error: --plan-name 'fastest': no such plan (the plans: naive, "
                                  "linear-scan, chaitin-briggs, dsatur)\n")),
    (["--register", "R300"], ("regtune: error: --register R300: the linear-scan plan puts no value in such a "
                              "register (it uses R0..R12)\n")),
    (["--register", "ten", "--plan-name", "dsatur"],
     "regtune: error: --register ten: the dsatur plan puts no value in such a register (it uses R0..R12)\n"),
    (["--instruction", "999"], "regtune: error: --instruction 999: the linear-scan plan has instructions 0..62\n"),
    (["--mha", "--heads", "32"], "regtune: error: --mha needs --batch, --head-dim, --groups\n"),
    (["--heads", "32"], "regtune: error: --heads describe an MHA config: add --mha\n"),
    (["--mha", "--gemm", "2x2x2"], "regtune: error: --gemm and --mha: choose one thing to show\n"),
    (["--plan", "p.json", "--gemm", "2x2x2"], "regtune: error: --plan and --gemm: choose one thing to show\n"),
])
def test_screenshot_refuses_unknown_values_in_one_line(qtbot, tmp_path, capsys, flags, message):
    out = tmp_path / "never.png"
    if "--gemm" not in flags:
        flags = ["--gemm", "2x2x2", *flags] if "--mha" not in flags else flags
    assert command(["screenshot", *flags, "--out", str(out)]) == 2
    assert capsys.readouterr().err == message
    assert not out.exists()


@pytest.mark.parametrize("flags, message", [
    (["--select", "%nonexistent"], "--select %nonexistent: the mha heads 32"),
    (["--arch", "sm_75"], "--arch sm_75: unknown architecture for the window (known: sm_80, sm_90)"),
    (["--out-dir", "/etc/passwd"], "--out-dir /etc/passwd: is a file, not a folder"),
    (["--out", "/etc/passwd/x.png"], "--out"),
    (["--size", "99x99"], "--size 99x99: give WIDTHxHEIGHT in pixels, each 320..8192"),
    (["--view", "nowhere"], "--view nowhere: unknown view"),
])
def test_screenshot_refuses_a_bad_value_before_building_anything(tmp_path, flags, message):
    """Issue 22: --select, --arch and --out-dir were refused after the program and its plans were made in the
    window (5 s to 104 s). Each is one line now, from a process that never imported Qt: no window was made, so
    no plan either (``-X importtime`` lists every module the process imported)."""
    import time

    extra = [] if any(f.startswith("--out") for f in flags) else ["--out", str(tmp_path / "never.png")]
    mha = ["--mha", "--heads", "32", "--batch", "64", "--head-dim", "256", "--groups", "8"]
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "gui.entry", "screenshot", *mha, *flags,
                          *extra], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[3])
    elapsed = time.perf_counter() - start
    imported = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")]
    said = [line for line in run.stderr.splitlines() if not line.startswith("import time:")]
    assert run.returncode == 2 and len(said) == 1 and said[0].startswith(f"regtune: error: {message}"), said
    assert imported and not any(m.startswith(("PySide6", "pyqtgraph", "gui.qt")) for m in imported)
    assert not (tmp_path / "never.png").exists()
    assert elapsed < 30, f"refused after {elapsed:.1f} s"


def test_screenshot_out_dir_writes_each_view_and_arch_picks_the_sass_views_arch(qtbot, tmp_path, capsys):
    folder = tmp_path / "pictures"
    assert command(["screenshot", "--gemm", "2x2x2", "--view", "all", "--arch", "sm_90", "--size", "1280x800",
                    "--out-dir", str(folder)]) == 0
    names = ["window", "timeline", "graph", "compare", "sass", "sweep", "diff"]
    assert capsys.readouterr().out.split() == [str(folder / f"{n}.png") for n in names]
    image = QImage(str(folder / "window.png"))
    assert (image.width(), image.height()) == (1280, 800)
    assert all(not QImage(str(folder / f"{n}.png")).isNull() for n in names)


def test_screenshot_shows_an_mha_config_with_the_mha_flags_of_the_other_commands(qtbot, tmp_path, capsys):
    out = tmp_path / "mha.png"
    assert command(["screenshot", "--mha", "--heads", "32", "--batch", "64", "--head-dim", "64", "--groups", "4",
                    "--strategies", "fp16-softmax", "--view", "timeline", "--select", "%o_0_0",
                    "--out", str(out)]) == 0
    image = QImage(str(out))
    assert not image.isNull() and image.width() > 400
    bad = command(["screenshot", "--mha", "--heads", "3", "--batch", "64", "--head-dim", "64", "--groups", "4",
                   "--out", str(out)])
    assert bad == 2 and capsys.readouterr().err.startswith("regtune: error: --mha: workload: field 'heads'")


def test_qt_offscreen_noise_is_dropped_and_every_other_message_passed_on(capsys):
    passed = []
    handler = drop_noise(lambda kind, context, message: passed.append(message))
    handler(None, None, NOISE[0])
    handler(None, None, "QPainter::begin: Paint device returned engine == 0")
    assert passed == ["QPainter::begin: Paint device returned engine == 0"]
    drop_noise()(None, None, NOISE[0])
    drop_noise()(None, None, "something Qt wants said")
    assert capsys.readouterr().err == "something Qt wants said\n"


def test_an_offscreen_screenshot_prints_no_qt_noise(tmp_path):
    out = tmp_path / "shot.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT),
           "REGTUNE_SESSION_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "gui.entry", "screenshot", "--gemm", "2x2x2", "--view", "graph",
                          "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{out}\n" and "propagateSizeHints" not in run.stderr, run.stderr


# -- one autosave per window --------------------------------------------------------------------------

def test_two_open_windows_autosave_apart_and_the_second_is_not_offered_the_first(qtbot, window):
    window.edit(Move(30, 29))
    first = json.loads(autosave_path().read_text())
    second = QtMainWindow(start_jobs=False)        # restore=None: it would ask if it found a session to restore
    qtbot.addWidget(second)
    assert second.autosave_slot.path != window.autosave_slot.path
    assert not second.autosave_slot.orphaned and "restored" not in second.status_text.text()
    second.allocate_now({"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}, BuildOptions())
    assert json.loads(autosave_path().read_text()) == first      # the first window's autosave untouched
    assert json.loads(second.autosave_slot.path.read_text())["workload"]["m"] == 2
    second.close()
    assert not second.autosave_slot.path.exists()                 # a clean close clears its own
    assert autosave_path().exists()


def test_a_crashed_windows_autosave_is_offered_to_the_next_window(qtbot, window):
    window.edit(Move(30, 29))
    window.autosave_slot.release()                 # the process died: the system dropped its lock
    again = QtMainWindow(restore=True, start_jobs=False)
    qtbot.addWidget(again)
    assert again.autosave_slot.path == autosave_path()
    assert "hand 1" in again.doc.session.plans and "restored" in again.status_text.text()


# -- the timeline ------------------------------------------------------------------------------------

def test_the_legend_reads_light_on_a_dark_box_and_the_budget_label_is_whole(window):
    legend = window.timeline.legend
    assert legend.items
    for _sample, label in legend.items:
        colour = pg.mkColor(label.opts["color"])               # the colour the label's text is drawn in
        assert colour.lightness() > 200, colour.name()
    assert legend.opts["brush"].color().lightness() < 60 and legend.opts["brush"].color().alpha() > 150
    label = window.timeline.budget_line.label
    assert label.toPlainText() == "budget 255"
    box = label.mapRectToScene(label.boundingRect())
    view = window.timeline.pressure_plot.vb.sceneBoundingRect()
    assert view.left() <= box.left() and box.right() <= view.right()
    assert view.top() <= box.top() and box.bottom() <= view.bottom()


def test_the_pressure_line_is_called_maxlive_only_for_the_program_without_spill_code(window):
    """MAXLIVE is the program's, before spill code; a spilled plan's curve peaks at its pressure with spill code."""
    plans = window.doc.session.plans
    spilled = next((n for n, p in plans.items() if p.spills), None)
    clean = next(n for n, p in plans.items() if not p.spills)
    window.doc.set_current(clean)
    window.flush()
    label = window.timeline.maxlive_line.label.toPlainText()
    assert label == f"MAXLIVE {window.doc.analysis().maxlive}"
    if spilled is None:
        window.edit(Spill(next(n for n, v in window.doc.plan.program.values.items() if v.width == 1)))
        spilled = window.doc.session.current
    window.doc.set_current(spilled)
    window.flush()
    peak = window.doc.analysis().maxlive
    assert window.timeline.maxlive_line.label.toPlainText() == f"peak with spill code {peak}"


def test_the_toolchain_line_reads_the_doctor_record_and_names_a_missing_tool(monkeypatch):
    import cuda.pathfinder

    from engine.base.jobs import NullProgress
    from gui.qt.qt_main_window import _doctor_job
    from kernels import toolchain

    found = toolchain.doctor()
    line = _doctor_job(NullProgress())
    assert line == (f"ptxas {found.tool('ptxas').version}  |  {found.tool('nvvm').version}  |  "
                    f"GPU: {found.device or 'no CUDA device'}")
    real = cuda.pathfinder.find_nvidia_binary_utility
    toolchain.find_tool.cache_clear()
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None if name == "ptxas" else real(name))
    try:
        line = _doctor_job(NullProgress())
    finally:
        toolchain.find_tool.cache_clear()
    assert line.startswith(f"ptxas missing  |  {found.tool('nvvm').version}  |  GPU: ")
    assert line.endswith("  |  missing: ptxas not found in NVIDIA's pip wheels; pip install nvidia-cuda-nvcc")
