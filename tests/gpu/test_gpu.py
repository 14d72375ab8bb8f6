"""tests/gpu/run_gpu.py: its rank correlation, its model-only run (no GPU needed), and the GPU run itself."""

import json

import pytest

from kernels.toolchain import cuda_device
from tests.gpu.run_gpu import CONFIGS, main, spearman


def test_the_fixed_set_has_twenty_gemm_and_mha_configs_or_more():
    assert len(CONFIGS) >= 20 and len(set(CONFIGS)) == len(CONFIGS)
    assert {c.split()[0] for c in CONFIGS} == {"gemm", "mha"}


def test_spearman_by_hand():
    """x = 1..5 ranks 1 2 3 4 5; y = 5 6 7 8 7 ranks 1 2 3.5 5 3.5 (the two 7s share 3.5). Centred on 3:
    x -2 -1 0 1 2, y -2 -1 0.5 2 0.5; sum of products 4 + 1 + 0 + 2 + 1 = 8; sums of squares 10 and
    4 + 1 + 0.25 + 4 + 0.25 = 9.5: rho = 8 / sqrt(95) = 0.820783."""
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / 95 ** 0.5, abs=1e-6)
    assert spearman([3, 1, 2], [30, 10, 20]) == 1.0


def test_model_only_writes_model_times_and_no_measured_time(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["--out", str(out), "--model-only", "--subset", "2", "--arch", "sm_80"]) == 0
    data = json.loads(out.read_text())
    assert [r["config"] for r in data["configs"]] == list(CONFIGS[:2])
    for r in data["configs"]:
        assert r["model_time"]["plan"]["model_time_us"] > 0 and r["model_time"]["plan"]["source"] == "plan"
        assert r["measured_ms"] == "not run (--model-only)"
    assert data["rank_correlation"]["plan"] == {"pairs": 0, "spearman": "no measured times"}
    assert "Spearman rank correlation, model time (plan issue cycles)" in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.slow
def test_the_gpu_run_measures_and_models_a_subset(tmp_path):
    if cuda_device() is None:
        pytest.skip("no CUDA device")
    out = tmp_path / "r.json"
    assert main(["--out", str(out), "--subset", "3"]) == 0
    data = json.loads(out.read_text())
    for r in data["configs"]:
        assert isinstance(r["measured_ms"], float) and r["measured_ms"] > 0 and r["check"]["ok"]
        assert r["driver_registers"] > 0 and r["driver_local_bytes"] >= 0
        assert r["model_time"]["plan"]["model_time_us"] > 0
        assert r["plan_ptx"]["check"]["ok"] and r["plan_ptx"]["driver_registers"] == r["plan_ptx"]["ptxas_registers"]
    assert data["rank_correlation"]["plan"]["pairs"] == 3
