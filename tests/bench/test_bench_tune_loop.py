"""Runs the tuning-loop benchmark once in the test suite, so CI prints its figures (the targets are read from
them); what is asserted cannot be flaky: the edit changed the plan's count, every cold request ran the
tools, every second one was served from the cache."""

import pytest

from tests.bench.bench_tune_loop import main


@pytest.mark.slow
def test_tune_loop_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert len(results) == 3 and "sum(range(10**7))" in out
    for r in results:
        assert r["cached"] < r["cold"] and r["tools"] > 0 and r["yardstick"] > 0 and 0 < r["first"] <= r["cold"]
        assert all(24 <= n <= 255 for n in r["registers"].values())
