"""Numba CUDA source from a plan: one Python statement per IR instruction, in the plan's order.

What reaches the hardware from a plan (DESIGN.md, "Kernels"): the order
of computations and of global stores, the tiling (it is in the program)
and the register cap (``MAX_REGISTERS``, applied as ``-maxrregcount`` at
ptxas and ``max_registers`` at launch), and the placement of global loads.
Left alone, NVVM sinks each global load to its first use, so a
load-all-first plan's PTX equals k-outer's and a schedule edit that hoists
a load changes nothing. So each run of loads stands between two compiler
barriers (``order_loads()``, ``load_order="barrier"``, the default): an
empty inline-asm statement with a memory clobber that NVVM may not move a
load across and that writes no PTX instruction. Measured here
(tests/kernels) and by tests/bench/bench_load_order.py: the PTX then holds
every global load in the plan's order and as far ahead of its use as the
plan put it. ptxas never sees the barrier and schedules loads itself (GEMM
8x8x8, 4x4 tile, load-all-first: 40 registers with no cap for the plan's
77). ``"fence"`` (a ``membar.cta`` in place of each barrier) makes ptxas
keep the runs too (78 registers with no cap) at one ``MEMBAR.SC.CTA`` each;
``"volatile"`` (``ld.volatile`` loads, ``LDG.E.STRONG.SYS``) keeps the
exact order. What those cost at run time needs a GPU. Register names do
not reach the hardware: PTX registers are virtual and ptxas allocates
again.

Spill code can survive NVVM only where LLVM cannot see through it. With
``spills="plan"`` (the default) a plan's ``st.local SLOT, %v`` stores to a
per-thread local array at the constant index SLOT and its reloads read
``SLOT + spill_zero``, where ``spill_zero`` is a kernel argument that is 0 at
run time: LLVM cannot prove the two addresses equal, so it can neither
forward the stored value nor drop the store, and the PTX keeps one
``st.local`` per planned store and one ``ld.local`` per planned reload
(tests/kernels check the count). With ``spills="compiler"`` spill code
becomes plain copies and NVVM/ptxas decide alone.

Value names map to Python names (dots become ``__``); a value defined more
than once gets a fresh name per definition inside a block (numba-cuda's
lowering is slow with reused names, TOOLCHAIN-NOTES.md), and the canonical
name for the last definition a later block reads. Control flow is
structured back into ``if``/``else`` and ``while True`` loops by
:func:`engine.ir.cfg.structure`, whose tree this module walks; a CFG that
does not fit those shapes is refused with the block at fault. The generic
module parts are real files in kernels/templates, embedded as text.

Invariant: ``kernel_source`` is a pure function of the plan and its
options; the text is a complete module that runs on its own
(``python kernel.py`` launches it on a GPU, or in numba's simulator under
``NUMBA_ENABLE_CUDASIM=1``, and checks it against numpy; a program file's
module, which has no numpy reference, holds the program without the
plan's spill code too (:func:`without_spill_code`) and compares the two).

Examples
--------
>>> from engine.workloads.gemm import Gemm, build_gemm
>>> from engine.alloc import allocate
>>> program, options = build_gemm(Gemm(2, 2, 2), tile=(2, 2))
>>> from engine.predict import planned_and_run
>>> plan = planned_and_run(allocate("linear-scan", program), workload=Gemm(2, 2, 2).as_dict(), options=options)
>>> src = kernel_source(plan)
>>> src.params
('A', 'B', 'C', 'alpha', 'beta', 'batch', 'spill_zero')
>>> "acc_0_0_2 = cuda.fma(a_0_1, b_1_0, acc_0_0_1)" in src.text
True
"""

from __future__ import annotations

import builtins
import hashlib
import keyword
import math
import re
from collections import deque
from dataclasses import dataclass

from engine.base.errors import RegtuneError
from engine.base.fields import excerpt
from engine.base.limits import MAX_SPILL_SLOT
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
    structure,
)
from engine.ir.core import Imm, Instruction, Program, Use
from engine.ir.rules import KERNEL_NAMES, shape_of, usable_symbol
from engine.ir.spill import has_spill_code, remove_spill_code, spill_slot
from engine.plan import Plan, registers_used
from kernels.facts import PlanFacts
from kernels.harness import HARNESSES, Harness, bound_names, harness_for
from kernels.templates import template_text

SPILL_MODES = ("plan", "compiler")


@dataclass(frozen=True)
class LoadOrder:
    """How a kernel keeps the plan's placement of global loads through NVVM (costs measured by
    tests/bench/bench_load_order.py).

    Attributes
    ----------
    name : its name (``kernel_source(..., load_order=NAME)``)
    around_runs : the statement written before and after each run of global loads ("" none)
    volatile : every global load is ``load_volatile(array, i)`` (``ld.volatile.global``)
    note : the generated module's docstring sentence on it
    """

    name: str
    around_runs: str
    volatile: bool
    note: str


#: the load orders by name; "barrier" is the default
LOAD_ORDERS = {o.name: o for o in (
    LoadOrder("barrier", "order_loads()", False,
              "Global loads keep the plan's placement through NVVM: order_loads(), an empty compiler barrier,\n"
              "stands before and after each run of loads (ptxas, which never sees it, may move them again).\n"),
    LoadOrder("fence", "cuda.threadfence_block()", False,
              "Global loads keep the plan's placement through NVVM: cuda.threadfence_block() (membar.cta)\n"
              "stands before and after each run of loads; ptxas keeps the membar too.\n"),
    LoadOrder("volatile", "", True,
              "Global loads keep the plan's order through NVVM: each is ld.volatile (load_volatile).\n"),
    LoadOrder("nvvm", "", False, "Global loads are left to NVVM, which places each at its first use.\n"),
)}

