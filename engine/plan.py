"""The plan: a program, its register assignment and spill slots (the type only; its file format is
:mod:`engine.planfile`).

Invariant: a :class:`Plan` is immutable. A plan read from a file has passed :func:`engine.planfile.load_plan`'s
checks; one built by an allocator or an edit is checked by its maker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from engine.ir.core import Program


@dataclass(frozen=True)
class Plan:
    """A register plan for one program.

    Attributes
    ----------
    program : the program, spill code included
    assignment : value name -> register indices (every non-predicate value)
    spills : spilled value name -> local-memory slot
    budget : registers per thread the plan may use (maxrregcount)
    allocator : the allocator's name, or "hand" for edited plans
    workload, options : where the program came from (JSON-ready)
    predicted, measured : figures (JSON-ready)
    """

    program: Program
    assignment: dict
    spills: dict
    budget: int
    allocator: str
    workload: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    predicted: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)

    def with_(self, **changes) -> "Plan":
        """A copy with some fields changed."""
        return replace(self, **changes)


def registers_used(assignment: dict) -> int:
    """Highest register index in use plus one (0 for an empty assignment)."""
    return max((r for regs in assignment.values() for r in regs), default=-1) + 1
