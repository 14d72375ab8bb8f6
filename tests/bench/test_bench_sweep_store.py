"""The sweep-store benchmark on a tiny sample: every figure printed, the store answers what the sweep wrote."""

import pytest

from engine.alloc import ALLOCATORS
from tests.bench.bench_sweep_store import main


@pytest.mark.slow
def test_the_sweep_store_benchmark_runs_on_a_tiny_sample(capsys):
    out = main(["--sample", "675", "--workers", "1", "--compile-configs", "1", "--compile-workers", "1",
                "--compile-allocators", "dsatur", "--query-rows", "500", "--repeat", "1"])
    text = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + text)
    assert out["analysis-1"]["rows"] == 5 * len(ALLOCATORS)         # 5 configs, every allocator each
    assert out["compile"]["configs"] == 1 and out["query"]["rows"] == 500
    assert "1 configs skipped" in text                              # the second compile sweep found every row
    assert text.count("sum(range(10**7)) at") == 3
