"""``regtune compare`` and ``build`` output: a rows model (metric -> value per plan) and its renderings.

Invariant: the model (:class:`Comparison`) holds the values exactly as the
kernels report computed them, each row with the metric it belongs to and
which way is better; every rendering (table, CSV, JSON, Markdown) is made
from the model alone, and none drops or rounds a value. A row another
module adds to :func:`kernels.report.compare_rows` reaches every format
with no change here (its metric is its label's words when no known metric
claims it). The table fits :data:`WIDTH` columns: plans as columns when
they fit, else plans as rows, in as many tables as it takes; a text too
long for a cell becomes a numbered note under the table.

Examples
--------
>>> c = Comparison(("a", "b"), (Row("registers", "planned registers", "min", (40, 32)),))
>>> print(render(c, "csv"), end="")
metric,row,a,b
registers,planned registers,40,32*
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass

from engine.base.errors import RegtuneError

#: the widest table ``--format table`` prints
WIDTH = 100
#: cell texts longer than this become a numbered note under the table
CELL = 22
FORMATS = ("table", "csv", "json", "markdown")
#: row label (less its architecture) -> the metric ``--metrics`` names it by
METRIC_OF = {
    "planned registers": "registers", "ptxas registers": "registers", "allocated (8/thread)": "registers",
    "planned MAXLIVE": "maxlive", "SASS MAXLIVE": "sass",
    "planned spills (values)": "spills", "spill bytes (st+ld)": "spills", "stack frame bytes": "spills",
    "bank conflicts (plan model)": "banks",
    "occupancy, planned (warps/SM)": "occupancy", "next occupancy step": "occupancy",
    "occupancy (warps/SM)": "occupancy",
    "simulator check": "simulator", "GPU time (ms)": "gpu", "GPU registers / local B (driver)": "gpu",
    "ILP (model)": "ilp", "cycles/warp (model)": "cycles",
    "model time (us), plan issue cycles": "model-time", "model time (us), SASS issue cycles": "model-time",
    "SASS issue cycles/warp (model)": "cycles",
    # ptxas at the two caps of a build (kernels/build.py): the plan's register count, and no -maxrregcount
    "ptxas flags, plan cap": "flags", "ptxas flags, no cap": "flags",
    "ptxas registers, plan cap": "registers", "ptxas registers, no cap": "registers",
    "allocated (8/thread), plan cap": "registers", "SASS MAXLIVE, plan cap": "sass",
    "spill bytes (st+ld), plan cap": "spills", "spill bytes (st+ld), no cap": "spills",
    "stack frame bytes, plan cap": "spills", "occupancy (warps/SM), plan cap": "occupancy",
    # ptxas on the plan's own PTX (kernels/plan_ptx.py), beside the Numba kernel's rows above
    "plan PTX registers, plan cap": "registers", "plan PTX registers, no cap": "registers",
    "plan PTX spill bytes, plan cap": "spills", "plan PTX SASS MAXLIVE": "sass",
}
#: every metric ``--metrics`` takes, in the rows' order: ``compare --help``, the unknown-metric error and the README
#: list exactly these (a test builds the rows and checks)
METRICS = ("registers", "maxlive", "spills", "banks", "occupancy", "flags", "sass", "cycles", "model-time",
           "simulator", "gpu", "ilp")
#: the line under a table with plan-PTX rows: which realisation each ptxas row is of
REALISATIONS = ("ptxas and SASS rows are the Numba kernel's (exported, simulated, launched); "
                "'plan PTX' rows are ptxas on the plan's own PTX")
_ARCH = re.compile(r"^sm_\d+a? ")


def metric_of(label: str) -> str:
    """The metric a row belongs to: a known one, else the label's words joined by dashes.

    Examples
    --------
    >>> metric_of("sm_80 ptxas registers"), metric_of("ILP model (cycles)")
    ('registers', 'ilp-model-cycles')
    """
    base = _ARCH.sub("", label)
    return METRIC_OF.get(base) or "-".join(re.findall(r"[a-z0-9]+", base.lower()))


@dataclass(frozen=True)
class Row:
    """One row: its metric, label, which way is better ('min', 'max' or ''), and a value per plan."""

    metric: str
    label: str
    better: str
    values: tuple

    def best(self) -> object:
        """The best value when the row has one to mark: at least two numbers, and better is min or max."""
        numeric = [v for v in self.values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not self.better or len(numeric) < 2:
            return None
        return min(numeric) if self.better == "min" else max(numeric)

    def cells(self) -> list[str]:
        """The values as text, the best starred (every plan that has it, as in the window)."""
        best = self.best()
        return [f"{v}*" if best is not None and v == best else str(v) for v in self.values]


@dataclass(frozen=True)
class Comparison:
    """Plans side by side: the plans' names and the rows."""

    plans: tuple
    rows: tuple

    def only(self, metrics: list[str] | None) -> Comparison:
        """The rows of ``metrics`` (None: all), in the model's order; an unknown metric is a one-line error."""
        if metrics is None:
            return self
        unknown = [m for m in metrics if m not in METRICS]
        if unknown:
            raise RegtuneError(f"--metrics: unknown metric {unknown[0]!r} (known: {', '.join(METRICS)})")
        return Comparison(self.plans, tuple(r for r in self.rows if r.metric in metrics))


