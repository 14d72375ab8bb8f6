"""Runs the window benchmark once in the test suite, so CI prints its figures (targets read from them)."""

import pytest

from tests.bench.bench_gui import main


@pytest.mark.slow
def test_gui_benchmark_runs_and_prints_its_figures(capsys, qapp, tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_SESSION_DIR", str(tmp_path))
    results = main(["--repeat", "5"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert [r["instructions"] for r in results] == sorted((r["instructions"] for r in results), reverse=True)
    for r in results:
        assert r["draw"] > 0 and r["edit"] > 0 and r["move"] > 0 and r["pan"] > 0
