"""A sweep store's rows written out: CSV, JSON, Parquet (pyarrow, the optional extra ``regtune[parquet]``) and a
Kernel Tuner cache file, so Kernel Tuner's own tools and dashboard can read a sweep.

Invariant: every file holds exactly the rows it was handed (the caller's ``Store.rows(where)``), each row's
columns as the store has them plus the two derived figures of :mod:`engine.sweep_figures` (the naive/best
ratio and the plan-vs-ptxas gap); nothing is recomputed. Every file is written atomically: a failed export
leaves what was there. A Kernel Tuner cache describes one kernel on one device, so its rows must share one
workload, one arch and one toolchain, and no two rows may have the same tunable parameters: anything else is
a one-line error naming what differs, before anything is written.

The Kernel Tuner file is written as Kernel Tuner 1.x writes its cache (``kernel_tuner/util.py``:
``process_cache``'s header dumped with ``indent=""`` and opened, then one ``"key": {entry}`` line per
config as ``store_cache`` appends them, then closed as ``close_cache`` closes it), so ``read_cache`` reads
it; an entry's key is its tunable parameters' values joined by commas, in ``tune_params_keys``' order.

Examples
--------
>>> rows = [{"workload": "gemm", "m": 2, "n": 2, "k": 2, "registers": 9, "naive_registers": 18,
...          "best_registers": 9, "cap": "-"}]
>>> print(to_csv(rows).splitlines()[0])
workload,m,n,k,registers,naive_registers,best_registers,cap,naive_best_ratio,plan_ptxas_gap
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from engine.base.errors import RegtuneError
from engine.base.files import write_text_atomic
from engine.sweep_figures import CONFIG_FIELDS, OPTION_FIELDS, WORKLOAD_OPTIONS, figure

#: the export formats, by the name ``regtune export sweep --format`` takes
FORMATS = ("csv", "json", "parquet", "kerneltuner")
#: the derived figures each exported row carries, beside the store's columns: column -> figure name
DERIVED = {"naive_best_ratio": "ratio", "plan_ptxas_gap": "gap"}
#: the figures of a Kernel Tuner entry (entry key -> row column); ``time`` is added where a row was measured
KT_FIGURES = {"registers": "registers", "spilled": "spilled", "spill_static": "spill_static",
              "spill_executed": "spill_executed", "ptxas_registers": "ptxas_registers",
              "ptxas_spill_stores": "ptxas_spill_stores", "ptxas_spill_loads": "ptxas_spill_loads",
              "sass_maxlive": "sass_maxlive", "maxlive": "maxlive", "model_cycles": "model_cycles",
              "occupancy_warps": "occupancy_warps"}
#: the cache format version written under ``version`` (Kernel Tuner's cache schema 1.0.0)
KT_VERSION = "1.0.0"


def columns(rows: list[dict], header: list[str] | None = None) -> list[str]:
    """Every column any row has, in the order they first appear (no rows: ``header``, the store's columns),
    then the derived figures."""
    out: dict = dict.fromkeys(header or []) if not rows else {}
    for row in rows:
        out.update(dict.fromkeys(row))
    return [c for c in out if c not in DERIVED] + list(DERIVED)


def with_derived(row: dict) -> dict:
    """The row and its derived figures (None where the row has not what they need)."""
    return {**row, **{column: figure(name, row) for column, name in DERIVED.items()}}


def to_csv(rows: list[dict], header: list[str] | None = None) -> str:
    """The rows as CSV: one header line, one line a row; a column a row lacks (or None) is empty; ``header``:
    the columns of an export of no rows."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns(rows, header), lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in with_derived(row).items()})
    return out.getvalue()


def to_json(rows: list[dict], where: str | None = None) -> str:
    """The rows as one JSON object: the filter they were selected by, their count and the rows."""
    return json.dumps({"filter": where, "count": len(rows), "rows": [with_derived(r) for r in rows]}, indent=1) + "\n"


def write_parquet(rows: list[dict], path, header: list[str] | None = None) -> Path:
    """The rows as a Parquet file (typed columns as pyarrow infers them from the store's values)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RegtuneError("Parquet export needs pyarrow: pip install 'regtune[parquet]'") from None
    names = columns(rows, header)
    table = pa.Table.from_pylist([with_derived(r) for r in rows], schema=None) if rows else \
        pa.table({n: pa.array([], pa.null()) for n in names})
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.parquet-tmp"
    try:
        pq.write_table(table.select(names) if rows else table, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise RegtuneError(f"{path}: cannot write the Parquet file ({exc.strerror or exc}; nothing was written)") \
            from None
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _one(rows: list[dict], column: str) -> str:
    values = sorted({str(r.get(column)) for r in rows})
    if len(values) != 1:
        pick = next((v for v in values if v != "-"), values[0])     # '-': the analysis rows, no ptxas figure
        dash = f" ('-': rows with no {column}: the analysis only)" if "-" in values else ""
        raise RegtuneError(f"Kernel Tuner export: the rows cover {len(values)} values of {column} "
                           f"({', '.join(values[:6])}{', ...' if len(values) > 6 else ''}){dash}; a Kernel Tuner "
                           f"cache holds one; choose one with --filter \"{column} == '{pick}'\"")
    return values[0]


def _param(value):
    """A tunable parameter's value as Kernel Tuner keys it: ints stay ints; anything else a string without
    commas (a key joins the values with commas), so a tile [4, 8] is '4x8'.

    >>> _param(8), _param("[4, 8]"), _param((4, 8)), _param(None)
    (8, '4x8', '4x8', 'none')
    """
    if isinstance(value, bool) or not isinstance(value, int):
        text = "none" if value is None else (str(value) if not isinstance(value, (list, tuple)) else
                                              "x".join(str(v) for v in value))
        return text.replace(", ", "x").replace(",", "x").strip("[]()").replace(" ", "")
    return value


def kerneltuner_cache(rows: list[dict]) -> dict:
    """The Kernel Tuner cache of ``rows`` as a dict (``version, device_name, kernel_name, problem_size,
    tune_params_keys, tune_params, objective, cache``); a one-line error when the rows are not one kernel on one
    device, or two rows share their tunable parameters."""
    if not rows:
        raise RegtuneError("Kernel Tuner export: no rows (the store or the filter selected none)")
    workload, arch, toolchain = (_one(rows, c) for c in ("workload", "arch", "toolchain"))
    keys = [*CONFIG_FIELDS.get(workload, ()), *OPTION_FIELDS, *WORKLOAD_OPTIONS.get(workload, ())]
    measured = any(r.get("measured_ms") is not None for r in rows)
    objective = "time" if measured else "model_cycles"
    cache: dict = {}
    for row in rows:
        params = {k: _param(row.get(k)) for k in keys}
        key = ",".join(str(v) for v in params.values())
        if key in cache:
            raise RegtuneError(f"Kernel Tuner export: two rows have the tunable parameters {key} "
                               f"({', '.join(keys)}); narrow the rows with --filter")
        cache[key] = _entry(row, params, objective)
    tune_params = {k: sorted({e[k] for e in cache.values()}, key=lambda v: (isinstance(v, str), v)) for k in keys}
    device = arch if arch != "-" else "none (analysis only)"
    return {"version": KT_VERSION, "device_name": f"{device} (ptxas {toolchain})" if toolchain != "-" else device,
            "kernel_name": f"regtune_{workload}", "problem_size": [], "tune_params_keys": keys,
            "tune_params": tune_params, "objective": objective, "cache": cache}


def _entry(row: dict, params: dict, objective: str) -> dict:
    entry = {**params, **{k: row.get(c) for k, c in KT_FIGURES.items()}}
    if row.get("measured_ms") is not None:
        entry["time"] = row["measured_ms"]
    if row.get("error"):
        entry[objective] = "InvalidConfig"       # Kernel Tuner's word for a config that gave no result
        entry["error"] = row["error"]
    elif entry.get(objective) is None:
        entry[objective] = "RuntimeFailedConfig" if objective == "time" else "InvalidConfig"
    entry["timestamp"] = row.get("created")
    return entry


def kerneltuner_text(cache: dict) -> str:
    """A cache dict in Kernel Tuner's own layout: its header as ``process_cache`` dumps it, one line per entry as
    ``store_cache`` appends it, closed as ``close_cache`` closes it."""
    header = {k: v for k, v in cache.items() if k != "cache"}
    text = json.dumps({**header, "cache": {}}, indent="")[:-3]
    lines = ["\n" + json.dumps({key: entry})[1:-1] + "," for key, entry in cache["cache"].items()]
    return (text + "".join(lines))[:-1] + "}\n}" if lines else text + "}\n}"


def export(rows: list[dict], fmt: str, path, where: str | None = None, header: list[str] | None = None) -> Path:
    """Write ``rows`` to ``path`` in format ``fmt`` (one of :data:`FORMATS`); ``where``: the filter that chose them;
    ``header``: the columns a table of no rows has (the store's)."""
    if fmt not in FORMATS:
        raise RegtuneError(f"export format {fmt!r}: no such format (the formats: {', '.join(FORMATS)})")
    if fmt == "parquet":
        return write_parquet(rows, path, header)
    if fmt == "kerneltuner":
        return write_text_atomic(path, kerneltuner_text(kerneltuner_cache(rows)))
    return write_text_atomic(path, to_csv(rows, header) if fmt == "csv" else to_json(rows, where))
