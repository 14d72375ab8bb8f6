"""The end of every program-file kernel module: ``kernel()``, ``reference_kernel()`` and ``python kernel.py``.

A program file has no numpy reference, so ``python kernel.py`` runs the
plan's kernel and the program without the plan's spill code
(``REFERENCE_FUNCTION``, which codegen replaces by that function's name) on
the same seeded inputs, and compares every array bit for bit
(kernels/harness/program.py's ``compare_outputs``). The stand-ins above the
marker make this file a module of its own, for linting and tests.

Invariant: the text after the marker has no braces other than the ones
Python reads, ``KERNEL_FUNCTION`` only where the plan's kernel function goes
(twice) and ``REFERENCE_FUNCTION`` only where the other one goes.
"""

import sys

from numba import config, cuda


def KERNEL_FUNCTION(*args):  # noqa: N802 - the placeholder codegen replaces by the kernel's name
    """Stand-in for the generated kernel function."""


def REFERENCE_FUNCTION(*args):  # noqa: N802 - the placeholder codegen replaces by the reference's name
    """Stand-in for the generated kernel function without the plan's spill code."""


#: stand-ins for the generated module's constants and harness (never embedded)
SIGNATURE, WORKLOAD, KERNEL, SEEDS, SPILL_INSTRUCTIONS = "void()", {}, "k", 3, 0
make_inputs = run_kernel = compare_outputs = combine = spill_code_text = None

# -- template --


def kernel(max_registers=None):
    """The CUDA kernel, compiled for the current device with the register cap ``max_registers`` (None: no
    -maxrregcount, ptxas's own choice; the budget MAX_REGISTERS is never a cap)."""
    if config.ENABLE_CUDASIM:  # the simulator takes neither a signature nor a register cap
        return cuda.jit(KERNEL_FUNCTION)
    return cuda.jit(SIGNATURE, max_registers=max_registers)(KERNEL_FUNCTION)


def reference_kernel():
    """The same program without the plan's spill code, compiled with no cap (compiler spills)."""
    if config.ENABLE_CUDASIM:
        return cuda.jit(REFERENCE_FUNCTION)
    return cuda.jit(SIGNATURE)(REFERENCE_FUNCTION)


def check(inputs, output):
    """Largest difference between ``output`` (every array after the plan's kernel) and the program without the
    plan's spill code on the same inputs, and whether every element is equal bit for bit."""
    found = compare_outputs(inputs, output, run_kernel(reference_kernel(), inputs, cuda))
    return found["max_error"], found["differ"] == 0


if __name__ == "__main__":
    if not config.ENABLE_CUDASIM and not cuda.is_available():   # one line, not numba's CudaSupportError traceback
        sys.exit(f"{sys.argv[0]}: no CUDA GPU here; to run the kernel in numba's CUDA simulator instead, set "
                 f"NUMBA_ENABLE_CUDASIM=1 (NUMBA_ENABLE_CUDASIM=1 python {sys.argv[0]})")
    where = "numba's simulator" if config.ENABLE_CUDASIM else "the GPU"
    inputs_text = f"seeded inputs (seeds 0..{SEEDS - 1})"
    if not SPILL_INSTRUCTIONS:
        for seed in range(SEEDS):
            run_kernel(kernel(), make_inputs(seed), cuda)
        print(f"{KERNEL} ({where}): ran on {SEEDS} {inputs_text}; the plan has no spill code and a program file "
              "no numpy reference, so nothing was compared")
        sys.exit(0)
    plan_kernel, plain_kernel = kernel(), reference_kernel()
    found = []
    for seed in range(SEEDS):
        inputs = make_inputs(seed)
        found.append(compare_outputs(inputs, run_kernel(plan_kernel, inputs, cuda),
                                     run_kernel(plain_kernel, inputs, cuda)))
    total = combine(found)
    print(f"{KERNEL} ({where}): {spill_code_text(SEEDS, total, inputs_text)}")
    sys.exit(0 if total["differ"] == 0 else 1)
