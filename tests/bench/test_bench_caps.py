"""Runs the caps benchmark on one config (GEMM 2x2x2) and one arch, so CI shows it works and what it prints."""

import pytest

from tests.bench.bench_caps import main


@pytest.mark.slow
def test_caps_benchmark_counts_fits_and_the_no_cap_ratio(capsys):
    [row] = main(["--sample", "3375", "--arch", "sm_80"])       # 3375 configs: the first one only
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    f = row["archs"]["sm_80"]
    assert row["config"] == (2, 2, 2) and row["registers"] < 24 == f["cap"]        # capped at ptxas's floor
    fits = int(f["spill_bytes"] == 0)
    ratio = f["no_cap"] / row["registers"]
    assert (f"sm_80: ptxas fit the plan's count without spilling in {fits} of 1 plans (1 of them capped at "
            f"ptxas's floor, the plan needing fewer); ptxas with no -maxrregcount / plan registers: median "
            f"{ratio:.2f} ({ratio:.2f}..{ratio:.2f})") in out
