"""Helpers every generated kernel module carries: the load-order primitives, and a warp shuffle for numba's
CUDA simulator.

``order_loads()`` is a compiler barrier: an empty inline-asm statement with
side effects and a memory clobber. LLVM (NVVM) may not move a memory access
across it, so the global loads before it stay before it and those after it
stay after; it emits no PTX instruction (only the ``// begin inline asm``
comments), so ptxas, which never sees it, schedules as it likes.
``load_volatile(array, i)`` is ``array[i]`` as ``ld.volatile.global.f32``
in an inline-asm statement with side effects, which NVVM keeps in program
order (what ptxas does with it is measured, not promised:
tests/bench/bench_load_order.py). Which of them a kernel uses is the plan's
load order (kernels.codegen, ``LOAD_ORDERS``).

Invariant: importing this module (or running the embedded text) defines
``order_loads`` and ``load_volatile`` and changes nothing else unless numba's
simulator is on (``NUMBA_ENABLE_CUDASIM=1``); then both are plain Python (no
compiler to order) and ``cuda.shfl_xor_sync`` exchanges values between the
threads of a block.
"""

from numba import config

# -- template --

if config.ENABLE_CUDASIM:
    def order_loads():
        """No compiler to order in the simulator."""

    def load_volatile(array, index):
        return array[index]

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
else:
    from llvmlite import ir as _llvm
    from numba import types as _types
    from numba.cuda.extending import intrinsic as _intrinsic

    @_intrinsic
    def order_loads(typingctx):
        """A compiler barrier: no memory access moves across it in NVVM; no PTX instruction."""
        def codegen(context, builder, signature, args):
            barrier = _llvm.InlineAsm(_llvm.FunctionType(_llvm.VoidType(), []), "", "~{memory}", side_effect=True)
            builder.call(barrier, ())
            return context.get_dummy_value()
        return _types.void(), codegen

    @_intrinsic
    def load_volatile(typingctx, array, index):
        """``array[index]`` of a contiguous 1-D float32 array as ``ld.volatile.global.f32``."""
        if not (isinstance(array, _types.Array) and array.dtype == _types.float32 and array.ndim == 1
                and array.layout == "C" and isinstance(index, _types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            pointer = builder.gep(data, [args[1]])
            load = _llvm.InlineAsm(_llvm.FunctionType(_llvm.FloatType(), [pointer.type]),
                                   "ld.volatile.global.f32 $0, [$1];", "=f,l,~{memory}", side_effect=True)
            return builder.call(load, [pointer])
        return _types.float32(array, index), codegen
