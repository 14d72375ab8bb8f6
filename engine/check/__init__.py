"""The check layer: the input model, both interpreters, static conflicts, the identity proof, the execution
check and the symbolic checker.

Invariant: a check says what it covered: "proved" (every path, every input) or "sampled" (the inputs it ran).
"""
