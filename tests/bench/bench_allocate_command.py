"""Benchmark: ``regtune allocate`` on a 5,000-instruction program, as a user runs it, all four allocators.

Each allocator runs as its own ``regtune allocate`` process on the
straight-line and the loop-shaped benchmark programs (tests/bench/programs.py,
written to a file), everything it does and prints included: parse, analysis,
allocation, prediction, the symbolic checker's proof, the execution check,
the ILP model and the plan file. The figure is CPU time (user + system of the
process, from ``wait4``) beyond start-up: the same command on a
three-instruction program is its start-up (the imports, the parser set-up),
and is taken off. Each figure is the median of ``--repeat`` runs; beside it,
``sum(range(10**7))`` timed in the same run before every command (their
median), so a slow machine can be told from a slow engine (target: the four
allocators together at most 8x it).

Run: ``python -m tests.bench.bench_allocate_command [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.alloc import ALLOCATORS
from tests.bench.programs import loop_shaped, straight_line

PROGRAMS = {"straight-line": straight_line, "loop-shaped": loop_shaped}
TINY = ".kernel tiny\n.block b\n  %p0:u64 = param C\n  %x:f32 = mov 1\n  st.global %p0, 0, %x\n  exit\n"
ROOT = Path(__file__).resolve().parents[2]
#: the command as the console script runs it, on this checkout's code
COMMAND = [sys.executable, "-c", "import sys; from gui.entry import main; sys.exit(main())"]


def yardstick() -> float:
    """Seconds for ``sum(range(10**7))``: this machine's pace right now."""
    t = time.perf_counter()
    sum(range(10**7))
    return time.perf_counter() - t


def cpu_of(argv: list) -> tuple[float, int, str]:
    """CPU seconds (user + system), exit status and output of one ``regtune`` process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([*COMMAND, *argv], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), out.read().decode()


def _allocate(folder: Path, program: Path, allocator: str) -> tuple[float, str]:
    cpu, code, text = cpu_of(["allocate", str(program), "--allocator", allocator, "--out", str(folder / "plan.json")])
    if code != 0:
        raise RuntimeError(f"regtune allocate {program.name} --allocator {allocator} exited {code}: {text.strip()}")
    return cpu, text


def measure(repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="regtune-bench-") as tmp:
        folder = Path(tmp)
        tiny = folder / "tiny.ir"
        tiny.write_text(TINY)
        files = {}
        for name, make in PROGRAMS.items():
            files[name] = folder / f"{name}.ir"
            files[name].write_text(make())
        startup, cpu, lines, ref = {}, {}, {}, []
        for _ in range(repeat):
            for a in sorted(ALLOCATORS):
                ref.append(yardstick())   # beside every command, so a load that comes and goes weighs on both
                startup.setdefault(a, []).append(_allocate(folder, tiny, a)[0])
                for name, path in files.items():
                    ref.append(yardstick())
                    seconds, text = _allocate(folder, path, a)
                    cpu.setdefault((name, a), []).append(seconds)
                    lines[(name, a)] = text.strip()
    start = {a: statistics.median(s) for a, s in startup.items()}
    beyond = {k: statistics.median(s) - start[k[1]] for k, s in cpu.items()}
    return {"yardstick": statistics.median(ref), "startup": start, "beyond": beyond, "lines": lines,
            "totals": {name: sum(beyond[(name, a)] for a in ALLOCATORS) for name in PROGRAMS}}


def report(r: dict, repeat: int) -> str:
    y = r["yardstick"]
    out = [f"regtune allocate, CPU seconds beyond start-up (median of {repeat} runs each; start-up = the same command "
           f"on a 3-instruction program, {statistics.median(r['startup'].values()):.2f} s); "
           f"sum(range(10**7)) {y * 1000:.0f} ms in this run"]
    for name in PROGRAMS:
        for a in sorted(ALLOCATORS):
            s = r["beyond"][(name, a)]
            out.append(f"  {name:<14} {a:<15} {s * 1000:7.0f} ms  ({s / y:5.1f}x the reference loop)")
        t = r["totals"][name]
        out.append(f"  {name:<14} {'four together':<15} {t * 1000:7.0f} ms  ({t / y:5.1f}x the reference loop; "
                   "target: at most 8x)")
    return "\n".join(out)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    r = measure(args.repeat)
    print(report(r, args.repeat), flush=True)
    return r


if __name__ == "__main__":
    main()
