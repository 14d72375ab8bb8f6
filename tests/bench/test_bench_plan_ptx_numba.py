"""Runs the plan PTX against Numba kernel benchmark on one config (GEMM 2x2x2) and one arch, so CI shows it works
and what it prints."""

import pytest

from tests.bench.bench_plan_ptx_numba import main


@pytest.mark.slow
def test_both_realisations_are_measured_and_their_ratio_printed(capsys):
    [row] = main(["--sample", "3375", "--arch", "sm_80", "--no-mha"])       # the first config only
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    f = row["archs"]["sm_80"]
    assert row["label"] == "gemm 2x2x2" and row["registers"] < 24
    ratio = f["plan_ptx"][0] / f["numba"][0]
    assert f"sm_80 no cap: plan PTX / Numba kernel registers median {ratio:.3f}" in out
    assert row["counts"]["plan_ptx"]["ld.global"] == row["counts"]["numba"]["ld.global"] == 12   # A, B and C
