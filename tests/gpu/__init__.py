"""GPU checks: the compare pipeline timed on a CUDA device beside model time (tests/gpu/run_gpu.py)."""
