"""``regtune sweep``: flags checked before work, a rerun skips what is stored, the Dask path equals the process pool,
a worker with another toolchain is refused by name, Ctrl+C and kill -9 keep every finished result."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.alloc import ALLOCATORS
from engine.store import KEY, open_store
from gui.cli.main import main
from tests.gui.cli.test_hostile_inputs import _interruptible

ROOT = Path(__file__).resolve().parents[3]
SMALL = "m <= 3 and n <= 3 and k == 2"          # 4 configs, tiny programs


@pytest.mark.parametrize("argv, what", [
    (["--filter", "m <= "], "at column 6: expected a name"),
    (["--filter", "heads == 2"], "unknown field 'heads'"),
    (["--filter", "m == 99"], "no gemm config matches"),
    (["--allocators", "dsatur,best"], "--allocators: unknown 'best'"),
    (["--budgets", "0"], "--budgets"),
    (["--tiles", "4y4"], "--tiles: '4y4'"),
    (["--strategies", "fp16-softmax"], "--strategies is for mha"),
    (["--arch", "sm_70"], "--arch: unknown 'sm_70'"),
])
def test_bad_flags_are_one_line_before_any_work(argv, what, capsys, tmp_path):
    store = tmp_path / "s.sqlite"
    assert main(["sweep", "gemm", *argv, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1, err
    assert not store.exists()          # nothing was opened, nothing computed


def test_a_sweep_stores_every_allocator_and_a_rerun_skips_it(capsys, tmp_path):
    store = tmp_path / "s.sqlite"
    assert main(["sweep", "gemm", "--filter", SMALL, "--jobs", "1", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"{4 * len(ALLOCATORS)} rows new, 0 configs skipped" in out and str(store) in out
    assert "on 1 local process;" in out and "4 configs computed" in out
    with open_store(store, readonly=True) as s:
        rows = s.rows(None, ["config", "allocator", "registers", "best_registers", "naive_registers", "error",
                             "arch", "plan_json", "measured_why"])
    assert len(rows) == 4 * len(ALLOCATORS) and {r["allocator"] for r in rows} == set(ALLOCATORS)
    assert all(r["error"] is None and r["arch"] == "-" and r["plan_json"].startswith("{") for r in rows)
    for r in rows:
        assert r["best_registers"] <= r["registers"] <= r["naive_registers"]
    assert main(["sweep", "gemm", "--filter", SMALL, "--jobs", "1", "--store", str(store)]) == 0
    assert "0 rows new, 4 configs skipped (stored already), 0 configs computed" in capsys.readouterr().out


def _rows(path):
    with open_store(path, readonly=True) as s:
        cols = [c for c in s.rows(None)[0] if c not in ("seconds", "created")] + ["plan_json"]
        return sorted(s.rows(None, cols), key=lambda r: tuple(str(r[k]) for k in KEY))


def test_the_dask_cluster_gives_the_process_pools_rows(tmp_path):
    from distributed import Client, LocalCluster

    from engine.sweep import local_pool, run_sweep, task_rows
    from gui.cli.main import build_parser
    from gui.cli.sweep import tasks_of
    from kernels.sweep import ClusterError, check_workers

    args = build_parser().parse_args(["sweep", "gemm", "--filter", SMALL + " and m == 3", "--budgets", "8,255"])
    tasks = tasks_of(args)
    with open_store(tmp_path / "local.sqlite") as s:
        pool = local_pool(1)
        run_sweep(task_rows, tasks, s, pool, chunk=1)
        pool.shutdown()
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        versions = check_workers(client)
        assert len(versions) == 1
        with open_store(tmp_path / "dask.sqlite") as s:
            summary = run_sweep(task_rows, tasks, s, client.get_executor(), chunk=1)
        assert summary.rows_new == 2 * 2 * len(ALLOCATORS)
        with pytest.raises(ClusterError) as e:
            check_workers(client, expected="release 0.0, V0.0.0")
        address, version = next(iter(versions.items()))
        assert address in str(e.value) and version in str(e.value) and "release 0.0, V0.0.0" in str(e.value)
    local, dask = _rows(tmp_path / "local.sqlite"), _rows(tmp_path / "dask.sqlite")
    assert len(local) == 4 * len(ALLOCATORS) and local == dask


def test_without_distributed_the_error_names_the_extra(tmp_path):
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'distributed': raise ImportError('blocked')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from gui.entry import main\n"
            f"sys.exit(main(['sweep', 'gemm', '--filter', 'm == 2', '--scheduler', 'tcp://127.0.0.1:1', "
            f"'--store', {str(tmp_path / 's.sqlite')!r}]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       check=False)
    assert r.returncode == 2
    assert r.stderr.strip() == ("regtune: error: --scheduler tcp://127.0.0.1:1: the Dask cluster support is not "
                                "installed; pip install 'regtune[cluster]'")


#: 28 configs of a few hundred ms each on one worker: long enough to stop in the middle
RUN = ["sweep", "gemm", "--filter", "m >= 7 and m <= 8 and n >= 7 and n <= 8 and k <= 8", "--allocators",
       "dsatur,naive", "--jobs", "1"]


def _start(store):
    return subprocess.Popen([sys.executable, "-m", "gui.entry", *RUN, "--store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True, preexec_fn=_interruptible)  # noqa: PLW1509


def _wait_for_rows(proc, store, at_least: int, timeout: float = 120) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        if store.exists():
            try:
                n = sqlite3.connect(f"file:{store}?mode=ro", uri=True).execute("SELECT COUNT(*) FROM results"
                                                                                ).fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
            if n >= at_least:
                return n
        time.sleep(0.05)
    raise AssertionError("the sweep wrote no rows in time")


def _complete_configs(store):
    """Every stored config has all its rows: a task's rows are committed together."""
    with open_store(store, readonly=True) as s:
        per = {}
        for r in s.rows(None, ["config"]):
            per[r["config"]] = per.get(r["config"], 0) + 1
    assert set(per.values()) == {2}, per
    return len(per)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_every_finished_result(tmp_path):
    store = tmp_path / "s.sqlite"
    proc = _start(store)
    seen = _wait_for_rows(proc, store, 4)
    os.killpg(proc.pid, signal.SIGINT)                 # as a terminal does: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "regtune sweep: stopped:" in err and "rows new kept in" in err
    assert err.rstrip().endswith("regtune: interrupted (Ctrl+C); files already written are complete and kept")
    assert "Traceback" not in err
    kept = _complete_configs(store)
    assert kept * 2 >= seen and kept < 28


