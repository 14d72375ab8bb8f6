"""Runs the engine benchmark once in the test suite, so CI prints its figures.

Timing targets are read from the printed figures, not asserted here; what is
asserted cannot be flaky: the graph built from segments equals the
all-pairs reference, every plan passed the static check inside the
benchmark, and the segment construction beats the quadratic one.
"""

import pytest

from tests.bench.bench_engine import main


@pytest.mark.slow
def test_engine_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "5"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    for r in results:
        assert r["same_graph"]
        assert r["all_pairs"] > r["graph"]
        assert r["instructions"] >= 4990 and 250 <= r["maxlive"] <= 350
        assert r["yardstick"] > 0
    assert out.count("sum(range(10**7))") == len(results)
