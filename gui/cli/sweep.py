"""``regtune sweep gemm|mha``: every config of a space (or those a filter keeps), every allocator, into the store.

Invariant: every flag is checked (the filter parsed, the store opened, the cluster's workers' toolchains
compared) before any work starts; each finished chunk of configs is committed to the store as it arrives, so
Ctrl+C (or a kill) keeps every finished result and a second run computes only what is missing. Imports the engine
and kernels only inside :func:`cmd_sweep`, so ``regtune --help`` stays light.
"""

from __future__ import annotations

import os
import sys

from engine.base.errors import RegtuneError

#: what --filter reads per workload (each config's fields) and their types
FILTER_FIELDS = {"gemm": {"workload": "str", "m": "int", "n": "int", "k": "int"},
                 "mha": {"workload": "str", "heads": "int", "batch": "int", "head_dim": "int", "groups": "int"}}
DEFAULT_ARCHS = "sm_80,sm_90"


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def sweep_flags(p) -> None:
    from engine.base.limits import MAX_REGISTERS

    p.add_argument("workload", choices=["gemm", "mha"], help="the config space to sweep (gemm: 3,375; mha: 1,512)")
    p.add_argument("--filter", metavar="EXPR",
                   help="keep the configs this expression holds for, e.g. \"m <= 4 and n == k\" (fields: gemm m n k; "
                        "mha heads batch head_dim groups; == != < <= > >= in (..), and or not, parentheses)")
    p.add_argument("--tiles", default="default",
                   help="gemm: comma list of 'default' (25%% headroom under 255), 'fit' (under the budget) or TMxTN "
                        "(default: default)")
    p.add_argument("--schedules", default=None, help="gemm: comma list of load-all-first, k-outer, dot "
                                                     "(default k-outer)")
    p.add_argument("--strategies", default="none",
                   help="mha: comma list of strategy sets, each 'none' or names joined by '+', e.g. "
                        "none,fp16-softmax,fp16-softmax+head-shared (default none)")
    p.add_argument("--allocators", default=None, help="comma list (default: every allocator)")
    p.add_argument("--budgets", default=str(MAX_REGISTERS), help=f"comma list of budgets in 1..{MAX_REGISTERS} "
                                                                f"(default {MAX_REGISTERS})")
    p.add_argument("--arch", default=None, help=f"comma list for --compile/--numba (default {DEFAULT_ARCHS})")
    p.add_argument("--compile", action="store_true",
                   help="also ptxas on each plan's own PTX, at the plan cap and with no cap, and SASS MAXLIVE per arch")
    p.add_argument("--numba", action="store_true",
                   help="also the Numba kernel's ptxas figures (NVVM: about 3 s a plan)")
    p.add_argument("--jobs", type=_positive, default=None, help="local worker processes (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a Dask scheduler, e.g. tcp://host:8786 (pip install 'regtune[cluster]')")
    p.add_argument("--store", metavar="PATH",
                   help="the results store (default: sweeps.sqlite in the user data folder)")
    p.set_defaults(func=cmd_sweep)


def _positive(text: str) -> int:
    from gui.cli.common import positive

    return positive(text)


def _budgets(text: str) -> tuple[int, ...]:
    import argparse

    from gui.cli.common import budget

    try:
        values = tuple(sorted({budget(b) for b in _list(text)}))
    except argparse.ArgumentTypeError as exc:
        raise RegtuneError(f"--budgets: {exc}") from None
    if not values:
        raise RegtuneError("--budgets: give at least one budget")
    return values


