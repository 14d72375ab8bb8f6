"""The IR layer: the per-thread program's types and printer (core), its parser and rules, the bits of
immediates, control-flow structure and loop trips (cfg), and spill code (its form, insertion and removal).

Invariant: the IR knows nothing of analyses, checks, allocators or workloads.
"""
