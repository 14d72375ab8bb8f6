"""The Sweep view's model over rows the engine made: the grid's cells are the rows' figures, an open field
collects several rows in a cell (and says so), planned-figure tables list each plan once."""

import math

import pytest

from engine.workloads import BuildOptions
from gui.model.sweep_view import SweepGrid, cell_words, open_request, worst_rows
from tests.sweep_fixture import gemm_rows


@pytest.fixture(scope="module")
def rows():
    base = gemm_rows([(2, 2, 2), (4, 2, 2), (16, 16, 16)])
    # the same plans compiled at two caps: the planned figures repeat, as a --compile sweep's rows do
    return base + [dict(r, arch="sm_80", cap=c, toolchain="t") for r in base for c in ("none", "plan")]


def test_grid_and_an_open_field(rows):
    g = SweepGrid(rows, "gemm")
    assert g.fields == ["k", "schedule", "allocator", "budget", "arch", "cap", "toolchain"]
    fixed = {"k": 2, "allocator": "dsatur", "arch": "-", "cap": "-"}
    c = g.grid("registers", fixed)
    assert c.xs == [2, 4, 16] and c.ys == [2, 16] and c.shown == 2
    want = {r["m"]: r["registers"] for r in rows if r["k"] == 2 and r["allocator"] == "dsatur" and r["arch"] == "-"}
    assert c.values[0, 0] == want[2] and c.values[0, 1] == want[4] and math.isnan(c.values[1, 2])
    fixed.pop("cap")
    fixed.pop("arch")
    open_cell = g.grid("registers", fixed)
    assert len(open_cell.rows[0][0]) == 3 and "(3 rows in this cell" in cell_words(open_cell, 0, 0, "registers")
    assert cell_words(open_cell, 1, 0, "registers") == "no row in the store for this cell"


def test_worst_planned_spills_list_each_plan_once(rows):
    top = worst_rows(rows)["planned spills"]
    keys = [(r["config"], r["allocator"], r["budget"]) for r in top]
    assert len(keys) == len(set(keys)) == 1 and keys[0] == ("gemm 16x16x16", "naive", 255)
    assert worst_rows(rows)["plan-vs-ptxas gap"] == []          # no ptxas figures in these rows


def test_open_request_takes_the_rows_options(rows):
    row = next(r for r in rows if r["config"] == "gemm 16x16x16" and r["arch"] == "sm_80")
    workload, options = open_request(row, BuildOptions(arch="sm_90", budget=100))
    assert workload["m"] == 16 and options.tile == (16, 8) and options.arch == "sm_80" and options.budget == 255
