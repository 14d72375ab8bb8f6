"""A plain reference interpreter: the semantics of :mod:`engine.check.interp`, one instruction at a time.

No decoding, no fast paths, no lockstep: each step looks at one instruction,
reads its operands by value name (virtual registers) or register number
(physical registers), computes, writes. It exists to be obviously right,
so that the fast interpreter can be compared with it state by state.

Invariant: after every step, :class:`Machine` holds the state the fast
interpreter documents: each value is a tuple of 32-bit words keyed by
``name#k`` (virtual) or by register number (physical; predicates by
name); a physical register never written reads as ``mix(seed, 0xBAD, r)``;
memory never written reads as ``mix(seed, tag(space), address)``; integer
arithmetic is on the value's bits masked to its width, ``div.u*`` and
``rem.u*`` are unsigned quotient and remainder (by zero: all ones and the
dividend), ``max``, ``min``, ``setp.<cmp>`` and ``mul.wide.s32`` read their
operands as signed at their type's width (an i32's bit 31 is its sign), ``shfl`` returns its first
operand and any other opcode is a mixing hash of its opcode, result number
and operands; ``param NAME`` and an operand-less ``sreg.X`` read the input
``NAME`` or ``%X`` the run's :class:`engine.check.inputs.InputModel` draws for the
seed (the 64-bit parameters are pointers 0, 1, ... by name; further results hash the
first); a load or store address is the sum of its operands (a store's last
operand is the value).

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse('''.kernel k
... .block entry
...   %pa:u64 = param A
...   %x:i32 = mov 5
...   %y:i32 = add %x, %x
...   st.global %pa, 4, %y
...   exit
... ''')
>>> [value for _, _, value in Machine(p, seed=0).run().stores]
[10]
"""

from __future__ import annotations

import zlib

from engine.base.errors import InterpreterError
from engine.base.limits import MAX_STEPS
from engine.check.inputs import GENERIC, Input, InputModel
from engine.ir.core import Imm, Instruction, Program, Use
from engine.ir.immediates import MASK32, MASK64, immediate, mix

#: the step limit of a run, the fast interpreter's default
STEP_LIMIT = MAX_STEPS
#: mask of a result of each width in 32-bit registers (0: a predicate, one bit)
MASKS = {0: 1, 1: MASK32, 2: MASK64}
COMPARE = {"lt": int.__lt__, "le": int.__le__, "gt": int.__gt__, "ge": int.__ge__, "eq": int.__eq__,
           "ne": int.__ne__}


def tag(text: str) -> int:
    """The number standing for an opcode, a parameter name or a memory space in the hashes.

    Examples
    --------
    >>> tag("global") == zlib.crc32(b"global")
    True
    """
    return zlib.crc32(text.encode())


def signed(x: int, bits: int = 64) -> int:
    """The low ``bits`` bits of ``x`` (32 or 64) as a signed integer.

    Examples
    --------
    >>> signed(5), signed(MASK64), signed(MASK32), signed(MASK32, 32)
    (5, -1, 4294967295, -1)
    """
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def operand_bits(ins: Instruction, program: Program) -> int:
    """The width at which ``ins`` reads its operands as signed integers: ``max``/``min`` at their result's type,
    ``setp`` at its first value operand's (64 with none), ``mul.wide.s32`` at 32, anything else 64.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block entry\\n  %i:i32 = mov 3\\n  %p:pred = setp.lt %i, 0\\n  exit\\n")
    >>> operand_bits(p.instructions[1], p)
    32
    """
    base = ins.opcode.partition(".")[0]
    if ins.opcode == "mul.wide.s32":
        return 32
    if base in ("max", "min"):
        return 64 if ins.defs and program.values[ins.defs[0].name].width == 2 else 32
    if base == "setp":
        for op in ins.operands:
            if isinstance(op, Use):
                return 64 if program.values[op.name].width == 2 else 32
    return 64


