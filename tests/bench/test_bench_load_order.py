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
    assert all(figures[order]["kept"] == "order" for order in ("barrier", "fence", "volatile"))
    assert figures["fence"]["membar"] == figures["fence"]["statements"] and figures["barrier"]["membar"] == 0
    assert figures["volatile"]["strong"] == figures["volatile"]["loads"] == figures["volatile"]["sass_loads"]
    # the barrier writes no PTX instruction; the fence writes one membar per run of loads
    assert figures["barrier"]["ptx"] == figures["nvvm"]["ptx"]
    assert figures["fence"]["ptx"] == figures["nvvm"]["ptx"] + figures["fence"]["statements"]
    # load-all-first: the plan loads its 64 A and B values before the first FMA; the barrier keeps that in the
    # PTX, NVVM alone does not
    assert figures["barrier"]["ahead"]["ptx"] == figures["barrier"]["ahead"]["plan"] > figures["nvvm"]["ahead"]["ptx"]
    assert "  barrier  loads in the plan's order in PTX: order" in out
