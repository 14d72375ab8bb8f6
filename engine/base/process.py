"""Process-wide settings, applied once where a process starts: the ``regtune`` command, a sweep worker, a benchmark.

RegTune's stages allocate hundreds of thousands of small, acyclic objects
(instructions, tuples, numpy arrays) that reference counting frees. At
Python's default threshold (700 allocations) the cyclic collector runs
thousands of times per pipeline run, each time walking every object the
process holds. Collecting less often costs nothing here: no stage builds
cycles that grow (IR objects carry nothing derived from them).

Invariant: library code never calls this module; only a process's entry
point does, once, before any work.

Examples
--------
>>> import gc
>>> before = gc.get_threshold()
>>> configure_process(); gc.get_threshold()
(100000, 50, 50)
>>> gc.set_threshold(*before)
"""

from __future__ import annotations

import gc

#: the cyclic collector's thresholds for a RegTune process (generation 0 counts allocations)
GC_THRESHOLD = (100_000, 50, 50)


def configure_process() -> None:
    """Apply the process-wide settings (the garbage collector's thresholds)."""
    gc.set_threshold(*GC_THRESHOLD)