def input_name(ins: Instruction) -> str | None:
    """The input ``ins`` reads (``param A`` reads ``A``, ``sreg.tid.x`` reads ``%tid.x``), or None.

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction
    >>> input_name(parse_instruction("%p:u64 = param A")), input_name(parse_instruction("%t:i32 = sreg.tid.x"))
    ('A', '%tid.x')
    """
    if ins.opcode == "param" and ins.operands and isinstance(ins.operands[0], Imm):
        return ins.operands[0].text
    if ins.opcode.startswith("sreg.") and not ins.operands:
        return "%" + ins.opcode[len("sreg."):]
    return None


def program_inputs(program: Program) -> dict[str, Input]:
    """Every input the program reads, by name, in program order; the 64-bit parameters are pointers 0, 1, ...
    in the order of their names."""
    inputs: dict[str, Input] = {}
    for ins in program.instructions:
        name = input_name(ins)
        if name is not None and name not in inputs:
            pointer = ins.opcode == "param" and len(ins.defs) == 1 and ins.defs[0].type == "u64"
            inputs[name] = Input(name, 0 if pointer else None)
    pointers = sorted(name for name, i in inputs.items() if i.pointer is not None)
    return {name: Input(name, pointers.index(name)) if i.pointer is not None else i for name, i in inputs.items()}


def compute(ins: Instruction, ops: list[int], k: int, seed: int, value: int | None = None, bits: int = 64) -> int:
    """Result ``k`` of the non-memory, non-branch instruction ``ins`` on operand bits ``ops`` (unmasked);
    ``value`` is the input's value on this seed for an instruction that reads an input; ``bits``: the width
    ``max``, ``min``, ``setp`` and ``mul.wide.s32`` read their operands at as signed (:func:`operand_bits`).

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction
    >>> compute(parse_instruction("%x:i32 = fma %a, %b, %c"), [2, 3, 4], 0, 0)
    10
    >>> compute(parse_instruction("%q:i32 = div.u32 %a, %b"), [7, 2], 0, 0)
    3
    """
    base, _, modifier = ins.opcode.partition(".")
    n = len(ops)
    if (base, n) in (("mov", 1), ("cvt", 1)) or base == "shfl" and n:
        return ops[0]
    if value is not None:
        return value if k == 0 else mix(value, k)
    if base == "param":
        return mix(seed, k)
    if base in ("div", "rem") and n == 2 and modifier.startswith("u"):
        if base == "div":
            return ops[0] // ops[1] if ops[1] else MASK64
        return ops[0] % ops[1] if ops[1] else ops[0]
    if (base, n) == ("sub", 2):
        return ops[0] - ops[1]
    if ins.opcode == "mul.wide.s32" and n == 2:
        return signed(ops[0], 32) * signed(ops[1], 32)
    if (base, n) == ("mul", 2):
        return ops[0] * ops[1]
    if (base, n) == ("fma", 3):
        return ops[0] * ops[1] + ops[2]
    if base == "add":
        return sum(ops)
    if base == "max" and n:
        return max(signed(x, bits) for x in ops)
    if base == "min" and n:
        return min(signed(x, bits) for x in ops)
    cmp = COMPARE.get(modifier.split(".")[0])
    if base == "setp" and n == 2 and cmp:
        return int(cmp(signed(ops[0], bits), signed(ops[1], bits)))
    return mix(tag(ins.opcode), k, *ops)


