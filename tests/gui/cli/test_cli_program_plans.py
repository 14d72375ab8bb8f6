"""The README's IR example through the command: ``regtune allocate`` then ``regtune build``, the report
and what it prints (tests/kernels/test_program_plans.py tests the kernels' side)."""

from __future__ import annotations

import json

from engine.planfile import load_plan
from gui.cli.main import main
from kernels.measurement import Measurement, SimulatorCheck
from kernels.report import Column, compare_rows, planned
from tests.kernels.test_program_plans import EQUAL, EXAMPLE, _run_module


def _example_plan(tmp_path):
    path = tmp_path / "plan.json"
    assert main(["allocate", EXAMPLE, "--allocator", "naive", "--budget", "6", "--out", str(path)]) == 0
    return path


def test_the_readme_example_builds_and_its_spill_code_is_checked_in_the_simulator(tmp_path, capsys):
    plan_path = _example_plan(tmp_path)
    plan = load_plan(str(plan_path))
    assert plan.spills, "the README's example at budget 6 spills: that is what it shows"
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["build", str(plan_path), "--arch", "sm_80", "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "naive-plan.report.json").read_text())
    sim = report["simulator"]
    assert sim["ok"] is True and sim["runs"] == 3 and sim["tolerance"] == 0.0, sim
    assert "reference" not in sim                   # no numpy reference for a program file: none claimed
    found = EQUAL.fullmatch(sim["spill_code"])
    assert found, sim["spill_code"]
    elements, written, kept = (int(g.replace(",", "")) for g in found.groups())
    assert elements == 3 * 3 * (1 << 16) and written >= 3     # three arrays; C[0] written on each run
    assert written + kept == elements
    assert "plan's spill code vs compiler spills" in printed and "AttributeError" not in printed
    # 6 registers against the program's MAXLIVE of 8: the plan spills, it leaves no negative "slack"
    said = report["sass"]["sm_80"]["explanation"][0]
    assert said.startswith("planned registers 6 vs MAXLIVE 8: the plan spills 7 value(s) to local memory and "
                           "computes 2 again where they are read (rematerialised)"), said
    assert str(SimulatorCheck.from_dict(sim)) == "ok: " + sim["spill_code"]
    # the window's compare row reads the same typed field through the same rows as the command's table
    row = next(get for label, _, get in compare_rows(("sm_80",)) if label == "simulator check")
    assert row(Column(planned(plan, "sm_80"), Measurement.from_dict(report))) == "ok: " + sim["spill_code"]

    # the exported module runs on its own (numpy and numba, not RegTune) and makes the same comparison
    done = _run_module((out / "naive-plan.py").read_text(), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip()
    assert line.startswith("gemm_m1n1k2 (numba's simulator): plan's spill code vs compiler spills"), line
    assert "3 runs on the same seeded inputs (seeds 0..2): all 589,824 array elements equal bit for bit" in line
