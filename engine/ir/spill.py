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
>>> from engine.ir.parser import parse
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
from dataclasses import dataclass

import numpy as np

from engine.base.fields import digits
from engine.base.limits import MAX_SPILL_SLOT
from engine.ir.core import Block, Imm, Instruction, Program, Use, Value, replace_blocks
from engine.ir.rules import SPECIAL_REGISTERS

#: integer arithmetic a value may be rematerialised by (its result a function of its operands alone); floating
#: point is left out, since a recomputed ``mul`` may be contracted into its reader's ``fma`` by NVVM or ptxas
#: and differ from the kept value in its last bit
REMAT_ARITHMETIC = frozenset({"add", "sub", "mul", "min", "max", "div.u32", "rem.u32", "fma", "mul.wide.s32",
                              "mov", "cvt"})
#: result types integer arithmetic may be rematerialised at
REMAT_INTEGER_TYPES = frozenset({"i32", "u64"})
_LEAVES = frozenset({"param", *SPECIAL_REGISTERS})


def spill_slot(ins: Instruction) -> int | None:
    """The local-memory slot a ``st.local`` / ``ld.local`` names, when it is a decimal integer in
    0..MAX_SPILL_SLOT (512 KiB of local memory per thread); None otherwise.

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction
    >>> far = Instruction("st.local", (), (Imm("9999999"), Use("x")))   # the parser refuses it; code can make it
    >>> spill_slot(parse_instruction("st.local 3, %x")), spill_slot(far)
    (3, None)
    """
    slot = ins.operands[0].text if ins.operands and isinstance(ins.operands[0], Imm) else ""
    return int(slot) if digits(slot) and int(slot) <= MAX_SPILL_SLOT else None


def _store(value: Value, slot: int, phase: str | None = None) -> Instruction:
    return Instruction("st.local", (), (_slot(slot), Use(value.name)), phase=phase)


def _reload(name: str, type_: str, slot: int, phase: str | None = None) -> Instruction:
    return Instruction("ld.local", (Value(name, type_),), (_slot(slot),), phase=phase)


@dataclass(frozen=True)
class SpillCode:
    """Where a program's spill code is.

    Attributes
    ----------
    spills : spilled value -> local-memory slot
    loads, stores : linear indices of the reloads and of the stores, in order
    origin : each copy (a reload ``v.rK``, a later definition ``v.dK``, a rematerialised copy ``v.mK``) -> the
        value ``v`` it stands for
    remats : linear indices of the rematerialising instructions (the definitions of the ``v.mK``), in order
    """

    spills: dict
    loads: tuple[int, ...]
    stores: tuple[int, ...]
    origin: dict
    remats: tuple[int, ...] = ()

    @property
    def rematerialised(self) -> frozenset[str]:
        """The values with rematerialised copies (the values their copies stand for)."""
        return frozenset(v for name, v in self.origin.items() if name[len(v) + 1 : len(v) + 2] == "m")

    @property
    def indices(self) -> frozenset[int]:
        """Linear indices of every spill instruction."""
        return frozenset(self.loads) | frozenset(self.stores)


@dataclass(frozen=True)
class SpillInsertion:
    """One spill insertion: the program before and after it, and where its spill code landed.

    Attributes
    ----------
    before, program : the program without and with this insertion's spill code
    slots : the values this insertion spilled -> their slots
    added : (2, instructions of ``before``) array: spill instructions put before and after each one
    touching : sorted linear indices (in ``before``) of the instructions rewritten
    copies : the values this insertion created (reloads, later definitions, rematerialised copies)
    code : all the spill code of ``program``: this insertion's and that of ``before`` when it was passed in
    remat : the values this insertion rematerialised (no slot; every read of each now reads a copy)
    """

    before: Program
    program: Program
    slots: dict
    added: np.ndarray
    touching: tuple[int, ...]
    copies: frozenset[str]
    code: SpillCode
    remat: frozenset[str] = frozenset()

    @property
    def changed(self) -> frozenset[str]:
        """Every value whose definitions or reads this insertion changed."""
        return frozenset(self.slots) | self.remat | self.copies