def _n(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless one: '1 config', '0 configs', '16 rows'."""
    return f"{count} {noun}{'s' * (count != 1)}"


def _choices(flag: str, text: str | None, allowed, default) -> tuple:
    values = _list(text) if text is not None else list(default)
    for v in values:
        if v not in allowed:
            raise RegtuneError(f"{flag}: unknown {v!r} (known: {', '.join(allowed)})")
    if not values:
        raise RegtuneError(f"{flag}: give at least one")
    return tuple(dict.fromkeys(values))


def _tiles(text: str) -> list:
    from engine.workloads.gemm import parse_tile

    out = []
    for t in _list(text):
        if t == "default":
            out.append(None)
            continue
        try:
            parsed = parse_tile(t)
        except RegtuneError:
            raise RegtuneError(f"--tiles: {t!r} is not 'default', 'fit' or TMxTN with TM, TN in 1..16 "
                               "(e.g. 4x4)") from None
        out.append("fit" if parsed == "fit" else f"{parsed[0]}x{parsed[1]}")
    if not out:
        raise RegtuneError("--tiles: give at least one")
    return list(dict.fromkeys(out))


def _strategy_sets(text: str) -> list[tuple]:
    from engine.workloads.mha import STRATEGIES

    out = []
    for s in _list(text):
        names = () if s == "none" else tuple(sorted(set(s.split("+"))))
        for n in names:
            if n not in STRATEGIES:
                raise RegtuneError(f"--strategies: unknown strategy {n!r} (known: {', '.join(STRATEGIES)})")
        out.append(names)
    return list(dict.fromkeys(out)) or [()]


def tasks_of(args) -> list:
    """The sweep's tasks from its flags (checked; the filter parsed over the configs' fields, first: a mistyped
    filter is answered before numpy loads)."""
    from engine.base.query import parse_filter

    query = parse_filter(args.filter, FILTER_FIELDS[args.workload]) if args.filter is not None else None
    from engine.alloc import ALLOCATORS
    from engine.model.arch import ARCHS
    from engine.sweep import SweepTask
    from engine.workloads import workload_named
    from engine.workloads.gemm import DEFAULT_SCHEDULE, SCHEDULES

    w = workload_named(args.workload)
    allocators = _choices("--allocators", args.allocators, sorted(ALLOCATORS), sorted(ALLOCATORS))
    budgets = _budgets(args.budgets)
    archs = _choices("--arch", args.arch if args.arch is not None else DEFAULT_ARCHS, ARCHS, ())
    if args.arch is not None and not (args.compile or args.numba):
        print("regtune: note: no effect without --compile or --numba: --arch (an analysis row has no arch: '-')",
              file=sys.stderr)
    configs = [w.to_dict(c) for c in w.configs()]
    if query is not None:
        configs = [c for c in configs if query.matches({**c, "workload": w.name})]
        if not configs:
            raise RegtuneError(f"--filter {args.filter!r}: no {w.name} config matches")
    if w.name == "gemm":
        if args.strategies != "none":
            raise RegtuneError("--strategies is for mha; gemm takes --tiles and --schedules")
        option_sets = [(("schedule", s), ("tile", t)) for s in _choices("--schedules", args.schedules, SCHEDULES,
                                                                        (DEFAULT_SCHEDULE,))
                       for t in _tiles(args.tiles)]
        groups = [(c,) for c in sorted(configs, key=lambda c: -c["m"] * c["n"] * c["k"])]
    else:
        if args.schedules is not None or args.tiles != "default":
            raise RegtuneError("--tiles and --schedules are for gemm; mha takes --strategies")
        option_sets = [(("strategies", s),) for s in _strategy_sets(args.strategies)]
        by_program: dict = {}
        for c in configs:        # batch only sizes the grid: configs differing in batch share one program
            by_program.setdefault((c["heads"], c["head_dim"], c["groups"]), []).append(c)
        groups = [tuple(v) for k, v in sorted(by_program.items(), key=lambda kv: (-kv[0][1] * kv[0][2], kv[0]))]
    return [SweepTask(w.name, g, o, allocators, budgets, archs, args.compile, args.numba)
            for o in option_sets for g in groups]


def cmd_sweep(args) -> int:
    tasks = tasks_of(args)
    from engine.store import open_store
    from engine.sweep import SweepSummary, local_pool, run_sweep, stop_pool
    from gui.cli.progress import CommandProgress

    compiled = args.compile or args.numba
    if compiled:
        from kernels.sweep import task_rows, toolchain

        version = toolchain()
    else:
        from engine.sweep import task_rows

        version = "-"
    client = None
    if args.scheduler:
        if args.jobs is not None:
            raise RegtuneError("--jobs is for the local pool; a Dask cluster has its own workers")
        from kernels.sweep import check_workers, dask_client

        client = dask_client(args.scheduler)
        try:
            check_workers(client)
        except BaseException:
            client.close()
            raise
    store = open_store(args.store)
    workers = args.jobs or os.cpu_count()
    where = "Dask " + args.scheduler if client else f"{workers} local process{'es' * (workers != 1)}"
    summary = SweepSummary(len(tasks), 0, 0, 0.0, str(store.path))
    pool = client.get_executor() if client else local_pool(args.jobs)
    configs = sum(len(t.configs) for t in tasks)
    try:
        with CommandProgress("sweep") as progress:
            stage = progress.stage(f"{args.workload} configs ({where})", configs)
            run_sweep(task_rows, tasks, store, pool, stage, version, chunk=1 if compiled else 4, summary=summary)
    except BaseException as exc:
        if client is None:
            stop_pool(pool)
        else:
            client.close()
        store.close()
        if isinstance(exc, KeyboardInterrupt):
            print(f"regtune sweep: stopped: {_n(summary.rows_new, 'row')} new kept in {summary.path} "
                  f"({_n(summary.done, 'config')} finished); run it again to go on", file=sys.stderr, flush=True)
        raise
    if client is None:
        pool.shutdown()
    else:
        client.close()
    store.close()
    print(f"regtune sweep: {_n(summary.rows_new, 'row')} new, {_n(summary.skipped_configs, 'config')} skipped "
          f"(stored already), {_n(summary.done, 'config')} computed in {summary.seconds:.1f} s on {where}; "
          f"store: {summary.path}")
    return 0

