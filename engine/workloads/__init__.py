"""Workloads, registered by name behind one interface: GEMM, MHA, and a program read from a file.

Invariant: every workload is an object in :data:`WORKLOADS` that satisfies
:class:`Workload`, registered under its ``name``, which is also the
``kind`` a plan file's ``workload`` names; a name is checked
(:func:`workload_named`, :func:`check_workload`) before any work, and no
code outside a workload's own modules asks which workload it has. A
workload and its options determine the program completely (same inputs,
same text), and value names are derived from the workload (``a_i_k``,
``b_k_j``, ``acc_i_j``, ``q_g_d``, ``o_g_d``, ``m_g``, ``l_g``), so a hand edit
keyed by name survives rebuilding the program. A workload read from a file
passes :func:`check_workload` first: every field typed and inside the
config space, so nothing a file says reaches generated code as text.

The ``program`` workload (:mod:`engine.workloads.program`) is a plan made
from an IR file: it has no config space and no command-line flags, and its
kernel harness has no numeric reference; the command line reaches it with
a file path where the others take their name.

Examples
--------
>>> sorted(WORKLOADS)
['gemm', 'mha', 'program']
>>> w = workload_named("gemm")
>>> program, built = w.build(w.from_dict({"kind": "gemm", "m": 2, "n": 2, "k": 2}, "example"), BuildOptions(tile=(2, 2)))
>>> program.name, built["threads_per_block"]
('gemm_m2n2k2_t2x2_k_outer', 128)
>>> workload_named("conv")
Traceback (most recent call last):
...
engine.base.errors.RegtuneError: unknown workload 'conv' (known: gemm, mha, program)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine.base import fields
from engine.base.errors import RegtuneError
from engine.check.inputs import GENERIC, InputModel
from engine.ir.core import Program


@dataclass(frozen=True)
class Flag:
    """One command-line flag a workload adds (the command line turns it into an argparse argument).

    Attributes
    ----------
    name : the flag as typed (``--head-dim``)
    dest : the key its value has in the values :meth:`Workload.from_flags` reads (``head_dim``)
    type : ``int``, or None for text
    default : the value when the flag is absent
    help : the line ``--help`` prints, argparse's ``%`` escapes included
    required : whether the workload needs it (a missing one is named in one line)
    switch : a flag without a value (``store_true``)
    """

    name: str
    dest: str
    type: type | None = None
    default: object = None
    help: str | None = None
    required: bool = False
    switch: bool = False


@runtime_checkable
class Workload(Protocol):
    """What a workload provides; ``config`` is the workload's own frozen dataclass (``Gemm``, ``Mha``).

    Attributes
    ----------
    name : the registry key and a plan file's ``kind``
    title : the heading of its flags in ``--help``
    flags : the flags it adds to the commands that build a program (empty: none)
    example : the config shown first (the window's default, error messages); None without a config space
    """

    name: str
    title: str
    flags: tuple
    example: object

    def from_dict(self, data: dict, where: str):
        """The config a plan file's ``workload`` names, every field checked; one-line PlanError naming ``where``."""

    def to_dict(self, config) -> dict:
        """The config as a plan file's JSON-ready ``workload`` (``kind`` first)."""

    def configs(self) -> list:
        """Every config of its space, in a fixed order (empty: no config space)."""

    def build(self, config, options: BuildOptions) -> tuple[Program, dict]:
        """The per-thread program and the options to store with its plans (the plan file's JSON-ready
        ``options``), from the session's, the window's or the command line's ``options``."""

    def label(self, config) -> str:
        """One line naming the config, starting with :attr:`name` (pickers, titles, status lines)."""

    def parse_label(self, words: list):
        """The config a label's words after the name spell; ValueError, IndexError or KeyError if none."""

    def check_options(self, config, options: dict, where: str) -> dict:
        """A plan file's ``options`` for ``config``, every field checked; one-line PlanError naming ``where``."""

    def input_model(self, config, options: dict) -> InputModel:
        """The ranges an execution check draws the program's inputs from (engine.check.inputs): parameters inside
        their meaningful range, special registers inside the grid the config implies."""

    def from_flags(self, values: dict) -> tuple[object, BuildOptions]:
        """The config and build options the command line's flag ``values`` (keyed by ``Flag.dest``) ask for
        (the budget left at its default: the command line sets it)."""


#: name -> workload (see :class:`Workload`); registration order is the order of ``--help`` and pickers
WORKLOADS: dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    """Add ``workload`` to :data:`WORKLOADS` under its name; a taken name or a missing method is refused."""
    if not isinstance(workload, Workload):
        raise RegtuneError(f"workload {getattr(workload, 'name', workload)!r} lacks part of the Workload protocol")
    if workload.name in WORKLOADS:
        raise RegtuneError(f"a workload named {workload.name!r} is registered already")
    WORKLOADS[workload.name] = workload
    return workload


def unregister(name: str) -> None:
    """Remove the workload ``name`` (a test's own workload, when the test ends)."""
    workload_named(name)
    del WORKLOADS[name]


def workload_named(name) -> Workload:
    """The registered workload ``name``; a one-line error naming the known ones otherwise."""
    if not isinstance(name, str) or name not in WORKLOADS:
        raise RegtuneError(f"unknown workload {fields.excerpt(name)} (known: {', '.join(sorted(WORKLOADS))})")
    return WORKLOADS[name]


def check_workload(workload: dict, options: dict, source: str) -> tuple[dict, dict]:
    """The plan file's ``workload`` and ``options``, each field checked; both as plain JSON-ready dicts.

    Examples
    --------
    >>> check_workload({"kind": "gemm", "m": 2, "n": 2, "k": 2}, {"schedule": "dot"}, "p.json")
    ({'kind': 'gemm', 'm': 2, 'n': 2, 'k': 2, 'dtype': 'f32'}, {'schedule': 'dot'})
    >>> check_workload({"kind": "conv"}, {}, "p.json")
    Traceback (most recent call last):
    ...
    engine.base.errors.PlanError: p.json: workload: field 'kind' must be one of gemm, mha, program, got 'conv'
    """
    where, owhere = f"{source}: workload", f"{source}: options"
    if not workload:
        program = WORKLOADS["program"]
        return {}, program.check_options(program.from_dict({"kind": "program"}, where), options, owhere)
    w = WORKLOADS[fields.choice(workload, "kind", where, sorted(WORKLOADS))]
    config = w.from_dict(workload, where)
    return w.to_dict(config), w.check_options(config, options, owhere)


def build_workload(workload: dict, options: BuildOptions) -> tuple[Program, dict, dict]:
    """The program of a workload dict (kind checked by name first), the checked workload and the options its
    plans keep (JSON-ready).

    Examples
    --------
    >>> program, workload, built = build_workload({"kind": "gemm", "m": 2, "n": 2, "k": 2}, BuildOptions(tile=(1, 2)))
    >>> workload, built["tile"]
    ({'kind': 'gemm', 'm': 2, 'n': 2, 'k': 2, 'dtype': 'f32'}, [1, 2])
    """
    w = workload_named(workload.get("kind"))
    config = w.from_dict(workload, "workload")
    program, built = w.build(config, options)
    return program, w.to_dict(config), built


def config_label(workload: dict) -> str:
    """One line naming a workload dict (a plan's or the session's; empty: a program).

    Examples
    --------
    >>> config_label({"kind": "gemm", "m": 8, "n": 4, "k": 2})
    'gemm 8x4x2'
    >>> config_label({})
    'program'
    """
    w = workload_named(workload.get("kind", "program"))
    return w.label(w.from_dict({"kind": w.name, **workload}, "workload"))


def _option_words(options: dict) -> list[str]:
    """The options that shape a program, in words (tile and schedule, strategies, keys per tile)."""
    words = []
    if options.get("tile"):
        words.append("tile " + "x".join(str(t) for t in options["tile"]))
    if options.get("schedule"):
        words.append(f"schedule {options['schedule']}")
    if "strategies" in options:
        words.append("strategies " + ("+".join(options["strategies"]) or "none"))
    if options.get("bc"):
        words.append(f"{options['bc']} keys per K/V tile")
    if options.get("projection"):
        words.append("projection phase")
    return words


def setting_label(workload: dict, options: dict) -> str:
    """A workload and the options its program was built with, in one line (summaries, plan labels, table
    headers): the config label, then tile and schedule or the MHA strategies.

    Examples
    --------
    >>> setting_label({"kind": "gemm", "m": 16, "n": 16, "k": 16}, {"tile": [8, 4], "schedule": "k-outer"})
    'gemm 16x16x16, tile 8x4, schedule k-outer'
    >>> setting_label({}, {})
    'program'
    """
    return ", ".join([config_label(workload), *_option_words(options)])


def parse_config_label(text: str) -> dict:
    """The workload dict a label spells (the inverse of :func:`config_label` for workloads with configs).

    Examples
    --------
    >>> parse_config_label("gemm 2x3x4")
    {'kind': 'gemm', 'm': 2, 'n': 3, 'k': 4, 'dtype': 'f32'}
    >>> parse_config_label("gemm 2x3")
    Traceback (most recent call last):
    ...
    engine.base.errors.RegtuneError: not a config: 'gemm 2x3' (write e.g. 'gemm 8x8x8' or 'mha heads 32 batch 64 head_dim 64 groups 4')
    """
    words = text.split()
    w = WORKLOADS.get(words[0]) if words else None
    try:
        if w is not None:
            return w.to_dict(w.parse_label(words[1:]))
    except (IndexError, KeyError, ValueError):
        pass
    shown = " or ".join(f"'{w.label(w.example)}'" for w in WORKLOADS.values() if w.example is not None)
    raise RegtuneError(f"not a config: {text!r} (write e.g. {shown})")


def all_config_labels() -> list[str]:
    """The label of every config of every workload, in registration order (the window's picker)."""
    return [w.label(c) for w in WORKLOADS.values() for c in w.configs()]


def input_model(workload: dict, options: dict) -> InputModel:
    """The input model of a plan's workload and options (as a plan holds them): the registered workload's
    own (:meth:`Workload.input_model`), :data:`engine.check.inputs.GENERIC` for a plan without a workload.

    Examples
    --------
    >>> input_model({}, {}) is GENERIC
    True
    >>> [name for name, _, _ in input_model({"kind": "gemm", "m": 8, "n": 8, "k": 8}, {}).ranges]
    ['%ctaid.x', '%tid.x', 'batch', 'beta']
    """
    if not workload:
        return GENERIC
    w = workload_named(workload.get("kind"))
    checked, options = check_workload(workload, options, "plan")
    return w.input_model(w.from_dict(checked, "plan: workload"), options)


from engine.workloads import gemm, mha, program  # noqa: E402,F401  (registration)
from engine.workloads.options import BuildOptions  # after them: it reads their defaults