@functools.lru_cache(maxsize=1 << 16)
def _slot(slot: int) -> Imm:
    return Imm(str(slot))


def insert_spill_code(program: Program, slots: dict[str, int]) -> Program:
    """``program`` with the values in ``slots`` kept in local memory between uses."""
    return spill_insertion(program, slots).program


def spill_insertion(program: Program, slots: dict[str, int], touching=None,
                    known: SpillCode | None = None, remat=(), reuse: int = 0) -> SpillInsertion:
    """Insert spill code for ``slots``, and rematerialising code for the values in ``remat`` (each of them
    in :func:`remat_definitions` of ``program``, none in ``slots``); the record of where it landed.

    ``reuse`` splits each spilled value's range around its reads instead of reloading for every one: a read
    within ``reuse`` instructions (of ``program``) of the value's last reload, definition or read in the same
    block reads the copy already in a register, so one reload serves a run of nearby reads and only the
    stretches between runs stay in memory (0: a reload before every read, the canonical spill code).
    Rematerialised copies are reused the same way.

    ``touching``, when given, lists (sorted) the linear indices of the
    instructions that read or write a value in ``slots`` (an allocator knows
    them from its analysis); every other instruction is carried over as it
    is. ``known``, the spill code ``program`` already holds, is carried into
    the record's ``code`` at its new positions, so :func:`spill_code_of`
    need not search for it.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
    >>> r = spill_insertion(p, {"x": 3})
    >>> r.code.loads, r.code.stores, sorted(r.copies)
    ((2,), (1,), ['x.r1'])
    >>> r.code == spill_code_of(r.program, {"x": 3})
    True
    >>> p = parse(".kernel k\\n.block b\\n  %t:i32 = sreg.tid.x\\n  %i:i32 = mul %t, 4\\n"
    ...           "  %pa:u64 = param A\\n  st.global %pa, 0, %i\\n  exit\\n")
    >>> r = spill_insertion(p, {}, remat={"i"})
    >>> print(r.program, end="")
    .kernel k
    .block b
      %t:i32 = sreg.tid.x
      %i:i32 = mul %t, 4
      %pa:u64 = param A
      %t.m1:i32 = sreg.tid.x
      %i.m1:i32 = mul %t.m1, 4
      st.global %pa, 0, %i.m1
      exit
    >>> r.code.remats, sorted(r.code.rematerialised), remove_spill_code(r.program, {}) == p
    ((3, 4), ['i', 't'], True)
    """
    remat = frozenset(remat)
    definitions = remat_definitions(program, known.origin if known is not None else None) if remat else {}
    bad = sorted(v for v in remat if v not in definitions or v in slots)
    if bad:
        raise ValueError(f"%{bad[0]} cannot be rematerialised in {program.name}: "
                         + ("it is also spilled" if bad[0] in slots else "its value depends on where it is computed"))
    if touching is None:
        touching = [i for i, ins in enumerate(program.instructions) if _touches(ins, slots, remat)]
    return _Insertion(program, slots, remat, definitions, reuse).run(touching, known)


def _touches(ins: Instruction, slots: dict, remat=frozenset()) -> bool:
    return (not slots.keys().isdisjoint(ins.uses) or any(d.name in slots or d.name in remat for d in ins.defs)
            or not remat.isdisjoint(ins.uses))


