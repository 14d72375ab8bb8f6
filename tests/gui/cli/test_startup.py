"""The ``regtune`` command's start: what ``--version``, ``--help`` and a mistyped command import, and a Ctrl+C
while the modules load.

Each runs this tree's gui.entry in a fresh interpreter with ``-X importtime``, whose lines name every module as
its import completes: the first test reads the names, the second sends Ctrl+C as soon as a chosen module has
loaded, so the signal lands during the imports whatever the machine's speed.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gui.cli.test_hostile_inputs import _interruptible

ROOT = Path(__file__).resolve().parents[3]
HEAVY = {"numpy", "networkx", "numba", "PySide6"}
#: what the installed console script runs (a file, as ``regtune`` is; see the Ctrl+C test for why not ``-m``)
SCRIPT = "import sys; from gui.entry import main; sys.exit(main())"


def imported(err: str) -> set:
    """Top-level package names of the modules ``-X importtime`` reported."""
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in err.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("argv, status", [(["--version"], 0), (["--help"], 0), (["nosuch"], 2),
                                          (["analyze", "--help"], 0), (["check", "--help"], 0),
                                          (["sweep", "--help"], 0), (["sweep", "gemm", "--filter", "m <"], 2),
                                          (["check"], 2), (["occupancy", "--regs", "300"], 2)])
def test_version_help_and_argument_errors_import_no_heavy_module(argv, status):
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "gui.entry", *argv], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == status, r.stderr[-2000:]
    names = imported(r.stderr)
    assert "gui" in names and "engine" in names      # the run was read (this tree's modules are in it)
    assert not names & HEAVY, sorted(names & HEAVY)


@pytest.mark.parametrize("after", ["signal", "numpy", "networkx"])
def test_ctrl_c_while_the_modules_load_is_one_line(after):
    """Ctrl+C right after ``after`` has loaded (``signal``: the first import of gui.entry's main, inside its try;
    numpy and networkx: in the middle of the engine's imports) prints the one interrupted line, exit 130.

    Run as the console script runs it (a file's code, here ``-c``): under ``python -m`` a Ctrl+C that lands in a
    string ``exec()`` (dataclasses build their methods that way) makes CPython 3.11 end the process by SIGINT
    after it returned 130, the same line printed; a shell reports both as 130."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-c", SCRIPT, "analyze", "gemm", "--m", "16",
                             "--n", "16", "--k", "16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True, preexec_fn=_interruptible)
    sent = False
    for line in proc.stderr:
        if line.startswith("import time:") and line.rsplit("|", 1)[1].strip() == after:
            os.killpg(proc.pid, signal.SIGINT)       # as a terminal does: the whole process group
            sent = True
            break
    out, rest = proc.communicate(timeout=60)
    assert sent, f"{after} was never imported"
    lines = [line for line in rest.splitlines() if not line.startswith("import time:")]
    assert "Fatal Python error" not in rest and "Traceback" not in rest, rest[-3000:]
    assert len(lines) == 1 and lines[0].startswith("regtune: interrupted (Ctrl+C)"), lines[:40]
    assert proc.returncode == 130 and out == ""


@pytest.mark.parametrize("argv, absent", [
    (["configs", "gemm", "--count"], HEAVY | {"kernels"}),
    (["occupancy", "--regs", "64", "--threads", "128"], HEAVY | {"kernels"}),
    (["analyze", "gemm", "--m", "2", "--n", "2", "--k", "2"], {"numba", "PySide6", "pyqtgraph", "kernels"}),
])
def test_each_command_imports_only_what_it_uses(argv, absent):
    """A command that needs no kernel imports neither kernels/ nor numba; one that needs no program imports
    neither numpy nor networkx."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "gui.entry", *argv], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    names = imported(r.stderr)
    assert "engine" in names and not names & absent, sorted(names & absent)
