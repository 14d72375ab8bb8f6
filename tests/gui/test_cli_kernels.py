"""``regtune build | compare | budget-sweep`` on real plans with the real toolchain."""

from __future__ import annotations

import json
import re

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
    assert "sm_80 ptxas registers, plan cap" in out and "sm_80 ptxas registers, no cap" in out
    assert "SASS MAXLIVE" in out and "not run (--no-simulate)" in out
    assert re.search(r"^  sm_80: at the plan cap \(-maxrregcount=\d+\) ptxas used \d+ registers", out, re.MULTILINE)
    assert re.search(r"^  sm_80: with no -maxrregcount \(ptxas's own choice", out, re.MULTILINE)
    stem = "regtune_gemm_m4n4k4_t4x4_k_outer_dsatur"      # the kernel's short name names its files
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(
        [f"{stem}.py", f"{stem}.ptx", f"{stem}.sm_80.sass", "report.json"])
    assert f".visible .entry {stem}(" in (tmp_path / "o" / f"{stem}.ptx").read_text()
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    cap = report["ptxas"]["sm_80"]["max_registers"]
    assert report["ptxas"]["sm_80"]["flags"] == ["-arch=sm_80", "-v", f"-maxrregcount={cap}"]
    assert report["ptxas_compiler"]["sm_80"]["flags"] == ["-arch=sm_80", "-v"]


def test_compare_gemm_8x8x8_shows_ptxas_at_the_plan_cap_and_with_no_cap_with_their_flags(capsys):
    args = ["compare", "gemm", "--m", "8", "--n", "8", "--k", "8", "--allocators", "chaitin-briggs", "--no-simulate"]
    assert main(args) == 0
    out = capsys.readouterr().out
    for arch in ("sm_80", "sm_90"):
        def row(label, arch=arch):
            return re.search(rf"^{arch} {label}\s+(.+)$", out, re.MULTILINE).group(1).strip()
        assert row("ptxas flags, plan cap") == f"-arch={arch} -v -maxrregcount=88"
        assert row("ptxas flags, no cap") == f"-arch={arch} -v"
        assert int(row("ptxas registers, plan cap")) <= 88 < int(row("ptxas registers, no cap")) < 206
    assert "maxrregcount=255" not in out
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["chaitin-briggs"]
    for arch in ("sm_80", "sm_90"):
        assert report["ptxas"][arch]["flags"] == [f"-arch={arch}", "-v", "-maxrregcount=88"]
        assert report["ptxas_compiler"][arch]["flags"] == [f"-arch={arch}", "-v"]
    assert report["kernel"]["entry"] == "regtune_gemm_m8n8k8_t8x8_k_outer_chaitin_briggs"


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
    report = json.loads(capsys.readouterr().out)
    sweep = report["sweep"]
    assert [r["maxrregcount"] for r in sweep] == list(range(32, 97, 8))
    assert all(r["registers"] <= r["maxrregcount"] for r in sweep)
    assert sweep[0]["spill_store_bytes"] > 0 and sweep[0]["active_warps"] >= sweep[-1]["active_warps"]
    assert report["plan_registers"] == 88 and report["no_cap"]["maxrregcount"] is None
    assert report["no_cap"]["registers"] > 0


def test_budget_sweep_marks_the_plans_count_and_ptxas_own_choice(tmp_path, capsys):
    path = tmp_path / "big.json"
    assert main(["allocate", "gemm", "--m", "8", "--n", "8", "--k", "8", "--allocator", "linear-scan",
                 "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["budget-sweep", str(path), "--arch", "sm_80", "--from", "80", "--to", "96"]) == 0
    lines = capsys.readouterr().out.splitlines()
    marked = [line for line in lines if "<- the plan's count" in line]
    assert len(marked) == 1 and marked[0].split()[0] == "88" and marked[0].endswith("88 registers")
    own = [line for line in lines if line.split()[:2] == ["no", "flag"]]
    assert len(own) == 1 and own[0].endswith("<- ptxas's own choice (no -maxrregcount)")
    assert [line.split()[0] for line in lines[2:5]] == ["80", "88", "96"]      # the rows are as they were


def test_kernel_commands_reject_bad_input_in_one_line(tmp_path, capsys):
    assert main(["build", str(tmp_path / "missing.json"), "--out-dir", str(tmp_path)]) == 2
    assert main(["budget-sweep", _plan(tmp_path), "--from", "300"]) == 2
    assert main(["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--arch", "sm_75"]) == 2
    assert main(["budget-sweep", _plan(tmp_path), "--from", "8"]) == 2      # ptxas would raise 8 to 24
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("regtune: error: ") for line in err)
    assert err[3] == ("regtune: error: --from 8: -maxrregcount=8 is not a cap ptxas applies on sm_80: it takes "
                      "24..255 (it would raise 8 to 24)")
    assert "unknown architecture 'sm_75'" in err[2]


def test_without_a_display_the_window_command_says_so_in_one_line(monkeypatch, capsys):
    from gui.entry import command

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert command([]) == 2                 # the window's commands are joined in by gui.entry
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("regtune: error: no display to open the window on")
