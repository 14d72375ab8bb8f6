"""Work bounded before it starts: programs whose graph or run would take the machine are refused in one line."""

import time

import pytest

from engine.errors import LimitError
from engine.interference import build_interference
from engine.ir import parse
from engine.limits import MAX_INTERFERENCE_EDGES
from engine.liveness import analyze
from tests.bench.programs import sliding_window


def test_an_interference_graph_above_the_limit_is_refused_before_its_edges_are_listed():
    a = analyze(parse(sliding_window(21_000, 1_000)))       # 20.5 million overlapping pairs
    start = time.perf_counter()
    with pytest.raises(LimitError, match=f"about 20,500,500 interference edges, above the limit of "
                                         f"{MAX_INTERFERENCE_EDGES:,}"):
        build_interference(a)
    assert time.perf_counter() - start < 1.0


def test_the_pair_count_is_the_edge_count_of_a_graph_under_the_limit():
    g = build_interference(analyze(parse(sliding_window(2_000, 100))))
    # each value meets the 99 defined after it before its last use, the last 100 stay live to their stores,
    # and the pointer %p meets every value
    assert g.n_edges == 1_900 * 99 + 100 * 99 // 2 + 2_000
