"""The GEMM kernel harness: inputs, grid, numpy reference and check of a generated batched-GEMM kernel.

Everything below the marker line is copied verbatim into each generated
GEMM kernel module, after the constants :func:`constants` writes from the
plan; the defaults above the marker stand in for those constants, so this
file imports and runs on its own (tests/kernels/test_harness.py).

Invariant: the embedded part reads only the kernel module's constants
(``M``, ``N``, ``K``, ``MATRICES_PER_BLOCK``, ``THREADS_PER_BLOCK``,
``TOLERANCE``, ``PARAMS``), numpy and its own functions, and the check
compares every element of C against float64 numpy.

Examples
--------
>>> inputs = make_inputs(3)
>>> check(inputs, {"C": reference(inputs).astype(np.float32)})[1]
True
>>> from types import SimpleNamespace
>>> plan = SimpleNamespace(workload={"kind": "gemm", "m": 8, "n": 4, "k": 2}, options={"matrices_per_block": 16})
>>> constants_of = constants(plan, {})
>>> constants_of["M"], constants_of["MATRICES_PER_BLOCK"]
(8, 16)
"""

from __future__ import annotations

import sys

import numpy as np

from kernels.harness import from_module, register

#: the module-level names :func:`constants` writes (besides the ones every kernel module has)
CONSTANTS = ("M", "N", "K", "MATRICES_PER_BLOCK", "TOLERANCE")

# stand-ins for a standalone import; a kernel module has the plan's values instead
M, N, K = 2, 3, 4
MATRICES_PER_BLOCK = 4
THREADS_PER_BLOCK = 24
TOLERANCE = 1e-5
PARAMS = ("A", "B", "C", "alpha", "beta", "batch", "spill_zero")
WORKLOAD = {"kind": "gemm", "m": M, "n": N, "k": K}


def constants(plan, trips: dict) -> dict:
    """The constants a GEMM kernel module holds: sizes, matrices per block, tolerance (per unit of K)."""
    workload, options = plan.workload, plan.options or {}
    return {"M": int(workload["m"]), "N": int(workload["n"]), "K": int(workload["k"]),
            "MATRICES_PER_BLOCK": int(options.get("matrices_per_block", 1)), "TOLERANCE": 1e-5}


