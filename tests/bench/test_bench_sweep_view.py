"""Runs the Sweep view benchmark on a tiny sample (40 configs, a row per allocator), so CI prints its figures."""

from engine.alloc import ALLOCATORS
from tests.bench.bench_sweep_view import main


def test_sweep_view_benchmark_runs_and_prints(capsys, qapp):
    r = main(["--configs", "40", "--repeat", "3"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert r["rows"] == 40 * len(ALLOCATORS) and "slowest redraw" in out
    assert max(r["redraw"].values()) < r["load"]        # a redraw redraws; it never reloads
