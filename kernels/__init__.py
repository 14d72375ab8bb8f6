"""Plan -> Numba CUDA source -> NVVM/ptxas/nvdisasm -> measurements.

Invariant: this package never imports Qt; it may import engine and numba.
"""