#: Numba type of each IR type (u64 values are unsigned element indices into an array, see
#: ``_Pointers``; unsigned, so numba emits no negative-index wraparound code).
NUMBA_TYPES = {"f32": "float32", "i32": "int32", "u64": "uint64", "f64": "float64", "pred": "boolean"}
#: the module's own names its kernel body reads (the engine's list: a parameter may take none of them)
_RESERVED = set(KERNEL_NAMES)
_SETP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_SREG = {"sreg.tid.x": "cuda.threadIdx.x", "sreg.tid.y": "cuda.threadIdx.y", "sreg.tid.z": "cuda.threadIdx.z",
         "sreg.ctaid.x": "cuda.blockIdx.x", "sreg.ctaid.y": "cuda.blockIdx.y", "sreg.ctaid.z": "cuda.blockIdx.z",
         "sreg.ntid.x": "cuda.blockDim.x", "sreg.nctaid.x": "cuda.gridDim.x"}


class KernelError(RegtuneError):
    """A plan whose program cannot be written as a CUDA kernel (says which instruction and why)."""


@dataclass(frozen=True)
class KernelSource:
    """A generated kernel module.

    Attributes
    ----------
    text : the module's source
    name : the kernel function's name in it
    params : kernel parameters in order (arrays for u64 params, then ``spill_zero``)
    arrays : the parameters that are float32 arrays
    signature : the numba signature string
    spills : "plan" or "compiler"
    spill_stores, spill_loads : st.local / ld.local the source holds (plan spill code)
    budget : the plan's budget, written into it as MAX_REGISTERS
    registers : the plan's register count (the "plan" cap a build gives ptxas)
    entry : the kernel's short name in its PTX and SASS (:func:`entry_name`)
    body : the kernel function's own text (what NVVM compiles)
    ir_lines : (line of ``text``, IR instruction index) for every line that an IR instruction wrote, ascending
        by line: each such line names exactly one instruction of the plan's program (its statement, the carry
        reads it needs, its guard, or a branch's ``if``), so line info in the PTX and SASS maps back to the IR
    load_order : how the plan's placement of global loads is kept through NVVM (a name of :data:`LOAD_ORDERS`)
    load_barriers : the ``order_loads()`` or ``cuda.threadfence_block()`` statements around runs of loads
    """

    text: str
    name: str
    params: tuple
    arrays: tuple
    signature: str
    spills: str
    spill_stores: int
    spill_loads: int
    budget: int
    registers: int
    entry: str
    body: str = ""
    ir_lines: tuple = ()
    load_order: str = "barrier"
    load_barriers: int = 0

    def ir_of_line(self) -> dict:
        """``{line of text: IR instruction index}`` (lines written by no instruction are absent)."""
        return dict(self.ir_lines)


#: a Python name the generated source may use: ASCII only (Python folds full-width and other look-alike
#: letters to ASCII under NFKC, so ``ｃｕｄａ`` would be ``cuda``)
_PY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _usable(name: str, reserved=None) -> bool:
    """A name the kernel function can bind without shadowing what its body reads: not a keyword, dunder,
    builtin or one of :data:`_RESERVED` (``reserved`` instead, for the kernel function's own name)."""
    return (bool(_PY_NAME.fullmatch(name)) and not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
            and name not in (_RESERVED if reserved is None else reserved)
            and not (name.startswith("__") and name.endswith("__")))


def _identifier(name: str, taken: set, reserved=None) -> str:
    """The Python name of an IR name (already ASCII by the IR's grammar; dots become ``__``), prefixed with
    ``v_`` when it would shadow a keyword, a builtin, one of the module's own names or a name taken before."""
    base = name.replace(".", "__")
    if not _PY_NAME.fullmatch(base):
        raise KernelError(f"name {excerpt(name)} cannot be written in Python")
    if not _usable(base, reserved) or base in taken:
        base = f"v_{base}"
    while base in taken:
        base += "_"
    taken.add(base)
    return base


def _number(text: str, where: str, kind=int):
    """An immediate as ``int`` (any base Python reads) or ``float``: the only way file text becomes source."""
    try:
        return int(text, 0) if kind is int else float(text)
    except (ValueError, OverflowError):
        raise KernelError(f"{where}: immediate {excerpt(text)} is not {'an integer' if kind is int else 'a number'}") \
            from None


def _float(text: str, where: str) -> str:
    value = _number(text, where, float)
    if math.isnan(value):
        return "float32(math.nan)"
    if math.isinf(value):
        return "float32(-math.inf)" if value < 0 else "float32(math.inf)"
    return f"float32({value!r})"


