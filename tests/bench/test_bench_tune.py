"""Runs the tune benchmark on a tiny sample, so the suite prints its figures (timing is read, not asserted)."""

from tests.bench.bench_tune import main


def test_tune_benchmark_runs_and_prints_its_figures(capsys):
    assert main(["--repeat", "1", "--sample", "tiny"]) == 0
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert "MAXLIVE" in out and "sum(range(10**7))" in out
