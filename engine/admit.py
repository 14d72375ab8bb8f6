"""Admitting a plan file as every interface does: well formed, its allocation proved, proved its workload's
program, and its execution check passed.

Invariant: :func:`admit` returns an :class:`Admission` only when :func:`engine.planfile.load_plan` accepts the
file (every field in range, no conflict, the spill map and spill code agreeing), the symbolic checker
(:func:`engine.check.symbolic.check_allocation`) proves the allocation, :func:`engine.identity.prove_identity`
proves its program, spill code removed, the one its workload builds or a reordering of it within its
dependences, and :func:`engine.check.verify.verify_execution` finds the same stores on its inputs; otherwise it
raises a one-line :class:`RegtuneError` naming the file. The ``regtune`` command (check, build,
budget-sweep, compare --plan, the window's --plan) and the window's Open go through it, so they accept the
same plans (the command also asks that a kernel module can be written: that is the kernels layer's).

Examples
--------
>>> import os, tempfile
>>> from engine.alloc import allocate
>>> from engine.planfile import write_plan
>>> from engine.workloads.gemm import Gemm, build_gemm
>>> program, options = build_gemm(Gemm(2, 2, 2))
>>> plan = allocate("dsatur", program, 255).plan(workload=Gemm(2, 2, 2).as_dict(), options=options)
>>> path = os.path.join(tempfile.mkdtemp(), "p.json")
>>> _ = write_plan(plan, path)
>>> a = admit(path)
>>> a.identity.moved, a.check.verified
(0, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.base.errors import VerificationError
from engine.base.limits import CHECK_SECONDS
from engine.check.symbolic import check_allocation
from engine.check.verify import ExecutionCheck, ReferenceRuns, verify_execution
from engine.identity import IdentityProof, prove_identity
from engine.ir.spill import remove_spill_code
from engine.plan import Plan
from engine.planfile import load_plan
from engine.workloads import input_model


@dataclass(frozen=True)
class Admission:
    """A plan file's plan and what admitted it: the identity proof (None for a program file's plan, which
    has no workload) and what the execution check ran (the allocation proof has no figures)."""

    plan: Plan
    identity: IdentityProof | None
    check: ExecutionCheck

    def claims(self, allocation: str, execution: str) -> list[tuple[str, str]]:
        """(claim, what it says and covers), one a line, in the order they were established, given the
        interface's words for the allocation proof and for what the execution check ran."""
        identity = self.identity.text if self.identity else \
            "none: a program from an IR file has no workload to prove it against"
        return [("allocation proof", allocation), ("identity proof", identity),
                ("execution check (sampled)", execution)]


def prove_allocation(plan: Plan, where: str) -> None:
    """Raise a one-line VerificationError naming the first read the symbolic checker cannot prove."""
    errors = check_allocation(plan.program, plan.assignment, plan.spills)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise VerificationError(f"{where}: the symbolic checker cannot prove the plan: {errors[0]}{more}")


def admit(path, check_seconds: float = CHECK_SECONDS) -> Admission:
    """The plan in ``path``, admitted (see the module invariant); the execution check within ``check_seconds``."""
    plan = load_plan(path)
    prove_allocation(plan, str(path))
    runs, original = ReferenceRuns(), remove_spill_code(plan.program, plan.spills)   # shared by both checks
    try:
        identity = prove_identity(plan.program, plan.spills, plan.workload, plan.options, max_seconds=check_seconds,
                                  runs=runs, original=original)
    except VerificationError as exc:
        raise VerificationError(f"{path}: {exc}") from None
    check = verify_execution(plan.program, plan.assignment, plan.spills, max_seconds=check_seconds,
                             model=input_model(plan.workload, plan.options), runs=runs, original=original)
    return Admission(plan, identity, check)
