"""Spill code: insert it for chosen values, and strip it to recover the original.

Invariant: ``remove_spill_code(insert_spill_code(p, slots), slots) == p``.
Spill code is ordinary instructions in a canonical place: a store
``st.local SLOT, %v`` right after each definition of ``v`` and a reload
``%v.rK:T = ld.local SLOT`` right before each instruction that reads ``v``
(K counts reloads of ``v`` in program order from 1). The first definition
of ``v`` keeps its name; each later one is renamed ``v.dK``, so every piece
of a spilled value lives for one instruction and nothing spans a loop. A
guarded definition first reloads its own name, so the old value survives
when the guard is false.

Examples
--------
>>> from engine.ir import parse
>>> p = parse('''.kernel k
... .block entry
...   %x:f32 = mov 1
...   %y:f32 = add %x, %x
...   st.global %y, 0, %x
...   exit
... ''')
>>> s = insert_spill_code(p, {"x": 0})
>>> print(s, end="")
.kernel k
.block entry
  %x:f32 = mov 1
  st.local 0, %x
  %x.r1:f32 = ld.local 0
  %y:f32 = add %x.r1, %x.r1
  %x.r2:f32 = ld.local 0
  st.global %y, 0, %x.r2
  exit
>>> remove_spill_code(s, {"x": 0}) == p
True
"""

from __future__ import annotations

import functools

import numpy as np

from engine.fields import digits
from engine.gcpause import paused_gc
from engine.ir import Block, Imm, Instruction, Program, Use, Value, replace_blocks
from engine.limits import MAX_SPILL_SLOT


def spill_slot(ins: Instruction) -> int | None:
    """The local-memory slot a ``st.local`` / ``ld.local`` names, when it is a decimal integer in
    0..MAX_SPILL_SLOT (512 KiB of local memory per thread); None otherwise.

    Examples
    --------
    >>> from engine.ir import parse_instruction
    >>> spill_slot(parse_instruction("st.local 3, %x")), spill_slot(parse_instruction("st.local 9999999, %x"))
    (3, None)
    """
    slot = ins.operands[0].text if ins.operands and isinstance(ins.operands[0], Imm) else ""
    return int(slot) if digits(slot) and int(slot) <= MAX_SPILL_SLOT else None


def reload_name(value: str, k: int) -> str:
    """Name of the k-th reload of ``value``."""
    return f"{value}.r{k}"


def _store(value: Value, slot: int, phase: str | None = None) -> Instruction:
    return Instruction.make("st.local", (), (_slot(slot), Use(value.name)), phase=phase)


def _reload(name: str, type_: str, slot: int, phase: str | None = None) -> Instruction:
    return Instruction.make("ld.local", (Value.make(name, type_),), (_slot(slot),), phase=phase)


@functools.lru_cache(maxsize=1 << 16)
def _slot(slot: int) -> Imm:
    return Imm(str(slot))


@paused_gc
def insert_spill_code(program: Program, slots: dict[str, int], touching=None) -> Program:
    """``program`` with the values in ``slots`` kept in local memory between uses.

    ``touching``, when given, lists (sorted) the linear indices of the
    instructions that read or write a value in ``slots`` (an allocator knows
    them from its analysis); every other instruction is carried over as it
    is. The result records where its spill code is (with that of
    ``program``, where ``program`` recorded its own), so
    :func:`spill_code_of` need not search for it.
    """
    if touching is None:
        touching = [i for i, ins in enumerate(program.instructions) if _touches(ins, slots)]
    return _Insertion(program, slots).run(touching)


def _touches(ins: Instruction, slots: dict) -> bool:
    return not slots.keys().isdisjoint(ins.uses) or any(d.name in slots for d in ins.defs)


