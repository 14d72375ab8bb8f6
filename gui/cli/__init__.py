"""The ``regtune`` command's headless half: analysis, allocation, plan checks, kernels and reports.

Invariant: nothing in this package imports Qt or pyqtgraph, directly or through
another module (an import-linter contract in pyproject.toml); the window
commands are run by functions that gui.entry passes in.
"""
