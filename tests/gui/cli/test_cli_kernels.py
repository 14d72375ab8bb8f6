"""``regtune build | compare | budget-sweep`` on real plans with the real toolchain."""

from __future__ import annotations

import csv
import json
import os
import re
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
    row = next(line for line in out.splitlines() if line.startswith("sm_80 SASS issue cycles/warp (model)"))
    assert int(row.split()[-1]) > 0
    for source in ("plan", "SASS"):
        row = next(line for line in out.splitlines() if line.startswith(f"sm_80 model time (us), {source} issue"))
        assert float(row.split()[-1].rstrip("*")) > 0
    assert "model time rows: engine/model/timemodel.py" in out and "never a measured time" in out
    report = json.loads(next((tmp_path / "o").glob("*.report.json")).read_text())
    assert report["model_time"]["sm_80"]["sass"]["source"] == "sass" and "measured" not in str(report["model_time"])
    assert "sm_80 ptxas registers, plan cap" in out and "sm_80 ptxas registers, no cap" in out
    assert "SASS MAXLIVE" in out and "not run (--no-simulate)" in out
    assert re.search(r"^  sm_80: at the plan cap \(-maxrregcount=\d+\) ptxas used \d+ registers", out, re.MULTILINE)
    assert re.search(r"^  sm_80: with no -maxrregcount \(ptxas's own choice", out, re.MULTILINE)
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(
        ["dsatur-plan.py", "dsatur-plan.ptx", "dsatur-plan.sm_80.sass", "dsatur-plan.report.json"])
    entry = "regtune_gemm_m4n4k4_t4x4_k_outer_dsatur"       # the kernel's short name in its PTX and SASS
    assert f".visible .entry {entry}(" in (tmp_path / "o" / "dsatur-plan.ptx").read_text()
    assert f".text.{entry}" in (tmp_path / "o" / "dsatur-plan.sm_80.sass").read_text()
    report = json.loads((tmp_path / "o" / "dsatur-plan.report.json").read_text())
    cap = report["ptxas"]["sm_80"]["max_registers"]
    assert report["ptxas"]["sm_80"]["flags"] == ["-arch=sm_80", "-v", f"-maxrregcount={cap}"]
    assert report["ptxas_compiler"]["sm_80"]["flags"] == ["-arch=sm_80", "-v"]


def test_compare_gemm_8x8x8_shows_ptxas_at_the_plan_cap_and_with_no_cap_with_their_flags(capsys):
    args = ["compare", "gemm", "--m", "8", "--n", "8", "--k", "8", "--allocators", "chaitin-briggs", "--no-simulate"]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "maxrregcount=255" not in table
    assert main([*args, "--format", "json"]) == 0
    rows = {r["row"]: r["values"]["chaitin-briggs"] for r in json.loads(capsys.readouterr().out)["rows"]}
    for arch in ("sm_80", "sm_90"):
        for label in ("ptxas flags, plan cap", "ptxas registers, plan cap", "ptxas flags, no cap",
                      "ptxas registers, no cap"):
            assert f"{arch} {label}" in table
        assert rows[f"{arch} ptxas flags, plan cap"] == f"-arch={arch} -v -maxrregcount=88"
        assert rows[f"{arch} ptxas flags, no cap"] == f"-arch={arch} -v"
        # measured with ptxas 13.5: 88 at the plan cap, 96 with no flag (217 with the old -maxrregcount=255)
        assert rows[f"{arch} ptxas registers, plan cap"] <= 88 < rows[f"{arch} ptxas registers, no cap"] < 217
    assert main([*args, "--format", "csv", "--metrics", "flags"]) == 0
    assert [row[1] for row in list(csv.reader(capsys.readouterr().out.splitlines()))[1:]] == [
        f"{a} ptxas flags, {cap}" for a in ("sm_80", "sm_90") for cap in ("plan cap", "no cap")]


