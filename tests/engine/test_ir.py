"""IR text form: exact round trips, and parse errors that name the line."""

import pytest
from hypothesis import given

from engine.base.errors import ParseError
from engine.ir.core import Program, print_program, successors
from engine.ir.parser import parse
from tests.engine.rule_cases import ACCEPTED_LINES, REFUSED_LINES, RULES_BASE
from tests.engine.strategies import program_texts

DESIGN_EXAMPLE = """.kernel gemm_m1n1k2
.block entry
  %pa:u64 = param A
  %pb:u64 = param B
  %pc:u64 = param C
  %a_0_0:f32 = ld.global %pa, 0
  %b_0_0:f32 = ld.global %pb, 0
  %acc_0_0:f32 = mul %a_0_0, %b_0_0
  %a_0_1:f32 = ld.global %pa, 4
  %b_1_0:f32 = ld.global %pb, 4
  %acc_0_0:f32 = fma %a_0_1, %b_1_0, %acc_0_0
  st.global %pc, 0, %acc_0_0
  exit
"""

EVERY_FORM = """.kernel forms
.block entry
  %p:u64 = param P
.phase load
  %x:f32, %y:f32 = ld.global.v2 %p, 8
  %h:f16x2 = cvt.rn.f16x2.f32 %x, %y
  %d:f64 = cvt.f64.f32 %x
.phase -
  %q:pred = setp.lt %x, 0.5
  %x:f32 = @%q mov %y
  @!%q st.global %p, 0, %h
  st.local 3, %d
  %d.r1:f64 = ld.local 3
  %z:f32 = shfl.sync.bfly.b32 %x, 16, 31, -1
  cbr %q, tail, entry2
.block entry2
  br tail
.block tail
.phase store
  st.global %p, 4, %z
  exit
"""


@pytest.mark.parametrize("text", [DESIGN_EXAMPLE, EVERY_FORM])
def test_golden_round_trip(text):
    program = parse(text)
    assert print_program(program) == text
    assert parse(print_program(program)) == program


def test_widths_and_values():
    program = parse(EVERY_FORM)
    widths = {n: v.width for n, v in program.values.items()}
    assert widths == {"p": 2, "x": 1, "y": 1, "h": 1, "d": 2, "q": 0, "d.r1": 2, "z": 1}
    assert successors(program) == [[2, 1], [2], []]


@given(program_texts())
def test_random_programs_round_trip(text):
    program = parse(text)
    canonical = print_program(program)
    assert parse(canonical) == program
    assert print_program(parse(canonical)) == canonical
    if ".phase" not in text:  # the generator writes canonical text except for its phase lines
        assert canonical == text


def test_comments_and_blank_lines_are_ignored():
    commented = "// a comment\n\n" + DESIGN_EXAMPLE.replace("  exit\n", "\n  // done\n  exit\n")
    assert parse(commented) == parse(DESIGN_EXAMPLE)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "k.txt: empty program, expected '.kernel NAME'"),
        (".kernel k\n", "k.txt: program 'k' has no '.block'"),
        (".kernel k\n  exit\n", "k.txt line 2: instruction before the first '.block'"),
        (".kernel k\n.block b\n  %x:f33 = mov 1\n", "k.txt line 3: unknown type 'f33' of %x"),
        (".kernel k\n.block b\n  %x:f32 = mov 1\n  %x:i32 = mov 2\n", "k.txt line 4: %x is defined as i32 here but as f32 on line 3"),
        (".kernel k\n.block b\n  %x:f32 = add %y, 1\n", "k.txt line 3: %y is used but never defined"),
        (".kernel k\n.block b\n  br nowhere\n", "k.txt line 3: branch to unknown block 'nowhere'"),
        (".kernel k\n.block b\n  exit\n  exit\n", "k.txt line 4: instruction after the terminator 'exit' of block 'b'"),
        (".kernel k\n.block b\n.block b\n", "k.txt line 3: block 'b' is defined twice"),
        (".kernel k\n.block b\n  %x:f32 = mov 1\n  cbr %x, b, b\n", "k.txt line 4: %x is f32, a predicate (pred) is needed here"),
        (".kernel k\n.block b\n  cbr 1, b, b\n", "k.txt line 3: expected 'cbr %p, L1, L2': operand 1 of cbr must be a value, got '1'"),
        (".kernel k\n.block b\n  x = mov 1\n", "k.txt line 3: expected a definition '%name:type', got 'x'"),
        (".kernel k\n.block b\n  %x:f32 = @%p\n", "k.txt line 3: expected an opcode after the guard"),
        (".kernel k\n.block b\n  %x:f32, %x:f32 = ld.global.v2 0\n", "k.txt line 3: a value is defined twice in one instruction"),
        (".kernel k\n.kernel j\n", "k.txt line 2: a second '.kernel' line"),
        (".kernel k\n.loop b\n", "k.txt line 2: expected '.kernel NAME', '.block NAME' or '.phase NAME'"),
        (".kernel k\n.phase x\n", "k.txt line 2: '.phase' before the first '.block'"),
    ],
)
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(ParseError) as err:
        parse(text, "k.txt")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_program_is_immutable():
    program = parse(DESIGN_EXAMPLE)
    with pytest.raises(AttributeError):
        program.name = "other"
    assert isinstance(program, Program)
    assert program.block_of(5) == 0 and program.block_starts == (0,)


def test_phases_label_instructions_until_changed_and_reset_per_block():
    program = parse(EVERY_FORM)
    phases = [ins.phase for ins in program.instructions]
    assert phases[:6] == [None, "load", "load", "load", None, None]
    assert phases[-2:] == ["store", "store"]
    assert program.blocks[1].instructions[0].phase is None


# -- the rules of engine.ir.rules: what no kernel can hold is refused while parsing -------------------------------

@pytest.mark.parametrize("name", sorted(REFUSED_LINES))
def test_what_no_kernel_can_hold_is_refused_while_parsing_naming_the_line(name):
    line, reason = REFUSED_LINES[name]
    with pytest.raises(ParseError) as err:
        parse(RULES_BASE.format(line=f"  {line}"), "k.txt")
    assert str(err.value).startswith("k.txt line 9: ") and reason in str(err.value), str(err.value)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


@pytest.mark.parametrize("line", ACCEPTED_LINES)
def test_every_immediate_form_a_kernel_can_hold_parses_and_prints_back(line):
    text = RULES_BASE.format(line=f"  {line}")
    assert print_program(parse(text)) == text


def test_a_comparison_reads_its_immediate_as_its_first_operand_defined_later_in_the_text():
    text = (".kernel k\n.block entry\n  %pa:u64 = param A\n  br b\n.block a\n  %c:pred = setp.lt %x, {}\n  exit\n"
            ".block b\n  %x:{} = ld.global %pa, 0\n  br a\n")
    assert parse(text.format("0.5", "f32")).blocks[1].instructions[0].operands[1].text == "0.5"
    with pytest.raises(ParseError, match=r"^k.txt line 6: operand 2 of setp.lt: '0.5' is not an integer"):
        parse(text.format("0.5", "i32"), "k.txt")
