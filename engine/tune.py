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
bound of MAXLIVE over every such reordering (values that the dependence graph
forces to be live across an instruction).

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
from engine.base.errors import RegtuneError
from engine.base.limits import MAX_REGISTERS
from engine.ir.core import Block, Program, replace_blocks
from engine.ir.spill import has_spill_code, remove_spill_code
from engine.plan import Plan, registers_used
from engine.predict import predict

__all__ = ["BlockSchedule", "TuneResult", "describe_edit", "lower_bound", "schedule_edits", "tune"]

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

def lower_bound(program: Program) -> int:
    """A lower bound of MAXLIVE over every reordering of ``program``'s blocks within their dependences.

    At each instruction ``x``, a value must be live across it when its definition (or the block's entry)
    comes before ``x`` in every such order, because it is an ancestor of ``x`` in the dependence graph,
    and a read of that definition comes after ``x`` in every order (a descendant), or it is live out of the
    block; ``x``'s own results count too. The bound is the largest such sum.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...           "  st.global %x, 0, %z\\n  exit\\n")
    >>> lower_bound(p), analyze(p).maxlive
    (2, 2)
    """
    return max((_block_bound(s) for s in program_schedules(program)), default=0)


def _block_bound(s: BlockSchedule) -> int:
    n = s.n
    if n == 0:
        return s.weight(s.live_out)
    anc = np.zeros((n, n), dtype=bool)          # anc[x, y]: y comes before x in every order
    for x in range(n):                           # the original order is topological
        for p in s.preds[x]:
            anc[x, p] = True
            anc[x] |= anc[p]
    readers_left = _instance_readers(s)
    instances: dict = {}
    for i in range(n):
        for key in s._instance_of[i]:
            instances.setdefault(key, []).append(i)
    for b, d in s._last_def.items():             # a definition live out with no read in the block
        if (s.live_out >> b) & 1:
            instances.setdefault((b, d), [])
    for b in _bits(s.live_out):                  # live through the block untouched
        instances.setdefault((b, -1), [])
    del readers_left
    bound = np.zeros(n, dtype=np.int64)
    for (b, d), readers in instances.items():
        w = 2 if (s.m2 >> b) & 1 else 1 if (s.m1 >> b) & 1 else 0
        if not w:
            continue
        before = np.ones(n, dtype=bool) if d < 0 else anc[:, d].copy()
        out = (s.live_out >> b) & 1 and s._last_def.get(b, -1) == d
        after = np.ones(n, dtype=bool) if out else (anc[readers, :].any(axis=0) if readers else np.zeros(n, bool))
        across = before & after
        definers = [x for x in range(n) if (s.defs[x] >> b) & 1]
        across[definers] = False                 # counted with their own results below
        bound += w * across
    for x in range(n):
        bound[x] += s.weight(s.defs[x])
    return int(bound.max())


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
    lower_bound : a lower bound of MAXLIVE over every reordering within the dependences (:func:`lower_bound`)
    registers_before, registers_after : the plan's registers, and the allocator's at the new schedule
    allocator : the allocator run at the new schedule
    seconds : how long the search took
    phases : MAXLIVE after each phase that ran, in order (``("original", 88), ("list", 80), ...)``)
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
            return (f"no reordering within the dependences can: the dependence graph forces MAXLIVE >= "
                    f"{self.lower_bound} (lower bound), above the target {self.target}")
        if self.maxlive_after > self.target:
            return (f"the search reached MAXLIVE {self.maxlive_after}, not {self.target} (the dependence graph's "
                    f"lower bound is {self.lower_bound}, so a better schedule may exist)")
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
    deadline = started + time_limit
    program = remove_spill_code(plan.program, plan.spills)
    before = analyze(program).maxlive
    aim, best = target, None
    schedules = program_schedules(program)
    bound = max(_block_bound(s) for s in schedules)
    for _ in range(4):
        tuned, phases = _search(program, aim, deadline, schedules)
        result = _finish(plan, program, tuned, name, target, before, bound, phases)
        if best is None or (result.registers_after, result.moves) < (best.registers_after, best.moves):
            best = result
        if result.reached or result.maxlive_after > aim or time.monotonic() > deadline:
            break
        aim -= result.registers_after - target
    return replace(best, seconds=time.monotonic() - started)


def _finish(plan: Plan, program: Program, tuned: Program, name: str, target: int, before: int, bound: int,
            phases: tuple) -> TuneResult:
    """The result of one search (its ``seconds`` set by the caller, who times the searches together)."""
    problem = reordering_problem(tuned, program, "the plan's")
    if problem:                                   # a bug in the search, never the user's: say it plainly
        raise AssertionError(f"tune broke a dependence: {problem}")
    after = analyze(tuned)
    if after.maxlive > before:
        tuned, after = program, analyze(program)
    edits = schedule_edits(program, tuned)
    allocation = allocate(name, tuned, plan.budget, after)
    new = allocation.plan(workload=plan.workload, options=plan.options).with_(allocator="hand")
    new = new.with_(predicted=predict(new, allocation.analysis, allocation.spill_code, allocation.original_analysis))
    return TuneResult(new, (*edits, Reallocate(name)), target, before, after.maxlive, bound,
                      registers_used(plan.assignment), registers_used(new.assignment), name, 0.0, phases)


def apply_edits(plan: Plan, edits) -> Plan:
    """``plan`` after ``edits`` applied one by one through :func:`engine.alloc.hand.apply_edit` (each checked
    there: a move across a dependence is rejected, and so raises here)."""
    for e in edits:
        r = apply_edit(plan, e)
        if r.rejected:
            raise TuneError(f"{describe_edit(e)}: {r.rejected}")
        plan = r.plan
    return plan
