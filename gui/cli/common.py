"""What the command's two halves share: argument types, the program a command's flags build, a plan file
admitted as every command admits it, one-line messages.

Invariant: Qt-free, and it imports the engine and kernels only inside the functions that use them, so the
command's start stays as light as :mod:`gui.cli.main` promises.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from engine.base.errors import RegtuneError
from engine.base.fields import digits, excerpt
from engine.base.limits import CHECK_SECONDS, MAX_REGISTERS

if TYPE_CHECKING:
    from engine.ir.core import Program


def one_line(text: str, limit: int = 400) -> str:
    """A message as one line of at most ``limit`` characters, control characters escaped."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line, like every other error."""

    def error(self, message):
        raise RegtuneError(f"{self.prog}: {message} (see --help)")


def read_program(path: str) -> Program:
    """Parse a program file, naming the file in every error."""
    from engine.workloads.program import read

    return read(path)[0]


def budget(text: str) -> int:
    """An argparse type: a register budget in 1..255 (NVIDIA's limit per thread)."""
    if not digits(text.strip()) or not 1 <= int(text) <= MAX_REGISTERS:
        raise argparse.ArgumentTypeError(f"a register budget is an integer in 1..{MAX_REGISTERS}, "
                                         f"got {excerpt(text)}")
    return int(text)


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    if not digits(text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 1, got {excerpt(text)}")
    return int(text)


def seconds(text: str) -> float:
    """An argparse type: a time limit in seconds, above 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e7:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {excerpt(text)}")
    return value


def gemm_config(text: str) -> dict:
    """``MxNxK`` (each 2..16) as a GEMM workload dict, e.g. ``8x8x8``."""
    from engine.workloads.gemm import Gemm, parse_sizes

    sizes = parse_sizes(text, 3, 2, 16)
    if sizes is None:
        raise RegtuneError(f"--gemm must be MxNxK with M, N, K in 2..16, e.g. 8x8x8; got {excerpt(text)}")
    return Gemm(*sizes).as_dict()


def built_from_flags() -> list:
    """The workloads a command builds from its name and flags (every registered one that has flags)."""
    from engine.workloads import WORKLOADS

    return [w for w in WORKLOADS.values() if w.flags]


def workload_program(args) -> tuple[Program, dict, dict]:
    """Program, workload and options from a file path or a workload's name (gemm, mha, ...) plus its flags.

    Flags that leave the per-thread program as it is (another workload's
    flags, a config field the program does not depend on, a strategy that
    does nothing to it, ``--budget`` where only ``--tile fit`` reads it) are
    named in one line on stderr (:func:`gui.cli.effects.no_effect_line`).
    """
    from engine.workloads import WORKLOADS, workload_named
    from engine.workloads.program import read
    from gui.cli.effects import no_effect_line

    given = set(getattr(args, "given", ()))
    w = WORKLOADS.get(args.source)
    if w is None or not w.flags:
        program, config = read(args.source)
        note(no_effect_line(args, given, None, None, None))
        return program, workload_named("program").to_dict(config), {}
    values = {**{f.dest: f.default for f in w.flags}, **vars(args)}
    missing = [f.name for f in w.flags if f.required and values.get(f.dest) is None]
    if missing:
        raise RegtuneError(f"{args.source} needs {', '.join(missing)}")
    config, options = w.from_flags(values)
    options = options.with_(budget=budget_of(args))
    program, built = w.build(config, options)
    note(no_effect_line(args, given, w, config, options, program))
    return program, w.to_dict(config), built


def budget_of(args) -> int:
    return MAX_REGISTERS if getattr(args, "budget", None) is None else args.budget


def note(line: str) -> None:
    if line:
        print(f"regtune: note: {line}", file=sys.stderr, flush=True)


class Given(argparse.Action):
    """Stores a workload flag's value and remembers that the user gave it (``args.given``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        namespace.given = [*getattr(namespace, "given", []), self.dest]


def workload_flags(p) -> None:
    names = " / ".join(f"'{w.name}'" for w in built_from_flags())
    p.add_argument("source", help=f"program file in RegTune's IR text form, or {names} with the flags below")
    for w in built_from_flags():
        g = p.add_argument_group(w.title)
        for f in w.flags:
            if f.switch:
                g.add_argument(f.name, dest=f.dest, action=Given, nargs=0, default=bool(f.default), help=f.help)
            else:
                g.add_argument(f.name, dest=f.dest, action=Given, type=f.type, default=f.default, help=f.help)


def setting(workload: dict, options: dict) -> str:
    """`` (gemm 8x8x8, tile 4x4, schedule k-outer)`` after a name; nothing for a program file (its kernel
    name is all there is to say)."""
    from engine.workloads import setting_label

    return f" ({setting_label(workload, options)})" if workload and workload.get("kind") != "program" else ""


def admit_plan(path: str, check_seconds: float = CHECK_SECONDS):
    """A plan file as ``check``, ``build``, ``budget-sweep`` and ``compare --plan`` all accept it: well formed,
    every field in range, no register conflict, the spill map and spill code agreeing (:func:`engine.planfile.load_plan`),
    proved by the symbolic checker, proved to be its workload's program and its execution check passed
    (:func:`engine.admit.admit`; the execution check within ``check_seconds``), and a kernel module can be written from it (names and numbers pass codegen's checks); else a one-line
    error: its :class:`engine.admit.Admission`. The execution check draws its inputs from the plan's workload
    (:func:`engine.workloads.input_model`)."""
    from engine.admit import admit
    from kernels.codegen import KernelError, kernel_source

    admitted = admit(path, check_seconds)
    try:
        kernel_source(admitted.plan)
    except KernelError as exc:
        raise KernelError(f"{path}: a valid allocation, but no kernel can be written from it: {exc}") from None
    return admitted