class _Pointers:
    """Which array each u64 value points into; u64 values are kept as element indices (bytes / 4).

    A worklist over the program: an instruction is visited again only when
    one of its operands (or the spill slot it reloads) has just learned its
    array, so the work is linear in the program. A spill slot that holds
    pointers into two arrays is refused: no single array can serve it.
    """

    def __init__(self, program: Program):
        self.base: dict[str, str] = {}
        slots: dict[str, str] = {}
        code = program.instructions
        readers: dict[str, list[int]] = {}
        reloads: dict[str, list[int]] = {}
        for i, ins in enumerate(code):
            for u in ins.uses:
                readers.setdefault(u, []).append(i)
            if ins.opcode == "ld.local" and ins.operands:
                reloads.setdefault(ins.operands[0].text, []).append(i)
        todo, queued = deque(range(len(code))), [True] * len(code)   # first one pass in program order
        while todo:
            i = todo.popleft()
            queued[i] = False
            for j in self._visit(code[i], i, slots, readers, reloads):
                if not queued[j]:
                    queued[j] = True
                    todo.append(j)

    def _visit(self, ins: Instruction, index: int, slots: dict, readers: dict, reloads: dict) -> list[int]:
        """Give ``ins``'s u64 results (or its spill slot) an array; the instructions to visit again."""
        again: list[int] = []
        for d in ins.defs:
            if d.type == "u64" and d.name not in self.base:
                found = self._source(ins, slots)
                if found:
                    self.base[d.name] = found
                    again += readers.get(d.name, [])
        if ins.opcode == "st.local" and len(ins.operands) == 2 and isinstance(ins.operands[1], Use):
            slot, b = ins.operands[0].text, self.base.get(ins.operands[1].name)
            if b and slots.get(slot) is None:
                slots[slot] = b
                again += reloads.get(slot, [])
            elif b and slots[slot] != b:
                raise KernelError(f"instruction {index} ({excerpt(str(ins), 60)}): spill slot {excerpt(slot)} holds "
                                  f"pointers into both {slots[slot]} and {b}; a kernel needs one array per slot")
        return again

    def _source(self, ins: Instruction, slots: dict) -> str | None:
        if ins.opcode == "param":
            return ins.operands[0].text
        if ins.opcode == "ld.local":
            return slots.get(ins.operands[0].text)
        for op in ins.operands:
            if isinstance(op, Use) and op.name in self.base:
                return self.base[op.name]
        return None

    def array(self, name: str, where: str) -> str:
        if name not in self.base:
            raise KernelError(f"{where}: %{name} is not derived from an array parameter, so it cannot be an address")
        return self.base[name]


def _element(offset, where: str) -> int:
    if not isinstance(offset, Imm):
        raise KernelError(f"{where}: the byte offset must be an immediate")
    value = _number(offset.text, where)
    if value % 4:
        raise KernelError(f"{where}: byte offset {value} is not a multiple of 4 (f32 elements)")
    return value // 4


