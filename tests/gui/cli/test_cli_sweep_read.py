"""``regtune export sweep`` and ``regtune report sweep`` on a real SQLite store (engine.store), filters included;
bad input is one line and exit 2 before anything is written."""

import csv
import json

import pytest

from engine.alloc import ALLOCATORS
from engine.store import open_store
from gui.cli.main import main
from tests.sweep_fixture import gemm_rows


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "s.sqlite"
    with open_store(path) as s:
        s.put(gemm_rows([(2, 2, 2), (4, 4, 4), (16, 16, 16)]))
    return str(path)


def test_export_csv_takes_the_filter(store, tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["export", "sweep", "--store", store, "--format", "csv", "--filter", "m <= 4", "--out", str(out)]) == 0
    back = list(csv.DictReader(out.open()))
    assert len(back) == 2 * len(ALLOCATORS) and {r["m"] for r in back} == {"2", "4"}
    assert f"{2 * len(ALLOCATORS)} rows (m <= 4) ->" in capsys.readouterr().out


def test_export_kerneltuner_from_the_store_loads(store, tmp_path):
    util = pytest.importorskip("kernel_tuner.util", reason="kernel_tuner is not installed (regtune[kerneltuner])")
    out = tmp_path / "kt.json"
    assert main(["export", "sweep", "--store", store, "--format", "kerneltuner", "--out", str(out)]) == 0
    data = util.read_cache(str(out), open_cache=False)
    assert len(data["cache"]) == 3 * len(ALLOCATORS) and data["kernel_name"] == "regtune_gemm"


def test_export_json_all_rows(store, tmp_path):
    out = tmp_path / "s.json"
    assert main(["export", "sweep", "--store", store, "--format", "json", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["count"] == 3 * len(ALLOCATORS)


def test_a_bad_filter_is_one_line(store, tmp_path, capsys):
    out = tmp_path / "x.csv"
    assert main(["export", "sweep", "--store", store, "--format", "csv", "--filter", "m <=", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regtune: error: filter 'm <=' at column") and err.count("\n") == 1
    assert not out.exists()


def test_report_sweep_writes_report_and_plots(store, tmp_path):
    folder = tmp_path / "rep"
    assert main(["report", "sweep", "--store", store, "--filter", "workload == 'gemm'", "--out", str(folder)]) == 0
    text = (folder / "report.md").read_text()
    assert f"filter `workload == 'gemm'`: {3 * len(ALLOCATORS)} rows, 3 configs" in text
    assert (folder / "naive_best_ratio.png").exists()


def test_report_claims_refuses_store_flags(capsys):
    assert main(["report", "claims", "--store", "x.sqlite"]) == 2
    assert "--store is for 'report sweep' only" in capsys.readouterr().err


def test_report_sweep_on_a_bad_store_or_filter_makes_no_folder(store, tmp_path, capsys):
    folder = tmp_path / "never"
    assert main(["report", "sweep", "--store", str(tmp_path / "none.sqlite"), "--out", str(folder)]) == 2
    assert "no such sweep store" in capsys.readouterr().err
    assert main(["report", "sweep", "--store", store, "--filter", "m <", "--out", str(folder)]) == 2
    assert not folder.exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["report", "sweep", "--store", store, "--out", str(afile)]) == 2
    assert "a file, not a folder" in capsys.readouterr().err


def test_count_plots_start_at_zero_in_whole_configs(store, tmp_path):
    from gui.cli.sweep_report import Plots, limit_section, ratio_section

    seen = {}

    class Watch(Plots):
        def save(self, fig, name):
            ax = fig.axes[0]
            seen[name] = (ax.get_ylim(), list(ax.get_yticks()), [t.get_text() for t in ax.texts])
            return super().save(fig, name)

    with open_store(store, readonly=True) as s:
        rows = s.rows("m <= 4")       # no plan of these spills at 255
    plots = Watch(tmp_path)
    limit_section(rows, plots)
    ratio_section(rows, plots)
    for name in ("spills_at_255.png", "naive_best_ratio.png"):
        (low, high), ticks, _ = seen[name]
        assert low == 0 and high >= 1 and all(float(t).is_integer() for t in ticks), (name, low, ticks)
    assert "no config spills at 255" in seen["spills_at_255.png"][2]


def test_identical_ratio_histograms_are_drawn_once(store, tmp_path):
    """Capped and uncapped ratios that are the same list were two bars on top of each other, blended into a
    colour neither legend entry has."""
    from gui.cli.sweep_report import Plots, ratio_section

    labels = {}

    class Watch(Plots):
        def save(self, fig, name):
            labels[name] = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
            return super().save(fig, name)

    with open_store(store, readonly=True) as s:
        rows = s.rows("m <= 4")       # naive stays under 255 here
    ratio_section(rows, Watch(tmp_path))
    got = labels["naive_best_ratio.png"]
    assert got[0] == "naive registers / best (capped and uncapped: the same here)" and len(got) == 2


def test_an_export_of_no_rows_keeps_the_stores_header(store, tmp_path):
    """A filter that kept nothing wrote a CSV whose header was only the two derived columns."""
    out = tmp_path / "none.csv"
    assert main(["export", "sweep", "--store", store, "--format", "csv", "--filter", "m == 99", "--out",
                 str(out)]) == 0
    header = out.read_text().splitlines()
    assert len(header) == 1
    assert header[0].startswith("workload,m,n,k,") and header[0].endswith(",naive_best_ratio,plan_ptxas_gap")
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (regtune[parquet])")
    out = tmp_path / "none.parquet"
    assert main(["export", "sweep", "--store", store, "--format", "parquet", "--filter", "m == 99", "--out",
                 str(out)]) == 0
    assert pq.read_table(out).schema.names == header[0].split(",")


def test_the_plan_against_ptxas_diagonal_is_named(tmp_path):
    from gui.cli.sweep_report import Plots, ptxas_section
    from tests.sweep_fixture import gemm_rows as rows_of

    rows = [{**r, "arch": "sm_80", "cap": "none", "toolchain": "t", "ptxas_registers": r["registers"] + 2}
            for r in rows_of([(2, 2, 2), (4, 4, 4)])]
    labels = {}

    class Watch(Plots):
        def save(self, fig, name):
            labels[name] = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
            return super().save(fig, name)

    ptxas_section(rows, Watch(tmp_path))
    assert "ptxas = plan" in labels["plan_vs_ptxas.png"]
