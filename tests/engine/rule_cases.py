"""Instructions for the parser's rules (engine/ir/rules.py): lines it refuses with their reason, lines it takes.

Shared by tests/engine/test_ir.py (parse), tests/kernels/test_codegen.py (a kernel module is written from
every line taken, and NVVM compiles it) and tests/gui/cli/hostile_cases.py (every command refuses the issue's
cases in the same words). Each line is tried in :data:`RULES_BASE`, where it is line 9.
"""

from __future__ import annotations

#: a program every line below is tried in, before its exit (one line a case: the case is line 9)
RULES_BASE = """.kernel k
.block entry
  %pa:u64 = param A
  %f:f32 = ld.global %pa, 0
  %i:i32 = mov 3
  %h:f16x2 = cvt.rn.f16x2.f32 %f, %f
  %q:pred = setp.lt %i, 4
  st.global %pa, 4, %f
{line}
  exit
"""

#: name -> (a line the parser refuses, the reason its message gives after the file and line)
REFUSED_LINES = {
    # the issue's cases: allocate wrote plans check refused, check took what build could not compile
    "ld.local -1": ("%r:f32 = ld.local -1", "operand 1 of ld.local: spill slot '-1' is not an integer in 0..131071"),
    "st.local 131072": ("st.local 131072, %f", "operand 1 of st.local: spill slot '131072' is not an integer in 0..131071"),
    "st.global with two operands": ("st.global %pa, %f", "expected 'st.global %ADDRESS, OFFSET, VALUE' (st.global takes 3 operands, got 2)"),
    "a 64-digit integer": ("%j:i32 = mov " + "12345678" * 8, "integer '1234567812345678123456781234567812345678'... is outside -2**63..2**64-1"),
    "three quotes": ("%j:i32 = mov '''", "\"'''\" is not an immediate (an integer, a float or a name)"),
    "a backslash": ("%j:i32 = mov 1\\", "'1\\\\' is not an immediate (an integer, a float or a name)"),
    # immediates read as the instruction's type, as codegen reads them
    "2**64 anywhere": ("%j:f32 = tex.opaque %f, 18446744073709551616", "integer '18446744073709551616' is outside -2**63..2**64-1"),
    "a float as i32": ("%j:i32 = add %i, 1.5", "operand 2 of add: '1.5' is not an integer (decimal, 0x, 0o or 0b)"),
    "2**32 as i32": ("%j:i32 = mov 4294967296", "operand 1 of mov: integer '4294967296' is outside -2**31..2**32-1"),
    "hex as f32": ("%g:f32 = mul %f, 0x10", "operand 2 of mul: '0x10' is not a number (a decimal integer or float)"),
    "a name as f32": ("%g:f32 = mul %f, alpha", "operand 2 of mul: 'alpha' is not a number (a decimal integer or float)"),
    "a leading zero": ("%j:i32 = mov 010", "'010' is not an immediate (an integer, a float or a name)"),
    "an underscore in a number": ("%j:i32 = mov 1_000", "'1_000' is not an immediate"),
    "u64 not a multiple of 4": ("%pb:u64 = add %pa, 6", "operand 2 of add: byte offset 6 is not a multiple of 4"),
    "a load offset not a multiple of 4": ("%g:f32 = ld.global %pa, 2", "operand 2 of ld.global: byte offset 2 is not a multiple of 4"),
    "a computed load offset": ("%g:f32 = ld.global %pa, %i", "operand 2 of ld.global must be an immediate, got %i"),
    "a load from an immediate": ("%g:f32 = ld.global 0, 0", "operand 1 of ld.global must be a value, got '0'"),
    "setp on i32 with a float": ("%c:pred = setp.lt %i, 0.5", "operand 2 of setp.lt: '0.5' is not an integer"),
    "setp on u64 with an odd offset": ("%c:pred = setp.lt %pa, 6", "operand 2 of setp.lt: byte offset 6 is not a multiple of 4"),
    "setp with an unknown comparison": ("%c:pred = setp.foo %i, 1", "unknown comparison 'setp.foo' (known: setp.eq, setp.ge"),
    "a scale that is a value": ("%o:u64 = mul.wide.s32 %i, %i", "operand 2 of mul.wide.s32 must be an immediate, got %i"),
    "a hex lane mask read as f32": ("%g:f32 = shfl.sync.bfly %f, 0x10", "operand 2 of shfl.sync.bfly: '0x10' is not a number"),
    "a lane mask not a multiple of 4 read as u64": ("%w:u64 = shfl.sync.bfly %pa, 6", "byte offset 6 is not a multiple of 4"),
    # results: where the kernel's lowering makes one type
    "setp defining i32": ("%c:i32 = setp.lt %i, 1", "setp.lt defines a value of type pred, got %c:i32"),
    "mul.wide.s32 defining i32": ("%o:i32 = mul.wide.s32 %i, 4", "mul.wide.s32 defines a value of type u64, got %o:i32"),
    "a pair made as f32": ("%g:f32 = cvt.rn.f16x2.f32 %f, %f", "cvt.rn.f16x2.f32 defines a value of type f16x2"),
    "a half read as f64": ("%d:f64 = cvt.f32.f16.lo %h", "cvt.f32.f16.lo defines a value of type f32, got %d:f64"),
    "a special register as f32": ("%t:f32 = sreg.tid.x", "sreg.tid.x defines a value of type i32, got %t:f32"),
    "a lane mask that is a value": ("%g:f32 = shfl.sync.bfly %f, %i", "operand 2 of shfl.sync.bfly must be an immediate, got %i"),
    "a slot with a leading zero": ("st.local 07, %f", "'07' is not an immediate"),
    "a slot in hex": ("st.local 0x10, %f", "operand 1 of st.local: spill slot '0x10' is not an integer in 0..131071"),
    "a computed slot": ("st.local %pa, %f", "operand 1 of st.local must be an immediate, got %pa"),
    "an immediate stored to a slot": ("st.local 0, 5", "operand 2 of st.local must be a value, got '5'"),
    "local memory at an address": ("st.local.b32 %pa, 0, %f", "'st.local.b32': local memory holds spill slots only"),
    # shapes: one count of operands and results per known opcode
    "mov of two": ("%g:f32 = mov %f, %f", "expected '%X:T = mov A' (mov takes 1 operand, got 2)"),
    "fma of two": ("%g:f32 = fma %f, %f", "expected '%X:T = fma A, B, C' (fma takes 3 operands, got 2)"),
    "add of three": ("%g:f32 = add %f, %f, %f", "expected '%X:T = add A, B' (add takes 2 operands, got 3)"),
    "setp of three": ("%c:pred = setp.lt %i, %i, %i", "expected '%X:T = setp.lt A, B' (setp.lt takes 2 operands, got 3)"),
    "exp of two": ("%g:f32 = exp %f, %f", "(exp takes 1 operand, got 2)"),
    "two results of add": ("%g:f32, %e:f32 = add %f, %f", "(add defines 1 value, got 2)"),
    "a special register with an operand": ("%t:i32 = sreg.tid.x 1", "(sreg.tid.x takes 0 operands, got 1)"),
    "a pair from a value": ("%g:f32 = cvt.f32.f16.lo 1", "operand 1 of cvt.f32.f16.lo must be a value, got '1'"),
    "a load without a result": ("ld.global %pa, 0", "(ld.global defines 1 value, got 0)"),
    # parameters: kernel argument names, declared once, of a type a kernel takes
    "a parameter named cuda": ("%c:u64 = param cuda", "operand 1 of param: parameter name 'cuda' is not usable in a kernel"),
    "a parameter named len": ("%c:i32 = param len", "parameter name 'len' is not usable in a kernel"),
    "a parameter named __debug__": ("%c:i32 = param __debug__", "parameter name '__debug__' is not usable"),
    "a parameter with a dot": ("%c:i32 = param n.x", "parameter name 'n.x' is not usable"),
    "a parameter read at another type": ("%c:i32 = param A", "parameter A is read as i32 here but as u64 on line 3"),
    "a guarded parameter": ("%c:i32 = @%q param n", "param cannot be guarded (a parameter is always read)"),
    "an f16x2 parameter": ("%c:f16x2 = param n", "parameter %c has type f16x2, which a kernel cannot take"),
    "a label that is a number": ("br 1", "operand 1 of br: '1' is not a block label"),
}


