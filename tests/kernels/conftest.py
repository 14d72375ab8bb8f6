"""Plans the kernel tests build with NVIDIA's real tools (the build cache is set up in tests/conftest.py)."""

from __future__ import annotations

from engine.alloc import allocate
from engine.predict import planned_and_run
from engine.workloads.gemm import Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha


def gemm_plan(m, n, k, allocator="linear-scan", budget=255, tile=None, schedule="k-outer"):
    w = Gemm(m, n, k)
    program, options = build_gemm(w, tile, schedule, budget)
    return planned_and_run(allocate(allocator, program, budget), workload=w.as_dict(), options=options)


def mha_plan(heads=32, batch=64, head_dim=64, groups=4, allocator="linear-scan", budget=255, strategies=()):
    w = Mha(heads, batch, head_dim, groups)
    program, options = build_mha(w, strategies)
    return planned_and_run(allocate(allocator, program, budget), workload=w.as_dict(), options=options)