class _Insertion:
    """One pass inserting spill code: fresh copy names, and where each spill instruction lands."""

    def __init__(self, program: Program, slots: dict[str, int]):
        self.program, self.slots = program, slots
        self.counters = {"r": dict.fromkeys(slots, 0), "d": dict.fromkeys(slots, 0)}
        self.taken = set(program.values)
        self.defined: set[str] = set()
        self.loads: list[int] = []  # where the reloads and the stores land, in order
        self.stores: list[int] = []
        self.origin: dict[str, str] = {}
        self.added = np.zeros((2, len(program.instructions)), dtype=np.int64)  # spill code before/after each

    def fresh(self, v: str, kind: str) -> str:
        counter = self.counters[kind]
        k = counter[v] + 1
        name = f"{v}.{kind}{k}"
        while name in self.taken:
            k += 1
            name = f"{v}.{kind}{k}"
        counter[v] = k
        self.taken.add(name)
        self.origin[name] = v
        return name

    def def_name(self, v: str) -> str:
        if v in self.defined:
            return self.fresh(v, "d")
        self.defined.add(v)
        return v

    def run(self, touching) -> Program:
        self.touching = list(touching)
        blocks, out, todo = [], 0, iter(self.touching)
        nxt = next(todo, None)
        for b, first in zip(self.program.blocks, self.program.block_starts):
            body: list[Instruction] = []
            done, end = first, first + len(b.instructions)
            while nxt is not None and nxt < end:
                body += b.instructions[done - first : nxt - first]
                self._rewrite(nxt, b.instructions[nxt - first], body, out)
                done, nxt = nxt + 1, next(todo, None)
            body += b.instructions[done - first :]
            blocks.append(Block(b.name, tuple(body)))
            out += len(body)
        result = replace_blocks(self.program, blocks)
        self._record(result)
        return result

    def _rewrite(self, i: int, ins: Instruction, body: list, out: int) -> None:
        before, main, after = self._split(ins)
        at = out + len(body)
        self.loads.extend(range(at, at + len(before)))
        self.stores.extend(range(at + len(before) + 1, at + len(before) + 1 + len(after)))
        self.added[0, i], self.added[1, i] = len(before), len(after)
        body += before
        body.append(main)
        body += after

    def _split(self, ins: Instruction) -> tuple[list, Instruction, list]:
        """(reloads before, the instruction rewritten, stores after) for an instruction that touches a spilled value."""
        slots, values, phase, before, renamed = self.slots, self.program.values, ins.phase, [], {}
        for name in ins.uses:
            if name in slots and name not in renamed:
                copy = renamed[name] = self.fresh(name, "r")
                before.append(_reload(copy, values[name].type, slots[name], phase))
        operands = ins.operands
        if renamed:
            operands = tuple([Use(renamed[op.name]) if type(op) is Use and op.name in renamed else op for op in operands])
        defs, after = ins.defs, []
        if any(d.name in slots for d in defs):
            defs = tuple([Value.make(self.def_name(d.name), d.type) if d.name in slots else d for d in ins.defs])
            spilled = [(d, slots[old.name]) for d, old in zip(defs, ins.defs) if old.name in slots]
            if ins.guard is not None:
                before.extend(_reload(d.name, d.type, slot, phase) for d, slot in spilled)
            after = [_store(d, slot, phase) for d, slot in spilled]
        return before, Instruction.make(ins.opcode, defs, operands, ins.guard, ins.guard_negated, phase), after

    def _record(self, result: Program) -> None:
        spills, origin, loads, stores = dict(self.slots), dict(self.origin), self.loads, self.stores
        known = self.program.cache.get("spill_code")
        if known is not None:
            spills.update(known[0])
            origin.update(known[2])
            total = self.added.sum(axis=0)
            moved = np.arange(len(total)) + np.cumsum(total) - total + self.added[0]
            loads = sorted(loads + moved[known[3]].tolist())
            stores = sorted(stores + moved[known[4]].tolist())
        result.cache["spill_code"] = (spills, set(loads) | set(stores), origin, loads, stores)
        # what engine.respill needs to update an analysis instead of redoing it
        result.cache["insertion"] = (self.program, self.slots, self.added, self.touching, set(self.origin))


def spill_loads_and_stores(program: Program, spills: dict[str, int]) -> tuple[list[int], list[int]]:
    """Linear indices of the spill reloads and of the spill stores, each in order."""
    recorded = program.cache.get("spill_code")
    if recorded is not None and recorded[0] == spills:
        return recorded[3], recorded[4]
    indices = sorted(spill_code_of(program, spills)[0])
    instructions = program.instructions
    return ([i for i in indices if instructions[i].opcode == "ld.local"],
            [i for i in indices if instructions[i].opcode == "st.local"])


