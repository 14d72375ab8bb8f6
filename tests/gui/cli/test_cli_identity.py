"""The identity proof and the allocation proof as the command and the window's --plan state them: a plan
whose program is not its workload's, or that the symbolic checker cannot prove, is refused in one line
(engine/admit.py is the one admission; tests/engine/test_identity.py proves the proof itself)."""

import json

from engine.planfile import plan_to_dict
from gui.cli.main import main
from tests.engine.test_identity import _plan


def test_check_refuses_the_swapped_branch_and_the_changed_guard_in_one_line(tmp_path, capsys):
    for m, old, new in ((2, "cbr %beta_zero, store, beta", "cbr %beta_zero, beta, store"),
                        (8, "setp.lt %mat, %batch", "setp.le %mat, %batch")):
        data = plan_to_dict(_plan(m, m, m))
        data["program"] = data["program"].replace(old, new)
        path = tmp_path / f"broken{m}.json"
        path.write_text(json.dumps(data))
        assert main(["check", str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1
        assert "is not gemm" in captured.err and new in captured.err and "proved" not in captured.err


def test_the_window_refuses_to_open_a_plan_whose_program_is_not_its_workloads(tmp_path, capsys):
    """The window's --plan (gui, screenshot) goes through the same admission as check (engine.admit)."""
    data = plan_to_dict(_plan())
    data["program"] = data["program"].replace("cbr %beta_zero, store, beta", "cbr %beta_zero, beta, store")
    err = _refused_by_screenshot(tmp_path, capsys, data, "swapped.json")
    assert err.startswith("the plan's program, spill code removed, is not gemm 2x2x2's")


def test_a_plan_the_symbolic_checker_cannot_prove_is_refused_by_the_window_too(tmp_path, capsys):
    """Review of issue 19: --plan of the window and its Open loaded the plan and proved its identity, but ran
    neither the symbolic checker nor the execution check: a deleted spill store passed there, not in check."""
    data = plan_to_dict(_plan(4, 4, 4, "chaitin-briggs", 24))
    lines = data["program"].splitlines()
    # the store a reload reads: the last one to its slot before the first reload (a store whose slot is stored
    # again before any reload is dead, and the checker rightly accepts a plan without it)
    first = next(i for i, ln in enumerate(lines) if " = ld.local " in ln)
    slot = lines[first].split("ld.local")[1].strip()
    store = max(i for i in range(first) if lines[i].strip().startswith(f"st.local {slot},"))
    data["program"] = "\n".join(lines[:store] + lines[store + 1:]) + "\n"
    err = _refused_by_screenshot(tmp_path, capsys, data, "no-store.json")
    assert err.startswith("the symbolic checker cannot prove the plan: instruction ")


def _refused_by_screenshot(tmp_path, capsys, data: dict, name: str) -> str:
    """``screenshot --plan`` of ``data`` written to ``name``: exit 2, one line, no picture; that line."""
    from gui.entry import command

    path = tmp_path / name
    path.write_text(json.dumps(data))
    out = tmp_path / "never.png"
    assert command(["screenshot", "--plan", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists()
    return err.removeprefix(f"regtune: error: {path}: ")
