"""The sweep exports: CSV, JSON and Parquet hold every row handed in; the Kernel Tuner cache loads with Kernel
Tuner's own reader (kernel_tuner.util.read_cache) and has the keys and entries Kernel Tuner writes."""

import csv
import json

import pytest

from engine.alloc import ALLOCATORS
from engine.base.errors import RegtuneError
from engine.sweep_export import export, kerneltuner_cache
from tests.sweep_fixture import gemm_rows

CONFIGS = [(2, 2, 2), (2, 4, 3), (16, 16, 16)]


@pytest.fixture(scope="module")
def rows():
    return gemm_rows(CONFIGS)


def test_csv_holds_every_row_and_the_derived_figures(rows, tmp_path):
    export(rows, "csv", tmp_path / "s.csv")
    back = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert len(back) == len(rows) == 3 * len(ALLOCATORS)
    assert [r["config"] for r in back] == [r["config"] for r in rows]
    naive = next(r for r in back if r["allocator"] == "naive" and r["config"] == "gemm 16x16x16")
    assert float(naive["naive_best_ratio"]) == pytest.approx(255 / 160)
    assert naive["plan_ptxas_gap"] == "" and naive["ptxas_registers"] == ""     # not compiled: empty, not 0


def test_json_names_its_filter_and_count(rows, tmp_path):
    export(rows, "json", tmp_path / "s.json", where="m == 2")
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["filter"] == "m == 2" and data["count"] == len(rows) == len(data["rows"])
    assert data["rows"][0]["registers"] == rows[0]["registers"]


def test_parquet_keeps_the_typed_columns(rows, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (the regtune[parquet] extra)")
    export(rows, "parquet", tmp_path / "s.parquet")
    table = pq.read_table(tmp_path / "s.parquet")
    assert table.num_rows == len(rows)
    assert table.column("registers").to_pylist() == [r["registers"] for r in rows]
    assert str(table.schema.field("m").type) == "int64"


def test_kerneltuner_cache_loads_with_kernel_tuners_reader(rows, tmp_path):
    util = pytest.importorskip("kernel_tuner.util", reason="kernel_tuner is not installed (the regtune[kerneltuner] "
                                                           "extra): its reader cannot be run")
    path = tmp_path / "gemm.json"
    export(rows, "kerneltuner", path)
    text = path.read_text()
    data = util.read_cache(str(path), open_cache=False)
    assert set(data) == {"version", "device_name", "kernel_name", "problem_size", "tune_params_keys",
                         "tune_params", "objective", "cache"}
    keys = ["m", "n", "k", "tile", "schedule", "allocator", "budget", "cap"]
    assert data["tune_params_keys"] == keys
    assert len(data["cache"]) == len(rows)
    entry = data["cache"]["16,16,16,16x8,k-outer,naive,255,-"]
    assert entry["registers"] == 255 and entry["spilled"] > 0 and entry["m"] == 16
    assert data["tune_params"]["allocator"] == sorted(ALLOCATORS)
    # one line per config, as store_cache appends them
    assert sum(1 for line in text.splitlines() if line.startswith('"16,16,16,')) == len(ALLOCATORS)
    # no row was measured or modelled in time: every entry's objective says the config gave no figure
    assert data["objective"] == "model_cycles"
    assert all("__error__" in e for e in data["cache"].values())


def test_kerneltuner_refuses_two_archs_before_writing(rows, tmp_path):
    mixed = rows[:2] + [{**rows[2], "arch": "sm_90"}]
    # the suggestion is the compiled rows' arch, not the analysis rows' '-'
    with pytest.raises(RegtuneError, match=r"the rows cover 2 values of arch \(-, sm_90\) \('-': rows with no "
                       r"arch: the analysis only\).*--filter \"arch == 'sm_90'\""):
        export(mixed, "kerneltuner", tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_kerneltuner_refuses_rows_with_the_same_parameters(rows):
    with pytest.raises(RegtuneError, match="two rows have the tunable parameters 2,2,2,"):
        kerneltuner_cache([rows[0], dict(rows[0])])


def test_parquet_without_pyarrow_names_the_extra(rows, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)       # as if the extra were not installed
    with pytest.raises(RegtuneError, match=r"^Parquet export needs pyarrow: pip install 'regtune\[parquet\]'$"):
        export(rows, "parquet", tmp_path / "s.parquet")
    assert not (tmp_path / "s.parquet").exists()
