"""A symbolic allocation checker: proves a plan right for all inputs and all paths, or says where it may fail.

The approach of Cranelift's regalloc2 checker. A forward must-analysis
over the control-flow graph tracks, for every physical register and every
spill slot, the set of program values it certainly holds. The values are
those of the program *before* spill code (:func:`engine.ir.spill.remove_spill_code`):
a reload copy ``%x.r1`` or a later definition ``%x.d1`` stands for ``%x``,
as :func:`engine.ir.spill.spill_code_of` records.

- A definition of ``v`` makes its registers hold exactly ``v`` and takes
  ``v`` out of every other location (the old copies are stale).
- A spill store ``st.local S, %v`` makes slot ``S`` hold what the
  register(s) of ``v`` hold; a spill reload ``%v.r1 = ld.local S`` makes the
  copy's registers hold what ``S`` holds (nothing is killed: it is a copy).
- A rematerialising instruction ``%v.m1 = ...`` (:func:`engine.ir.spill.spill_code_of` recognises it as
  ``v``'s one definition computed again, from values that are the same wherever they are computed) makes
  its registers hold ``v`` and kills nothing: it is a copy too, computed instead of loaded.
- A guarded instruction may not run: its effect is the meet of both outcomes.
- Paths meet by intersection; loops iterate to a fixed point. A guarded
  terminator may fall through (:func:`engine.ir.core.successors`).
- A value never defined on a path is held vacuously by every location on
  it, so reading a value that the *original* program may leave undefined is
  not an error of the allocation, but a clobber on a path where it is
  defined still is.

Every read of a general-register value (operands of every instruction,
spill stores included) must find the value in each register the assignment
gives it, both halves of a 64-bit pair; every spill reload must find it in
its slot; the program's own local-memory accesses must not touch a spill
slot.

Invariant: :func:`check_allocation` returns the empty list only if, on every
path through the program and for every input, each of those reads finds
the value the program without spill code reads there; otherwise the list
holds every read that may not, as :class:`CheckError` rows sorted by
instruction, value, register, slot and message, so the order is the same on
every run. Predicates live in their own file and are not checked.

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse('''.kernel k
... .block entry
...   %pa:u64 = param A
...   %x:f32 = ld.global %pa, 0
...   %t:f32 = mov 2
...   %y:f32 = add %x, %t
...   st.global %pa, 4, %y
...   exit
... ''')
>>> check_allocation(p, {"pa": (0, 1), "x": (2,), "t": (3,), "y": (2,)}, {})
[]
>>> for e in check_allocation(p, {"pa": (0, 1), "x": (2,), "t": (2,), "y": (2,)}, {}):
...     print(e)
instruction 3 (%y:f32 = add %x, %t) reads %x from R2, which may hold %t instead (written at instruction 2)
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from engine.ir.core import Imm, Instruction, Program, Use, successors
from engine.ir.immediates import MASK64, immediate
from engine.ir.spill import spill_code_of

#: instruction kinds of the decoded program
OP, SPILL_STORE, SPILL_RELOAD, LOCAL_LOAD, LOCAL_STORE, REMAT = range(6)


@dataclass(frozen=True)
class CheckError:
    """One read the checker could not prove: where, which value, which register or slot, and why.

    Examples
    --------
    >>> e = CheckError(4, "x", 3, None, "instruction 4 (...) reads %x from R3, ...")
    >>> e.location, str(e) == e.message
    ('R3', True)
    """

    instruction: int
    value: str
    register: int | None
    slot: int | None
    message: str

    @property
    def location(self) -> str:
        """``R5``, ``slot 3`` or ``-`` (an error of the assignment's shape)."""
        if self.register is not None:
            return f"R{self.register}"
        return f"slot {self.slot}" if self.slot is not None else "-"

    def sort_key(self) -> tuple:
        none = -1
        register = none if self.register is None else self.register
        slot = none if self.slot is None else self.slot
        return self.instruction, self.value, register, slot, self.message

    def __str__(self) -> str:
        return self.message


def check_allocation(program: Program, assignment: dict, spills: dict) -> list[CheckError]:
    """Every read of ``program`` that its ``assignment`` and ``spills`` may get wrong; [] means proved.

    Parameters
    ----------
    program : the plan's program, spill code included
    assignment : value name -> tuple of register indices (64-bit values an even/odd pair; predicates none)
    spills : spilled value name -> local-memory slot

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
    >>> check_allocation(p, {"x": (0,)}, {}), [str(e) for e in check_allocation(p, {}, {})]
    ([], ['%x has no register of its width (1) in the assignment'])
    """
    shape = _shape_errors(program, assignment)
    if shape:
        return shape
    checker = _Checker(program, assignment, spills)
    return sorted(checker.run(), key=CheckError.sort_key)


def _shape_errors(program: Program, assignment: dict) -> list[CheckError]:
    """Values of general-register type without registers of their width (the flow check needs them)."""
    out = []
    for name in sorted(program.values):
        value, regs = program.values[name], assignment.get(name)
        if value.width and (regs is None or len(regs) != value.width or any(r < 0 for r in regs)):
            out.append(CheckError(-1, name, None, None,
                                  f"%{name} has no register of its width ({value.width}) in the assignment"))
    return out


def _bits(x: int):
    """The set bit positions of ``x``, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


class _State:
    """What every location certainly holds at one point of one path.

    ``held[l]`` is a bit set over value numbers (explicit holdings);
    ``undefined`` the values no definition has reached yet, held vacuously
    by every location; ``writers[l]`` the instructions that may have written
    ``l`` last (bit ``n`` for "not written since entry"); ``holders`` the
    transpose of ``held``, so a definition kills its value in time
    proportional to the copies there are.
    """

    __slots__ = ("held", "undefined", "writers", "holders")

    def __init__(self, held: list, undefined: int, writers: list):
        self.held, self.undefined, self.writers = held, undefined, writers
        holders: dict[int, int] = {}
        for loc, values in enumerate(held):
            for v in _bits(values):
                holders[v] = holders.get(v, 0) | 1 << loc
        self.holders = holders

    def holds(self, loc: int, bit: int) -> bool:
        return bool((self.held[loc] | self.undefined) & bit)

    def write(self, loc: int, values: int, writer: int) -> None:
        held, holders, mask = self.held, self.holders, ~(1 << loc)
        for v in _bits(held[loc]):
            holders[v] &= mask
        held[loc] = values
        for v in _bits(values):
            holders[v] = holders.get(v, 0) | 1 << loc
        self.writers[loc] = writer

    def kill(self, v: int) -> None:
        """Take value ``v`` out of every location (a new definition makes the old copies stale)."""
        mask = ~(1 << v)
        for loc in _bits(self.holders.pop(v, 0)):
            self.held[loc] &= mask
        self.undefined &= mask

    def frozen(self) -> tuple:
        return tuple(self.held), self.undefined, tuple(self.writers)


def _reverse_postorder(succ: list) -> list[int]:
    """Blocks reachable from the entry, each before its successors except along back edges.

    Examples
    --------
    >>> _reverse_postorder([[1, 2], [3], [3], [1], []])
    [0, 2, 1, 3]
    """
    seen, post, stack = {0}, [], [(0, iter(succ[0]))] if succ else []
    while stack:
        b, it = stack[-1]
        nxt = next((s for s in it if s not in seen), None)
        if nxt is None:
            post.append(b)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(succ[nxt])))
    return post[::-1]


def _meet(a: tuple, b: tuple) -> tuple:
    """What both states certainly hold (a value undefined on one side is held vacuously there)."""
    held_a, undefined_a, writers_a = a
    held_b, undefined_b, writers_b = b
    undefined = undefined_a & undefined_b
    rest = ~undefined
    held = tuple([(x | undefined_a) & (y | undefined_b) & rest for x, y in zip(held_a, held_b)])
    return held, undefined, tuple([x | y for x, y in zip(writers_a, writers_b)])


class _Op:
    """One decoded instruction: reads and writes as (value number, name, registers), and the slot number
    of a spill instruction or of a local access at a spill slot's address (-1: a computed address)."""

    __slots__ = ("kind", "reads", "defs", "guarded", "slot")

    def __init__(self, kind: int, reads: tuple, defs: tuple, guarded: bool, slot: int | None):
        self.kind, self.reads, self.defs, self.guarded, self.slot = kind, reads, defs, guarded, slot


class _Checker:
    """One check: the decoded program, the fixed point over its blocks, then one reporting pass."""

    def __init__(self, program: Program, assignment: dict, spills: dict):
        self.program, self.assignment = program, assignment
        code = spill_code_of(program, spills)
        spill_at, self.origin, remat_at = code.indices, code.origin, frozenset(code.remats)
        self.numbers: dict[str, int] = {}
        self.names: list[str] = []
        self.registers = max((r for regs in assignment.values() if regs for r in regs), default=-1) + 1
        self.slot_loc: dict[int, int] = {}
        self.slot_address: list[int] = []
        self.spill_slots = {immediate(str(s)) & MASK64 for s in spills.values()}
        self.code = [self._decode(ins, i in spill_at, i in remat_at) for i, ins in enumerate(program.instructions)]
        self.locations = self.registers + len(self.slot_address)

    # -- decoding -----------------------------------------------------------------------------

    def number(self, name: str) -> int:
        """The value number of the original value ``name`` stands for."""
        original = self.origin.get(name, name)
        number = self.numbers.get(original)
        if number is None:
            number = self.numbers[original] = len(self.names)
            self.names.append(original)
        return number

    def slot(self, address: int) -> int:
        """The number of the spill slot at local-memory ``address`` (its location is ``registers`` after)."""
        loc = self.slot_loc.get(address)
        if loc is None:
            loc = self.slot_loc[address] = len(self.slot_address)
            self.slot_address.append(address)
        return loc

    def _decode(self, ins: Instruction, spill: bool, remat: bool = False) -> _Op:
        values, assignment = self.program.values, self.assignment
        reads = tuple((self.number(n), n, assignment[n]) for n in dict.fromkeys(
            op.name for op in ins.operands if type(op) is Use) if values[n].width)
        defs = tuple((self.number(d.name), d.name, assignment[d.name]) for d in ins.defs if d.width)
        guarded = ins.guard is not None
        if remat:
            return _Op(REMAT, reads, defs, guarded, None)
        if ins.opcode in ("st.local", "ld.local"):
            return self._decode_local(ins, spill, reads, defs, guarded)
        return _Op(OP, reads, defs, guarded, None)

    def _decode_local(self, ins: Instruction, spill: bool, reads, defs, guarded) -> _Op:
        store = ins.opcode == "st.local"
        if spill and (reads if store else defs):
            kind = SPILL_STORE if store else SPILL_RELOAD
            return _Op(kind, reads, defs, guarded, self.slot(immediate(ins.operands[0].text) & MASK64))
        if spill:  # spill code of a predicate: no general register, nothing to check
            return _Op(OP, reads, defs, guarded, None)
        address = ins.operands[:-1] if store else ins.operands
        kind = LOCAL_STORE if store else LOCAL_LOAD
        if all(type(op) is Imm for op in address):
            bits = sum(immediate(op.text) for op in address) & MASK64
            return _Op(kind, reads, defs, guarded, self.slot(bits) if bits in self.spill_slots else None)
        return _Op(kind, reads, defs, guarded, -1 if self.spill_slots else None)  # any address: maybe a slot

    # -- the fixed point ----------------------------------------------------------------------

    def run(self) -> list[CheckError]:
        """Iterate to the fixed point in reverse postorder; each block's errors are those of its last visit.

        States only shrink as paths meet, so the last visit of a block is the
        one with its final entry state, and its errors are the ones that count.
        """
        succ = successors(self.program)
        order = _reverse_postorder(succ)
        rank = {b: k for k, b in enumerate(order)}
        states: list = [None] * len(self.program.blocks)
        found: dict[int, list] = {}
        if not states:
            return []
        states[0], work = self.entry_state(), [0]
        while work:
            b = order[heapq.heappop(work)]
            found[b] = []
            out = self.transfer(b, states[b], found[b])
            for s in succ[b]:
                new = out if states[s] is None else _meet(states[s], out)
                if new != states[s]:
                    states[s] = new
                    if rank[s] not in work:
                        heapq.heappush(work, rank[s])
        return [e for errors in found.values() for e in errors]

    def entry_state(self) -> tuple:
        entry = 1 << len(self.code)
        return (0,) * self.locations, (1 << len(self.names)) - 1, (entry,) * self.locations

    def transfer(self, b: int, entry: tuple, errors: list) -> tuple:
        """The state at the end of block ``b``; every read it cannot prove goes to ``errors``."""
        state = _State(list(entry[0]), entry[1], list(entry[2]))
        start = self.program.block_starts[b]
        for i in range(start, start + len(self.program.blocks[b].instructions)):
            op = self.code[i]
            self.check(i, op, state, errors)
            self.step(i, op, state)
        return state.frozen()

    def step(self, i: int, op: _Op, state: _State) -> None:
        writer = 1 << i
        if op.kind == OP and not op.guarded:
            for v, _, regs in op.defs:
                state.kill(v)
                for r in regs:
                    state.write(r, 1 << v, writer)
            return
        if op.kind == SPILL_STORE or op.kind == SPILL_RELOAD:
            self.copy(op, state, writer)
            return
        if op.kind == REMAT:  # the value computed again: its registers hold it, its other copies stay good
            for v, _, regs in op.defs:
                for r in regs:
                    state.write(r, 1 << v, writer)
            return
        if op.kind == LOCAL_STORE and op.slot is not None and op.slot >= 0:
            loc = self.registers + op.slot
            state.write(loc, 0, state.writers[loc] | writer if op.guarded else writer)
        before = [[state.held[r] | state.undefined for r in regs] for _, _, regs in op.defs] if op.guarded else None
        for k, (v, _, regs) in enumerate(op.defs):
            state.kill(v)
            for j, r in enumerate(regs):
                if op.guarded:
                    state.write(r, before[k][j] & 1 << v, state.writers[r] | writer)
                else:
                    state.write(r, 1 << v, writer)

    def copy(self, op: _Op, state: _State, writer: int) -> None:
        """A spill store or reload: the destination holds what the source holds (and, once any error
        about that is reported, the value it should hold, so one wrong location is reported once)."""
        slot = self.registers + op.slot
        if op.kind == SPILL_STORE:
            v, _, regs = op.reads[0]
            sources, targets = regs, (slot,)
        else:
            v, _, regs = op.defs[0]
            sources, targets = (slot,), regs
        values = -1
        for loc in sources:
            values &= state.held[loc] | state.undefined
        values = values & ~state.undefined | 1 << v
        for loc in targets:
            if op.guarded:
                state.write(loc, values & (state.held[loc] | state.undefined), state.writers[loc] | writer)
            else:
                state.write(loc, values, writer)

    # -- reporting ----------------------------------------------------------------------------

    def check(self, i: int, op: _Op, state: _State, errors: list) -> None:
        held, undefined = state.held, state.undefined
        for v, name, regs in op.reads:
            for r in regs:
                if not (held[r] >> v & 1 or undefined >> v & 1):
                    errors.append(self.error(i, v, name, r, None, state, "reads"))
        if op.kind == OP or op.kind == REMAT:
            return
        if op.kind == SPILL_RELOAD:
            v, name, _ = op.defs[0]
            if not state.holds(self.registers + op.slot, 1 << v):
                errors.append(self.error(i, v, name, None, op.slot, state, "reloads"))
        elif op.kind in (LOCAL_LOAD, LOCAL_STORE) and op.slot is not None:
            errors.append(self.alias_error(i, op))

    def error(self, i: int, v: int, name: str, reg: int | None, slot: int | None, state: _State,
              verb: str) -> CheckError:
        loc = reg if reg is not None else self.registers + slot
        where = f"R{reg}" if reg is not None else f"slot {self.slot_address[slot]}"
        original = self.names[v]
        shown = f"%{original}" if original == name else f"%{original} (as %{name})"
        message = (f"instruction {i} ({self.program.instructions[i]}) {verb} {shown} from {where}, "
                   f"which may hold {self.instead(v, loc, state)}")
        return CheckError(i, original, reg, None if slot is None else self.slot_address[slot], message)

    def instead(self, v: int, loc: int, state: _State) -> str:
        """What location ``loc`` may hold instead of value ``v``, and who wrote it."""
        writers = list(_bits(state.writers[loc]))
        unwritten = bool(writers) and writers[-1] == len(self.code)
        writers = [w for w in writers if w < len(self.code)]
        others = sorted({f"%{n}" for n in self.written(writers, loc)} - {f"%{self.names[v]}"})
        if not others and writers:
            others = [f"an older %{self.names[v]}"]
        what = " or ".join(others + (["garbage"] if unwritten else []))
        why = []
        if writers:
            why.append(f"written at instruction{'s' if len(writers) > 1 else ''} {', '.join(map(str, writers))}")
        if unwritten:
            why.append("not written on some path from the entry")
        return f"{what} instead ({'; '.join(why)})"

    def written(self, writers: list, loc: int):
        """Original names of the values the instructions ``writers`` put in ``loc``."""
        for w in writers:
            op = self.code[w]
            if op.kind in (SPILL_STORE, LOCAL_STORE) and loc >= self.registers and op.reads:
                yield self.names[op.reads[-1][0]]
            for v, _, regs in op.defs:
                if loc in regs:
                    yield self.names[v]

    def alias_error(self, i: int, op: _Op) -> CheckError:
        ins = self.program.instructions[i]
        if op.slot < 0:
            where = "a computed address, which may be a spill slot"
            slot = None
        else:
            slot = self.slot_address[op.slot]
            where = f"spill slot {slot}"
        value = op.defs[0][1] if op.defs else (op.reads[-1][1] if op.reads else "")
        message = (f"instruction {i} ({ins}) is not spill code of the plan but accesses local memory at "
                   f"{where}")
        return CheckError(i, self.origin.get(value, value), None, slot, message)
