"""The sweep report: every section's figures come from the rows handed in, with their counts; a section the rows
cannot fill says why; the plots are real PNG files."""

import pytest

from engine.alloc import ALLOCATORS
from gui.cli.sweep_report import sweep_report
from tests.sweep_fixture import gemm_rows


@pytest.fixture(scope="module")
def rows():
    return gemm_rows([(2, 2, 2), (4, 4, 4), (16, 16, 16), (12, 16, 16)], budgets=(64, 255))


def test_report_counts_its_rows_and_draws_its_plots(rows, tmp_path):
    text = sweep_report(rows, tmp_path, "s.sqlite", "workload == 'gemm'")
    want = sum(1 for r in rows if r["workload"] == "gemm")        # 4 configs x 2 budgets x every allocator
    assert want == 4 * 2 * len(ALLOCATORS)
    assert f"Store `s.sqlite`, filter `workload == 'gemm'`: {want} rows, 4 configs (gemm)" in text
    for png in ("registers_per_config", "naive_best_ratio", "spill_cliffs", "spills_at_255"):
        assert f"({png}.png)" in text
        assert (tmp_path / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "No compiled rows" in text                    # analysis-only rows: no scatter is drawn
    assert not (tmp_path / "plan_vs_ptxas.png").exists()


def test_ratio_figures_are_the_rows_own(rows, tmp_path):
    text = sweep_report(rows, tmp_path, "s.sqlite", None)
    at = {(r["config"]): r["naive_registers"] / r["best_registers"] for r in rows if r["budget"] == 255}
    lo, hi = min(at.values()), max(at.values())
    assert f"| naive registers (capped at 255) / best | {lo:.2f}x / " in text and f" / {hi:.2f}x |" in text


def test_ptxas_section_counts_rows_within_four(rows, tmp_path):
    compiled = [dict(r, arch="sm_80", cap="none", toolchain="13.0", ptxas_registers=r["registers"] + d)
                for r, d in zip(rows[:8], (0, 3, -4, 5, 9, 0, -6, 1))]
    text = sweep_report(compiled, tmp_path, "s.sqlite", None)
    assert "ptxas within \u00b14 registers of the plan: 5 of 8 (62.5%)" in text
    assert (tmp_path / "plan_vs_ptxas.png").exists()


def test_one_budget_says_there_is_no_cliff(tmp_path):
    text = sweep_report(gemm_rows([(2, 2, 2)]), tmp_path, "s.sqlite", None)
    assert "The rows have 1 budget (255): a cliff needs a sweep over several" in text


def test_no_rows_is_said(tmp_path):
    assert "The store has no rows for this filter" in sweep_report([], tmp_path, "s.sqlite", "m > 99")