class _Writer:
    def __init__(self, plan: Plan, spills: str, load_order: LoadOrder = LOAD_ORDERS["barrier"]):
        self.plan, self.program = plan, plan.program
        self.spills, self.load_order = spills, load_order
        #: a run of global loads was written and no other instruction since (its barrier is still due)
        self.open_loads = False
        self.barriers = 0
        self.pointers = _Pointers(self.program)
        self.lines: list[str] = []
        # parameter names are the kernel's argument names: no value may take one, except the value a scalar
        # parameter defines under its own name (``%alpha:f32 = param alpha``); an array's (u64) value is an
        # element index (``uint64(0)``), so ``%A:u64 = param A`` gets another name and ``A`` stays the array
        declared = [i for i in self.program.instructions
                    if i.opcode == "param" and len(i.operands) == 1 and len(i.defs) == 1]
        own = {i.operands[0].text: i.defs[0].name for i in declared if i.defs[0].type != "u64"}
        self.taken: set = {i.operands[0].text for i in declared}
        self.names = {n: n if own.get(n) == n else _identifier(n, self.taken) for n in sorted(self.program.values)}
        self.current: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.last_def = self._last_defs()
        self.read_later = self._read_later()
        self.carried = self._carried()
        self.carry_slots: dict[str, tuple[str, int]] = {}
        self.slot_names: dict[tuple[int, str], str] = {}
        self.canonical_used: set = set()
        self.stores = self.loads = 0
        self.array_params: list[str] = []
        self.params: list[str] = []
        self.phase: str | None = None
        self.position = 0
        #: the IR instruction (linear index) each line of ``lines`` belongs to, None for structure and comments
        self.line_ir: list[int | None] = []
        self.owner: int | None = None
        self.last_cbr: int | None = None
        self.head_lines = 1      # the def line and the local arrays before ``lines`` (set by kernel_body)

    # -- names -------------------------------------------------------------------------------
    def _last_defs(self) -> set:
        """(block, instruction index) of each value's last definition in a block."""
        last = {}
        for bi, block in enumerate(self.program.blocks):
            for ii, ins in enumerate(block.instructions):
                for d in ins.defs:
                    last[(bi, d.name)] = ii
        return {(bi, ii, name) for (bi, name), ii in last.items()}

    def _read_later(self) -> set:
        """Values read in a block before (or without) a definition there: they keep the canonical
        name at each block's last definition, so the next block or the next trip reads it."""
        exposed = set()
        for block in self.program.blocks:
            defined = set()
            for ins in block.instructions:
                exposed.update(u for u in ins.uses if u not in defined)
                defined.update(d.name for d in ins.defs)
        return exposed

    def _carried(self) -> set:
        """Values defined more than once and read across a block boundary (a loop-carried accumulator,
        a value an if-block updates). Each definition gets a fresh Python name and the value crosses
        blocks through a small local array with constant indices, which LLVM turns back into
        registers (SROA): a Python variable assigned in several blocks costs numba-cuda an SSA
        reconstruction over the whole function per variable (half of a 3,000-line kernel's compile)."""
        defs: dict[str, int] = {}
        for ins in self.program.instructions:
            for d in ins.defs:
                defs[d.name] = defs.get(d.name, 0) + 1
        return {n for n in self.read_later if defs.get(n, 0) > 1
                and self.program.values[n].type in _CARRY_TYPES}

    def carry(self, name: str) -> str:
        """``carry_T[k]``, the cell that holds ``name`` between blocks."""
        if name not in self.carry_slots:
            kind = _CARRY_TYPES[self.program.values[name].type]
            k = sum(1 for t, _ in self.carry_slots.values() if t == kind)
            self.carry_slots[name] = (kind, k)
        kind, k = self.carry_slots[name]
        return f"carry_{kind}[{k}]"

    def load_carried(self, depth: int, ins: Instruction) -> None:
        """Read the carried values ``ins`` uses that this block has not defined yet."""
        for u in dict.fromkeys(ins.uses):
            if u in self.carried and u not in self.current:
                name = self.fresh(u)
                self.emit(depth, f"{name} = {self.carry(u)}")
                self.current[u] = name

    def use(self, name: str) -> str:
        return self.current.get(name, self.names[name])

    def define(self, bi: int, ii: int, name: str) -> str:
        if name in self.carried:
            target = self.fresh(name)
        elif name in self.read_later:
            target = self.names[name] if (bi, ii, name) in self.last_def else self.fresh(name)
        elif name not in self.current and name not in self.canonical_used:
            target = self.names[name]
            self.canonical_used.add(name)
        else:
            target = self.fresh(name)
        self.current[name] = target
        return target

    def fresh(self, name: str) -> str:
        """The next unused ``NAME_k`` for another definition of ``name``."""
        k = self.versions.get(name, 0)
        while True:
            k += 1
            candidate = f"{self.names[name]}_{k}"
            if candidate not in self.taken:
                break
        self.versions[name] = k
        self.taken.add(candidate)
        return candidate

    # -- operands ----------------------------------------------------------------------------
    def operand(self, op, type_: str, where: str) -> str:
        if isinstance(op, Use):
            return self.use(op.name)
        if type_ in ("f32", "f16x2", "f64"):
            return _float(op.text, where)
        if type_ == "u64":
            return f"uint64({_element(op, where)})"
        return str(_number(op.text, where))

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)
        self.line_ir.append(self.owner)

    # -- instructions -----------------------------------------------------------------------
    def instruction(self, depth: int, bi: int, ii: int, ins: Instruction) -> None:
        if ins.opcode != "ld.global":
            self.close_loads(depth)
        elif not self.open_loads:
            self.open_loads = True
            self.around_loads(depth)
        if ins.phase != self.phase and ins.phase:
            self.emit(depth, f"# -- phase {ins.phase}")
        self.phase = ins.phase or self.phase
        self.owner = self.program.block_starts[bi] + ii
        self.last_cbr = self.owner if ins.opcode == "cbr" else None
        try:
            self._statement(depth, bi, ii, ins)
        finally:
            self.owner = None

    def around_loads(self, depth: int) -> None:
        """The load order's statement before or after a run of global loads (a line of no IR instruction), once
        between two runs: NVVM can neither hoist a load of the run above the code before it nor sink one to
        its first use."""
        statement = self.load_order.around_runs
        if statement and not (self.lines and self.lines[-1] == "    " * depth + statement):
            self.emit(depth, statement)
            self.barriers += 1

    def close_loads(self, depth: int) -> None:
        """End a run of global loads (see :meth:`around_loads`)."""
        if self.open_loads:
            self.around_loads(depth)
        self.open_loads = False

    def _statement(self, depth: int, bi: int, ii: int, ins: Instruction) -> None:
        """The lines of one IR instruction (all of them are attributed to it in ``line_ir``)."""
        where = f"instruction {self.position} ({ins})"
        self.position += 1
        self.load_carried(depth, ins)
        guard = None
        if ins.guard is not None:
            guard = ("not " if ins.guard_negated else "") + self.use(ins.guard)
        expr = self.expression(ins, where)
        if expr is None:
            return
        before = {d.name: self.current.get(d.name) for d in ins.defs}
        if guard is not None:
            self.emit(depth, f"if {guard}:")
            depth += 1
        if isinstance(expr, str) and not ins.defs:
            self.emit(depth, expr)
            return
        targets = [self.define(bi, ii, d.name) for d in ins.defs]
        values = expr if isinstance(expr, list) else [expr]
        for d, target, value in zip(ins.defs, targets, values):
            self.emit(depth, f"{target} = {value}")
            if d.name in self.carried and (bi, ii, d.name) in self.last_def:
                self.emit(depth, f"{self.carry(d.name)} = {target}")
        if guard is not None:      # a guarded definition keeps the old value when the guard is false
            kept = [(t, before[d.name]) for d, t in zip(ins.defs, targets) if before[d.name]]
            if kept:
                self.emit(depth - 1, "else:")
                for target, old in kept:
                    self.emit(depth, f"{target} = {old}")

    def expression(self, ins: Instruction, where: str):
        op, ops = ins.opcode, ins.operands
        type_ = ins.defs[0].type if ins.defs else None
        if op == "param":
            return self.param(ins, where) or None
        if op in _SREG:
            return f"int32({_SREG[op]})"
        if op.startswith("setp."):
            cmp = _SETP.get(op.split(".")[1])
            if cmp is None or len(ops) != 2:
                raise KernelError(f"{where}: unknown comparison {op}")
            kind = self.program.values[ops[0].name].type if isinstance(ops[0], Use) else "i32"
            a, b = (self.operand(o, kind, where) for o in ops)
            return f"{a} {cmp} {b}"
        if op in ("ld.global", "st.global") and (len(ops) != (2 if op == "ld.global" else 3)
                                                 or not isinstance(ops[0], Use) or len(ins.defs) > 1):
            raise KernelError(f"{where}: expected '{op} %ADDRESS, OFFSET{'' if op == 'ld.global' else ', VALUE'}'")
        if op == "ld.global":
            array = self.pointers.array(ops[0].name, where)
            address = _address(self.use(ops[0].name), _element(ops[1], where))
            return f"load_volatile({array}, {address})" if self.load_order.volatile else f"{array}[{address}]"
        if op == "st.global":
            array = self.pointers.array(ops[0].name, where)
            value = self.operand(ops[2], "f32", where)
            return f"{array}[{_address(self.use(ops[0].name), _element(ops[1], where))}] = {value}"
        if op in ("st.local", "ld.local"):
            return self.spill(ins, where)
        if op in ("br", "cbr", "exit"):
            return None
        if shape_of(op) is None:      # an opaque opcode (engine.ir.rules): its operands were never given a kind
            raise KernelError(f"{where}: opcode {op} has no CUDA lowering")
        expr = self.arithmetic(op, type_, [self.operand(o, type_ or "i32", where) for o in ops], ins, where)
        return f"float32({expr})" if self._mixed_f32(ins) else expr

    def _mixed_f32(self, ins: Instruction) -> bool:
        """An f32 result computed from an operand of another type (``%t:f32 = add %i, %acc`` with ``%i:i32``):
        numba would type it float64, so the kernel rounds it to float32, as the IR's type says (else a copy
        through a float32 spill slot would round where the kernel without spill code does not)."""
        return len(ins.defs) == 1 and ins.defs[0].type == "f32" and any(
            isinstance(o, Use) and self.program.values[o.name].type in ("i32", "f64") for o in ins.operands)

    def param(self, ins: Instruction, where: str) -> str:
        symbol = ins.operands[0].text if len(ins.operands) == 1 and len(ins.defs) == 1 else ""
        if not (_usable(symbol) and usable_symbol(symbol)):    # the parser refuses both (engine.ir.rules)
            raise KernelError(f"{where}: parameter name {excerpt(symbol)} is not usable in Python (ASCII letters, "
                              "digits and _, not a keyword, builtin or a name of the kernel module)")
        if symbol in self.params:  # read again (a rematerialised value): the kernel argument, as the first read
            return "uint64(0)" if ins.defs[0].type == "u64" else symbol
        self.params.append(symbol)
        if ins.defs[0].type == "u64":
            self.array_params.append(symbol)
            return "uint64(0)"
        if ins.defs[0].name == symbol:
            self.current[symbol] = symbol
            return None
        return symbol

    def arithmetic(self, op: str, type_: str, args: list, ins: Instruction, where: str):
        cast = NUMBA_TYPES.get(type_, "")
        if op == "mov" and len(args) == 1:
            return args[0]
        if op == "mul.wide.s32":
            scale = _number(ins.operands[1].text, where) if len(ins.operands) == 2 and \
                isinstance(ins.operands[1], Imm) else 1
            if scale % 4:
                raise KernelError(f"{where}: byte scale {scale} is not a multiple of 4")
            scale //= 4
            return f"uint64({args[0]})" + (f" * uint64({scale})" if scale != 1 else "")
        if type_ == "u64" and op in ("add", "sub") and len(args) == 2:
            return f"{args[0]} {'+' if op == 'add' else '-'} {args[1]}"
        if op == "fma" and type_ == "f32":
            return f"cuda.fma({args[0]}, {args[1]}, {args[2]})"
        simple = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "fma": "{0} * {1} + {2}",
                  "div.u32": "{0} // {1}", "rem.u32": "{0} % {1}", "max": "max({0}, {1})", "min": "min({0}, {1})"}
        if op in simple and len(args) == simple[op].count("{"):
            return f"{cast}({simple[op].format(*args)})" if type_ == "i32" else simple[op].format(*args)
        if op == "exp" and type_ == "f32":
            return f"math.exp({args[0]})"
        if op == "rcp" and type_ == "f32":
            return f"float32(1) / {args[0]}"
        if op == "shfl.sync.bfly" and len(args) == 2:
            if not isinstance(ins.operands[1], Imm):
                raise KernelError(f"{where}: the shuffle's lane mask must be an immediate")
            return f"cuda.shfl_xor_sync(0xFFFFFFFF, {args[0]}, {_number(ins.operands[1].text, where) & 31})"
        if op == "cvt.rn.f16x2.f32":
            return f"(float16({args[0]}), float16({args[1]}))"
        if op in ("cvt.f32.f16.lo", "cvt.f32.f16.hi"):
            return f"float32({args[0]}[{0 if op.endswith('lo') else 1}])"
        raise KernelError(f"{where}: opcode {op} has no CUDA lowering")

    def spill(self, ins: Instruction, where: str) -> str:
        slot = _spill_slot(ins, where)
        if ins.opcode == "st.local":
            if len(ins.operands) != 2 or not isinstance(ins.operands[1], Use):
                raise KernelError(f"{where}: expected 'st.local SLOT, %VALUE'")
            value = ins.operands[1].name
            type_ = self.program.values[value].type
            if self.spills == "compiler":
                return f"{self._slot_name(slot, type_)} = {self.use(value)}"
            self.stores += 1
            if type_ == "f16x2":      # a pair of halves: two float16 cells per 4-byte slot
                return f"spill_f16[{2 * slot}], spill_f16[{2 * slot + 1}] = {self.use(value)}"
            return f"spill_{_array_kind(type_)}[{slot}] = {self.use(value)}"
        type_ = ins.defs[0].type
        if self.spills == "compiler":
            return self._slot_name(slot, type_)
        self.loads += 1
        if type_ == "f16x2":
            return f"(spill_f16[{2 * slot} + spill_zero], spill_f16[{2 * slot + 1} + spill_zero])"
        return f"spill_{_array_kind(type_)}[{slot} + spill_zero]"

    def _slot_name(self, slot: int, type_: str) -> str:
        """The variable of one spill slot and kind (``--spills compiler``): ``slot_N_T``, or with a ``v_`` prefix
        and ``_`` suffixes when a value or parameter already has that name."""
        key = (slot, _array_kind(type_))
        if key not in self.slot_names:
            self.slot_names[key] = _identifier(f"slot_{slot}_{key[1]}", self.taken)
        return self.slot_names[key]

    # -- control flow (the tree from engine.ir.cfg) ----------------------------------------------
    def node(self, node, depth: int) -> None:
        """Emit one node of the structure tree at indentation ``depth``."""
        getattr(self, "_" + type(node).__name__.lower())(node, depth)

    def _seq(self, node: Seq, depth: int) -> None:
        for item in node.items:
            self.node(item, depth)

    def _code(self, node: Code, depth: int) -> None:
        self.current = {}
        for ii, ins in enumerate(self.program.blocks[node.index].instructions):
            self.instruction(depth, node.index, ii, ins)
        self.close_loads(depth)

    def _loop(self, node: Loop, depth: int) -> None:
        self.emit(depth, "while True:")
        self._body(node.body, depth + 1)

    def _if(self, node: If, depth: int) -> None:
        self.owner = self.last_cbr       # the ``if`` is the branch that ended the block before it
        self.emit(depth, f"if {'not ' if node.negated else ''}{self.use(node.cond)}:")
        self.owner = None
        self._body(node.then, depth + 1)
        if node.orelse is not None:
            self.emit(depth, "else:")
            self._body(node.orelse, depth + 1)

    def _break(self, node: Break, depth: int) -> None:
        self.emit(depth, "break")

    def _return(self, node: Return, depth: int) -> None:
        self.emit(depth, "return")

    def _body(self, body: Seq, depth: int) -> None:
        before = len(self.lines)
        self.node(body, depth)
        if len(self.lines) == before:
            self.emit(depth, "pass")