class _Insertion:
    """One pass inserting spill code: fresh copy names, and where each spill instruction lands."""

    def __init__(self, program: Program, slots: dict[str, int], remat=frozenset(), definitions=None, reuse: int = 0):
        self.program, self.slots, self.reuse = program, slots, reuse
        # with reuse: value -> (the copy holding it, its block, the index of the instruction that last read or
        # defined it there); rematerialised values under ("m", name)
        self.held: dict = {}
        self.block = -1
        self.remat, self.definitions = remat, definitions or {}
        self.counters = {"r": dict.fromkeys(slots, 0), "d": dict.fromkeys(slots, 0), "m": {}}
        self.remats: list[int] = []
        self.taken = set(program.values)
        self.defined: set[str] = set()
        self.loads: list[int] = []  # where the reloads and the stores land, in order
        self.stores: list[int] = []
        self.origin: dict[str, str] = {}
        self.added = np.zeros((2, len(program.instructions)), dtype=np.int64)  # spill code before/after each

    def fresh(self, v: str, kind: str) -> str:
        counter = self.counters[kind]
        k = counter.get(v, 0) + 1
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

    def run(self, touching, known: SpillCode | None) -> SpillInsertion:
        self.touching = tuple(touching)
        blocks, out, todo = [], 0, iter(self.touching)
        nxt = next(todo, None)
        for k, (b, first) in enumerate(zip(self.program.blocks, self.program.block_starts)):
            self.block = k
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
        return SpillInsertion(self.program, result, dict(self.slots), self.added, self.touching,
                              frozenset(self.origin), self._code(known), self.remat)

    def _rewrite(self, i: int, ins: Instruction, body: list, out: int) -> None:
        self.at = i
        before, main, after = self._split(ins)
        at = out + len(body)
        for k, extra in enumerate(before):
            (self.remats if _copy_kind(extra.defs[0].name, self.origin) == "m" else self.loads).append(at + k)
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
                copy = renamed[name] = self._held(name)
                if copy is None:
                    copy = renamed[name] = self.fresh(name, "r")
                    before.append(_reload(copy, values[name].type, slots[name], phase))
                self._hold(name, copy)
            elif name in self.remat and name not in renamed:
                renamed[name] = self._rematerialise(name, before, {}, phase)
        operands = ins.operands
        if renamed:
            operands = tuple([Use(renamed[op.name]) if op.__class__ is Use and op.name in renamed else op
                              for op in operands])
        defs, after = ins.defs, []
        if any(d.name in slots for d in defs):
            defs = tuple([Value(self.def_name(d.name), d.type) if d.name in slots else d
                          for d in ins.defs])
            spilled = [(d, slots[old.name]) for d, old in zip(defs, ins.defs) if old.name in slots]
            for d, old in zip(defs, ins.defs):
                if old.name in slots:
                    self._hold(old.name, d.name)   # its register holds the new value after the store too
            if ins.guard is not None:
                before.extend(_reload(d.name, d.type, slot, phase) for d, slot in spilled)
            after = [_store(d, slot, phase) for d, slot in spilled]
        elif not renamed:
            return before, ins, after
        main = Instruction(ins.opcode, defs, operands, ins.guard, ins.guard_negated, phase)
        return before, main, after

    def _held(self, key) -> str | None:
        """The copy still holding ``key``'s value for a read here (``reuse``), None: reload it."""
        held = self.held.get(key) if self.reuse else None
        if held is not None and held[1] == self.block and self.at - held[2] <= self.reuse:
            return held[0]
        return None

    def _hold(self, key, copy: str) -> None:
        if self.reuse:
            self.held[key] = (copy, self.block, self.at)

    def _rematerialise(self, name: str, before: list, made: dict, phase) -> str:
        """Append to ``before`` the instructions that compute ``name`` again (what its definition reads
        first, each once: ``made``); the copy's name."""
        if name in made:
            return made[name]
        reused = self._held(("m", name))
        if reused is not None:
            self._hold(("m", name), reused)
            made[name] = reused
            return reused
        definition = self.definitions[name]
        operands = tuple(Use(self._rematerialise(op.name, before, made, phase)) if op.__class__ is Use else op
                         for op in definition.operands)
        copy = made[name] = self.fresh(name, "m")
        before.append(Instruction(definition.opcode, (Value(copy, definition.defs[0].type),), operands,
                                  phase=phase))
        self._hold(("m", name), copy)
        return copy

    def _code(self, known: SpillCode | None) -> SpillCode:
        """This insertion's spill code, with ``known`` (the old program's) moved to its new positions."""
        spills, origin, loads, stores, remats = dict(self.slots), dict(self.origin), self.loads, self.stores, self.remats
        if known is not None:
            spills = {**known.spills, **spills}
            origin = {**known.origin, **origin}
            total = self.added.sum(axis=0)
            moved = np.arange(len(total)) + np.cumsum(total) - total + self.added[0]
            loads = sorted(loads + moved[list(known.loads)].tolist())
            stores = sorted(stores + moved[list(known.stores)].tolist())
            remats = sorted(remats + moved[list(known.remats)].tolist())
        return SpillCode(spills, tuple(loads), tuple(stores), origin, tuple(remats))


