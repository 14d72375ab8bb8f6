"""Structuring: golden text of the tree for each shape, and on random programs and random control-flow
graphs, a tree that holds every block once in layout order and runs the blocks in the program's order."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.base.errors import ParseError
from engine.ir.core import Block, Imm, replace_blocks
from engine.ir.parser import parse
from engine.ir.cfg import (
    Break,
    Code,
    If,
    Loop,
    Return,
    Seq,
    StructureError,
    adjust_trips,
    loop_trips,
    print_structure,
    structure,
)
from tests.engine.strategies import programs

CASES = {
    "straight": (".block a\n  %x:i32 = mov 0\n.block b\n  exit\n", "block a\nblock b\nreturn"),
    "loop": (".block a\n  %i:i32 = mov 0\n.block l\n  %i:i32 = add %i, 1\n  %p:pred = setp.lt %i, 4\n"
             "  cbr %p, l, d\n.block d\n  exit\n",
             "block a\nloop\n  block l\n  if not %p\n    break\nblock d\nreturn"),
    "loop exit first": (".block l\n  %p:pred = setp.lt 1, 2\n  cbr %p, d, l\n.block d\n  exit\n",
                        "loop\n  block l\n  if %p\n    break\nblock d\nreturn"),
    "two-block loop with an if": (
        ".block h\n  %p:pred = setp.lt 1, 2\n  cbr %p, t, m\n.block t\n  %x:i32 = mov 1\n.block m\n"
        "  %q:pred = setp.lt 1, 2\n  cbr %q, h, e\n.block e\n  exit\n",
        "loop\n  block h\n  if %p\n    block t\n  block m\n  if not %q\n    break\nblock e\nreturn"),
    "if not": (".block a\n  %p:pred = setp.lt 1, 2\n  cbr %p, j, t\n.block t\n  %x:i32 = mov 1\n.block j\n  exit\n",
               "block a\nif not %p\n  block t\nblock j\nreturn"),
    "if/else": (".block a\n  %p:pred = setp.lt 1, 2\n  cbr %p, t, e\n.block t\n  br j\n.block e\n"
                "  %x:i32 = mov 1\n.block j\n  exit\n",
                "block a\nif %p\n  block t\nelse\n  block e\nblock j\nreturn"),
    "break from an if/else": (
        ".block h\n  %p:pred = setp.lt 1, 2\n  cbr %p, t, e\n.block t\n  br x\n.block e\n  br h\n.block x\n  exit\n",
        "loop\n  block h\n  if %p\n    block t\n    break\n  else\n    block e\nblock x\nreturn"),
}

REFUSED = {
    "crossing branches": (".block a\n  %p:pred = setp.lt 1, 2\n  cbr %p, c, b\n.block b\n  br d\n.block c\n"
                          "  br b\n.block d\n  exit\n", "block b: branch to d is not structured (if/else or loop)"),
    "back edge before the latch": (
        ".block h\n  %p:pred = setp.lt 1, 2\n  cbr %p, h, m\n.block m\n  br h\n.block e\n  exit\n",
        "block h: a jump back to h before the end of its loop is not structured"),
    "if leaving its loop": (
        ".block h\n  %p:pred = setp.lt 1, 2\n  cbr %p, t, x\n.block t\n  br h\n.block x\n  exit\n",
        "block h: if continues at x, outside the enclosing loop or if/else; not structured"),
    "latch exit elsewhere": (".block h\n  %p:pred = setp.lt 1, 2\n  cbr %p, x, h\n.block m\n  exit\n.block x\n  exit\n",
                             "block h: loop exit to a block other than the next"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_text(name):
    text, expected = CASES[name]
    assert print_structure(structure(parse(".kernel k\n" + text))) == expected


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_shapes_name_the_block(name):
    text, message = REFUSED[name]
    with pytest.raises(StructureError) as info:
        structure(parse(".kernel k\n" + text))
    assert str(info.value).startswith(message), str(info.value)


def test_trips_are_read_and_replaced_on_the_back_edge_only():
    text, _ = CASES["loop"]
    program = parse(".kernel k\n" + text)
    assert loop_trips(program) == {"l": 4}
    assert loop_trips(adjust_trips(program, {"l": 2})) == {"l": 2}
    assert adjust_trips(program, None) is program and adjust_trips(program, {"a": 9}) == program
    with pytest.raises(ParseError, match="line 6: operand 2 of setp.lt: 'x1' is not an integer"):
        parse(".kernel k\n" + text.replace("%i, 4", "%i, x1"))    # the parser refuses it first
    head, loop, tail = program.blocks
    bound = replace(loop.instructions[1], operands=(loop.instructions[1].operands[0], Imm("x1")))
    built = replace_blocks(program, [head, Block("l", (loop.instructions[0], bound, loop.instructions[2])), tail])
    with pytest.raises(StructureError, match="block l: immediate 'x1' is not an integer"):
        loop_trips(built)


def _codes(node) -> list[int]:
    if isinstance(node, Code):
        return [node.index]
    if isinstance(node, Seq):
        return [i for item in node.items for i in _codes(item)]
    if isinstance(node, Loop):
        return _codes(node.body)
    if isinstance(node, If):
        return _codes(node.then) + (_codes(node.orelse) if node.orelse is not None else [])
    return []


def _run_cfg(program, bits, limit: int) -> list[int]:
    """Block indices in the order the program's branches visit them (``bits``: each cbr's outcome)."""
    index = {b.name: i for i, b in enumerate(program.blocks)}
    trace, bi = [], 0
    while bi < len(program.blocks) and len(trace) < limit:
        trace.append(bi)
        ins = program.blocks[bi].instructions
        last = ins[-1] if ins else None
        if last is None or not last.is_terminator:
            bi += 1
        elif last.opcode == "exit":
            break
        else:
            targets = last.targets
            bi = index[targets[0] if last.opcode == "br" or next(bits) else targets[1]]
    return trace


class _Full(Exception):
    pass


def _run_tree(program, tree, bits, limit: int) -> list[int]:
    """Block indices in the order the tree runs them, each cbr taking the next of ``bits``."""
    trace, taken = [], [None]

    def run(node):
        if isinstance(node, Seq):
            for item in node.items:
                out = run(item)
                if out:
                    return out
        elif isinstance(node, Code):
            if len(trace) >= limit:
                raise _Full
            trace.append(node.index)
            ins = program.blocks[node.index].instructions
            if ins and ins[-1].opcode == "cbr":
                taken[0] = next(bits)
        elif isinstance(node, Loop):
            while True:
                out = run(node.body)
                if out:
                    return None if out == "break" else out
        elif isinstance(node, If):
            return run(node.then if taken[0] != node.negated else (node.orelse or Seq()))
        else:
            return "break" if isinstance(node, Break) else "return"
        return None

    try:
        run(tree)
    except _Full:
        pass
    return trace


def _check(program, outcomes) -> None:
    """Structured, the tree holds each block once in order and runs like the program; or it is refused
    with a message that names one of the program's blocks."""
    try:
        tree = structure(program)
    except StructureError as exc:
        assert any(str(exc).startswith(f"block {b.name}: ") for b in program.blocks), str(exc)
        return
    assert _codes(tree) == list(range(len(program.blocks)))
    assert all(c.name == program.blocks[c.index].name for c in _leaves(tree))
    cycle = [*outcomes, True, False]
    assert _run_tree(program, tree, itertools.cycle(cycle), 60) == _run_cfg(program, itertools.cycle(cycle), 60)


