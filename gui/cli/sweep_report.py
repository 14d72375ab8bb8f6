"""``regtune report sweep`` and ``regtune export sweep``: a sweep store's rows as a Markdown report with PNG plots,
or as CSV, JSON, Parquet or a Kernel Tuner cache (engine/sweep_export.py).

Invariant: every number in the report is computed here from the rows the store returned for the filter, and
each section names how many rows (and configs) it covered; a section whose figures no row has (no compiled
rows, one budget only) says so instead of drawing an empty plot. The plots use matplotlib's Agg backend,
imported when a report is made: no screen, never Qt (an import-linter contract).
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from pathlib import Path

from engine.base.errors import RegtuneError
from engine.base.files import check_writable, write_text_atomic
from engine.sweep_figures import spills_at_limit

#: the design note's claim: naive allocation needs 2.3x to 4.7x the registers of the best allocator
NOTE_RATIO = (2.3, 4.7)
#: "ptxas predicted": within this many registers of the plan's count
WITHIN = 4
#: the configs listed by name under each schedule in the spills-at-255 section (the rest counted)
LISTED = 20


def _stats(values) -> str:
    return f"{min(values):.2f}x / {statistics.median(values):.2f}x / {max(values):.2f}x"


def _share(part: int, whole: int) -> str:
    return f"{part:,} of {whole:,} ({part / whole:.1%})" if whole else "none of 0"


def _plan_key(row: dict) -> tuple:
    """What one plan of a config is: the config, its options, allocator and budget (not arch, cap, toolchain)."""
    return row.get("config"), row.get("options"), row.get("tile"), row.get("schedule"), row.get("strategies"), \
        row.get("allocator"), row.get("budget")


def plans(rows: list[dict]) -> list[dict]:
    """One row per plan (:func:`_plan_key`), the first the store returned, error rows left out: the planned
    figures are the same at every arch, cap and toolchain."""
    seen: dict = {}
    for row in rows:
        if not row.get("error"):
            seen.setdefault(_plan_key(row), row)
    return list(seen.values())


def configs_at(rows: list[dict], budget: int = 255) -> list[dict]:
    """One plan row per (config, options) at ``budget``: the naive/best figures are the config's."""
    seen: dict = {}
    for row in plans(rows):
        if row.get("budget") == budget and row.get("naive_registers") is not None and row.get("best_registers"):
            seen.setdefault(_plan_key(row)[:5], row)
    return list(seen.values())


class Plots:
    """The report's PNG files, written into ``folder`` by matplotlib's Agg backend (each through a temporary
    file and a rename)."""

    def __init__(self, folder: Path):
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt

        self.plt, self.folder, self.written = plt, folder, []

    def figure(self, width=7.0, height=4.0):
        return self.plt.subplots(figsize=(width, height), dpi=100)

    def save(self, fig, name: str) -> str:
        path = self.folder / name
        tmp = self.folder / f".{name}.{os.getpid()}.tmp.png"
        fig.tight_layout()
        try:
            fig.savefig(tmp)
            os.replace(tmp, path)
        except OSError as exc:
            raise RegtuneError(f"{path}: cannot write the plot ({exc.strerror or exc})") from None
        finally:
            self.plt.close(fig)
            tmp.unlink(missing_ok=True)
        self.written.append(path)
        return name


def _count_axis(ax) -> None:
    """A y axis of config counts: from 0, whole numbers only (never -0.04 or 0.25 configs)."""
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))


