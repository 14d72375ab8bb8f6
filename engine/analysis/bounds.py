"""The work a program from a file asks for, bounded before that work starts.

:func:`check_program` is called wherever a program enters from a file
(a program file, a plan's or a session's ``program`` field), right after
parsing, so ``analyze``, ``allocate``, ``check``, ``build`` and the window
refuse the same programs in the same line, naming the file.

Invariant: each bound costs time linear in the program (under a second at
:data:`engine.base.limits.MAX_INSTRUCTIONS`) and never refuses a program whose
work is within the limit: each is a lower bound of the work. What it lets
through is bounded again, exactly, where the work is done
(:func:`engine.analysis.interference.build_interference`, the interpreter's step
limit).

Examples
--------
>>> from engine.ir.parser import parse
>>> check_program(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n"), "k.txt")
>>> check_program(parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
...                     "  %p:pred = setp.lt %i, 2000000000\\n  cbr %p, loop, done\\n.block done\\n  exit\\n"), "k.txt")
Traceback (most recent call last):
...
engine.base.errors.LimitError: k.txt: a run that gets past the loop at block loop (2,000,000,000 trips) has executed \
at least 6,000,000,001 instructions, above the limit of 2,000,000 for one run of the execution check; refused \
before running it
"""

from __future__ import annotations

from engine.analysis.interference import pairs_lower_bound, too_many_edges
from engine.base.errors import LimitError
from engine.base.limits import MAX_INTERFERENCE_EDGES, MAX_STEPS
from engine.ir.cfg import (
    NestingError,
    RunBound,
    StructureError,
    run_bound,
    structure,
)
from engine.ir.core import Program


def check_program(program: Program, where: str) -> None:
    """Raise a one-line :class:`engine.base.errors.LimitError` naming ``where`` when ``program`` certainly asks
    for more than a limit allows: an interference graph above :data:`engine.base.limits.MAX_INTERFERENCE_EDGES`
    (:func:`engine.analysis.interference.pairs_lower_bound`), loops and ifs nested deeper than
    :data:`engine.base.limits.MAX_NESTING`, or counted loops that make every run reaching them longer than
    :data:`engine.base.limits.MAX_STEPS` (:func:`engine.ir.cfg.run_bound`)."""
    pairs = pairs_lower_bound(program)
    if pairs > MAX_INTERFERENCE_EDGES:
        raise too_many_edges(pairs, where)
    try:
        tree = structure(program)
    except NestingError as exc:
        raise LimitError(f"{where}: {exc}") from None
    except StructureError:
        return                 # not a nest of loops and ifs: its runs stop at the interpreter's step limit
    bound = run_bound(program, tree)
    if bound is not None and bound.steps > MAX_STEPS:
        raise LimitError(f"{where}: {too_long(bound)}")


def too_long(bound: RunBound) -> str:
    """What a run past ``bound``'s loop executes, against the step limit, in words."""
    nest = f", with {bound.nested} counted loop{'s' * (bound.nested != 1)} nested in it" if bound.nested else ""
    return (f"a run that gets past the loop at block {bound.header} ({bound.trips:,} trips{nest}) has executed at "
            f"least {bound.steps:,} instructions, above the limit of {MAX_STEPS:,} for one run of the execution "
            "check; refused before running it")
