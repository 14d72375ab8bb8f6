"""The ``regtune`` console script's entry point: Ctrl+C during start-up is one line too.

Invariant: this module imports nothing at its top but ``sys``; :func:`main`
imports everything else (``signal`` and the command included) inside the
``try`` that turns Ctrl+C into one line, so an interrupt while the modules
load is reported like any other. Python's own SIGINT handler (a
``KeyboardInterrupt``) is in place before any of our code runs; SIGTERM's
is the first thing :func:`main` installs. What is left outside: the
interpreter's start-up (``site`` and its ``.pth`` hooks, numba-cuda's
among them, run before this module: a Ctrl+C there is Python's "Fatal
Python error"), the import of this module and the call of :func:`main`
itself (about a millisecond, measured with ``-X importtime``). ``--version``, ``--help`` and a
mistyped command import neither numpy nor networkx nor numba
(gui.cli.main fills in a command's parser only when it is chosen).
"""

from __future__ import annotations

import sys


def _terminate(signum, frame):
    from gui.cli.interrupt import Terminated

    raise Terminated()


def _gui(args) -> int:
    from engine.admit import admit
    from gui.qt.qt_app import run_gui

    if args.plan:
        admit(args.plan)   # a bad plan is one line here, before any window opens
    return run_gui(args.plan)


def _mha_config(args) -> tuple[dict, dict]:
    """``screenshot --mha``'s workload and session options, checked as the other commands check them."""
    from engine.base.errors import RegtuneError
    from engine.workloads import check_workload, workload_named
    from gui.model.session import session_options

    mha = workload_named("mha")
    missing = [f.name for f in mha.flags if f.required and getattr(args, f.dest) is None]
    if missing:
        raise RegtuneError(f"--mha needs {', '.join(missing)}")
    config, options = mha.from_flags({**vars(args), "projection": False})
    workload = check_workload(mha.to_dict(config), {}, "--mha")[0]
    return workload, session_options({"strategies": list(options.strategies), "bc": options.bc}, "--mha")


def _screenshot_workload(args) -> tuple[dict | None, dict | None]:
    from engine.base.errors import RegtuneError
    from engine.workloads import workload_named
    from gui.cli.common import gemm_config

    mha_flags = [f.name for f in workload_named("mha").flags
                 if not f.switch and getattr(args, f.dest) not in (None, f.default)]
    chosen = [flag for flag, given in (("--plan", args.plan), ("--gemm", args.gemm), ("--mha", args.mha)) if given]
    if len(chosen) > 1:
        raise RegtuneError(f"{' and '.join(chosen)}: choose one thing to show")
    if mha_flags and not args.mha:
        raise RegtuneError(f"{', '.join(mha_flags)} describe an MHA config: add --mha")
    if args.mha:
        return _mha_config(args)
    return (gemm_config(args.gemm) if args.gemm else None), None


def screenshot_size(text: str) -> tuple[int, int]:
    """``--size WxH``: two whole numbers of pixels, 320..8192 each.

    Examples
    --------
    >>> screenshot_size("1280x800")
    (1280, 800)
    """
    from engine.base.errors import RegtuneError

    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and 320 <= int(p) <= 8192 for p in parts):
        raise RegtuneError(f"--size {text}: give WIDTHxHEIGHT in pixels, each 320..8192 (e.g. 1500x950)")
    return int(parts[0]), int(parts[1])


def _screenshot_arch(args, options):
    """``--arch``: one of the architectures a build measures (the sass view shows those), into the options."""
    from engine.base.errors import RegtuneError
    from engine.model.arch import DEFAULT_BUILD_ARCHS

    if args.arch is None:
        return options
    if args.arch not in DEFAULT_BUILD_ARCHS:
        raise RegtuneError(f"--arch {args.arch}: unknown architecture for the window (known: "
                           f"{', '.join(DEFAULT_BUILD_ARCHS)})")
    if args.plan:
        raise RegtuneError("--arch and --plan: a plan file names its own architecture")
    from engine.workloads import BuildOptions

    return (options or BuildOptions()).with_(arch=args.arch)


