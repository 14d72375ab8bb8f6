"""Cancel in the window kills a running build's worker, and everything it started, at once."""

from __future__ import annotations

import os
import time

import pytest
from PySide6.QtWidgets import QApplication

from engine.workloads import BuildOptions
from gui.qt.qt_main_window import QtMainWindow


def _children() -> dict:
    """pid -> parent pid of every live (not zombie) process."""
    out = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            out[int(entry)] = int(fields[1])
    return out


def _descendants(pid: int) -> set:
    live, found, frontier = _children(), set(), {pid}
    while frontier:
        frontier = {p for p, parent in live.items() if parent in frontier} - found
        found |= frontier
    return found


def _workers(timeout: float, before: set, deeper: bool = True) -> set:
    """This process's worker tree (but the processes in ``before``, started by earlier tests of the same run),
    once the build worker has started its NVVM worker (``deeper``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        QApplication.processEvents()
        tree = _descendants(os.getpid()) - before
        nested = [p for p in tree if _children().get(p) in tree]
        if tree and (nested or not deeper):
            return tree
        time.sleep(0.05)
    pytest.fail(f"no build worker (with its NVVM worker) started within {timeout:g} s")


def _gone_within(pids: set, seconds: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        QApplication.processEvents()
        if not pids & set(_children()):
            return time.monotonic() - start
        time.sleep(0.02)
    pytest.fail(f"worker processes {sorted(pids & set(_children()))} still run {seconds:g} s after the cancel")


@pytest.mark.slow
def test_cancel_and_a_new_build_kill_the_running_build_worker_at_once(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))
    monkeypatch.setenv("REGTUNE_CACHE_DIR", str(tmp_path / "cold-cache"))    # NVVM runs: the build takes a while
    window = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(window)
    window.allocate_now({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"}, BuildOptions(tile=(4, 4)))
    plans = dict(window.doc.session.plans)
    before = _descendants(os.getpid())                  # a whole test run may hold a pool of its own

    window.build_and_measure(plans)
    first = _workers(60, before)
    window.build_and_measure(plans)                     # a new build cancels the running one
    assert _gone_within(first, 1.0) < 1.0
    second = _workers(60, before) - first
    assert second, "the new build started no worker"
    window.cancel_button.click()
    assert _gone_within(second, 1.0) < 1.0
    window.wait_for_jobs(10000)
    assert not window.jobs.busy() and not window.doc.session.measurements
    assert window.last_error is None, window.last_error


@pytest.mark.slow
def test_the_window_sweep_reaches_the_last_cap_with_stack_bytes(qtbot, tmp_path, monkeypatch):
    """The window's sweep is the CLI's: it ends at 255 (the window's copy stopped at 248) and has stack bytes."""
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path / "session"))
    window = QtMainWindow(restore=False, start_jobs=False)
    qtbot.addWidget(window)
    window.allocate_now({"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}, BuildOptions(tile=(4, 4)))
    window.budget_sweep()
    window.wait_for_jobs(300000)
    assert window.last_error is None, window.last_error
    rows = window.sweep.rows
    assert [r.maxrregcount for r in rows] == [*range(24, 255, 8), 255]
    assert all(r.registers <= r.maxrregcount and r.stack_frame_bytes >= 0 for r in rows)
    assert window.tabs.currentWidget() is window.sweep and " on sm_80: " in window.sweep.caption.text()