def coverage(plan, trips: dict) -> list[dict]:
    """The simulator check's runs, chosen for coverage rather than the GPU's grid (see the kernel's guards:
    ``mat < batch`` and ``beta == 0``): which blocks and threads run, on which batch and beta, and why.

    Run 1, beta 0.5, a batch of one matrix more than a block holds (P+1), so
    the last block is partial: block 0 runs the threads of its first and
    last matrix, block 1 those of matrix P (the batch's last: its highest
    addresses) and of the matrices after it, past the batch (the guard's
    other way). Run 2, beta 0 (C is not read), one full block: its first and
    last matrix. Every thread computes its own tile, so the threads not run
    would compute the same code on other addresses.
    """
    options = plan.options or {}
    per_block = int(options.get("matrices_per_block", 1))
    threads = int(options.get("threads_per_block", 128))
    tiles = max(1, threads // per_block)

    def of(*matrices):
        return sorted({t for j in matrices if 0 <= j < per_block for t in range(j * tiles, (j + 1) * tiles)})

    batch = per_block + 1
    edge = of(0, 1, per_block - 1) if per_block > 1 else of(0)
    return [{"params": {"batch": batch, "beta": 0.5}, "grid": [2, threads],
             "blocks": [[[0, 0, 0], of(0, per_block - 1)], [[1, 0, 0], edge]],
             "matrices": sorted({0, per_block - 1, per_block}),
             "what": f"batch {batch} ({per_block} matrices a block, so block 1 holds 1"
                     f"{' and is partial' if per_block > 1 else ': no block can be partial'}), beta 0.5: "
                     f"block 0 threads {_ranges(of(0, per_block - 1))} (its first and last matrix), block 1 threads "
                     f"{_ranges(edge)} (matrix {per_block}, the batch's last, and the threads past the batch)"},
            {"params": {"batch": per_block, "beta": 0.0}, "grid": [1, threads],
             "blocks": [[[0, 0, 0], of(0, per_block - 1)]], "matrices": sorted({0, per_block - 1}),
             "what": f"batch {per_block}, beta 0 (C not read): block 0 threads {_ranges(of(0, per_block - 1))}"}]


def _ranges(values) -> str:
    """Sorted integers as ranges: ``0-1, 126-127``."""
    out, start = [], None
    for k, v in enumerate(values):
        if start is None:
            start = v
        if k + 1 == len(values) or values[k + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


register(from_module("gemm", sys.modules[__name__]))


# -- embedded in the kernel module below this line --


def grid(batch):
    """Blocks and threads per block for ``batch`` matrices."""
    return (batch + MATRICES_PER_BLOCK - 1) // MATRICES_PER_BLOCK, THREADS_PER_BLOCK


def make_inputs(batch, seed=0, beta=0.5):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, batch * M * K).astype(np.float32)
    b = rng.uniform(-1, 1, batch * K * N).astype(np.float32)
    c = rng.uniform(-1, 1, batch * M * N).astype(np.float32)
    return {"A": a, "B": b, "C": c, "alpha": np.float32(1.5), "beta": np.float32(beta), "batch": np.int32(batch)}


def reference(inputs):
    """alpha * A @ B + beta * C in float64, per matrix of the batch."""
    batch = int(inputs["batch"])
    a = inputs["A"].astype(np.float64).reshape(batch, M, K)
    b = inputs["B"].astype(np.float64).reshape(batch, K, N)
    c = inputs["C"].astype(np.float64).reshape(batch, M, N)
    return (float(inputs["alpha"]) * (a @ b) + float(inputs["beta"]) * c).reshape(-1)


def check(inputs, output, matrices=None):
    """Largest error against numpy and whether it is within TOLERANCE (scaled by K), over every matrix of the
    batch or only ``matrices`` (the ones a run's threads computed)."""
    expected = reference(inputs).reshape(-1, M * N)
    got = output["C"].reshape(-1, M * N)
    if matrices is not None:
        expected, got = expected[list(matrices)], got[list(matrices)]
    error = float(np.max(np.abs(got - expected)))
    return error, error <= TOLERANCE * K


def launch_args(inputs, device=None):
    return [inputs[name] if device is None else device.get(name, inputs[name]) for name in PARAMS[:-1]] + [np.int32(0)]


def simulator_runs(request):
    """Runs a simulator check makes: those the request names (``runs``, chosen for coverage by the parent:
    batch, beta, the blocks and threads that run, the matrices they compute), else a batch that leaves the
    last block partly idle with beta != 0, and one full block with beta == 0 (C is not read)."""
    per_block, seed = MATRICES_PER_BLOCK, request.get("seed", 0)
    if request.get("runs"):
        return [{"inputs": make_inputs(r["params"]["batch"], seed + k, beta=r["params"]["beta"]),
                 "grid": grid(r["params"]["batch"]), "points": r["blocks"], "select": {"matrices": r["matrices"]}}
                for k, r in enumerate(request["runs"])]
    batch = request.get("batch") or max(2, 2 * per_block - 1)
    return [{"inputs": make_inputs(batch, seed, beta=0.5), "grid": grid(batch)},
            {"inputs": make_inputs(per_block, seed + 1, beta=0.0), "grid": grid(per_block)}]


def gpu_run(request):
    """The run a GPU times: a large batch (every matrix checked)."""
    batch = request.get("batch") or 65536
    return {"inputs": make_inputs(batch, request.get("seed", 0)), "grid": grid(batch), "batch": batch}


def main_run():
    """Inputs and grid of ``python kernel.py``."""
    return make_inputs(DEFAULT_BATCH), grid(DEFAULT_BATCH)


def reference_shapes(batch):
    """Shapes of A and B for a library's batched matmul timed beside the kernel."""
    return (batch, M, K), (batch, K, N)


OUTPUT = "C"
DEFAULT_BATCH = 1024