def registers_section(rows: list[dict], plots: Plots) -> list[str]:
    """Planned registers per config, each allocator (budget 255)."""
    at = [r for r in plans(rows) if r.get("budget") == 255 and r.get("registers") is not None]
    if not at:
        return ["## Registers per config", "", "No plan rows at budget 255: nothing to show.", ""]
    by_alloc: dict = defaultdict(dict)
    for r in at:
        by_alloc[r["allocator"]][_plan_key(r)[:5]] = r["registers"]
    order = sorted({k for d in by_alloc.values() for k in d},
                   key=lambda k: (min(d.get(k, 999) for d in by_alloc.values()), k[0] or ""))
    fig, ax = plots.figure(9, 4)
    for name in sorted(by_alloc):
        xs = [i for i, k in enumerate(order) if k in by_alloc[name]]
        ax.plot(xs, [by_alloc[name][order[i]] for i in xs], ".", markersize=3, label=name)
    ax.axhline(255, color="grey", lw=0.8, ls="--", label="the 255 limit")
    ax.set(xlabel="config (sorted by the fewest registers any allocator gave it)", ylabel="planned registers",
           title=f"Planned registers per config, budget 255 ({len(order):,} configs)")
    ax.legend(fontsize=8)
    name = plots.save(fig, "registers_per_config.png")
    lines = ["## Registers per config", "", f"Budget 255, {len(order):,} configs ({len(at):,} plan rows).", "",
             f"![planned registers per config]({name})", "",
             "| allocator | configs | registers min / median / max | configs that spill |", "|---|---|---|---|"]
    for alloc in sorted(by_alloc):
        values = list(by_alloc[alloc].values())
        spilling = sum(1 for r in at if r["allocator"] == alloc and (r.get("spilled") or 0) > 0)
        lines.append(f"| {alloc} | {len(values):,} | {min(values)} / {statistics.median(values):g} / {max(values)} "
                     f"| {spilling:,} |")
    return lines + [""]


def ratio_section(rows: list[dict], plots: Plots) -> list[str]:
    """The naive/best ratio's distribution over the configs, against the design note's 2.3x-4.7x."""
    at = configs_at(rows)
    head = ["## Naive registers / the best allocator's", ""]
    if not at:
        return head + ["No config has naive and best registers at budget 255: nothing to show.", ""]
    capped = [r["naive_registers"] / r["best_registers"] for r in at]
    demand = [r["naive_demand"] / r["best_registers"] for r in at if r.get("naive_demand") is not None]
    lo, hi = NOTE_RATIO
    fig, ax = plots.figure()
    same = sorted(demand) == sorted(capped)     # naive never reached 255: two identical bars, one olive blend
    ax.hist(capped, bins=40, alpha=0.7, label="naive registers / best (capped and uncapped: the same here)"
            if same else "naive registers (capped at 255) / best")
    if demand and not same:
        ax.hist(demand, bins=40, alpha=0.5, label="naive demand (uncapped) / best")
    ax.axvspan(lo, hi, color="green", alpha=0.12, label=f"the design note's {lo}x-{hi}x")
    ax.set(xlabel="ratio", ylabel="configs", title=f"Naive / best registers over {len(at):,} configs")
    _count_axis(ax)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)     # room above the tallest bar for the legend
    ax.legend(fontsize=8)
    name = plots.save(fig, "naive_best_ratio.png")
    lines = head + [(f"Over {len(at):,} configs at budget 255 (best: fewest registers of the allocators other than naive, "
                    "fewest spills first, as the store's best_registers column). The design note claims "
                    f"{lo}x to {hi}x (engine/claims.py measures the same ratio on the default options)."), "",
                    f"![naive/best ratio]({name})", "",
                    "| measure | min / median / max | inside 2.3x-4.7x |", "|---|---|---|",
                    (f"| naive registers (capped at 255) / best | {_stats(capped)} | "
                    f"{_share(sum(lo <= v <= hi for v in capped), len(capped))} |")]
    if demand:
        lines.append(f"| naive demand (uncapped) / best | {_stats(demand)} | "
                     f"{_share(sum(lo <= v <= hi for v in demand), len(demand))} |")
    return lines + [""]


def _groups(rows: list[dict], fields: tuple) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(tuple(str(r.get(f)) for f in fields), []).append(r)
    return dict(sorted(out.items()))


def _ptxas_spills(row: dict) -> int:
    return (row.get("ptxas_spill_stores") or 0) + (row.get("ptxas_spill_loads") or 0)


