"""The compare pipeline on a GPU over a fixed set of GEMM and MHA configs, measured time beside model time.

For each config of :data:`CONFIGS` (14 GEMM, 8 MHA), the best allocator's
plan at budget 255 (fewest spilled values, then fewest registers, then the
first of :data:`engine.claims.BEST`) goes through
:func:`kernels.pipeline.measure`: built by NVVM and ptxas, then launched
on the GPU and timed with CUDA events (:mod:`kernels.worker`: 3 warm-up
launches, then the median of :data:`REPEATS` timed launches), with
torch.bmm or cupy.matmul timed beside GEMM where installed. One JSON file
holds, per config: the measured time, the driver's registers and local
memory per thread, and the model time on ``--arch`` from the plan's issue
cycles and from the SASS's (:mod:`engine.model.timemodel`; a model, never
mixed with the measured figures). The script prints the Spearman rank
correlation between model and measured time over the set, the model's
figure of merit.

``--model-only`` skips the build and the GPU: model times from the plan
alone (what runs without a GPU); measured figures then say why there are none.

Run: ``python -m tests.gpu.run_gpu --out results.json [--arch sm_90] [--subset N] [--model-only]``

Invariant: a measured figure is a CUDA-event time or a string saying why
there is none; a model time is labelled ``model_time_us`` and is never
written where a measured time belongs.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from engine.alloc import allocate
from engine.claims import BEST
from engine.model.arch import ARCHS
from engine.plan import Plan, registers_used
from engine.predict import predicted_plan
from engine.workloads import BuildOptions, build_workload, parse_config_label

#: the fixed set: GEMM shapes from tiny to the space's largest, and MHA configs across heads, batch, head_dim, groups
CONFIGS = (
    "gemm 2x2x2", "gemm 4x4x4", "gemm 4x8x4", "gemm 8x8x2", "gemm 8x8x8", "gemm 8x8x16", "gemm 8x16x8",
    "gemm 12x12x12", "gemm 16x4x16", "gemm 16x8x8", "gemm 16x16x4", "gemm 16x16x8", "gemm 16x16x16", "gemm 3x5x7",
    "mha heads 16 batch 1 head_dim 32 groups 1", "mha heads 16 batch 4 head_dim 64 groups 2",
    "mha heads 32 batch 1 head_dim 64 groups 4", "mha heads 32 batch 64 head_dim 64 groups 4",
    "mha heads 16 batch 4 head_dim 32 groups 8", "mha heads 32 batch 16 head_dim 32 groups 2",
    "mha heads 64 batch 1 head_dim 64 groups 8", "mha heads 64 batch 4 head_dim 32 groups 1",
)
#: timed launches per kernel (after the worker's 3 warm-ups); the median is reported
REPEATS = 20
BUDGET = 255


def best_plan(label: str) -> Plan:
    """The best allocator's plan of the config ``label`` at budget 255 (see the module docstring)."""
    program, workload, options = build_workload(parse_config_label(label), BuildOptions())
    plans = [predicted_plan(allocate(name, program, BUDGET), workload=workload, options=options) for name in BEST]
    return min(plans, key=lambda p: (len(p.spills), registers_used(p.assignment), BEST.index(p.allocator)))