def spill_code_of(program: Program, spills: dict[str, int]) -> tuple[set[int], dict[str, str]]:
    """Linear indices of the spill instructions, and the value each renamed copy stands for.

    Copies are the reloads ``v.rK`` and the later definitions ``v.dK`` of a
    spilled value ``v``.
    """
    memo = program.cache.get("spill_code_of")
    if memo is not None and memo[0] is spills and memo[1] == len(spills):
        return memo[2]
    recorded = program.cache.get("spill_code")
    if recorded is not None and recorded[0] == spills:
        result = recorded[1], recorded[2]
    else:
        result = _find_spill_code(program, spills)
    program.cache["spill_code_of"] = (spills, len(spills), result)
    return result


def _find_spill_code(program: Program, spills: dict[str, int]) -> tuple[set[int], dict[str, str]]:
    by_slot = {str(slot): v for v, slot in spills.items()}
    indices, origin = set(), {}
    if not spills:
        return indices, origin

    def copy_of(v: str, name: str) -> bool:
        if name == v:
            return True
        suffix = name[len(v) + 1 :]
        if name.startswith(v) and name[len(v) : len(v) + 1] == "." and suffix[:1] in ("r", "d") and suffix[1:].isdigit():
            origin[name] = v
            return True
        return False

    for i, ins in enumerate(program.instructions):
        if not ins.operands or not isinstance(ins.operands[0], Imm):
            continue
        v = by_slot.get(ins.operands[0].text)
        if v is None:
            continue
        if ins.opcode == "st.local" and len(ins.operands) == 2 and isinstance(ins.operands[1], Use):
            if copy_of(v, ins.operands[1].name):
                indices.add(i)
        elif ins.opcode == "ld.local" and len(ins.defs) == 1 and len(ins.operands) == 1 and copy_of(v, ins.defs[0].name):
            indices.add(i)
    return indices, origin


def copies_made(program: Program, before: Program) -> set[str]:
    """The values spill insertion created in ``program`` from ``before`` (reloads, later definitions)."""
    insertion = program.cache.get("insertion")
    if insertion is not None and insertion[0] is before:
        return insertion[4]
    return set(program.values) - set(before.values)


def unspilled(program: Program, spills: dict[str, int]) -> Program:
    """The program before spill code was inserted for ``spills``.

    That is the allocator's own input where it recorded one with
    :func:`record_unspilled` for exactly these spills (the module invariant
    makes it equal to :func:`remove_spill_code`'s result, which is computed
    otherwise).
    """
    known = program.cache.get("unspilled")
    if known is not None and known[0] == spills:
        return known[1]
    return remove_spill_code(program, spills)


def record_unspilled(program: Program, spills: dict[str, int], original: Program) -> None:
    """Note on ``program`` that ``original`` is what it was before the spill code for ``spills``."""
    program.cache["unspilled"] = (dict(spills), original)


@paused_gc
def remove_spill_code(program: Program, spills: dict[str, int]) -> Program:
    """The program before spill code was inserted for ``spills``."""
    drop, origin = spill_code_of(program, spills)
    blocks, at = [], 0
    for b in program.blocks:
        body = []
        for ins in b.instructions:
            if at not in drop:
                body.append(_rename(ins, origin))
            at += 1
        blocks.append(Block(b.name, tuple(body)))
    return replace_blocks(program, blocks)


def _rename(ins: Instruction, origin: dict[str, str]) -> Instruction:
    if not any(n in origin for n in ins.uses + tuple(d.name for d in ins.defs)):
        return ins
    operands = tuple(Use(origin.get(op.name, op.name)) if isinstance(op, Use) else op for op in ins.operands)
    defs = tuple(Value(origin.get(d.name, d.name), d.type) for d in ins.defs)
    return Instruction(ins.opcode, defs, operands, ins.guard, ins.guard_negated, ins.phase)


def first_free_slot(program: Program) -> int:
    """A local-memory slot number above every numeric one the program uses (memoized on it)."""
    if "first_free_slot" not in program.cache:
        program.cache["first_free_slot"] = _first_free_slot(program)
    return program.cache["first_free_slot"]


def _first_free_slot(program: Program) -> int:
    used = [-1]
    for ins in program.instructions:
        if ins.opcode.startswith(("ld.local", "st.local")) and ins.operands and isinstance(ins.operands[0], Imm):
            try:
                used.append(int(ins.operands[0].text, 0))
            except ValueError:
                pass
    return max(used) + 1
