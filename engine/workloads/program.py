"""The ``program`` workload: a plan made from a program file in RegTune's IR text form.

It has no config space and no command-line flags (the command line takes
the file's path where other workloads take their name). Its kernel harness
(kernels/harness/program.py) has no numeric reference: it runs the plan's
kernel and the program without the plan's spill code on the same seeded
inputs and compares them.

Invariant: a program workload names at most the kernel (an IR name) and
the file it came from (a bounded printable string); its plans carry at
most the ``arch`` option. The module registers :class:`ProgramWorkload`
as workload ``program``.

Examples
--------
>>> w = ProgramWorkload()
>>> config = w.from_dict({"kind": "program", "name": "axpy"}, "p.json: workload")
>>> w.to_dict(config), w.label(config)
({'kind': 'program', 'name': 'axpy'}, 'program axpy')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.base import fields
from engine.base.errors import PlanError, RegtuneError
from engine.check.inputs import GENERIC, InputModel
from engine.ir.core import Program, is_name
from engine.ir.parser import parse
from engine.workloads import register

if TYPE_CHECKING:
    from engine.workloads.options import BuildOptions


@dataclass(frozen=True)
class ProgramFile:
    """A program workload: the kernel's name and the file it was read from, each when known."""

    name: str | None = None
    source: str | None = None


def read(path: str) -> tuple[Program, ProgramFile]:
    """Parse a program file, naming the file in every error; the program and its workload. A program that
    asks for more work than :mod:`engine.base.limits` allows is refused here (:func:`engine.analysis.bounds.check_program`)."""
    from engine.analysis.bounds import check_program
    from engine.base.files import read_text

    program = parse(read_text(path, RegtuneError), path)
    check_program(program, path)
    return program, ProgramFile(program.name, path)


class ProgramWorkload:
    """A program file in the workload registry (:class:`engine.workloads.Workload`)."""

    name = "program"
    title = "program file"
    example = None
    flags = ()

    def from_dict(self, data: dict, where: str) -> ProgramFile:
        fields.exact_keys(data, ("kind", "name", "source"), where, required=("kind",))
        name = data.get("name")
        if "name" in data and (not isinstance(name, str) or not is_name(name)):
            raise PlanError(f"{where}: field 'name' must be a kernel name, got {fields.excerpt(name)}")
        return ProgramFile(name, fields.text(data, "source", where) if "source" in data else None)

    def to_dict(self, config: ProgramFile) -> dict:
        out = {"kind": "program"}
        out.update({k: v for k, v in (("name", config.name), ("source", config.source)) if v is not None})
        return out

    def configs(self) -> list:
        return []

    def build(self, config: ProgramFile, options: BuildOptions) -> tuple[Program, dict]:
        if config.source is None:
            raise RegtuneError(f"{self.label(config)}: no program file to read it from")
        return read(config.source)[0], {}

    def label(self, config: ProgramFile) -> str:
        return f"program {config.name or ''}".rstrip()

    def parse_label(self, words: list):
        raise ValueError("a program file has no config label")

    def input_model(self, config: ProgramFile, options: dict) -> InputModel:
        return GENERIC

    def check_options(self, config: ProgramFile, options: dict, where: str) -> dict:
        from engine.model.arch import ARCHS

        fields.exact_keys(options, ("arch",), where)
        return {"arch": fields.choice(options, "arch", where, ARCHS)} if "arch" in options else {}

    def from_flags(self, values: dict) -> tuple[ProgramFile, BuildOptions]:
        from engine.workloads import BuildOptions

        return ProgramFile(source=values["source"]), BuildOptions()


register(ProgramWorkload())
