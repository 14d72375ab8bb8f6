"""The engine's base layer: errors, checked fields, limits, files, jobs and processes.

Invariant: nothing here knows the IR; every other layer of the engine may import it.
"""
