"""The per-thread IR's types: values, instructions, blocks, programs, and the printer of its text form
(the parser is :mod:`engine.ir.parser`).

A ``.phase NAME`` line labels the instructions after it in its block with
a kernel phase (``.phase -`` clears it), so views can colour them; this
extends DESIGN.md's text form without changing any line it defines.

Invariant: ``parse(print_program(p)) == p`` for every program, and
``print_program(parse(text)) == text`` for every text in canonical form (the
form the printer writes). A value keeps one type everywhere it is defined;
every use names a value that the program defines; every branch names a block
of the program; every instruction keeps the rules of :mod:`engine.ir.rules`
(immediates, parameter names, the shape of each known opcode), so whatever
parses can be allocated, checked and written as a kernel.

Examples
--------
>>> from engine.ir.parser import parse
>>> text = '''.kernel k
... .block entry
...   %pa:u64 = param A
...   %x:f32 = ld.global %pa, 0
...   %y:f32 = mul %x, %x
...   st.global %pa, 4, %y
...   exit
... '''
>>> p = parse(text)
>>> print_program(p) == text
True
>>> p.values["pa"].width
2
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from engine.ir.rules import NAME

class computed_once:
    """A property computed on first read and then kept in the instance's ``__dict__``, where it shadows this
    (non-data) descriptor, so every later read is a plain attribute read.

    ``functools.cached_property`` does the same but, on Python 3.11, takes a lock on every first read: 4 us
    an instruction, 0.8 s of CPU on the 198,042 instructions of the interference-bound test program, which
    reads each instruction's ``uses`` once. This one costs a call.
    """

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.fn(instance)
        return value


#: Width of each type in 32-bit general registers; ``pred`` lives in the
#: predicate file and is not counted with general registers.
WIDTHS = {"pred": 0, "i32": 1, "f32": 1, "f16x2": 1, "u64": 2, "f64": 2}

TERMINATORS = frozenset({"br", "cbr", "exit"})

#: value, block and kernel names: ASCII, at most 128 characters
_NAME = NAME
_NAME_RE = re.compile(rf"^{_NAME}\Z")
_DEF_RE = re.compile(rf"^%({_NAME}):([A-Za-z0-9]+)\Z")
_GUARD_RE = re.compile(rf"^@(!?)%({_NAME})\Z")
_OPCODE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,63}\Z")


@dataclass(frozen=True)
class Value:
    """A virtual register: a name and a type.

    Examples
    --------
    >>> Value("acc_0_0", "f32").width
    1
    """

    name: str
    type: str

    @property
    def width(self) -> int:
        """Number of 32-bit general registers the value needs (0 for pred; a plain property: one dict lookup,
        cheaper than any cache's first read)."""
        return WIDTHS[self.type]

    def __str__(self) -> str:
        return f"%{self.name}:{self.type}"


@dataclass(frozen=True)
class Use:
    """An operand that reads a value."""

    name: str

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Imm:
    """An operand that is not a value: an immediate, a symbol or a label."""

    text: str

    def __str__(self) -> str:
        return self.text


Operand = Use | Imm


@dataclass(frozen=True)
class Instruction:
    """One instruction: results, an opcode, operands and an optional guard.

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction
    >>> ins = parse_instruction("%acc:f32 = fma %a, %b, %acc")
    >>> ins.uses, [d.name for d in ins.defs]
    (('a', 'b', 'acc'), ['acc'])
    >>> str(ins)
    '%acc:f32 = fma %a, %b, %acc'
    """

    opcode: str
    defs: tuple[Value, ...] = ()
    operands: tuple[Operand, ...] = ()
    guard: str | None = None
    guard_negated: bool = False
    #: the kernel phase this instruction belongs to ("scores", "softmax", ...), for views
    phase: str | None = None

    @computed_once
    def uses(self) -> tuple[str, ...]:
        """Names of the values read, operands first, then the guard.

        Computed once per instruction (every analysis, check and model reads it; the instruction is frozen);
        kept in the instance's ``__dict__``, which equality, hashing and printing never look at.
        """
        return _uses(self.operands, self.guard)

    @property
    def is_terminator(self) -> bool:
        return self.opcode in TERMINATORS

    @property
    def targets(self) -> tuple[str, ...]:
        """Block labels this terminator may jump to."""
        if self.opcode == "br":
            return (self.operands[0].text,)
        if self.opcode == "cbr":
            return (self.operands[1].text, self.operands[2].text)
        return ()

    def __str__(self) -> str:
        text = self.opcode
        if self.guard is not None:
            text = f"@{'!' if self.guard_negated else ''}%{self.guard} {text}"
        if self.operands:  # each operand as its __str__ writes it, without the call (a printed plan has 100k)
            text += " " + ", ".join([f"%{op.name}" if op.__class__ is Use else op.text if op.__class__ is Imm else str(op)
                                     for op in self.operands])
        if self.defs:
            text = ", ".join([f"%{d.name}:{d.type}" for d in self.defs]) + " = " + text
        return text


def _uses(operands: tuple, guard: str | None) -> tuple[str, ...]:
    names = [op.name for op in operands if op.__class__ is Use]
    if guard is not None:
        names.append(guard)
    return tuple(names)


@dataclass(frozen=True)
class Block:
    """A labelled straight-line run of instructions."""

    name: str
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True)
class Program:
    """A kernel: named blocks in layout order.

    The linear order (blocks in order, instructions in order) numbers the
    instructions 0..n-1; every analysis and view uses that numbering.
    ``values``, ``instructions`` and ``block_starts`` index the program's own
    structure; nothing computed from it (an analysis, a trace, a spill
    record) is kept on it: the caller that computes such a thing owns it.
    """

    name: str
    blocks: tuple[Block, ...]

    @cached_property
    def values(self) -> dict[str, Value]:
        """Each value the program defines, by name, in the order of first definition."""
        return _collect_values(self)

    @cached_property
    def instructions(self) -> tuple[Instruction, ...]:
        """All instructions in linear order."""
        return tuple(ins for b in self.blocks for ins in b.instructions)

    @cached_property
    def block_starts(self) -> tuple[int, ...]:
        """Linear index of each block's first instruction."""
        starts, at = [], 0
        for b in self.blocks:
            starts.append(at)
            at += len(b.instructions)
        return tuple(starts)

    def block_of(self, index: int) -> int:
        """Index of the block holding linear instruction ``index``."""
        import bisect

        return bisect.bisect_right(self.block_starts, index) - 1

    def __str__(self) -> str:
        return print_program(self)


