"""Plan -> Numba CUDA source -> NVVM/ptxas/nvdisasm -> measurements.

Invariant: this package never imports Qt. (Filled by the kernels issue.)
"""
