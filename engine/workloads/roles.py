"""What each value of a workload program is for: the role the views colour it by.

Invariant: every value gets exactly one role from :data:`ROLES`, decided by
its type (predicates, 64-bit addresses, 32-bit indices) and, for data
values, by the stable names the workload writers give (``a_i_k``,
``acc_i_j``, ``q_g_d``, ``s_g_j``, ...); spill reloads (``v.rK``) and later
definitions (``v.dK``) take the role of ``v``. GEMM's values (and those of
MHA's projection phase, a GEMM) are A and B fragments and accumulators;
attention's are named by what they are: Q, K, V, the scores (S = Q.K and
the probabilities P = exp(S - m), in any precision), the softmax state
(the running max and sum and their corrections) and the output O.

Examples
--------
>>> from engine.ir.core import Value
>>> [role_of(Value(n, t)) for n, t in [("a_0_1", "f32"), ("acc_0_0.r1", "f32"), ("ta", "u64"), ("p_0_3", "f32")]]
['A fragment', 'accumulator', 'address', 'scores']
>>> [role_of(Value(n, "f32")) for n in ("q_0_1", "k_2_0", "v_1_3", "s_0_5", "m_0", "l_1.r2", "o_0_3")]
['Q', 'K', 'V', 'scores', 'softmax state', 'softmax state', 'output']
>>> role_of(Value("x_3", "f32")), role_of(Value("wt_1", "f32")), role_of(Value("x_2_13", "f32"))
('A fragment', 'B fragment', 'scores')
"""

from __future__ import annotations

import re

from engine.ir.core import Value

ROLES = ("A fragment", "B fragment", "accumulator", "Q", "K", "V", "scores", "softmax state", "output", "address",
         "index", "scalar", "predicate")
_BY_PREFIX = {
    "A fragment": ("a", "x"),
    "B fragment": ("b", "w", "wt"),
    "accumulator": ("acc", "c"),
    "Q": ("q",),
    "K": ("k",),
    "V": ("v",),
    "scores": ("s", "p", "ds", "sh", "ph", "pf", "sua", "sub"),
    "softmax state": ("m", "l", "mn", "dm", "corr", "inv"),
    "output": ("o",),
}
_PREFIX = {p: role for role, prefixes in _BY_PREFIX.items() for p in prefixes}
#: names whose role depends on their number of indices: MHA's ``x_c`` is the projection's input (an A fragment),
#: ``x_g_j`` a shuffled partial of a score's dot product (the reduction across the threads of a row)
_BY_INDICES = {("x", 2): "scores"}
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
