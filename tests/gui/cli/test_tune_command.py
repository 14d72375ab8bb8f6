"""``regtune tune``: the edits, MAXLIVE before and after, the allocator's registers, occupancy and real ptxas."""

from __future__ import annotations

import json

from engine.analysis.dependence import reordering_problem
from engine.planfile import load_plan
from gui.cli.main import main


def _plan(tmp_path) -> str:
    path = str(tmp_path / "p.json")
    assert main(["allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", "--schedule", "load-all-first",
                 "--allocator", "dsatur", "--out", path, "--no-verify"]) == 0
    return path


def test_tune_prints_edits_figures_and_ptxas(tmp_path, capsys):
    path = _plan(tmp_path)
    capsys.readouterr()
    out_path = str(tmp_path / "tuned.json")
    assert main(["tune", path, "--next-step", "--out", out_path]) == 0
    out = capsys.readouterr().out
    assert "1. move instruction" in out and "re-allocate with dsatur at the new schedule" in out
    assert "MAXLIVE" in out and "occupancy (sm_80" in out and "identity proof:" in out
    assert "ptxas sm_80 plan cap (-arch=sm_80 -v -maxrregcount=" in out and "ptxas sm_80 no cap (-arch=sm_80 -v)" in out
    tuned, plan = load_plan(out_path), load_plan(path)
    assert reordering_problem(tuned.program, plan.program) is None
    assert main(["check", out_path]) == 0


def test_tune_json_and_refusals(tmp_path, capsys):
    path = _plan(tmp_path)
    capsys.readouterr()
    assert main(["tune", path, "--target-registers", "20", "--no-ptxas", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["maxlive_after"] <= data["maxlive_before"] and data["edits"][-1].startswith("re-allocate")
    assert main(["tune", path, "--target-registers", "20", "--next-step"]) == 2
    assert main(["tune", str(tmp_path / "missing.json"), "--next-step"]) == 2
    assert "regtune: error:" in capsys.readouterr().err


def test_tune_says_when_no_reordering_can_reach_the_step(tmp_path, capsys):
    """The design note's MHA (32 heads, head_dim 64, 4 groups): the bound is above the next step, and tune says so,
    with where, instead of 'a better schedule may exist'."""
    path = str(tmp_path / "mha.json")
    assert main(["allocate", "mha", "--heads", "32", "--batch", "1", "--head-dim", "64", "--groups", "4",
                 "--allocator", "dsatur", "--out", path, "--no-verify"]) == 0
    capsys.readouterr()
    assert main(["tune", path, "--next-step", "--no-ptxas", "--time-limit", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"] == 96 and data["lower_bound"] > data["target"] and not data["reached"]
    assert data["why_not"].startswith("no reordering within blocks can reach 96: every order keeps MAXLIVE >= ")
    assert data["lower_bound_reason"] in data["why_not"] and "block kv0" in data["lower_bound_reason"]
    assert main(["tune", path, "--next-step", "--no-ptxas", "--time-limit", "1"]) == 0
    out = capsys.readouterr().out
    assert f"lower bound over every reordering within blocks: {data['lower_bound']})" in out
    assert "round its loop back edge" in out and "may exist" not in out
