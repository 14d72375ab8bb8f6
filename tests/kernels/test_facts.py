"""One measurement, one analysis; nothing computed twice (issue 21).

The counts come from real wrappers around the engine's real functions,
bound in every module that imported them; the measurements run NVIDIA's
real tools and numba's simulator, in a cache folder of the test's own.
"""

from __future__ import annotations

import collections
import hashlib
import json
import sys
from dataclasses import replace

import pytest

import engine.analysis.liveness
import engine.ir.cfg
import engine.ir.spill
import kernels.run
import kernels.toolchain
from engine.alloc import allocate
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from kernels.facts import PlanFacts
from kernels.measurement import SimulatorCheck
from kernels.pipeline import measure

ARCH = ("sm_80",)
COUNTED = {"analyze": engine.analysis.liveness.analyze, "remove_spill_code": engine.ir.spill.remove_spill_code,
           "loop_trips": engine.ir.cfg.loop_trips}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REGTUNE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def count_calls(monkeypatch, functions: dict) -> collections.Counter:
    """Calls of each function of ``functions`` (name -> the real function) from here on, through a wrapper
    that calls it, bound wherever a loaded module holds it."""
    calls = collections.Counter()

    def wrapper(name, real):
        def counted(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return counted

    for name, real in functions.items():
        wrapped = wrapper(name, real)
        for module in list(sys.modules.values()):
            for attr, value in list(getattr(module, "__dict__", {}).items()):
                if value is real:
                    monkeypatch.setattr(module, attr, wrapped)
    return calls


def spilling_allocation():
    """GEMM 3x3x3 (one 3x3 tile) by Chaitin-Briggs at a budget that makes it spill, as ``regtune compare`` makes
    it: the allocation and its plan."""
    w = Gemm(3, 3, 3)
    program, options = build_gemm(w, (3, 3), "k-outer", 12)
    allocation = allocate("chaitin-briggs", program, 12)
    plan = planned_and_run(allocation, workload=w.as_dict(), options=options)
    assert plan.spills, "the sample must spill, so that the program without spill code is a second program"
    return allocation, plan


@pytest.mark.slow
def test_one_measurement_derives_each_analysis_once_and_none_that_its_caller_has(cache, monkeypatch):
    allocation, plan = spilling_allocation()
    calls = count_calls(monkeypatch, COUNTED)
    m = measure(plan, ARCH)                    # cold: NVVM, ptxas, nvdisasm, the simulator all run
    assert isinstance(m.simulator, SimulatorCheck) and m.simulator.ok, m.simulator
    # the plan's program and the program without spill code, each analysed once; spill code removed once; the
    # loop trips found once (before: 5, 3 and 4 for one measurement)
    assert dict(calls) == {"analyze": 2, "remove_spill_code": 1, "loop_trips": 1}
    calls.clear()
    again = measure(plan, ("sm_90",), facts=PlanFacts.of_allocation(allocation, plan))   # another arch: a new report
    assert "report cache" not in again.timings_ms
    # what the allocator computed is handed in: nothing is derived again, but the trips no allocator finds
    assert dict(calls) == {"loop_trips": 1}
    assert again.planned.maxlive == m.planned.maxlive == allocation.original_analysis.maxlive


@pytest.mark.slow
def test_a_second_measurement_runs_no_tool_and_no_simulator(cache, monkeypatch):
    _, plan = spilling_allocation()
    first = measure(plan, ARCH)
    tools = count_calls(monkeypatch, {"run_worker": kernels.run.run_worker, "ptxas": kernels.toolchain.ptxas,
                                      "nvdisasm": kernels.toolchain.nvdisasm})
    second = measure(plan, ARCH)
    assert not tools, f"a second identical measurement ran {dict(tools)}"
    assert second.cached and list(second.timings_ms) == ["report cache"]
    mine, theirs = first.to_dict(), second.to_dict()
    for report in (mine, theirs):
        del report["timings_ms"], report["cached"], report["plan_ptx"]["timings_ms"], report["plan_ptx"]["cached"]
    assert mine == theirs and second.listings.ptx == first.listings.ptx
    assert second.simulator == first.simulator and second.simulator.ok


@pytest.mark.slow
def test_a_damaged_report_or_simulator_entry_is_a_miss_and_a_code_change_invalidates(cache, monkeypatch):
    _, plan = spilling_allocation()
    first = measure(plan, ARCH)
    entries = [p for kind in ("report", "simulator") for p in (cache / kind).iterdir()]
    assert len(entries) == 2
    for entry in entries:
        envelope = json.loads(entry.read_text())
        entry.write_text(json.dumps({**envelope, "content": envelope["content"].replace("1", "2")}))  # hand-edited
    tools = count_calls(monkeypatch, {"run_worker": kernels.run.run_worker})
    healed = measure(plan, ARCH)
    assert tools["run_worker"] == 1                         # the simulator again (NVVM's PTX is still cached)
    assert "report cache" not in healed.timings_ms
    assert replace(healed.simulator, seconds=0) == replace(first.simulator, seconds=0)   # run again: another time
    for entry in entries:                                   # overwritten with intact entries
        envelope = json.loads(entry.read_text())
        assert envelope["sha256"] == hashlib.sha256(envelope["content"].encode()).hexdigest(), entry
    assert "report cache" in measure(plan, ARCH).timings_ms
    monkeypatch.setattr("kernels.pipeline.code_digest", lambda: "another version of RegTune's code")
    assert "report cache" not in measure(plan, ARCH, skip_simulator="not run (test)").timings_ms
