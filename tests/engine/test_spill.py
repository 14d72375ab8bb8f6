"""Spill code: golden text (parse, spill, print, compare) and exact removal."""

from hypothesis import given
from hypothesis import strategies as st

from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.ir.spill import insert_spill_code, remove_spill_code
from tests.engine.strategies import programs

BEFORE = """.kernel k
.block entry
  %p:u64 = param P
  %q:pred = setp.lt %p, 4
.phase softmax
  %x:f32 = mov 1
  %x:f32 = @%q add %x, %x
  %x:f32 = fma %x, %x, %x
  st.global %p, 0, %x
  exit
"""

AFTER = """.kernel k
.block entry
  %p:u64 = param P
  %q:pred = setp.lt %p, 4
.phase softmax
  %x:f32 = mov 1
  st.local 7, %x
  %x.r1:f32 = ld.local 7
  %x.d1:f32 = ld.local 7
  %x.d1:f32 = @%q add %x.r1, %x.r1
  st.local 7, %x.d1
  %x.r2:f32 = ld.local 7
  %x.d2:f32 = fma %x.r2, %x.r2, %x.r2
  st.local 7, %x.d2
  %x.r3:f32 = ld.local 7
  st.global %p, 0, %x.r3
  exit
"""


def test_golden_spill_code():
    program = parse(BEFORE)
    spilled = insert_spill_code(program, {"x": 7})
    assert print_program(spilled) == AFTER
    assert remove_spill_code(spilled, {"x": 7}) == program


@given(st.data(), programs())
def test_remove_inverts_insert_for_any_set_of_values(data, program):
    names = sorted(n for n, v in program.values.items() if v.width)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=4))
    slots = {n: 100 + k for k, n in enumerate(chosen)}
    assert remove_spill_code(insert_spill_code(program, slots), slots) == program


@given(st.data(), programs(), st.sampled_from(["chaitin-briggs", "linear-scan", "naive"]))
def test_spill_code_recorded_by_insertion_is_what_a_search_finds(data, program, name):
    """The allocation's record (insertions over several rounds, positions carried forward) equals a search."""
    from engine.alloc import allocate
    from engine.ir.spill import _find_spill_code, spill_code_of

    a = allocate(name, program, data.draw(st.sampled_from([10, 16])))
    found = spill_code_of(a.program, a.spills)
    assert a.spill_code == found
    assert set(found.loads) | set(found.stores) == _find_spill_code(a.program, a.spills)[0]
    opcode = [ins.opcode for ins in a.program.instructions]
    assert {opcode[i] for i in found.loads} <= {"ld.local"} and {opcode[i] for i in found.stores} <= {"st.local"}


@given(st.data(), programs(mixed=True))
def test_spill_code_equals_the_parsed_text(data, program):
    """Spill insertion's instructions equal, hash and read (``uses``, ``width``: cached properties) like the ones
    the parser makes from the printed text."""
    from engine.ir.core import WIDTHS, _uses

    names = sorted(n for n, v in program.values.items() if v.width)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=4)) if names else []
    spilled = insert_spill_code(program, {n: 100 + k for k, n in enumerate(chosen)})
    again = parse(print_program(spilled))
    assert spilled == again and hash(spilled.instructions) == hash(again.instructions)
    assert [ins.uses for ins in spilled.instructions] == [_uses(ins.operands, ins.guard) for ins in again.instructions]
    assert [(v.name, v.width) for v in spilled.values.values()] == [(v.name, WIDTHS[v.type]) for v in again.values.values()]

