"""Runs the plan PTX benchmark once in the test suite, so CI prints its figures.

Timing targets are read from the printed figures; what is asserted cannot be
flaky: every cold run ran the tools, every second request was served from the
cache, and ptxas gave the plan PTX a count at each cap.
"""

import pytest

from tests.bench.bench_plan_ptx import ARCHS, main


@pytest.mark.slow
def test_plan_ptx_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert [r["label"] for r in results] == ["GEMM 8x8x8", "GEMM 16x16x16 (largest)",
                                             "MHA 32h b64 d64 g4 (the note's example)"]
    for r in results:
        assert r["cached"] < r["cold"] and r["yardstick"] > 0
        assert {f"ptxas {a} {c}" for a in ARCHS for c in ("plan cap", "no cap")} <= set(r["stages"])
        assert all(24 <= n <= 255 and 24 <= c <= 255 for n, c in r["registers"].values())
    assert "sum(range(10**7))" in out
