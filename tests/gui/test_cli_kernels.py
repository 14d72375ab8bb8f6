"""``regtune build | compare | budget-sweep`` on real plans with the real toolchain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

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
        schedule = report["sass"][arch]["schedule"]
        assert schedule["issue_cycles"] >= schedule["instructions_issued"] > 0
        assert schedule["source"].startswith("model: stalls and scoreboards decoded from the SASS control bits")
    assert report["simulator"]["ok"] is True
    assert report["gpu"] == {"error": "no CUDA device"} or "median_ms" in report["gpu"]
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["dsatur-plan.py", "dsatur-plan.ptx", "dsatur-plan.report.json", "dsatur-plan.sm_80.sass",
                            "dsatur-plan.sm_90.sass"])
    assert json.loads((out / "dsatur-plan.report.json").read_text())["planned"] == report["planned"]


def test_build_prints_the_planned_vs_actual_table(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    assert main(["build", plan, "--arch", "sm_80", "--out-dir", str(tmp_path / "o"), "--no-simulate"]) == 0
    out = capsys.readouterr().out
    assert "sm_80 ptxas registers" in out and "SASS MAXLIVE" in out and "not run (--no-simulate)" in out
    row = next(line for line in out.splitlines() if line.startswith("sm_80 SASS issue cycles/warp (model)"))
    assert int(row.split()[-1]) > 0


def test_compare_has_a_column_per_allocator_and_plan(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    assert main(["compare", "gemm", "--m", "3", "--n", "3", "--k", "3", "--arch", "sm_80", "--plan", plan,
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plans"] == ["naive", "linear-scan", "chaitin-briggs", "dsatur", "plan"]
    assert data["compared"] == "gemm 3x3x3, tile 3x3, schedule k-outer, budget 255; sm_80"
    rows = {r["row"]: r["values"] for r in data["rows"]}
    assert all(v.startswith("ok") for v in rows["simulator check"].values())
    assert all(v >= 1 for v in rows["sm_80 ptxas registers"].values())


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


# -- issue 13: outputs named after the plan, compare's rows and formats, progress, Ctrl+C -------------------

@pytest.fixture(scope="module")
def small_plans(tmp_path_factory):
    """GEMM 2x2x2 plans of dsatur and linear-scan (the kernels the tests below build; the cache keeps them)."""
    folder = tmp_path_factory.mktemp("plans")
    paths = []
    for allocator in ("dsatur", "linear-scan"):
        path = folder / f"{allocator}.json"
        assert main(["allocate", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocator", allocator,
                     "--out", str(path)]) == 0
        paths.append(str(path))
    return paths


def test_two_plans_built_into_one_folder_keep_their_own_files(small_plans, tmp_path, capsys):
    out = tmp_path / "out"
    for plan in small_plans:
        assert main(["build", plan, "--arch", "sm_80", "--out-dir", str(out), "--no-simulate"]) == 0
    printed = capsys.readouterr()
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{a}{ext}" for a in ("dsatur", "linear-scan")
                           for ext in (".py", ".ptx", ".sm_80.sass", ".report.json"))
    reports = [json.loads((out / f"{a}.report.json").read_text()) for a in ("dsatur", "linear-scan")]
    assert [r["plan"]["allocator"] for r in reports] == ["dsatur", "linear-scan"]
    assert "dsatur (gemm 2x2x2, tile 2x2, schedule k-outer), budget 255" in printed.out
    assert "regtune build: dsatur: build (NVVM, ptxas, nvdisasm): 0/3" in printed.err


def test_compare_chooses_rows_and_formats(small_plans, capsys):
    args = ["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators", "dsatur,linear-scan",
            "--arch", "sm_80", "--no-simulate", "--metrics", "registers,spills"]
    assert main([*args, "--format", "csv"]) == 0
    printed = capsys.readouterr()
    lines = printed.out.splitlines()
    assert lines[0] == "metric,row,dsatur,linear-scan"
    assert {line.split(",")[0] for line in lines[1:]} == {"registers", "spills"}
    assert [line.split(",")[1] for line in lines[1:]] == [
        "planned registers", "planned spills (values)", "sm_80 ptxas registers", "sm_80 allocated (8/thread)",
        "sm_80 spill bytes (st+ld)", "sm_80 stack frame bytes"]
    assert "regtune compare: linear-scan: done: 6/6" in printed.err
    assert main([*args, "--format", "markdown"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "|  | dsatur | linear-scan |"
    assert main([*args[:-1], "cycle"]) == 2
    assert "--metrics: unknown metric 'cycle' (known: registers, maxlive, spills" in capsys.readouterr().err
    assert main([*args[:-1], "ilp,cycles"]) == 0     # the ILP model's rows are metrics too
    rows = [line.split(",")[1] for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows == ["ILP (model)", "cycles/warp (model)"]


def test_ctrl_c_during_compare_keeps_the_plans_measured(small_plans):
    regtune = os.path.join(os.path.dirname(sys.executable), "regtune")
    proc = subprocess.Popen([regtune, "compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators",
                             "dsatur,linear-scan", "--arch", "sm_80", "--format", "csv"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    err = []
    for line in proc.stderr:
        err.append(line)
        if line.startswith("regtune compare: linear-scan:"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    out, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(err) + rest
    assert out.splitlines()[0] == "metric,row,dsatur"
    assert rest.splitlines()[-1].startswith("regtune: interrupted (Ctrl+C)")
