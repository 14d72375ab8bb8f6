"""Data only: example programs, the plan schema (found with importlib.resources).

Invariant: nothing here is code that runs; files are read with
``importlib.resources.files("resources")``.
"""
