"""A deterministic interpreter for the IR, on virtual or physical registers.

Invariant: the observable behaviour of a run is its sequence of global and
shared stores (space, address, value) and nothing else, so a program and
its allocated, spill-coded form behave the same exactly when their store
traces are equal. Every input (parameters, memory never written) is a
pure function of the seed and its address, and every operation is a pure
function of its opcode and operand bits, so two runs with one seed agree
bit for bit unless the programs really differ.

Both modes share one decoded form: a value is a tuple of 32-bit words.
On virtual registers the words are keyed by value name; on physical
registers by register number, so two values given one register really do
overwrite each other, and a register never written reads as seed-dependent
garbage.

Semantics: integer arithmetic on the value's bits masked to its width
(``add``, ``sub``, ``mul``, ``fma``, ``mov``, ``cvt``), unsigned
quotient and remainder for ``div.u*`` and ``rem.u*`` (by zero: all ones and
the dividend); ``max``, ``min``, ``setp.<cmp>`` and ``mul.wide.s32`` read
their operands as signed integers at their type's width (an i32's bit 31 is
its sign, as in PTX's ``.s32`` and the Numba kernel: :func:`signed_bits`), a mixing hash for
every other opcode (``exp``, ``rcp``, unknown opaque opcodes). ``shfl``
returns its first operand (one thread). A load or store address is the sum
of all its operands but, for stores, the last one (the stored value).
``param NAME`` and the special registers (``sreg.tid.x`` and the like, no
operands) read the run's inputs, drawn per seed from an
:class:`engine.check.inputs.InputModel` (default :data:`engine.check.inputs.GENERIC`):
pointers, sizes and thread indices in the ranges the model gives.

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse('''.kernel k
... .block entry
...   %pa:u64 = param A
...   %x:i32 = mov 5
...   %y:i32 = add %x, %x
...   st.global %pa, 4, %y
...   exit
... ''')
>>> t = run(p, seed=0)
>>> [value for _, _, value in t.stores]
[10]
>>> run(p, seed=0, registers={"pa": (0, 1), "x": (2,), "y": (2,)}).stores == t.stores
True
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

from engine.base.errors import InterpreterError, TimeLimitError
from engine.base.limits import MAX_STEPS
from engine.check.inputs import GENERIC, Input, InputModel
from engine.ir.core import Imm, Instruction, Program, Use
from engine.ir.immediates import MASK32, MASK64, immediate, mix, text_tag

MASKS = {0: 1, 1: MASK32, 2: MASK64}
_COMPARE = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}
_OPERATOR = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
FMA, LOCAL_LOAD, LOCAL_STORE, NARROW1, POINTER_LOAD, POINTER_STORE, NARROW, OP, LOAD, STORE, BRANCH, CBRANCH, EXIT = range(13)


def _signed(x: int) -> int:
    """The 64-bit pattern of ``x`` as a signed integer."""
    x &= MASK64
    return x - (1 << 64) if x >> 63 else x


def _signed32(x: int) -> int:
    """The low 32 bits of ``x`` as a signed integer (an i32 value, or an immediate read as one)."""
    x &= MASK32
    return x - (1 << 32) if x >> 31 else x


_SIGNED = {32: _signed32, 64: _signed}
#: the opcodes that read their operands as signed integers, at their type's width (:func:`signed_bits`)
SIGNED_OPCODES = frozenset({"max", "min", "setp", "mul.wide.s32"})


@dataclass
class Trace:
    """What a run did: its stores, step count, executions per instruction and the ways its conditional
    branches went (``taken``: (instruction, condition) pairs; a ``cbr`` whose guard was false is not there).

    ``state`` is set only by a run given ``stop_after``: its register words
    (keyed by ``name#k`` or register number) and memory cells written or
    read, after its last step.
    """

    stores: list[tuple[str, int, int]] = field(default_factory=list)
    steps: int = 0
    executed: list[int] = field(default_factory=list)
    state: tuple[dict, dict] | None = None
    taken: frozenset = frozenset()


_FIXED = {
    ("mov", 1): lambda ops, k, s: ops[0], ("cvt", 1): lambda ops, k, s: ops[0],
    ("sub", 2): lambda ops, k, s: ops[0] - ops[1], ("mul", 2): lambda ops, k, s: ops[0] * ops[1],
    ("fma", 3): lambda ops, k, s: ops[0] * ops[1] + ops[2],
}


def _add(ops, k, s):
    return sum(ops)


def _first(ops, k, s):
    return ops[0]


def _max(ops, k, s):
    return max(_signed(x) for x in ops)


def _max32(ops, k, s):
    return max(_signed32(x) for x in ops)


def _min(ops, k, s):
    return min(_signed(x) for x in ops)


def _min32(ops, k, s):
    return min(_signed32(x) for x in ops)


def _mul_wide_s32(ops, k, s):
    return _signed32(ops[0]) * _signed32(ops[1])


_EXTREMES = {("max", 64): _max, ("max", 32): _max32, ("min", 64): _min, ("min", 32): _min32}
for (_name, _bits), _fn in _EXTREMES.items():
    _fn.extreme, _fn.bits = _name, _bits          # what the compiled path writes inline
_mul_wide_s32.wide_signed = True


def _input(ops, k, s):
    """An input's value (its key is the one read): result 0 is the value, any further result a hash of it."""
    return ops[0] if not k else mix(ops[0], k)


def _div(ops, k, s):
    return ops[0] // ops[1] if ops[1] else MASK64


def _rem(ops, k, s):
    return ops[0] % ops[1] if ops[1] else ops[0]


#: the functions of known meaning the compiled path writes inline, and the helpers it calls
_FIXED_FUNCTIONS = {"mov": _FIXED["mov", 1], "cvt": _FIXED["cvt", 1], "sub": _FIXED["sub", 2],
                    "mul": _FIXED["mul", 2], "fma": _FIXED["fma", 3], "add": _add, "first": _first,
                    "input": _input, "signed": _signed, "signed32": _signed32, "max": _max}


def input_of(ins: Instruction) -> str | None:
    """The input an instruction reads: ``param``'s symbol, ``%tid.x`` for ``sreg.tid.x``; None for others."""
    if ins.opcode == "param" and ins.operands and type(ins.operands[0]) is Imm:
        return ins.operands[0].text
    if ins.opcode.startswith("sreg.") and not ins.operands:
        return "%" + ins.opcode[5:]
    return None


def signed_bits(ins: Instruction, wide) -> int:
    """The width at which a signed opcode (:data:`SIGNED_OPCODES`) reads its operands: ``max``/``min`` at their
    result's, ``setp`` at its first value operand's (64 when it has none), ``mul.wide.s32`` at 32; ``wide(name)``
    says whether a value is 64-bit. 64 for every other opcode (unused there).

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction
    >>> signed_bits(parse_instruction("%p:pred = setp.lt %i, 0"), lambda n: False)
    32
    >>> signed_bits(parse_instruction("%m:u64 = max %a, %b"), lambda n: True)
    64
    """
    base = ins.opcode.partition(".")[0]
    if ins.opcode == "mul.wide.s32":
        return 32
    if base in ("max", "min"):
        return 64 if ins.defs and ins.defs[0].width == 2 else 32
    if base == "setp":
        first = next((op for op in ins.operands if type(op) is Use), None)
        return 64 if first is None or wide(first.name) else 32
    return 64


def _compute(ins: Instruction, bits: int = 64):
    """The function of operand bits an opcode computes (result k of the instruction); ``bits``: the width a
    signed opcode reads its operands at (:func:`signed_bits`)."""
    base, _, modifier = ins.opcode.partition(".")
    n = len(ins.operands)
    if ins.opcode == "mul.wide.s32" and n == 2:
        return _mul_wide_s32
    fn = _FIXED.get((base, n))
    if fn:
        return fn
    if input_of(ins) is not None:
        return _input
    if base == "param":
        return lambda ops, k, seed: mix(seed, k)
    if base in ("div", "rem") and n == 2 and modifier.startswith("u"):
        return _div if base == "div" else _rem
    if base == "add":
        return _add
    if base == "shfl" and n:
        return _first
    if base in ("max", "min") and n:
        return _EXTREMES[base, bits]
    cmp = _COMPARE.get(modifier.split(".")[0])
    if base == "setp" and n == 2 and cmp:
        read = _SIGNED[bits]
        fn = lambda ops, k, s: int(cmp(read(ops[0]), read(ops[1])))
        fn.compare = _OPERATOR[modifier.split(".")[0]]    # what the compiled path writes inline
        fn.bits = bits
        return fn
    tag = text_tag(ins.opcode)
    fn = lambda ops, k, s: mix(tag, k, *ops)
    fn.hash_tag = tag
    return fn


def _kind(ins: Instruction, labels: dict):
    base, _, modifier = ins.opcode.partition(".")
    if ins.opcode == "exit":
        return EXIT, None
    if ins.opcode == "br":
        return BRANCH, labels[ins.targets[0]]
    if ins.opcode == "cbr":
        return CBRANCH, (labels[ins.targets[0]], labels[ins.targets[1]])
    if base in ("ld", "st"):
        return (LOAD if base == "ld" else STORE), modifier.split(".")[0]
    return OP, None


def _decode(program: Program, keys: dict) -> tuple[list[tuple], dict, tuple]:
    """Each instruction as (kind, reads, writes, guard key, negated, function, extra), the constants and
    the inputs (an input is read from the key ``"$name"`` every run starts with).

    A read is one register key, or a pair of keys for a 64-bit value; an
    immediate is read from a constant key (``"#bits"``) that every run
    starts with, so reading never branches on the operand's kind. The
    commonest shapes get kinds of their own and the interpreter's shortest
    paths: an operation on single words (``NARROW``, ``NARROW1`` with one
    result, ``FMA`` inline), a one-word load and store through a 64-bit
    address and an offset (``POINTER_LOAD``, ``POINTER_STORE``), and spill
    stores and reloads with a constant slot (``LOCAL_STORE``, ``LOCAL_LOAD``).
    """
    labels = dict(zip((b.name for b in program.blocks), program.block_starts))
    state = _DecodeState(keys, labels)
    code = []
    for ins in program.instructions:
        guard = keys[ins.guard][0] if ins.guard is not None else None
        entry = _spill_entry(ins, keys, guard) if ins.opcode in _SPILL_OPCODES else None
        name = input_of(ins) if entry is None else None
        code.append(entry or state.entry(ins, guard, (state.input(ins, name),) if name else None))
    return code, state.constants, pointers_by_name(state.inputs)


def pointers_by_name(inputs: dict) -> tuple[Input, ...]:
    """The inputs with the pointers numbered in the order of their names, not of the instructions that read
    them: a program reordered within its dependences draws the same inputs."""
    rank = {n: k for k, n in enumerate(sorted(n for n, i in inputs.items() if i.pointer is not None))}
    return tuple(Input(i.name, rank[i.name]) if i.pointer is not None else i for i in inputs.values())


_SPILL_OPCODES = frozenset({"ld.local", "st.local"})


class _DecodeState:
    """What decoding shares between instructions: read keys per value, constant keys per immediate, shapes."""

    def __init__(self, keys: dict, labels: dict):
        self.keys, self.labels = keys, labels
        self.read_key = {name: k[0] if len(k) == 1 else k for name, k in keys.items()}
        self.wide = {name for name, k in keys.items() if len(k) == 2}
        self.constants: dict[str, int] = {}
        self.constant_key: dict[str, str] = {}
        self.shapes: dict = {}
        self.inputs: dict[str, Input] = {}
        self.pointers = 0

    def input(self, ins: Instruction, name: str) -> str:
        """The key an input is read from; a 64-bit parameter is the next pointer."""
        if name not in self.inputs:
            pointer = ins.opcode == "param" and len(ins.defs) == 1 and ins.defs[0].type == "u64"
            self.inputs[name] = Input(name, self.pointers if pointer else None)
            self.pointers += pointer
        return f"${name}"

    def constant(self, text: str) -> str:
        key = self.constant_key.get(text)
        if key is None:
            bits = _immediate(text)
            key = self.constant_key[text] = f"#{bits}"
            self.constants[key] = bits
        return key

    def entry(self, ins: Instruction, guard, reads: tuple | None = None) -> tuple:
        read_key, keys, defs = self.read_key, self.keys, ins.defs
        if reads is None:
            reads = tuple([self.constant(op.text) if type(op) is Imm else read_key[op.name] for op in ins.operands])
        bits = signed_bits(ins, self.wide.__contains__) if ins.opcode.partition(".")[0] in SIGNED_OPCODES \
            or ins.opcode in SIGNED_OPCODES else 64
        kind, fn, extra = _shape(ins, self.labels, self.shapes, bits)
        one_word = len(defs) == 1 and defs[0].width < 2
        if kind == OP and self.wide.isdisjoint(ins.uses) and (one_word or all(d.width < 2 for d in defs)):
            if one_word:
                kind = FMA if fn is _FIXED["fma", 3] else NARROW1  # the commonest operation inline
                return kind, reads, (keys[defs[0].name][0], MASKS[defs[0].width]), guard, ins.guard_negated, fn, extra
            writes = tuple([(keys[d.name][0], MASKS[d.width]) for d in defs])
            return NARROW, reads, writes, guard, ins.guard_negated, fn, extra
        writes = tuple([(keys[d.name], MASKS[d.width]) for d in defs])
        pointer = len(reads) >= 2 and type(reads[0]) is tuple and not any(type(r) is tuple for r in reads[1:])
        if kind == LOAD and one_word and pointer and len(reads) == 2:
            kind, extra = POINTER_LOAD, (extra, text_tag(extra), writes[0][0][0], writes[0][1])
        elif kind == STORE and pointer and len(reads) == 3:
            kind = POINTER_STORE  # a 64-bit address, an offset, a one-word value
        return kind, reads, writes, guard, ins.guard_negated, fn, extra


def _spill_entry(ins: Instruction, keys: dict, guard) -> tuple | None:
    """A spill store (constant slot, one-word value) or reload (constant slot, one-word result); None otherwise.

    Its memory key is fixed at decode time.
    """
    operands = ins.operands
    if not operands or type(operands[0]) is not Imm:
        return None
    where = _local_slot(operands[0].text)
    if ins.opcode == "st.local" and len(operands) == 2 and type(operands[1]) is Use:
        value = keys[operands[1].name]
        return (LOCAL_STORE, (None, value[0]), (), guard, ins.guard_negated, None, where) if len(value) == 1 else None
    if ins.opcode == "ld.local" and len(operands) == 1 and len(ins.defs) == 1 and ins.defs[0].width < 2:
        d = ins.defs[0]
        return LOCAL_LOAD, (), (), guard, ins.guard_negated, None, (where, keys[d.name][0], MASKS[d.width])
    return None


@functools.lru_cache(maxsize=1 << 16)
def _local_slot(text: str) -> tuple[str, int]:
    """The memory key of a local slot written as ``text``."""
    return "local", _immediate(text) & MASK64


def _shape(ins: Instruction, labels: dict, shapes: dict, bits: int = 64) -> tuple:
    """(kind, function, extra) of an instruction; shared by every instruction of one opcode, arity and signed
    width (``bits``, :func:`signed_bits`)."""
    if ins.opcode in ("br", "cbr", "exit", "param"):
        kind, extra = _kind(ins, labels)
        return kind, _compute(ins), extra
    key = (ins.opcode, len(ins.operands), bits)
    shape = shapes.get(key)
    if shape is None:
        kind, extra = _kind(ins, labels)
        shape = shapes[key] = (kind, _compute(ins, bits), extra)
    return shape


@functools.lru_cache(maxsize=4096)
def _immediate(text: str) -> int:
    return immediate(text)


def _virtual_keys(program: Program) -> dict:
    """Each value's words keyed by name (``x#0``, ``x#1``)."""
    return {name: (f"{name}#0",) if v.width < 2 else (f"{name}#0", f"{name}#1") for name, v in program.values.items()}


def _physical_keys(program: Program, assignment: dict) -> dict:
    """Each value's words keyed by register number (predicates by name: they hold no general register)."""
    keys = {}
    for name, value in program.values.items():
        if value.width == 0:
            keys[name] = (f"{name}#0",)
            continue
        regs = assignment.get(name)
        if regs is None or len(regs) != value.width:
            raise InterpreterError(f"%{name} has no register of its width in the assignment")
        keys[name] = regs if type(regs) is tuple else tuple(regs)
    return keys


class _Diverged(Exception):
    """Lockstep ended: the seeds took different paths."""


class _Stopped(Exception):
    """A run given ``stop_after`` has made that many steps."""


class _Run:
    """Seeds run in lockstep through one decoded program: registers, memory and trace per seed.

    One seed is an ordinary run. Several share the fetch and dispatch of
    each instruction while they take the same path; a branch that sends
    them apart raises :class:`_Diverged` (see :func:`run_together`).
    """

    def __init__(self, program: Program, prepared: tuple, seeds, registers: dict | None, max_steps: int,
                 deadline: float | None = None, model: InputModel = GENERIC, stop_after: int | None = None):
        self.program, self.max_steps, self.deadline, self.stop_after = program, max_steps, deadline, stop_after
        self.code, constants, inputs = prepared
        self.traces = [Trace(executed=[0] * len(self.code)) for _ in seeds]
        self.taken: set = set()
        self.lanes = [({**_initial_env(seed, registers), **constants, **_input_env(inputs, model, seed)}, {}, seed,
                       trace.stores) for seed, trace in zip(seeds, self.traces)]
        self.start = (0, 0)     # the pc and step count the loop starts from (see compiled)

    def compiled(self, compiled) -> list[Trace] | None:
        """Run the lanes on the compiled path (:mod:`engine.check.interp_compiled`): their traces, exactly the
        loop's; None where the loop must run them instead (a lockstep whose paths part or that fails; an error,
        which the loop reports). A single lane stopped by the step limit continues in the loop from where it
        was (a segment's start), registers and memory as they were."""
        from engine.check.interp_compiled import Memory

        results = []
        self.lanes = [(env, Memory(seed), seed, stores) for env, _, seed, stores in self.lanes]
        for env, memory, seed, stores in self.lanes:
            try:
                results.append(compiled.execute(env, memory, seed, stores, self.max_steps, self.deadline, self._where))
            except TimeLimitError:
                raise
            except Exception:   # noqa: BLE001 - the loop runs it again from the start and reports the error
                return None
        if len(results) > 1 and (any(r[4] is not None for r in results)
                                 or any(r[1] != results[0][1] for r in results[1:])):
            return None
        taken = frozenset().union(*(r[2] for r in results))
        executed = compiled.executed(results[0][0])
        _, _, _, steps, handed_back = results[0]
        if handed_back is not None:         # one lane at the step limit: the loop takes it from there
            pc, registers = handed_back
            self.lanes[0][0].update(registers)
            self.traces[0].executed = executed
            self.taken = set(taken)
            self.start = (pc, steps)
            return self.execute()
        for trace in self.traces:
            trace.steps, trace.executed, trace.taken = steps, executed, taken
        return self.traces

    def execute(self) -> list[Trace]:
        executed = self.traces[0].executed
        try:
            steps = self._loop(executed)
        except _Stopped:
            steps = self.stop_after
        taken = frozenset(self.taken)
        for trace, (env, memory, _, _) in zip(self.traces, self.lanes):
            trace.steps, trace.executed, trace.taken = steps, executed, taken
            if self.stop_after is not None:
                trace.state = ({k: v for k, v in env.items() if not str(k).startswith(("#", "$"))}, dict(memory))
        return self.traces

    def _loop(self, executed: list) -> int:
        code, lanes = self.code, self.lanes
        (pc, steps), n = self.start, len(code)
        limit = self._checkpoint(steps, pc)
        try:
            while pc < n:
                kind, reads, writes, guard, negated, fn, extra = code[pc]
                steps += 1
                if steps > limit:
                    limit = self._checkpoint(steps, pc)
                executed[pc] += 1
                if kind >= BRANCH:
                    pc = self._jump(pc, kind, reads, guard, negated, extra)
                    continue
                for env, memory, seed, stores in lanes:
                    if guard is not None and bool(env[guard]) == negated:
                        continue
                    if kind == FMA:
                        a, b, c = reads
                        env[writes[0]] = (env[a] * env[b] + env[c]) & writes[1]
                        continue
                    if kind == LOCAL_LOAD:
                        where, key, mask = extra
                        value = memory.get(where)
                        env[key] = (value if value is not None else _load(memory, seed, "local", where[1], 0)) & mask
                        continue
                    if kind == LOCAL_STORE:
                        memory[extra] = env[reads[1]]
                        continue
                    if kind == NARROW1:
                        env[writes[0]] = fn([env[k] for k in reads], 0, seed) & writes[1]
                        continue
                    if kind == POINTER_LOAD:
                        space, tag, key, mask = extra
                        p, offset = reads
                        where = (space, ((env[p[0]] | env[p[1]] << 32) + env[offset]) & MASK64)
                        value = memory.get(where)
                        if value is None:
                            value = memory[where] = mix(seed, tag, where[1])
                        env[key] = value & mask
                        continue
                    if kind == POINTER_STORE:
                        p, offset, x = reads
                        addr, value = ((env[p[0]] | env[p[1]] << 32) + env[offset]) & MASK64, env[x]
                        memory[(extra, addr)] = value
                        if extra != "local":
                            stores.append((extra, addr, value))
                        continue
                    if kind == NARROW:
                        ops = [env[k] for k in reads]
                        for k, (key, mask) in enumerate(writes):
                            env[key] = fn(ops, k, seed) & mask
                        continue
                    ops = [env[k] if type(k) is not tuple else env[k[0]] | env[k[1]] << 32 for k in reads]
                    if kind == STORE:
                        addr = sum(ops[:-1]) & MASK64
                        memory[(extra, addr)] = ops[-1]
                        if extra != "local":
                            stores.append((extra, addr, ops[-1]))
                        continue
                    for k, (keys, mask) in enumerate(writes):
                        value = (_load(memory, seed, extra, sum(ops) & MASK64, k) if kind == LOAD
                                 else fn(ops, k, seed)) & mask
                        env[keys[0]] = value & MASK32
                        if len(keys) == 2:
                            env[keys[1]] = value >> 32
                pc += 1
        except KeyError:
            raise self.undefined(pc) from None
        return steps

    def _jump(self, pc: int, kind: int, reads, guard, negated, extra) -> int:
        targets = set()
        for env, _, _, _ in self.lanes:
            if guard is not None and bool(env[guard]) == negated:
                targets.add(pc + 1)
            elif kind == CBRANCH:
                condition = bool(env[reads[0]])
                self.taken.add((pc, condition))
                targets.add(extra[0] if condition else extra[1])
            else:
                targets.add(len(self.code) if kind == EXIT else extra)
        if len(targets) > 1:
            raise _Diverged
        return targets.pop()

    def _checkpoint(self, steps: int, pc: int) -> int:
        """Stop at the step limit or past the deadline; else the step of the next check (every 16k steps,
        so the clock costs nothing per instruction)."""
        if self.stop_after is not None and steps > self.stop_after:
            raise _Stopped
        if steps > self.max_steps:
            raise InterpreterError(f"step limit of {self.max_steps} instructions reached at {self._where(pc)}")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeLimitError(f"{steps} instructions run, stopped at {self._where(pc)}")
        return min(steps + 16384, self.max_steps, self.max_steps if self.stop_after is None else self.stop_after)

    def _where(self, pc: int) -> str:
        return f"instruction {pc} ({self.program.instructions[pc]})"

    def undefined(self, pc: int) -> InterpreterError:
        ins = self.program.instructions[pc]
        env = self.lanes[0][0]
        missing = [u for u in ins.uses if f"{u}#0" not in env]
        name = missing[0] if missing else "?"
        return InterpreterError(f"%{name} is read before any definition at {self._where(pc)}")


def _load(memory: dict, seed: int, space: str, addr: int, k: int) -> int:
    key = (space, (addr + 4 * k) & MASK64)
    if key not in memory:
        memory[key] = mix(seed, text_tag(space), key[1])
    return memory[key]


class Decoded(tuple):
    """:func:`decode`'s result, (code, constants, inputs), and its compiled function once built (see
    :func:`compiled`), so a caller that keeps the one keeps the other."""

    compiled = None
    #: whether runs of it take the compiled path when the caller leaves the choice (None: not decided yet)
    worth = None


def decode(program: Program, registers: dict | None = None) -> Decoded:
    """The decoded program for virtual (``registers`` None) or physical registers: what a run executes.

    A caller that runs one program many times (engine.check.verify.ReferenceRuns)
    decodes it once and passes the result to :func:`run` and :func:`run_together`.
    """
    keys = _virtual_keys(program) if registers is None else _physical_keys(program, registers)
    return Decoded(_decode(program, keys))


#: compile a program (engine.check.interp_compiled) when every run of it executes at least this many
#: instructions per instruction of its text (engine.ir.cfg.run_bound, a lower bound from its counted loops):
#: compiling costs 24-95 us an instruction, what the loop spends on 2.5-19 lockstep executions of it (runs of
#: tests/bench/bench_interp.py on a loaded 2-core machine), so a program below that runs faster on the loop;
#: the bound is a lower one, so the programs compiled pay well (the MHA example runs 120 times its length)
COMPILE_AT = 12


def compiled(decoded: tuple):
    """The compiled function of a decoded program, built the first time and kept on it."""
    from engine.check.interp_compiled import Compiled

    hit = getattr(decoded, "compiled", None)
    if hit is None:
        hit = Compiled(decoded[0], decoded[1], _FIXED_FUNCTIONS)
        if type(decoded) is Decoded:
            decoded.compiled = hit
    return hit


def _wants_compiled(program: Program, decoded: tuple, choice: bool | None, stop_after: int | None) -> bool:
    """The path a run takes (see :func:`run`'s ``compiled_path``); the choice is kept on the decoded program."""
    if stop_after is not None or choice is False:
        return False
    if choice is True:
        return True
    worth = getattr(decoded, "worth", None)
    if worth is None:
        from engine.ir.cfg import run_bound

        try:
            bound = run_bound(program)
        except Exception:  # noqa: BLE001 - a program whose structure is not known runs on the loop
            bound = None
        worth = bound is not None and bound.steps >= COMPILE_AT * len(decoded[0])
        if type(decoded) is Decoded:
            decoded.worth = worth
    return worth


def _input_env(inputs: tuple, model: InputModel, seed: int) -> dict:
    """Each input's value on ``seed``, under the key the decoded program reads it from."""
    return {f"${item.name}": model.value(item, seed) for item in inputs}


def _initial_env(seed: int, registers: dict | None) -> dict:
    """Nothing for virtual registers; seed-dependent garbage in every physical register."""
    if registers is None:
        return {}
    top = max(map(max, filter(None, registers.values())), default=-1) + 1
    return {r: mix(seed, 0xBAD, r) & MASK32 for r in range(top)}


def run_together(program: Program, seeds, registers: dict | None = None, max_steps: int = MAX_STEPS,
                 deadline: float | None = None, model: InputModel = GENERIC,
                 decoded: tuple | None = None, compiled_path: bool | None = None) -> list[Trace] | None:
    """Run several seeds in lockstep: their traces, in the order of ``seeds``; None where that could not be done.

    The traces are exactly those single runs would give (``compiled_path``: as for :func:`run`). When the seeds
    take different paths or a run fails (an undefined value, the step
    limit), the caller runs each seed alone with :func:`run`, which reports
    its own error.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:i32 = ld.global %pa, 0\\n"
    ...           "  st.global %pa, 4, %x\\n  exit\\n")
    >>> [t.stores for t in run_together(p, (0, 1))] == [run(p, 0).stores, run(p, 1).stores]
    True
    """
    decoded = decoded or decode(program, registers)
    try:
        lanes = _Run(program, decoded, tuple(seeds), registers, max_steps, deadline, model)
        if _wants_compiled(program, decoded, compiled_path, None):
            traces = lanes.compiled(compiled(decoded))
            if traces is not None:
                return traces
            lanes = _Run(program, decoded, tuple(seeds), registers, max_steps, deadline, model)
        return lanes.execute()
    except TimeLimitError:
        raise
    except (_Diverged, InterpreterError):
        return None


def run(program: Program, seed: int = 0, registers: dict | None = None, max_steps: int = MAX_STEPS,
        deadline: float | None = None, model: InputModel = GENERIC, decoded: tuple | None = None,
        stop_after: int | None = None, compiled_path: bool | None = None) -> Trace:
    """Execute ``program`` from its first block until ``exit`` or its end.

    Parameters
    ----------
    registers : None to hold values by name, or an assignment
        (value name -> register indices) to run on a physical register file.
    max_steps : the run stops with an error after this many instructions.
    deadline : a ``time.monotonic()`` past which the run stops with an error (None: no time limit).
    model : the ranges the run's inputs (parameters, special registers) are drawn from on ``seed``.
    decoded : :func:`decode`'s result for ``program`` and ``registers``, when the caller keeps it.
    stop_after : end the run after this many steps (or at the program's end) and return its final
        registers and memory in ``Trace.state``.
    compiled_path : True to run on the compiled path (:mod:`engine.check.interp_compiled`), False on the
        loop (the reference the compiled path is tested against), None to let the interpreter choose
        (compiled for a program whose counted loops make every run execute at least :data:`COMPILE_AT` times
        its length; never with ``stop_after``).
        The trace is the same either way.
    """
    decoded = decoded or decode(program, registers)
    if _wants_compiled(program, decoded, compiled_path, stop_after):
        traces = _Run(program, decoded, (seed,), registers, max_steps, deadline, model).compiled(compiled(decoded))
        if traces is not None:
            return traces[0]
    return _Run(program, decoded, (seed,), registers, max_steps, deadline, model, stop_after).execute()[0]
