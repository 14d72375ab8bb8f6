"""Register allocators, registered by name behind one interface.

Invariant: every allocator is a function ``(program, analysis, budget,
execute=True) -> Plan`` in :data:`ALLOCATORS`; the plan it returns assigns every
non-predicate value of its program registers below ``budget`` (pairs
even-aligned) so that no two values live at one point share a register,
and values that did not fit are spilled through spill code in the plan's
program. :func:`allocate` checks the name and the budget before any work.

Examples
--------
>>> from engine.ir import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
>>> allocate("linear-scan", p, budget=8).assignment
{'x': (0,), 'y': (0,)}
>>> allocate("greedy", p)
Traceback (most recent call last):
...
engine.errors.AllocationError: unknown allocator 'greedy' (known: chaitin-briggs, dsatur, linear-scan, naive)
"""

from __future__ import annotations

from engine.errors import AllocationError
from engine.gcpause import paused_gc
from engine.ir import Program
from engine.liveness import analyze
from engine.plan import MAX_REGISTERS, Plan

#: name -> allocator function ``(program, analysis, budget, execute=True) -> Plan``
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


@paused_gc
def allocate(name: str, program: Program, budget: int = MAX_REGISTERS, analysis=None, execute: bool = True) -> Plan:
    """Run the allocator ``name`` on ``program`` under a register ``budget``.

    ``execute=False`` leaves out the interpreter run that counts executed
    spill instructions (sweeps over whole config spaces skip it).
    """
    check_allocator(name)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise AllocationError(f"register budget must be a positive integer, got {budget!r}")
    return ALLOCATORS[name](program, analysis if analysis is not None else analyze(program), budget, execute=execute)


from engine.allocators import chaitin_briggs, dsatur, linear_scan, naive  # noqa: E402,F401  (registration)
