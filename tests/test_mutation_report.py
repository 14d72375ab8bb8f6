"""``python -m tests.mutation --report-only`` where no run has been made (a fresh clone): it says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_report_only_on_a_fresh_clone_says_there_is_no_earlier_run(tmp_path):
    run = subprocess.run([sys.executable, "-m", "tests.mutation", "--report-only"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert run.returncode == 2, run.stderr
    assert "0/0" not in run.stdout + run.stderr and run.stdout == ""
    assert run.stderr == (f"tests.mutation: no earlier run to report: {tmp_path / 'mutants'} does not exist (run "
                          "'python -m tests.mutation' from the repository root first; it keeps its results there)\n")


def test_a_report_with_no_mutant_tested_gives_no_rate(capsys):
    from tests.mutation import report

    assert report({"engine.check.symbolic.x_f__mutmut_1": "not checked"}, {}) is None
    out = capsys.readouterr().out
    assert "no mutant has been tested yet" in out and "0/0" not in out