def _spill_slot(ins: Instruction, where: str) -> int:
    """The local-memory slot of spill code (see :func:`engine.ir.spill.spill_slot`), or a one-line error."""
    slot = spill_slot(ins)
    if slot is None:
        raise KernelError(f"{where}: a spill slot must be an integer in 0..{MAX_SPILL_SLOT}")
    return slot


#: types that can cross blocks in a carry array (f16 pairs are tuples, predicates booleans: they stay variables)
_CARRY_TYPES = {"f32": "f32", "i32": "i32", "u64": "u64", "f64": "f64"}


def _array_kind(type_: str) -> str:
    return {"f32": "f32", "i32": "i32", "f16x2": "f16", "u64": "u64", "f64": "f64"}.get(type_, "f32")


def _address(pointer: str, element: int) -> str:
    """``pointer + element`` in unsigned arithmetic (both sides uint64, so numba stays in integers)."""
    if element == 0:
        return pointer
    return f"{pointer} + uint64({element})" if element > 0 else f"{pointer} - uint64({-element})"


def kernel_body(plan: Plan, spills: str = "plan", trips: dict | None = None,
                load_order: str = "barrier") -> tuple[str, "_Writer", str, list]:
    """The kernel function's text and the writer that made it (parameters, spill counts)."""
    if spills not in SPILL_MODES:
        raise KernelError(f"unknown spill mode {spills!r} (known: {', '.join(SPILL_MODES)})")
    if load_order not in LOAD_ORDERS:
        raise KernelError(f"unknown load order {load_order!r} (known: {', '.join(LOAD_ORDERS)})")
    program = adjust_trips(plan.program, trips)
    w = _Writer(plan.with_(program=program) if trips else plan, spills, LOAD_ORDERS[load_order])
    try:
        tree = structure(program)
    except StructureError as exc:
        raise KernelError(str(exc)) from None
    w.node(tree, 1)
    slots = 1 + max([_spill_slot(i, f"instruction {k} ({excerpt(str(i), 60)})")
                     for k, i in enumerate(program.instructions) if i.opcode in ("st.local", "ld.local")], default=-1)
    head = []
    text_so_far = "\n".join(w.lines)
    for kind, numba_type in (("f32", "float32"), ("i32", "int32"), ("u64", "uint64"), ("f64", "float64")):
        n = sum(1 for t, _ in w.carry_slots.values() if t == kind)
        if n and f"carry_{kind}[" in text_so_far:
            head.append(f"    carry_{kind} = cuda.local.array({n}, {numba_type})   # values crossing blocks")
    if spills == "plan" and slots:
        for kind, numba_type in (("f32", "float32"), ("i32", "int32"), ("u64", "uint64"), ("f64", "float64")):
            if f"spill_{kind}[" in "\n".join(w.lines):
                head.append(f"    spill_{kind} = cuda.local.array({slots}, {numba_type})")
        if "spill_f16[" in "\n".join(w.lines):
            head.append(f"    spill_f16 = cuda.local.array({2 * slots}, float16)   # f16x2 values: two halves a slot")
    name = _identifier(program.name, set(), _MODULE_NAMES)
    params = w.params + ["spill_zero"]
    text = "\n".join([f"def {name}({', '.join(params)}):"] + head + w.lines) + "\n"
    w.head_lines = 1 + len(head)
    return text, w, name, params


