"""The figures of a sweep store's rows, by name: what the sweep report, the exports and the window's Sweep view
read from a row, and the derived ones (naive/best ratio, plan-vs-ptxas gap) computed in one place.

Invariant: a figure is read from the row's own columns (docs: the store's row schema, engine/store.py) or
derived from them here; a row that lacks a column a figure needs gives ``None`` for that figure, never a
guess. Nothing here opens the store: callers hand in the rows ``Store.rows`` returned.

Examples
--------
>>> row = {"workload": "gemm", "m": 8, "n": 8, "k": 8, "registers": 40, "ptxas_registers": 44,
...        "naive_registers": 120, "best_registers": 40, "cap": "none"}
>>> figure("gap", row), figure("ratio", row), figure("spilled", row) is None
(4, 3.0, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.base.errors import RegtuneError

#: a workload's config fields, in the order its label names them (the store's identity columns)
CONFIG_FIELDS = {"gemm": ("m", "n", "k"), "mha": ("heads", "batch", "head_dim", "groups")}
#: the plan options a row varies by, besides its config (Kernel Tuner's tunable parameters with the config)
OPTION_FIELDS = ("tile", "schedule", "allocator", "budget", "cap")
#: a workload's own options beside those (MHA's strategies)
WORKLOAD_OPTIONS = {"gemm": (), "mha": ("strategies",)}


@dataclass(frozen=True)
class Figure:
    """One figure of a row: its name, its words, its unit and how it is read (``None``: not measured)."""

    name: str
    label: str
    unit: str
    read: Callable[[dict], float | int | None]


def _column(name: str):
    return lambda row: row.get(name)


def _ratio(row: dict) -> float | None:
    naive, best = row.get("naive_registers"), row.get("best_registers")
    return naive / best if naive is not None and best else None


def _gap(row: dict) -> int | None:
    """ptxas's registers less the plan's, on rows compiled with no cap (elsewhere ptxas is held to the plan)."""
    actual, planned = row.get("ptxas_registers"), row.get("registers")
    if actual is None or planned is None or row.get("cap") != "none":
        return None
    return actual - planned


def _ptxas_spills(row: dict) -> int | None:
    stores, loads = row.get("ptxas_spill_stores"), row.get("ptxas_spill_loads")
    return None if stores is None and loads is None else (stores or 0) + (loads or 0)


FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("registers", "planned registers", "registers", _column("registers")),
    Figure("ptxas_registers", "ptxas registers", "registers", _column("ptxas_registers")),
    Figure("spilled", "planned spilled values", "values", _column("spilled")),
    Figure("spill_executed", "planned spill instructions executed (loop-weighted)", "instructions",
           _column("spill_executed")),
    Figure("ptxas_spills", "ptxas spill bytes (stores + loads)", "bytes", _ptxas_spills),
    Figure("occupancy_warps", "occupancy (active warps per SM, the plan's registers)", "warps",
           _column("occupancy_warps")),
    Figure("model_cycles", "model time (cycles, a model)", "cycles", _column("model_cycles")),
    Figure("gap", "ptxas registers - planned registers (no cap)", "registers", _gap),
    Figure("ratio", "naive / best registers", "x", _ratio),
    Figure("maxlive", "MAXLIVE", "registers", _column("maxlive")),
    Figure("sass_maxlive", "SASS MAXLIVE", "registers", _column("sass_maxlive")),
    Figure("measured_ms", "measured time (ms, a GPU)", "ms", _column("measured_ms")),
)}


def figure(name: str, row: dict):
    """Figure ``name`` of ``row`` (``None``: the row does not have it); an unknown name is a one-line error.

    Examples
    --------
    >>> figure("ptxas_spills", {"ptxas_spill_stores": 8, "ptxas_spill_loads": 4})
    12
    >>> figure("speed", {})
    Traceback (most recent call last):
    ...
    engine.base.errors.RegtuneError: figure 'speed': no such figure (the figures: gap, maxlive, measured_ms, \
model_cycles, occupancy_warps, ptxas_registers, ptxas_spills, ratio, registers, sass_maxlive, spill_executed, spilled)
    """
    if name not in FIGURES:
        raise RegtuneError(f"figure {name!r}: no such figure (the figures: {', '.join(sorted(FIGURES))})")
    return FIGURES[name].read(row)


def config_of(row: dict) -> dict:
    """The row's config fields as a workload dict (``kind`` and its fields), as the workload registry takes it.

    Examples
    --------
    >>> config_of({"workload": "gemm", "m": 2, "n": 3, "k": 4, "heads": None})
    {'kind': 'gemm', 'm': 2, 'n': 3, 'k': 4}
    """
    kind = row.get("workload")
    if kind not in CONFIG_FIELDS:
        raise RegtuneError(f"row of workload {kind!r}: not a sweep workload (gemm or mha)")
    return {"kind": kind, **{f: row.get(f) for f in CONFIG_FIELDS[kind]}}


def spills_at_limit(row: dict) -> bool:
    """Whether the row's plan spills at the 255-register limit (budget 255, at least one spilled value)."""
    return row.get("budget") == 255 and (row.get("spilled") or 0) > 0


def worst(rows: list[dict], name: str, count: int = 20) -> list[dict]:
    """The ``count`` rows with the largest figure ``name`` (rows without it left out), largest first; ties in
    the rows' order.

    Examples
    --------
    >>> rows = [{"config": "a", "spilled": 1}, {"config": "b", "spilled": 5}, {"config": "c", "spilled": None}]
    >>> [r["config"] for r in worst(rows, "spilled")]
    ['b', 'a']
    """
    have = [(figure(name, r), k) for k, r in enumerate(rows)]
    have = sorted(((v, k) for v, k in have if v is not None), key=lambda vk: (-vk[0], vk[1]))
    return [rows[k] for _v, k in have[:count]]