#: lines the parser takes, each a form of immediate or operand a kernel can hold (opaque opcodes last)
ACCEPTED_LINES = [
    "%g:f32 = mov -inf", "%g:f32 = mov nan", "%g:f32 = mul %f, 1e-3", "%g:f32 = mul %f, .5", "%g:f32 = add %f, -7",
    "%g:f64 = mov 2.5E+300", "%h:f16x2 = cvt.rn.f16x2.f32 0.5, %f", "%j:i32 = mov 0x7fffffff", "%j:i32 = mov -2147483648",
    "%j:i32 = mov 4294967295", "%j:i32 = add %i, 0b101", "%j:i32 = mul %i, 0o17", "%j:i32 = fma %i, 128, %i",
    "%pb:u64 = add %pa, -8", "%pb:u64 = add %pa, 18446744073709551612", "%g:f32 = ld.global %pa, -4",
    "%c:pred = setp.lt %f, 0.5", "%c:pred = setp.ge.s32 %i, 16", "%c:pred = setp.lt %pa, 8", "%c:pred = setp.eq 1, 2",
    "%o:u64 = mul.wide.s32 %i, 4", "%g:f32 = shfl.sync.bfly %f, 16",
    "%j:i32 = shfl.sync.bfly %i, 0x1f", "st.local 131071, %f", "%r:f32 = ld.local 0",
    "@!%q st.global %pa, 8, 1.5", "%g:f32 = cvt.f32.f16.hi %h", "%t:i32 = sreg.ctaid.z", "%n:i32 = param n",
    # opaque opcodes keep the grammar alone (DESIGN.md): any count, any immediate that is a number or a name
    "%g:f32 = tex.2d %pa, 1.5, 0x10, linear", "%w:f32, %z:f32 = ld.global.v2 %pa, %i, 8", "st.shared %pa, %i, %f, %f",
    "%m:i32 = max.s32 %i, %i, %i", "%j:i32 = sreg.laneid", "%u:i32 = add.s32 %i, %i, %i",
]

#: the cases of issue 19 (allocate wrote plans that check refused; check took what build could not compile)
ISSUE_CASES = ("ld.local -1", "st.local 131072", "st.global with two operands", "a 64-digit integer",
               "three quotes", "a backslash")