def comparison(columns: list, archs, models=None) -> Comparison:
    """The rows model of ``columns`` ((name, Measurement) pairs) from :func:`kernels.report.compare_rows`, and
    when ``models`` (one :class:`engine.model.ilp.IlpFigures` per column) is given, the two model rows after them."""
    from kernels.report import Column, compare_rows

    cells = [Column(m.planned, m) for _, m in columns]
    rows = tuple(Row(metric_of(label), label, better, tuple(get(c) for c in cells))
                 for label, better, get in compare_rows(archs))
    return Comparison(tuple(name for name, _ in columns), rows + (model_rows(models) if models is not None else ()))


def model_rows(figures) -> tuple[Row, ...]:
    """ILP and issue cycles per warp of each plan (engine/model/ilp.py: a model on the plan's arch latencies).

    Examples
    --------
    >>> from engine.model.ilp import plan_ilp
    >>> from engine.ir.parser import parse
    >>> from engine.plan import Plan
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  exit\\n")
    >>> [(r.label, r.values) for r in model_rows([plan_ilp(Plan(p, {"x": (0,), "y": (1,)}, {}, 8, "hand"))])]
    [('ILP (model)', (0.375,)), ('cycles/warp (model)', (8,))]
    """
    return (Row("ilp", "ILP (model)", "max", tuple(round(f.ilp, 3) for f in figures)),
            Row("cycles", "cycles/warp (model)", "min", tuple(f.cycles for f in figures)))


def metric_names(archs=("sm_80",)) -> list[str]:
    """Every metric ``--metrics`` takes, in row order (without building anything).

    Examples
    --------
    >>> metric_names()[:4]
    ['registers', 'maxlive', 'spills', 'banks']
    """
    from kernels.report import compare_rows

    return list(dict.fromkeys([*(metric_of(label) for label, _, _ in compare_rows(archs)), "ilp", "cycles"]))


def parse_metrics(text: str | None) -> list[str] | None:
    """``--metrics a,b``: the names (checked against the rows once they exist), None for all."""
    if text is None or text.strip() == "all":
        return None
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise RegtuneError("--metrics needs 'all' or at least one metric name")
    return names


def render(c: Comparison, fmt: str, header: str = "") -> str:
    """``c`` in ``fmt`` (one of :data:`FORMATS`); ``header``: what was compared, as a line above a table."""
    return {"table": _table, "csv": _csv, "json": _json, "markdown": _markdown}[fmt](c, header)


def _csv(c: Comparison, header: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["metric", "row", *c.plans])
    for r in c.rows:
        writer.writerow([r.metric, r.label, *r.cells()])
    return out.getvalue()


def _json(c: Comparison, header: str) -> str:
    rows = [{"metric": r.metric, "row": r.label, "better": r.better or None,
             "values": dict(zip(c.plans, r.values)), "best": r.best()} for r in c.rows]
    return json.dumps({"compared": header, "plans": list(c.plans), "rows": rows}, indent=1) + "\n"


def _markdown(c: Comparison, header: str) -> str:
    def line(cells):
        return "| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |"

    lines = [header, ""] if header else []
    lines += [line(["", *c.plans]), line(["---"] * (len(c.plans) + 1))]
    lines += [line([r.label, *(x.replace("*", "\\*") for x in r.cells())]) for r in c.rows]
    return "\n".join(lines) + "\n"


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _short(cells: list[list[str]], notes: dict) -> list[list[str]]:
    """Cells too long for a table, replaced by ``[n]`` (one number per distinct text)."""
    def short(text):
        if len(text) <= CELL:
            return text
        return f"[{notes.setdefault(text, len(notes) + 1)}]"
    return [[short(x) for x in row] for row in cells]


def _table(c: Comparison, header: str) -> str:
    notes: dict = {}
    body = _short([r.cells() for r in c.rows], notes)
    lines = _grid([["", *c.plans], *[[r.label, *b] for r, b in zip(c.rows, body)]])
    if max(map(len, lines)) > WIDTH:
        lines = _plans_as_rows(c, body)
    head = [header] if header else []
    tail = ["* best value of its row"] if any(r.best() is not None for r in c.rows) else []
    tail += [REALISATIONS] if any(" plan PTX " in r.label for r in c.rows) else []
    tail += [f"[{n}] {text}" for text, n in notes.items()]
    return "\n".join(head + lines + tail) + "\n"


def _plans_as_rows(c: Comparison, body: list[list[str]]) -> list[str]:
    """Plans as rows, the rows' labels as column heads, cut into tables no wider than :data:`WIDTH`."""
    name = max(len(p) for p in c.plans)
    lines, k = [], 0
    while k < len(c.rows):
        width, take = name, 0
        while k + take < len(c.rows):
            col = max(len(c.rows[k + take].label), *(len(x) for x in body[k + take]))
            if take and width + 2 + col > WIDTH:
                break
            width, take = width + 2 + col, take + 1
        rows = [["", *(r.label for r in c.rows[k:k + take])]]
        rows += [[p, *(body[i][j] for i in range(k, k + take))] for j, p in enumerate(c.plans)]
        lines += ([""] if lines else []) + _grid(rows)
        k += take
    return lines
