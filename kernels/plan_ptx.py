"""PTX straight from a plan: one PTX instruction (or a fixed short sequence) per IR instruction, in the plan's order.

The plan PTX is the second realisation of a plan (DESIGN.md, "Kernels"):
where the Numba kernel goes through numba-cuda's lowering and NVVM, which
may move loads and fold addresses, this PTX is the plan as written, and it
costs one ptxas run. What it holds:

- a virtual register per IR value (``%v_NAME``, dots as ``$``), declared
  with its type (:data:`REGISTER_TYPES`); a value defined several times (a
  loop-carried accumulator) keeps its one register; ptxas allocates again;
- each instruction as :data:`PTX_TABLE` says, its guard as ``@%p`` /
  ``@!%p``; a ``cbr`` is ``@%p bra L1`` then ``bra L2``, ``exit`` is ``ret``;
- the plan's spill code as local-memory traffic: ``st.local SLOT, %v`` and
  ``ld.local SLOT`` address SLOT's place in one local array that holds the
  slots the plan names and nothing else (:class:`SpillFrame`: 4 bytes a
  slot times the width of its value, 64-bit slots 8-aligned), so ptxas's
  stack frame is the plan's spill bytes (rounded to 8). kernels/codegen.py
  gives each type its own array as long as the highest slot; the same
  per-type arrays here gave GEMM 7x10x7's linear-scan plan at budget 64
  (one pointer and 29 floats spilled) a 360-byte frame for its 124 bytes.
  By default the accesses are ``st.volatile.local`` /
  ``ld.volatile.local`` (:data:`SPILL_ACCESS`, PTX ISA 9.1), which ptxas
  keeps; ptxas promotes plain ``.local`` accesses at constant addresses back
  to registers (TOOLCHAIN-NOTES.md, "PTX written straight from a plan"),
  measured here (ptxas 13.5) where the frame holds one type only: a frame
  that mixes 32- and 64-bit slots (a plan spilling a pointer) it keeps even
  when plain, so "plain" keeps or drops a plan's spills by its types;
- the Numba kernel's entry name and signature (:func:`kernels.codegen.entry_name`):
  parameters in the program's order, an array as numba passes it (seven
  ``.u64``: meminfo, parent, nitems, itemsize, data, shape, stride; the
  data pointer, fifth, is the one read), ``f32``/``f64`` scalars as
  ``.f32``/``.f64``, ``i32`` as ``.u32``, a ``pred`` as ``.u8``, and
  numba's trailing ``spill_zero`` ``.u32``, unread. The grid is the
  harness's, the guards are the program's own instructions: the same for
  both realisations.

Types come from the IR: f32 arithmetic is ``.rn.f32`` (no contraction by
ptxas), i32 ``.s32`` / ``.lo.s32`` (``div.u32`` and ``rem.u32`` unsigned),
u64 ``.s64`` / ``.u64``, a comparison takes its first operand's type. An f32
result of an i32 or f64 operand (``%t:f32 = add %i, %acc``) is computed in
f64 and rounded to f32, as numba computes the Numba kernel's
``float32(i + acc)``. ``exp`` is NVVM's own sequence for ``expf`` (libdevice,
``ex2.approx.ftz`` with range reduction, as in the Numba kernel's PTX).
An opcode kernels/codegen.py does not lower (an opaque one, plain ``cvt``)
or a type it has no meaning for is refused with :class:`PlanPtxError`
naming the instruction.

No ``.loc`` lines: every line an IR instruction wrote ends in ``// ir N``
(N its linear index), and :attr:`PlanPtx.line_ir` maps each line of the
text to that index.

Invariant: :func:`plan_ptx` is a pure function of the plan, the arch and
the spill access; the IR indices of the emitted lines, read in order with
repeats merged, are 0, 1, ..., n-1: every IR instruction writes at least
one line, all of its lines together and in the plan's order.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.plan import Plan
>>> p = parse(".kernel k\\n.block entry\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
...           "  %y:f32 = mul %x, %x\\n  st.global %pa, 4, %y\\n  exit\\n")
>>> ptx = plan_ptx(Plan(p, {"pa": [0, 1], "x": [2], "y": [2]}, {}, 255, "hand"), "sm_80")
>>> [line.split("\\t") for line in ptx.text.splitlines() if line.endswith("// ir 2")]
[['', 'mul.rn.f32 %v_y, %v_x, %v_x;', '// ir 2']]
>>> ptx.entry, ptx.line_ir[ptx.text.splitlines().index("\\tret;\\t// ir 4")]
('regtune_k_hand', 4)
"""

from __future__ import annotations

import json
import math
import os
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace

from engine.base.fields import excerpt
from engine.base.limits import MAX_SPILL_SLOT
from engine.ir.core import Imm, Instruction, Program, Use, is_name
from engine.ir.rules import COMPARISONS, SPECIAL_REGISTERS, shape_of
from engine.ir.spill import spill_slot
from engine.model.arch import DEFAULT_BUILD_ARCHS, load_arch
from engine.plan import Plan, registers_used
from kernels.build import CAP_LABELS, CAPS, StageCache, cap_registers
from kernels.codegen import KernelError, entry_name
from kernels.measurement import PlanPtxFigures, SassFigures
from kernels.report import ptxas_figures, threads_per_block
from kernels.sass import parse_sass
from kernels.toolchain import CompileReport, nvdisasm, ptxas, ptxas_flags, tool_version

