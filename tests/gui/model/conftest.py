"""Shared plans for the Qt-free model tests (built once per module: the allocators take a moment)."""

import pytest

from gui.model.session import DEFAULT_OPTIONS, allocate_all


@pytest.fixture(scope="package")
def gemm_plans():
    """The four allocators' plans of GEMM 8x8x8 with a 4x4 tile."""
    return allocate_all({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"}, DEFAULT_OPTIONS.with_(tile=(4, 4)))
