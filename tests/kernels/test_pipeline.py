"""One pipeline for the CLI, the window and the worker: typed results, one sweep, one architecture list."""

from __future__ import annotations

from importlib.resources import files

import pytest

from engine.arch import ARCHS, DEFAULT_ARCH, DEFAULT_BUILD_ARCHS, load_arch
from kernels.measurement import Measurement, Sweep, Unavailable
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
    assert len(measured) == 11 * len(DEFAULT_BUILD_ARCHS) + 3    # 11 rows per arch: two caps, SASS issue cycles
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
    assert mine == theirs
    assert Measurement.from_dict(here.to_dict()) == here
    assert here.simulator == Unavailable("not run (test)")
    assert here.listings.ptx == there.listings.ptx and here.sass_liveness("sm_80").maxlive == here.sass["sm_80"].maxlive


@pytest.mark.slow
def test_the_window_and_the_cli_sweep_the_same_way():
    plan = gemm_plan(4, 4, 4, "linear-scan", tile=(4, 4))
    here = budget_sweep(plan, "sm_80", 24, 60)
    there = sweep_in_worker(plan, "sm_80", 24, 60)
    assert isinstance(there, Sweep), there
    assert there == here and Sweep.from_dict(here.to_dict()) == here
    assert [r.maxrregcount for r in here.rows] == [24, 32, 40, 48, 56, 60]
    assert all(r.registers <= r.maxrregcount and r.stack_frame_bytes >= 0 for r in here.rows)
