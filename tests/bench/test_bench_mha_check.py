"""Runs the MHA execution-check benchmark once in the test suite, so CI prints its figures.

Timing targets are read from the printed figures, not asserted here; what is
asserted cannot be flaky: every plan of the note's example is verified (every
instruction ran, every branch went both ways, stores compared) and the
figures are printed beside the reference loop.
"""

import pytest

from engine.alloc import ALLOCATORS
from tests.bench.bench_mha_check import main


@pytest.mark.slow
def test_mha_check_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert set(results["plans"]) == set(ALLOCATORS)
    assert all(p["verified"] for p in results["plans"].values())
    assert results["plans"]["naive"]["figures"]["spill_loads_executed"] > 0
    assert "sum(range(10**7))" in out
