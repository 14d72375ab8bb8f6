"""``regtune build | compare``: the plan PTX (ptxas on the plan's own PTX) beside the Numba kernel, real ptxas."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from gui.cli.compare_output import comparison, render
from gui.cli.main import main
from kernels.measurement import Measurement, PlanPtxFigures, Unavailable

ROWS = ("plan PTX registers, plan cap", "plan PTX registers, no cap", "plan PTX spill bytes, plan cap",
        "plan PTX SASS MAXLIVE")


def _row(out: str, label: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(label + " ")).split()[-1].rstrip("*")


def _program_plan(tmp_path, line: str) -> str:
    source = tmp_path / "p.ir"
    source.write_text(".kernel k\n.block entry\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n"
                      f"  {line}\n  st.global %pa, 4, %y\n  exit\n")
    path = tmp_path / "p.json"
    assert main(["allocate", str(source), "--allocator", "dsatur", "--out", str(path)]) == 0
    return str(path)


@pytest.fixture(scope="module")
def gemm_build(tmp_path_factory):
    """GEMM 4x4x4's dsatur plan built for sm_80: (what build printed, its report.json)."""
    folder = tmp_path_factory.mktemp("g4")
    plan = folder / "plan.json"
    assert main(["allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", "--allocator", "dsatur",
                 "--out", str(plan)]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["build", str(plan), "--arch", "sm_80", "--no-simulate", "--out-dir", str(folder / "o")]) == 0
    return out.getvalue(), json.loads(next((folder / "o").glob("*.report.json")).read_text())


def test_build_prints_the_plan_ptx_rows_beside_the_numba_kernels(gemm_build):
    out, report = gemm_build
    own = report["plan_ptx"]
    for label, value in zip(ROWS, (own["ptxas"]["sm_80"]["registers"], own["ptxas_compiler"]["sm_80"]["registers"],
                                   own["ptxas"]["sm_80"]["spill_store_bytes"] + own["ptxas"]["sm_80"]["spill_load_bytes"],
                                   own["sass"]["sm_80"]["maxlive"])):
        assert int(_row(out, f"sm_80 {label}")) == value
    assert int(_row(out, "sm_80 ptxas registers, plan cap")) == report["ptxas"]["sm_80"]["registers"]
    assert "'plan PTX' rows are ptxas on the plan's own PTX" in out
    numba, mine = report["ptxas"]["sm_80"]["registers"], own["ptxas"]["sm_80"]["registers"]
    sentence = next(line for line in out.splitlines() if line.startswith("  sm_80: ") and "the plan PTX gets" in line)
    if numba == mine and report["ptxas_compiler"]["sm_80"]["registers"] == own["ptxas_compiler"]["sm_80"]["registers"]:
        assert "the Numba kernel's registers at both caps" in sentence
    else:
        assert "where the Numba kernel gets" in sentence


def test_the_report_has_both_realisations_each_with_its_ptxas_flags(gemm_build):
    _, report = gemm_build
    own = report["plan_ptx"]
    planned = report["planned"]["registers"]
    for figures in (report["ptxas"]["sm_80"], own["ptxas"]["sm_80"]):
        assert figures["flags"] == ["-arch=sm_80", "-v", f"-maxrregcount={planned}"]
    for figures in (report["ptxas_compiler"]["sm_80"], own["ptxas_compiler"]["sm_80"]):
        assert figures["flags"] == ["-arch=sm_80", "-v"]
    assert own["spills"] == "volatile" and own["entry"] == report["kernel"]["entry"]


def test_the_measurement_round_trips_and_an_older_report_says_it_has_no_plan_ptx(gemm_build):
    _, report = gemm_build
    m = Measurement.from_dict(report)
    assert isinstance(m.plan_ptx, PlanPtxFigures) and Measurement.from_dict(m.to_dict()) == m
    older = Measurement.from_dict({k: v for k, v in report.items() if k != "plan_ptx"})
    assert older.plan_ptx is None and "plan_ptx" not in older.to_dict()
    rows = {r.label: r.values for r in comparison([("new", m), ("old", older)], ["sm_80"]).rows}
    assert rows["sm_80 plan PTX registers, plan cap"] == (report["plan_ptx"]["ptxas"]["sm_80"]["registers"],
                                                          "not measured (an older report)")


def test_compare_json_has_the_plan_ptx_rows_for_each_plan(capsys):
    args = ["compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators", "dsatur,linear-scan",
            "--arch", "sm_80", "--no-simulate", "--format", "json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["row"]: r for r in data["rows"]}
    for label in ROWS:
        values = rows[f"sm_80 {label}"]["values"]
        assert set(values) == {"dsatur", "linear-scan"}
        assert all(isinstance(v, int) and v >= 0 for v in values.values()), values
    assert rows["sm_80 plan PTX registers, plan cap"]["metric"] == "registers"
    assert rows["sm_80 plan PTX SASS MAXLIVE"]["metric"] == "sass"


def test_a_plan_the_emitter_refuses_shows_why_and_still_builds_the_numba_kernel(tmp_path, capsys):
    plan = _program_plan(tmp_path, "%y:f32 = exp %pa")       # numba converts the pointer; PTX has no such cast
    capsys.readouterr()
    assert main(["build", plan, "--arch", "sm_80", "--no-simulate", "--out-dir", str(tmp_path / "o"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    reason = report["plan_ptx"]["error"]
    assert reason.startswith("no plan PTX: instruction 2 ('%y:f32 = exp %pa'): %pa is u64 where the instruction")
    assert report["ptxas"]["sm_80"]["registers"] > 0
    m = Measurement.from_dict(report)
    assert m.plan_ptx == Unavailable(reason)
    table = render(comparison([("p", m)], ["sm_80"]), "table")
    assert all(f"sm_80 {label}" in table for label in ROWS) and reason in table
    assert reason in report["sass"]["sm_80"]["explanation"]


def test_an_opaque_opcode_is_refused_before_any_work_as_before(tmp_path, capsys):
    plan = _program_plan(tmp_path, "%y:f32 = tex.fetch %x")
    capsys.readouterr()
    assert main(["build", plan, "--arch", "sm_80", "--no-simulate", "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regtune: error: ") and err.count("\n") == 1
    assert "opcode tex.fetch has no CUDA lowering" in err
    assert not list((tmp_path / "o").glob("*"))                     # nothing written


def test_where_the_realisations_disagree_build_says_by_how_much(tmp_path, capsys):
    # GEMM 2x2x2 dsatur on sm_90: ptxas (the wheel's 13.x) gives the plan PTX 23 registers at the plan cap of 22
    # where NVVM's PTX gets 22 (measured); the sentence carries both counts and both PTXs' ld.global counts
    plan = tmp_path / "plan.json"
    assert main(["allocate", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocator", "dsatur",
                 "--out", str(plan)]) == 0
    capsys.readouterr()
    assert main(["build", str(plan), "--arch", "sm_90", "--no-simulate", "--out-dir", str(tmp_path / "o"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    own, numba = report["plan_ptx"]["ptxas"]["sm_90"]["registers"], report["ptxas"]["sm_90"]["registers"]
    assert own != numba
    loads = report["kernel"]["ptx_global_loads"]
    assert (f"at the plan cap the plan PTX gets {own} registers where the Numba kernel gets {numba}: NVVM's PTX "
            f"differs from the plan's (the plan PTX has 12 ld.global, the Numba kernel's {loads} ld.global"
            ) in " ".join(report["sass"]["sm_90"]["explanation"])
