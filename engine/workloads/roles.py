"""What each value of a workload program is for: the role the views colour it by.

Invariant: every value gets exactly one role from :data:`ROLES`, decided by
its type (predicates, 64-bit addresses, 32-bit indices) and, for data
values, by the stable names the workload writers give (``a_i_k``,
``acc_i_j``, ``q_g_d``, ``s_g_j``, ...); spill reloads (``v.rK``) and later
definitions (``v.dK``) take the role of ``v``.

Examples
--------
>>> from engine.ir.core import Value
>>> [role_of(Value(n, t)) for n, t in [("a_0_1", "f32"), ("acc_0_0.r1", "f32"), ("ta", "u64"), ("p_0_3", "f32")]]
['A fragment', 'accumulator', 'address', 'softmax temporary']
>>> role_of(Value("x_3", "f32")), role_of(Value("x_2_13", "f32"))    # MHA: a projection input, a shuffled partial
('A fragment', 'softmax temporary')
"""

from __future__ import annotations

import re

from engine.ir.core import Value

ROLES = ("A fragment", "B fragment", "accumulator", "softmax temporary", "address", "index", "scalar", "predicate")
_BY_PREFIX = {
    "A fragment": ("a", "q", "x"),
    "B fragment": ("b", "k", "v", "w"),
    "accumulator": ("acc", "o", "c"),
    "softmax temporary": ("s", "p", "m", "l", "mn", "ds", "dm", "corr", "sh", "ph", "pf", "sua", "sub", "inv"),
}
_PREFIX = {p: role for role, prefixes in _BY_PREFIX.items() for p in prefixes}
#: names whose role depends on their number of indices: MHA's ``x_c`` is the projection's input (an A fragment),
#: ``x_g_j`` the row sum's shuffled partial in the softmax reduction
_BY_INDICES = {("x", 2): "softmax temporary"}
_SUFFIX = re.compile(r"\.[rd]\d+$")


def base_name(name: str) -> str:
    """The value a spill reload or a later definition stands for (``acc_0_0.r2`` -> ``acc_0_0``)."""
    return _SUFFIX.sub("", name)


def role_of(value: Value) -> str:
    """The role of ``value`` (see the module docstring)."""
    if value.type == "pred":
        return "predicate"
    if value.type == "u64":
        return "address"
    if value.type == "i32":
        return "index"
    head = base_name(value.name).split(".")[0]
    prefix = head.split("_")[0] if "_" in head else head
    return _BY_INDICES.get((prefix, head.count("_"))) or _PREFIX.get(prefix, "scalar")
