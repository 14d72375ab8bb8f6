"""A linear ``_find_singly_assigned_variable`` for numba-cuda's lowering (version-guarded).

Why: numba-cuda (0.30) keeps its own copy of this step of numba's lowering,
which rescans a block's statements once per variable: quadratic in the
statement count of a long straight-line kernel, about 2 s of a 3.3 s
compile for a 1,000-line GEMM kernel here. numba core fixed the same code
(numba pull request 10387, "Precompute variable assignments") by counting
the assignments per block once; this module installs that counting version
on numba-cuda's ``Lower`` class. It computes the same set (tests/kernels
compares both on generated kernels) and is applied only when numba-cuda's
method is the known quadratic one, so a fixed numba-cuda is left alone.

Invariant: :func:`apply` is idempotent and changes nothing but
``numba.cuda.lowering.Lower._find_singly_assigned_variable``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections import defaultdict

#: sha256 of the source of numba-cuda's quadratic method (0.30.x), the only version patched.
KNOWN_QUADRATIC = {"c3b499f7"}
_applied: dict = {}


def _fingerprint(method) -> str:
    return hashlib.sha256(inspect.getsource(method).encode()).hexdigest()[:8]


def linear_find_singly_assigned_variable(self) -> None:
    """numba-cuda's method with the per-block assignment counts computed once."""
    from numba.cuda.core import ir
    from numba.cuda.core.analysis import compute_use_defs, must_use_alloca

    blocks = self.func_ir.blocks
    sav = set()
    if not self.func_ir.func_id.is_generator:
        use_defs = compute_use_defs(blocks)
        alloca_vars = must_use_alloca(blocks)
        var_assign_map = defaultdict(set)
        for blk, vl in use_defs.defmap.items():
            for var in vl:
                var_assign_map[var].add(blk)
        var_use_map = defaultdict(set)
        for blk, vl in use_defs.usemap.items():
            for var in vl:
                var_use_map[var].add(blk)
        counts = {}
        for label, block in self.blocks.items():
            per_var = defaultdict(int)
            for stmt in block.find_insts(ir.assign_types):
                per_var[stmt.target.name] += 1
            counts[label] = per_var
        for var, where in var_assign_map.items():
            if var not in alloca_vars and len(where) == 1 and len(var_use_map[var]) == 0:
                [defblk] = where
                if counts[defblk][var] == 1:
                    sav.add(var)
    self._singly_assigned_vars = sav
    self._blk_local_varmap = {}


def apply() -> str:
    """Install the linear method when numba-cuda has the quadratic one; say what was done."""
    if "status" in _applied:
        return _applied["status"]
    from numba.cuda import lowering

    original = lowering.Lower._find_singly_assigned_variable
    print_ = _fingerprint(original)
    if print_ in KNOWN_QUADRATIC:
        _applied["original"] = original
        lowering.Lower._find_singly_assigned_variable = linear_find_singly_assigned_variable
        status = f"linear singly-assigned-variable step installed (numba-cuda method {print_})"
    else:
        status = f"numba-cuda method {print_} is not the known quadratic one; left as it is"
    _applied["status"] = status
    return status


def original_method():
    """numba-cuda's own method (after :func:`apply`), for tests that compare both."""
    from numba.cuda import lowering

    return _applied.get("original", lowering.Lower._find_singly_assigned_variable)