def _leaves(node) -> list:
    if isinstance(node, Code):
        return [node]
    children = {Seq: lambda n: n.items, Loop: lambda n: (n.body,),
                If: lambda n: (n.then,) + ((n.orelse,) if n.orelse is not None else ())}.get(type(node))
    return [leaf for c in (children(node) if children else ()) for leaf in _leaves(c)]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(programs(), st.lists(st.booleans(), max_size=16))
def test_random_programs_structure_exactly_and_run_in_order(program, outcomes):
    _check(program, outcomes)


@st.composite
def graphs(draw):
    """Random control-flow graphs: 1-7 blocks, each falling through or ending in exit, br or cbr."""
    n = draw(st.integers(1, 7))
    lines = [".kernel g"]
    for b in range(n):
        lines += [f".block b{b}", "  %x:i32 = mov 0"]
        end = draw(st.sampled_from(["", "exit", "br", "cbr"]))
        target = lambda: f"b{draw(st.integers(0, n - 1))}"
        if end == "exit":
            lines.append("  exit")
        elif end == "br":
            lines.append(f"  br {target()}")
        elif end == "cbr":
            lines += [f"  %c{b}:pred = setp.lt 1, 2", f"  cbr %c{b}, {target()}, {target()}"]
    return parse("\n".join(lines) + "\n")


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(graphs(), st.lists(st.booleans(), max_size=16))
def test_random_graphs_are_structured_exactly_or_refused_by_block(program, outcomes):
    _check(program, outcomes)
