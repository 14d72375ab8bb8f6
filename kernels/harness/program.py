"""The program-file kernel harness: seeded inputs for a kernel read from an IR file, and the spill-code check.

A program file has no numeric reference (no numpy model of what it
computes). What can be checked is that the plan's spill code keeps the
program's meaning: the kernel module of a program plan holds two kernel
functions, the plan's (its spill code kept in local memory) and the same
program without the plan's spill code (``REFERENCE_FUNCTION``, compiler
spills), and :func:`compare_outputs` runs both on the same seeded inputs
and compares every element of every array bit for bit. :mod:`kernels.worker`
makes the same comparison for every plan (GEMM and MHA too) with this
module's :func:`compare_outputs`.

Everything below the marker line is copied verbatim into each program
kernel module, after the constants :func:`constants` writes; the defaults
above the marker stand in for them, so this file imports on its own.

Invariant: the embedded part reads only the kernel module's constants
(``PARAMS``, ``ARRAYS``, ``SIGNATURE``, ``THREADS_PER_BLOCK``, ``BLOCKS``,
``ARRAY_ELEMENTS``, ``SIZE_LO``, ``SIZE_HI``, ``SEEDS``; the module's main
reads ``SPILL_INSTRUCTIONS`` too), numpy and its own
functions; inputs are a pure function of the seed: every array uniform in
[-1, 1), every other parameter an integer in SIZE_LO..SIZE_HI, the range
:data:`engine.check.inputs.GENERIC` gives a program file's size parameters.

Examples
--------
>>> inputs = make_inputs(0)
>>> sorted(inputs), inputs["A"].shape, SIZE_LO <= int(inputs["n"]) <= SIZE_HI
(['A', 'n'], (4096,), True)
>>> after = dict(inputs, A=inputs["A"].copy())
>>> after["A"][3] = 7.0
>>> compare_outputs(inputs, after, after)["differ"], compare_outputs(inputs, after, after)["written"]
(0, 1)
>>> compare_outputs(inputs, after, inputs)["first"]
'A[3]: 7 (plan) vs -0.967 (without spill code)'
"""

from __future__ import annotations

import sys

import numpy as np

from kernels.harness import from_module, register

#: the module-level names :func:`constants` writes (besides the ones every kernel module has)
CONSTANTS = ("BLOCKS", "ARRAY_ELEMENTS", "SIZE_LO", "SIZE_HI", "SEEDS", "SPILL_INSTRUCTIONS")
#: the template that ends a program kernel module (kernels/templates/main_program.py)
MAIN_TEMPLATE = "main_program"
#: blocks a run launches (a subset of the generic input model's grid of 16)
RUN_BLOCKS = 2
#: float32 elements of each array parameter (256 KiB); an index past it raises in the simulator
RUN_ARRAY_ELEMENTS = 1 << 16
#: seeded inputs a simulator check runs
RUN_SEEDS = 3

# stand-ins for a standalone import; a kernel module has the plan's values instead
PARAMS = ("A", "n", "spill_zero")
ARRAYS = ("A",)
SIGNATURE = "void(float32[::1], int32, int32)"
THREADS_PER_BLOCK = 32
BLOCKS, ARRAY_ELEMENTS, SIZE_LO, SIZE_HI, SEEDS, SPILL_INSTRUCTIONS = 1, 4096, 1, 1024, 3, 0


def constants(plan, trips: dict) -> dict:
    """The constants a program kernel module holds: grid, array size, the size parameters' range (the program
    workload's input model), seeds, and how many instructions of spill code the plan has."""
    from engine.check.inputs import Input
    from engine.ir.spill import remove_spill_code
    from engine.workloads import workload_named
    from engine.workloads.program import ProgramFile

    lo, hi = workload_named("program").input_model(ProgramFile(), {}).range_of(Input("size"))
    spill_code = len(plan.program.instructions) - len(remove_spill_code(plan.program, plan.spills).instructions)
    return {"BLOCKS": RUN_BLOCKS, "ARRAY_ELEMENTS": RUN_ARRAY_ELEMENTS, "SIZE_LO": int(lo), "SIZE_HI": int(hi),
            "SEEDS": RUN_SEEDS, "SPILL_INSTRUCTIONS": spill_code}


register(from_module("program", sys.modules[__name__]))


# -- embedded in the kernel module below this line --


#: numba type name in SIGNATURE -> numpy scalar type of a non-array parameter
NUMPY_SCALARS = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint64": np.uint64,
                 "boolean": np.bool_}
