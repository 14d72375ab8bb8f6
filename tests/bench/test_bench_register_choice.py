"""Runs the register-choice experiment on the tiny sample (real ptxas and nvdisasm), so CI prints it.

Asserted: the tiny sample's two register-reusing plans are compared, their re-picked assignments are valid at the
plan's own count (static_conflicts finds nothing), and taking the register freed longest ago lets the model overlap
the loads the lowest-free choice puts in one line (fewer model cycles for each), which is what the experiment shows.
"""

import pytest

from engine.check.verify import static_conflicts
from kernels.toolchain import ToolchainError, find_tool
from tests.bench.bench_model_vs_sass import sample
from tests.bench.bench_register_choice import least_recently_freed, main


@pytest.mark.slow
def test_register_choice_experiment_runs_on_the_tiny_sample(capsys):
    try:
        find_tool("ptxas"), find_tool("nvdisasm")
    except ToolchainError as e:
        pytest.skip(f"no NVIDIA toolchain: {e}")
    s = main(["--tiny", "--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert s["compared"] == s["of"] == 2
    assert all(r["oldest"] < r["lowest"] for r in s["rows"])
    assert "sum(range(10**7))" in out


def test_the_re_picked_assignment_is_valid_at_the_plan_s_own_count():
    for label, plan, _original in sample(tiny=True):
        if label.endswith(" naive"):
            continue
        count = 1 + max(r for rs in plan.assignment.values() for r in rs)
        again = least_recently_freed(plan.program, count)
        assert again is not None and not static_conflicts(plan.program, again, {}, count)
        assert again != plan.assignment
