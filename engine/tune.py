"""``tune``: a schedule search that keeps every dependence and lowers MAXLIVE toward a register target.

Two phases per basic block, as a compiler's scheduler under register
pressure does it (LLVM's machine scheduler with its register-pressure
priority comes first when a region exceeds its pressure limit):

1. **list scheduling** top-down over the block's dependence graph, the ready
   instruction chosen by (pressure above the target, net change in live
   registers, how close it brings a successor to ready, original order): an
   instruction that closes live ranges or opens none goes first;
2. **local search** over single-instruction moves around the block's peaks,
   each move priced by **incremental liveness**: moving one instruction from
   position ``a`` to ``b`` of its block changes the live sets only between
   ``a`` and ``b``, so only those positions are recomputed (bit sets, one
   word-parallel operation per instruction), never the whole program.

Moves stay inside their basic block; blocks, branches and loops are kept as
they are. Because every dependence through a value keeps its order, each
block's upward-exposed uses and kills are unchanged, so its live-in and
live-out sets are too: blocks are tuned independently and a move changes
pressure nowhere outside its block.

Invariant: the tuned program is the plan's program (spill code removed)
with the instructions of each block permuted within the dependences of
:func:`engine.analysis.dependence.dependence` (checked by
:func:`engine.analysis.dependence.reordering_problem` before a result is
returned), its MAXLIVE is never above the original's, and the result lists
the edits that take the plan there: :class:`engine.alloc.hand.Move` edits,
each legal where it is applied, then one :class:`engine.alloc.hand.Reallocate`
that runs the allocator at the new schedule. ``lower_bound`` is a true lower
bound of MAXLIVE over every such reordering (:func:`block_bound` proves it:
values live through a block, each instruction's least pressure over every
order by a minimum cut, the block's first position, the last of its
live-out values' births; where the search stops above the target and that
bound is not, :func:`refute` tries a wider case split that may prove the
target out of reach), and ``bound_reason`` says where it holds.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.alloc import allocate
>>> from engine.predict import predicted_plan
>>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
...           "  %y:f32 = ld.global %pa, 4\\n  %z:f32 = ld.global %pa, 8\\n  %x2:f32 = mul %x, %x\\n"
...           "  %y2:f32 = mul %y, %y\\n  %z2:f32 = mul %z, %z\\n  st.global %pa, 12, %x2\\n"
...           "  st.global %pa, 16, %y2\\n  st.global %pa, 20, %z2\\n  exit\\n")
>>> plan = predicted_plan(allocate("dsatur", p))
>>> r = tune(plan, target=3)
>>> r.maxlive_before, r.maxlive_after, r.lower_bound, r.registers_after
(5, 3, 3, 3)
>>> [describe_edit(e) for e in r.edits][-1]
're-allocate with dsatur at the new schedule'
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, replace

import numpy as np

from engine.alloc import allocate, check_allocator
from engine.alloc.hand import Move, Reallocate, apply_edit, describe_edit
from engine.analysis.dependence import (
    may_alias,
    memory_access,
    reordering_problem,
    widths_of,
)
from engine.analysis.liveness import analyze, block_liveness
from engine.base.errors import AllocationError, RegtuneError
from engine.base.limits import MAX_REGISTERS
from engine.ir.core import Block, Program, replace_blocks
from engine.ir.spill import has_spill_code, remove_spill_code
from engine.plan import Plan, registers_used
from engine.predict import predict

__all__ = ["BlockSchedule", "Bound", "TuneResult", "describe_edit", "lower_bound", "program_bound", "refute", "schedule_edits",
           "tune"]

#: seconds one tune may search (list scheduling always completes; the local search stops here)
TIME_LIMIT = 20.0
#: how many positions either side of a peak the local search looks for an instruction to move
WINDOW = 64
#: how many ready instructions a list scheduler weighs at each step: those nearest the original order (the
#: earliest top-down, the latest bottom-up), as a scheduler's window over its ready queue
READY = 48
#: how many of a block's peak positions (the first ones) one step of the local search works on
PEAKS = 6


class TuneError(RegtuneError):
    """A plan tune cannot work on (named, before any work)."""


# -- the dependence graph of one block ---------------------------------------------------------------------

def block_graph(instructions: tuple, widths: dict) -> tuple[list[set], list[set]]:
    """Predecessors and successors of each instruction of one block: every pair that
    :func:`engine.analysis.dependence.dependence` orders (through a value, through memory, or a terminator),
    as edges from the earlier to the later; built per value and per store, not pairwise.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> b = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n  exit\\n")
    >>> preds, _ = block_graph(b.blocks[0].instructions, widths_of(b))
    >>> [sorted(p) for p in preds]
    [[], [], [0, 1], [0, 1, 2]]
    """
    n = len(instructions)
    preds: list[set] = [set() for _ in range(n)]
    last_def: dict[str, int] = {}
    reads: dict[str, list] = {}
    for i, ins in enumerate(instructions):
        for name in ins.uses:
            if name in last_def:
                preds[i].add(last_def[name])
            reads.setdefault(name, []).append(i)
        for d in ins.defs:
            if d.name in last_def:
                preds[i].add(last_def[d.name])
            preds[i].update(reads.pop(d.name, ()))
            last_def[d.name] = i
    _memory_edges(instructions, widths, preds)
    for i, ins in enumerate(instructions):
        if ins.is_terminator:
            preds[i].update(range(i))
            for j in range(i + 1, n):
                preds[j].add(i)
    for i in range(n):
        preds[i].discard(i)
    succs: list[set] = [set() for _ in range(n)]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].add(i)
    return preds, succs


def _memory_edges(instructions: tuple, widths: dict, preds: list) -> None:
    by_space: dict = {}
    for i, ins in enumerate(instructions):
        m = memory_access(ins, widths)
        if m is not None:
            by_space.setdefault(m.space, []).append((i, m))
    for items in by_space.values():
        for i, m in items:
            if m.kind != "st":
                continue
            for j, other in items:
                if j != i and may_alias(m, other):
                    preds[max(i, j)].add(min(i, j))


# -- incremental liveness of one block --------------------------------------------------------------------

class BlockSchedule:
    """One block's order and its live sets, kept up to date move by move (see the module docstring).

    ``order[p]`` is the block-local index (in the original block) of the instruction at position ``p``;
    ``pressure[p]`` the pressure there, exactly as :func:`engine.analysis.liveness.analyze` counts it (the
    values live after the instruction plus its results). Live sets are Python integers used as bit sets over
    value numbers; :meth:`move` recomputes the positions between the old and new place only.
    """

    def __init__(self, instructions: tuple, index: dict, widths: dict, live_out: int, masks: tuple):
        self.instructions = instructions
        self.n = len(instructions)
        self.m1, self.m2 = masks
        bit = lambda names: sum(1 << index[x] for x in set(names))
        self.uses = [bit(ins.uses) for ins in instructions]
        self.defs = [bit(d.name for d in ins.defs) for ins in instructions]
        self.kill = [0 if ins.guard is not None else d for ins, d in zip(instructions, self.defs)]
        self.live_out = live_out
        self.preds, self.succs = block_graph(instructions, widths)
        self.order = list(range(self.n))
        self.pos = list(range(self.n))
        self.live_after = [0] * self.n
        self.pressure = [0] * self.n
        self._recompute(0, self.n - 1)
        self.hist: dict[int, int] = {}
        for p in self.pressure:
            self.hist[p] = self.hist.get(p, 0) + 1

    def weight(self, bits: int) -> int:
        """Registers the values of ``bits`` take (predicates none, 64-bit values two)."""
        return (bits & self.m1).bit_count() + 2 * (bits & self.m2).bit_count()

    def _live_before(self, p: int) -> int:
        """The live set just before position ``p`` (``p == n``: the block's live-out)."""
        if p >= self.n:
            return self.live_out
        i = self.order[p]
        return (self.live_after[p] & ~self.kill[i]) | self.uses[i]

    def _scan(self, sub: list, lo: int, live: int, limit: int | None = None) -> tuple[list, list] | None:
        """Live-after sets and pressures of positions ``lo..lo+len(sub)-1`` holding ``sub``, backwards from
        ``live`` (the live set after the last of them); None as soon as a pressure exceeds ``limit``."""
        k = len(sub)
        afters, pressures = [0] * k, [0] * k
        defs, kill, uses, m1, m2 = self.defs, self.kill, self.uses, self.m1, self.m2
        for q in range(k - 1, -1, -1):
            i = sub[q]
            afters[q] = live
            x = live | defs[i]
            pressures[q] = w = (x & m1).bit_count() + 2 * (x & m2).bit_count()
            if limit is not None and w > limit:
                return None
            live = (live & ~kill[i]) | uses[i]
        return afters, pressures

    def _recompute(self, lo: int, hi: int) -> None:
        afters, pressures = self._scan(self.order[lo:hi + 1], lo, self._live_before(hi + 1))
        self.live_after[lo:hi + 1], self.pressure[lo:hi + 1] = afters, pressures

    @property
    def maxlive(self) -> int:
        return max(self.hist) if self.hist else 0

    def legal(self, a: int, b: int) -> bool:
        """Whether the instruction at position ``a`` may move to position ``b`` (it passes none it depends on)."""
        i = self.order[a]
        if b < a:
            return all(self.pos[p] < b for p in self.preds[i])
        return all(self.pos[s] > b for s in self.succs[i])

    def price(self, a: int, b: int, limit: int | None = None) -> tuple[list, list, int, int] | None:
        """What moving position ``a`` to ``b`` would make positions ``lo..hi``: their live sets and pressures
        (None when one would exceed ``limit``)."""
        lo, hi = min(a, b), max(a, b)
        sub = self.order[lo:hi + 1]
        sub.insert(b - lo, sub.pop(a - lo))
        scanned = self._scan(sub, lo, self._live_before(hi + 1), limit)
        return None if scanned is None else (*scanned, lo, hi)

    def move(self, a: int, b: int, priced=None) -> None:
        """Move the instruction at position ``a`` to position ``b`` (legal: see :meth:`legal`)."""
        afters, pressures, lo, hi = priced if priced is not None else self.price(a, b)
        self.order.insert(b, self.order.pop(a))
        for p in range(lo, hi + 1):
            self.pos[self.order[p]] = p
        for old in self.pressure[lo:hi + 1]:
            self.hist[old] -= 1
            if not self.hist[old]:
                del self.hist[old]
        for new in pressures:
            self.hist[new] = self.hist.get(new, 0) + 1
        self.live_after[lo:hi + 1], self.pressure[lo:hi + 1] = afters, pressures

    def set_order(self, order: list) -> None:
        """Take a whole new order (a list schedule's), every position recomputed."""
        self.order = list(order)
        for p, i in enumerate(self.order):
            self.pos[i] = p
        self._recompute(0, self.n - 1)
        self.hist = {}
        for p in self.pressure:
            self.hist[p] = self.hist.get(p, 0) + 1

    def instructions_in_order(self) -> tuple:
        return tuple(self.instructions[i] for i in self.order)


def program_schedules(program: Program) -> list[BlockSchedule]:
    """A :class:`BlockSchedule` of every block of ``program``, each in the program's order."""
    names = tuple(program.values)
    index = {n: i for i, n in enumerate(names)}
    widths = widths_of(program)
    m1 = sum(1 << i for i, n in enumerate(names) if widths[n] == 1)
    m2 = sum(1 << i for i, n in enumerate(names) if widths[n] == 2)
    _, live_out = block_liveness(program, index)
    return [BlockSchedule(b.instructions, index, widths, out, (m1, m2)) for b, out in zip(program.blocks, live_out)]


def scheduled_program(program: Program, schedules: list[BlockSchedule]) -> Program:
    """``program`` with each block in its schedule's order."""
    return replace_blocks(program, [Block(b.name, s.instructions_in_order()) for b, s in zip(program.blocks, schedules)])


# -- phase 1: list scheduling -----------------------------------------------------------------------------

def list_schedule(s: BlockSchedule, target: int, closing_first: bool = False) -> list:
    """A top-down list schedule of one block with a register-pressure priority (see the module docstring);
    ``closing_first``: an instruction that closes a live range goes before any that does not, whatever it
    opens."""
    n = s.n
    if n == 0:
        return []
    readers_left = _instance_readers(s)
    live_defs = [_live_defs(s, i) for i in range(n)]       # what each instruction leaves live: fixed by the graph
    left = [len(p) for p in s.preds]
    ready = {i for i in range(n) if left[i] == 0}
    live = _block_live_in(s)
    order = []
    now = s.weight(live)
    while ready:
        scored = []
        m1, m2 = s.m1, s.m2
        for i in heapq.nsmallest(READY, ready):
            kills = _kills(s, i, readers_left)
            after = (live & ~kills & ~s.kill[i]) | live_defs[i]
            x = after | s.defs[i]
            at = (x & m1).bit_count() + 2 * (x & m2).bit_count()
            w = (after & m1).bit_count() + 2 * (after & m2).bit_count()
            closes = -s.weight(kills & ~after) if closing_first else 0
            scored.append((max(at - target, 0), closes, w - now, i, after))
        top = min(scored)[:3]
        tied = [x for x in scored if x[:3] == top]
        if top[2] > 0 and len(tied) > 1:        # all open a range: the one that brings a successor nearest ready
            tied.sort(key=lambda x: (min((left[j] for j in s.succs[x[3]]), default=n), x[3]))
        else:
            tied.sort(key=lambda x: x[3])
        _, _, _, best, best_live = tied[0]
        ready.discard(best)
        order.append(best)
        for v in _read_instances(s, best):
            readers_left[v] -= 1
        live, now = best_live, s.weight(best_live)
        for j in s.succs[best]:
            left[j] -= 1
            if left[j] == 0:
                ready.add(j)
    return order


def bottom_up_schedule(s: BlockSchedule, target: int, closing_first: bool = False) -> list:
    """A bottom-up list schedule of one block with a register-pressure priority: instructions are placed from
    the block's end upwards, where the live sets are exact (the part below is fixed); the ready instruction
    (every successor placed) that closes the most live ranges (its results) and opens the fewest (its
    operands not yet live) goes first, then the one that brings a predecessor closest to ready, then the
    latest in the original order."""
    n = s.n
    left = [len(x) for x in s.succs]
    ready = {i for i in range(n) if left[i] == 0}
    live = s.live_out
    now = s.weight(live)
    placed = []
    while ready:
        best_key, best, best_live = None, None, None
        for i in heapq.nlargest(READY, ready):
            before = (live & ~s.kill[i]) | s.uses[i]
            at = s.weight(live | s.defs[i])
            delta = s.weight(before) - now
            need = 0 if delta <= 0 else min((left[j] for j in s.preds[i]), default=n)
            closes = -s.weight(live & s.kill[i] & ~s.uses[i]) if closing_first else 0
            key = (max(at - target, 0), closes, delta, need, -i)
            if best_key is None or key < best_key:
                best_key, best, best_live = key, i, before
        ready.discard(best)
        placed.append(best)
        live, now = best_live, s.weight(best_live)
        for j in s.preds[best]:
            left[j] -= 1
            if left[j] == 0:
                ready.add(j)
    return placed[::-1]


def _block_live_in(s: BlockSchedule) -> int:
    live = s.live_out
    for i in reversed(s.order):
        live = (live & ~s.kill[i]) | s.uses[i]
    return live


def _instance_readers(s: BlockSchedule) -> dict:
    """(value bit, defining instruction or -1) -> how many instructions read that definition: each read of a
    value belongs to the definition before it (the dependences keep them together in any order)."""
    count: dict = {}
    s._instance_of = {}
    current: dict = {}
    for i, ins in enumerate(s.instructions):
        mine = []
        for b in _bits(s.uses[i]):
            key = (b, current.get(b, -1))
            count[key] = count.get(key, 0) + 1
            mine.append(key)
        s._instance_of[i] = mine
        for b in _bits(s.kill[i]):
            current[b] = i
    s._last_def = current
    return count


def _read_instances(s: BlockSchedule, i: int) -> list:
    return s._instance_of[i]


def _kills(s: BlockSchedule, i: int, readers_left: dict) -> int:
    """The values whose last remaining read is ``i`` and that are not live out through that definition."""
    out = 0
    for key in s._instance_of[i]:
        b, d = key
        if readers_left[key] == 1 and not ((s.live_out >> b) & 1 and s._last_def.get(b, -1) == d):
            out |= 1 << b
    return out


def _live_defs(s: BlockSchedule, i: int) -> int:
    """The results of ``i`` that stay live after it: read later, or live out through this definition."""
    out = 0
    for b in _bits(s.defs[i]):
        if any(key == (b, i) for j in s.succs[i] for key in s._instance_of[j]) or \
                ((s.live_out >> b) & 1 and s._last_def.get(b, -1) == i) or not (s.kill[i] >> b) & 1:
            out |= 1 << b
    return out


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


# -- phase 2: local search --------------------------------------------------------------------------------

def local_search(s: BlockSchedule, target: int, deadline: float) -> int:
    """Improving moves around the block's peaks until its MAXLIVE is at most ``target``, no move improves
    (MAXLIVE, then the positions at MAXLIVE, then the summed pressure: a strict order, so it ends) or the
    deadline passes; the number of moves taken."""
    taken = 0
    while s.maxlive > target and time.monotonic() < deadline:
        best = _best_move(s)
        if best is None:
            break
        s.move(*best)
        taken += 1
    return taken


def _best_move(s: BlockSchedule):
    """The first move (shortest first) that lowers the number of positions at the block's MAXLIVE (or MAXLIVE
    itself), else the one that lowers the summed pressure most without adding a position at MAXLIVE; None
    when no candidate does either."""
    top = s.maxlive
    peaks = [p for p in range(s.n) if s.pressure[p] == top][:PEAKS]
    moves = sorted(set(_candidates(s, peaks)), key=lambda m: abs(m[0] - m[1]))
    best, best_gain = None, 0
    for a, b in moves:
        priced = s.price(a, b, top)
        if priced is None:
            continue
        _afters, pressures, lo, hi = priced
        old = s.pressure[lo:hi + 1]
        at_top = pressures.count(top) - old.count(top)
        if at_top < 0:
            return a, b, priced
        gain = sum(old) - sum(pressures)
        if at_top == 0 and gain > best_gain:
            best, best_gain = (a, b, priced), gain
    return best


def _candidates(s: BlockSchedule, peaks: list):
    """Moves that may lower the pressure at the peak positions ``peaks`` (sorted): an instruction at or before
    a peak whose result is live there sunk past it, or one after a peak that reads a value live there hoisted
    before it; each instruction within :data:`WINDOW` of a peak is looked at once, against its nearest peak."""
    import bisect

    live = {p: s.live_after[p] | s.defs[s.order[p]] for p in peaks}
    gpr = s.m1 | s.m2
    positions = sorted({a for p in peaks for a in range(max(0, p - WINDOW), min(s.n, p + WINDOW + 1))})
    for a in positions:
        i = s.order[a]
        k = bisect.bisect_left(peaks, a)
        if k < len(peaks) and s.defs[i] & live[peaks[k]] & gpr:          # sink past the next peak
            p = peaks[k]
            last = min([s.pos[j] for j in s.succs[i]] or [s.n]) - 1
            if last > p:
                yield a, last
                if p + 1 < last:
                    yield a, p + 1
        if k > 0 and s.uses[i] & live[peaks[k - 1]]:                    # hoist before the previous peak
            p = peaks[k - 1]
            first = max([s.pos[j] for j in s.preds[i]] or [-1]) + 1
            if first <= p:
                yield a, first
                if first < p:
                    yield a, p


# -- the lower bound --------------------------------------------------------------------------------------

#: how many instructions of each block (those with the most registers forced live, see :func:`program_bound`)
#: get the exact minimum of their pressure over every order, by a minimum cut; a fixed count, so the bound
#: is the same on every machine
CUTS = 12
#: the most (births x instructions) of one block for which bound 4 of :func:`block_bound` runs (a minimum cut per
#: birth): GEMM 8x8x8's 64 accumulators in its 721 instructions, about three seconds
BIRTH_WORK = 50_000
#: the most minimum cuts :func:`refute` spends (GEMM 8x8x8 k-outer's proof that 80 is out of reach takes about
#: 175 of them), and the most (members x instructions) of a block it works on (GEMM 8x8x8: 176 x 721)
REFUTE_CUTS = 250
REFUTE_WORK = 150_000


@dataclass(frozen=True)
class Bound:
    """A lower bound of MAXLIVE over every reordering within blocks that keeps the dependences, and where it holds.

    Attributes
    ----------
    registers : the bound (32-bit registers: 64-bit values count two, predicates none, as MAXLIVE counts them)
    block : the block where it holds (empty for a program without instructions)
    instruction : the program index of the instruction at which every order keeps ``registers`` live (-1 when
        the bound is the block's first position, whichever instruction takes it)
    text : that instruction
    live : the values live there in an order that keeps the fewest there (one such set: every order keeps at least
        as many registers)
    through : the values live at every point of the block in every order (the ``block``'s own, a part of ``live``)
    loop : whether ``block`` is on a cycle of the control flow, so its live-in values come round its back edge
    case : for a case split (bound 4 of :func:`block_bound`), the instructions it is over: the bound holds at
        whichever of them comes last, ``instruction`` being one (empty: at ``instruction`` itself)
    """

    registers: int
    block: str = ""
    instruction: int = -1
    text: str = ""
    live: tuple = ()
    through: tuple = ()
    loop: bool = False
    case: str = ""

    def reason(self, widths: dict) -> str:
        """Why no reordering within blocks gets MAXLIVE below ``registers``, in words.

        Examples
        --------
        >>> Bound(5, "b", 3, "%z:f32 = add %x, %y", ("x", "y", "z"), (), False).reason({"x": 1, "y": 2, "z": 2})
        'at instruction 3 (%z:f32 = add %x, %y) every order keeps at least 5 live (in an order with the fewest: x, y, z)'
        """
        through = sum(widths[v] for v in self.through)
        if self.case:
            where = f"{self.case.format(block=self.block)} (e.g. {self.text}),"
        elif self.instruction >= 0:
            where = f"at instruction {self.instruction} ({self.text})"
        else:
            where = f"at the first instruction of block {self.block}, whichever it is,"
        head = ""
        if through:
            head = (f"{through} register{'s are' if through != 1 else ' is'} live at every point of block {self.block} "
                    f"in every order{', round its loop back edge' if self.loop else ''} ({families(self.through)}); ")
        return (f"{head}{where} every order keeps at least {self.registers} live (in an order with the fewest: "
                f"{families(self.live)})")


def families(names) -> str:
    """Value names grouped by their name less its trailing ``_N`` indices, each group with its count.

    Examples
    --------
    >>> families(["q_0_0", "q_0_1", "q_1_0", "tk", "o_0_0"])
    '3 q_*, tk, o_0_0'
    """
    import re

    groups: dict = {}
    for n in names:
        groups.setdefault(re.sub(r"(_\d+)+$", "", n), []).append(n)
    return ", ".join(f"{len(g)} {k}_*" if len(g) > 1 else g[0] for k, g in groups.items())


def lower_bound(program: Program) -> int:
    """A lower bound of MAXLIVE over every reordering of ``program``'s blocks within their dependences (the
    registers of :func:`program_bound`).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...           "  st.global %x, 0, %z\\n  exit\\n")
    >>> lower_bound(p), analyze(p).maxlive
    (2, 2)
    """
    return program_bound(program).registers


def program_bound(program: Program, schedules: list | None = None, cuts: int = CUTS) -> Bound:
    """The largest of every block's bound (:func:`block_bound`), with where it holds.

    ``schedules``: the program's block schedules (:func:`program_schedules`), read only, each in any order.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block top\\n  %i:i32 = mov 0\\n  %s:f32 = mov 0\\n.block loop\\n"
    ...           "  %x:f32 = mul %s, 2\\n  %s:f32 = add %s, %x\\n  %i:i32 = add %i, 1\\n  %c:pred = setp.lt %i, 8\\n"
    ...           "  cbr %c, loop, out\\n.block out\\n  st.global %s, 0, %s\\n  exit\\n")
    >>> b = program_bound(p)
    >>> b.registers, b.block, b.instruction, b.through, b.loop, analyze(p).maxlive
    (3, 'loop', 2, ('i', 's'), True, 3)
    >>> b.reason(widths_of(p))
    '2 registers are live at every point of block loop in every order, round its loop back edge (i, s); at instruction 2 (%x:f32 = mul %s, 2) every order keeps at least 3 live (in an order with the fewest: i, s, x)'
    
    """
    from engine.ir.core import successors

    schedules = schedules if schedules is not None else program_schedules(program)
    names = tuple(program.values)
    best = Bound(0)
    succ = successors(program)
    for k, (block, s) in enumerate(zip(program.blocks, schedules)):
        got = block_bound(s, cuts)
        if got[0] > best.registers or not best.block:
            registers, at, live, through, case = got
            first = program.block_starts[k]
            best = Bound(registers, block.name, -1 if at < 0 else first + at, "" if at < 0 else str(s.instructions[at]),
                         tuple(names[b] for b in _bits(live)), tuple(names[b] for b in _bits(through)),
                         _on_cycle(succ, k), case)
    return best


def _on_cycle(succ: list, k: int) -> bool:
    seen, todo = set(), list(succ[k])
    while todo:
        b = todo.pop()
        if b == k:
            return True
        if b not in seen:
            seen.add(b)
            todo.extend(succ[b])
    return False


def block_bound(s: BlockSchedule, cuts: int = CUTS) -> tuple[int, int, int, int, str]:
    """A lower bound of MAXLIVE over every order of one block within its dependence graph: (registers, the
    block-local index of the original instruction where it holds or -1 for the first position, a bit set of the
    values live there in an order with the fewest, a bit set of the values live everywhere in every order, and
    for bound 4 which instructions the case split is over, else "").

    Why it holds. An order keeps every dependence, so each block's live-in and live-out sets stay as they are
    (the module docstring). Follow one value ``v`` through the block: its *instances* are the live-in one (when
    ``v`` is live in) and one per unguarded definition; an instance is live from its definition (the block's
    entry for the live-in one) to its last read, and past the block's end when it is the last one and ``v`` is
    live out. The graph orders each instance's definition before its reads and its reads before the next
    definition (true and anti dependences), so in every order the instances come one after another and the
    pressure at instruction ``x`` (what is live after it, and its results) counts the width of every value one
    of whose instances spans ``x``. Four bounds follow, each true of every order, and the block's is the largest:

    1. *no gap*: ``v`` is dead after ``x`` only where ``x`` falls in a gap: before the first definition when ``v``
       is not live in, between an instance's last read and the next definition, or after the last instance's
       last read when ``v`` is not live out. ``x`` can fall in the gap after instance ``k`` only if neither its
       definition nor any read of it other than ``x`` is a descendant of ``x`` in the graph, and the next
       definition is not an ancestor (never when the next definition reads the instance: it would come both
       before and after ``x``); before the first, only if that definition is not an ancestor. Where no gap
       is open to ``x`` (every order puts ``x`` inside an instance), ``v`` counts at ``x``. So a value live in and
       out of the block that every definition of which reads it first (an accumulator round a loop) counts
       everywhere, as does one live through it untouched; ``x``'s own results count too.
    2. *the first position*: whichever instruction comes first (one with no predecessor), the block's live-in
       values not last read by it are still live after it: the least such pressure over those instructions.
    3. *a minimum cut*: at ``x``, the instructions before it are a set closed under predecessors that holds
       ``x``'s ancestors and none of its descendants, and any such set begins an order (it, then ``x``, then the
       rest). What is live after ``x`` is then fixed by that set: an instance whose definition is in it and one
       of whose reads (or the block's end, for a live-out one) is not. The least weight of that over every such
       set is a minimum s-t cut (a closure problem: an edge of unbounded capacity from each instruction to each
       predecessor, the definition's edge to the sink carrying the instance's width, and an auxiliary node per
       instance of several reads that may sit on the source side only with all of them). It is the exact least
       pressure at ``x`` over every order, found here for the :data:`CUTS` instructions with the most forced
       by (1), and never less than (1) there.
    4. *the last birth*: take the instructions where a live-out value's last run of instances begins (its
       *birth*: from there to the block's end each definition reads the one before, so the value is live from
       there on in every order), those of one opcode (GEMM's accumulators' first products). In every order one
       of them comes last, and there the others and all their ancestors are before it: the least of the minimum
       cuts of (3) at each such birth, with those instructions forced before it, is a bound of every order
       (a case split; a birth that another depends on is never last). Where the value born at ``x`` is defined
       again (an accumulator's next product), the case's cut is the least registers live *into* that next
       definition instead, a lower bound of the instruction just before it: the last birth's value, the other
       values and the next definition's operands all live there. It runs where births times instructions
       is at most :data:`BIRTH_WORK`, the cases with the fewest forced by (1) first, and stops at one that is not
       above the bound so far (the least of them cannot be either).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %a:f32 = mov 1\\n  %b:f32 = mov 2\\n  %c:f32 = mov 3\\n"
    ...           "  %d:f32 = add %a, %b\\n  %e:f32 = add %d, %c\\n  st.global %e, 0, %e\\n  exit\\n")
    >>> registers, at, _, _, _ = block_bound(program_schedules(p)[0])
    >>> registers, at, analyze(p).maxlive
    (1, 0, 3)

    The least MAXLIVE of any order here is 2 (a, b, d, c, e), but each instruction alone can have pressure 1 (its
    operands made just before it): a bound, not always the optimum.
    """
    n = s.n
    if n == 0:
        return s.weight(s.live_out), -1, s.live_out, s.live_out, ""
    anc = _ancestors(s)
    insts = _value_instances(s)
    forced, forced_bits, everywhere = _no_gaps(s, anc, insts)
    best_x = int(forced.argmax())
    best = (int(forced[best_x]), best_x, _forced_set(forced_bits, best_x) | s.defs[best_x], "")
    first = _first_position(s, insts)
    if first[0] > best[0]:
        best = first
    for x in sorted(range(n), key=lambda x: (-forced[x], x))[:cuts]:
        got = _min_cut_pressure(s, anc, insts, x)
        if got[0] > best[0]:
            best = (got[0], x, got[1], "")
    births = _births(s, insts)
    if cuts and 1 < len(births) and len(births) * n <= BIRTH_WORK:
        got = _case_split(s, anc, insts, births, forced, best[0])
        if got[0]:
            registers, at, live, x = got[1:]
            births_of = f"the {len(births)} {s.instructions[x].opcode} births of block {{block}}"
            if at == x:
                best = (registers, x, live, f"at the last of {births_of}, whichever it is")
            else:
                best = (registers, at, live,
                        f"just before the next definition of the value born last of {births_of}, whichever it is")
    return (*best[:3], everywhere, best[3])


def _no_gaps(s: BlockSchedule, anc: np.ndarray, insts: dict) -> tuple[np.ndarray, dict, int]:
    """Bound 1 of :func:`block_bound` at every instruction: the registers forced there, each value's forced
    positions, and the values live (or made) everywhere."""
    n = s.n
    forced = np.zeros(n, dtype=np.int64)
    everywhere = 0
    forced_bits: dict = {}
    for b, chain in insts.items():
        w = 2 if (s.m2 >> b) & 1 else 1 if (s.m1 >> b) & 1 else 0
        if not w:
            continue
        live = _no_gap(anc, chain, (s.live_out >> b) & 1)
        definers = np.array([(d >> b) & 1 for d in s.defs], dtype=bool)
        if (live | definers).all():                # live, or made, at every instruction
            everywhere |= 1 << b
        live &= ~definers                          # counted with the definer's own results
        forced += w * live
        forced_bits[b] = live
    for x in range(n):
        forced[x] += s.weight(s.defs[x])
    return forced, forced_bits, everywhere


def _case_split(s: BlockSchedule, anc: np.ndarray, insts: dict, members: dict, forced: np.ndarray, floor: int,
                budget: list | None = None) -> tuple:
    """The case split of bound 4 of :func:`block_bound` over ``members`` (instruction -> the next definition of
    its value, whose live-in registers its case counts, or -1 for its own pressure): (True, registers, where,
    live, member) with the least case, or (False, member) at the first case at most ``floor`` (the cases
    tried weakest first by ``forced``) or once ``budget`` (a one-item list: the cuts left) runs out (member -1)."""
    cases = []
    order = sorted(members, key=lambda x: (forced[x], x))
    for x in order:
        if budget is not None:
            if budget[0] <= 0:
                return False, -1
            budget[0] -= 1
        others = [y for y in order if y != x]
        if anc[others, x].any():                   # x cannot be the last: one of the others depends on it
            continue
        first = anc[others].any(axis=0)
        first[others] = True
        y = members[x]                             # the next definition of x's value, after x: live into it
        got = _min_cut_pressure(s, anc, insts, x, first) if y < 0 else \
            _min_cut_pressure(s, anc, insts, y, first, entry=True)
        if got[0] <= floor:
            return False, x
        cases.append((got[0], x if y < 0 else y, got[1], x))
    if not cases:
        return False, -1
    return (True, *min(cases, key=lambda c: (c[0], c[3])))


def refute(program: Program, schedules: list, target: int, cuts: int = REFUTE_CUTS) -> Bound | None:
    """A bound above ``target`` from a wider case split (bound 5), or None when none is found in ``cuts``
    minimum cuts.

    Bound 5: the case split of bound 4 over the births together with groups of instructions that the births'
    descendants read and that descend from no birth (GEMM's later loads of A and B), grouped by opcode and
    the depth of their first reader. In every order one member of the whole set comes last: a member of a
    group, with every other member (every birth too) and its ancestors before it; or a birth, as in bound 4.
    Every case's cut above ``target`` proves the target out of reach; a group one of whose cases is not is
    dropped and the split tried again without it (any set of instructions gives a true split). Tried on the
    blocks whose schedule (``schedules``, each in any order) is above ``target``, the highest first; ``target``
    at least :func:`program_bound`'s registers (else that already proves it). It runs where the set's size
    times the block's instructions is at most :data:`REFUTE_WORK`.

    Examples
    --------
    >>> from engine.workloads import BuildOptions, build_workload
    >>> p, _, _ = build_workload({"kind": "gemm", "m": 4, "n": 4, "k": 6}, BuildOptions(schedule="k-outer"))
    >>> b = refute(p, program_schedules(p), 28)
    >>> b.registers, b.block, program_bound(p).registers, analyze(p).maxlive
    (29, 'body', 26, 32)
    >>> refute(p, program_schedules(p), 29) is None
    True
    """
    budget = [cuts]
    for k in sorted(range(len(schedules)), key=lambda k: (-schedules[k].maxlive, k)):
        s = schedules[k]
        if s.maxlive <= target or budget[0] <= 0:
            break
        got = _refute_block(s, target, budget)
        if got is not None:
            registers, at, live, description = got
            from engine.ir.core import successors

            names = tuple(program.values)
            block = program.blocks[k].name
            through = _no_gaps(s, _ancestors(s), _value_instances(s))[2]
            return Bound(registers, block, program.block_starts[k] + at, str(s.instructions[at]),
                         tuple(names[b] for b in _bits(live)), tuple(names[b] for b in _bits(through)),
                         _on_cycle(successors(program), k), description)
    return None


def _refute_block(s: BlockSchedule, target: int, budget: list) -> tuple | None:
    anc, insts = _ancestors(s), _value_instances(s)
    births = _births(s, insts)
    if len(births) < 2:
        return None
    forced = _no_gaps(s, anc, insts)[0]
    below = anc[:, list(births)].any(axis=1)       # descendants of some birth
    groups: dict = {}
    for b, chain in insts.items():
        if not (s.m1 | s.m2) >> b & 1:
            continue
        for d, reads in chain:
            if d < 0 or d in births or below[d] or not reads or not below[reads].any():
                continue
            key = (s.instructions[d].opcode, min(int(anc[r].sum()) for r in reads))
            groups.setdefault(key, {})[d] = -1
    if (len(births) + sum(map(len, groups.values()))) * s.n > REFUTE_WORK:
        return None
    while groups and budget[0] > 0:
        members = dict(births)
        for g in groups.values():
            members.update(g)
        dropped = False
        for key, g in sorted(groups.items()):      # one case of each group first: drop a group that fails
            budget[0] -= 1
            if _one_case(s, anc, insts, members, min(g, key=lambda x: (forced[x], x))) <= target:
                del groups[key]
                dropped = True
                break
        if dropped:
            continue
        got = _case_split(s, anc, insts, members, forced, target, budget)
        if got[0]:
            registers, at, live, _x = got[1:]
            ops: dict = {}
            for (op, _), g in sorted(groups.items()):
                ops[op] = ops.get(op, 0) + len(g)
            read = " and ".join(f"{c} {op}" for op, c in ops.items())
            born = s.instructions[next(iter(births))].opcode
            where = "at" if at == _x else "just before the next definition of the value made by"
            return (registers, at, live, (f"{where} the last of the {len(births)} {born} births of block {{block}} "
                                          f"and the {read} instructions their descendants read, whichever it is"))
        failed = got[1]
        if failed < 0:
            return None
        if failed in births:                       # drop the group whose going raises the birth's case most
            if budget[0] < len(groups):
                return None
            budget[0] -= len(groups)
            raised = {key: _one_case(s, anc, insts, {x: y for x, y in members.items() if x not in g}, failed)
                      for key, g in sorted(groups.items())}
            key = max(sorted(raised), key=lambda key: raised[key])
            if raised[key] <= target and len(groups) == 1:
                return None
            del groups[key]
        else:
            groups = {key: g for key, g in groups.items() if failed not in g}
    return None


def _one_case(s: BlockSchedule, anc: np.ndarray, insts: dict, members: dict, x: int) -> float:
    """The registers of the case of ``x`` last among ``members`` (bound 4): infinite where ``x`` cannot be last."""
    others = [y for y in members if y != x]
    if anc[others, x].any():
        return float("inf")
    first = anc[others].any(axis=0)
    first[others] = True
    y = members[x]
    got = _min_cut_pressure(s, anc, insts, x, first) if y < 0 else _min_cut_pressure(s, anc, insts, y, first, entry=True)
    return got[0]


def _births(s: BlockSchedule, insts: dict) -> dict:
    """Bound 4 of :func:`block_bound`: the instructions where a live-out value begins the run of instances that
    lasts to the block's end (each next definition reading the one before), those of the opcode with the most,
    each with the value's next definition (-1: none)."""
    by_opcode: dict = {}
    for b in _bits(s.live_out):
        chain = insts.get(b)
        if not chain or not (s.m1 | s.m2) >> b & 1:
            continue
        k = len(chain) - 1
        while k > 0 and chain[k][0] >= 0 and chain[k][0] in chain[k - 1][1]:
            k -= 1
        d = chain[k][0]
        if d >= 0 and not (k > 0 and d in chain[k - 1][1]):
            by_opcode.setdefault(s.instructions[d].opcode, {})[d] = chain[k + 1][0] if k + 1 < len(chain) else -1
    return dict(sorted(max(by_opcode.values(), key=lambda g: (len(g), -min(g)), default={}).items()))


def _forced_set(forced_bits: dict, x: int) -> int:
    return sum(1 << b for b, live in forced_bits.items() if live[x])


def _ancestors(s: BlockSchedule) -> np.ndarray:
    """anc[x, y]: ``y`` comes before ``x`` in every order (an ancestor in the graph)."""
    n = s.n
    anc = np.zeros((n, n), dtype=bool)
    for x in range(n):                           # the original order is topological
        for p in s.preds[x]:
            anc[x, p] = True
            anc[x] |= anc[p]
    return anc


def _value_instances(s: BlockSchedule) -> dict:
    """value bit -> its instances in order, each [definition (-1: the live-in one), its reads]."""
    live_in = _block_live_in(s)
    chains: dict = {b: [[-1, []]] for b in _bits(live_in)}
    for i in range(s.n):
        for b in _bits(s.uses[i]):
            chains.setdefault(b, [[-1, []]])[-1][1].append(i)
        for b in _bits(s.kill[i]):
            chains.setdefault(b, []).append([i, []])
    for b in _bits(s.live_out):
        chains.setdefault(b, [[-1, []]])            # live through, untouched (or only guarded definitions)
    return chains


def _no_gap(anc: np.ndarray, chain: list, out: int) -> np.ndarray:
    """Where no order leaves the value dead after the instruction (bound 1 of :func:`block_bound`)."""
    n = anc.shape[0]
    live = np.ones(n, dtype=bool)
    if chain[0][0] >= 0:                           # not live in: the gap before the first definition
        live &= anc[:, chain[0][0]]
    for k, (d, reads) in enumerate(chain):
        if k == len(chain) - 1 and out:
            break
        if k + 1 < len(chain) and chain[k + 1][0] in reads:
            continue                               # the next definition reads this one: no gap between them
        members = reads + ([d] if d >= 0 else [])
        open_ = ~anc[members, :].any(axis=0) if members else np.ones(n, dtype=bool)
        if k + 1 < len(chain):
            open_ &= ~anc[:, chain[k + 1][0]]
        live &= ~open_
    return live


def _first_position(s: BlockSchedule, insts: dict) -> tuple[int, int, int]:
    """Bound 2 of :func:`block_bound`: the least pressure at the block's first position, over the instructions
    that may take it."""
    live_in = _block_live_in(s)
    dying_by: dict = {}
    for b, chain in insts.items():
        d, reads = chain[0]
        if d < 0 and len(set(reads)) == 1 and not (len(chain) == 1 and (s.live_out >> b) & 1):
            dying_by.setdefault(reads[0], 0)
            dying_by[reads[0]] |= 1 << b
    best = None
    for i in range(s.n):
        if s.preds[i]:
            continue
        live = (live_in & ~dying_by.get(i, 0)) | s.defs[i]
        if best is None or s.weight(live) < best[0]:
            best = (s.weight(live), -1, live, "")
    return best


def _min_cut_pressure(s: BlockSchedule, anc: np.ndarray, insts: dict, x: int, first: np.ndarray | None = None,
                      entry: bool = False) -> tuple[int, int]:
    """Bound 3 of :func:`block_bound` at ``x``: the least pressure there over every order (every order that puts
    the instructions of ``first`` before ``x``, when given), and the values live there in one order that has it.
    ``entry``: the least registers live into ``x`` instead (its operands still live, its results not yet made),
    which the instruction just before ``x`` has at least."""
    import networkx as nx

    before = anc[x].copy()
    before[x] = not entry                          # x's reads are done and its results are made at x
    if first is not None:
        before |= first
    after = anc[:, x].copy()                       # x's descendants
    after[x] = entry
    free = ~before & ~after
    g = nx.DiGraph()
    g.add_nodes_from(("s", "t"))
    for y in np.flatnonzero(free):
        for p in s.preds[y]:
            if free[p]:
                g.add_edge(("i", int(y)), ("i", int(p)))           # y before x => its predecessors too
    side = lambda i: "S" if i < 0 or before[i] else "T" if after[i] else "F"
    constant, candidates = 0, []
    for b, chain in insts.items():
        w = 2 if (s.m2 >> b) & 1 else 1 if (s.m1 >> b) & 1 else 0
        if not w or (not entry and (s.defs[x] >> b) & 1):
            continue
        for k, (d, reads) in enumerate(chain):
            where = side(d)
            if where == "T":
                continue
            out = k == len(chain) - 1 and (s.live_out >> b) & 1
            later = out or any(after[r] for r in reads)
            free_reads = sorted({r for r in reads if free[r]})
            if not later and not free_reads:
                continue                            # every read before x: dead there
            candidates.append((b, d, free_reads, later))
            if later:                               # live there exactly when its definition is before x
                if where == "S":
                    constant += w
                else:
                    _add_capacity(g, ("i", d), "t", w)
            elif len(free_reads) == 1:              # live when the definition is before x and the read is not
                _add_capacity(g, "s" if where == "S" else ("i", d), ("i", free_reads[0]), w)
            else:                                   # w [d before] - w [every read before], with an auxiliary node
                z = ("z", b, d)
                if where == "S":
                    constant += w
                else:
                    _add_capacity(g, ("i", d), "t", w)
                _add_capacity(g, "s", z, w)
                constant -= w
                for r in free_reads:
                    g.add_edge(z, ("i", r))
    cut, (source_side, _) = nx.minimum_cut(g, "s", "t")
    placed = lambda i: i < 0 or before[i] or (free[i] and ("i", i) in source_side)
    made = 0 if entry else s.defs[x]
    live = made
    for b, d, free_reads, later in candidates:
        if placed(d) and (later or any(not placed(r) for r in free_reads)):
            live |= 1 << b
    if constant + cut + s.weight(made) != s.weight(live):     # the cut prices what its side leaves live
        raise AssertionError(f"tune's bound: the cut at instruction {x} costs {constant + cut}, its live set "
                             f"{s.weight(live) - s.weight(made)}")
    return s.weight(live), live


def _add_capacity(g, u, v, w: int) -> None:
    if g.has_edge(u, v):
        if "capacity" in g[u][v]:
            g[u][v]["capacity"] += w
    else:
        g.add_edge(u, v, capacity=w)


# -- edits ------------------------------------------------------------------------------------------------

def schedule_edits(program: Program, tuned: Program) -> list[Move]:
    """The :class:`engine.alloc.hand.Move` edits that take ``program`` to ``tuned`` (a reordering of it within
    its dependences), in the order they apply, each legal where it is applied.

    Per block, the fewest moves where they are legal: the instructions of a longest run that keeps its
    relative order (a longest increasing subsequence) stay, and every other one moves, in the new order, to
    just after the instruction the new order puts before it, each checked against the block's dependence
    graph as it stands then. Where a move would pass an instruction it depends on, the block falls back to
    position by position: the instruction that belongs at each position is moved up from where it stands,
    passing only instructions that ``tuned`` puts after it and ``program`` before it, so none it depends on.
    """
    widths = widths_of(program)
    edits = []
    for b, (block, new) in enumerate(zip(program.blocks, tuned.blocks)):
        first = program.block_starts[b]
        want = _positions(block.instructions, new.instructions)
        if want == list(range(len(want))):
            continue
        preds, succs = block_graph(block.instructions, widths)
        moves = _fewest_moves(want, preds, succs)
        edits.extend(Move(first + q, first + p) for q, p in (moves if moves is not None else _every_move(want)))
    return edits


def _every_move(want: list) -> list:
    current, out = list(range(len(want))), []
    for p, target in enumerate(want):
        q = current.index(target, p)
        if q != p:
            current.insert(p, current.pop(q))
            out.append((q, p))
    return out


def _fewest_moves(want: list, preds: list, succs: list) -> list | None:
    """Moves (from, to) of the instructions outside a longest increasing run, or None where one is illegal."""
    rank = {old: r for r, old in enumerate(want)}
    keep = _increasing_run([rank[i] for i in range(len(want))])
    current, out = list(range(len(want))), []
    for r, x in enumerate(want):
        if x in keep:
            continue
        q = current.index(x)
        current.pop(q)
        p = 0 if r == 0 else current.index(want[r - 1]) + 1
        passed = current[p:q] if p < q else current[q:p]
        if any(y in preds[x] or y in succs[x] for y in passed):
            return None
        current.insert(p, x)
        out.append((q, p))
    return out if current == want else None


def _increasing_run(seq: list) -> set:
    """The indices of one longest increasing subsequence of ``seq`` (patience sorting, O(n log n))."""
    import bisect

    tails, tail_at, back = [], [], [-1] * len(seq)
    for i, v in enumerate(seq):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_at.append(i)
        else:
            tails[k], tail_at[k] = v, i
        back[i] = tail_at[k - 1] if k else -1
    out, i = set(), tail_at[-1] if tail_at else -1
    while i >= 0:
        out.add(i)
        i = back[i]
    return out


def _positions(old: tuple, new: tuple) -> list:
    """For each instruction of ``new``, the index in ``old`` it stands for (the k-th copy for the k-th)."""
    from engine.analysis.dependence import instruction_key

    where: dict = {}
    for j, ins in enumerate(old):
        where.setdefault(instruction_key(ins), []).append(j)
    for slots in where.values():
        slots.reverse()
    return [where[instruction_key(ins)].pop() for ins in new]


# -- the search -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` found.

    Attributes
    ----------
    plan : the tuned plan: the new schedule, allocated by ``allocator`` at the plan's budget, figures predicted
    edits : the edits from the plan to ``plan``: :class:`Move` edits, then one :class:`Reallocate`
    target : the register count asked for
    maxlive_before, maxlive_after : MAXLIVE of the program (spill code removed) before and after
    lower_bound : a lower bound of MAXLIVE over every reordering within blocks that keeps the dependences
        (:func:`program_bound`; where the search stops above the target and that bound is not, :func:`refute`'s
        when it finds one above the target)
    registers_before, registers_after : the plan's registers, and the allocator's at the new schedule
    allocator : the allocator run at the new schedule
    seconds : how long the search took
    phases : MAXLIVE after each phase that ran, in order (``("original", 88), ("list", 80), ...)``)
    bound_reason : why no such reordering has MAXLIVE below ``lower_bound`` (:meth:`Bound.reason`)
    peak : where the tuned schedule reaches ``maxlive_after``, its first such instruction and what is live there
    """

    plan: Plan
    edits: tuple
    target: int
    maxlive_before: int
    maxlive_after: int
    lower_bound: int
    registers_before: int
    registers_after: int
    allocator: str
    seconds: float
    phases: tuple
    bound_reason: str = ""
    peak: str = ""

    @property
    def moves(self) -> int:
        return sum(isinstance(e, Move) for e in self.edits)

    @property
    def reached(self) -> bool:
        return self.registers_after <= self.target

    @property
    def why_not(self) -> str | None:
        """Why the target was not reached, or None."""
        if self.reached:
            return None
        if self.lower_bound > self.target:
            return (f"no reordering within blocks can reach {self.target}: every order keeps MAXLIVE >= "
                    f"{self.lower_bound} (lower bound): {self.bound_reason}")
        if self.maxlive_after > self.target:
            return (f"the search reached MAXLIVE {self.maxlive_after}, not {self.target} (the lower bound over every "
                    f"reordering within blocks is {self.lower_bound}, so a better schedule may exist); its peak: "
                    f"{self.peak}")
        return (f"MAXLIVE is {self.maxlive_after}, but {self.allocator} needs {self.registers_after} registers at "
                "that schedule (64-bit pairs are even-aligned)")


def _allocator_of(plan: Plan, allocator: str | None) -> str:
    name = allocator or (plan.allocator if plan.allocator not in ("hand",) else "dsatur")
    check_allocator(name)
    return name


#: the starts of the search: the program's own order and the two list schedules
STARTS = {"top-down list": lambda s, target: list_schedule(s, target),
          "top-down list, closing first": lambda s, target: list_schedule(s, target, True),
          "bottom-up list": lambda s, target: bottom_up_schedule(s, target),
          "bottom-up list, closing first": lambda s, target: bottom_up_schedule(s, target, True),
          "original": None}
#: the local search polishes, of the starts whose names begin with each of these, the best by MAXLIVE after its
#: list schedule (and then the program's own order)
POLISHED = ("top-down", "bottom-up")


def _search(program: Program, target: int, deadline: float, schedules: list) -> tuple[Program, tuple]:
    """Every start of :data:`STARTS` list-scheduled, the best of each direction (:data:`POLISHED`) and the
    program's own order polished by local search, each its share of the time left: lower MAXLIVE wins, then fewer moved
    instructions. ``schedules``: the program's block schedules, reset to the program's order for each start."""
    from engine.analysis.dependence import moved_instructions

    unchanged = max(s.maxlive for s in schedules)
    phases = [("original", unchanged)]
    starts = {}
    for start, schedule in STARTS.items():
        orders = []
        for s in schedules:
            s.set_order(list(range(s.n)))
            if s.maxlive > target and schedule is not None:
                before = s.maxlive
                s.set_order(schedule(s, target))
                if s.maxlive > before:           # the list schedule is worse here: keep the block's own order
                    s.set_order(list(range(s.n)))
            orders.append(list(s.order))
        starts[start] = (max(s.maxlive for s in schedules), orders)
        if schedule is not None:
            phases.append((start, starts[start][0]))
    chosen = [min((k for k in starts if k.startswith(way)), key=lambda k: starts[k][0]) for way in POLISHED]
    chosen.append("original")
    results = [(unchanged, 0, program)]          # no move at all, unless a search does better
    for n, start in enumerate(chosen):
        share = time.monotonic() + (deadline - time.monotonic()) / (len(chosen) - n)
        for s, order in zip(schedules, starts[start][1]):
            s.set_order(order)
            if s.maxlive > target:
                local_search(s, target, min(deadline, share))
        phases.append((f"{start} + local search", max(s.maxlive for s in schedules)))
        tuned = scheduled_program(program, schedules)
        results.append((phases[-1][1], moved_instructions(tuned, program), tuned))
        if phases[-1][1] <= target or time.monotonic() > deadline:
            break
    best = min(results, key=lambda r: (r[0], r[1]))
    return best[2], tuple(phases)


def tune(plan: Plan, target: int, allocator: str | None = None, time_limit: float = TIME_LIMIT) -> TuneResult:
    """Reorder ``plan``'s program within its dependences to bring its registers down to ``target``.

    The allocator (``allocator``, else the plan's own, dsatur for a hand plan) runs at the new schedule at
    the plan's budget; when it needs more registers than MAXLIVE (even-aligned pairs), MAXLIVE is aimed
    lower by the difference and the search runs again, while that helps. See the module docstring.

    Raises
    ------
    TuneError
        for a plan with spill code (tune reorders a program without it) or a target outside 1..budget.
    """
    if has_spill_code(plan.program, plan.spills) and not plan.spills:
        raise TuneError(f"tune works on a plan without spill code; this {plan.allocator} plan rematerialises "
                        f"values (re-allocate it at a larger budget first)")
    if plan.spills:
        if plan.budget < MAX_REGISTERS:
            hint = "re-allocate it at a larger budget first"
        elif plan.allocator == "naive":      # a register per value: no budget makes it fit
            hint = f"its budget is already {MAX_REGISTERS}, the most a thread has: allocate with dsatur first"
        else:
            hint = f"its budget is already {MAX_REGISTERS}, the most a thread has: a smaller tile first"
        raise TuneError(f"tune works on a plan without spill code; this {plan.allocator} plan spills "
                        f"{len(plan.spills)} value(s) ({hint})")
    if not 1 <= target <= plan.budget:
        raise TuneError(f"target {target} registers is outside 1..{plan.budget} (the plan's budget)")
    name = _allocator_of(plan, allocator)
    started = time.monotonic()
    program = remove_spill_code(plan.program, plan.spills)
    before = analyze(program).maxlive
    aim, best = target, None
    schedules = program_schedules(program)
    found = program_bound(program, schedules)
    bound = (found.registers, found.reason(widths_of(program)))
    deadline = time.monotonic() + time_limit     # the search's own time, the bound's not counted in it
    for _ in range(4):
        tuned, phases = _search(program, aim, deadline, schedules)
        result = _finish(plan, program, tuned, name, target, before, bound, phases)
        if best is None or (result.registers_after, result.moves) < (best.registers_after, best.moves):
            best = result
        if result.reached or result.maxlive_after > aim or time.monotonic() > deadline:
            break
        aim -= result.registers_after - target
    if not best.reached and best.maxlive_after > target >= best.lower_bound:   # fell short: is the target out of reach?
        tuned = remove_spill_code(best.plan.program, best.plan.spills)
        proof = refute(tuned, program_schedules(tuned), target)
        if proof is not None:
            best = replace(best, lower_bound=proof.registers, bound_reason=proof.reason(widths_of(tuned)))
    return replace(best, seconds=time.monotonic() - started)


def _finish(plan: Plan, program: Program, tuned: Program, name: str, target: int, before: int, bound: tuple,
            phases: tuple) -> TuneResult:
    """The result of one search (its ``seconds`` set by the caller, who times the searches together); ``bound``:
    the lower bound's registers and its reason."""
    problem = reordering_problem(tuned, program, "the plan's")
    if problem:                                   # a bug in the search, never the user's: say it plainly
        raise AssertionError(f"tune broke a dependence: {problem}")
    after = analyze(tuned)
    if after.maxlive > before:
        tuned, after = program, analyze(program)
    edits = schedule_edits(program, tuned)
    allocation, budget = allocate(name, tuned, plan.budget, after), None
    if registers_used(allocation.assignment) > target and after.maxlive > target:
        # above the target at the plan's budget: at the target the allocator may fit by computing values again
        # where they are read (parameters, constants: no slot, no store); a fit that spills does not count
        try:
            within = allocate(name, tuned, target, after)
        except AllocationError:
            within = None
        if within is not None and not within.spills:
            allocation, budget = within, target
    new = allocation.plan(workload=plan.workload, options=plan.options).with_(allocator="hand")
    new = new.with_(predicted=predict(new, allocation.analysis, allocation.spill_code, allocation.original_analysis))
    peak = (f"instruction {after.peak} ({tuned.instructions[after.peak]}) with {after.maxlive} live "
            f"({families(after.live_at(after.peak))})") if tuned.instructions else ""
    return TuneResult(new, (*edits, Reallocate(name, budget)), target, before, after.maxlive, bound[0],
                      registers_used(plan.assignment), registers_used(new.assignment), name, 0.0, phases, bound[1],
                      peak)


def apply_edits(plan: Plan, edits) -> Plan:
    """``plan`` after ``edits`` applied one by one through :func:`engine.alloc.hand.apply_edit` (each checked
    there: a move across a dependence is rejected, and so raises here)."""
    for e in edits:
        r = apply_edit(plan, e)
        if r.rejected:
            raise TuneError(f"{describe_edit(e)}: {r.rejected}")
        plan = r.plan
    return plan
