"""``regtune build | compare | budget-sweep`` on real plans with the real toolchain."""

from __future__ import annotations

import json

from gui.cli.main import main


def _plan(tmp_path, *flags) -> str:
    path = tmp_path / "plan.json"
    assert main(["allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", *flags, "--allocator", "dsatur",
                 "--out", str(path)]) == 0
    return str(path)


def test_build_writes_kernel_ptx_sass_and_report(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["build", plan, "--out-dir", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("registers", "maxlive", "spills"):
        assert isinstance(report["planned"][key], int)
    for arch in ("sm_80", "sm_90"):
        assert set(report["ptxas"][arch]) >= {"registers", "spill_store_bytes", "spill_load_bytes", "stack_frame_bytes"}
        assert report["sass"][arch]["maxlive"] <= report["ptxas"][arch]["registers"]
        assert report["sass"][arch]["explanation"]
    assert report["simulator"]["ok"] is True
    assert report["gpu"] == {"error": "no CUDA device"} or "median_ms" in report["gpu"]
    names = sorted(p.name for p in out.iterdir())
    assert "report.json" in names and any(n.endswith(".py") for n in names) and any(n.endswith(".ptx") for n in names)
    assert sum(n.endswith(".sass") for n in names) == 2
    assert json.loads((out / "report.json").read_text())["planned"] == report["planned"]


def test_build_prints_the_planned_vs_actual_table(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    assert main(["build", plan, "--arch", "sm_80", "--out-dir", str(tmp_path / "o"), "--no-simulate"]) == 0
    out = capsys.readouterr().out
    assert "sm_80 ptxas registers" in out and "SASS MAXLIVE" in out and "not run (--no-simulate)" in out


def test_compare_has_a_column_per_allocator_and_plan(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    assert main(["compare", "gemm", "--m", "3", "--n", "3", "--k", "3", "--arch", "sm_80", "--plan", plan,
                 "--json"]) == 0
    columns = json.loads(capsys.readouterr().out)
    assert set(columns) == {"naive", "linear-scan", "chaitin-briggs", "dsatur", "plan"}
    for report in columns.values():
        assert report["simulator"]["ok"] is True and report["ptxas"]["sm_80"]["registers"] >= 1


def test_compare_fail_on_spill_exits_1_when_a_kernel_spills(capsys):
    args = ["compare", "gemm", "--m", "8", "--n", "8", "--k", "8", "--tile", "4x4", "--schedule", "load-all-first",
            "--budget", "32", "--allocators", "linear-scan", "--arch", "sm_80", "--no-simulate", "--fail-on-spill"]
    assert main(args) == 1
    assert "spills in: linear-scan on sm_80" in capsys.readouterr().out


def test_budget_sweep_shows_the_spill_cliff(tmp_path, capsys):
    path = tmp_path / "big.json"
    assert main(["allocate", "gemm", "--m", "8", "--n", "8", "--k", "8", "--allocator", "linear-scan",
                 "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["budget-sweep", str(path), "--arch", "sm_80", "--from", "32", "--to", "96", "--json"]) == 0
    sweep = json.loads(capsys.readouterr().out)["sweep"]
    assert [r["maxrregcount"] for r in sweep] == list(range(32, 97, 8))
    assert all(r["registers"] <= r["maxrregcount"] for r in sweep)
    assert sweep[0]["spill_store_bytes"] > 0 and sweep[0]["active_warps"] >= sweep[-1]["active_warps"]


def test_kernel_commands_reject_bad_input_in_one_line(tmp_path, capsys):
    assert main(["build", str(tmp_path / "missing.json"), "--out-dir", str(tmp_path)]) == 2
    assert main(["budget-sweep", _plan(tmp_path), "--from", "300"]) == 2
    assert main(["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--arch", "sm_75"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("regtune: error: ") for line in err)
    assert "unknown architecture 'sm_75'" in err[2]


def test_without_a_display_the_window_command_says_so_in_one_line(monkeypatch, capsys):
    from gui.entry import command

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert command([]) == 2                 # the window's commands are joined in by gui.entry
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("regtune: error: no display to open the window on")