#: the simulator's warp shuffle every module carries (kernels/templates/helpers.py after its marker)
_HELPERS = template_text("helpers")


def _format_template(text: str, placeholder: str = "KERNEL_FUNCTION") -> str:
    """A template's text as a ``str.format`` pattern whose only field is ``{name}`` (at each ``placeholder``)."""
    if text.count(placeholder) != 2:
        raise ValueError(f"kernels/templates/main.py must name {placeholder} exactly twice")
    return text.replace("{", "{{").replace("}", "}}").replace(placeholder, "{name}")


#: ``kernel()`` and the ``python kernel.py`` entry point (kernels/templates/main.py after its marker)
_MAIN = _format_template(template_text("main"))
#: the same for a program file's module, with the kernel without spill code as ``{reference}``
_MAIN_PROGRAM = _format_template(template_text("main_program")).replace("REFERENCE_FUNCTION", "{reference}")


def _constants(plan: Plan, w: _Writer, params: list, signature: str, harness: Harness | None,
               trips: dict | None, facts: PlanFacts | None = None) -> list[str]:
    """The module's constants: those of every kernel module, then the harness's (numbers only)."""
    options = plan.options or {}
    lines = [f"WORKLOAD = {_literal(plan.workload or {})}", f"ALLOCATOR = {str(plan.allocator)!r}",
             f"KERNEL = {str(plan.program.name)!r}",
             f"MAX_REGISTERS = {int(plan.budget)}", f"PARAMS = {tuple(params)!r}",
             f"ARRAYS = {tuple(w.array_params)!r}", f"SIGNATURE = {signature!r}",
             f"THREADS_PER_BLOCK = {int(options.get('threads_per_block', 128))}"]
    if harness is not None:
        try:
            trips = trips or (facts.trips if facts is not None else loop_trips(plan.program))
        except StructureError as exc:
            raise KernelError(str(exc)) from None
        for key, value in harness.constants(plan, trips).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or key not in harness.constant_names:
                raise KernelError(f"harness {harness.name!r}: constant {key!r} = {excerpt(value)} is not one of "
                                  "its CONSTANTS or not a number")
            lines.append(f"{key} = {_literal(value)}")
    return lines


