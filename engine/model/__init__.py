"""The model layer: the machine description (arch), the figures of a plan (predict), the ILP model and the
cycle model.

Invariant: a figure here is a model's estimate and says so; measured figures live in kernels/.
"""
