"""Which of the flags a user gave leave the per-thread program as it is, named in one line.

Invariant: a flag is named only when that was shown: another workload's
flag is never read; a config field is named when the program is the same
text for every value of its config space; a strategy when the program is
the same text without it; ``--budget`` of ``program`` and ``analyze`` when
the program is the same at the architecture's limit. Nothing is named by a
rule written down beside the workloads, so a workload that changes keeps
the line true.

Examples
--------
>>> import argparse
>>> args = argparse.Namespace(command="analyze", source="gemm", heads=32)
>>> no_effect_line(args, {"heads"}, None, None, {})
"no effect on the per-thread program: --heads (a flag of mha; the source is 'gemm')"
"""

from __future__ import annotations

import dataclasses

from engine.base.errors import RegtuneError
from engine.ir.core import print_program
from engine.base.limits import MAX_REGISTERS
from engine.workloads import WORKLOADS

#: the commands whose --budget only builds the program (the others allocate with it)
BUDGET_BUILDS_ONLY = ("program", "analyze")


def no_effect_line(args, given: set, w, config, options: dict, program=None) -> str:
    """One line naming the given flags with no effect on ``program`` (``w``: the workload built, None for a
    program file), or '' when every given flag had one."""
    named = _foreign(args, given, w)
    if w is None and _budget_given(args):
        named.append("--budget (a program file is read as it is)")
    if w is not None and program is not None:
        text = print_program(program)
        named += _config_fields(given, w, config, options, text)
        named += _strategies(w, config, options, text)
        named += _budget(args, given, w, config, options, text)
    return "no effect on the per-thread program: " + "; ".join(named) if named else ""


def _foreign(args, given: set, w) -> list[str]:
    """Flags of a workload other than the one built (all of them for a program file)."""
    out = []
    for other in WORKLOADS.values():
        if other is w:
            continue
        out += [f"{f.name} (a flag of {other.name}; the source is {args.source!r})" for f in other.flags
                if f.dest in given]
    return out


def _same(w, config, options: dict, text: str) -> bool:
    """Whether ``config`` with ``options`` builds the program ``text`` (a config the options do not fit, such
    as a tile that does not divide it, builds another)."""
    try:
        return print_program(w.build(config, options)[0]) == text
    except RegtuneError:
        return False


def _config_fields(given: set, w, config, options: dict, text: str) -> list[str]:
    """Config fields given whose every value in the config space builds the same program."""
    if not dataclasses.is_dataclass(config):
        return []
    out = []
    names = {f.name for f in dataclasses.fields(config)}
    for flag in (f for f in w.flags if f.dest in given and f.dest in names):
        others = {getattr(c, flag.dest) for c in w.configs()
                  if c != config and dataclasses.replace(c, **{flag.dest: getattr(config, flag.dest)}) == config}
        if others and all(_same(w, dataclasses.replace(config, **{flag.dest: v}), options, text) for v in others):
            out.append(f"{flag.name} (the program is the same for all {len(others) + 1} values)")
    return out


def _strategies(w, config, options: dict, text: str) -> list[str]:
    """Strategies whose removal leaves the program as it is."""
    chosen = list(options.get("strategies") or ())
    return [f"--strategies {s} (the program is the same without it)" for s in chosen
            if _same(w, config, {**options, "strategies": tuple(x for x in chosen if x != s)}, text)]


def _budget_given(args) -> bool:
    return getattr(args, "command", None) in BUDGET_BUILDS_ONLY and getattr(args, "budget", None) is not None


def _budget(args, given: set, w, config, options: dict, text: str) -> list[str]:
    """``--budget`` where it only builds the program, when the program is the same at the architecture's
    limit."""
    if not _budget_given(args):
        return []
    if not _same(w, config, {**options, "budget": MAX_REGISTERS}, text):
        return []
    return ["--budget (the program is the same at any budget; GEMM's --tile fit fits the tile to it)"]
