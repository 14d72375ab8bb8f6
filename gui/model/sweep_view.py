"""The Sweep view's model: a sweep store's rows as a heatmap over two config fields (M x N for GEMM, head_dim x
groups for MHA) at chosen values of the others, coloured by one figure (engine/sweep_figures.py); what a cell
holds in words; the worst rows; and the workload and options a row's config opens with in the main views.

Invariant: Qt-free. The rows are the store's (``Store.rows``), never changed; the grid is recomputed from them
and the current choices only, and a cell with no row, or whose row lacks the figure, is NaN (drawn empty),
never 0. The rows are indexed once (:class:`SweepGrid`), so a redraw is one pass over the rows of the slice.

Examples
--------
>>> rows = [{"workload": "gemm", "m": 2, "n": 4, "k": 2, "allocator": "dsatur", "registers": 20, "config": "gemm 2x4x2"},
...         {"workload": "gemm", "m": 4, "n": 4, "k": 2, "allocator": "dsatur", "registers": 30, "config": "gemm 4x4x2"}]
>>> g = SweepGrid(rows, "gemm")
>>> cells = g.grid("registers", {"k": 2, "allocator": "dsatur"})
>>> cells.xs, cells.ys, cells.values.tolist()
([2, 4], [4], [[20.0, 30.0]])
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from engine.base.errors import RegtuneError
from engine.sweep_figures import FIGURES, config_of, figure, worst
from engine.workloads import BuildOptions, parse_config_label

#: per workload: the heatmap's x and y fields, then the config fields chosen by a box each
AXES = {"gemm": ("m", "n", ("k",)), "mha": ("head_dim", "groups", ("heads", "batch"))}
#: the options chosen by a box each, beside the config fields
SLICE_OPTIONS = ("schedule", "strategies", "allocator", "budget", "arch", "cap", "toolchain")
#: the figures the view colours by, in the order its box lists them
VIEW_FIGURES = ("registers", "ptxas_registers", "spilled", "ptxas_spills", "occupancy_warps", "model_cycles", "gap",
                "ratio", "maxlive", "sass_maxlive", "measured_ms")
#: the worst-configs tables: title -> the figure they rank by
WORST = {"planned spills": "spilled", "ptxas spills": "ptxas_spills", "plan-vs-ptxas gap": "gap"}


@dataclass
class Cells:
    """One heatmap: the x and y values, the figure per cell (NaN: none), the rows behind each cell."""

    xs: list
    ys: list
    values: np.ndarray            # [len(ys), len(xs)]
    rows: list                    # [len(ys)][len(xs)]: the rows in that cell (first: the one coloured)
    shown: int                    # rows in the slice


def _key(value) -> tuple:
    return (value is None, isinstance(value, str), value if value is not None else 0)


class SweepGrid:
    """The rows of one workload, indexed by their slice (every field but the two axes)."""

    def __init__(self, rows: list[dict], workload: str):
        if workload not in AXES:
            raise RegtuneError(f"workload {workload!r}: the Sweep view shows gemm or mha")
        self.workload = workload
        self.x, self.y, config = AXES[workload]
        self.rows = [r for r in rows if r.get("workload") == workload]
        self.fields = [f for f in (*config, *SLICE_OPTIONS) if any(r.get(f) is not None for r in self.rows)]
        self._by_slice: dict = {}
        for r in self.rows:
            self._by_slice.setdefault(tuple(r.get(f) for f in self.fields), []).append(r)
        self.xs = sorted({r.get(self.x) for r in self.rows}, key=_key)
        self.ys = sorted({r.get(self.y) for r in self.rows}, key=_key)

    def choices(self, field: str) -> list:
        """The values ``field`` takes in these rows, sorted."""
        return sorted({r.get(field) for r in self.rows}, key=_key)

    def default(self) -> dict:
        """The slice the view opens on: the one with the most rows (ties: cap 'plan' first, the one row kind
        that holds every figure, SASS MAXLIVE included, then the first in sorted order), so the boxes never open
        on a combination no row has (arch sm_80 with an analysis row's cap '-').

        >>> rows = [{"workload": "gemm", "m": 2, "n": 2, "k": 2, "arch": a, "cap": c}
        ...         for a, c in (("-", "-"), ("sm_80", "none"), ("sm_80", "plan"), ("sm_80", "none"))]
        >>> SweepGrid(rows, "gemm").default()
        {'k': 2, 'arch': 'sm_80', 'cap': 'none'}
        >>> SweepGrid(rows[:3], "gemm").default()
        {'k': 2, 'arch': 'sm_80', 'cap': 'plan'}
        """
        if not self._by_slice:
            return {f: None for f in self.fields}
        cap = self.fields.index("cap") if "cap" in self.fields else None
        key = min(self._by_slice, key=lambda k: (-len(self._by_slice[k]), cap is None or k[cap] != "plan",
                                                 [_key(v) for v in k]))
        return dict(zip(self.fields, key))

    def grid(self, name: str, fixed: dict) -> Cells:
        """Figure ``name`` over x by y, at the values ``fixed`` names (a field it leaves out: any value)."""
        if name not in FIGURES:
            figure(name, {})            # the one-line error naming the figures
        want = [(k, fixed[f]) for k, f in enumerate(self.fields) if f in fixed]
        xi = {v: i for i, v in enumerate(self.xs)}
        yi = {v: i for i, v in enumerate(self.ys)}
        values = np.full((len(self.ys), len(self.xs)), np.nan)
        cells: list = [[[] for _ in self.xs] for _ in self.ys]
        shown = 0
        read = FIGURES[name].read
        for key, rows in self._by_slice.items():
            if any(key[k] != v for k, v in want):
                continue
            for r in rows:
                i, j = yi[r.get(self.y)], xi[r.get(self.x)]
                cell = cells[i][j]
                if not cell:
                    v = read(r)
                    values[i, j] = np.nan if v is None else v
                cell.append(r)
                shown += 1
        return Cells(self.xs, self.ys, values, cells, shown)


def cell_words(cells: Cells, i: int, j: int, name: str) -> str:
    """What cell (row ``i``, column ``j``) holds, in words: its config and options and its figures."""
    rows = cells.rows[i][j]
    if not rows:
        return "no row in the store for this cell"
    r = rows[0]
    head = f"{r.get('config')}  ({', '.join(f'{k} {r.get(k)}' for k in ('tile', 'schedule', 'allocator', 'budget', 'arch', 'cap') if r.get(k) is not None)})"
    figs = []
    for f in VIEW_FIGURES:
        v = figure(f, r)
        if v is not None:
            mark = "> " if f == name else ""
            figs.append(f"{mark}{FIGURES[f].label}: {v:.2f}" if isinstance(v, float) else f"{mark}{FIGURES[f].label}: {v}")
    more = f"\n({len(rows)} rows in this cell: the slice leaves a field open; the first is shown)" if len(rows) > 1 else ""
    error = f"\nerror: {r['error']}" if r.get("error") else ""
    return head + "\n" + "\n".join(figs or ["no figures"]) + error + more


def worst_rows(rows: list[dict], count: int = 20) -> dict[str, list[dict]]:
    """Per table of :data:`WORST`: its rows, worst first (a gap ranks by its size either way); a planned figure's
    table lists each plan once, not once per arch and cap it was compiled at."""
    out = {}
    for title, name in WORST.items():
        if name == "gap":
            ranked = [dict(r, _abs_gap=abs(figure("gap", r))) for r in rows if figure("gap", r) is not None]
            ranked = sorted(ranked, key=lambda r: -r["_abs_gap"])[:count]
            out[title] = [{k: v for k, v in r.items() if k != "_abs_gap"} for r in ranked]
        else:
            out[title] = [r for r in worst(_plans(rows) if name in PLANNED else rows, name, count)
                          if (figure(name, r) or 0) > 0]
    return out


#: figures of the plan alone (the same on every arch, cap and toolchain row of it)
PLANNED = ("spilled", "spill_executed", "registers", "maxlive", "ratio")


def _plans(rows: list[dict]) -> list[dict]:
    """One row per plan (config, options, allocator, budget): the first of its arch, cap and toolchain rows."""
    seen: dict = {}
    for r in rows:
        seen.setdefault((r.get("config"), r.get("options"), r.get("tile"), r.get("schedule"), r.get("strategies"),
                         r.get("allocator"), r.get("budget")), r)
    return list(seen.values())


def _tile(text):
    numbers = [int(n) for n in re.findall(r"\d+", str(text or ""))]
    return tuple(numbers) if len(numbers) == 2 else None


def open_request(row: dict, options: BuildOptions) -> tuple[dict, BuildOptions]:
    """The workload and options the main views open ``row``'s config with: the row's config, tile, schedule,
    strategies, budget and arch over the session's other options (an analysis-only row's arch '-': the
    session's).

    Examples
    --------
    >>> w, o = open_request({"workload": "gemm", "m": 2, "n": 4, "k": 2, "config": "gemm 2x4x2", "tile": "2x4",
    ...                      "schedule": "dot", "budget": 64, "arch": "-"}, BuildOptions(arch="sm_90"))
    >>> w, o.tile, o.schedule, o.budget, o.arch
    ({'kind': 'gemm', 'm': 2, 'n': 4, 'k': 2, 'dtype': 'f32'}, (2, 4), 'dot', 64, 'sm_90')
    """
    workload = parse_config_label(row["config"]) if row.get("config") else config_of(row)
    changes: dict = {}
    if _tile(row.get("tile")) is not None:
        changes["tile"] = _tile(row.get("tile"))
    if row.get("schedule") not in (None, "-", ""):
        changes["schedule"] = row["schedule"]
    if row.get("strategies") not in (None, "-"):
        changes["strategies"] = tuple(re.findall(r"[a-z0-9][a-z0-9-]*", row["strategies"]))
    if isinstance(row.get("budget"), int):
        changes["budget"] = row["budget"]
    if row.get("arch") not in (None, "-"):
        changes["arch"] = row["arch"]
    return workload, options.with_(**changes)


def range_of(values: np.ndarray) -> tuple[float, float]:
    """The colour scale's low and high ends over the cells that have a value ((0, 1) when none has)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return 0.0, 1.0
    lo, hi = float(finite.min()), float(finite.max())
    return (lo, hi) if hi > lo else (lo - 0.5, lo + 0.5)