def _literal(value) -> str:
    """A JSON-like value (a checked plan's workload) as Python source: numbers through int/float, strings
    through repr, containers rebuilt; anything else is refused."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{repr(str(k))}: {_literal(v)}" for k, v in value.items()) + "}"
    raise KernelError(f"a plan field holds {type(value).__name__}, which a kernel module cannot carry")


def _signature(program: Program, params: list, arrays: list) -> str:
    types = {ins.operands[0].text: ins.defs[0].type for ins in program.instructions if ins.opcode == "param"}
    unknown = [p for p in params[:-1] if p not in arrays and types[p] not in NUMBA_TYPES]
    if unknown:
        raise KernelError(f"parameter {unknown[0]} has type {types[unknown[0]]}, which a kernel cannot take")
    parts = ["float32[::1]" if p in arrays else NUMBA_TYPES[types[p]] for p in params[:-1]]
    return f"void({', '.join(parts + ['int32'])})"


#: the longest short kernel name (longer ones end in a digest of the whole name, so they stay distinct)
MAX_ENTRY_NAME = 64


def entry_name(plan: Plan) -> str:
    """The kernel's name in its PTX and SASS, instead of numba's mangled one (about 240 characters):
    ``regtune_<program>_<allocator>``, letters, digits and underscores only.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> program = parse(".kernel gemm_m8n8k8_t8x8_k_outer\\n.block entry\\n  exit\\n")
    >>> entry_name(Plan(program, {}, {}, 255, "chaitin-briggs"))
    'regtune_gemm_m8n8k8_t8x8_k_outer_chaitin_briggs'
    """
    name = re.sub(r"[^A-Za-z0-9_]", "_", f"regtune_{plan.program.name}_{plan.allocator}")
    if len(name) <= MAX_ENTRY_NAME:
        return name
    return f"{name[:MAX_ENTRY_NAME - 9]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def without_spill_code(plan: Plan) -> Plan:
    """The plan with the program without its spill code (:func:`engine.ir.spill.remove_spill_code`) and no
    spills: the kernel a plan's kernel is compared with (compiler spills)."""
    if not has_spill_code(plan.program, plan.spills):
        return plan
    return plan.with_(program=remove_spill_code(plan.program, plan.spills), spills={})