def ptxas_section(rows: list[dict], plots: Plots) -> list[str]:
    """Planned registers against ptxas's with no cap (a scatter per arch), and how often ptxas at the plan's cap
    fits without spilling."""
    head = ["## The plan against ptxas", ""]
    free = [r for r in rows if r.get("cap") == "none" and r.get("ptxas_registers") is not None
            and r.get("registers") is not None and not r.get("error")]
    capped = [r for r in rows if r.get("cap") == "plan" and r.get("ptxas_registers") is not None and not r.get("error")]
    if not free and not capped:
        return head + ["No compiled rows (the store has no ptxas figures: run `regtune sweep --compile`).", ""]
    lines = head
    if free:
        fig, ax = plots.figure(5.5, 5)
        for (alloc, arch), mine in _groups(free, ("allocator", "arch")).items():
            ax.scatter([r["registers"] for r in mine], [r["ptxas_registers"] for r in mine], s=6, alpha=0.6,
                       marker="o" if arch == min(r["arch"] for r in free) else "x", label=f"{alloc} ({arch})")
        top = max(max(r["registers"], r["ptxas_registers"]) for r in free)
        ax.plot([0, top], [0, top], color="grey", lw=0.8, label="ptxas = plan")
        ax.fill_between([0, top], [-WITHIN, top - WITHIN], [WITHIN, top + WITHIN], color="green", alpha=0.12,
                        label=f"within \u00b1{WITHIN}")
        ax.set(xlabel="planned registers", ylabel="ptxas registers (no cap)",
               title=f"Plan against ptxas, cap 'none' ({len(free):,} rows)")
        ax.legend(fontsize=8)
        name = plots.save(fig, "plan_vs_ptxas.png")
        gaps = [r["ptxas_registers"] - r["registers"] for r in free]
        near = sum(abs(g) <= WITHIN for g in gaps)
        lines += [(f"ptxas on the plan's own PTX with no -maxrregcount, {len(free):,} rows "
                  f"({', '.join(sorted({r['arch'] for r in free}))})."), "", f"![plan against ptxas]({name})", "",
                  f"- ptxas within \u00b1{WITHIN} registers of the plan: {_share(near, len(free))}.",
                  f"- ptxas minus plan: min {min(gaps)}, median {statistics.median(gaps):g}, max {max(gaps)}.", "",
                  ("| allocator | arch | rows | ptxas within \u00b14 | ptxas minus plan min / median / max | "
                   "ptxas at cap 'plan' without spilling |"), "|---|---|---|---|---|---|"]
        fits = _groups(capped, ("allocator", "arch"))
        for (alloc, arch), mine in _groups(free, ("allocator", "arch")).items():
            g = [r["ptxas_registers"] - r["registers"] for r in mine]
            at_cap = fits.get((alloc, arch), [])
            lines.append(f"| {alloc} | {arch} | {len(mine):,} | {_share(sum(abs(x) <= WITHIN for x in g), len(g))} | "
                         f"{min(g)} / {statistics.median(g):g} / {max(g)} | "
                         f"{_share(sum(not _ptxas_spills(r) for r in at_cap), len(at_cap))} |")
        lines.append("")
    if capped:
        fits = sum(1 for r in capped if not _ptxas_spills(r))
        lines.append(f"- ptxas held to the plan's count (cap 'plan') without spilling: {_share(fits, len(capped))} "
                     "rows.")
    return lines + [""]


