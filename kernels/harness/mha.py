"""The MHA kernel harness: inputs, grid, numpy reference and check of a generated attention kernel.

Everything below the marker line is copied verbatim into each generated
MHA kernel module, after the constants :func:`constants` writes from the
plan; the defaults above the marker stand in for those constants, so this
file imports and runs on its own (tests/kernels/test_harness.py).

Invariant: the embedded part reads only the kernel module's constants
(``HEADS``, ``GROUPS``, ``HEAD_DIM``, ``SEQ_LEN``, ``TPR``, ``BC``,
``TRIPS``, ``TOLERANCE``, ``THREADS_PER_BLOCK``, ``PARAMS``,
``WORKLOAD``), numpy, math and its own functions; a check compares every
output row of the blocks it names, for every head they serve, against
float64 numpy over the keys the kernel's loops cover (``TRIPS * BC``).

Examples
--------
>>> inputs = make_inputs(1, heads=GROUPS)
>>> rows = np.arange(ROWS_PER_BLOCK)
>>> reference_rows(inputs, 0, 1, rows, 8).shape
(32, 8)
"""

from __future__ import annotations

import math
import sys

import numpy as np

from kernels.harness import from_module, register

#: the module-level names :func:`constants` writes (besides the ones every kernel module has)
CONSTANTS = ("HEADS", "GROUPS", "HEAD_DIM", "SEQ_LEN", "TPR", "BC", "TRIPS", "TOLERANCE")

# stand-ins for a standalone import; a kernel module has the plan's values instead
HEADS, GROUPS, HEAD_DIM, SEQ_LEN = 4, 2, 8, 64
TPR, BC, TRIPS = 4, 4, 2
TOLERANCE = 1e-4
THREADS_PER_BLOCK = 128
PARAMS = ("Q", "K", "V", "O", "spill_zero")
WORKLOAD = {"kind": "mha", "heads": HEADS, "batch": 1, "head_dim": HEAD_DIM, "groups": GROUPS}


def constants(plan, trips: dict) -> dict:
    """The constants an MHA kernel module holds; ``trips`` are the loops' trip counts the kernel runs.

    The tolerance is looser when scores and probabilities pass through f16 (the fp16-softmax strategy).
    """
    workload, options = plan.workload, plan.options or {}
    packed = any(v.type == "f16x2" for v in plan.program.values.values())
    return {"HEADS": int(workload["heads"]), "GROUPS": int(workload["groups"]),
            "HEAD_DIM": int(workload["head_dim"]), "SEQ_LEN": int(workload.get("seq_len", 2048)),
            "TPR": int(options.get("tpr", 1)), "BC": int(options.get("bc", 16)),
            "TRIPS": int(min(list(trips.values()) or [0])), "TOLERANCE": 2e-3 if packed else 1e-4}


def simulator_scope(kept: int, full: int) -> str:
    """What a simulator run covers when its K/V loops are cut to ``kept`` trips of ``full``; its presence
    asks :mod:`kernels.run` to cut them (the simulator would take hours over 2048 keys)."""
    return f"{kept} K/V tiles per loop (the kernel runs {full}): the back edge taken and not taken"


#: the batch a simulator check's inputs hold (the program's addresses do not depend on the batch size)
COVERAGE_BATCH = 2


def coverage(plan, trips: dict) -> list[dict]:
    """The simulator check's run, chosen for coverage rather than the GPU's grid: the first query row of the
    first block and the last row of the last block, over a batch of :data:`COVERAGE_BATCH`.

    The kernel's only branch is each K/V loop's back edge, taken on every
    trip but the last (``trips``, at least 2, are the trips the simulated
    kernel runs). A row is computed by its ``tpr`` lanes together (warp
    shuffles among them) and by no other thread, so a row's lanes run
    together; block (0, 0, 0) row 0 holds the lowest addresses, the last
    row of the last query tile, K/V head and batch entry the highest (the
    batch edge). The grid has no partial block: the rows fill the tiles.
    """
    workload, options = plan.workload, plan.options or {}
    heads, groups = int(workload["heads"]), int(workload["groups"])
    tpr, threads = int(options.get("tpr", 1)), int(options.get("threads_per_block", 128))
    rows = threads // tpr
    tiles, kv, batch = int(workload.get("seq_len", 2048)) // rows, heads // groups, COVERAGE_BATCH
    last = [tiles - 1, kv - 1, batch - 1]
    return [{"params": {}, "batch": batch, "grid": [[tiles, kv, batch], threads],
             "blocks": [[[0, 0, 0], list(range(tpr))], [last, list(range(threads - tpr, threads))]],
             "rows": [[0, 0, 0, [0]], [*last, [rows - 1]]],
             "what": f"batch {batch} of {workload.get('batch', 1)} (the addresses do not depend on the batch size), "
                     f"grid {tiles} x {kv} x {batch} blocks of {threads} threads: block (0, 0, 0) threads 0-{tpr - 1} "
                     f"(query row 0 of its tile), block ({', '.join(map(str, last))}) threads "
                     f"{threads - tpr}-{threads - 1} (the last row of the last tile, K/V head and batch entry: the "
                     f"highest addresses), each row's {tpr} lanes together, for the {groups} heads of its K/V "
                     f"group"}]