#: how spill code reaches local memory: "volatile" (``ld/st.volatile.local``, kept by ptxas) or "plain"
SPILL_ACCESS = ("volatile", "plain")
#: the PTX ISA version the text declares (9.1: the first that has ``ld/st.volatile.local``)
PTX_VERSION = "9.1"
#: the PTX register type of each IR type
REGISTER_TYPES = {"f32": "f32", "i32": "s32", "u64": "u64", "f64": "f64", "f16x2": "b32", "pred": "pred"}
#: the type a load or store of a value of each IR type moves (a predicate is not moved: selp / setp around it)
MEMORY_TYPES = {"f32": "f32", "i32": "s32", "u64": "u64", "f64": "f64", "f16x2": "b32"}
#: the kernel parameter of each IR parameter type, as numba passes it (an array: seven .u64, the data fifth)
PARAM_TYPES = {"f32": ("f32",), "f64": ("f64",), "i32": ("u32",), "pred": ("u8",), "u64": ("u64",) * 7}
#: which of an array's seven parameters is its data pointer
ARRAY_DATA = 4
#: the local array that holds the plan's spill slots
SPILL_FRAME = "regtune_spill"
END_LABEL = "$L_end"
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


class PlanPtxError(KernelError):
    """A plan whose program cannot be written as PTX (names the instruction and why)."""


@dataclass(frozen=True)
class PtxOp:
    """What one IR (opcode, type) becomes in PTX.

    Attributes
    ----------
    instruction : the PTX instruction (the main one of a fixed sequence)
    meaning : what it computes, in words (operands a, b, c; results modulo the register width)
    compute : for integer instructions, the function of the operands' bit patterns (unsigned 32- or 64-bit
        integers) that PTX defines for it, written from the PTX ISA; None for the others
    """

    instruction: str
    meaning: str
    compute: Callable | None = None


def _s32(x: int) -> int:
    """A 32-bit pattern as a signed integer."""
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def _int_ops(t: str, mask: int, signed) -> dict:
    """add/sub/mul/fma/max/min of one integer type (``t`` its PTX suffix, ``signed`` how max/min read bits)."""
    low = "lo." + t
    return {"add": PtxOp(f"add.{t}", "a + b", lambda a, b: (a + b) & mask),
            "sub": PtxOp(f"sub.{t}", "a - b", lambda a, b: (a - b) & mask),
            "mul": PtxOp(f"mul.{low}", "low bits of a * b", lambda a, b: (a * b) & mask),
            "fma": PtxOp(f"mad.{low}", "low bits of a * b + c", lambda a, b, c: (a * b + c) & mask),
            "max": PtxOp(f"max.{t}", "the larger of a and b", lambda a, b: max(a, b, key=signed)),
            "min": PtxOp(f"min.{t}", "the smaller of a and b", lambda a, b: min(a, b, key=signed))}


def _float_ops(t: str) -> dict:
    return {"add": PtxOp(f"add.rn.{t}", "a + b, rounded to nearest"),
            "sub": PtxOp(f"sub.rn.{t}", "a - b, rounded to nearest"),
            "mul": PtxOp(f"mul.rn.{t}", "a * b, rounded to nearest"),
            "fma": PtxOp(f"fma.rn.{t}", "a * b + c, rounded once"),
            "max": PtxOp(f"max.{t}", "the larger of a and b"), "min": PtxOp(f"min.{t}", "the smaller of a and b")}


def _compare(cmp: str, read) -> Callable:
    test = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}[cmp]
    return lambda a, b: int(test(read(a), read(b)))