def _reference_function(plan: Plan, trips: dict | None, name: str, load_order: str,
                        facts: PlanFacts | None = None) -> tuple[str, str]:
    """The text and name of the kernel function without the plan's spill code, for a program file's module."""
    reference = facts.plain if facts is not None else without_spill_code(plan)
    renamed = Program(f"{plan.program.name}_without_spill_code", reference.program.blocks)
    body, _, ref_name, _ = kernel_body(reference.with_(program=renamed), "compiler", trips, load_order)
    if ref_name == name:
        raise KernelError(f"kernel name {name!r} is taken by its version without spill code; rename the kernel")
    return body, ref_name


def kernel_source(plan: Plan, spills: str = "plan", trips: dict | None = None,
                  load_order: str = "barrier", facts: PlanFacts | None = None) -> KernelSource:
    """The kernel module for ``plan``: its schedule, tiling and budget, spill code as ``spills`` says, the
    placement of its global loads kept as ``load_order`` says (:data:`LOAD_ORDERS`).

    ``trips`` (loop label -> trip count) shortens counted loops, for simulator runs of MHA. ``facts``: the
    caller's :class:`kernels.facts.PlanFacts` of ``plan`` (its loop trips, its program without spill code).
    """
    body, w, name, params = kernel_body(plan, spills, trips, load_order)
    signature = _signature(plan.program, params, w.array_params)
    harness = harness_for(plan)
    if harness is not None and name in harness.names:
        raise KernelError(f"kernel name {name!r} is a name the {harness.name} harness binds; rename the kernel")
    header = ('"""A RegTune kernel (the plan, its program and budget: ALLOCATOR, KERNEL and MAX_REGISTERS below).\n\n'
              "Generated from a RegTune plan. It realizes the plan's instruction order, tiling and register\n"
              "cap; ptxas allocates registers again, so the plan's register names are not what the GPU gets.\n"
              + ("Planned spill code is kept: stores go to spill_*[SLOT], reloads read spill_*[SLOT + spill_zero]\n"
                 "(spill_zero is 0 at run time), which NVVM cannot fold away.\n" if w.stores or w.loads else "")
              + LOAD_ORDERS[load_order].note
              + 'Run it: python THIS_FILE.py (a GPU, or NUMBA_ENABLE_CUDASIM=1 for numba\'s simulator)."""\n')
    constants = _constants(plan, w, params, signature, harness, trips, facts)
    main, reference = "", ""
    if harness is not None and harness.main == "main_program":
        reference, ref_name = _reference_function(plan, trips, name, load_order, facts)
        reference = "\n\n" + reference
        main = _MAIN_PROGRAM.format(name=name, reference=ref_name)
    elif harness is not None:
        main = _MAIN.format(name=name)
    parts = [header, "import math\nimport sys\n\nimport numpy as np\nfrom numba import config, cuda, "
             "float32, int32, int64, uint64\nfrom numba.types import float16\n", "\n".join(constants) + "\n",
             _HELPERS, "\n\n" + body + reference, "\n\n" + harness.text if harness else "", main]
    # the first line of w.lines in the module: after the parts before the body (joined by "\n"), the body's own
    # leading "\n\n" and its def line and local arrays (a program file's reference kernel comes after the body)
    first = "\n".join(parts[:4]).count("\n") + 4 + w.head_lines
    ir_lines = tuple((first + j, ir) for j, ir in enumerate(w.line_ir) if ir is not None)
    return KernelSource("\n".join(parts), name, tuple(params), tuple(w.array_params), signature, spills,
                        w.stores, w.loads, plan.budget, registers_used(plan.assignment), entry_name(plan), body,
                        ir_lines, load_order, w.barriers)


def _module_names() -> set:
    """Every name the generated module binds at its top level (helpers, constants, imports): the kernel
    function's name must be none of them (nor a name its body reads)."""
    names = set(_RESERVED)
    for text in (_HELPERS, _MAIN.format(name="kernel_function"),
                 _MAIN_PROGRAM.format(name="kernel_function", reference="reference_function"),
                 *(h.text for h in HARNESSES.values())):
        names |= bound_names(text)
    names.update(("WORKLOAD", "ALLOCATOR", "KERNEL", "MAX_REGISTERS", "PARAMS", "ARRAYS", "SIGNATURE",
                  "THREADS_PER_BLOCK", "M", "N", "K", "MATRICES_PER_BLOCK", "TOLERANCE", "HEADS", "GROUPS",
                  "HEAD_DIM", "SEQ_LEN", "TPR", "BC", "TRIPS", "sys", "np", "math", "config", "cuda",
                  "float32", "int32", "int64", "uint64"))
    names.update(n for h in HARNESSES.values() for n in h.constant_names)
    return names


#: what a kernel body reads besides its own names: builtins and the module's imports
_RESERVED = frozenset(_RESERVED | set(dir(builtins)))
_MODULE_NAMES = frozenset(_module_names())
