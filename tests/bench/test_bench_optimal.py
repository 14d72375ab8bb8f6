"""The optimal allocator's benchmark on its tiny sample: both solvers agree, and every case is proved."""

from tests.bench.bench_optimal import main


def test_bench_optimal_tiny_sample_agrees_and_proves(capsys):
    out = main(["--tiny", "--limits", "10", "--repeat", "1", "--solver-limit", "20"])
    for row in out["solvers"]:
        cp, highs = row["cp-sat"], row["highs"]
        assert cp["status"] == highs["status"] and cp["status"] in ("optimal", "infeasible"), row
        if cp["status"] == "optimal":
            assert abs(cp["objective"] - highs["objective"]) < 1e-6, row
    assert out["sizes"][10.0] and all(r["proved"] for r in out["sizes"][10.0])
    assert "reference loop" in capsys.readouterr().out


def test_bench_optimal_gaps_on_the_tiny_sample():
    per = main(["--tiny", "--gaps", "--limits", "20"])["gaps"]
    assert per and all(g >= 0 for v in per.values() for g in v)  # no heuristic beats optimal
