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


def check(inputs, output):
    """Largest error against numpy and whether it is within TOLERANCE (scaled by K)."""
    expected = reference(inputs)
    error = float(np.max(np.abs(output["C"] - expected)))
    return error, error <= TOLERANCE * K


def launch_args(inputs, device=None):
    return [inputs[name] if device is None else device.get(name, inputs[name]) for name in PARAMS[:-1]] + [np.int32(0)]


def simulator_runs(request):
    """Runs a simulator check makes: a batch that leaves the last block partly idle with beta != 0, and one
    full block with beta == 0 (C is not read)."""
    per_block, seed = MATRICES_PER_BLOCK, request.get("seed", 0)
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