def _copy_kind(name: str, origin: dict) -> str | None:
    """"r", "d" or "m" for a copy (a reload, a later definition, a rematerialised copy); None otherwise."""
    v = origin.get(name)
    return None if v is None else name[len(v) + 1]


def spill_code_of(program: Program, spills: dict[str, int]) -> SpillCode:
    """Where the spill code for ``spills`` is in ``program`` (found by reading it).

    Copies are the reloads ``v.rK`` and the later definitions ``v.dK`` of a
    spilled value ``v``. A caller that inserted the code has the same record
    from :func:`spill_insertion` and need not search.
    """
    indices, origin, remats = _find_spill_code(program, spills)
    instructions = program.instructions
    ordered = sorted(indices)
    return SpillCode(dict(spills), tuple(i for i in ordered if instructions[i].opcode == "ld.local"),
                     tuple(i for i in ordered if instructions[i].opcode == "st.local"), origin, tuple(sorted(remats)))


def _find_spill_code(program: Program, spills: dict[str, int]) -> tuple[set[int], dict[str, str], set[int]]:
    """(indices of the spill stores and reloads, copy -> the value it stands for, indices of the
    rematerialising instructions)."""
    by_slot: dict[str, list[str]] = {}  # values that never live at once may share a slot (the allocators' frames)
    for v, slot in spills.items():
        by_slot.setdefault(str(slot), []).append(v)
    indices, origin = set(), {}
    if not spills:
        return indices, origin, _find_remats(program, origin)

    def copy_of(v: str, name: str) -> bool:
        if name == v:
            return True
        suffix = name[len(v) + 1 :]
        if name.startswith(v) and name[len(v) : len(v) + 1] == "." and suffix[:1] in ("r", "d") and suffix[1:].isdigit():
            origin[name] = v
            return True
        return False

    for i, ins in enumerate(program.instructions):
        if ins.opcode not in ("st.local", "ld.local") or not ins.operands or not isinstance(ins.operands[0], Imm):
            continue
        for v in by_slot.get(ins.operands[0].text, ()):
            if ins.opcode == "st.local" and len(ins.operands) == 2 and isinstance(ins.operands[1], Use):
                if copy_of(v, ins.operands[1].name):
                    indices.add(i)
                    break
            elif ins.opcode == "ld.local" and len(ins.defs) == 1 and len(ins.operands) == 1 \
                    and copy_of(v, ins.defs[0].name):
                indices.add(i)
                break
    # a copy is named for its value whether or not its spill instruction is still there: a later definition
    # whose store was deleted from a plan file is still a definition of the spilled value (the slot goes stale)
    for name in program.values:
        value, dot, suffix = name.rpartition(".")
        if dot and value in spills and suffix[:1] in ("r", "d") and suffix[1:].isdigit():
            origin.setdefault(name, value)
    return indices, origin, _find_remats(program, origin)


def has_spill_code(program: Program, spills: dict) -> bool:
    """Whether ``program`` may hold spill code: a spilled value, or a value named as a rematerialised copy
    (``v.mK``; :func:`remove_spill_code` then decides whether it is one). Cheap: no instruction is read."""
    values = program.values
    return bool(spills) or any(_remat_name(name, values) is not None for name in values if ".m" in name)


def _remat_name(name: str, values: dict) -> str | None:
    """The value a name ``v.mK`` would be a rematerialised copy of (None: not such a name)."""
    value, dot, suffix = name.rpartition(".")
    return value if dot and suffix[:1] == "m" and suffix[1:].isdigit() and value in values else None


