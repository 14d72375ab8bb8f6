"""Benchmark: drawing the window's views for large programs, and a hand edit to redrawn views.

For the largest GEMM program (16x16x16, default tile) and the source note's MHA
example (32 heads, batch 64, head_dim 64, 4 groups): the time to load a
plan into the window and draw every view of the current plan (timeline,
pressure, allocation table, why panel, instruction list, conflicts, plans,
compare), and the time from one assignment edit (and one schedule edit)
to the redrawn views, and a zoom or pan of the timeline to its repaint, each the median of several runs. Targets on the
2-core machine: under 1 s to draw, under 100 ms per edit. The reference
measured in the same run: the engine's own work for the same step
(analysis and conflict check, or apply_edit), so the ratio says what the
drawing adds.

Run: ``QT_QPA_PLATFORM=offscreen python -m tests.bench.bench_gui [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CASES = {
    "GEMM 16x16x16 (largest)": ({"kind": "gemm", "m": 16, "n": 16, "k": 16, "dtype": "f32"}, {}),
    "MHA 32h b64 d64 g4 (the note's example)": ({"kind": "mha", "heads": 32, "batch": 64, "head_dim": 64, "groups": 4,
                                   "seq_len": 2048, "dtype": "f32"}, {}),
}


def _drawn(app, window) -> None:
    app.processEvents()
    window.grab()          # paint everything once, as the screen would


def measure(app, workload: dict, options: dict, repeat: int) -> dict:
    from engine.alloc.hand import Assign, Move, apply_edit
    from engine.analysis.liveness import analyze
    from engine.check.verify import static_conflicts
    from gui.qt.qt_main_window import QtMainWindow
    from gui.model.session import DEFAULT_OPTIONS, allocate_all

    options = {**DEFAULT_OPTIONS, **options}
    plans = allocate_all(workload, options)
    small_workload = {"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}
    small = allocate_all(small_workload, options)
    window = QtMainWindow(autosave=False, restore=False, start_jobs=False)
    window.resize(1500, 950)
    window.show()
    draw, engine_draw, edit, engine_edit, move, engine_move, pan = [], [], [], [], [], [], []
    for r in range(repeat):
        fresh = {name: p.with_(program=type(p.program)(p.program.name, p.program.blocks)) for name, p in plans.items()}
        t = time.perf_counter()
        a = analyze(fresh["linear-scan"].program)
        static_conflicts(fresh["linear-scan"].program, fresh["linear-scan"].assignment, {}, 255)
        engine_draw.append(time.perf_counter() - t)
        fresh = {name: p.with_(program=type(p.program)(p.program.name, p.program.blocks)) for name, p in plans.items()}
        window.doc.set_workload(small_workload, options, small, "linear-scan")   # every timed load is a real change
        _drawn(app, window)
        t = time.perf_counter()
        window.doc.set_workload(workload, options, fresh, "linear-scan")
        _drawn(app, window)
        draw.append(time.perf_counter() - t)
        n = len(window.doc.plan.program.instructions)
        for k, (lo, hi) in enumerate(((0, n // 10), (n // 3, n // 3 + n // 10), (0, n), (n // 2, n))):
            t = time.perf_counter()
            window.timeline.plot.setXRange(lo, hi, padding=0)     # zoom or pan, then repaint the timeline
            window.timeline.layout_.grab()
            if r or k:                                           # the first repaint of a run warms caches
                pan.append(time.perf_counter() - t)
        plan = window.doc.plan
        a = analyze(plan.program)
        name = max((n for n in a.names if plan.program.values[n].width == 1), key=lambda n: a.end[a.index[n]])
        target = (plan.assignment[name][0] + 1 + r) % plan.budget
        t = time.perf_counter()
        apply_edit(plan, Assign(name, (target,)))
        engine_edit.append(time.perf_counter() - t)
        t = time.perf_counter()
        window.edit(Assign(name, (target,)))
        _drawn(app, window)
        edit.append(time.perf_counter() - t)
        plan = window.doc.plan
        stores = [i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "st.global"]
        t = time.perf_counter()
        apply_edit(plan, Move(stores[-1], stores[-2]))
        engine_move.append(time.perf_counter() - t)
        t = time.perf_counter()
        window.edit(Move(stores[-1], stores[-2]))
        _drawn(app, window)
        move.append(time.perf_counter() - t)
    instructions = len(window.doc.plan.program.instructions)
    window.dispose()
    med = statistics.median
    return {"instructions": instructions, "draw": med(draw), "engine_draw": med(engine_draw), "edit": med(edit),
            "engine_edit": med(engine_edit), "move": med(move), "engine_move": med(engine_move), "pan": med(pan)}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from gui.qt.qt_app import application

    app = application()
    results = []
    print(f"window drawing, median of {args.repeat} (offscreen, 1500x950)")
    for label, (workload, options) in CASES.items():
        r = measure(app, workload, options, args.repeat)
        r["label"] = label
        results.append(r)
        print(f"{label}: {r['instructions']} instructions; load and draw {r['draw'] * 1000:.0f} ms "
              f"(engine analysis+check {r['engine_draw'] * 1000:.0f} ms, {r['draw'] / r['engine_draw']:.1f}x); "
              f"assignment edit to redrawn views {r['edit'] * 1000:.0f} ms (apply_edit {r['engine_edit'] * 1000:.0f} ms); "
              f"schedule edit {r['move'] * 1000:.0f} ms (apply_edit {r['engine_move'] * 1000:.0f} ms); "
              f"zoom/pan repaint of the timeline {r['pan'] * 1000:.0f} ms")
    return results


if __name__ == "__main__":
    main()
