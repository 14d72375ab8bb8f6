"""Runs the plan-model against SASS-model benchmark on a tiny sample (real ptxas and nvdisasm), so CI prints it.

What is asserted cannot be flaky: every plan of the tiny sample is priced by both models, the figures are
positive, and the summary names its median and rank correlation.
"""

import pytest

from kernels.toolchain import ToolchainError, find_tool
from tests.bench.bench_model_vs_sass import main


@pytest.mark.slow
def test_model_vs_sass_benchmark_runs_on_a_tiny_sample(capsys):
    try:
        find_tool("ptxas"), find_tool("nvdisasm")
    except ToolchainError as e:
        pytest.skip(f"no NVIDIA toolchain: {e}")
    s = main(["--tiny", "--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert s["priced"] == s["of"] == 4
    assert all(r["model"] > 0 and r["sass"] > 0 for r in s["rows"])
    assert s["median_ratio"] > 0 and "Spearman rank correlation" in out
    assert "sum(range(10**7))" in out
