"""Runs the window benchmark once in the test suite, so CI prints its figures (targets read from them).

What is asserted are ratios measured in the same run, which a slower
machine scales alike: an edit and a pan redraw less than a full load and
draw of the same program does (the views update, they are not rebuilt).
"""

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
        assert r["edit"] < r["draw"], r
        assert r["move"] < r["draw"], r
        assert r["pan"] < r["draw"], r
