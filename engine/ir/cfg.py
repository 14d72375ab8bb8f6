"""Structured control flow: a program's blocks and branches as a tree of loops and ifs.

:func:`structure` turns the block layout of a :class:`~engine.ir.core.Program`
into the shapes a Python kernel can say: ``while True`` loops (a header,
its body in layout order, and one latch whose back edge ends the body),
``if``/``if not`` with an optional ``else`` (the then-part ends with
``br JOIN`` past the else-part), ``break`` to the block after the
innermost loop and ``return`` at ``exit``. Anything else is refused with a
:class:`StructureError` that names the block at fault and the shape, and so
is a nest deeper than :data:`engine.base.limits.MAX_NESTING` (:class:`NestingError`:
every walk of the tree recurses once or a few times a level).

:func:`loop_trips` reads the trip count of each counted loop and
:func:`adjust_trips` rewrites it (shorter runs of MHA in the simulator);
:func:`run_bound` says how many instructions every run has executed once
it gets past a counted loop, before anything runs.

Invariant: a tree from :func:`structure` holds every block of the program
exactly once, as a :class:`Code` leaf, in layout order; running the tree
with any outcomes of the branch conditions visits the blocks in the order
the program's own branches would (tests/engine/test_structure.py checks
both on random programs).

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
...           "  %p:pred = setp.lt %i, 3\\n  cbr %p, loop, done\\n.block done\\n  exit\\n")
>>> print(structure(p))
block a
loop
  block loop
  if not %p
    break
block done
return
>>> loop_trips(p)
{'loop': 3}
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.base.errors import LimitError, RegtuneError
from engine.base.fields import excerpt
from engine.base.limits import MAX_NESTING, MAX_STEPS
from engine.ir.core import (
    Block,
    Imm,
    Instruction,
    Program,
    Use,
    replace_blocks,
    successors,
)


class StructureError(RegtuneError):
    """A control-flow graph that is not a nest of loops and ifs (names the block and the shape)."""


class NestingError(StructureError, LimitError):
    """Loops and ifs nested deeper than :data:`engine.base.limits.MAX_NESTING` (names the block where it goes past)."""


@dataclass(frozen=True)
class Code:
    """Block ``index`` (named ``name``) run straight through: its instructions, terminator included."""

    index: int
    name: str


@dataclass(frozen=True)
class Break:
    """Leave the innermost loop (control goes on at the block after its latch)."""


@dataclass(frozen=True)
class Return:
    """Leave the kernel (the block ended with ``exit``)."""


@dataclass(frozen=True)
class Seq:
    """Nodes run one after the other."""

    items: tuple = ()

    def __str__(self) -> str:
        return print_structure(self)


@dataclass(frozen=True)
class Loop:
    """``while True: body``; the body leaves through a :class:`Break` or :class:`Return`."""

    body: Seq


@dataclass(frozen=True)
class If:
    """``if [not] %cond: then [else: orelse]``; ``cond`` is the predicate value's name."""

    cond: str
    negated: bool
    then: Seq
    orelse: Seq | None = None


Node = Code | Break | Return | Seq | Loop | If


def print_structure(node: Node, depth: int = 0) -> str:
    """The canonical text of a tree: one node a line, bodies indented by two spaces.

    Examples
    --------
    >>> print(print_structure(Seq((Code(0, "a"), If("c", True, Seq((Break(),)), Seq())))))
    block a
    if not %c
      break
    else
    """
    return "\n".join(_lines(node, depth))