class Machine:
    """One run: registers, memory and stores, advanced one instruction per :meth:`step`.

    Parameters
    ----------
    registers : None to hold values by name, or an assignment (value name -> register numbers).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> m = Machine(parse(".kernel k\\n.block b\\n  %x:u64 = mov 8\\n  exit\\n"), registers={"x": (2, 3)})
    >>> m.step(), m.registers()[2], m.registers()[3], m.registers()[0] == mix(0, 0xBAD, 0) & MASK32
    (True, 8, 0, True)
    """

    def __init__(self, program: Program, seed: int = 0, registers: dict | None = None, model: InputModel = GENERIC):
        self.program, self.seed, self.assignment, self.model = program, seed, registers, model
        self.inputs = program_inputs(program)
        self.env: dict = {}
        self.memory: dict = {}
        self.stores: list[tuple[str, int, int]] = []
        self.pc, self.steps = 0, 0
        self.labels = dict(zip((b.name for b in program.blocks), program.block_starts))

    def keys(self, name: str) -> tuple:
        """Where the words of value ``name`` live."""
        value = self.program.values[name]
        if self.assignment is None or value.width == 0:
            return tuple(f"{name}#{k}" for k in range(max(value.width, 1)))
        return tuple(self.assignment[name])

    def top(self) -> int:
        """One past the highest register the assignment names (0 on virtual registers)."""
        regs = [r for rs in (self.assignment or {}).values() if rs for r in rs]
        return max(regs) + 1 if regs else 0

    def word(self, key) -> int:
        if key in self.env:
            return self.env[key]
        if type(key) is int:
            return mix(self.seed, 0xBAD, key) & MASK32
        raise InterpreterError(f"{key.split('#')[0]} is read before any definition")

    def read(self, op) -> int:
        if type(op) is not Use:
            return immediate(op.text)
        words = [self.word(key) for key in self.keys(op.name)]
        return words[0] if len(words) == 1 else words[0] | words[1] << 32

    def write(self, name: str, value: int) -> None:
        value &= MASKS[self.program.values[name].width]
        for k, key in enumerate(self.keys(name)):
            self.env[key] = value >> 32 * k & MASK32

    def load(self, space: str, address: int) -> int:
        key = (space, address & MASK64)
        return self.memory[key] if key in self.memory else mix(self.seed, tag(space), key[1])

    def step(self) -> bool:
        """Execute the instruction at ``pc``; False once the program has ended."""
        instructions = self.program.instructions
        if self.pc >= len(instructions):
            return False
        ins = instructions[self.pc]
        self.steps += 1
        self.pc += 1
        if ins.guard is not None and bool(self.word(self.keys(ins.guard)[0])) == ins.guard_negated:
            return True
        self.execute(ins)
        return True

    def execute(self, ins: Instruction) -> None:
        base, _, modifier = ins.opcode.partition(".")
        space = modifier.split(".")[0]
        if ins.opcode == "exit":
            self.pc = len(self.program.instructions)
        elif ins.opcode == "br":
            self.pc = self.labels[ins.targets[0]]
        elif ins.opcode == "cbr":
            self.pc = self.labels[ins.targets[0] if self.read(ins.operands[0]) else ins.targets[1]]
        elif base == "st":
            ops = [self.read(op) for op in ins.operands]
            address = sum(ops[:-1]) & MASK64
            self.memory[(space, address)] = ops[-1]
            if space != "local":
                self.stores.append((space, address, ops[-1]))
        elif base == "ld":
            address = sum(self.read(op) for op in ins.operands)
            for k, d in enumerate(ins.defs):
                self.write(d.name, self.load(space, address + 4 * k))
        else:
            ops = [self.read(op) for op in ins.operands]
            name = input_name(ins)
            value = self.model.value(self.inputs[name], self.seed) if name is not None else None
            for k, d in enumerate(ins.defs):
                self.write(d.name, compute(ins, ops, k, self.seed, value, operand_bits(ins, self.program)))

    def run(self, max_steps: int | None = None) -> Machine:
        """Step until the program ends; an error past ``max_steps`` instructions (None: :data:`STEP_LIMIT`)."""
        max_steps = STEP_LIMIT if max_steps is None else max_steps
        while self.step():
            if self.steps > max_steps:
                raise InterpreterError(f"step limit of {max_steps} instructions reached")
        return self

    def registers(self) -> dict:
        """Every register word: values written, and on physical registers each register up to the
        highest assigned (garbage where never written)."""
        return {**{r: self.word(r) for r in range(self.top())}, **self.env}
