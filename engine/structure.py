"""Structured control flow: a program's blocks and branches as a tree of loops and ifs.

:func:`structure` turns the block layout of a :class:`~engine.ir.Program`
into the shapes a Python kernel can say: ``while True`` loops (a header,
its body in layout order, and one latch whose back edge ends the body),
``if``/``if not`` with an optional ``else`` (the then-part ends with
``br JOIN`` past the else-part), ``break`` to the block after the
innermost loop and ``return`` at ``exit``. Anything else is refused with a
:class:`StructureError` that names the block at fault and the shape, and so
is a nest deeper than :data:`engine.limits.MAX_NESTING` (:class:`NestingError`:
every walk of the tree recurses once or a few times a level).

:func:`loop_trips` reads the trip count of each counted loop and
:func:`adjust_trips` rewrites it (shorter runs of MHA in the simulator).

Invariant: a tree from :func:`structure` holds every block of the program
exactly once, as a :class:`Code` leaf, in layout order; running the tree
with any outcomes of the branch conditions visits the blocks in the order
the program's own branches would (tests/engine/test_structure.py checks
both on random programs).

Examples
--------
>>> from engine.ir import parse
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

from engine.errors import LimitError, RegtuneError
from engine.fields import excerpt
from engine.ir import Block, Imm, Instruction, Program, replace_blocks, successors
from engine.limits import MAX_NESTING


class StructureError(RegtuneError):
    """A control-flow graph that is not a nest of loops and ifs (names the block and the shape)."""


class NestingError(StructureError, LimitError):
    """Loops and ifs nested deeper than :data:`engine.limits.MAX_NESTING` (names the block where it goes past)."""


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
    >>> from engine.ir import parse
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
    engine.structure.StructureError: block a: branch to c is not structured (if/else or loop)
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
    >>> from engine.ir import parse
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
    >>> from engine.ir import parse, print_program
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