def cliff_section(rows: list[dict], plots: Plots) -> list[str]:
    """Planned registers and spills against the budget, per allocator (the spill cliff)."""
    ps = [r for r in plans(rows) if r.get("registers") is not None]
    budgets = sorted({r["budget"] for r in ps if r.get("budget") is not None})
    head = ["## Spill cliffs: registers and spills against the budget", ""]
    if len(budgets) < 2:
        return head + [(f"The rows have {len(budgets)} budget{'s' * (len(budgets) != 1)} "
                       f"({', '.join(map(str, budgets)) or 'none'}): a cliff needs a sweep over several "
                       "(`regtune sweep --budgets ...`)."), ""]
    allocs = sorted({r["allocator"] for r in ps})
    fig, (top, bottom) = plots.plt.subplots(2, 1, figsize=(7, 6), dpi=100, sharex=True)
    table = ["| allocator | budget | plans | median registers | plans that spill | median spilled values |",
             "|---|---|---|---|---|---|"]
    for alloc in allocs:
        regs, share = [], []
        for b in budgets:
            at = [r for r in ps if r["allocator"] == alloc and r["budget"] == b]
            if not at:
                regs.append(float("nan"))
                share.append(float("nan"))
                continue
            spilling = [r for r in at if (r.get("spilled") or 0) > 0]
            regs.append(statistics.median(r["registers"] for r in at))
            share.append(len(spilling) / len(at))
            table.append(f"| {alloc} | {b} | {len(at):,} | {regs[-1]:g} | {_share(len(spilling), len(at))} | "
                         f"{statistics.median(r.get('spilled') or 0 for r in at):g} |")
        top.plot(budgets, regs, "o-", ms=3, label=alloc)
        bottom.plot(budgets, share, "o-", ms=3, label=alloc)
    top.set(ylabel="median planned registers", title=f"Spill cliffs over {len(ps):,} plans")
    bottom.set(xlabel="budget (registers per thread)", ylabel="share of plans that spill")
    top.legend(fontsize=8)
    name = plots.save(fig, "spill_cliffs.png")
    return head + [f"{len(ps):,} plans over budgets {', '.join(map(str, budgets))}.", "", f"![spill cliffs]({name})",
                   "", *table, ""]


def _schedule(row: dict) -> str:
    """A row's schedule in the report's words: GEMM's schedule option; MHA has none (its loop order is fixed).

    >>> _schedule({"workload": "gemm", "schedule": "k-outer"}), _schedule({"workload": "mha", "schedule": None})
    ('k-outer', 'mha (no schedule option)')
    """
    schedule = row.get("schedule")
    return str(schedule) if schedule is not None else f"{row.get('workload')} (no schedule option)"


def limit_section(rows: list[dict], plots: Plots) -> list[str]:
    """The configs whose plans spill at the 255 limit, under each schedule."""
    at = [r for r in plans(rows) if r.get("budget") == 255]
    head = ["## Configs that spill at the 255 limit, by schedule", ""]
    if not at:
        return head + ["No plan rows at budget 255.", ""]
    schedules = sorted({_schedule(r) for r in at})
    allocs = sorted({r["allocator"] for r in at})
    lines = head + [f"{len(at):,} plans at budget 255.", "",
                    "| schedule | configs | " + " | ".join(f"{a} spills" for a in allocs) + " |",
                    "|---|---|" + "---|" * len(allocs)]
    counts: dict = {}
    for s in schedules:
        mine = [r for r in at if _schedule(r) == s]
        configs = {r["config"] for r in mine}
        counts[s] = [len({r["config"] for r in mine if r["allocator"] == a and spills_at_limit(r)}) for a in allocs]
        lines.append(f"| {s} | {len(configs):,} | " + " | ".join(f"{c:,}" for c in counts[s]) + " |")
    fig, ax = plots.figure()
    width = 0.8 / max(len(allocs), 1)
    for i, a in enumerate(allocs):
        ax.bar([j + i * width for j in range(len(schedules))], [counts[s][i] for s in schedules], width, label=a)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(schedules))], schedules)
    ax.set(ylabel="configs that spill at 255", title="Configs spilling at the 255 limit")
    _count_axis(ax)
    if not any(any(c) for c in counts.values()):
        ax.text(0.5, 0.5, "no config spills at 255", transform=ax.transAxes, ha="center", va="center")
    ax.legend(fontsize=8)
    lines += ["", f"![spills at 255]({plots.save(fig, 'spills_at_255.png')})", ""]
    for s in schedules:
        best = sorted({r["config"] for r in at if _schedule(r) == s and r["allocator"] != "naive"
                       and spills_at_limit(r)})
        shown = ", ".join(best[:LISTED]) + (f" and {len(best) - LISTED:,} more" if len(best) > LISTED else "")
        lines.append(f"- {s}: {len(best):,} configs spill at 255 under an allocator other than naive"
                     + (f": {shown}." if best else "."))
    return lines + [""]


