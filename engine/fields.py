"""Typed checks of fields read from files someone else wrote (plans, sessions, cache entries).

Invariant: a file is data, never code. Every field that leaves these
checks has the Python type and the range its reader expects (an ``int``
that is not a ``bool``, a printable string of bounded length, a string from
a known set), so later stages can write it into generated source through
``int()`` / ``float()`` / ``repr()`` without ever pasting file text. Each
failure is a one-line :class:`PlanError` that names the file and the field
and quotes at most a short, escaped excerpt of the offending value.

Examples
--------
>>> integer({"m": 8}, "m", "plan.json: workload", 2, 16)
8
>>> integer({"m": True}, "m", "plan.json: workload", 2, 16)
Traceback (most recent call last):
...
engine.errors.PlanError: plan.json: workload: field 'm' must be an integer in 2..16, got true
>>> print(excerpt("a\\nb" * 50, 8))
'a\\nba\\nba\\n'...
"""

from __future__ import annotations

import json
import re

from engine.errors import PlanError

DIGITS = re.compile(r"[0-9]+")
#: how long an echoed value may be in a message
EXCERPT = 40


def excerpt(value, limit: int = EXCERPT) -> str:
    """A short, escaped rendering of ``value`` for an error message (control characters escaped)."""
    if isinstance(value, str):
        text = repr(value[:limit])
        return text + ("..." if len(value) > limit else "")
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes ``²`` and other digits that ``int`` refuses)."""
    return bool(DIGITS.fullmatch(text))


def is_int(value) -> bool:
    """An ``int`` that is not a ``bool`` (JSON's true/false must never pass as 1/0)."""
    return isinstance(value, int) and not isinstance(value, bool)


def exact_keys(data: dict, allowed, where: str, required=()) -> None:
    """Refuse keys outside ``allowed`` and missing ``required`` ones (sorted, so messages repeat)."""
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise PlanError(f"{where}: unknown field {excerpt(unknown[0])} (known: {', '.join(sorted(allowed))})")
    missing = [k for k in required if k not in data]
    if missing:
        raise PlanError(f"{where}: missing field {missing[0]!r}")


def integer(data: dict, key: str, where: str, lo: int, hi: int, allowed=None) -> int:
    """``data[key]`` as an int in ``lo..hi`` (and in ``allowed`` when given)."""
    value = data.get(key)
    ok = is_int(value) and lo <= value <= hi and (allowed is None or value in allowed)
    if not ok:
        want = f"one of {', '.join(map(str, allowed))}" if allowed is not None else f"an integer in {lo}..{hi}"
        raise PlanError(f"{where}: field {key!r} must be {want}, got {excerpt(value)}")
    return int(value)


def choice(data: dict, key: str, where: str, allowed) -> str:
    """``data[key]`` as one of the strings ``allowed``."""
    value = data.get(key)
    if not isinstance(value, str) or value not in allowed:
        raise PlanError(f"{where}: field {key!r} must be one of {', '.join(allowed)}, got {excerpt(value)}")
    return value


def boolean(data: dict, key: str, where: str) -> bool:
    value = data.get(key)
    if not isinstance(value, bool):
        raise PlanError(f"{where}: field {key!r} must be true or false, got {excerpt(value)}")
    return value


def text(data: dict, key: str, where: str, limit: int = 4096) -> str:
    """``data[key]`` as a printable string of at most ``limit`` characters (a path, a label)."""
    value = data.get(key)
    if not isinstance(value, str) or len(value) > limit or not value.isprintable():
        raise PlanError(f"{where}: field {key!r} must be a printable string of at most {limit} characters, "
                        f"got {excerpt(value)}")
    return value
