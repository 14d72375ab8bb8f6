"""Runs the load-order benchmark on its first plan (GEMM 8x8x8, 4x4 tile, load-all-first), so CI shows what it
prints and that the default order keeps the plan's placement where NVVM alone does not."""

import pytest

from tests.bench.bench_load_order import main


@pytest.mark.slow
def test_load_order_benchmark_keeps_the_order_and_prints_its_costs(capsys):
    [figures] = main(["--plans", "1"]).values()
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert not figures["nvvm"]["kept"]
    assert all(figures[order]["kept"] for order in ("barrier", "fence", "volatile"))
    # the barrier writes no PTX instruction; the fence writes one membar per run of loads
    assert figures["barrier"]["ptx"] == figures["nvvm"]["ptx"]
    assert figures["fence"]["ptx"] == figures["nvvm"]["ptx"] + figures["fence"]["statements"]
    assert "  barrier  plan's load order in PTX: yes" in out and "  nvvm     plan's load order in PTX: no " in out
