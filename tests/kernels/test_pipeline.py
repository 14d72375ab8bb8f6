"""One pipeline for the CLI, the window and the worker: typed results, one sweep, one architecture list."""

from __future__ import annotations

from importlib.resources import files

import pytest

from engine.model.arch import ARCHS, DEFAULT_ARCH, DEFAULT_BUILD_ARCHS, load_arch
from kernels.measurement import Measurement, ModelTimeFigures, Sweep, Unavailable
from kernels.pipeline import budget_sweep, measure, sweep_caps
from kernels.report import NOT_BUILT, Column, compare_rows, planned
from kernels.run import build_in_worker, sweep_in_worker
from tests.kernels.conftest import gemm_plan


def test_the_architectures_are_the_resource_files_oldest_first():
    names = sorted(p.name.removesuffix(".toml") for p in (files("resources") / "arch").iterdir()
                   if p.name.endswith(".toml"))
    assert sorted(ARCHS) == names
    ccs = [load_arch(a).compute_capability for a in ARCHS]
    assert ccs == sorted(ccs)
    assert DEFAULT_ARCH == ARCHS[0] and DEFAULT_BUILD_ARCHS == (ARCHS[0], ARCHS[-1])


def test_a_sweep_ends_at_the_cap_asked_for():
    assert sweep_caps(24, 255)[-2:] == [248, 255]
    assert sweep_caps(32, 96) == list(range(32, 97, 8))
    assert sweep_caps(40, 40) == [40]


def test_a_plan_not_built_shows_not_built_in_every_measured_row():
    plan = gemm_plan(2, 2, 2)
    column = Column(planned(plan, DEFAULT_ARCH))
    values = {label: get(column) for label, _, get in compare_rows(DEFAULT_BUILD_ARCHS)}
    assert values["planned registers"] == column.planned.registers > 0
    measured = [label for label in values if label.startswith(DEFAULT_BUILD_ARCHS) or "GPU" in label
                or label == "simulator check"]
    # 17 rows per arch: two caps, SASS issue cycles, model time from the plan's and the SASS's issue cycles, and
    # the plan PTX's registers at both caps, spill bytes and SASS MAXLIVE
    assert len(measured) == 17 * len(DEFAULT_BUILD_ARCHS) + 3
    assert {values[label] for label in measured} == {NOT_BUILT}


@pytest.mark.slow
def test_the_window_and_the_cli_measure_the_same_figures():
    plan = gemm_plan(3, 3, 3, "dsatur", tile=(3, 3))
    here = measure(plan, ("sm_80",), skip_simulator="not run (test)")
    there = build_in_worker(plan, ("sm_80",), skip_simulator="not run (test)")
    assert isinstance(there, Measurement), there
    mine, theirs = here.to_dict(), there.to_dict()
    for report in (mine, theirs):
        del report["timings_ms"], report["cached"], report["ptxas"]["sm_80"]["compile_ms"]
        del report["ptxas_compiler"]["sm_80"]["compile_ms"]
        own = report["plan_ptx"]         # the plan PTX's ptxas runs: the first measure ran them, the worker read them
        del own["timings_ms"], own["cached"], own["ptxas"]["sm_80"]["compile_ms"]
        del own["ptxas_compiler"]["sm_80"]["compile_ms"]
    assert mine == theirs
    assert Measurement.from_dict(here.to_dict()) == here
    assert here.simulator == Unavailable("not run (test)")
    assert here.listings.ptx == there.listings.ptx and here.sass_liveness("sm_80").maxlive == here.sass["sm_80"].maxlive


@pytest.mark.slow
def test_a_build_carries_model_time_from_the_plan_and_from_the_sass():
    """The same kernel as above (cached): model time on sm_80 from the plan's issue cycles and registers, and
    from the SASS's issue cycles and ptxas's registers at the plan cap, shown in the compare rows, never in
    the GPU row."""
    plan = gemm_plan(3, 3, 3, "dsatur", tile=(3, 3))
    m = measure(plan, ("sm_80",), skip_simulator="not run (test)")
    by_plan, by_sass = m.model_time["sm_80"]["plan"], m.model_time["sm_80"]["sass"]
    assert isinstance(by_plan, ModelTimeFigures) and isinstance(by_sass, ModelTimeFigures), (by_plan, by_sass)
    assert (by_plan.source, by_sass.source) == ("plan", "sass")
    assert by_plan.registers == planned(plan, "sm_80").registers and by_sass.registers == m.ptxas["sm_80"].registers
    assert by_sass.issue_cycles == m.sass["sm_80"].schedule.issue_cycles and by_sass.bytes_moved > 0
    values = {label: get(Column(planned(plan, "sm_80"), m)) for label, _, get in compare_rows(("sm_80",))}
    assert values["sm_80 model time (us), plan issue cycles"] == round(by_plan.model_time_us, 3) > 0
    assert values["sm_80 model time (us), SASS issue cycles"] == round(by_sass.model_time_us, 3) > 0
    gpu = m.gpu.reason if isinstance(m.gpu, Unavailable) else round(float(m.gpu.median_ms), 4)
    assert values["GPU time (ms)"] == gpu       # measured time, or why there is none: never the model's
    assert Measurement.from_dict(m.to_dict()).model_time == m.model_time


@pytest.mark.slow
def test_the_window_and_the_cli_sweep_the_same_way():
    plan = gemm_plan(4, 4, 4, "linear-scan", tile=(4, 4))
    here = budget_sweep(plan, "sm_80", 24, 60)
    there = sweep_in_worker(plan, "sm_80", 24, 60)
    assert isinstance(there, Sweep), there
    assert there == here and Sweep.from_dict(here.to_dict()) == here
    assert [r.maxrregcount for r in here.rows] == [24, 32, 40, 48, 56, 60]
    assert all(r.registers <= r.maxrregcount and r.stack_frame_bytes >= 0 for r in here.rows)