@pytest.mark.slow
def test_kill_9_and_resume_give_the_uninterrupted_database(tmp_path):
    store = tmp_path / "killed.sqlite"
    proc = _start(store)
    _wait_for_rows(proc, store, 8)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    kept = _complete_configs(store)               # readable after kill -9, no config half written
    assert 4 <= kept < 28
    resumed = subprocess.run([sys.executable, "-m", "gui.entry", *RUN, "--store", str(store)], capture_output=True,
                             text=True, cwd=ROOT, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert "configs skipped (stored already)" in resumed.stdout and f", {kept} configs skipped" in resumed.stdout
    whole = tmp_path / "whole.sqlite"
    r = subprocess.run([sys.executable, "-m", "gui.entry", *RUN, "--store", str(whole)], capture_output=True,
                       text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    got, want = _rows(store), _rows(whole)
    assert len(got) == len(want) == 28 * 2
    for a, b in zip(got, want):
        assert {k: (a[k], b[k]) for k in a if a[k] != b[k]} == {}, (a["config"], a["allocator"])


def test_arch_without_compile_is_noted_and_one_config_is_singular(capsys, tmp_path):
    store = tmp_path / "s.sqlite"
    assert main(["sweep", "gemm", "--filter", "m == 2 and n == 2 and k == 2", "--arch", "sm_90", "--jobs", "1",
                 "--allocators", "naive", "--store", str(store)]) == 0
    captured = capsys.readouterr()
    assert "regtune: note: no effect without --compile or --numba: --arch" in captured.err
    assert "1 row new, 0 configs skipped (stored already), 1 config computed" in captured.out
