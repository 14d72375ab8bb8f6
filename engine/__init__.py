"""RegTune's pure core: IR, liveness, interference, allocators, plans.

Invariant: nothing in this package imports Qt or numba; it needs only numpy
and networkx and runs on any machine.
"""