def _lines(node: Node, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(node, Seq):
        return [line for item in node.items for line in _lines(item, depth)]
    if isinstance(node, Code):
        return [f"{pad}block {node.name}"]
    if isinstance(node, Loop):
        return [f"{pad}loop"] + _lines(node.body, depth + 1)
    if isinstance(node, If):
        head = [f"{pad}if {'not ' if node.negated else ''}%{node.cond}"] + _lines(node.then, depth + 1)
        return head if node.orelse is None else head + [f"{pad}else"] + _lines(node.orelse, depth + 1)
    return [f"{pad}{'break' if isinstance(node, Break) else 'return'}"]


def structure(program: Program) -> Seq:
    """The program's control flow as a tree of :class:`Seq`, :class:`Loop`, :class:`If` and :class:`Code`.

    Raises :class:`StructureError` naming the first block (in layout order) whose
    branch fits none of the shapes in the module docstring.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %c:pred = setp.lt 1, 2\\n  cbr %c, b, c\\n.block b\\n"
    ...           "  %x:i32 = mov 1\\n.block c\\n  exit\\n")
    >>> print(structure(p))
    block a
    if %c
      block b
    block c
    return
    >>> structure(parse(".kernel k\\n.block a\\n  br c\\n.block b\\n  exit\\n.block c\\n  br b\\n"))
    Traceback (most recent call last):
    ...
    engine.ir.cfg.StructureError: block a: branch to c is not structured (if/else or loop)
    """
    return _Structurer(program).region(0, len(program.blocks), None, True)


class _Structurer:
    """Walks blocks in layout order; ``loop`` is (header, block after the latch) of the innermost loop,
    ``falls`` says whether running off the end of a region reaches the block at its end."""

    def __init__(self, program: Program):
        self.blocks = program.blocks
        self.index = {b.name: i for i, b in enumerate(program.blocks)}
        self.succ = successors(program)
        self.depth = 0

    def region(self, start: int, stop: int, loop: tuple | None, falls: bool, join: int | None = None) -> Seq:
        """Blocks start..stop-1; ``join`` is where a then-part's closing ``br`` goes (after its else-part)."""
        self.depth += 1
        try:
            return self._region(start, stop, loop, falls, join)
        finally:
            self.depth -= 1

    def _region(self, start: int, stop: int, loop: tuple | None, falls: bool, join: int | None) -> Seq:
        if self.depth > MAX_NESTING + 1:     # the whole program is the first region
            raise NestingError(f"block {self.blocks[start].name}: loops and ifs nested more than {MAX_NESTING} deep "
                               "(RegTune's limit)")
        items: list = []
        bi = start
        while bi < stop:
            latch = self._latch(bi, stop)
            if latch is not None and (loop is None or loop[0] != bi):
                self._follows(bi, latch + 1, stop, falls, "loop")
                items.append(Loop(self.region(bi, latch + 1, (bi, latch + 1), False)))
                bi = latch + 1
                continue
            bi = self._block(bi, stop, loop, falls, join, items)
        return Seq(tuple(items))

    def _latch(self, header: int, stop: int) -> int | None:
        """The last block before ``stop`` that branches back to ``header`` (None: not a loop header)."""
        latches = [b for b in range(header, stop) if header in self.succ[b] and self._ends_in(b, ("br", "cbr"))]
        return max(latches) if latches else None

    def _ends_in(self, bi: int, opcodes: tuple) -> Instruction | None:
        ins = self.blocks[bi].instructions
        return ins[-1] if ins and ins[-1].opcode in opcodes else None

    def _follows(self, bi: int, after: int, stop: int, falls: bool, what: str) -> None:
        """A construct starting at block ``bi`` is followed by block ``after``: Python goes on there only when
        ``after`` is inside the region, or is its end and the region falls through to it."""
        if after > stop or (after == stop and not falls):
            where = self.blocks[after].name if after < len(self.blocks) else "the end of the kernel"
            raise StructureError(f"block {self.blocks[bi].name}: {what} continues at {where}, outside the "
                                 f"enclosing {'if' if falls else 'loop or if/else'}; not structured")

    def _block(self, bi: int, stop: int, loop, falls: bool, join, items: list) -> int:
        block = self.blocks[bi]
        items.append(Code(bi, block.name))
        last = block.instructions[-1] if block.instructions else None
        if last is None or not last.is_terminator:
            return bi + 1
        if last.guard is not None:
            raise StructureError(f"block {block.name}: a guarded '{last.opcode}' (it falls through when its guard "
                                 "is false); write it as cbr; not structured")
        if last.opcode == "exit":
            items.append(Return())
            return bi + 1
        targets = [self.index[t] for t in last.targets]
        if loop is not None and loop[0] in targets:
            return self._back_edge(bi, last, targets, loop, items)
        if last.opcode == "cbr":
            return self._branch(bi, last, targets, stop, loop, falls, items)
        if targets[0] == bi + 1:
            return bi + 1
        if loop is not None and targets[0] == loop[1]:
            items.append(Break())
            return bi + 1
        if targets[0] == join and bi + 1 == stop:
            return bi + 1
        raise StructureError(f"block {block.name}: branch to {last.targets[0]} is not structured (if/else or loop)")

    def _back_edge(self, bi: int, last: Instruction, targets: list, loop: tuple, items: list) -> int:
        name = self.blocks[bi].name
        if bi + 1 != loop[1]:
            raise StructureError(f"block {name}: a jump back to {self.blocks[loop[0]].name} before the end of "
                                 "its loop is not structured (only the last block may branch back)")
        if last.opcode == "br":
            return bi + 1
        stay, leave = targets
        if (stay if leave == loop[0] else leave) != bi + 1:
            raise StructureError(f"block {name}: loop exit to a block other than the next")
        items.append(If(last.operands[0].name, leave != loop[0], Seq((Break(),))))
        return bi + 1

    def _branch(self, bi: int, last: Instruction, targets: list, stop: int, loop, falls: bool, items: list) -> int:
        cond, (then, other) = last.operands[0].name, targets
        if then == bi + 1 and other > then:
            join = self._else_join(then, other)
            if not (loop is not None and join == loop[1] == stop):   # else the then-part ends with a break
                self._follows(bi, join or other, stop, falls, "if/else" if join else "if")
            body = self.region(then, other, loop, join is None and (other < stop or falls), join)
            orelse = self.region(other, join, loop, join < stop or falls) if join is not None else None
            items.append(If(cond, False, body, orelse))
            return join or other
        if other == bi + 1 and then > other:
            self._follows(bi, then, stop, falls, "if")
            items.append(If(cond, True, self.region(other, then, loop, then < stop or falls)))
            return then
        raise StructureError(f"block {self.blocks[bi].name}: conditional branch to {last.targets} is not "
                             "structured (if/else or loop)")

    def _else_join(self, then: int, other: int) -> int | None:
        """When the then-part ends with ``br J`` past the else-part, the else-part is other..J-1."""
        last = self._ends_in(other - 1, ("br",))
        if last is not None and self.index[last.targets[0]] > other:
            return self.index[last.targets[0]]
        return None


def loop_trips(program: Program) -> dict:
    """Trip count of each counted loop: block label -> N from its ``setp.lt %it, N`` back edge.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> loop_trips(parse(".kernel k\\n.block l\\n  %i:i32 = mov 0\\n  %p:pred = setp.lt %i, 0x10\\n"
    ...                  "  cbr %p, l, e\\n.block e\\n  exit\\n"))
    {'l': 16}
    """
    found = {}
    for block in program.blocks:
        last = block.instructions[-1] if block.instructions else None
        if last is None or last.opcode != "cbr" or block.name not in last.targets:
            continue
        for i in block.instructions:
            if i.opcode == "setp.lt" and any(d.name == last.operands[0].name for d in i.defs) \
                    and isinstance(i.operands[1], Imm):
                found[block.name] = _integer(i.operands[1].text, f"block {block.name}")
    return found


def _integer(text: str, where: str) -> int:
    try:
        return int(text, 0)
    except (ValueError, OverflowError):
        raise StructureError(f"{where}: immediate {excerpt(text)} is not an integer") from None


def adjust_trips(program: Program, trips: dict | None) -> Program:
    """Replace loop trip counts (``setp.lt %it, N`` feeding a back edge of block LABEL) for small runs.

    Examples
    --------
    >>> from engine.ir.core import print_program
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block l\\n  %i:i32 = mov 0\\n  %p:pred = setp.lt %i, 64\\n"
    ...           "  cbr %p, l, e\\n.block e\\n  exit\\n")
    >>> "setp.lt %i, 2" in print_program(adjust_trips(p, {"l": 2}))
    True
    """
    if not trips:
        return program
    blocks = []
    for block in program.blocks:
        ins = list(block.instructions)
        if block.name in trips and ins and ins[-1].opcode == "cbr":
            cond = ins[-1].operands[0].name
            for k, i in enumerate(ins):
                if cond in [d.name for d in i.defs] and i.opcode == "setp.lt" and isinstance(i.operands[1], Imm):
                    ins[k] = Instruction(i.opcode, i.defs, (i.operands[0], Imm(str(int(trips[block.name])))), i.guard,
                                         i.guard_negated, i.phase)
        blocks.append(Block(block.name, tuple(ins)))
    return replace_blocks(program, blocks)


@dataclass(frozen=True)
class RunBound:
    """Every run that gets past the loop at block ``header`` has executed at least ``steps`` instructions.

    ``trips`` is the loop's trip count and ``nested`` the counted loops inside it.
    """

    steps: int
    header: str
    trips: int
    nested: int


def run_bound(program: Program, tree: Seq | None = None, limit: int = MAX_STEPS) -> RunBound | None:
    """The first counted loop, in the order a run meets them, past which every run has executed more than
    ``limit`` instructions; else the one past which runs have executed the most; None without counted loops.

    A loop is counted when its trip count is known before it runs: its
    latch ends ``%p = setp.lt %i, N`` (N in 1..2**31-1) and ``cbr %p,
    HEADER, NEXT``, nothing else leaves it, ``%i:i32`` is set by ``mov 0``
    in the code before the loop and changed in the loop only by one ``add
    %i, 1`` outside any inner loop or if: it runs at least N trips. Each
    count is a lower bound: an if counts its shorter side, a loop that is not
    counted one trip up to its first way out.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
    ...           "  %p:pred = setp.lt %i, 1000\\n  cbr %p, loop, done\\n.block done\\n  exit\\n")
    >>> run_bound(p)
    RunBound(steps=3001, header='loop', trips=1000, nested=0)
    """
    bound = _RunBound(program)
    passed = bound.walk(structure(program) if tree is None else tree, 0)
    over = [b for b in passed if b.steps > limit]
    return over[0] if over else max(passed, key=lambda b: b.steps, default=None)


class _RunBound:
    """Walks a structure tree counting the instructions every run executes (see :func:`run_bound`); each
    figure of a node is computed once (memos keyed by the node's id, the tree outliving the walk)."""

    def __init__(self, program: Program):
        self.blocks = program.blocks
        self.values = program.values
        self.known: dict[int, int | None] = {}       # Loop -> its trip count (None: not counted)
        self.written: dict[int, frozenset] = {}       # node -> the values written under it
        self.writers: dict[int, dict] = {}            # Seq -> value -> positions of the items that write it
        self.leaves: dict[int, tuple] = {}            # node -> (has a return, has a break out of it)
        self.last: dict[int, dict] = {}               # block -> value -> its last write in the block

    def walk(self, seq: Seq, before: int) -> list[RunBound]:
        """The loops of ``seq`` (inner ones first) a run gets past, having executed ``before`` on entering it."""
        passed: list[RunBound] = []
        for k, item in enumerate(seq.items):
            for inner in (item.then, item.orelse or Seq()) if isinstance(item, If) else ():
                passed += self.walk(inner, before)
            if isinstance(item, Loop):
                passed += self.walk(item.body, before)
                trips = self.trips(seq, k)
                if trips is not None:
                    passed.append(RunBound(before + self.least(seq, k), self._name(item), trips,
                                           self._counted(item.body)))
            before += self.least(seq, k)
            if isinstance(item, (Break, Return)):
                break
        return passed

    def least(self, seq: Seq, k: int) -> int:
        """The fewest instructions a run executes in item ``k`` of ``seq`` (up to its first way out)."""
        node = seq.items[k]
        if isinstance(node, Code):
            return len(self.blocks[node.index].instructions)
        if isinstance(node, If):
            return min(self._all(node.then), self._all(node.orelse) if node.orelse is not None else 0)
        if isinstance(node, Loop):
            return (self.trips(seq, k) or 1) * self._all(node.body)
        return 0

    def _all(self, seq: Seq) -> int:
        """The fewest instructions a run executes in ``seq``."""
        total = 0
        for k, item in enumerate(seq.items):
            total += self.least(seq, k)
            if self._exits(item):
                break
        return total

    def trips(self, seq: Seq, k: int) -> int | None:
        """The trip count of loop ``k`` of ``seq`` when it is counted (see :func:`run_bound`), else None."""
        loop = seq.items[k]
        if id(loop) not in self.known:
            self.known[id(loop)] = self._trips(loop, seq, k)
        return self.known[id(loop)]

    def _trips(self, loop: Loop, seq: Seq, k: int) -> int | None:
        items = loop.body.items
        latch_exit = If(_cond(items[-1]), True, Seq((Break(),))) if items else None   # if not %p: break
        if len(items) < 2 or not isinstance(items[-2], Code) or items[-1] != latch_exit:
            return None
        if any(self._exits(item) for item in items[:-1]):
            return None
        setp = self._last_def(items[-2].index, items[-1].cond)
        if setp is None or setp.opcode != "setp.lt" or not isinstance(setp.operands[1], Imm):
            return None
        n, counter = _int(setp.operands[1].text), setp.operands[0]
        if n is None or not 1 <= n < 2 ** 31 or isinstance(counter, Imm) or self.values[counter.name].type != "i32":
            return None
        if not (self._counts_once(items, counter.name) and self._starts_at_zero(seq, k, counter.name)):
            return None
        return n

    def _counts_once(self, items, counter: str) -> bool:
        """``counter`` is written in the loop only by one ``add %counter, 1`` in a block of the loop itself."""
        if any(counter in self._writes(item) for item in items if not isinstance(item, Code)):
            return False
        writes = [i for c in items if isinstance(c, Code) for i in self.blocks[c.index].instructions
                  if any(d.name == counter for d in i.defs)]
        return len(writes) == 1 and _is_increment(writes[0], counter)

    def _starts_at_zero(self, seq: Seq, k: int, counter: str) -> bool:
        """The last item before ``k`` to write ``counter`` is a block whose last write of it is ``mov 0``."""
        if id(seq) not in self.writers:
            at: dict = {}
            for j, item in enumerate(seq.items):
                for name in self._writes(item):
                    at.setdefault(name, []).append(j)
            self.writers[id(seq)] = at
        before = [j for j in self.writers[id(seq)].get(counter, ()) if j < k]
        item = seq.items[before[-1]] if before else None
        first = self._last_def(item.index, counter) if isinstance(item, Code) else None
        return (first is not None and first.opcode == "mov" and len(first.operands) == 1
                and isinstance(first.operands[0], Imm) and _int(first.operands[0].text) == 0)

    def _writes(self, node) -> frozenset:
        """The values some instruction under ``node`` writes."""
        if id(node) not in self.written:
            if isinstance(node, Code):
                names = frozenset(d.name for i in self.blocks[node.index].instructions for d in i.defs)
            else:
                names = frozenset().union(*map(self._writes, _children(node)))
            self.written[id(node)] = names
        return self.written[id(node)]

    def _exits(self, node) -> bool:
        """Whether a run may leave the sequence holding ``node`` there: a return anywhere in it, or a break
        outside any loop of its own."""
        returns, breaks = self._leaving(node)
        return returns or breaks

    def _leaving(self, node) -> tuple:
        if id(node) not in self.leaves:
            if isinstance(node, Return | Break):
                found = (isinstance(node, Return), isinstance(node, Break))
            else:
                inner = [self._leaving(c) for c in _children(node)]
                found = (any(r for r, _ in inner), not isinstance(node, Loop) and any(b for _, b in inner))
            self.leaves[id(node)] = found
        return self.leaves[id(node)]

    def _last_def(self, block: int, name: str) -> Instruction | None:
        """The last instruction of a block that writes ``name``, when no guard makes that write optional."""
        if block not in self.last:
            self.last[block] = {d.name: i for i in self.blocks[block].instructions for d in i.defs}
        ins = self.last[block].get(name)
        return ins if ins is not None and ins.guard is None else None

    def _name(self, loop: Loop) -> str:
        node = loop
        while not isinstance(node, Code):      # a loop starts with its header block
            node = _children(node)[0]
        return self.blocks[node.index].name

    def _counted(self, node) -> int:
        """Counted loops under ``node``."""
        own = isinstance(node, Loop) and self.known.get(id(node)) is not None
        return own + sum(self._counted(c) for c in _children(node))


def block_frequencies(program: Program, uncounted: int = 10) -> list[int]:
    """How many times each block runs in one run of the kernel, by the loop trip counts: a block runs the
    product of the trip counts of the loops around it (a counted loop, see :func:`run_bound`, by its count;
    any other loop by ``uncounted``, as Chaitin's 10 per loop level); both sides of an if run as often as the
    code around it (an upper bound for the side not taken). The executed-spill model of the ``optimal``
    allocator.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
    ...           "  %p:pred = setp.lt %i, 7\\n  cbr %p, loop, done\\n.block done\\n  exit\\n")
    >>> block_frequencies(p)
    [1, 7, 1]
    """
    counts = [1] * len(program.blocks)
    bound = _RunBound(program)

    def walk(seq: Seq, times: int) -> None:
        for k, item in enumerate(seq.items):
            if isinstance(item, Code):
                counts[item.index] = times
            elif isinstance(item, If):
                walk(item.then, times)
                if item.orelse is not None:
                    walk(item.orelse, times)
            elif isinstance(item, Loop):
                trips = bound.trips(seq, k)
                walk(item.body, times * (trips if trips is not None else uncounted))

    if program.blocks:
        walk(structure(program), 1)
    return counts


def _cond(node) -> str | None:
    return node.cond if isinstance(node, If) else None


def _children(node) -> tuple:
    if isinstance(node, Seq):
        return node.items
    if isinstance(node, Loop):
        return (node.body,)
    if isinstance(node, If):
        return (node.then,) if node.orelse is None else (node.then, node.orelse)
    return ()


def _is_increment(ins: Instruction, counter: str) -> bool:
    ops = ins.operands
    return (ins.opcode == "add" and ins.guard is None and len(ins.defs) == 1 and len(ops) == 2
            and {type(o) for o in ops} == {Use, Imm} and any(isinstance(o, Use) and o.name == counter for o in ops)
            and any(isinstance(o, Imm) and _int(o.text) == 1 for o in ops))


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except (ValueError, OverflowError):
        return None
