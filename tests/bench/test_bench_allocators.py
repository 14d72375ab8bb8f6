"""Runs the allocator table benchmark on its small sample, so CI prints it; asserts what cannot be flaky:
every plan passed the static checker, the scan with holes never needs more registers than the hull scan
where neither spills, the table has a row per allocator and budget, and with ``--optimal`` no heuristic beats a
proved optimum in its own (spill-everywhere) model; ``--before`` reads a ``--csv`` back as a table."""

import pytest

from engine.alloc import ALLOCATORS
from tests.bench.bench_allocators import main


@pytest.mark.slow
def test_allocator_table_runs_on_the_small_sample(capsys):
    rows = main(["--small", "--repeat", "1", "--limit", "4"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert all(r["verified"] for r in rows)
    by = {(r["program"], r["budget"], r["allocator"]): r for r in rows}
    for (program, budget, name), r in by.items():
        if name == "linear-scan":
            hull = by[(program, budget, "linear-scan-hull")]
            if not hull["spilled"] and not r["spilled"]:
                assert r["registers"] <= hull["registers"]
    assert {r["allocator"] for r in rows} == set(ALLOCATORS)
    assert {r["budget"] for r in rows} == {255, 96, 64, 32}
    assert "sum(range(10**7))" in out and out.count("| 255 |") == len(ALLOCATORS)


@pytest.mark.slow
def test_allocator_table_with_optimal_and_an_earlier_run(capsys, tmp_path):
    pytest.importorskip("ortools", reason="the optimal allocator's solver (regtune[optimal]) is not installed")
    earlier = tmp_path / "earlier.csv"
    main(["--small", "--repeat", "1", "--limit", "2", "--csv", str(earlier)])
    capsys.readouterr()
    rows = main(["--small", "--repeat", "1", "--limit", "2", "--optimal", "5", "--before", str(earlier)])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    optimal = [r for r in rows if r["allocator"] == "optimal"]
    assert optimal and all(r["proved"] and r["verified"] for r in optimal)
    gaps = [r["optimal_gap"] for r in rows if r["allocator"] != "optimal"]
    assert gaps and all(g is not None and g >= 0 for g in gaps)
    assert f"{earlier} ({len(rows) - len(optimal)} rows), gaps to this run's optimal" in out
    assert out.count("| 255 | optimal |") == 1