#: a program file has no numpy model of what it computes; its check is the spill-code comparison
NUMPY_REFERENCE = False
#: the spill-code comparison is bit for bit
TOLERANCE = 0.0
OUTPUT = None
DEFAULT_BATCH = 1


def grid(batch=None):
    """Blocks and threads per block of a run."""
    return BLOCKS, THREADS_PER_BLOCK


def parameter_types():
    """Each parameter's numba type name, read from SIGNATURE (``float32[::1]`` for an array)."""
    inner = SIGNATURE[SIGNATURE.index("(") + 1:SIGNATURE.rindex(")")]
    return dict(zip(PARAMS, (t.strip() for t in inner.split(", "))))


def make_inputs(seed=0):
    """Every array uniform in [-1, 1), every other parameter an integer in SIZE_LO..SIZE_HI; seeded."""
    rng = np.random.default_rng(seed)
    types = parameter_types()
    inputs = {}
    for name in PARAMS[:-1]:
        if name in ARRAYS:
            inputs[name] = rng.uniform(-1, 1, ARRAY_ELEMENTS).astype(np.float32)
        else:
            inputs[name] = NUMPY_SCALARS[types[name]](rng.integers(SIZE_LO, SIZE_HI + 1))
    return inputs


def launch_args(inputs, device=None):
    return [inputs[name] if device is None else device.get(name, inputs[name]) for name in PARAMS[:-1]] + [np.int32(0)]


def run_kernel(kernel, inputs, cuda, launch=None):
    """Every array after one launch of ``kernel`` on copies of ``inputs`` (the inputs stay as they were)."""
    blocks, threads = launch or grid()
    arrays = {name: cuda.to_device(np.array(inputs[name], copy=True)) for name in ARRAYS}
    kernel[blocks, threads](*launch_args(inputs, arrays))
    cuda.synchronize()
    return {name: arrays[name].copy_to_host() for name in ARRAYS}


def compare_outputs(inputs, plan_out, reference_out):
    """Every element of every array after the plan's kernel against after the kernel without its spill code,
    bit for bit: elements compared, how many differ, how many either kernel wrote (changed from the input),
    the largest difference and the first differing element."""
    elements = differ = written = 0
    error, first = 0.0, None
    for name in sorted(plan_out):
        got, want, before = (np.asarray(a, dtype=np.float32).view(np.uint32)
                             for a in (plan_out[name], reference_out[name], inputs[name]))
        bad = got != want
        elements += got.size
        differ += int(bad.sum())
        written += int(((got != before) | (want != before)).sum())
        if bad.any():
            diff = np.abs(plan_out[name][bad].astype(np.float64) - reference_out[name][bad].astype(np.float64))
            error = max(error, float(np.nan_to_num(diff, nan=np.inf).max()))
            if first is None:
                i = int(np.flatnonzero(bad)[0])
                first = f"{name}[{i}]: {plan_out[name][i]:.3g} (plan) vs {reference_out[name][i]:.3g} " \
                        "(without spill code)"
    return {"elements": elements, "differ": differ, "written": written, "max_error": error, "first": first}


def combine(found):
    """The comparisons of several runs (:func:`compare_outputs`) as one."""
    return {"elements": sum(f["elements"] for f in found), "differ": sum(f["differ"] for f in found),
            "written": sum(f["written"] for f in found), "max_error": max([f["max_error"] for f in found] or [0.0]),
            "first": next((f["first"] for f in found if f["first"]), None)}


def spill_code_text(runs, found, what):
    """One line saying what the spill-code comparison compared (``runs`` runs on ``what``) and what it found."""
    head = f"plan's spill code vs compiler spills (the program without it), {runs} run{'s' * (runs != 1)} on the " \
           f"same {what}"
    if found["differ"]:
        return f"{head}: {found['differ']:,} of {found['elements']:,} array elements differ (first {found['first']})"
    kept = found["elements"] - found["written"]
    return (f"{head}: all {found['elements']:,} array elements equal bit for bit; the kernels changed "
            f"{found['written']:,} of them (what they wrote, less any element written with the value it held), "
            f"the other {kept:,} are the inputs as they were")


def simulator_runs(request):
    """Runs a simulator check makes: SEEDS seeded inputs on a grid of BLOCKS x THREADS_PER_BLOCK."""
    seed = request.get("seed", 0)
    return [{"inputs": make_inputs(seed + k), "grid": grid()} for k in range(SEEDS)]


def gpu_run(request):
    """The run a GPU times: seeded inputs on the same grid."""
    return {"inputs": make_inputs(request.get("seed", 0)), "grid": grid(), "batch": BLOCKS}


def main_run():
    """Inputs and grid of ``python kernel.py``."""
    return make_inputs(0), grid()
