"""Runs the kernel build benchmark once in the test suite, so CI prints its figures.

Timing targets are read from the printed figures; what is asserted cannot be
flaky: every cold run compiled, every second request was served from the cache.
"""

import pytest

from tests.bench.bench_kernels import main


@pytest.mark.slow
def test_kernel_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "3"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert len(results) == 3
    for r in results:
        assert r["cached"] < r["cold"]
        assert all(24 <= n <= 255 for n in r["registers"].values())
