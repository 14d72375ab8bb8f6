"""Helpers every generated kernel module carries: a warp shuffle for numba's CUDA simulator.

Invariant: importing this module (or running the embedded text) changes
nothing unless numba's simulator is on (``NUMBA_ENABLE_CUDASIM=1``); then
``cuda.shfl_xor_sync`` exchanges values between the threads of a block.
"""

from numba import config

# -- template --

if config.ENABLE_CUDASIM:
    # numba's simulator has no warp shuffles: this stand-in exchanges through a per-block table
    # with a barrier on each side (every thread of a block reaches every shuffle in these kernels).
    import threading

    from numba.cuda.simulator import kernelapi

    _EXCHANGE = {}

    def _simulated_shfl_xor_sync(self, mask, value, lane_mask):
        thread = threading.current_thread()
        table = _EXCHANGE.setdefault((thread.blockIdx.x, thread.blockIdx.y, thread.blockIdx.z), {})
        me = thread.threadIdx.x
        table[me] = value
        thread.syncthreads()
        other = table[me ^ lane_mask]
        thread.syncthreads()
        return other

    kernelapi.FakeCUDAModule.shfl_xor_sync = _simulated_shfl_xor_sync
