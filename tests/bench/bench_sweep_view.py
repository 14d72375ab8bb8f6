"""Benchmark: the Sweep store view's redraw over 5,000 rows (target: under 200 ms).

The rows are real: ``--configs`` GEMM configs (M, N in 2..16, K from 2 up, in that order) through the engine's
analysis and every allocator at budget 255 (tests/sweep_fixture.py), four rows a config, written to a real SQLite
store and read back by the view as the window reads it. Timed, each the median of ``--repeat`` runs: a redraw
(:meth:`QtSweepView.redraw`: the model's grid over the rows, the ImageItem, the axes and the caption) for each
figure, over the slice the view opens on and with no config field fixed (every row of the workload); and the whole
load (the store read, the index, the worst tables, the first redraw). Beside them, ``sum(range(10**7))`` timed in
the same run (median of the same count), so a slow machine can be told from a slow view.

Run: ``python -m tests.bench.bench_sweep_view [--configs 1250] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def yardstick() -> float:
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def _configs(count: int) -> list[tuple[int, int, int]]:
    return [(m, n, k) for k in range(2, 17) for m in range(2, 17) for n in range(2, 17)][:count]


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(configs: int, repeat: int) -> dict:
    from PySide6.QtWidgets import QApplication

    from engine.store import open_store
    from gui.qt.qt_sweep_view import QtSweepView
    from tests.sweep_fixture import gemm_rows

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        with open_store(path) as store:
            store.put(gemm_rows(_configs(configs)))
        view = QtSweepView()
        view.resize(1300, 800)
        view.show()
        load = _median(lambda: view.open_store(path), repeat)
        app.processEvents()
        out = {"rows": len(view.rows), "load": load, "redraw": {}, "redraw_all_k": {}}
        for index in range(view.figure.count()):
            view.figure.setCurrentIndex(index)
            out["redraw"][view.figure_name()] = _median(view.redraw, repeat)
        for box in view.slice_boxes.values():
            box.setCurrentIndex(0)
        grid = view.grid
        out["redraw_all_k"] = _median(lambda: grid.grid("registers", {}), repeat)
        out["yardstick"] = statistics.median(yardstick() for _ in range(repeat))
        view.close()
        view.deleteLater()
        app.processEvents()
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1250, help="GEMM configs (four rows each; default 1250)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per figure (their median; default 7)")
    args = parser.parse_args(argv)
    r = run(args.configs, args.repeat)
    worst = max(r["redraw"].values())
    print(f"Sweep view over {r['rows']:,} store rows (median of {args.repeat}); sum(range(10**7)): "
          f"{r['yardstick'] * 1e3:.0f} ms")
    print(f"  load (store read, index, worst tables, first redraw): {r['load'] * 1e3:.0f} ms")
    for name, seconds in r["redraw"].items():
        print(f"  redraw coloured by {name}: {seconds * 1e3:.1f} ms")
    print(f"  the model's grid with no field fixed (every row): {r['redraw_all_k'] * 1e3:.2f} ms")
    print(f"  slowest redraw {worst * 1e3:.1f} ms = {worst / r['yardstick']:.2f}x sum(range(10**7)) "
          f"(target: under 200 ms)")
    return r


if __name__ == "__main__":
    main()