def sweep_report(rows: list[dict], folder, store: str, where: str | None) -> str:
    """Write the report's plots into ``folder`` and return its Markdown (``store``: the store's path, ``where``:
    the filter the rows were selected by, both named in the report)."""
    folder = Path(folder)
    plots = Plots(folder)
    errors = sum(1 for r in rows if r.get("error"))
    chosen = f"Store `{store}`, filter `{where}`" if where else f"Store `{store}`, every row (no filter)"
    lines = ["# RegTune sweep report", "",
             (f"{chosen}: {len(rows):,} rows, {len({r.get('config') for r in rows}):,} configs"
             f" ({', '.join(sorted({str(r.get('workload')) for r in rows}))}), {_share(errors, len(rows))} rows with "
             "an error (left out below). Archs: "
             f"{', '.join(sorted({str(r.get('arch')) for r in rows}))}; toolchains: "
             f"{', '.join(sorted({str(r.get('toolchain')) for r in rows}))}. Every figure below is computed from "
             "these rows; model figures are labelled as models, and none is measured on a GPU unless it says so."), ""]
    if not rows:
        return "\n".join(lines + ["The store has no rows for this filter: nothing to report.", ""])
    for section in (registers_section, ratio_section, ptxas_section, cliff_section, limit_section):
        lines += section(rows, plots)
    return "\n".join(lines)


def cmd_report_sweep(args) -> int:
    from engine.store import open_store

    folder = Path(args.out or "sweep-report")
    if folder.exists() and not folder.is_dir():
        raise RegtuneError(f"--out '{folder}': a file, not a folder (the report is report.md and its PNGs)")
    with open_store(args.store, readonly=True) as store:      # a bad store or filter: nothing made yet
        rows = store.rows(args.filter)
        where = store.path
    folder.mkdir(parents=True, exist_ok=True)
    check_writable(folder / "report.md", "--out")
    text = sweep_report(rows, folder, str(where), args.filter)
    write_text_atomic(folder / "report.md", text)
    print(f"sweep report of {len(rows):,} rows -> {folder / 'report.md'} (and its plots in {folder})")
    return 0


def cmd_export_sweep(args) -> int:
    from engine.store import open_store
    from engine.sweep_export import export

    check_writable(args.out, "--out")
    with open_store(args.store, readonly=True) as store:
        rows = store.rows(args.filter)
    export(rows, args.format, args.out, args.filter, header=store.row_columns())
    print(f"{len(rows):,} rows{f' ({args.filter})' if args.filter else ''} -> {args.out} ({args.format})")
    return 0


def store_flags(p) -> None:
    """``--store`` and ``--filter``, as every command that reads the store takes them."""
    p.add_argument("--store", help="the sweep store (SQLite; default: the user data directory's sweeps.sqlite)")
    p.add_argument("--filter", metavar="EXPR",
                   help="rows to take, in the sweep filter language (e.g. \"workload == 'gemm' and m <= 4\")")


def export_flags(p) -> None:
    from engine.sweep_export import FORMATS

    p.add_argument("which", choices=["sweep"], help="sweep: a sweep store's rows")
    store_flags(p)
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="csv, json, parquet (pyarrow: regtune[parquet]) or kerneltuner (a Kernel Tuner cache file)")
    p.add_argument("--out", required=True, help="the file to write")
    p.set_defaults(func=cmd_export_sweep)