def ranks(values) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank.

    Examples
    --------
    >>> ranks([10.0, 30.0, 20.0, 20.0]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    for v in np.unique(x):
        tied = x == v
        r[tied] = r[tied].mean()
    return r


def spearman(a, b) -> float | None:
    """Spearman's rank correlation of two equally long sequences (Pearson's on their ranks); None when
    fewer than 2 pairs or either side has one value only.

    Examples
    --------
    >>> spearman([1, 2, 3, 4], [10, 20, 40, 30]), spearman([1, 2, 3], [3, 2, 1]), spearman([1, 1], [1, 2])
    (0.8, -1.0, None)
    """
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    return round(float(np.corrcoef(ranks(a), ranks(b))[0, 1]), 6)


def _figure(value) -> object:
    """A typed figure as JSON data: its dict, or the reason there is none."""
    return value.to_dict() if hasattr(value, "to_dict") else str(value)


def model_row(label: str, arch: str) -> dict:
    """A config's plan and its model time from the plan alone (no build, no GPU)."""
    from kernels.report import plan_model_time

    plan = best_plan(label)
    return {"config": label, "allocator": plan.allocator, "plan_registers": registers_used(plan.assignment),
            "model_time": {"plan": _figure(plan_model_time(plan, arch))},
            "measured_ms": "not run (--model-only)", "driver_registers": "not run (--model-only)",
            "driver_local_bytes": "not run (--model-only)"}


def measured_row(label: str, arch: str) -> dict:
    """A config through the compare pipeline: built, timed on the GPU, model times from the plan and the SASS."""
    from kernels.measurement import Unavailable
    from kernels.pipeline import measure
    from kernels.run import run_plan_ptx_on_gpu
    from kernels.toolchain import cuda_device

    plan = best_plan(label)
    m = measure(plan, (arch,), skip_simulator="not run (tests/gpu/run_gpu.py times the GPU instead)")
    gpu = m.gpu
    no = str(gpu) if isinstance(gpu, Unavailable) else None
    ptx = run_plan_ptx_on_gpu(plan, device=cuda_device(), repeats=REPEATS)
    return {"config": label, "allocator": plan.allocator, "plan_registers": registers_used(plan.assignment),
            "model_time": {s: _figure(t) for s, t in m.model_time.get(arch, {}).items()},
            "measured_ms": no or gpu.median_ms, "repeats": no or gpu.repeats, "device": no or gpu.device,
            "check": no or {"ok": gpu.ok, "max_error": gpu.max_error},
            "driver_registers": no or gpu.registers, "driver_local_bytes": no or gpu.local_bytes,
            "reference_ms": no or gpu.reference_ms,
            # the second realisation: the plan's own PTX, assembled by ptxas for the device, loaded and launched
            "plan_ptx": str(ptx) if isinstance(ptx, Unavailable) else {
                "measured_ms": ptx.median_ms, "check": {"ok": ptx.ok, "max_error": ptx.max_error},
                "driver_registers": ptx.registers, "ptxas_registers": ptx.ptxas_registers,
                "driver_local_bytes": ptx.local_bytes, "arch": ptx.arch}}


def correlations(rows: list) -> dict:
    """Spearman's rho of model time (per issue-cycle source) against measured time, over the rows with both."""
    out = {}
    for source in ("plan", "sass"):
        pairs = [(r["model_time"][source]["model_time_us"], r["measured_ms"]) for r in rows
                 if isinstance(r["measured_ms"], float) and isinstance(r["model_time"].get(source), dict)]
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        why = "no measured times" if not pairs else "fewer than 2 distinct values on a side"
        out[source] = {"pairs": len(pairs), "spearman": rho if rho is not None else why}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu.run_gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--arch", default="sm_90", choices=ARCHS, help="the arch built and modelled (the GPU's)")
    parser.add_argument("--subset", type=int, default=0, help="the first N configs only (0: all)")
    parser.add_argument("--model-only", action="store_true", help="model times from the plans alone: no build, "
                        "no GPU")
    args = parser.parse_args(argv)
    configs = CONFIGS[:args.subset] if args.subset else CONFIGS
    rows = []
    for label in configs:
        row = model_row(label, args.arch) if args.model_only else measured_row(label, args.arch)
        rows.append(row)
        model = ", ".join(f"{s} {t['model_time_us']:.3f} us" if isinstance(t, dict) else f"{s}: {t}"
                          for s, t in row["model_time"].items())
        ptx = row.get("plan_ptx")
        ptx = "" if ptx is None else f"; plan PTX {ptx['measured_ms']:.4f} ms, {ptx['driver_registers']} registers " \
            f"(check {'ok' if ptx['check']['ok'] else 'MISMATCH'})" if isinstance(ptx, dict) else f"; plan PTX: {ptx}"
        print(f"{label}: {row['allocator']}, {row['plan_registers']} registers; model time ({args.arch}) {model}; "
              f"measured {row['measured_ms']}" + (" ms" if isinstance(row["measured_ms"], float) else "") + ptx)
    result = {"arch": args.arch, "model_only": args.model_only, "repeats": REPEATS, "configs": rows,
              "rank_correlation": correlations(rows),
              "note": "model_time is engine/model/timemodel.py's model (microseconds); measured_ms is CUDA-event time "
                      "on the device (milliseconds, median of the timed launches after 3 warm-ups)"}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for source, c in result["rank_correlation"].items():
        print(f"Spearman rank correlation, model time ({source} issue cycles) against measured time: "
              f"{c['spearman']} over {c['pairs']} configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
