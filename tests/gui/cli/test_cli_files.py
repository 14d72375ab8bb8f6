"""Files a command reads or writes that are not what they seem: a named pipe for a plan or a program, a
full disk under ``--out-dir``, a plan file whose JSON names a key twice or whose version is not the int 1.

Each gets one line ``regtune: error: ...`` and exit 2, never a hang, a traceback or a half-written build.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui.cli.main import main
from tests.gui.cli.hostile_cases import good_plan

ROOT = Path(__file__).resolve().parents[3]


class Hung(Exception):
    """The command under test did not return in time."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Raise :class:`Hung` in this thread after ``seconds`` (SIGALRM interrupts a blocking open of a FIFO), so a
    hang fails the test instead of blocking the run."""
    def hung(signum, frame):
        raise Hung(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("regtune: error: "), lines[:5]
    return lines[0]


@pytest.mark.parametrize("argv", [["check"], ["analyze"], ["allocate", "--allocator", "dsatur", "--out", "p.json"]])
def test_a_fifo_as_plan_or_program_is_refused_without_waiting(tmp_path, capsys, argv):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    command, *flags = argv
    with deadline(20):
        start = time.perf_counter()
        code = main([command, str(fifo), *[str(tmp_path / f) if f.endswith(".json") else f for f in flags]])
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == f"regtune: error: {fifo}: a named pipe (FIFO), not a regular file"
    assert time.perf_counter() - start < 5
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("command", ["check", "analyze"])
def test_a_fifo_is_refused_by_the_installed_command(tmp_path, command):
    """As a user runs it, in a process of its own: a hang is a timeout here, not a blocked test run."""
    fifo = tmp_path / "program.txt"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "gui.entry", command, str(fifo)], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2, r.stderr[-2000:]
    assert one_error_line(r.stderr).endswith(": a named pipe (FIFO), not a regular file")


def test_a_device_and_a_folder_say_what_they_are(tmp_path, capsys):
    assert main(["check", "/dev/null"]) == 2
    assert one_error_line(capsys.readouterr().err) == "regtune: error: /dev/null: a character device, not a regular file"
    assert main(["analyze", str(tmp_path)]) == 2
    assert one_error_line(capsys.readouterr().err) == f"regtune: error: {tmp_path}: is a directory, not a file"


def test_a_regular_file_still_reads(tmp_path, capsys):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(good_plan()))
    assert main(["check", str(path), "--time-limit", "20"]) == 0, capsys.readouterr().err


def test_a_key_twice_in_a_plan_is_one_line_naming_it(tmp_path, capsys):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(good_plan()).replace('"acc_0_1": [', '"acc_0_1": [9], "acc_0_1": [', 1))
    assert main(["check", str(path)]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"regtune: error: {path}: duplicate key 'assignment.acc_0_1' (each key may appear once in a JSON object)")


@pytest.mark.parametrize("version", ["1.0", "1e0", "true", '"1"'])
def test_only_the_integer_1_is_plan_version_1(tmp_path, capsys, version):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(good_plan()).replace('"version": 1,', f'"version": {version},', 1))
    assert main(["check", str(path)]) == 2
    assert "unsupported plan version" in one_error_line(capsys.readouterr().err)


def test_a_key_twice_in_a_session_file_is_named(tmp_path):
    from engine.base.errors import RegtuneError
    from engine.planfile import plan_from_dict
    from gui.model.session import (
        DEFAULT_OPTIONS,
        DEFAULT_WORKLOAD,
        Session,
        load_session,
        save_session,
    )

    session = Session(dict(DEFAULT_WORKLOAD), DEFAULT_OPTIONS, {"naive": plan_from_dict(good_plan())}, "naive", [])
    path = save_session(session, tmp_path / "autosave.json")
    text = path.read_text()
    assert '"budget": ' in text
    path.write_text(text.replace('"budget": ', '"budget": 3, "budget": ', 1))
    with pytest.raises(RegtuneError) as err:
        load_session(path)
    assert str(err.value) == (f"{path}: duplicate key 'options.budget' (each key may appear once in a JSON object)")


def on_small_tmpfs(folder: Path, kib: int, script: str, *args) -> subprocess.CompletedProcess:
    """Run the shell ``script`` with ``folder`` mounted as a real tmpfs of ``kib`` KiB: a disk that fills up. The
    mount lives in a user and mount namespace of the script's own (``unshare``), so it needs no root and vanishes
    with the script; ``$0`` is ``folder``, ``$1`` the Python running the tests, then ``args``."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare here to mount a small tmpfs")
    mount = f'mount -t tmpfs -o size={kib}k tmpfs "$0" || exit 99\n'
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount + script, str(folder),
                        sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    if r.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {r.stderr.strip()[:200]}")
    return r