def _table() -> dict:
    table = {}
    for type_, ops in (("i32", _int_ops("s32", M32, _s32)), ("u64", _int_ops("u64", M64, int)),
                       ("f32", _float_ops("f32")), ("f64", _float_ops("f64"))):
        table.update({(op, type_): entry for op, entry in ops.items()})
    table[("add", "u64")] = PtxOp("add.s64", "a + b", lambda a, b: (a + b) & M64)
    table[("sub", "u64")] = PtxOp("sub.s64", "a - b", lambda a, b: (a - b) & M64)
    for type_, reg in REGISTER_TYPES.items():
        table[("mov", type_)] = PtxOp(f"mov.{reg}", "a", (lambda a: a) if type_ in ("i32", "u64") else None)
    table[("div.u32", "i32")] = PtxOp("div.u32", "unsigned a / b, rounded down (b != 0)", lambda a, b: a // b)
    table[("rem.u32", "i32")] = PtxOp("rem.u32", "unsigned a mod b (b != 0)", lambda a, b: a % b)
    table[("mul.wide.s32", "u64")] = PtxOp("mul.wide.s32", "a * b, both sign-extended to 64 bits",
                                           lambda a, b: (_s32(a) * _s32(b)) & M64)
    for cmp in COMPARISONS:
        float_cmp = "neu" if cmp == "ne" else cmp      # Python's != is true for NaN: unordered
        table[(f"setp.{cmp}", "i32")] = PtxOp(f"setp.{cmp}.s32", f"signed a {cmp} b", _compare(cmp, _s32))
        table[(f"setp.{cmp}", "u64")] = PtxOp(f"setp.{cmp}.u64", f"unsigned a {cmp} b", _compare(cmp, int))
        for type_ in ("f32", "f64"):
            table[(f"setp.{cmp}", type_)] = PtxOp(f"setp.{float_cmp}.{type_}", f"a {cmp} b"
                                                  + (" or either is NaN" if cmp == "ne" else ""))
    table[("exp", "f32")] = PtxOp("ex2.approx.ftz.f32", "e**a: NVVM's expf sequence (libdevice), 12 instructions")
    table[("rcp", "f32")] = PtxOp("rcp.rn.f32", "1 / a, rounded to nearest")
    for type_ in ("f32", "i32", "f16x2"):
        table[("shfl.sync.bfly", type_)] = PtxOp("shfl.sync.bfly.b32", "a of lane (this lane xor b & 31)")
    for type_ in ("u64", "f64"):
        table[("shfl.sync.bfly", type_)] = PtxOp("shfl.sync.bfly.b32", "a of lane (this lane xor b & 31): two "
                                                                       "shuffles, one per 32-bit half")
    table[("cvt.rn.f16x2.f32", "f16x2")] = PtxOp("cvt.rn.f16x2.f32", "(f16(a), f16(b)), a in the low half")
    table[("cvt.f32.f16.lo", "f32")] = PtxOp("cvt.f32.f16", "the low half of a as f32")
    table[("cvt.f32.f16.hi", "f32")] = PtxOp("cvt.f32.f16", "the high half of a as f32")
    for sreg in SPECIAL_REGISTERS:
        table[(sreg, "i32")] = PtxOp("mov.u32", f"%{sreg.removeprefix('sreg.')}")
    for type_, mem in MEMORY_TYPES.items():
        table[("ld.global", type_)] = PtxOp(f"ld.global.{mem}", "the value at address a + b")
        table[("st.global", type_)] = PtxOp(f"st.global.{mem}", "store c at address a + b")
    table[("br", None)] = PtxOp("bra", "jump to a")
    table[("cbr", None)] = PtxOp("bra", "@a bra b, then bra c")
    table[("exit", None)] = PtxOp("ret", "end the thread")
    return table


#: (IR opcode, IR type) -> its PTX; the type is the result's (a comparison's: its first operand's; a store's:
#: its value's; none for branches). Parameters and spill code: :data:`PARAM_TYPES`, :data:`SPILL_ACCESS`.
PTX_TABLE = _table()
#: the IR opcodes :meth:`_Emitter.arithmetic` writes as one table instruction
_ARITHMETIC = frozenset({"mov", "add", "sub", "mul", "fma", "max", "min", "div.u32", "rem.u32", "mul.wide.s32", "rcp"})
#: the opcodes whose f32 result may come from i32 or f64 operands (computed in f64, as numba computes it)
_MIXED = frozenset({"mov", "add", "sub", "mul", "fma"})
#: NVVM's expf (libdevice) for an f32 ``x`` into ``d``, as it writes it into the Numba kernel's PTX
_EXPF = ("fma.rn.f32 %t0, {x}, 0f3BBB989D, 0f3F000000", "cvt.sat.f32.f32 %t1, %t0",
         "fma.rm.f32 %t2, %t1, 0f437C0000, 0f4B400001", "add.rn.f32 %t3, %t2, 0fCB40007F", "neg.f32 %t4, %t3",
         "fma.rn.f32 %t5, {x}, 0f3FB8AA3B, %t4", "fma.rn.f32 %t6, {x}, 0f32A57060, %t5", "mov.b32 %t9, %t2",
         "shl.b32 %t10, %t9, 23", "mov.b32 %t7, %t10", "ex2.approx.ftz.f32 %t8, %t6", "mul.rn.f32 {d}, %t8, %t7")
_EXPF_TEMPS = (("f32", 9), ("b32", 2))


def register(name: str) -> str:
    """The PTX register of IR value ``name`` (``acc_0_0.r1`` -> ``%v_acc_0_0$r1``; ``$`` is in no IR name).

    Examples
    --------
    >>> register("acc_0_0.r1")
    '%v_acc_0_0$r1'
    """
    return "%v_" + name.replace(".", "$")


def label(block: str) -> str:
    """The PTX label of IR block ``block``."""
    return "$B_" + block.replace(".", "$")


def _f32_bits(value: float) -> int:
    if math.isnan(value):
        return 0x7FC00000
    try:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:                     # beyond f32: numba's float32() gives infinity
        return 0xFF800000 if value < 0 else 0x7F800000


def _f64_bits(value: float) -> int:
    return 0x7FF8000000000000 if math.isnan(value) else struct.unpack("<Q", struct.pack("<d", value))[0]


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def literal(text: str, type_: str, where: str) -> str:
    """An immediate as a PTX literal of ``type_``: ``0fXXXXXXXX`` (f32), ``0d...`` (f64), signed decimal integers
    (i32 and u64 wrap to their width), 0 or 1 (pred); the only way an immediate's text reaches the PTX.

    Examples
    --------
    >>> literal("-inf", "f32", "x"), literal("0.125", "f32", "x"), literal("4294967295", "i32", "x")
    ('0fFF800000', '0f3E000000', '-1')
    """
    try:
        if type_ == "f32":
            return f"0f{_f32_bits(float(text)):08X}"
        if type_ == "f64":
            return f"0d{_f64_bits(float(text)):016X}"
        if type_ in ("i32", "u64"):
            return str(_signed(int(text, 0), 32 if type_ == "i32" else 64))
        if type_ == "pred":
            return "1" if int(text, 0) else "0"
    except (ValueError, OverflowError):
        raise PlanPtxError(f"{where}: immediate {excerpt(text)} is not a {type_} number") from None
    raise PlanPtxError(f"{where}: an immediate cannot be {type_} (write the value with cvt.rn.f16x2.f32)")


class _Lines:
    """The lines one IR instruction writes: scoped temporaries (``%tK``) and instructions, each under its guard."""

    def __init__(self, guard: str = ""):
        self.guard, self.temps, self.body = guard, [], []

    def temp(self, reg_type: str) -> str:
        name = f"%t{len(self.temps)}"
        self.temps.append((reg_type, name))
        return name

    def add(self, text: str) -> None:
        self.body.append(f"{self.guard}{text};")

    def lines(self) -> list[str]:
        if not self.temps:
            return self.body
        return ["{", *(f".reg .{t} {n};" for t, n in self.temps), *self.body, "}"]


@dataclass(frozen=True)
class SpillFrame:
    """Where each spill slot lives in the kernel's local memory: the slots in ascending order, each 4 bytes times
    the width of the widest value spill code moves through it, 64-bit ones 8-aligned; nothing between them.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.local 3, %x\\n  %p:u64 = mov 8\\n"
    ...           "  st.local 1, %p\\n  exit\\n")
    >>> SpillFrame.of(p)
    SpillFrame(offsets={1: 0, 3: 8}, size=12)
    """

    offsets: dict
    size: int

    @classmethod
    def of(cls, program: Program) -> SpillFrame:
        widths: dict[int, int] = {}
        for ins in program.instructions:
            slot = spill_slot(ins) if ins.opcode in ("ld.local", "st.local") else None
            if slot is not None:
                widths[slot] = max(widths.get(slot, 1), _spilled_width(ins, program))
        offsets, at = {}, 0
        for slot in sorted(widths):
            size = 4 * widths[slot]
            at = -(-at // size) * size
            offsets[slot], at = at, at + size
        return cls(offsets, at)


def _spilled_width(ins: Instruction, program: Program) -> int:
    """2 for spill code that moves a u64 or f64 value, else 1 (a predicate as a word)."""
    if ins.opcode == "ld.local":
        type_ = ins.defs[0].type if ins.defs else "f32"
    else:
        value = ins.operands[1] if len(ins.operands) > 1 else None
        type_ = program.values[value.name].type if isinstance(value, Use) and value.name in program.values else "f32"
    return 2 if type_ in ("u64", "f64") else 1


class _Emitter:
    """Writes a program's instructions in linear order: (line, IR index) pairs, the parameters, the spill arrays."""

    def __init__(self, program: Program, entry: str, spills: str):
        self.program, self.entry, self.spills = program, entry, spills
        self.types = {name: v.type for name, v in program.values.items()}
        self.body: list[tuple[str, int | None]] = []
        self.params: list[str] = []          # the .param declarations, in order
        self.symbols: list[str] = []         # the IR parameters, in order
        self.param_at: dict[str, tuple[int, str]] = {}  # each IR parameter -> (its first .param's number, its type)
        self.frame = SpillFrame.of(program)
        self.stores = self.loads = 0
        self.current: tuple[int, Instruction] | None = None

    @property
    def where(self) -> str:
        """The instruction being written, for a message (made only when one is)."""
        index, ins = self.current
        return f"instruction {index} ({excerpt(str(ins), 60)})"

    # -- the walk ---------------------------------------------------------------------------------------------
    def emit(self) -> None:
        phase = None
        for bi, block in enumerate(self.program.blocks):
            self.body.append((f"{label(block.name)}:", None))
            for ii, ins in enumerate(block.instructions):
                if ins.phase != phase and ins.phase and is_name(ins.phase):
                    self.body.append((f"\t// phase {ins.phase}", None))
                phase = ins.phase
                index = self.program.block_starts[bi] + ii
                self.current = (index, ins)
                lines = self.instruction(ins, bi)
                self.body.extend((f"\t{text}", index) for text in lines)

    def instruction(self, ins: Instruction, bi: int) -> list[str]:
        """The lines of one instruction (its shape checked first: a plan made in code skips the parser)."""
        shape = shape_of(ins.opcode)
        if shape is None:
            raise PlanPtxError(f"{self.where}: opcode {excerpt(ins.opcode)} is opaque (RegTune does not know what it "
                               "computes), so it has no PTX")
        if len(ins.operands) != len(shape.operands) or len(ins.defs) != shape.defs:
            raise PlanPtxError(f"{self.where}: expected '{shape.form}'")
        if ins.opcode in ("br", "cbr", "exit"):
            return self.branch(ins, bi)
        out = _Lines("" if ins.guard is None else f"@{'!' if ins.guard_negated else ''}{register(ins.guard)} ")
        self._dispatch(ins.opcode)(ins, out)
        return out.lines()

    def _dispatch(self, opcode: str) -> Callable:
        if opcode == "param":
            return self.param
        if opcode in SPECIAL_REGISTERS:
            return self.special
        if opcode.startswith("setp."):
            return self.compare
        if opcode in ("ld.global", "st.global"):
            return self.memory
        if opcode in ("ld.local", "st.local"):
            return self.spill
        return {"cvt.rn.f16x2.f32": self.pack, "cvt.f32.f16.lo": self.unpack, "cvt.f32.f16.hi": self.unpack,
                "shfl.sync.bfly": self.shuffle, "exp": self.exp}.get(opcode, self.arithmetic)

    # -- operands ---------------------------------------------------------------------------------------------
    def value(self, op, type_: str) -> str:
        """A use of ``type_`` (its register) or an immediate read as ``type_``."""
        if isinstance(op, Use):
            if self.types[op.name] != type_:
                raise PlanPtxError(f"{self.where}: %{op.name} is {self.types[op.name]} where the instruction reads "
                                   f"{type_}; PTX has no implicit conversion")
            return register(op.name)
        return literal(op.text, type_, self.where)

    def op(self, opcode: str, type_: str | None) -> PtxOp:
        entry = PTX_TABLE.get((opcode, type_))
        if entry is None:
            raise PlanPtxError(f"{self.where}: {opcode} has no PTX for {type_} (kernels/codegen.py lowers none)")
        return entry

    def integer(self, op) -> int:
        if not isinstance(op, Imm):
            raise PlanPtxError(f"{self.where}: expected an integer immediate, got %{op.name}")
        try:
            return int(op.text, 0)
        except ValueError:
            raise PlanPtxError(f"{self.where}: {excerpt(op.text)} is not an integer") from None

    # -- instructions -----------------------------------------------------------------------------------------
    def param(self, ins: Instruction, out: _Lines) -> None:
        """``ld.param`` of the kernel argument (an array's data pointer, made a global address)."""
        symbol, d = ins.operands[0].text, ins.defs[0]
        if d.type not in PARAM_TYPES:
            raise PlanPtxError(f"{self.where}: a kernel parameter cannot be {d.type}")
        if symbol in self.param_at:  # read again (a rematerialised value): the same .param, loaded again
            first, type_ = self.param_at[symbol]
            if type_ != d.type:
                raise PlanPtxError(f"{self.where}: parameter {excerpt(symbol)} is read as {d.type} here but as {type_} before")
        else:
            self.symbols.append(symbol)
            first = len(self.params)
            self.param_at[symbol] = (first, d.type)
            self.params += [f".param .{t} {self.entry}_param_{first + k}" for k, t in enumerate(PARAM_TYPES[d.type])]
        target = register(d.name)
        if d.type == "u64":
            out.add(f"ld.param.u64 {target}, [{self.entry}_param_{first + ARRAY_DATA}]")
            out.add(f"cvta.to.global.u64 {target}, {target}")
        elif d.type == "pred":
            byte = out.temp("u16")
            out.add(f"ld.param.u8 {byte}, [{self.entry}_param_{first}]")
            out.add(f"setp.ne.u16 {target}, {byte}, 0")
        else:
            out.add(f"ld.param.{PARAM_TYPES[d.type][0]} {target}, [{self.entry}_param_{first}]")

    def special(self, ins: Instruction, out: _Lines) -> None:
        entry = self.op(ins.opcode, ins.defs[0].type)
        out.add(f"{entry.instruction} {register(ins.defs[0].name)}, {entry.meaning}")

    def compare(self, ins: Instruction, out: _Lines) -> None:
        """``setp`` in the type of its first operand (an immediate first: i32, as kernels/codegen.py reads it)."""
        a, b = ins.operands
        type_ = self.types[a.name] if isinstance(a, Use) else "i32"
        entry = self.op(".".join(ins.opcode.split(".")[:2]), type_)
        if ins.defs[0].type != "pred":
            raise PlanPtxError(f"{self.where}: a comparison defines a pred, not {ins.defs[0].type}")
        out.add(f"{entry.instruction} {register(ins.defs[0].name)}, {self.value(a, type_)}, {self.value(b, type_)}")

    def address(self, op, offset, out: _Lines) -> str:
        """``[%base+offset]``; an offset beyond 32 bits is added into a temporary first."""
        if not isinstance(op, Use) or self.types[op.name] != "u64":
            raise PlanPtxError(f"{self.where}: an address must be a u64 value")
        base, off = register(op.name), self.integer(offset)
        if -(1 << 31) <= off < (1 << 31):
            return f"[{base}+{off}]" if off else f"[{base}]"
        far = out.temp("u64")
        out.add(f"add.s64 {far}, {base}, {literal(offset.text, 'u64', self.where)}")
        return f"[{far}]"

    def memory(self, ins: Instruction, out: _Lines) -> None:
        if ins.opcode == "ld.global":
            d = ins.defs[0]
            at = self.address(ins.operands[0], ins.operands[1], out)
            out.add(f"{self.op('ld.global', d.type).instruction} {register(d.name)}, {at}")
            return
        value = ins.operands[2]
        type_ = self.types[value.name] if isinstance(value, Use) else "f32"
        at = self.address(ins.operands[0], ins.operands[1], out)
        out.add(f"{self.op('st.global', type_).instruction} {at}, {self.value(value, type_)}")

    def spill(self, ins: Instruction, out: _Lines) -> None:
        """A spill store or reload: 32-bit values at 4 * SLOT of one array, 64-bit ones at 8 * SLOT of another; a
        predicate as a 0/1 word."""
        slot = spill_slot(ins)
        if slot is None:
            raise PlanPtxError(f"{self.where}: a spill slot must be an integer in 0..{MAX_SPILL_SLOT}")
        store = ins.opcode == "st.local"
        if store and not isinstance(ins.operands[1], Use):
            raise PlanPtxError(f"{self.where}: expected 'st.local SLOT, %VALUE'")
        name = ins.operands[1].name if store else ins.defs[0].name
        type_ = self.types[name]
        at = f"[{SPILL_FRAME}+{self.frame.offsets[slot]}]"
        access = "volatile.local" if self.spills == "volatile" else "local"
        mem = MEMORY_TYPES.get(type_, "b32")
        if store:
            self.stores += 1
            source = register(name)
            if type_ == "pred":
                source = out.temp("b32")
                out.add(f"selp.b32 {source}, 1, 0, {register(name)}")
            out.add(f"st.{access}.{mem} {at}, {source}")
            return
        self.loads += 1
        if type_ == "pred":
            word = out.temp("b32")
            out.add(f"ld.{access}.b32 {word}, {at}")
            out.add(f"setp.ne.b32 {register(name)}, {word}, 0")
            return
        out.add(f"ld.{access}.{mem} {register(name)}, {at}")

    def pack(self, ins: Instruction, out: _Lines) -> None:
        """``cvt.rn.f16x2.f32 d, b, a``: PTX puts its first source in the high half, the IR's first is the low."""
        self._defines(ins, "f16x2")
        a, b = (self.value(o, "f32") for o in ins.operands)
        out.add(f"{self.op(ins.opcode, 'f16x2').instruction} {register(ins.defs[0].name)}, {b}, {a}")

    def unpack(self, ins: Instruction, out: _Lines) -> None:
        self._defines(ins, "f32")
        pair = ins.operands[0]
        if not isinstance(pair, Use) or self.types[pair.name] != "f16x2":
            raise PlanPtxError(f"{self.where}: the operand must be an f16x2 value")
        low, high = out.temp("b16"), out.temp("b16")
        out.add(f"mov.b32 {{{low}, {high}}}, {register(pair.name)}")
        half = low if ins.opcode.endswith(".lo") else high
        out.add(f"{self.op(ins.opcode, 'f32').instruction} {register(ins.defs[0].name)}, {half}")

    def shuffle(self, ins: Instruction, out: _Lines) -> None:
        """``shfl.sync.bfly.b32`` over the whole warp, lane mask ``b & 31``, clamp 31 (numba's ``shfl_xor_sync``)."""
        d = ins.defs[0]
        entry = self.op(ins.opcode, d.type)
        lanes = self.integer(ins.operands[1]) & 31
        source = self.value(ins.operands[0], d.type)
        if d.type not in ("u64", "f64"):
            out.add(f"{entry.instruction} {register(d.name)}, {source}, {lanes}, 0x1f, 0xffffffff")
            return
        whole, low, high, got_low, got_high = (out.temp(t) for t in ("b64", "b32", "b32", "b32", "b32"))
        out.add(f"mov.b64 {whole}, {source}")
        out.add(f"mov.b64 {{{low}, {high}}}, {whole}")
        out.add(f"{entry.instruction} {got_low}, {low}, {lanes}, 0x1f, 0xffffffff")
        out.add(f"{entry.instruction} {got_high}, {high}, {lanes}, 0x1f, 0xffffffff")
        out.add(f"mov.b64 {register(d.name)}, {{{got_low}, {got_high}}}")

    def exp(self, ins: Instruction, out: _Lines) -> None:
        """NVVM's ``expf`` sequence (:data:`_EXPF`), its result under the guard like every line."""
        self._defines(ins, "f32")
        self.op("exp", "f32")
        x = self.value(ins.operands[0], "f32")
        for reg_type, count in _EXPF_TEMPS:
            for _ in range(count):
                out.temp(reg_type)
        for text in _EXPF:
            out.add(text.format(x=x, d=register(ins.defs[0].name)))

    def arithmetic(self, ins: Instruction, out: _Lines) -> None:
        d = ins.defs[0]
        if ins.opcode not in _ARITHMETIC:
            raise PlanPtxError(f"{self.where}: {ins.opcode} has no PTX (kernels/codegen.py lowers none)")
        entry = self.op(ins.opcode, d.type)
        if ins.opcode == "mul.wide.s32":
            args = [self.value(ins.operands[0], "i32"), literal(ins.operands[1].text, "i32", self.where)]
        elif self._mixed(ins):
            self.mixed(ins, out)
            return
        else:
            args = [self.value(o, d.type) for o in ins.operands]
        out.add(f"{entry.instruction} {register(d.name)}, {', '.join(args)}")

    def _mixed(self, ins: Instruction) -> bool:
        """An f32 result of an i32 or f64 operand (kernels/codegen.py rounds numba's f64 result to f32)."""
        return ins.defs[0].type == "f32" and ins.opcode in _MIXED and any(
            isinstance(o, Use) and self.types[o.name] in ("i32", "f64") for o in ins.operands)

    def mixed(self, ins: Instruction, out: _Lines) -> None:
        """Every operand as f64 (exactly), the operation in f64, the result rounded to f32."""
        args = []
        for o in ins.operands:
            kind = self.types[o.name] if isinstance(o, Use) else "f64"
            if kind == "f64":
                args.append(self.value(o, "f64"))
                continue
            if kind not in ("f32", "i32"):
                raise PlanPtxError(f"{self.where}: %{o.name} is {kind}, which an f32 result cannot be computed from")
            wide = out.temp("f64")
            out.add(f"cvt{'.rn' if kind == 'i32' else ''}.f64.{REGISTER_TYPES[kind]} {wide}, {register(o.name)}")
            args.append(wide)
        result = out.temp("f64")
        out.add(f"{self.op(ins.opcode, 'f64').instruction} {result}, {', '.join(args)}")
        out.add(f"cvt.rn.f32.f64 {register(ins.defs[0].name)}, {result}")

    def _defines(self, ins: Instruction, type_: str) -> None:
        if ins.defs[0].type != type_:
            raise PlanPtxError(f"{self.where}: {ins.opcode} defines {type_}, not {ins.defs[0].type}")

    def branch(self, ins: Instruction, bi: int) -> list[str]:
        """``bra``/``ret``; a guarded ``cbr`` first jumps to the next block when its guard is false (the
        interpreter's fall-through), then ``@%p bra L1`` and ``bra L2``."""
        guard = "" if ins.guard is None else f"@{'!' if ins.guard_negated else ''}{register(ins.guard)} "
        if ins.opcode == "exit":
            return [f"{guard}ret;"]
        if ins.opcode == "br":
            return [f"{guard}bra {label(ins.targets[0])};"]
        cond = ins.operands[0]
        if not isinstance(cond, Use) or self.types[cond.name] != "pred":
            raise PlanPtxError(f"{self.where}: a cbr's condition must be a pred value")
        lines = []
        if ins.guard is not None:
            nxt = label(self.program.blocks[bi + 1].name) if bi + 1 < len(self.program.blocks) else END_LABEL
            lines.append(f"@{'' if ins.guard_negated else '!'}{register(ins.guard)} bra {nxt};")
        taken, other = ins.targets
        return lines + [f"@{register(cond.name)} bra {label(taken)};", f"bra {label(other)};"]


@dataclass(frozen=True)
class PlanPtx:
    """The PTX of a plan for one architecture.

    Attributes
    ----------
    text : the PTX module (one ``.entry``)
    entry : the kernel's name (the Numba kernel's, :func:`kernels.codegen.entry_name`)
    arch : its ``.target``
    spills : how its spill code reaches local memory (one of :data:`SPILL_ACCESS`)
    line_ir : for each line of ``text`` (index 0: line 1), the IR instruction (linear index) that wrote it,
        None for lines no instruction wrote (declarations, labels, comments)
    params : the kernel's IR parameters in order (the Numba kernel's, ``spill_zero`` after them)
    registers : the plan's register count (the plan cap a build gives ptxas)
    spill_stores, spill_loads : the local stores and loads of the plan's spill code it holds
    """

    text: str
    entry: str
    arch: str
    spills: str
    line_ir: tuple
    params: tuple
    registers: int
    spill_stores: int
    spill_loads: int

    def lines_of(self, index: int) -> list[int]:
        """The lines (1-based) IR instruction ``index`` wrote."""
        return [k + 1 for k, ir in enumerate(self.line_ir) if ir == index]

    def for_arch(self, arch: str) -> PlanPtx:
        """The same PTX for another architecture (only its ``.target`` line differs)."""
        name = load_arch(arch).name
        if name == self.arch:
            return self
        text = self.text.replace(f"\n.target {self.arch}\n", f"\n.target {name}\n", 1)
        return replace(self, text=text, arch=name)


def _declarations(program: Program) -> list[str]:
    """``.reg`` lines: every value's register, by type, eight a line."""
    by_type: dict[str, list[str]] = {}
    for name, value in program.values.items():
        by_type.setdefault(REGISTER_TYPES[value.type], []).append(register(name))
    out = []
    for reg_type in sorted(by_type):
        names = by_type[reg_type]
        out += [f"\t.reg .{reg_type} {', '.join(names[k:k + 8])};" for k in range(0, len(names), 8)]
    return out




def plan_ptx(plan: Plan, arch: str = "sm_80", spills: str = "volatile") -> PlanPtx:
    """The plan's own PTX for ``arch``, its spill code as ``spills`` local accesses (:data:`SPILL_ACCESS`).

    Raises :class:`PlanPtxError` naming the first instruction that has no PTX.
    """
    if spills not in SPILL_ACCESS:
        raise PlanPtxError(f"unknown spill access {spills!r} (known: {', '.join(SPILL_ACCESS)})")
    target = load_arch(arch).name
    entry = entry_name(plan)
    e = _Emitter(plan.program, entry, spills)
    e.emit()
    e.params.append(f".param .u32 {entry}_param_{len(e.params)}")      # spill_zero, as the Numba kernel has it
    head = ["//", f"// RegTune plan PTX of {entry}: one PTX instruction (or a fixed sequence) per IR instruction,",
            f"// in the plan's order; spill code as {spills} local accesses; '// ir N': the IR instruction (linear",
            "// index) that wrote the line", "//", "", f".version {PTX_VERSION}", f".target {target}",
            ".address_size 64", "", f".visible .entry {entry}(",
            ",\n".join(f"\t{p}" for p in e.params), ")", "{"]
    head = "\n".join(head).split("\n")
    frame = [f"\t.local .align 8 .b8 {SPILL_FRAME}[{e.frame.size}];"] if e.frame.size else []
    decls = frame + _declarations(plan.program) + [""]
    lines = [(text, None) for text in head + decls] + e.body + [(f"{END_LABEL}:", None), ("\tret;", None),
                                                                 ("}", None)]
    text = "\n".join(t if ir is None else f"{t}\t// ir {ir}" for t, ir in lines) + "\n"
    return PlanPtx(text, entry, target, spills, tuple(ir for _, ir in lines), (*e.symbols, "spill_zero"),
                   registers_used(plan.assignment), e.stores, e.loads)


def fingerprint() -> str:
    """The versions that key the plan PTX's cache entries: ptxas and nvdisasm (no NVVM is involved)."""
    return f"plan PTX|ptxas {tool_version('ptxas')}|nvdisasm {tool_version('nvdisasm')}"


def _valid(text: str) -> bool:
    """A stored ptxas report (and SASS listing) of the shape this version writes."""
    data = json.loads(text)
    report = data["report"]
    return (isinstance(data.get("sass"), str) and isinstance(report, dict)
            and set(report) == {f.name for f in fields(CompileReport)}
            and isinstance(report["registers"], int) and isinstance(report["flags"], list))


def _assemble(ptx: PlanPtx, cap: str, cache: StageCache, timings: dict, use_cache: bool,
              on_ptxas: Callable | None = None) -> tuple:
    """ptxas at one cap (at the plan cap also nvdisasm's life ranges): the report, the listing ("" without) and
    whether a tool ran; cached by the PTX, the arch and the flags. ``on_ptxas(arch, cap, report)`` is called as
    soon as ptxas's report is there, before nvdisasm runs."""
    max_registers = cap_registers(cap, ptx.arch, ptx.registers)
    key = (ptx.text, ptx.arch, " ".join(ptxas_flags(ptx.arch, max_registers)), "sass" if cap == "plan" else "")
    stored = cache.read("plan-ptx", _valid, *key) if use_cache else None
    if stored is not None:
        data = json.loads(stored)
        r = data["report"]
        report = CompileReport(**{**r, "warnings": tuple(r["warnings"]), "flags": tuple(r["flags"])})
        if on_ptxas is not None:
            on_ptxas(ptx.arch, cap, report)
        return report, data["sass"], False
    t = time.perf_counter()
    report, cubin = ptxas(ptx.text, ptx.arch, max_registers)
    timings[f"ptxas {ptx.arch} {CAP_LABELS[cap]}"] = (time.perf_counter() - t) * 1000
    if on_ptxas is not None:
        on_ptxas(ptx.arch, cap, report)
    sass = ""
    if cap == "plan":
        t = time.perf_counter()
        sass = nvdisasm(cubin)
        timings[f"nvdisasm {ptx.arch}"] = (time.perf_counter() - t) * 1000
    cache.write(json.dumps({"report": report.as_dict(), "sass": sass}), "plan-ptx", *key)
    return report, sass, True


def tool_threads() -> int:
    """How many tool runs go side by side: the cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # not on Linux
        return max(1, os.cpu_count() or 1)


def sass_figures(text: str, arch: str) -> SassFigures:
    """The live-range figures of a SASS listing (``nvdisasm -c -plr``), without the Numba kernel's explanation."""
    s = parse_sass(text)
    return SassFigures(s.maxlive, s.offsets[s.peak], len(s.texts), s.highest_register(),
                       s.bank_conflicts(load_arch(arch).bank_model), s.mix(), ())


def plan_ptx_figures(plan: Plan, archs=DEFAULT_BUILD_ARCHS, spills: str = "volatile",
                     use_cache: bool = True, on_ptxas: Callable | None = None) -> PlanPtxFigures:
    """ptxas on the plan's own PTX for every arch in ``archs``, at the plan cap and with no cap (the caps a build
    measures, :data:`kernels.build.CAPS`), and SASS MAXLIVE of the plan-cap cubin; tool runs side by side and
    cached by content (``timings_ms``: the emission and each tool run that ran).

    The runs go to as many threads as the machine has cores (:func:`tool_threads`), in the order of
    ``archs`` (the first arch's two caps first): more would only slow each run down, and this order brings
    the first arch's ptxas figures soonest. ``on_ptxas(arch, cap, PtxasFigures)`` (called from a pool thread)
    hears of each ptxas figure as it arrives, before the SASS of its cubin is read: what the live panel shows
    first.
    """
    return plan_ptx_figures_and_listings(plan, archs, spills, use_cache, on_ptxas)[0]


def plan_ptx_figures_and_listings(plan: Plan, archs=DEFAULT_BUILD_ARCHS, spills: str = "volatile",
                                  use_cache: bool = True,
                                  on_ptxas: Callable | None = None) -> tuple[PlanPtxFigures, dict]:
    """:func:`plan_ptx_figures` and, per arch, the plan-cap cubin's SASS listing with life ranges (the text its
    SASS figures were read from; a sweep stores it once by content)."""
    archs = tuple(load_arch(a).name for a in archs)
    if not archs:
        raise PlanPtxError("plan PTX figures need at least one architecture")
    t = time.perf_counter()
    first = plan_ptx(plan, archs[0], spills)
    timings = {"emit": (time.perf_counter() - t) * 1000}
    cache = StageCache.open(fingerprint())
    runs = [(first.for_arch(a), cap) for a in archs for cap in CAPS]
    threads = threads_per_block(plan)
    heard = None if on_ptxas is None else \
        (lambda arch, cap, report: on_ptxas(arch, cap, ptxas_figures(report, cap, threads)))
    with ThreadPoolExecutor(max_workers=min(len(runs), tool_threads())) as pool:
        done = list(pool.map(lambda run: _assemble(*run, cache, timings, use_cache, heard), runs))
    by = {(ptx.arch, cap): result for (ptx, cap), result in zip(runs, done)}
    figures = PlanPtxFigures(
        first.entry, spills, {a: ptxas_figures(by[a, "plan"][0], "plan", threads) for a in archs},
        {a: ptxas_figures(by[a, "compiler"][0], "compiler", threads) for a in archs},
        {a: sass_figures(by[a, "plan"][1], a) for a in archs}, timings, not any(r[2] for r in done))
    return figures, {a: by[a, "plan"][1] for a in archs}


def plan_ptx_issue_cycles(plan: Plan, arch: str = "sm_80", spills: str = "volatile", forward_taken: bool = False):
    """The SASS issue cycles per warp (:func:`kernels.control.issue_cycles`, a model from the control bits) of the
    plan's own PTX compiled by ptxas at the plan cap on ``arch``, the loop weighted by the plan's trip count:
    ``(IssueCycles, ptxas's registers)``. ``forward_taken=False`` runs the code a predicated forward branch
    guards, as the plan's ILP model runs the longer side of an ``if`` (see :func:`kernels.control.executed_path`).
    Raises :class:`kernels.control.ControlError` for a listing or path the control model cannot price, and where
    ptxas unrolled the loop (more LDG in the SASS loop than ``ld.global`` in the program's loop block)."""
    from engine.ir.cfg import loop_trips
    from engine.model.arch import load_latencies
    from kernels.control import ControlError, issue_cycles, loops, parse_hex
    from kernels.toolchain import ENCODINGS

    ptx = plan_ptx(plan, arch, spills)
    report, cubin = ptxas(ptx.text, ptx.arch, cap_registers("plan", ptx.arch, ptx.registers))
    listing = parse_hex(nvdisasm(cubin, ENCODINGS))
    trips = loop_trips(plan.program)
    found = loops(listing)
    if len(found) == 1 and len(trips) == 1:
        block = next(b for b in plan.program.blocks if b.name == next(iter(trips)))
        ir = sum(1 for i in block.instructions if i.opcode.startswith("ld.global"))
        first, last = found[0]
        sass = sum(1 for x in listing.instructions[first:last + 1] if x.opcode.startswith("LDG"))
        if sass > ir:
            raise ControlError(f"the SASS loop has {sass} global loads, the program loop {block.name} {ir}: "
                               "unrolled, so weighting it by the trip count would over-count")
    return issue_cycles(listing, load_latencies(ptx.arch).cycles, trips, forward_taken), report.registers
