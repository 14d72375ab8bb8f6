"""What an instruction may hold beyond the IR's grammar: immediates, symbols and the shapes of known opcodes.

One place for the rules that decide whether a program can be allocated,
checked and written as a kernel module (kernels/codegen.py): the parser
(:func:`engine.ir.parser.parse`) applies them to every instruction, and every
program and plan a user hands to RegTune (a program file, a plan file, a
session, the window's files) is parsed, so ``allocate``, ``check`` and
``build`` accept the same programs.

- An immediate is an integer, a decimal float or a name. Integers:
  decimal (no leading zero), ``0x``, ``0o`` or ``0b``, an optional sign, in
  -2**63..2**64-1 (PTX's widest). Floats: digits with a point or an
  exponent, ``inf`` or ``nan``, an optional sign. A name: an IR name.
- Where a known opcode reads an immediate as a number, the type it
  computes in says which: f32, f64 and f16x2 take a decimal integer or a
  float; i32 and pred an integer in -2**31..2**32-1; u64 (a byte address
  into an f32 array) an integer multiple of 4. A byte offset and a byte
  scale (``ld.global``, ``st.global``, ``mul.wide.s32``) are multiples of 4,
  a spill slot a decimal integer in 0..MAX_SPILL_SLOT.
- A parameter's symbol is a Python identifier that is no keyword, dunder,
  builtin or name of :data:`KERNEL_NAMES` (it is the kernel argument's name).
- Each known opcode has one shape (:data:`SHAPES`): its operands, each a
  value, an immediate of some kind or either, how many results and, where
  the kernel's lowering makes one (setp, mul.wide.s32, the f16 conversions,
  special registers), their type. An
  opcode RegTune does not know keeps the grammar alone: it is an opaque
  operation of its operands (DESIGN.md), which no kernel lowers.

Invariant: every message is one line naming the opcode, the operand and
what is wrong (the caller adds the file and line); the checks are pure
functions of the text, cached by it.

Examples
--------
>>> immediate_error("1\\\\", None), immediate_error("0x10", "f32"), immediate_error("1.5", "f32")
("'1\\\\\\\\' is not an immediate (an integer, a float or a name)", "'0x10' is not a number (a decimal integer or float)", None)
>>> SHAPES["st.global"].form
'st.global %ADDRESS, OFFSET, VALUE'
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
from dataclasses import dataclass

from engine.base.fields import excerpt
from engine.base.limits import MAX_IMMEDIATE, MAX_NAME, MAX_SPILL_SLOT

#: value, block and kernel names: ASCII, at most MAX_NAME characters
NAME = rf"[A-Za-z_][A-Za-z0-9_.]{{0,{MAX_NAME - 1}}}"
_INTEGER = r"[+-]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0|[1-9][0-9]*)"
_DECIMAL = r"[+-]?(?:0|[1-9][0-9]*)"
_FLOAT = r"[+-]?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|inf|nan)"
_INTEGER_RE = re.compile(rf"{_INTEGER}\Z")
_NUMBER_RE = re.compile(rf"(?:{_DECIMAL}|{_FLOAT})\Z")
_NAME_RE = re.compile(rf"{NAME}\Z")
#: an immediate, symbol or label as the grammar takes it (its length is MAX_IMMEDIATE at most)
IMMEDIATE_RE = re.compile(rf"(?:{_INTEGER}|{_FLOAT}|{NAME})\Z")
_SLOT_RE = re.compile(r"(?:0|[1-9][0-9]*)\Z")

#: the range of any integer immediate, and of one read as i32 or pred
INT64 = (-(1 << 63), (1 << 64) - 1)
INT32 = (-(1 << 31), (1 << 32) - 1)

#: names a generated kernel module binds or its kernel body reads besides the builtins: a parameter (a
#: kernel argument) may take none of them (kernels/codegen.py renames values that would, but an argument
#: keeps its name)
KERNEL_NAMES = frozenset({
    "cuda", "math", "np", "float16", "float32", "float64", "int32", "int64", "uint64", "boolean",
    "carry_f32", "carry_i32", "carry_u64", "carry_f64",
    "shfl_bfly", "spill_f32", "spill_i32", "spill_u64", "spill_f64", "spill_f16", "spill_zero",
    "pack_f16x2", "unpack_f16x2_lo", "unpack_f16x2_hi", "config", "sys", "order_loads", "load_volatile"})
_PY_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{MAX_NAME - 1}}}\Z")
#: the types a kernel argument can have (f16x2 is a pair, which numba cannot take as an argument)
PARAM_TYPES = ("f32", "f64", "i32", "pred", "u64")
#: the comparisons ``setp.<cmp>`` knows
COMPARISONS = ("eq", "ge", "gt", "le", "lt", "ne")
#: the special registers a kernel reads (``%x:i32 = sreg.tid.x``)
SPECIAL_REGISTERS = ("sreg.ctaid.x", "sreg.ctaid.y", "sreg.ctaid.z", "sreg.nctaid.x", "sreg.ntid.x",
                     "sreg.tid.x", "sreg.tid.y", "sreg.tid.z")


def usable_symbol(text: str) -> bool:
    """Whether ``text`` can name a kernel parameter: a Python identifier (ASCII) that no keyword, dunder,
    builtin or :data:`KERNEL_NAMES` name takes.

    Examples
    --------
    >>> usable_symbol("alpha"), usable_symbol("cuda"), usable_symbol("__debug__"), usable_symbol("A.x")
    (True, False, False, False)
    """
    return (bool(_PY_NAME.match(text)) and not keyword.iskeyword(text) and not keyword.issoftkeyword(text)
            and text not in KERNEL_NAMES and not hasattr(builtins, text)
            and not (text.startswith("__") and text.endswith("__")))


def immediate_error(text: str, kind: str | None) -> str | None:
    """What is wrong with ``text`` as an immediate read as ``kind``, or None.

    ``kind`` is an IR type (the number it is read as), ``"offset"`` (a byte
    offset or scale: an integer multiple of 4), ``"integer"``, ``"slot"``,
    ``"symbol"`` (a parameter), ``"label"`` or None (any immediate).
    """
    if len(text) > MAX_IMMEDIATE:
        return f"immediate {excerpt(text)} is longer than {MAX_IMMEDIATE} characters"
    return _immediate_error(text, kind)


@functools.lru_cache(maxsize=1 << 14)
def _immediate_error(text: str, kind: str | None) -> str | None:
    if not IMMEDIATE_RE.match(text):
        return f"{excerpt(text)} is not an immediate (an integer, a float or a name)"
    check = _KINDS.get(kind)
    return check(text) if check else _range(text, INT64)


def _range(text: str, bounds: tuple[int, int]) -> str | None:
    if not _INTEGER_RE.match(text):
        return None
    if not bounds[0] <= int(text, 0) <= bounds[1]:
        return f"integer {excerpt(text)} is outside {_bounds(bounds)}"
    return None


def _bounds(bounds: tuple[int, int]) -> str:
    return "-2**63..2**64-1 (64 bits)" if bounds == INT64 else "-2**31..2**32-1 (32 bits)"


def _integer(text: str, bounds: tuple[int, int] = INT64) -> str | None:
    if not _INTEGER_RE.match(text):
        return f"{excerpt(text)} is not an integer (decimal, 0x, 0o or 0b)"
    return _range(text, bounds)


def _offset(text: str) -> str | None:
    error = _integer(text)
    if error is None and int(text, 0) % 4:
        return f"byte offset {text} is not a multiple of 4 (f32 elements)"
    return error


def _float(text: str) -> str | None:
    if not _NUMBER_RE.match(text):
        return f"{excerpt(text)} is not a number (a decimal integer or float)"
    return _range(text, INT64)


def _slot(text: str) -> str | None:
    if not _SLOT_RE.match(text) or int(text) > MAX_SPILL_SLOT:
        return f"spill slot {excerpt(text)} is not an integer in 0..{MAX_SPILL_SLOT}"
    return None


def _symbol(text: str) -> str | None:
    if usable_symbol(text):
        return None
    return (f"parameter name {excerpt(text)} is not usable in a kernel (ASCII letters, digits and _, not a "
            "keyword, builtin or a name of the kernel module)")


def _label(text: str) -> str | None:
    return None if _NAME_RE.match(text) else f"{excerpt(text)} is not a block label"


_KINDS = {"f32": _float, "f64": _float, "f16x2": _float, "i32": lambda t: _integer(t, INT32),
          "pred": lambda t: _integer(t, INT32), "u64": _offset, "offset": _offset, "integer": _integer,
          "slot": _slot, "symbol": _symbol, "label": _label}


@dataclass(frozen=True)
class Shape:
    """The operands and results of one known opcode.

    Attributes
    ----------
    form : how it is written, for messages (``st.global %ADDRESS, OFFSET, VALUE``)
    operands : one letter per operand: ``%`` a value, ``x`` a value or a number read as the instruction's
        type (the first operand's type for ``setp``), ``f`` a value or a number read as f32, ``o`` a byte
        offset, ``i`` an integer that is also read as the instruction's type, ``#`` a spill slot, ``s`` a
        parameter symbol, ``L`` a block label
    defs : how many results
    result : the type the result must have (None: any), where the kernel's lowering makes one
    guard : whether a guard may predicate it
    """

    form: str
    operands: str
    defs: int
    result: str | None = None
    guard: bool = True

    @property
    def opcode(self) -> str:
        return self.form.split()[0]


def _shapes(*forms: tuple) -> dict:
    return {form[0].split()[0]: Shape(*form) for form in forms}


#: the shape of each known opcode (``setp.<cmp>`` and ``sreg.*``: :func:`shape_of`)
SHAPES = _shapes(
    ("mov A", "x", 1), ("cvt A", "x", 1), ("exp A", "x", 1), ("rcp A", "x", 1),
    ("add A, B", "xx", 1), ("sub A, B", "xx", 1), ("mul A, B", "xx", 1), ("max A, B", "xx", 1),
    ("min A, B", "xx", 1), ("div.u32 A, B", "xx", 1), ("rem.u32 A, B", "xx", 1), ("fma A, B, C", "xxx", 1),
    ("mul.wide.s32 A, SCALE", "xo", 1, "u64"), ("shfl.sync.bfly A, LANE_MASK", "xi", 1),
    ("cvt.rn.f16x2.f32 A, B", "xx", 1, "f16x2"), ("cvt.f32.f16.lo %PAIR", "%", 1, "f32"),
    ("cvt.f32.f16.hi %PAIR", "%", 1, "f32"),
    ("ld.global %ADDRESS, OFFSET", "%o", 1), ("st.global %ADDRESS, OFFSET, VALUE", "%of", 0),
    ("ld.local SLOT", "#", 1), ("st.local SLOT, %VALUE", "#%", 0),
    ("br LABEL", "L", 0), ("cbr %p, L1, L2", "%LL", 0), ("exit", "", 0))
SHAPES["param"] = Shape("param NAME", "s", 1, guard=False)
_SETP = {f"setp.{c}": Shape(f"setp.{c} A, B", "xx", 1, "pred") for c in COMPARISONS}
_SREG = {s: Shape(s, "", 1, "i32") for s in SPECIAL_REGISTERS}


@functools.lru_cache(maxsize=1 << 12)
def shape_of(opcode: str) -> Shape | None:
    """The shape of a known opcode, None for an opaque one (``setp.lt.s32`` is ``setp.lt``'s).

    Examples
    --------
    >>> shape_of("setp.lt.s32").form, shape_of("tex.opaque")
    ('setp.lt A, B', None)
    """
    shape = SHAPES.get(opcode) or _SREG.get(opcode)
    if shape is None and opcode.startswith("setp."):
        shape = _SETP.get(".".join(opcode.split(".")[:2]))
    return shape


#: the kind each operand letter reads its immediate as (``x``: the instruction's type)
LETTER_KINDS = {"o": "offset", "i": "integer", "#": "slot", "s": "symbol", "L": "label", "f": "f32"}
