"""Writing generated programs: lines in the canonical text form, built directly.

Invariant: a writer only accepts canonical instruction lines without
guards (``%a:f32, %b:f32 = opcode %x, 4``); :meth:`ProgramWriter.program`
builds the same :class:`engine.ir.core.Program` that :func:`engine.ir.parser.parse`
would from :meth:`ProgramWriter.text`, without re-validating it (the
workload tests check that every generated program parses back to itself).
"""

from __future__ import annotations

from engine.base.errors import RegtuneError
from engine.base.limits import MAX_INSTRUCTIONS
from engine.ir.core import Block, Imm, Instruction, Program, Use, Value

_OPERANDS: dict[str, object] = {}
#: instructions are immutable, so generated programs share them by (line, phase)
_INSTRUCTIONS: dict[tuple[str, str | None], Instruction] = {}


def _operand(token: str):
    op = _OPERANDS.get(token)
    if op is None:
        op = _OPERANDS[token] = Use(token[1:]) if token[0] == "%" else Imm(token)
    return op


class ProgramWriter:
    """Accumulates blocks, phases and instruction lines of one kernel."""

    def __init__(self, name: str):
        self.name = name
        self.blocks: list[tuple[str, list[Instruction]]] = []
        self.current_phase: str | None = None
        self.count = 0

    def block(self, name: str, phase: str | None = None) -> None:
        self.blocks.append((name, []))
        self.current_phase = phase

    def phase(self, name: str | None) -> None:
        self.current_phase = name

    def __call__(self, line: str) -> None:
        key = (line, self.current_phase)
        ins = _INSTRUCTIONS.get(key)
        if ins is None:
            ins = self._build(line)
            if len(_INSTRUCTIONS) < 1 << 18:
                _INSTRUCTIONS[key] = ins
        self.blocks[-1][1].append(ins)
        self.count += 1
        if self.count > MAX_INSTRUCTIONS:
            raise RegtuneError(f"{self.name}: the generated program passes {MAX_INSTRUCTIONS} instructions "
                               "(RegTune's limit for one program); choose a smaller tile or K/V tile (bc)")

    def _build(self, line: str) -> Instruction:
        lhs, sep, rhs = line.partition(" = ")
        if not sep:
            lhs, rhs = "", line
        defs = tuple(Value(*d[1:].split(":")) for d in lhs.split(", ")) if lhs else ()
        opcode, _, ops = rhs.partition(" ")
        operands = tuple(_operand(t) for t in ops.split(", ")) if ops else ()
        return Instruction(opcode, defs, operands, phase=self.current_phase)

    def program(self) -> Program:
        return Program(self.name, tuple(Block(n, tuple(body)) for n, body in self.blocks))
