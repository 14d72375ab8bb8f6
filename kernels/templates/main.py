"""The end of every GEMM and MHA kernel module: ``kernel()`` and the ``python kernel.py`` entry point.

The generated module binds the names this text reads (its constants, the
workload harness and the kernel function, ``KERNEL_FUNCTION`` here, which
codegen replaces by the function's name). The stand-ins above the marker
make this file a module of its own, for linting and for tests of
``kernel()`` in numba's simulator.

Invariant: the text after the marker has no braces other than the ones
Python reads, and ``KERNEL_FUNCTION`` only where the kernel function goes.
"""

import sys

from numba import config, cuda


def KERNEL_FUNCTION(*args):  # noqa: N802 - the placeholder codegen replaces by the kernel's name
    """Stand-in for the generated kernel function."""


#: stand-ins for the generated module's constants and harness (never embedded)
SIGNATURE, MAX_REGISTERS, WORKLOAD, ARRAYS, OUTPUT, TOLERANCE = "void()", 255, {}, (), "", 0.0
main_run = launch_args = check = None

# -- template --


def kernel(max_registers=None):
    """The CUDA kernel, compiled for the current device with the register cap ``max_registers`` (None: no
    -maxrregcount, ptxas's own choice; the budget MAX_REGISTERS is never a cap)."""
    if config.ENABLE_CUDASIM:  # the simulator takes neither a signature nor a register cap
        return cuda.jit(KERNEL_FUNCTION)
    return cuda.jit(SIGNATURE, max_registers=max_registers)(KERNEL_FUNCTION)


if __name__ == "__main__":
    if not config.ENABLE_CUDASIM and not cuda.is_available():   # one line, not numba's CudaSupportError traceback
        sys.exit(f"{sys.argv[0]}: no CUDA GPU here; to run the kernel in numba's CUDA simulator instead, set "
                 f"NUMBA_ENABLE_CUDASIM=1 (NUMBA_ENABLE_CUDASIM=1 python {sys.argv[0]})")
    inputs, (blocks, threads) = main_run()
    arrays = {name: cuda.to_device(inputs[name]) for name in ARRAYS}
    kernel()[blocks, threads](*launch_args(inputs, arrays))
    cuda.synchronize()
    output = {OUTPUT: arrays[OUTPUT].copy_to_host()}
    error, ok = check(inputs, output)
    print(f"{WORKLOAD}: max abs error {error:.3g} ({'within' if ok else 'OUTSIDE'} tolerance {TOLERANCE})")
    sys.exit(0 if ok else 1)