def _collect_values(program: Program) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for b in program.blocks:
        for ins in b.instructions:
            for d in ins.defs:
                values.setdefault(d.name, d)
    return values


def print_program(program: Program) -> str:
    """The canonical text form of ``program`` (ends with a newline)."""
    lines = [f".kernel {program.name}"]
    for b in program.blocks:
        lines.append(f".block {b.name}")
        phase = None
        for ins in b.instructions:
            if ins.phase != phase:
                phase = ins.phase
                lines.append(f".phase {phase if phase is not None else '-'}")
            lines.append(f"  {ins}")
    return "\n".join(lines) + "\n"


def is_name(text: str) -> bool:
    """Whether ``text`` is a value, block or kernel name of the IR (ASCII, at most MAX_NAME characters).

    Examples
    --------
    >>> is_name("gemm_m8n8k8.t4"), is_name("ｃｕｄａ"), is_name("a b")
    (True, False, False)
    """
    return bool(_NAME_RE.match(text))


def successors(program: Program) -> list[list[int]]:
    """Successor block indices of each block as a run takes them: branch targets, and the next block where
    the block falls through (no terminator, or a guarded one, ``@%p br L`` or ``@%p exit``, whose guard is false).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block b\\n  exit\\n")
    >>> successors(p)
    [[1], []]
    >>> p = parse(".kernel k\\n.block a\\n  %p:pred = setp.lt 1, 2\\n  @%p br c\\n.block b\\n  exit\\n"
    ...           ".block c\\n  exit\\n")
    >>> successors(p)
    [[2, 1], [], []]
    """
    index = {b.name: i for i, b in enumerate(program.blocks)}
    succ = []
    for i, b in enumerate(program.blocks):
        last = b.instructions[-1] if b.instructions else None
        falls = last is None or not last.is_terminator or last.guard is not None
        targets = [index[t] for t in last.targets] if last is not None and last.is_terminator else []
        if falls and i + 1 < len(program.blocks):
            targets.append(i + 1)
        succ.append(list(dict.fromkeys(targets)))
    return succ


def replace_blocks(program: Program, blocks) -> Program:
    """A program with the same name and new blocks (values re-collected)."""
    return Program(program.name, tuple(blocks))
