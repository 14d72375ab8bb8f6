"""A sweep's compiled rows: real ptxas and nvdisasm on the plan PTX at both caps, the Numba kernel's ptxas with
--numba, the SASS listing stored once by content, every row naming its toolchain and why it has no GPU time."""

import pytest

from engine.store import open_store
from engine.sweep import SweepTask
from kernels.plan_ptx import plan_ptx_figures
from kernels.sweep import task_rows, toolchain
from kernels.toolchain import no_device_files
from tests.kernels.conftest import gemm_plan

GEMM_2 = {"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}
OPTIONS = (("schedule", "k-outer"), ("tile", None))


def test_compiled_rows_are_the_plan_ptx_figures_at_both_caps_per_arch(tmp_path):
    task = SweepTask("gemm", (GEMM_2,), OPTIONS, ("linear-scan",), (255,), ("sm_80", "sm_90"), compile=True)
    rows = task_rows(task)
    plain = [r for r in rows if r["arch"] == "-"]
    compiled = {(r["arch"], r["cap"]): r for r in rows if r.get("arch", "-") != "-"}
    assert len(plain) == 1 and set(compiled) == {(a, c) for a in ("sm_80", "sm_90") for c in ("plan", "none")}
    figures = plan_ptx_figures(gemm_plan(2, 2, 2), ("sm_80", "sm_90"))      # the same plan, asked directly
    for arch in ("sm_80", "sm_90"):
        at_plan, no_cap = compiled[arch, "plan"], compiled[arch, "none"]
        assert at_plan["ptxas_registers"] == figures.ptxas[arch].registers
        assert no_cap["ptxas_registers"] == figures.ptxas_compiler[arch].registers
        assert at_plan["sass_maxlive"] == figures.sass[arch].maxlive and no_cap.get("sass_maxlive") is None
        assert "-maxrregcount=" in at_plan["ptxas_log"] and "-maxrregcount" not in no_cap["ptxas_log"]
        assert at_plan["toolchain"] == toolchain() and toolchain().startswith("release ")
        assert at_plan["registers"] == plain[0]["registers"] and at_plan["error"] is None
        if no_device_files():
            assert at_plan["measured_ms"] is None and at_plan["measured_why"] == "no CUDA device"
    with open_store(tmp_path / "s.sqlite") as s:
        assert s.put(rows) == 5
        digests = [r["sass_digest"] for r in s.rows("cap == 'plan'", ["sass_digest"])]
        assert len(digests) == 2 and all("LDG" in s.listing(d) or "STG" in s.listing(d) for d in digests)
        assert s.db.execute("SELECT COUNT(*) FROM listings").fetchone()[0] == 3      # 2 listings + 1 plan


@pytest.mark.slow
def test_numba_rows_carry_the_numba_kernels_ptxas():
    task = SweepTask("gemm", (GEMM_2,), OPTIONS, ("dsatur",), (255,), ("sm_80",), numba=True)
    rows = [r for r in task_rows(task) if r.get("arch") == "sm_80"]
    assert {r["cap"] for r in rows} == {"plan", "none"}
    for r in rows:
        assert r["error"] is None, r["error"]
        assert r["numba_registers"] > 0 and r["numba_spill_stores"] == 0
        assert r.get("ptxas_registers") is None       # --numba alone: no plan PTX