BUILD = '"$1" -m gui.entry build "$2" --out-dir "$0" --arch sm_80 --no-simulate'


@pytest.mark.slow
def test_a_full_disk_under_out_dir_is_one_line_and_leaves_no_half_build(tmp_path):
    """A real full disk (a tmpfs of 24 KiB, not an injected error): the build's files (about 44 KiB on it) do not
    fit. The build says so in one line, exits 2 and leaves the folder as it was, an earlier file of the same name
    untouched; on a disk with room the same build writes all four files and nothing else."""
    plan, report, out = tmp_path / "plan.json", tmp_path / "report", tmp_path / "out"
    out.mkdir()
    report.mkdir()
    assert main(["allocate", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocator", "dsatur", "--no-verify",
                 "--out", str(plan)]) == 0
    r = on_small_tmpfs(out, 24, f"""echo old > "$0/dsatur-plan.py"
{BUILD} 2> "$3/err"; echo $? > "$3/status"; ls -A "$0" > "$3/full"; cat "$0/dsatur-plan.py" > "$3/old"
umount "$0" && mount -t tmpfs -o size=1m tmpfs "$0" && {BUILD} > /dev/null 2>&1; echo $? >> "$3/status"
ls -A "$0" > "$3/room"
""", plan, report)
    assert r.returncode == 0, r.stderr[-2000:]
    err = [line for line in (report / "err").read_text().splitlines() if not line.startswith("regtune build: ")]
    assert (report / "status").read_text().split() == ["2", "0"]
    assert len(err) == 1 and err[0].startswith(f"regtune: error: {out}/dsatur-plan."), err
    assert ": cannot write: no space left on device (none of the 4 files was kept" in err[0]
    assert (report / "full").read_text().split() == ["dsatur-plan.py"]
    assert (report / "old").read_text() == "old\n"
    assert sorted((report / "room").read_text().split()) == [
        "dsatur-plan.ptx", "dsatur-plan.py", "dsatur-plan.report.json", "dsatur-plan.sm_80.sass"]


def test_a_full_disk_under_out_is_one_line_and_writes_nothing(tmp_path):
    """``allocate --out`` onto a real full tmpfs (4 KiB, the plan needs more): one line, exit 2, no file."""
    report = tmp_path / "report"
    report.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    r = on_small_tmpfs(out, 4, """"$1" -m gui.entry allocate gemm --m 4 --n 4 --k 4 --allocator dsatur --no-verify \
--out "$0/plan.json" 2> "$2/err"; echo $? > "$2/status"; ls -A "$0" > "$2/listing"
""", report)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (report / "status").read_text() == "2\n"
    assert (report / "err").read_text() == (f"regtune: error: {out}/plan.json: cannot write: no space left on device "
                                             "(nothing was written)\n")
    assert (report / "listing").read_text() == ""


def test_the_readme_examples_run_from_any_folder_with_the_shipped_example(tmp_path):
    """Issue 22: 'allocate resources/examples/...' failed outside the repository root, and the next 'build
    loop-plan.json' with it. The example ships with the package: 'regtune example' writes it where you are."""
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    readme = (root / "README.md").read_text()
    assert "source .venv/bin/activate" in readme and "resources/examples" not in readme
    lines = [line.split("#")[0].split() for line in readme.splitlines()
             if re.match(r"regtune (example gemm-loop|allocate loop\.txt)", line)]
    assert [w[:2] for w in lines] == [["regtune", "example"], ["regtune", "allocate"]]
    folder = tmp_path / "elsewhere"
    folder.mkdir()

    def regtune(*words):
        return subprocess.run([sys.executable, "-m", "gui.entry", *words], cwd=folder, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(root)})

    listed = regtune("example")
    assert listed.returncode == 0 and listed.stdout.split()[0] == "gemm-loop"
    for words in lines:
        run = regtune(*words[1:])
        assert run.returncode == 0, run.stderr
    assert (folder / "loop.txt").read_text() == (root / "resources" / "examples" / "gemm_m1n1k2_loop.txt").read_text()
    assert (folder / "loop-plan.json").exists()
    bad = regtune("example", "gemm-lop")
    assert bad.returncode == 2 and bad.stderr == ("regtune: error: example 'gemm-lop': no such example (the examples: "
                                                  "gemm-loop, gemm)\n")
