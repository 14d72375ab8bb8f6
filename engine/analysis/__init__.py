"""The analysis layer: liveness and pressure, the analysis after spill code, interference, dependences
between instructions, and the size bounds checked before any work.

Invariant: an analysis reads a program and returns a new record; it changes nothing.
"""
