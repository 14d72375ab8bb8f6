"""Runs the ``regtune allocate`` benchmark once in the test suite, so CI prints its figures.

Timing targets are read from the printed figures, not asserted here; what is
asserted cannot be flaky: every command succeeded and wrote its plan, each
printed its one line naming the allocator and the symbolic checker's proof,
and the reference loop is printed beside the figures.
"""

import pytest

from engine.alloc import ALLOCATORS
from tests.bench.bench_allocate_command import PROGRAMS, main


@pytest.mark.slow
def test_allocate_command_benchmark_runs_and_prints_its_figures(capsys):
    r = main(["--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert sorted(r["lines"]) == sorted((p, a) for p in PROGRAMS for a in ALLOCATORS)
    for (_, allocator), line in r["lines"].items():
        assert line.startswith(allocator) and "proved by the symbolic checker" in line and "plan.json" in line
    assert r["yardstick"] > 0 and all(s > 0 for s in r["startup"].values())
    assert "sum(range(10**7))" in out and "four together" in out
