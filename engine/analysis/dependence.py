"""Dependences between instructions, and the proof that a program is another one reordered within them.

Invariant: :func:`dependence` is the one definition of "these two
instructions may not trade places" (a schedule edit, :mod:`engine.alloc.hand`,
moves an instruction only past those it has none with), and
:func:`reordering_problem` accepts a program exactly when it is the
reference program with the instructions of each block permuted so that every
pair that :func:`dependence` orders keeps its order. The check is exact and
structural, never sampled:

- the same blocks, by name and in layout order, so the same branch targets
  and fall-throughs;
- in each block the same multiset of instructions, operands, guards and
  results included (the k-th copy of an instruction stands for the k-th);
- every true, anti and output dependence through a value, every memory
  dependence (a store against any access of its space that may alias it)
  and the place of each terminator, in the reference's order.

A pair of instructions that touch one value is ordered when either defines
it; a load and a store (or two stores) of one space are ordered unless both
address the same base values and their byte ranges are disjoint. The
pairwise relation is checked in linear time per value (defines split the
accesses into groups that must stay between them) and per store for memory.

Examples
--------
>>> from engine.ir.parser import parse
>>> ref = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n"
...             "  st.global %pa, 0, %x\\n  exit\\n")
>>> swapped = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %y:f32 = mov 2\\n  %x:f32 = mov 1\\n"
...                 "  st.global %pa, 0, %x\\n  exit\\n")
>>> reordering_problem(swapped, ref) is None, moved_instructions(swapped, ref)
(True, 2)
>>> late = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %y:f32 = mov 2\\n  st.global %pa, 0, %x\\n"
...              "  %x:f32 = mov 1\\n  exit\\n")
>>> print(reordering_problem(late, ref))
block 'b': instruction 3 (%x:f32 = mov 1) now comes after instruction 2 (st.global %pa, 0, %x), which the reference runs after it: it defines %x, which that instruction reads
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from engine.ir.core import Imm, Instruction, Program, Use
from engine.ir.immediates import immediate


@dataclass(frozen=True)
class MemoryAccess:
    """A load or store: its kind (``ld``/``st``), space, address operands and byte count."""

    kind: str
    space: str
    address: tuple
    size: int

    @property
    def bases(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.address if isinstance(op, Use))

    @property
    def offset(self) -> int:
        return sum(immediate(op.text) for op in self.address if isinstance(op, Imm))


def memory_access(ins: Instruction, widths=None) -> MemoryAccess | None:
    """The memory ``ins`` touches, None for an instruction that touches none.

    ``widths`` maps a value name to its width in 32-bit words (the program's
    values); a store's size is its stored value's, 8 bytes where unknown (an
    overestimate only adds dependences). Local memory (spill code) counts in
    slots of one word: ``st.local 3, %x`` with a 64-bit ``%x`` covers slots 3-4."""
    base, _, space = ins.opcode.partition(".")
    if base not in ("ld", "st"):
        return None
    space = space.split(".")[0]
    unit = 1 if space == "local" else 4         # local memory is addressed by spill slot, the others by byte
    if base == "ld":
        return MemoryAccess("ld", space, ins.operands, unit * max(1, sum(d.width for d in ins.defs)))
    stored = ins.operands[-1] if ins.operands else None
    width = widths.get(stored.name, 2) if widths is not None and isinstance(stored, Use) else 2
    return MemoryAccess("st", space, ins.operands[:-1], unit * max(1, width))


def may_alias(x: MemoryAccess, y: MemoryAccess) -> bool:
    """Whether two accesses may touch one byte with one of them a store (conservative: different bases alias)."""
    if x.space != y.space or (x.kind == "ld" and y.kind == "ld"):
        return False
    if x.bases != y.bases:
        return True
    return x.offset < y.offset + y.size and y.offset < x.offset + x.size


def dependence(x: Instruction, y: Instruction, widths=None) -> str | None:
    """Why ``x`` and ``y`` may not trade places, or None if they may (``widths``: see :func:`memory_access`).

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction as ins
    >>> dependence(ins("%x:f32 = mov 1"), ins("%y:f32 = add %x, %x"))
    'it defines %x, which that instruction reads'
    >>> dependence(ins("st.global %p, 0, %x"), ins("%y:f32 = ld.global %p, 4"), {"x": 2}) is not None
    True
    >>> dependence(ins("st.global %p, 0, %x"), ins("%y:f32 = ld.global %p, 4"), {"x": 1}) is None
    True
    """
    if x.is_terminator or y.is_terminator:
        return f"'{(x if x.is_terminator else y).opcode}' must stay last in its block"
    xd, yd = {d.name for d in x.defs}, {d.name for d in y.defs}
    for names, text in ((xd & set(y.uses), "it defines %{}, which that instruction reads"),
                        (yd & set(x.uses), "it reads %{}, which that instruction defines"),
                        (xd & yd, "both define %{}")):
        if names:
            return text.format(sorted(names)[0])
    mx, my = memory_access(x, widths), memory_access(y, widths)
    if mx and my and may_alias(mx, my):
        return f"a {mx.kind}.{mx.space} and a {my.kind}.{my.space} may touch the same memory"
    return None


def widths_of(program: Program) -> dict[str, int]:
    """Value name -> width in 32-bit words, for :func:`dependence`."""
    return {name: v.width for name, v in program.values.items()}


def instruction_key(ins: Instruction) -> tuple:
    """What makes two instructions the same instruction: all but the phase label (a view's colour)."""
    return (ins.opcode, ins.defs, ins.operands, ins.guard, ins.guard_negated)


def _text(ins: Instruction, limit: int = 80) -> str:
    text = str(ins)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reordering_problem(program: Program, reference: Program, label: str = "the reference") -> str | None:
    """Why ``program`` is not ``reference`` reordered within its dependences (see the module invariant), naming
    the first block, instruction or dependence at fault; None when it is."""
    names, ref_names = [b.name for b in program.blocks], [b.name for b in reference.blocks]
    if names != ref_names:
        return _block_difference(names, ref_names, label)
    widths = widths_of(reference)
    for b, (block, ref_block) in enumerate(zip(program.blocks, reference.blocks)):
        at, ref_at = program.block_starts[b], reference.block_starts[b]
        order = _matching(block.instructions, ref_block.instructions, at, ref_at)
        if isinstance(order, str):
            return f"block {block.name!r}: {order.replace('THE REFERENCE', label)}"
        problem = _broken_dependence(block.instructions, ref_block.instructions, order, widths, at)
        if problem:
            return f"block {block.name!r}: {problem}"
    return None


def moved_instructions(program: Program, reference: Program) -> int:
    """How many instructions of ``program`` stand elsewhere than in ``reference`` (a reordering of it)."""
    return sum(a != b for a, b in zip(map(instruction_key, program.instructions),
                                      map(instruction_key, reference.instructions)))


def _block_difference(names: list, ref_names: list, label: str) -> str:
    for k, (a, b) in enumerate(zip(names, ref_names)):
        if a != b:
            return f"block {k} is {a!r} where {label} has {b!r}: the block structure differs"
    return f"the program has {len(names)} blocks where {label} has {len(ref_names)}: the block structure differs"


def _matching(body: tuple, ref_body: tuple, at: int, ref_at: int):
    """For each instruction of ``body``, the index of the reference instruction it stands for (the k-th copy
    of an instruction for the k-th), or a sentence naming the first instruction without a partner (by its
    linear index: the blocks start at ``at`` and ``ref_at``)."""
    where = defaultdict(list)
    for j, ins in enumerate(ref_body):
        where[instruction_key(ins)].append(j)
    for slots in where.values():
        slots.reverse()
    order = []
    for i, ins in enumerate(body):
        slots = where.get(instruction_key(ins))
        if not slots:
            return f"instruction {at + i} ({_text(ins)}) is not in THE REFERENCE's program{_nearest(ins, ref_body, ref_at)}"
        order.append(slots.pop())
    left = sorted(j for slots in where.values() for j in slots)
    if left:
        return (f"THE REFERENCE's instruction {ref_at + left[0]} ({_text(ref_body[left[0]])}) is missing from the "
                "program")
    return order


def _nearest(ins: Instruction, ref_body: tuple, ref_at: int) -> str:
    """Where the reference has an instruction that defines the same values (a changed instruction)."""
    for j, ref in enumerate(ref_body):
        if ins.defs and ref.defs == ins.defs and instruction_key(ref) != instruction_key(ins):
            return f" (there, instruction {ref_at + j} defines the same: {_text(ref)})"
    return ""


def _broken_dependence(body: tuple, ref_body: tuple, order: list, widths: dict, at: int) -> str | None:
    """The first dependence of the reference that the permutation ``order`` (body position -> reference
    index) breaks, as a sentence naming linear indices (the block starts at ``at``); None when it keeps
    them all."""
    n = len(order)
    pos = [0] * n                      # reference index -> position in body
    for i, j in enumerate(order):
        pos[j] = i
    broken = _terminator_breaks(ref_body, pos) + _value_breaks(ref_body, pos) + _memory_breaks(ref_body, pos, widths)
    if not broken:
        return None
    a, b = min(broken, key=lambda p: (max(pos[p[0]], pos[p[1]]), p))
    why = dependence(ref_body[a], ref_body[b], widths)
    return (f"instruction {at + pos[a]} ({_text(ref_body[a])}) now comes after instruction {at + pos[b]} "
            f"({_text(ref_body[b])}), which the reference runs after it: {why}")


def _terminator_breaks(ref_body: tuple, pos: list) -> list:
    """A terminator is ordered against every instruction: it must keep its place."""
    out = []
    for j, ins in enumerate(ref_body):
        if ins.is_terminator and pos[j] != j:
            k = next(i for i in range(len(ref_body)) if (i < j) != (pos[i] < pos[j]) and i != j)
            out.append((min(j, k), max(j, k)))
    return out


def _value_breaks(ref_body: tuple, pos: list) -> list:
    """Reference pairs (a, b), a before b, that touch one value, one of them defining it, now in the other
    order. Per value, the defines stay in order and each read stays between the define before it and the
    define after it; with transitivity that is every such pair."""
    accesses = defaultdict(list)       # value -> [(reference index, defines)]
    for j, ins in enumerate(ref_body):
        defined = {d.name for d in ins.defs}
        for name in dict.fromkeys((*ins.uses, *defined)):
            accesses[name].append((j, name in defined))
    out = []
    for seq in accesses.values():
        last_def, reads = None, []       # the define before the current group of reads, and those reads
        for j, defines in seq:
            if last_def is not None and pos[last_def] > pos[j]:
                out.append((last_def, j))
            if defines:
                out.extend((r, j) for r in reads if pos[r] > pos[j])
                last_def, reads = j, []
            else:
                reads.append(j)
    return out


def _memory_breaks(ref_body: tuple, pos: list, widths: dict) -> list:
    """Reference pairs that may alias (a store against any access of its space) now in the other order."""
    by_space = defaultdict(list)
    for j, ins in enumerate(ref_body):
        m = memory_access(ins, widths)
        if m is not None:
            by_space[m.space].append((j, m))
    out = []
    for items in by_space.values():
        index = np.array([j for j, _ in items])
        where = np.array([pos[j] for j, _ in items])
        bases = {}
        base = np.array([bases.setdefault(m.bases, len(bases)) for _, m in items])
        start = np.array([m.offset for _, m in items], dtype=object)
        end = np.array([m.offset + m.size for _, m in items], dtype=object)
        for k, (j, m) in enumerate(items):
            if m.kind != "st":
                continue
            alias = (base != base[k]) | ((start < end[k]) & (start[k] < end)).astype(bool)
            alias[k] = False
            flipped = alias & ((index < j) != (where < where[k]))
            out.extend((min(j, int(i)), max(j, int(i))) for i in index[flipped])
    return out
