"""Loading a plan file as every interface admits it: well formed, valid, and proved its workload's program.

Invariant: :func:`load_admitted` returns a plan only when :func:`engine.plan.load_plan` accepts its file
(every field in range, no conflict, the spill map and spill code agreeing) and
:func:`engine.verify.prove_identity` proves its program, spill code removed, the one its workload builds or
a reordering of it within its dependences; otherwise it raises a one-line :class:`RegtuneError` naming the
file. The ``regtune`` command (check, build, budget-sweep, compare --plan, the window's --plan) and the
window's Open go through it, so they accept the same plans.

Examples
--------
>>> import json, os, tempfile
>>> from engine.allocators import allocate
>>> from engine.plan import write_plan
>>> from engine.workloads.gemm import Gemm, build_gemm
>>> program, options = build_gemm(Gemm(2, 2, 2))
>>> plan = allocate("dsatur", program, 255).plan(workload=Gemm(2, 2, 2).as_dict(), options=options)
>>> path = os.path.join(tempfile.mkdtemp(), "p.json")
>>> _ = write_plan(plan, path)
>>> load_admitted(path)[1].moved
0
"""

from __future__ import annotations

from engine.errors import VerificationError
from engine.limits import CHECK_SECONDS
from engine.plan import Plan, load_plan
from engine.verify import IdentityProof, prove_identity


def load_admitted(path, check_seconds: float = CHECK_SECONDS) -> tuple[Plan, IdentityProof | None]:
    """The plan in ``path`` and the proof that its program is its workload's (None for a program file's)."""
    plan = load_plan(path)
    try:
        proof = prove_identity(plan.program, plan.spills, plan.workload, plan.options, max_seconds=check_seconds)
    except VerificationError as exc:
        raise VerificationError(f"{path}: {exc}") from None
    return plan, proof
