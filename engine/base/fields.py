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
engine.base.errors.PlanError: plan.json: workload: field 'm' must be an integer in 2..16, got true
>>> print(excerpt("a\\nb" * 50, 8))
'a\\nba\\nba\\n'...
"""

from __future__ import annotations

import json
import re

from engine.base.errors import PlanError

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


class _Repeated(dict):
    """A JSON object that names a key twice, or holds one that does: ``where`` is the first such key's path."""

    where = ""


def _repeated_in(value) -> str | None:
    """The path below ``value`` of the first repeated key it holds (None: none)."""
    if type(value) is _Repeated:
        return value.where
    if type(value) is list:
        for i, item in enumerate(value):
            inner = _repeated_in(item)
            if inner is not None:
                return f"[{i}]" + inner
    return None


def _first_repeat(pairs: list) -> str:
    seen = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no key repeats")


def _object(pairs: list) -> dict:
    """``json.loads``'s object hook: a dict, marked (:class:`_Repeated`) when a key repeats in it or below it."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        where = f".{_first_repeat(pairs)}"
    else:
        where = next((f".{k}{inner}" for k, v in pairs if (inner := _repeated_in(v)) is not None), None)
    if where is None:
        return obj
    marked = _Repeated(obj)
    marked.where = where
    return marked


def load_json(text: str, where: str):
    """Parse the JSON text of a file someone else wrote: a one-line :class:`PlanError` when it is not JSON or when
    an object names a key twice (JSON readers keep the last and would drop the first silently), naming the key by
    its path from the top (``assignment.acc_0_0``).

    Examples
    --------
    >>> load_json('{"a": {"b": [1, {"c": 2}]}}', "p.json")
    {'a': {'b': [1, {'c': 2}]}}
    >>> load_json('{"assignment": {"x": [0], "x": [1]}}', "p.json")
    Traceback (most recent call last):
    ...
    engine.base.errors.PlanError: p.json: duplicate key 'assignment.x' (each key may appear once in a JSON object)
    >>> load_json('{"plans": [{}, {"k": 1, "k": 1}]}', "s.json")
    Traceback (most recent call last):
    ...
    engine.base.errors.PlanError: s.json: duplicate key 'plans[1].k' (each key may appear once in a JSON object)
    """
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except (ValueError, RecursionError) as exc:
        raise PlanError(f"{where}: not valid JSON: {excerpt(str(exc), 80)[1:-1]}") from None
    repeated = _repeated_in(data)
    if repeated is not None:
        raise PlanError(f"{where}: duplicate key {excerpt(repeated.lstrip('.'), 80)} "
                        "(each key may appear once in a JSON object)")
    return data
