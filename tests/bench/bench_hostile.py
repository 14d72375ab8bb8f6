"""Benchmark: every hostile or faulty input (tests/gui/cli/hostile_cases.py) as the installed command runs it.

Each case runs as its own ``regtune`` process, ``--repeat`` times; the
figures per case are the median wall time and the largest peak memory
(maximum resident set of the process and its children, from ``wait4``).
For reference, the same is measured for ``regtune check`` of the valid
plan the hostile plans start from. Prints the number of cases, the worst
case by time and by memory, and their ratios to the reference.

Run: ``python -m tests.bench.bench_hostile [--repeat N] [--only TEXT]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.gui.cli.hostile_cases import all_cases, good_plan

REGTUNE = os.path.join(os.path.dirname(sys.executable), "regtune")


def _run(argv: list) -> tuple[float, float, int]:
    """Wall seconds, peak resident MB of the process tree and exit status of one ``regtune`` run."""
    start = time.perf_counter()
    proc = subprocess.Popen([REGTUNE, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, proc.returncode


def _measure(case, repeat: int) -> tuple[float, float, int]:
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            (folder / "plan.json").write_text(json.dumps(good_plan()))
            argv, _ = case(folder, folder / "MARKER")
            runs.append(_run(argv))
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="cases whose name contains this text")
    args = parser.parse_args(argv)
    cases = {n: c for n, c in sorted(all_cases().items()) if args.only in n}
    reference = _measure(lambda folder, marker: (["check", str(folder / "plan.json")], []), args.repeat)
    figures = {name: _measure(case, args.repeat) for name, case in cases.items()}
    slow = max(figures, key=lambda n: figures[n][0])
    big = max(figures, key=lambda n: figures[n][1])
    codes = sorted({f[2] for f in figures.values()})
    print(f"{len(figures)} cases, exit statuses {codes}; median of {args.repeat} runs each")
    print(f"reference (check of the valid GEMM 2x2x2 plan): {reference[0]:.2f} s, peak {reference[1]:.0f} MB")
    print(f"slowest: {slow}: {figures[slow][0]:.2f} s ({figures[slow][0] / reference[0]:.1f}x the reference), "
          f"peak {figures[slow][1]:.0f} MB")
    print(f"largest: {big}: peak {figures[big][1]:.0f} MB ({figures[big][1] / reference[1]:.1f}x the reference), "
          f"{figures[big][0]:.2f} s")
    return {"reference": reference, "cases": figures}


if __name__ == "__main__":
    main()
