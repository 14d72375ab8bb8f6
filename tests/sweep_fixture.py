"""Sweep-store rows for the read side's tests (exports, the sweep report, the Sweep view), made by the real
engine: each GEMM config's analysis and every allocator at each budget asked for (engine.sweep.evaluate_program), one row
per allocator in the store's row schema (the store's own columns, /work/notes/sweep_rows.md). Analysis-only
rows: arch, cap and toolchain '-', the ptxas, numba and GPU columns None, as the store has them without
--compile. Not a store: the tests that need the store itself open one (engine.store).
"""

from __future__ import annotations

import json

from engine.alloc import ALLOCATORS
from engine.model.arch import load_arch, occupancy
from engine.sweep import evaluate_program
from engine.workloads.gemm import Gemm, gemm_build

BEST = ("chaitin-briggs", "dsatur", "linear-scan")


def gemm_rows(configs, budgets=(255,)) -> list[dict]:
    """One row per (config, budget, allocator) of GEMM ``configs`` ((m, n, k) tuples), default options."""
    sm80 = load_arch("sm_80")
    out = []
    for (m, n, k), budget in ((c, b) for c in configs for b in budgets):
        built = gemm_build(Gemm(m, n, k))
        r = {"options": built.options, **evaluate_program(built.program, budget, built.analysis)}
        best = min((r["allocators"][a]["spilled"], r["allocators"][a]["registers"]) for a in BEST)[1]
        for name in sorted(ALLOCATORS):
            a = r["allocators"][name]
            out.append({
                "workload": "gemm", "m": m, "n": n, "k": k, "heads": None, "batch": None, "head_dim": None,
                "groups": None, "config": f"gemm {m}x{n}x{k}", "options": json.dumps(r["options"], sort_keys=True),
                "strategies": None, "tile": "x".join(map(str, r["options"]["tile"])),
                "schedule": r["options"]["schedule"], "allocator": name, "budget": budget, "arch": "-",
                "cap": "-", "toolchain": "-", "instructions": r["instructions"], "maxlive": r["maxlive"],
                "naive_demand": r["naive_demand"], "registers": a["registers"], "spilled": a["spilled"],
                "naive_registers": r["allocators"]["naive"]["registers"], "best_registers": best,
                "occupancy_warps": occupancy(sm80, max(a["registers"], 1), 128, 0).active_warps,
                "model_cycles": None, "ptxas_registers": None, "ptxas_spill_stores": None,
                "ptxas_spill_loads": None, "sass_maxlive": None, "measured_ms": None,
                "error": None, "created": "2026-12-02T00:00:00"})
    return out
