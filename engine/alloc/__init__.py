"""Register allocators, registered by name behind one interface.

Invariant: every allocator is a function ``(program, analysis, budget) ->
Allocation`` in :data:`ALLOCATORS` (the heuristics, fast enough for every
loop over "all allocators": sweeps, the window's plans, the tests'
properties) or in :data:`EXPENSIVE` (``optimal``: a solver run of up to
its time limit per program, so only where it is asked for by name); the allocation it returns assigns every
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
engine.base.errors.AllocationError: unknown allocator 'greedy' (known: chaitin-briggs, dsatur, linear-scan, linear-scan-hull, naive, optimal)
>>> sorted(ALLOCATORS), sorted(EXPENSIVE)
(['chaitin-briggs', 'dsatur', 'linear-scan', 'linear-scan-hull', 'naive'], ['optimal'])
"""

from __future__ import annotations

from engine.alloc.common import Allocation
from engine.analysis.liveness import Analysis, analyze
from engine.base.errors import AllocationError
from engine.base.limits import MAX_REGISTERS
from engine.ir.core import Program

__all__ = ["ALLOCATORS", "EXPENSIVE", "Allocation", "all_allocators", "allocate", "check_allocator", "register"]

#: name -> allocator function ``(program, analysis, budget) -> Allocation``: the fast ones, which loops over
#: "every allocator" run
ALLOCATORS: dict = {}
#: name -> allocator function ``(program, analysis, budget, **options)``: the expensive ones (a solver run
#: per program), kept out of those loops and run only by name
EXPENSIVE: dict = {}


def register(name: str, expensive: bool = False):
    """Decorator adding an allocator under ``name`` to :data:`ALLOCATORS`, or to :data:`EXPENSIVE`."""

    def add(func):
        (EXPENSIVE if expensive else ALLOCATORS)[name] = func
        return func

    return add


def all_allocators() -> list[str]:
    """Every allocator's name, the fast ones first (each group sorted)."""
    return sorted(ALLOCATORS) + sorted(EXPENSIVE)


def check_allocator(name: str) -> None:
    """Raise :class:`AllocationError` unless ``name`` is a registered allocator (fast or expensive)."""
    if name not in ALLOCATORS and name not in EXPENSIVE:
        raise AllocationError(f"unknown allocator {name!r} (known: {', '.join(sorted(all_allocators()))})")


def allocate(name: str, program: Program, budget: int = MAX_REGISTERS, analysis: Analysis | None = None,
             spill_everywhere: bool = False, **options) -> Allocation:
    """Run the allocator ``name`` on ``program`` under a register ``budget``.

    ``analysis``, the caller's analysis of ``program``, saves computing it again; ``options`` go to an
    expensive allocator (``optimal``: ``time_limit``, ``solver``, ``workers``), and a fast one takes none.
    A fast allocator splits a spilled value's range around runs of nearby reads and rematerialises the
    values cheaper to compute again (:func:`engine.alloc.common.run_with_spilling`); ``spill_everywhere``
    turns both off, every spilled value reloaded before each read and stored after each definition: the
    model ``optimal`` solves, so that the two compare like for like.
    """
    check_allocator(name)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise AllocationError(f"register budget must be a positive integer, got {budget!r}")
    if options and name not in EXPENSIVE:
        raise AllocationError(f"allocator {name!r} takes no options, got {', '.join(sorted(options))}")
    analysis = analysis if analysis is not None else analyze(program)
    if name in EXPENSIVE:
        return EXPENSIVE[name](program, analysis, budget, **options)
    return ALLOCATORS[name](program, analysis, budget, spill_everywhere=spill_everywhere)


from engine.alloc import chaitin_briggs, dsatur, linear_scan, linear_scan_hull, naive, optimal  # noqa: F401  (registration)
