"""Hostile and faulty inputs (tests/gui/hostile_cases.py): nothing runs, nothing is left half-written,
and each gets exactly one line on stderr and exit status 2, before any real work.

The cases run in this process through :func:`gui.cli.main` (a build's compile would run in its worker
process, where a payload would still create the marker); Ctrl+C runs the installed command.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.planfile import plan_from_dict
from gui.entry import command as main
from tests.engine.rule_cases import ISSUE_CASES, REFUSED_LINES
from tests.gui.hostile_cases import EXAMPLE, all_cases, good_plan, with_line

CASES = all_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_is_one_line_exit_2_and_runs_nothing(tmp_path, capsys, name):
    marker = tmp_path / "MARKER"
    (tmp_path / "plan.json").write_text(json.dumps(good_plan()))
    argv, outputs = CASES[name](tmp_path, marker)
    start = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2, (captured.out[-500:], captured.err[-500:])
    assert len(lines) == 1 and lines[0].startswith("regtune: error: "), lines[:5]
    assert len(lines[0]) <= 400 and lines[0].isprintable(), lines[0][:200]
    assert not marker.exists(), "a payload ran"
    for path in outputs:
        assert not os.path.exists(path), f"{path} was written"
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".regtune-tmp")]
    assert not leftovers
    assert seconds < 30, f"{name} took {seconds:.1f} s before refusing"


@pytest.mark.parametrize("name", ISSUE_CASES)
def test_allocate_check_and_build_refuse_an_instruction_no_kernel_can_hold_in_the_same_words(tmp_path, capsys, name):
    """Issue 19's cases: ``allocate`` wrote plans that ``check`` refused, ``check`` took what ``build`` could not
    compile. Now the parser refuses each, and every command says where and why in the same words."""
    line, reason = REFUSED_LINES[name]
    program = tmp_path / "program.txt"
    program.write_text(with_line(Path(EXAMPLE).read_text(), line))
    data = good_plan()                                  # a real allocator's plan, its program text edited
    data["program"] = with_line(data["program"], line)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(data))
    at = data["program"].splitlines().index(f"  {line.replace('%pa', '%pc').replace('%f', '%acc_0_0')}") + 1
    commands = {"allocate": (["allocate", str(program), "--allocator", "dsatur", "--out", str(tmp_path / "a.json")],
                             f"{program} line 13: "),
                "check": (["check", str(plan)], f"{plan}: field 'program' line {at}: "),
                "build": (["build", str(plan), "--out-dir", str(tmp_path / "out"), "--no-simulate"],
                          f"{plan}: field 'program' line {at}: ")}
    for command, (argv, where) in commands.items():
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert err == f"regtune: error: {where}{err.split(where, 1)[-1]}" and reason in err, (command, err)
        assert err.count("\n") == 1, (command, err)
    assert not (tmp_path / "a.json").exists() and not list((tmp_path / "out").iterdir())   # the folder is tried first


def test_escaped_fields_in_messages(tmp_path, capsys):
    data = good_plan()
    data["allocator"] = "\x1b[31mred\x07"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[31mred\\x07" in err


def test_tricky_names_that_are_valid_build_a_kernel_that_defines_them_safely():
    """Names that are legal IR but would shadow Python or the module's own names get a v_ prefix; the kernel
    function never replaces one of the module's helpers."""
    import ast

    from kernels.codegen import kernel_source

    data = good_plan()
    text = data["program"].replace(".kernel gemm_m2n2k2_t2x2_k_outer", ".kernel check")
    for old, new in (("acc_0_0", "cuda"), ("acc_0_1", "__debug__"), ("acc_1_0", "max"), ("acc_1_1", "grid")):
        text = text.replace(f"%{old}:", f"%{new}:").replace(f"%{old},", f"%{new},").replace(f"%{old}\n", f"%{new}\n")
        data["assignment"][new] = data["assignment"].pop(old)
    data["program"] = text
    source = kernel_source(plan_from_dict(data, "tricky.json"))
    tree = ast.parse(source.text)
    kernels = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == source.name]
    assert source.name == "v_check" and len(kernels) == 1
    assigned = {n.id for n in ast.walk(kernels[0]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for name in ("cuda", "__debug__", "max"):
        assert name not in assigned and any(a.startswith(f"v_{name}") for a in assigned), (name, sorted(assigned))
    compile(source.text, "tricky", "exec")


@pytest.mark.parametrize("how, status, line", [(signal.SIGINT, 130, "regtune: interrupted (Ctrl+C)"),
                                               (signal.SIGTERM, 143, "regtune: terminated (SIGTERM)")])
def test_ctrl_c_or_sigterm_is_one_line_and_leaves_no_file_and_no_process(tmp_path, how, status, line):
    regtune = os.path.join(os.path.dirname(sys.executable), "regtune")
    out = tmp_path / "report.md"
    proc = subprocess.Popen([regtune, "report", "claims", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_interruptible)
    time.sleep(4)
    if how == signal.SIGINT:
        os.killpg(proc.pid, how)          # as a terminal does: the whole process group
    else:
        proc.send_signal(how)             # as timeout, an IDE or a closing session do: the command alone
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith(line)
    assert not out.exists()
    for _ in range(50):        # the workers were terminated: give them (and the resource tracker) a moment
        states = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(proc.pid)], capture_output=True,
                                text=True).stdout.split("\n")
        running = [line for line in states if line.strip() and not line.split()[1].startswith("Z")]
        if not running:
            break
        time.sleep(0.2)
    assert not running, f"processes of the interrupted command still run: {running}"


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(workload={"kind": "gemm", "m": "8", "n": 8, "k": 8}), "field 'm' must be an integer in 2..16"),
    (lambda d: d["options"].update(budget=10 ** 9), "field 'budget' must be an integer in 1..255"),
    (lambda d: d["options"].update(tile=["4);", 4]), "field 'tile' must be null or [TM, TN]"),
    (lambda d: d.update(current="nobody"), "field 'current' names no plan of the session"),
    (lambda d: d.pop("workload"), "missing field 'workload'"),
    (lambda d: d.update(version=1.0), "unsupported session version 1.0 (this RegTune reads 1)"),
    (lambda d: d["plans"]["naive"].update(allocator='x"""'), "field 'allocator' must be one of"),
])
def test_a_damaged_session_file_is_one_line(tmp_path, mutate, message):
    from engine.base.errors import RegtuneError
    from gui.model.session import DEFAULT_OPTIONS, DEFAULT_WORKLOAD, Session, load_session, save_session

    plan = plan_from_dict(good_plan(), "good")
    session = Session(dict(DEFAULT_WORKLOAD), dict(DEFAULT_OPTIONS), {"naive": plan}, "naive", [])
    path = save_session(session, tmp_path / "autosave.json")
    assert load_session(path).plans["naive"] == plan
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RegtuneError) as err:
        load_session(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def _interruptible() -> None:
    """In the child: Ctrl+C as a terminal's foreground command gets it. A runner started in the background (nohup,
    a CI script's ``&``) passes SIGINT on ignored, and the command would never see the test's Ctrl+C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
