"""Issue 13, the command's daily use without a kernel build: what it says about the program it built, the
flags that changed nothing, MAXLIVE, versions, help, JSON, progress and the compare rows model."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui.cli.compare_output import WIDTH, Comparison, Row, metric_of, render
from gui.cli.progress import CommandProgress

REGTUNE = os.path.join(os.path.dirname(sys.executable), "regtune")
MHA = ["--heads", "32", "--batch", "64", "--head-dim", "64", "--groups", "4"]


def regtune(*args, cwd=None):
    return subprocess.run([REGTUNE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


# -- the program must not change behind the user's back ------------------------------------------

def test_the_budget_does_not_change_the_gemm_tile_unless_asked(tmp_path):
    """`allocate gemm 16x16x16 --budget 32` used to build a 4x2 tile and spill nothing."""
    out = tmp_path / "p.json"
    r = regtune("allocate", "gemm", "--m", "16", "--n", "16", "--k", "16", "--budget", "32",
                "--allocator", "linear-scan", "--out", str(out), "--no-verify")
    assert r.returncode == 0, r.stderr
    plan = json.loads(out.read_text())
    default = json.loads(regtune("analyze", "gemm", "--m", "16", "--n", "16", "--k", "16", "--json").stdout)["kernel"]
    assert plan["options"]["tile"] == [16, 8] and default == "gemm_m16n16k16_t16x8_k_outer"
    assert plan["spills"], "at budget 32 the architecture's default tile must spill"
    assert r.stdout.startswith("linear-scan (gemm 16x16x16, tile 16x8, schedule k-outer): ")
    r = regtune("analyze", "gemm", "--m", "16", "--n", "16", "--k", "16", "--budget", "32", "--tile", "fit")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("gemm_m16n16k16_t4x2_k_outer (gemm 16x16x16, tile 4x2, schedule k-outer): ")


def test_flags_without_effect_on_the_program_are_named_in_one_line():
    r = regtune("analyze", "mha", *MHA, "--strategies", "fp16-softmax,group-pools", "--tile", "4x4")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("regtune: note: no effect on the per-thread program: ")
    for named in ("--tile (a flag of gemm; the source is 'mha')", "--batch (the program is the same for all 9 values)",
                  "--strategies group-pools (the program is the same without it)"):
        assert named in r.stderr
    for acting in ("--heads", "--head-dim", "--groups", "fp16-softmax"):
        assert acting not in r.stderr
    r = regtune("program", "gemm", "--m", "4", "--n", "4", "--k", "4", "--budget", "16")
    assert "--budget (the program is the same at any budget" in r.stderr
    r = regtune("program", "gemm", "--m", "8", "--n", "8", "--k", "8", "--budget", "16", "--tile", "fit")
    assert r.returncode == 0 and r.stderr == ""


def test_maxlive_is_the_programs_and_the_peak_with_spill_code_has_its_own_name(tmp_path):
    out = tmp_path / "p.json"
    r = regtune("allocate", "mha", *MHA, "--allocator", "naive", "--out", str(out), "--no-verify")
    assert r.returncode == 0, r.stderr
    maxlive = json.loads(regtune("analyze", "mha", *MHA, "--json").stdout)["maxlive"]
    predicted = json.loads(out.read_text())["predicted"]
    assert predicted["maxlive"] == maxlive != predicted["peak_with_spill_code"]
    assert f"MAXLIVE {maxlive} (peak with spill code {predicted['peak_with_spill_code']})" in r.stdout


# -- output a tool can read, and a human can too -------------------------------------------------

@pytest.mark.parametrize("command", ["configs", "program", "analyze", "allocate", "occupancy", "report", "check",
                                     "doctor", "build", "compare", "budget-sweep", "gui", "screenshot"])
def test_version_and_an_example_everywhere(command):
    from importlib.metadata import version

    r = regtune(command, "--version")
    assert r.returncode == 0 and r.stdout == f"regtune {version('regtune')}\n"
    if command not in ("gui", "screenshot"):
        assert f"examples:\n  regtune {command}" in regtune(command, "--help").stdout


def test_top_level_version_and_help_ranges():
    assert regtune("--version").stdout.startswith("regtune ")
    text = " ".join(regtune("analyze", "--help").stdout.split())
    assert "rows of A and C, 2..16" in text and "one of 16, 32, 40, 64, 96, 128" in text
    assert "one of 1, 4, 16, 32, 64, 128, 256, 512, 1024" in text and "one of 32, 64, 80, 96, 128, 192, 256" in text


def test_check_json_says_what_was_checked_and_covered(tmp_path):
    loop = os.path.join(os.path.dirname(__file__), "..", "..", "..", "resources", "examples", "gemm_m1n1k2_loop.txt")
    out = tmp_path / "p.json"
    assert regtune("allocate", loop, "--allocator", "dsatur", "--budget", "6", "--out", str(out)).returncode == 0
    r = regtune("check", str(out), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    check = data["execution_check"]
    assert data["valid"] and data["allocator"] == "dsatur" and data["budget"] == 6
    assert check["verified"] and check["executed"] == check["instructions"] and check["stores_compared"] > 0


def test_doctor_json_names_the_real_tools():
    r = regtune("doctor", "--json")
    data = json.loads(r.stdout)
    assert r.returncode == (0 if data["ok"] else 1)
    assert {"ptxas", "nvdisasm", "nvvm", "cuda device"} <= set(data["found"])
    assert "ptxas" in data["found"]["ptxas"]


def test_report_names_the_design_note_and_never_a_seed():
    text = regtune("report", "--help").stdout
    assert "design note this tool started from" in " ".join(text.split()) and "seed" not in text
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    assert "regtune report claims" in readme and "seed" not in readme.lower().replace("seeds", "")


# -- progress ------------------------------------------------------------------------------------

def test_progress_without_a_terminal_is_plain_lines_with_stage_rate_and_time_left():
    stream = io.StringIO()
    with CommandProgress("compare", stream=stream, interval=0, terminal=False) as progress:
        stage = progress.stage("naive: build", 4)
        for done in range(1, 5):
            stage.advance(done, 4)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "regtune compare: naive: build: 0/4" and lines[-1].startswith("regtune compare: naive: build: 4/4 (")
    assert "about 0 s left" in lines[-1] and ("/s" in lines[-1] or "s each" in lines[-1])


def test_progress_on_a_terminal_is_a_rich_bar():
    stream = io.StringIO()
    with CommandProgress("report claims", stream=stream, terminal=True) as progress:
        stage = progress.stage("GEMM configs", 10)
        stage.advance(10, 10)
    assert "regtune report claims: GEMM configs" in stream.getvalue() and "10/10" in stream.getvalue()


def test_report_progresses_more_often_than_every_thousand_configs(tmp_path):
    r = regtune("report", "claims", "--sample", "151", "--ilp-sample", "675", "--workers", "1",
                "--out", str(tmp_path / "r.md"))
    assert r.returncode == 0, r.stderr
    counts = [line for line in r.stderr.splitlines() if line.startswith("regtune report claims: GEMM configs")]
    assert counts and counts[-1].split(": ")[2].startswith("23/23")
    ilp = [line for line in r.stderr.splitlines() if line.startswith("regtune report claims: ILP model over GEMM")]
    assert ilp and ilp[-1].split(": ")[2].startswith("5/5")


# -- the compare rows model and its renderings ---------------------------------------------------

def _comparison(plans=("naive", "dsatur")):
    rows = (Row("registers", "planned registers", "min", tuple(range(40, 40 + len(plans)))),
            Row("spills", "sm_80 spill bytes (st+ld)", "min", (0,) * len(plans)),
            Row("simulator", "simulator check", "", ("ok: 1024 outputs matched numpy within 1e-5",) * len(plans)))
    return Comparison(tuple(plans), rows)


def test_metric_names_and_new_rows_merge_in():
    assert metric_of("sm_90 ptxas registers") == metric_of("planned registers") == "registers"
    assert metric_of("sm_80 ptxas at the plan's cap: registers") == "ptxas-at-the-plan-s-cap-registers"
    with pytest.raises(Exception, match="unknown metric 'cycle' "):
        _comparison().only(["cycle"])
    assert _comparison().only(["cycles"]).rows == ()     # a metric of the model that these rows lack: none
    assert [r.metric for r in _comparison().only(["spills"]).rows] == ["spills"]


def test_every_format_stars_the_best_and_keeps_every_value():
    c = _comparison()
    csv_text = render(c, "csv")
    assert csv_text.splitlines()[1] == "registers,planned registers,40*,41"
    data = json.loads(render(c, "json", "gemm 2x2x2"))
    assert data["rows"][0]["best"] == 40 and data["rows"][0]["values"] == {"naive": 40, "dsatur": 41}
    assert "| planned registers | 40\\* | 41 |" in render(c, "markdown")
    table = render(c, "table", "gemm 2x2x2")
    assert "40*" in table and "[1] ok: 1024 outputs matched numpy within 1e-5" in table
    assert "* best value of its row" in table


def test_the_table_fits_100_columns_with_plans_as_rows_when_they_do_not_fit_as_columns():
    plans = tuple(f"hand-copy-{k}-of-dsatur" for k in range(6))
    table = render(_comparison(plans), "table")
    assert max(map(len, table.splitlines())) <= WIDTH
    assert any(line.startswith("hand-copy-0-of-dsatur ") for line in table.splitlines())
    narrow = render(_comparison(), "table")
    assert narrow.splitlines()[0].split() == ["naive", "dsatur"]


def test_plain_progress_shows_a_fast_sweep_at_least_every_250_items():
    """`report` used to print every 1,000 configs; a fast sweep still shows its count every 250 items."""
    stream = io.StringIO()
    with CommandProgress("report claims", stream=stream, interval=3600, terminal=False) as progress:
        stage = progress.stage("GEMM configs", 1000)
        for done in range(8, 1001, 8):
            stage.advance(done, 1000)
    counts = [int(line.split(": ")[2].split("/")[0]) for line in stream.getvalue().splitlines()]
    assert counts[0] == 0 and counts[-1] == 1000
    assert all(b - a <= 256 for a, b in zip(counts, counts[1:])) and len(counts) >= 5


def test_progress_estimates_from_recent_items_and_never_prints_0_of_0(monkeypatch):
    """Issue 22: 'about 1,132 s left' after a slow first item, and 'report claims' printed '0/0'."""
    import io

    import gui.cli.progress as progress_module
    from gui.cli.progress import CommandProgress

    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    stream = io.StringIO()
    with CommandProgress("demo", stream=stream, interval=0, terminal=False) as progress:
        stage = progress.stage("configs", 0)                  # the total is not known yet
        clock[0] = 40.0
        stage.advance(1, 0)
        stage.advance(1, 30)                                   # now it is: shown at once
        for k in range(2, 10):
            clock[0] += 1.0
            stage.advance(k, 30)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "regtune demo: configs: 0 done (total not known yet)"
    assert lines[1] == "regtune demo: configs: 1 done (total not known yet)"
    assert lines[2].startswith("regtune demo: configs: 1/30") and not any("0/0" in line for line in lines)
    # after a 40 s first item and eight 1 s items: 21 left at the recent 1/s, not at 40 s each
    assert lines[-1] == "regtune demo: configs: 9/30 (1.0/s, about 21 s left)"
