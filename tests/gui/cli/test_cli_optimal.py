"""`regtune allocate --allocator optimal`: the proof or bound and gap, every allocator's gap to it, a plan the
checker accepts (run from the repository's own modules, as `python -m gui.entry`)."""

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LOOP = str(files("resources") / "examples" / "gemm_m1n1k2_loop.txt")


def regtune(*args):
    return subprocess.run([sys.executable, "-m", "gui.entry", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_allocate_optimal_prints_its_proof_and_every_gap_and_check_accepts_it(tmp_path):
    out = tmp_path / "opt.json"
    r = regtune("allocate", "gemm", "--m", "4", "--n", "4", "--k", "4", "--allocator", "optimal", "--budget", "16",
                "--time-limit", "20", "--out", str(out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("optimal (gemm 4x4x4") and f"-> {out}" in lines[0]
    assert lines[1].startswith("  optimal within spill-everywhere, executed spill instructions") and "proved" in lines[1]
    rows = {line.split()[0]: line for line in lines if line.startswith("  ") and line.split()[0] in
            ("naive", "linear-scan", "chaitin-briggs", "dsatur", "optimal")}
    assert set(rows) == {"naive", "linear-scan", "chaitin-briggs", "dsatur", "optimal"}
    assert rows["optimal"].rstrip().endswith(" 0") and "+" in rows["naive"]
    assert json.loads(out.read_text())["allocator"] == "optimal"
    r = regtune("check", str(out))
    assert r.returncode == 0, r.stderr
    assert "valid optimal plan" in r.stdout


def test_time_limit_belongs_to_optimal_only(tmp_path):
    r = regtune("allocate", LOOP, "--allocator", "dsatur", "--time-limit", "3", "--out", str(tmp_path / "p.json"))
    assert r.returncode == 2
    assert r.stderr == "regtune: error: --time-limit is the optimal allocator's (its solver's limit), not dsatur's\n"