register(from_module("mha", sys.modules[__name__]))


# -- embedded in the kernel module below this line --


ROWS_PER_BLOCK = THREADS_PER_BLOCK // TPR


def grid(batch, query_tiles=None, kv_heads=None):
    """Blocks (query tiles, K/V heads, batch) and threads per block; fewer tiles or heads for a partial run."""
    return (query_tiles or SEQ_LEN // ROWS_PER_BLOCK, kv_heads or HEADS // GROUPS, batch), THREADS_PER_BLOCK


def make_inputs(batch, seed=0, heads=HEADS):
    """Q, K, V (uniform in [-1, 1]) and O (NaN until written); ``heads`` < HEADS allocates only the
    first heads, enough for blocks of batch 0 (the index arithmetic assumes HEADS per batch entry)."""
    if heads < HEADS and batch > 1:
        raise ValueError("a partial head allocation only holds batch 1")
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, batch * heads * SEQ_LEN * HEAD_DIM).astype(np.float32)
    k = rng.uniform(-1, 1, batch * (heads // GROUPS) * SEQ_LEN * HEAD_DIM).astype(np.float32)
    v = rng.uniform(-1, 1, batch * (heads // GROUPS) * SEQ_LEN * HEAD_DIM).astype(np.float32)
    o = np.full(batch * heads * SEQ_LEN * HEAD_DIM, np.nan, dtype=np.float32)
    return {"Q": q, "K": k, "V": v, "O": o, "batch": batch, "heads": heads}


def reference_rows(inputs, b, head, rows, keys):
    """softmax(q k^T / sqrt(head_dim)) v for query ``rows`` of one (batch, head) over the first ``keys`` keys."""
    batch, heads = inputs["batch"], inputs["heads"]
    q = inputs["Q"].reshape(batch, heads, SEQ_LEN, HEAD_DIM)[b, head, rows].astype(np.float64)
    kvh = head // GROUPS
    k = inputs["K"].reshape(batch, heads // GROUPS, SEQ_LEN, HEAD_DIM)[b, kvh, :keys].astype(np.float64)
    v = inputs["V"].reshape(batch, heads // GROUPS, SEQ_LEN, HEAD_DIM)[b, kvh, :keys].astype(np.float64)
    s = q @ k.T / math.sqrt(HEAD_DIM)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def check(inputs, output, blocks=((0, 0, 0),), keys=None):
    """Largest error over the query rows of ``blocks`` (query tile, K/V head, batch, and optionally the rows of
    the tile that ran) and every head they serve."""
    keys = keys or TRIPS * BC
    o = output["O"].reshape(inputs["batch"], inputs["heads"], SEQ_LEN, HEAD_DIM)
    errors = [0.0]
    for tile, kvh, b, *ran in blocks:
        within = ran[0] if ran else range(ROWS_PER_BLOCK)
        rows = np.array([tile * ROWS_PER_BLOCK + r for r in within])
        for g in range(GROUPS):
            head = kvh * GROUPS + g
            got = o[b, head, rows].astype(np.float64)
            errors.append(float(np.max(np.abs(got - reference_rows(inputs, b, head, rows, keys)))))
    error = float(np.max(errors))   # NaN (a row left unwritten) stays NaN, unlike Python's max
    return error, error <= TOLERANCE


def launch_args(inputs, device=None):
    return [inputs[name] if device is None else device.get(name, inputs[name]) for name in PARAMS[:-1]] + [np.int32(0)]


def simulator_runs(request):
    """Runs a simulator check makes: those the request names (``runs``, chosen for coverage by the parent:
    the batch, the blocks and threads that run, the rows they compute), else ``query_tiles`` query tiles
    (default 1) of every K/V head of a batch, over the first GROUPS heads only in simulator mode."""
    if request.get("runs"):
        return [{"inputs": make_inputs(r["batch"], request.get("seed", 0) + k), "grid": grid(r["batch"]),
                 "points": r["blocks"], "select": {"blocks": [tuple(x) for x in r["rows"]]}}
                for k, r in enumerate(request["runs"])]
    heads = GROUPS if request.get("mode") == "simulator" else HEADS
    batch = request.get("batch") or 1
    inputs = make_inputs(batch, request.get("seed", 0), heads=heads)
    tiles = request.get("query_tiles") or 1
    return [{"inputs": inputs, "grid": grid(batch, tiles, heads // GROUPS),
             "blocks": [(t, h, b) for t in range(tiles) for h in range(heads // GROUPS) for b in range(batch)]}]


def gpu_run(request):
    """The run a GPU times: the whole grid of the config's batch; the first and last blocks checked."""
    batch = request.get("batch") or WORKLOAD.get("batch", 1)
    return {"inputs": make_inputs(batch, request.get("seed", 0)), "grid": grid(batch), "batch": batch,
            "blocks": [(0, 0, 0), (SEQ_LEN // ROWS_PER_BLOCK - 1, HEADS // GROUPS - 1, batch - 1)]}


def main_run():
    """Inputs and grid of ``python kernel.py``: one block, the heads of one group."""
    return make_inputs(1, heads=GROUPS), grid(1, 1, 1)


OUTPUT = "O"
DEFAULT_BATCH = 1