def _screenshot_outs(args) -> list[tuple[str, str]]:
    """(view, PNG path) of each picture to write, every path tried before any work."""
    from engine.base.files import check_writable
    from gui.cli.kernels import _out_dir

    if args.out is not None:
        check_writable(args.out, "--out")
        return [(args.view, args.out)]
    folder = _out_dir(args.out_dir)
    views = ["all", "timeline", "graph", "compare", "sass", "sweep", "diff", *(["store"] if args.store else [])] \
        if args.view == "all" else [args.view]
    outs = [(v, str(folder / f"{'window' if v == 'all' else v}.png")) for v in views]
    for _v, path in outs:
        check_writable(path, "--out-dir")
    return outs


def _check_select(args, workload: dict | None, options) -> None:
    """``--select``: a value of the program shown (or one spill code makes of it), checked on the program alone,
    before any plan is made (the plans' own spill names are checked again when they exist)."""
    if args.select is None:
        return
    from engine.base.errors import RegtuneError
    from engine.workloads import config_label
    from engine.workloads.roles import base_name
    from gui.model.session import DEFAULT_OPTIONS, DEFAULT_WORKLOAD, build_workload

    name = args.select.removeprefix("%")
    if args.plan:
        from engine.planfile import load_plan

        program, label = load_plan(args.plan).program, args.plan
    else:
        workload = workload or DEFAULT_WORKLOAD
        program = build_workload(workload, options or DEFAULT_OPTIONS)[0]
        label = f"the {config_label(workload)} program"
    if base_name(name) not in program.values:
        raise RegtuneError(f"--select {args.select}: {label} has no value %{base_name(name)}")


def _screenshot(args) -> int:
    """Every flag checked before Qt is imported (no window, no plan, until all of them hold)."""
    from engine.admit import admit

    size = screenshot_size(args.size)
    from engine.base.errors import RegtuneError

    if args.view not in ("timeline", "graph", "compare", "sass", "sweep", "diff", "store", "all"):
        raise RegtuneError(f"--view {args.view}: unknown view (timeline, graph, compare, sass, sweep, diff, store, "
                           "all)")
    if args.store:
        from engine.store import open_store

        with open_store(args.store, readonly=True) as store:   # a missing store or a bad filter: one line, no window
            store.count(args.filter)
    elif args.view == "store":
        raise RegtuneError("--view store: needs --store PATH (the sweep store the view shows)")
    workload, options = _screenshot_workload(args)
    options = _screenshot_arch(args, options)
    outs = _screenshot_outs(args)
    if args.plan:
        admit(args.plan)   # a bad plan is one line here, before the window is made
    _check_select(args, workload, options)
    from gui.qt.qt_app import screenshot

    for path in screenshot(outs, args.plan, workload=workload, options=options, build=args.build,
                           current=args.current, select=args.select, register=args.register,
                           instruction=args.instruction, size=size, store=args.store, store_filter=args.filter):
        print(path)
    return 0


#: the commands that open the window, for :func:`gui.cli.main.main`
WINDOW = {"gui": _gui, "screenshot": _screenshot}


def command(argv=None) -> int:
    """One ``regtune`` command, the window's included (no process set-up: for tests and embedding)."""
    from gui.cli.main import main as run

    return run(argv, window=WINDOW)


def main(argv=None) -> int:
    """Import the command and run it; one line and exit 130 on Ctrl+C (143 on SIGTERM) at any point."""
    try:
        import signal

        import gui.cli.interrupt  # noqa: F401 (loaded before the SIGTERM handler that raises its Terminated)

        signal.signal(signal.SIGTERM, _terminate)      # once, where the process starts
        from engine.base.process import configure_process

        configure_process()
        return command(argv)
    except KeyboardInterrupt as exc:
        from gui.cli.interrupt import interrupted

        return interrupted(exc)


if __name__ == "__main__":
    sys.exit(main())
