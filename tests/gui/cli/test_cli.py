"""The `regtune` command, run as a user runs it: the installed console script."""

import json
import re
import os
import subprocess
import sys
from importlib.resources import files

import pytest

REGTUNE = os.path.join(os.path.dirname(sys.executable), "regtune")
EXAMPLE = str(files("resources") / "examples" / "gemm_m1n1k2.txt")
LOOP = str(files("resources") / "examples" / "gemm_m1n1k2_loop.txt")


def regtune(*args, cwd=None):
    return subprocess.run([REGTUNE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_analyze_prints_maxlive_and_its_peak():
    r = regtune("analyze", EXAMPLE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "gemm_m1n1k2: 11 instructions in 1 blocks, 8 values (+0 predicates)",
        "MAXLIVE 8 registers at instruction 4: %b_0_0:f32 = ld.global %pb, 0",
        "interference graph: 8 nodes, 19 edges",
        "ILP (model, sm_80 latencies, unlimited registers): 0.027 = 11 instructions / 413 cycles of critical path; "
        "422 cycles/warp (model, list-scheduled issue; 820 in the program's order)",
    ]


def test_analyze_json():
    r = regtune("analyze", LOOP, "--json")
    data = json.loads(r.stdout)
    assert data["maxlive"] == max(data["pressure"]) == 8
    assert data["predicates"] == 1 and data["blocks"] == 3
    model = data["ilp_model"]
    assert model["model"].startswith("engine/model/ilp.py") and model["arch"] == "sm_80"
    assert model["ilp"] == round(model["instructions"] / model["critical_path_cycles"], 4)
    assert model["reference"]["ilp"] == model["ilp"] and model["false_dependences"] == 0


@pytest.mark.parametrize("allocator", ["naive", "linear-scan", "linear-scan-hull", "chaitin-briggs", "dsatur"])
def test_allocate_then_check(tmp_path, allocator):
    out = tmp_path / "plan.json"
    r = regtune("allocate", LOOP, "--allocator", allocator, "--budget", "6", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{allocator}: ") and f"-> {out}" in r.stdout
    assert "with unlimited registers), " in r.stdout and " cycles/warp (model)" in r.stdout
    n = len(json.loads(out.read_text())["program"].splitlines()) - 1 - 3    # less .kernel and 3 .block lines
    assert (f"execution check (sampled): the same stores on 3 inputs (3 stores compared, all {n} instructions executed, "
            "its branch taken both ways)") in r.stdout
    data = json.loads(out.read_text())
    # at 6 registers the allocators read a pointer parameter again where it is used; all but naive spill nothing
    assert data["allocator"] == allocator and data["budget"] == 6 and bool(data["spills"]) == (allocator == "naive")
    assert re.search(r"%p[abc]\.m1:u64 = param [ABC]\n", data["program"]), data["program"]
    r = regtune("check", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{out}: valid {allocator} plan for gemm_m1n1k2:")
    assert f"(3 stores compared, all {n} instructions executed, its branch taken both ways)" in r.stdout


def test_check_of_a_gemm_plan_runs_the_early_exit_and_the_whole_body(tmp_path):
    """Issue 11: GEMM 8x8x8's inputs used to all take the early exit; now they cover every instruction."""
    out = tmp_path / "plan.json"
    r = regtune("allocate", "gemm", "--m", "8", "--n", "8", "--k", "8", "--allocator", "dsatur", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = regtune("check", str(out))
    assert r.returncode == 0, r.stderr
    assert ("execution check (sampled): the same stores on 6 inputs, 3 chosen at the guards' edges (256 stores "
            "compared, all 927 instructions executed, each of 2 branches taken both ways)") in r.stdout


def test_check_says_what_ran_when_an_instruction_never_ran(tmp_path):
    """A block no input reaches: the check names the first instruction that never ran, and says 'not verified'."""
    source = tmp_path / "dead.txt"
    source.write_text(".kernel dead\n.block entry\n  %pa:u64 = param A\n  %x:i32 = ld.global %pa, 0\n"
                      "  st.global %pa, 4, %x\n  exit\n.block never\n  st.global %pa, 8, %x\n  exit\n")
    out = tmp_path / "plan.json"
    r = regtune("allocate", str(source), "--allocator", "dsatur", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = regtune("check", str(out))
    assert r.returncode == 0, r.stderr
    assert ("execution check (sampled): 3 inputs, 4 of 6 instructions executed (the rest never ran: first is "
            "instruction 4 (st.global %pa, 8, %x)), 3 stores compared: it covers part of the program only") in r.stdout
    assert "the same stores on" not in r.stdout and "proved" not in r.stdout.split("execution check")[1]


def test_check_proves_a_plan_first_and_rejects_a_reload_from_the_wrong_slot_that_no_conflict_shows(tmp_path):
    """Issue 11: the symbolic checker is the primary proof; a reload from another value's slot keeps every
    register apart (the static check passes) but reads the wrong value, and ``check`` says where."""
    out = tmp_path / "plan.json"
    r = regtune("allocate", "gemm", "--m", "8", "--n", "8", "--k", "8", "--tile", "4x4", "--allocator", "dsatur",
                "--budget", "24", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert ("allocation proved by the symbolic checker (every path, every input); execution check (sampled): the "
            "same stores on") in r.stdout
    data = json.loads(out.read_text())
    assert data["spills"]["acc_0_0"] == 0 and data["spills"]["acc_0_1"] == 1
    data["program"] = data["program"].replace("%acc_0_0.r1:f32 = ld.local 0", "%acc_0_0.r1:f32 = ld.local 1", 1)
    out.write_text(json.dumps(data))
    r = regtune("check", str(out))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    # issue 19: the spill map and the spill code must agree, so loading refuses it first, naming the value
    assert r.stderr.startswith(f"regtune: error: {out}: instruction ")
    assert "(%acc_0_0.r1:f32 = ld.local 1) uses slot 1, the spill slot of %acc_0_1, but is not %acc_0_1's" in r.stderr
    # and the symbolic checker, on its own, cannot prove it either
    from engine.check.symbolic import check_allocation
    from engine.planfile import plan_from_dict

    plan = plan_from_dict(data, check=False)
    assert any("ld.local 1" in str(e) for e in check_allocation(plan.program, plan.assignment, plan.spills))


def test_check_refuses_a_plan_whose_program_is_not_what_its_workload_builds(tmp_path):
    """Review of issue 11: an accumulator's fma turned into a mul kept every register apart and every read
    right, so both checks passed; the plan's program is now compared with what its workload builds."""
    out = tmp_path / "plan.json"
    r = regtune("allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", "--allocator", "dsatur", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = regtune("check", str(out))
    assert r.returncode == 0
    assert "  identity proof: its program, spill code removed, is the one gemm 4x4x4 builds" in r.stdout
    data = json.loads(out.read_text())
    before = "%acc_0_1:f32 = fma %a_0_1, %b_1_1, %acc_0_1"
    assert before in data["program"]
    data["program"] = data["program"].replace(before, "%acc_0_1:f32 = mul %a_0_1, %b_1_1")
    out.write_text(json.dumps(data))
    r = regtune("check", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"regtune: error: {out}: the plan's program, spill code removed, is not gemm 4x4x4's "
                               "program nor a reordering of it within its dependences: block 'body': instruction ")
    assert "(%acc_0_1:f32 = mul %a_0_1, %b_1_1) is not in gemm 4x4x4's program (there, instruction" \
        in r.stderr


def test_check_rejects_an_invalid_plan_in_one_line(tmp_path):
    out = tmp_path / "plan.json"
    regtune("allocate", EXAMPLE, "--allocator", "dsatur", "--out", str(out))
    data = json.loads(out.read_text())
    data["assignment"]["b_0_0"] = data["assignment"]["a_0_0"]
    out.write_text(json.dumps(data))
    r = regtune("check", str(out))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"regtune: error: {out}: %a_0_0 and %b_0_0 share R")


@pytest.mark.parametrize(
    "args, message",
    [
        (["allocate", EXAMPLE, "--allocator", "greedy", "--out", "x.json"],
         "regtune: error: unknown allocator 'greedy' (known: chaitin-briggs, dsatur, linear-scan, linear-scan-hull, naive, optimal)"),
        (["analyze", "missing.txt"], "regtune: error: missing.txt: no such file"),
        (["check", "missing.json"], "regtune: error: missing.json: no such file"),
        (["allocate", EXAMPLE, "--allocator", "dsatur", "--budget", "two", "--out", "x.json"],
         "regtune: error: regtune allocate: argument --budget: a register budget is an integer in 1..255, got 'two' (see --help)"),
        (["frobnicate"], "regtune: error: regtune: argument COMMAND: invalid choice: 'frobnicate'"),
        (["allocate", EXAMPLE, "--allocator", "dsatur", "--budget", "2", "--out", "x.json"],
         "regtune: error: a budget of 2 registers is too small for gemm_m1n1k2"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(tmp_path, args, message):
    r = regtune(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith(message)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_bad_program_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text(".kernel k\n.block b\n  %x:f32 = add %nope, 1\n")
    r = regtune("analyze", str(bad))
    assert r.returncode == 2
    assert r.stderr == f"regtune: error: {bad} line 3: %nope is used but never defined\n"


@pytest.mark.parametrize("command", [[], ["analyze"], ["allocate"], ["check"]])
def test_help_everywhere(command):
    r = regtune(*command, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: regtune")


def test_headless_commands_never_import_qt():
    code = ("import sys; from gui.cli.main import main; main(['analyze', %r]); "
            "assert not [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))]" % EXAMPLE)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("space, count", [("gemm", "3375"), ("mha", "1512")])
def test_config_counts(space, count):
    assert regtune("configs", space, "--count").stdout.strip() == count


def test_program_prints_ir_that_parses_back():
    from engine.ir.core import print_program
    from engine.ir.parser import parse

    r = regtune("program", "gemm", "--m", "4", "--n", "4", "--k", "4", "--tile", "2x2", "--schedule", "dot")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(".kernel gemm_m4n4k4_t2x2_dot\n")
    assert print_program(parse(r.stdout)) == r.stdout
    r = regtune("program", "mha", "--heads", "32", "--batch", "64", "--head-dim", "64", "--groups", "4",
                "--strategies", "fp16-softmax")
    assert r.returncode == 0 and "cvt.rn.f16x2.f32" in r.stdout


def test_analyze_and_allocate_take_workload_flags(tmp_path):
    r = regtune("analyze", "mha", "--heads", "32", "--batch", "64", "--head-dim", "64", "--groups", "4", "--json")
    assert json.loads(r.stdout)["kernel"] == "mha_d64_g4_bc16"
    out = tmp_path / "p.json"
    r = regtune("allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", "--allocator", "linear-scan", "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["workload"] == {"kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "f32"}
    assert data["options"]["schedule"] == "k-outer" and data["options"]["tile"] == [4, 4]


def test_occupancy_command():
    r = regtune("occupancy", "--arch", "sm_80", "--regs", "130", "--threads", "256")
    assert r.returncode == 0, r.stderr
    assert "1 blocks, 8 of 64 warps = 12.5% occupancy, limited by registers" in r.stdout
    assert "free 2 registers (to 128) to reach 16 warps" in r.stdout
    data = json.loads(regtune("occupancy", "--arch", "sm_90", "--regs", "32", "--threads", "128", "--json").stdout)
    assert data["active_warps"] == 64


@pytest.mark.parametrize("args, message", [
    (["analyze", "gemm", "--m", "4"], "regtune: error: gemm needs --n, --k"),
    (["program", "gemm", "--m", "4", "--n", "4", "--k", "4", "--tile", "3x4"], "regtune: error: tile 3x4 does not divide C (4x4)"),
    (["program", "gemm", "--m", "4", "--n", "4", "--k", "4", "--tile", "big"], "regtune: error: --tile must be TMxTN with TM, TN in 1..16 dividing M and N (e.g. 4x8), or 'fit'; got 'big'"),
    (["program", "mha", "--heads", "32", "--batch", "64", "--head-dim", "64", "--groups", "4", "--strategies", "x"],
     "regtune: error: unknown MHA strategy 'x'"),
    (["occupancy", "--arch", "sm_70", "--regs", "32", "--threads", "128"], "regtune: error: unknown architecture 'sm_70'"),
])
def test_workload_errors_are_one_line(args, message):
    r = regtune(*args)
    assert r.returncode == 2 and r.stderr.startswith(message) and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_claims_report_is_computed_and_written(tmp_path):
    out = tmp_path / "claims.md"
    r = regtune("report", "claims", "--sample", "151", "--ilp-sample", "675", "--out", str(out), "--workers", "2")
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "Over 5 GEMM configs (every 675th of 3,375, a deterministic sample)" in text
    assert "| naive ILP / ILP of the allocator with the most | 0.39x (61% less) |" in text and "A model" in text
    assert r.stdout.startswith(text.rstrip("\n")[:200])
    assert "Over 23 GEMM configs (every 151th)" in text
    assert "| baseline | 128 |" in text and "| head-shared | — |" in text
    assert "12 accumulators per thread is 2 query heads per thread" in text


def test_a_mistyped_flag_names_the_command_once(capsys):
    from gui.cli.main import main as run_main

    assert run_main(["sweep", "gemm", "--fliter", "m == 2"]) == 2
    err = capsys.readouterr().err
    assert err == "regtune: error: regtune sweep: unrecognized arguments: --fliter m == 2 (see --help)\n"