def test_compare_has_a_column_per_allocator_and_plan(tmp_path, capsys):
    plan = str(tmp_path / "plan.json")          # a plan of the compared workload (issue 19: like with like)
    assert main(["allocate", "gemm", "--m", "3", "--n", "3", "--k", "3", "--allocator", "dsatur", "--out", plan]) == 0
    capsys.readouterr()
    assert main(["compare", "gemm", "--m", "3", "--n", "3", "--k", "3", "--arch", "sm_80", "--plan", plan,
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plans"] == ["naive", "linear-scan-hull", "linear-scan", "chaitin-briggs", "dsatur", "plan"]
    assert data["compared"] == "gemm 3x3x3, tile 3x3, schedule k-outer, budget 255; sm_80"
    rows = {r["row"]: r["values"] for r in data["rows"]}
    assert all(v.startswith("ok") for v in rows["simulator check"].values())
    assert all(v >= 1 for v in rows["sm_80 ptxas registers, plan cap"].values())


SPILLING_PLAN = ["gemm", "--m", "8", "--n", "8", "--k", "8", "--tile", "4x4", "--schedule", "load-all-first",
                 "--budget", "40", "--allocators", "linear-scan", "--arch", "sm_80", "--no-simulate"]


def test_fail_on_spill_does_not_count_the_plans_own_spill_code(capsys):
    """linear-scan at budget 40 spills 46 values by plan: that is what the plan asked for; ptxas at the plan's
    count (-maxrregcount=40) spills nothing of its own, so --fail-on-spill passes. (At budget 32 the Numba
    kernel has spilled 344 B of its own since the allocators rematerialise and split; the plan PTX at 32 spills
    nothing. --fail-on-spill exits 1 there, and says so.)"""
    assert main(["compare", *SPILLING_PLAN, "--fail-on-spill", "--format", "json"]) == 0
    printed = capsys.readouterr()
    rows = {r["row"]: r["values"]["linear-scan"] for r in json.loads(printed.out)["rows"]}
    assert rows["planned spills (values)"] > 0 and rows["sm_80 stack frame bytes, plan cap"] > 0
    assert rows["sm_80 spill bytes (st+ld), plan cap"] == 0 and "ptxas spills" not in printed.err


def test_fail_on_spill_names_ptxas_own_spills_at_the_cap_on_stderr():
    """DSatur's GEMM 8x8x8 plan (88 registers, no spill code) fits ptxas at its own count; the same PTX assembled
    by real ptxas at the floor (-maxrregcount=24) spills on its own: those bytes, and the cap they came at, are
    what --fail-on-spill reports."""
    import dataclasses

    from engine.alloc import allocate
    from engine.predict import predicted_plan
    from engine.workloads.gemm import Gemm, build_gemm
    from gui.cli.kernels import unasked_spills
    from kernels.pipeline import measure
    from kernels.report import ptxas_figures
    from kernels.toolchain import ptxas

    program, options = build_gemm(Gemm(8, 8, 8))
    plan = predicted_plan(allocate("dsatur", program, 255), workload={"kind": "gemm", "m": 8, "n": 8, "k": 8},
                   options=options)
    m = measure(plan, ("sm_80",), skip_simulator="not needed here")
    assert not plan.spills and unasked_spills([("dsatur", m)], ["sm_80"]) == []
    report, _cubin = ptxas(m.listings.ptx, "sm_80", 24)
    lower = ptxas_figures(report, "plan", m.planned.threads_per_block)
    assert lower.spill_bytes > 0, "the test needs ptxas to spill at 24 registers"
    found = unasked_spills([("dsatur", dataclasses.replace(m, ptxas={"sm_80": lower}))], ["sm_80"])
    assert found == [f"dsatur on sm_80: {lower.spill_store_bytes} B stored, {lower.spill_load_bytes} B loaded "
                     "at the plan cap -maxrregcount=24"]


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
    assert [row[1] for row in list(csv.reader(lines))[1:]] == [            # labels with a comma are quoted
        "planned registers", "planned spills (values)", "sm_80 ptxas registers, plan cap",
        "sm_80 ptxas registers, no cap", "sm_80 spill bytes (st+ld), no cap", "sm_80 allocated (8/thread), plan cap",
        "sm_80 spill bytes (st+ld), plan cap", "sm_80 stack frame bytes, plan cap",
        "sm_80 plan PTX registers, plan cap", "sm_80 plan PTX registers, no cap", "sm_80 plan PTX spill bytes, plan cap"]
    assert "regtune compare: linear-scan: done: 6/6" in printed.err
    assert main([*args, "--format", "markdown"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "|  | dsatur | linear-scan |"
    assert main([*args[:-1], "cycle"]) == 2
    assert "--metrics: unknown metric 'cycle' (known: registers, maxlive, spills" in capsys.readouterr().err
    assert main([*args[:-1], "ilp,cycles", "--format", "csv"]) == 0     # the ILP model's rows are metrics too
    rows = [line.split(",")[1] for line in capsys.readouterr().out.splitlines()[1:]]
    archs = sorted({line.split()[0] for line in rows if line.startswith("sm_")})
    # the cycle rows: the SASS's issue cycles per arch (a model on the measured SASS) and the plan's
    assert rows == [f"{a} SASS issue cycles/warp (model)" for a in archs] + ["ILP (model)", "cycles/warp (model)"]


def test_ctrl_c_during_compare_keeps_the_plans_measured(small_plans, tmp_path):
    regtune = os.path.join(os.path.dirname(sys.executable), "regtune")
    # an empty build cache: with the kernels cached by earlier tests the second plan could be measured before the
    # signal arrives (seen in CI), and there would be nothing left to interrupt
    env = {**os.environ, "REGTUNE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([regtune, "compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators",
                             "dsatur,linear-scan", "--arch", "sm_80", "--format", "csv"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=env,
                            preexec_fn=_interruptible)
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


def _interruptible() -> None:
    """In the child: Ctrl+C as a terminal's foreground command gets it. A runner started in the background (nohup,
    a CI script's ``&``) passes SIGINT on ignored, and the command would never see the test's Ctrl+C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


OUT_OF_BOUNDS = (".kernel oob\n.block entry\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n"
                 "  st.global %pa, 4194304, %x\n  exit\n")


def test_build_and_compare_exit_1_when_the_simulator_check_raises_and_keep_the_report(tmp_path, capsys):
    """Issue 19: a valid allocation whose kernel indexes past its buffer (a program file; the interpreter has
    no bounds) raised IndexError in the simulator and build still exited 0."""
    source = tmp_path / "oob.txt"
    source.write_text(OUT_OF_BOUNDS)
    plan = tmp_path / "oob.json"
    assert main(["allocate", str(source), "--allocator", "dsatur", "--out", str(plan)]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["build", str(plan), "--arch", "sm_80", "--out-dir", str(out)]) == 1
    captured = capsys.readouterr()
    assert "sm_80 ptxas registers, plan cap" in captured.out                   # the other figures are kept
    assert captured.err.splitlines()[-1].startswith("regtune: dsatur-oob: the simulator check raised: IndexError")
    assert json.loads((out / "dsatur-oob.report.json").read_text())["simulator"]["error"].startswith("IndexError")
    assert main(["build", str(plan), "--arch", "sm_80", "--out-dir", str(out), "--no-simulate"]) == 0
    capsys.readouterr()
    assert main(["compare", str(source), "--allocators", "dsatur", "--arch", "sm_80", "--plan", str(plan)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[1].strip() for line in err if "simulator check raised" in line] == ["dsatur", "oob"]


def test_a_simulator_mismatch_and_a_failed_gpu_run_are_failures_and_a_skipped_check_is_not():
    from gui.cli.kernels import failed_checks
    from kernels.measurement import GpuRun, SimulatorCheck, Unavailable

    class M:
        def __init__(self, simulator, gpu):
            self.simulator, self.gpu = simulator, gpu

    ok = SimulatorCheck(True, 0.0, 1e-5, 2, 1.0, reference="numpy: max abs error 0 within 1e-05")
    bad = SimulatorCheck(False, 0.5, 1e-5, 2, 1.0, reference="numpy: max abs error 0.5, OUTSIDE its tolerance")
    gpu_bad = GpuRun(False, 0.5, 1e-5, "H200", 0.1, 20, 1024, 40, 0)
    none = Unavailable("no CUDA device")
    assert failed_checks([("a", M(ok, none))], True) == []
    assert failed_checks([("a", M(Unavailable("not run (--no-simulate)"), none))], False) == []
    assert failed_checks([("a", M(bad, none))], True) == [
        "a: the simulator check failed: MISMATCH: numpy: max abs error 0.5, OUTSIDE its tolerance"]
    assert failed_checks([("a", M(Unavailable("worker timed out"), none))], True) == [
        "a: the simulator check raised: worker timed out"]
    assert failed_checks([("a", M(ok, gpu_bad))], True) == ["a: the GPU run disagrees with numpy: MISMATCH (max err 0.5)"]


def test_compare_refuses_a_plan_of_another_workload_before_any_work(tmp_path, capsys):
    plan = _plan(tmp_path)                                   # a GEMM 4x4x4 plan
    capsys.readouterr()
    assert main(["compare", "gemm", "--m", "8", "--n", "8", "--k", "8", "--plan", plan]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"regtune: error: --plan {plan}: a plan for gemm 4x4x4, not for gemm 8x8x8: compare shows "
                            "plans of one workload side by side (give that plan a compare of its own)\n")


def test_compare_help_the_unknown_metric_error_and_the_readme_list_the_same_metrics(capsys):
    """Issue 22: compare --help listed 12 metrics, the README and the error message 13."""
    import re
    from pathlib import Path

    from gui.cli.compare_output import METRICS, comparison

    rows = list(dict.fromkeys(r.metric for r in comparison([], ("sm_80", "sm_90"), []).rows))
    assert rows == list(METRICS)
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    listed = re.search(r"rows to show \(default all\), from: ([a-z, -]+?) --format", helped).group(1)
    assert listed.split(", ") == list(METRICS)
    assert main(["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--metrics", "nope"]) == 2
    said = re.search(r"\(known: (.*)\)", capsys.readouterr().err).group(1)
    assert said.split(", ") == list(METRICS)
    readme = " ".join((Path(__file__).parents[3] / "README.md").read_text().split())
    chosen = re.search(r"`--metrics` chooses the rows \((.*?); `compare --help`", readme).group(1)
    assert re.findall(r"`([a-z-]+)`", chosen) == list(METRICS)


def test_build_writes_the_per_instruction_pressure_of_the_plan_and_of_its_sass_as_csv(tmp_path, capsys):
    """Issue 22: the per-instruction pressure (plan and SASS) as CSV from the command line."""
    from engine.analysis.liveness import analyze
    from engine.planfile import load_plan
    from kernels.sass import parse_sass

    plan_path = _plan(tmp_path)
    out = tmp_path / "out"
    assert main(["build", plan_path, "--arch", "sm_80", "--out-dir", str(out), "--no-simulate",
                 "--pressure-csv"]) == 0
    assert "dsatur-plan.pressure.csv" in capsys.readouterr().out
    rows = list(csv.DictReader((out / "dsatur-plan.pressure.csv").open()))
    plan = load_plan(plan_path)
    pressure = analyze(plan.program).pressure.tolist()
    planned = [r for r in rows if r["source"] == "plan"]
    assert [int(r["live_registers"]) for r in planned] == pressure
    assert [r["instruction"] for r in planned] == [str(ins) for ins in plan.program.instructions]
    sass = parse_sass((out / "dsatur-plan.sm_80.sass").read_text())
    measured = [r for r in rows if r["source"] == "sass"]
    assert {r["arch"] for r in measured} == {"sm_80"}
    assert [int(r["live_registers"]) for r in measured] == sass.pressure.tolist()
    assert [r["offset"] for r in measured] == list(sass.offsets)
    assert all(r["stall_cycles"].isdigit() for r in measured)
    linked = [int(r["plan_instruction"]) for r in measured if r["plan_instruction"]]
    assert linked and all(0 <= i < len(pressure) for i in linked)


def test_compare_asked_for_registers_and_spills_starts_no_simulator_even_cold(tmp_path, monkeypatch, capsys):
    """Issue 21: metrics that need no simulation do not start one; a second compare runs no worker at all."""
    import kernels.build
    import kernels.run

    monkeypatch.setenv("REGTUNE_CACHE_DIR", str(tmp_path / "cache"))          # cold: nothing built yet
    started = []
    real = kernels.run.run_worker

    def counted(request, *args, **kwargs):
        started.append(request["mode"])
        return real(request, *args, **kwargs)

    for module in (kernels.run, kernels.build):
        monkeypatch.setattr(module, "run_worker", counted)
    args = ["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators", "dsatur,linear-scan",
            "--arch", "sm_80", "--format", "csv"]
    assert main([*args, "--metrics", "registers,spills"]) == 0
    # NVVM once (the two plans' kernel functions are one text: the same program, no spills), no simulator
    assert started == ["ptx"]
    assert "simulator" not in capsys.readouterr().out
    started.clear()
    assert main([*args, "--metrics", "registers,simulator"]) == 0
    assert started == ["simulator", "simulator"]     # the builds come from the cache; the simulator is asked for
    rows = {row[1]: row[2:] for row in csv.reader(capsys.readouterr().out.splitlines())}
    assert all(v.startswith("ok") and "taken both ways" in v for v in rows["simulator check"])
    started.clear()
    assert main(args) == 0 and started == []         # every row, from the cache: no worker at all