def _find_remats(program: Program, origin: dict) -> set[int]:
    """The rematerialising instructions of ``program``: each defines a ``v.mK`` by the one definition of a
    rematerialisable ``v`` (:func:`remat_definitions`), the copies it reads named back; their copies go into
    ``origin``. An instruction that only looks like one (another opcode, operand or type) is not spill code."""
    values = program.values
    candidates = {name: v for name in values if (v := _remat_name(name, values)) is not None}
    if not candidates:
        return set()
    trial = {**origin, **candidates}
    definitions = remat_definitions(program, trial)
    found = set()
    for i, ins in enumerate(program.instructions):
        if len(ins.defs) == 1 and ins.defs[0].name in candidates and ins.guard is None:
            want = definitions.get(candidates[ins.defs[0].name])
            if want is not None and _same_computation(_rename(ins, trial), want):
                found.add(i)
    for i in found:
        name = program.instructions[i].defs[0].name
        origin[name] = candidates[name]
    return found


def _same_computation(a: Instruction, b: Instruction) -> bool:
    return (a.opcode, a.operands, [d.type for d in a.defs]) == (b.opcode, b.operands, [d.type for d in b.defs])


def remat_definitions(program: Program, origin: dict | None = None) -> dict[str, Instruction]:
    """The values of ``program`` that may be rematerialised -> their one definition, the values it reads
    named back through ``origin`` (a reload ``%u.r2`` read as ``%u``).

    A value qualifies when it has the same value wherever it is computed: exactly one definition (copies
    ``v.mK`` and reloads ``v.rK`` aside), unguarded, of a general register, that is a ``param`` read, a special register, a
    ``mov`` of a constant, or integer arithmetic (:data:`REMAT_ARITHMETIC`, an ``i32`` or ``u64`` result)
    on constants and values that qualify.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %t:i32 = sreg.tid.x\\n  %o:u64 = mul.wide.s32 %t, 4\\n"
    ...           "  %a:u64 = add %pa, %o\\n  %x:f32 = ld.global %a, 0\\n  %y:f32 = mul %x, 2\\n"
    ...           "  %i:i32 = mov 0\\n  %i:i32 = add %i, 1\\n  st.global %a, 0, %y\\n  exit\\n")
    >>> sorted(remat_definitions(p))
    ['a', 'o', 'pa', 't']
    """
    origin = origin or {}
    values = program.values
    definitions: dict[str, list] = {}
    for ins in program.instructions:
        for d in ins.defs:
            name = origin.get(d.name, d.name)
            if _copy_kind(d.name, origin) not in ("m", "r"):  # copies (reloads, recomputations) define nothing new
                definitions.setdefault(name, []).append(ins)
    found: dict[str, Instruction] = {}
    pending = {}
    for name, defs in definitions.items():
        ins = defs[0]
        if len(defs) == 1 and ins.guard is None and len(ins.defs) == 1 and values[ins.defs[0].name].width:
            pending[name] = _rename(ins, origin)
    changed = True
    while changed:
        changed = False
        for name, ins in list(pending.items()):
            verdict = _rematerialisable(ins, found)
            if verdict is not None:
                del pending[name]
                if verdict:
                    found[name] = ins
                    changed = True
    return found


def _rematerialisable(ins: Instruction, found: dict) -> bool | None:
    """Whether a definition qualifies given the values ``found`` so far; None: not yet known (it reads a
    value not found yet)."""
    uses = [op.name for op in ins.operands if op.__class__ is Use]
    if ins.opcode in _LEAVES:
        return True
    if ins.opcode == "mov" and not uses:
        return True
    if ins.opcode not in REMAT_ARITHMETIC or ins.defs[0].type not in REMAT_INTEGER_TYPES:
        return False
    return True if all(u in found for u in uses) else None




