"""Programs that ask for too much are refused by every command in one line, exit 2, before the work; long work
stops at SIGTERM. Each runs ``python -m gui.entry`` in a subprocess, as a user runs ``regtune``."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.base.limits import MAX_INTERFERENCE_EDGES
from engine.planfile import FORMAT, VERSION
from tests.bench.programs import HUGE_GRAPH, long_loop, many_loops, sliding_window

ROOT = Path(__file__).resolve().parents[2]


def regtune(*args, timeout=120):
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gui.entry", *map(str, args)], check=False, capture_output=True,
                       text=True, cwd=ROOT, timeout=timeout)
    return r, time.perf_counter() - start


def _plan_of(text: str, path: Path) -> Path:
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "budget": 255, "allocator": "hand",
                                "workload": {"kind": "program", "name": "window"}, "program": text,
                                "assignment": {}}))
    return path


def _one_line_exit_2(r, *words):
    lines = r.stderr.splitlines()
    assert r.returncode == 2, r.stderr[-800:]
    assert len(lines) == 1 and lines[0].startswith("regtune: error: "), lines[:5]
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), lines[0]


@pytest.fixture(scope="module")
def over_the_edge_limit(tmp_path_factory) -> tuple[Path, Path]:
    """A program file of 10.5 million interference edges (0.4 MB) and a plan file holding it."""
    folder = tmp_path_factory.mktemp("edges")
    text = sliding_window(11_000, 1_000)
    program = folder / "window.txt"
    program.write_text(text)
    return program, _plan_of(text, folder / "window.json")


@pytest.mark.parametrize("command", ["analyze", "allocate", "check", "build", "gui"])
def test_every_command_refuses_a_graph_over_the_limit_in_one_line_naming_the_file(over_the_edge_limit,
                                                                                  tmp_path, command):
    program, plan = over_the_edge_limit
    argv = {"analyze": ["analyze", program],
            "allocate": ["allocate", program, "--allocator", "dsatur", "--out", tmp_path / "p.json"],
            "check": ["check", plan],
            "build": ["build", plan, "--out-dir", tmp_path / "out"],
            "gui": ["gui", plan]}[command]        # the window loads a plan before it opens
    r, seconds = regtune(*argv)
    where = program if command in ("analyze", "allocate") else plan
    _one_line_exit_2(r, f"{where}: ", "about 10,500,500 interference edges", f"limit of {MAX_INTERFERENCE_EDGES:,}")
    assert not (tmp_path / "p.json").exists() and not list(tmp_path.glob("out/*"))
    assert seconds < 30


@pytest.mark.slow
def test_analyze_refuses_a_program_of_4e8_edges_in_one_line(tmp_path):
    program = tmp_path / "huge.txt"
    program.write_text(sliding_window(**HUGE_GRAPH))      # 7.6 MB: parsing it takes most of the time
    r, seconds = regtune("analyze", program)
    _one_line_exit_2(r, f"{program}: ", "about 397,760,220 interference edges")
    assert seconds < 60


@pytest.mark.parametrize("text, words", [
    (long_loop(2_000_000_000), "the loop at block loop (2,000,000,000 trips)"),
    (many_loops(1_022, 1_000), "the loop at block loop499 (1,000 trips)")])
@pytest.mark.parametrize("command", ["analyze", "allocate", "check"])
def test_loops_longer_than_the_step_limit_are_refused_before_anything_runs(tmp_path, text, words, command):
    program, plan = tmp_path / "loops.txt", _plan_of(text, tmp_path / "loops.json")
    program.write_text(text)
    argv = {"analyze": ["analyze", program], "check": ["check", plan],
            "allocate": ["allocate", program, "--allocator", "linear-scan", "--out", tmp_path / "p.json"]}[command]
    r, seconds = regtune(*argv)
    where = plan if command == "check" else program
    _one_line_exit_2(r, f"{where}: a run that gets past {words}", "above the limit of 2,000,000 for one run",
                     "refused before running it")
    assert seconds < 15        # the interpreter reached its step limit after 8-80 s


@pytest.mark.slow
@pytest.mark.parametrize("after", [6.0, 12.0])
def test_sigterm_stops_a_long_allocate_within_two_seconds_in_one_line(tmp_path, after):
    """A graph just under the limit (9.5 million edges, 180,000 values): reading and allocating it takes about
    20 s, none of it in a numpy call long enough to hold the signal back."""
    program = tmp_path / "window.txt"
    program.write_text(sliding_window(180_000, 53))
    out = tmp_path / "plan.json"
    proc = subprocess.Popen([sys.executable, "-m", "gui.entry", "allocate", str(program), "--allocator", "dsatur",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    assert proc.poll() is None, "the allocation ended before the signal"
    sent = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    latency = time.perf_counter() - sent
    assert proc.returncode == 143 and "Traceback" not in err
    assert err.splitlines() == ["regtune: terminated (SIGTERM); files already written are complete and kept"]
    assert latency < 2.0 and not out.exists()
