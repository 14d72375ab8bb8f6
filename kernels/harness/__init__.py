"""Kernel harnesses, registered under their workload's name: what a generated kernel module runs besides its kernel.

A harness is a Python file (``kernels/harness/gemm.py``, ``mha.py``) in two
parts split by :data:`MARKER`. Above it, what the parent process uses: the
constants a plan gives the kernel module (``constants(plan, trips)``, the
names in ``CONSTANTS``), optionally ``simulator_scope`` (its presence cuts
the kernel's loops for simulator runs), and stand-ins for the constants so
the file imports on its own. Below it, the text every kernel module of the
workload embeds: ``grid``, ``make_inputs``, ``check``, ``launch_args``,
``simulator_runs``, ``gpu_run``, ``main_run``, ``OUTPUT``, ``DEFAULT_BATCH``
(``check`` absent and ``NUMPY_REFERENCE = False`` without a numpy reference)
and optionally ``reference_shapes`` (a library batched matmul timed beside
the kernel). :mod:`kernels.worker` calls only these names.

Invariant: :data:`HARNESSES` maps a workload name to one :class:`Harness`;
a plan without a workload gets the ``program`` harness (``program.py``:
seeded inputs and the comparison with the program without its spill code,
no numpy reference). The constants a harness writes are numbers, passed
through ``int``/``float`` by :mod:`kernels.codegen`, so no plan text
reaches the embedded code.

Examples
--------
>>> sorted(HARNESSES)
['gemm', 'mha', 'program']
>>> "def check(" in HARNESSES["gemm"].text, "def constants(" in HARNESSES["gemm"].text
(True, False)
>>> {"M", "grid", "OUTPUT"} <= HARNESSES["gemm"].names
True
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.base.errors import RegtuneError

#: the line that starts the embedded part of a harness file
MARKER = "# -- embedded in the kernel module below this line --"


@dataclass(frozen=True)
class Harness:
    """One workload's harness.

    Attributes
    ----------
    name : the workload's name
    text : the embedded part (Python source)
    constants : ``(plan, trips) -> {NAME: int | float}``, the constants the text reads from the plan
    constant_names : the names ``constants`` returns
    simulator_scope : ``(kept, full) -> str`` when simulator runs cut the loops to a few trips; else None
    main : the template that ends its kernel modules (kernels/templates: ``main``, or ``main_program``)
    """

    name: str
    text: str
    constants: Callable
    constant_names: tuple = ()
    simulator_scope: Callable | None = None
    main: str = "main"

    @property
    def names(self) -> frozenset:
        """Every name the harness binds in a kernel module (its text's top level and its constants)."""
        return frozenset(bound_names(self.text)) | frozenset(self.constant_names)


def bound_names(text: str) -> set:
    """The names Python source binds at its top level (functions, classes, assignments, imports)."""
    names, statements = set(), list(ast.parse(text).body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            statements.extend(node.body + getattr(node, "orelse", []))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def from_module(name: str, module: types.ModuleType) -> Harness:
    """The harness a harness file defines (see the module docstring); its embedded part read from the file."""
    text = Path(module.__file__).read_text(encoding="utf-8")
    if text.count(MARKER) != 1:
        raise RegtuneError(f"{module.__file__}: a harness file needs the line {MARKER!r} exactly once")
    return Harness(name, text.split(MARKER)[1].lstrip("\n"), module.constants, tuple(module.CONSTANTS),
                   getattr(module, "simulator_scope", None), getattr(module, "MAIN_TEMPLATE", "main"))


#: workload name -> its kernel harness
HARNESSES: dict[str, Harness] = {}


def register(harness: Harness) -> Harness:
    """Add ``harness`` under its workload's name (which must be a registered workload, and not taken)."""
    from engine.workloads import workload_named

    workload_named(harness.name)
    if harness.name in HARNESSES:
        raise RegtuneError(f"a kernel harness for {harness.name!r} is registered already")
    HARNESSES[harness.name] = harness
    return harness


def unregister(name: str) -> None:
    """Remove the harness of workload ``name`` (a test's own workload, when the test ends)."""
    if name not in HARNESSES:
        raise RegtuneError(f"no kernel harness for {name!r} (known: {', '.join(sorted(HARNESSES))})")
    del HARNESSES[name]


def gpu_grid(plan) -> tuple[int, int] | None:
    """Blocks (all grid dimensions multiplied) and threads per block of the run a GPU times: the embedded
    ``gpu_run`` of the plan's harness, called with the plan's constants and without making its inputs;
    None for a plan without a harness.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  exit\\n")
    >>> gpu_grid(SimpleNamespace(workload={"kind": "gemm", "m": 8, "n": 8, "k": 8}, program=p,
    ...                          options={"matrices_per_block": 2, "threads_per_block": 128}))
    (32768, 128)
    """
    import math

    import numpy as np

    from engine.ir.cfg import loop_trips

    harness = harness_for(plan)
    if harness is None:
        return None
    options = plan.options or {}
    space = {"np": np, "math": math, "WORKLOAD": dict(plan.workload), "PARAMS": (),
             "THREADS_PER_BLOCK": int(options.get("threads_per_block", 128)),
             **harness.constants(plan, loop_trips(plan.program))}
    exec(compile(harness.text, f"<harness {harness.name}>", "exec"), space)  # noqa: S102 - our own harness file, no plan text
    space["make_inputs"] = lambda *args, **kwargs: None                        # the grid needs no inputs
    blocks, threads = space["gpu_run"]({})["grid"]
    return math.prod(blocks) if isinstance(blocks, tuple) else int(blocks), int(threads)


def harness_for(plan) -> Harness | None:
    """The harness of the plan's workload (a plan without a workload: the program file's); None without one."""
    return HARNESSES.get((plan.workload or {}).get("kind", "program"))


from kernels.harness import gemm, mha, program  # noqa: E402,F401  (registration)
