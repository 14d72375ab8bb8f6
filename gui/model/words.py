"""Counts and summaries in words, as every view writes them (Qt-free).

Invariant: a count and its noun agree in number ("1 conflict", "2 conflicts"); every view that counts
conflicts says it through :func:`conflict_summary`, so the plans list, the status line and the Conflicts
tab say the same thing.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is 1.

    Examples
    --------
    >>> counted(1, "conflict"), counted(2, "conflict"), counted(0, "conflict"), counted(3, "value", "values")
    ('1 conflict', '2 conflicts', '0 conflicts', '3 values')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def conflict_summary(conflicts) -> str:
    """How many ``conflicts`` a plan has, as "BROKEN: 1 conflict"; "valid" when it has none.

    Examples
    --------
    >>> conflict_summary([]), conflict_summary(["x"]), conflict_summary(["x", "y"])
    ('valid', 'BROKEN: 1 conflict', 'BROKEN: 2 conflicts')
    """
    return f"BROKEN: {counted(len(conflicts), 'conflict')}" if conflicts else "valid"
