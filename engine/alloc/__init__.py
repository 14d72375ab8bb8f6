"""Register allocators, registered by name behind one interface.

Invariant: every allocator is a function ``(program, analysis, budget) ->
Allocation`` in :data:`ALLOCATORS`; the allocation it returns assigns every
non-predicate value of its program registers below ``budget`` (pairs
even-aligned) so that no two values live at one point share a register,
and values that did not fit are spilled through spill code in the plan's
program. It measures nothing: figures are engine.predict's stage.
:func:`allocate` checks the name and the budget before any work.

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
>>> allocate("linear-scan", p, budget=8).assignment
{'x': (0,), 'y': (0,)}
>>> allocate("greedy", p)
Traceback (most recent call last):
...
engine.base.errors.AllocationError: unknown allocator 'greedy' (known: chaitin-briggs, dsatur, linear-scan, linear-scan-hull, naive)
"""

from __future__ import annotations

from engine.alloc.common import Allocation
from engine.analysis.liveness import Analysis, analyze
from engine.base.errors import AllocationError
from engine.base.limits import MAX_REGISTERS
from engine.ir.core import Program

__all__ = ["ALLOCATORS", "Allocation", "allocate", "check_allocator", "register"]

#: name -> allocator function ``(program, analysis, budget) -> Allocation``
ALLOCATORS: dict = {}


def register(name: str):
    """Decorator adding an allocator to :data:`ALLOCATORS` under ``name``."""

    def add(func):
        ALLOCATORS[name] = func
        return func

    return add


def check_allocator(name: str) -> None:
    """Raise :class:`AllocationError` unless ``name`` is a registered allocator."""
    if name not in ALLOCATORS:
        raise AllocationError(f"unknown allocator {name!r} (known: {', '.join(sorted(ALLOCATORS))})")


def allocate(name: str, program: Program, budget: int = MAX_REGISTERS, analysis: Analysis | None = None) -> Allocation:
    """Run the allocator ``name`` on ``program`` under a register ``budget``.

    ``analysis``, the caller's analysis of ``program``, saves computing it again.
    """
    check_allocator(name)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise AllocationError(f"register budget must be a positive integer, got {budget!r}")
    return ALLOCATORS[name](program, analysis if analysis is not None else analyze(program), budget)


from engine.alloc import chaitin_briggs, dsatur, linear_scan, linear_scan_hull, naive  # noqa: E402,F401  (registration)
