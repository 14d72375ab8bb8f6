"""Planned against actual: the figures of a plan beside what ptxas and the SASS show, and why they differ.

Invariant: every number here was computed from the plan or printed by a
tool; a figure that could not be had is a string saying why ("no CUDA
device"), never a number. Each gap between planned and actual comes with
a sentence naming its cause, from the figures themselves.

Examples
--------
>>> allocated_registers(37), allocated_registers(40), allocated_registers(0)
(40, 40, 0)
"""

from __future__ import annotations

from engine.arch import load_arch, next_register_step, occupancy
from engine.liveness import analyze
from engine.plan import Plan, registers_used
from engine.predict import predict
from kernels.build import Build

#: registers per thread are allocated per warp in units of 256, i.e. 8 per thread
REGISTER_GRANULE = 8


def allocated_registers(registers: int) -> int:
    """Registers a thread holds after the per-warp allocation unit (256 per warp = 8 per thread)."""
    return -(-registers // REGISTER_GRANULE) * REGISTER_GRANULE


def threads_per_block(plan: Plan) -> int:
    return int((plan.options or {}).get("threads_per_block", 128))


def planned(plan: Plan, arch: str = "sm_80") -> dict:
    """The plan's own figures (no tool involved)."""
    figures = predict(plan)
    regs = figures["registers"]
    threads = threads_per_block(plan)
    a = load_arch(arch)
    occ = occupancy(a, regs, threads)
    step = next_register_step(a, regs, threads)
    return {"registers": regs, "maxlive": figures["maxlive"], "spills": figures["spilled_values"],
            "spill_stores": figures["spill_stores"], "spill_loads": figures["spill_loads"],
            "bank_conflicts": figures["bank_conflicts"], "threads_per_block": threads,
            "occupancy": {"arch": arch, "active_warps": occ.active_warps, "occupancy": round(occ.occupancy, 4),
                          "limited_by": list(occ.limited_by)},
            "next_step": (f"free {regs - step[0]} registers (to {step[0]}) to reach {step[1]} warps"
                          if step else "registers do not limit occupancy")}


def _pairs(plan: Plan) -> int:
    return sum(1 for v in plan.program.values.values() if v.width == 2)


def explain(plan: Plan, build: Build, arch: str) -> list[str]:
    """One sentence per gap between the plan and what ptxas/SASS show for ``arch``."""
    b = build.archs[arch]
    plan_regs = registers_used(plan.assignment)
    maxlive = analyze(plan.program).maxlive
    used, sass_max = b.report.registers, b.sass.maxlive
    top = b.sass.highest_register()
    out = []
    if plan_regs != maxlive:
        out.append(f"planned registers {plan_regs} vs MAXLIVE {maxlive}: "
                   + (f"{_pairs(plan)} 64-bit values need even-aligned pairs, and "
                      if _pairs(plan) else "")
                   + f"the {plan.allocator} assignment leaves {plan_regs - maxlive} register(s) of slack")
    if used != top + 1 and top >= 0:
        out.append(f"ptxas counts {used} registers while no SASS instruction names one above R{top}: the "
                   f"{used - top - 1} on top are ptxas's own reservation, with no live range in the SASS")
    if used != plan_regs:
        direction = "more" if used > plan_regs else "fewer"
        out.append(f"ptxas used {abs(used - plan_regs)} {direction} registers than planned ({used} vs {plan_regs}): "
                   f"it re-allocates and reschedules; SASS MAXLIVE is {sass_max} against the plan's {maxlive}"
                   + (f", under the cap {plan.budget} it was given" if used <= plan.budget else ""))
    if allocated_registers(used) != used:
        out.append(f"the GPU allocates {allocated_registers(used)} registers per thread for {used} "
                   f"(256 per warp = {REGISTER_GRANULE} per thread)")
    out.append(spill_sentence(plan, build, arch))
    return out


def spill_sentence(plan: Plan, build: Build, arch: str) -> str:
    """Whose spills the kernel has: the plan's (kept as st.local) and/or ptxas's own."""
    r = build.archs[arch].report
    src = build.source
    ptxas_own = r.spill_store_bytes or r.spill_load_bytes
    if src.spills == "plan" and src.spill_stores:
        kept = (f"the plan's spills are in the kernel: {build.ptx_count('st.local')} st.local / "
                f"{build.ptx_count('ld.local')} ld.local in the PTX for {src.spill_stores} planned stores / "
                f"{src.spill_loads} planned reloads (NVVM merges reloads of a slot with no store between)")
    else:
        kept = "the plan has no spills" if not plan.spills else "the plan's spills were left to the compiler"
    own = (f"; ptxas spilled on its own: {r.spill_store_bytes} B stored, {r.spill_load_bytes} B loaded"
           if ptxas_own else "; ptxas added no spills of its own")
    return kept + own


def measured(plan: Plan, build: Build) -> dict:
    """ptxas and SASS figures per arch."""
    out_ptxas, out_sass = {}, {}
    threads = threads_per_block(plan)
    for arch, b in build.archs.items():
        r = b.report
        occ = occupancy(load_arch(arch), r.registers, threads)
        out_ptxas[arch] = {"registers": r.registers, "allocated_registers": allocated_registers(r.registers),
                           "spill_store_bytes": r.spill_store_bytes, "spill_load_bytes": r.spill_load_bytes,
                           "stack_frame_bytes": r.stack_frame_bytes, "shared_bytes": r.shared_bytes,
                           "constant_bytes": r.constant_bytes, "max_registers": r.max_registers,
                           "compile_ms": r.compile_ms, "warnings": list(r.warnings),
                           "occupancy": {"active_warps": occ.active_warps, "occupancy": round(occ.occupancy, 4),
                                         "limited_by": list(occ.limited_by)}}
        out_sass[arch] = {"maxlive": b.sass.maxlive, "peak_offset": b.sass.offsets[b.sass.peak],
                          "instructions": len(b.sass.texts), "highest_register": b.sass.highest_register(),
                          "bank_conflicts": b.sass.bank_conflicts(load_arch(arch).bank_model),
                          "mix": b.sass.mix(), "explanation": explain(plan, build, arch)}
    return {"ptxas": out_ptxas, "sass": out_sass}


def build_report(plan: Plan, build: Build, simulator: dict | None = None, gpu: dict | None = None) -> dict:
    """The report ``regtune build`` writes: planned, ptxas, sass, simulator, gpu, toolchain, timings."""
    first = next(iter(build.archs))
    return {"plan": {"allocator": plan.allocator, "budget": plan.budget, "program": plan.program.name,
                     "workload": plan.workload},
            "planned": planned(plan, first), **measured(plan, build),
            "kernel": {"spills": build.source.spills, "planned_spill_stores": build.source.spill_stores,
                       "planned_spill_loads": build.source.spill_loads,
                       "ptx_st_local": build.ptx_count("st.local"), "ptx_ld_local": build.ptx_count("ld.local"),
                       "ptx_global_loads": build.ptx_count("ld.global"), "entry": build.entry},
            "simulator": simulator if simulator is not None else {"error": "not run"},
            "gpu": gpu if gpu is not None else {"error": "no CUDA device"},
            "toolchain": build.toolchain, "timings_ms": {k: round(v, 1) for k, v in build.timings_ms.items()},
            "cached": build.cached}


def _check(result: dict) -> str:
    """A simulator or GPU check as text: 'ok (max err ...)', 'MISMATCH (...)' or why there is none."""
    if "error" in result:
        return result["error"]
    return f"{'ok' if result.get('ok') else 'MISMATCH'} (max err {result['max_error']:.2g})"


def _gpu_ms(gpu: dict):
    return gpu["error"] if "error" in gpu else round(float(gpu["median_ms"]), 4)


def _driver(gpu: dict) -> str:
    return gpu["error"] if "error" in gpu else f"{gpu['registers']} / {gpu['local_bytes']}"


def compare_rows(archs) -> list[tuple[str, str, object]]:
    """The rows of a planned-vs-actual comparison: (label, 'min' | 'max' | '' (better), get(report)).

    ``report`` is :func:`build_report`'s dict, or just ``{"planned": planned(...)}`` for a plan not
    built yet: then the measured getters raise KeyError and the caller shows why there is no figure.
    """
    rows = [("planned registers", "min", lambda r: r["planned"]["registers"]),
            ("planned MAXLIVE", "min", lambda r: r["planned"]["maxlive"]),
            ("planned spills (values)", "min", lambda r: r["planned"]["spills"]),
            ("bank conflicts (plan model)", "min", lambda r: r["planned"]["bank_conflicts"]),
            ("occupancy, planned (warps/SM)", "max", lambda r: r["planned"]["occupancy"]["active_warps"]),
            ("next occupancy step", "", lambda r: r["planned"]["next_step"])]
    for a in archs:
        rows += [(f"{a} ptxas registers", "min", lambda r, a=a: r["ptxas"][a]["registers"]),
                 (f"{a} allocated (8/thread)", "min", lambda r, a=a: r["ptxas"][a]["allocated_registers"]),
                 (f"{a} spill bytes (st+ld)", "min",
                  lambda r, a=a: r["ptxas"][a]["spill_store_bytes"] + r["ptxas"][a]["spill_load_bytes"]),
                 (f"{a} stack frame bytes", "min", lambda r, a=a: r["ptxas"][a]["stack_frame_bytes"]),
                 (f"{a} occupancy (warps/SM)", "max", lambda r, a=a: r["ptxas"][a]["occupancy"]["active_warps"]),
                 (f"{a} SASS MAXLIVE", "min", lambda r, a=a: r["sass"][a]["maxlive"])]
    rows += [("simulator check", "", lambda r: _check(r["simulator"])),
             ("GPU time (ms)", "min", lambda r: _gpu_ms(r["gpu"])),
             ("GPU registers / local B (driver)", "", lambda r: _driver(r["gpu"]))]
    return rows
