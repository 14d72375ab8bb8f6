"""A deterministic interpreter for the IR, on virtual or physical registers.

Invariant: the observable behaviour of a run is its sequence of global and
shared stores (space, address, value) and nothing else, so a program and
its allocated, spill-coded form behave the same exactly when their store
traces are equal. Every input (parameters, memory never written) is a
pure function of the seed and its address, and every operation is a pure
function of its opcode and operand bits, so two runs with one seed agree
bit for bit unless the programs really differ.

Semantics: integer arithmetic on the value's bits masked to its width
(``add``, ``sub``, ``mul``, ``fma``, ``max``, ``mov``, ``cvt``), signed
comparisons for ``setp.<cmp>``, a mixing hash for every other opcode
(``exp``, ``rcp``, unknown opaque opcodes). ``shfl`` returns its first
operand (one thread). A load or store address is the sum of all its
operands but, for stores, the last one (the stored value).

Examples
--------
>>> from engine.ir import parse
>>> p = parse('''.kernel k
... .block entry
...   %pa:u64 = param A
...   %x:i32 = mov 5
...   %y:i32 = add %x, %x
...   st.global %pa, 4, %y
...   exit
... ''')
>>> t = run(p, seed=0)
>>> [value for _, _, value in t.stores]
[10]
>>> run(p, seed=0, registers={"pa": (0, 1), "x": (2,), "y": (2,)}).stores == t.stores
True
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from engine.errors import InterpreterError
from engine.ir import Imm, Instruction, Program

MASK64 = (1 << 64) - 1
MASKS = {0: 1, 1: 0xFFFFFFFF, 2: MASK64}
_COMPARE = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def mix(*words: int) -> int:
    """A 64-bit mixing hash of integers (FNV-style, then xorshift)."""
    h = 0xCBF29CE484222325
    for w in words:
        h = ((h ^ (w & MASK64)) * 0x100000001B3) & MASK64
        h ^= h >> 29
    return h


def _tag(text: str) -> int:
    return zlib.crc32(text.encode())


def _signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def immediate(text: str) -> int:
    """The bits of an immediate: integers as written, anything else hashed."""
    try:
        return int(text, 0) & MASK64
    except ValueError:
        return mix(_tag(text))


@dataclass
class Trace:
    """What a run did: its stores, step count and executions per instruction."""

    stores: list[tuple[str, int, int]] = field(default_factory=list)
    steps: int = 0
    executed: list[int] = field(default_factory=list)


class VirtualRegisters:
    """Values held by name (the original program's view)."""

    def __init__(self, program: Program, seed: int):
        self.values: dict[str, int] = {}

    def read(self, name: str, where: str) -> int:
        try:
            return self.values[name]
        except KeyError:
            raise InterpreterError(f"%{name} is read before any definition at {where}") from None

    def write(self, name: str, width: int, value: int) -> None:
        self.values[name] = value


class PhysicalRegisters:
    """A 32-bit register file addressed through an assignment; predicates by name.

    Registers start with seed-dependent garbage so a read of a register the
    program never wrote cannot pass for a correct value.
    """

    def __init__(self, program: Program, seed: int, assignment: dict):
        self.assignment = assignment
        top = max((r for regs in assignment.values() for r in regs), default=-1) + 1
        self.file = [mix(seed, 0xBAD, r) & 0xFFFFFFFF for r in range(top)]
        self.preds: dict[str, int] = {}
        self.widths = {n: v.width for n, v in program.values.items()}

    def _regs(self, name: str, where: str):
        try:
            return self.assignment[name]
        except KeyError:
            raise InterpreterError(f"%{name} has no register in the assignment at {where}") from None

    def read(self, name: str, where: str) -> int:
        if self.widths[name] == 0:
            return self.preds.get(name, 0)
        regs = self._regs(name, where)
        return sum(self.file[r] << (32 * k) for k, r in enumerate(regs))

    def write(self, name: str, width: int, value: int) -> None:
        if width == 0:
            self.preds[name] = value
            return
        for k, r in enumerate(self._regs(name, f"the definition of %{name}")):
            self.file[r] = (value >> (32 * k)) & 0xFFFFFFFF


class _Machine:
    def __init__(self, program: Program, seed: int, regs):
        self.program, self.seed, self.regs = program, seed, regs
        self.memory: dict[tuple[str, int], int] = {}
        self.trace = Trace(executed=[0] * len(program.instructions))

    def operand(self, op, where: str) -> int:
        return immediate(op.text) if isinstance(op, Imm) else self.regs.read(op.name, where)

    def load(self, space: str, addr: int, k: int, width: int) -> int:
        key = (space, (addr + 4 * k) & MASK64)
        if key not in self.memory:
            self.memory[key] = mix(self.seed, _tag(space), key[1])
        return self.memory[key] & MASKS[width]

    def step(self, ins: Instruction, where: str) -> None:
        ops = [self.operand(op, where) for op in ins.operands]
        base, _, modifier = ins.opcode.partition(".")
        if base == "st":
            space = modifier.split(".")[0]
            addr = sum(ops[:-1]) & MASK64
            self.memory[(space, addr)] = ops[-1]
            if space != "local":
                self.trace.stores.append((space, addr, ops[-1]))
            return
        if base == "ld":
            addr = sum(ops) & MASK64
            results = [self.load(modifier.split(".")[0], addr, k, d.width) for k, d in enumerate(ins.defs)]
        else:
            results = [self.compute(ins, base, modifier, ops, k) for k in range(len(ins.defs))]
        for d, value in zip(ins.defs, results):
            self.regs.write(d.name, d.width, value & MASKS[d.width])

    def compute(self, ins: Instruction, base: str, modifier: str, ops: list[int], k: int) -> int:
        if base == "param":
            return mix(self.seed, _tag(ins.operands[0].text) if ins.operands else 0, k)
        if base in ("mov", "cvt", "shfl") and ops:
            return ops[0]
        if base == "add":
            return sum(ops)
        if base == "sub" and len(ops) == 2:
            return ops[0] - ops[1]
        if base == "mul" and len(ops) == 2:
            return ops[0] * ops[1]
        if base == "fma" and len(ops) == 3:
            return ops[0] * ops[1] + ops[2]
        if base == "max" and ops:
            return max(_signed(x) for x in ops)
        if base == "setp" and len(ops) == 2 and modifier.split(".")[0] in _COMPARE:
            return int(_COMPARE[modifier.split(".")[0]](_signed(ops[0]), _signed(ops[1])))
        return mix(_tag(ins.opcode), k, *ops)


def run(program: Program, seed: int = 0, registers: dict | None = None, max_steps: int = 2_000_000) -> Trace:
    """Execute ``program`` from its first block until ``exit`` or its end.

    Parameters
    ----------
    registers : None to hold values by name, or an assignment
        (value name -> register indices) to run on a physical register file.
    max_steps : the run stops with an error after this many instructions.
    """
    regs = VirtualRegisters(program, seed) if registers is None else PhysicalRegisters(program, seed, registers)
    machine = _Machine(program, seed, regs)
    labels = {b.name: i for i, b in enumerate(program.blocks)}
    starts = program.block_starts
    block = 0
    while block < len(program.blocks):
        block = _run_block(machine, block, starts[block], labels, max_steps)
    return machine.trace


def _run_block(machine: _Machine, b: int, first: int, labels: dict, max_steps: int) -> int:
    trace = machine.trace
    for offset, ins in enumerate(machine.program.blocks[b].instructions):
        index = first + offset
        where = f"instruction {index} ({ins})"
        trace.steps += 1
        if trace.steps > max_steps:
            raise InterpreterError(f"step limit of {max_steps} instructions reached at {where}")
        trace.executed[index] += 1
        if ins.guard is not None and bool(machine.regs.read(ins.guard, where)) == ins.guard_negated:
            continue
        if ins.opcode == "exit":
            return len(machine.program.blocks)
        if ins.opcode == "br":
            return labels[ins.targets[0]]
        if ins.opcode == "cbr":
            taken = machine.regs.read(ins.operands[0].name, where)
            return labels[ins.targets[0] if taken else ins.targets[1]]
        machine.step(ins, where)
    return b + 1
