"""The work a program from a file asks for, bounded before that work starts.

:func:`check_program` is called wherever a program enters from a file
(a program file, a plan's or a session's ``program`` field), right after
parsing, so ``analyze``, ``allocate``, ``check``, ``build`` and the window
refuse the same programs in the same line, naming the file.

Invariant: each bound costs time linear in the program (under a second at
:data:`engine.limits.MAX_INSTRUCTIONS`) and never refuses a program whose
work is within the limit: each is a lower bound of the work. What it lets
through is bounded again, exactly, where the work is done
(:func:`engine.interference.build_interference`).

Examples
--------
>>> from engine.ir import parse
>>> check_program(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n"), "k.txt")
"""

from __future__ import annotations

from engine.interference import pairs_lower_bound, too_many_edges
from engine.ir import Program
from engine.limits import MAX_INTERFERENCE_EDGES


def check_program(program: Program, where: str) -> None:
    """Raise a one-line :class:`engine.errors.LimitError` naming ``where`` when ``program`` certainly asks
    for more than a limit allows: an interference graph above :data:`engine.limits.MAX_INTERFERENCE_EDGES`
    (:func:`engine.interference.pairs_lower_bound`)."""
    pairs = pairs_lower_bound(program)
    if pairs > MAX_INTERFERENCE_EDGES:
        raise too_many_edges(pairs, where)