def remove_spill_code(program: Program, spills: dict[str, int]) -> Program:
    """The program before spill code was inserted for ``spills``: the one meaning of "the program without
    spill code" in RegTune (the identity proof, the checks, predict and the kernels' compiler-spills reference
    all use it).

    The spill code is each spilled value's stores and reloads at its own slot (:func:`spill_code_of`); a
    reload or store of a spilled value at another spilled value's slot (spill code a hand edit broke, which
    a plan file never passes, :func:`engine.check.verify.static_conflicts`) is spill code too and goes with the
    rest, so the program keeps its meaning whatever the plan's spill code does.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block entry\\n  %x:f32 = mov 1\\n  st.local 0, %x\\n  %y:f32 = mov 2\\n"
    ...           "  st.local 1, %y\\n  %x.r1:f32 = ld.local 1\\n  %z:f32 = add %x.r1, %y\\n  exit\\n")
    >>> print(remove_spill_code(p, {"x": 0, "y": 1}), end="")
    .kernel k
    .block entry
      %x:f32 = mov 1
      %y:f32 = mov 2
      %z:f32 = add %x, %y
      exit
    """
    drop, origin, remats = _find_spill_code(program, spills)
    drop |= remats
    slots = {str(slot) for slot in spills.values()}
    blocks, at = [], 0
    for b in program.blocks:
        body = []
        for ins in b.instructions:
            if at not in drop:
                ins = _rename(ins, origin)
                if not _stray(ins, spills, slots):
                    body.append(ins)
            at += 1
        blocks.append(Block(b.name, tuple(body)))
    return replace_blocks(program, blocks)


def _stray(ins: Instruction, spills: dict, slots: set) -> bool:
    """A load or store of a spilled value (its copies renamed back) at a spill slot that is not its own."""
    if ins.opcode == "ld.local" and len(ins.defs) == 1:
        value = ins.defs[0].name
    elif ins.opcode == "st.local" and len(ins.operands) == 2 and isinstance(ins.operands[1], Use):
        value = ins.operands[1].name
    else:
        return False
    return value in spills and isinstance(ins.operands[0], Imm) and ins.operands[0].text in slots


def _rename(ins: Instruction, origin: dict[str, str]) -> Instruction:
    if origin.keys().isdisjoint(ins.uses) and not any(d.name in origin for d in ins.defs):
        return ins
    operands = tuple(Use(origin.get(op.name, op.name)) if isinstance(op, Use) else op for op in ins.operands)
    defs = tuple(Value(origin.get(d.name, d.name), d.type) for d in ins.defs)
    return Instruction(ins.opcode, defs, operands, ins.guard, ins.guard_negated, ins.phase)


def first_free_slot(program: Program) -> int:
    """A local-memory slot number above every numeric one the program uses."""
    used = [-1]
    for ins in program.instructions:
        if ins.opcode.startswith(("ld.local", "st.local")) and ins.operands and isinstance(ins.operands[0], Imm):
            try:
                used.append(int(ins.operands[0].text, 0))
            except ValueError:
                pass
    return max(used) + 1


def renumber_slots(program: Program, code: SpillCode, slots: dict[str, int]) -> tuple[Program, SpillCode]:
    """``program`` with the spill code in ``code`` moved to the new ``slots`` (spilled value -> slot), and its
    record: the same instructions at the same places, only their slot numbers changed.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  %y:f32 = mov 2\\n"
    ...           "  st.global %y, 0, %y\\n  exit\\n")
    >>> r = spill_insertion(p, {"x": 0, "y": 1})
    >>> q, code = renumber_slots(r.program, r.code, {"x": 0, "y": 0})
    >>> [str(q.instructions[i]) for i in code.stores], code.spills
    (['st.local 0, %x', 'st.local 0, %y'], {'x': 0, 'y': 0})
    """
    at = {i: slots[code.origin.get(name, name)] for i, name in _spill_code_values(program, code)}
    blocks, i = [], 0
    for b in program.blocks:
        body = []
        for ins in b.instructions:
            if i in at:
                ins = Instruction(ins.opcode, ins.defs, (_slot(at[i]),) + tuple(ins.operands[1:]), ins.guard,
                                  ins.guard_negated, ins.phase)
            body.append(ins)
            i += 1
        blocks.append(Block(b.name, tuple(body)))
    return replace_blocks(program, blocks), SpillCode(dict(slots), code.loads, code.stores, code.origin, code.remats)


def _spill_code_values(program: Program, code: SpillCode):
    """(index, value name) of each spill instruction in ``code``: the value it stores or reloads."""
    instructions = program.instructions
    for i in code.stores:
        yield i, instructions[i].operands[1].name
    for i in code.loads:
        yield i, instructions[i].defs[0].name
