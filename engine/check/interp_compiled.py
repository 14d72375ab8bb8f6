"""The interpreter's fast path: a decoded program compiled to one Python function, registers as its locals.

Invariant: a run of the compiled function is the run of
:mod:`engine.check.interp`'s loop on the same decoded program, seed and
inputs, instruction for instruction: the same register words, memory
cells, stores, steps, executions per instruction and branch ways. It
differs only in how it gets there: each straight run of instructions
between two jump targets (a *segment*) is straight-line Python code on
local variables, so an instruction costs a few bytecodes instead of a
dispatch through the decoded tuple, a dict lookup per operand and a call.
Whatever it does not do the same way it does not do at all: a read of a
value never written, any other error, or the step limit hands the run back
to the loop (see :func:`engine.check.interp.run`), which reports it in its
own words; only the deadline is its own (the same error, at the segment it
reached).

The decoded form is the one :func:`engine.check.interp.decode` returns and
both paths share; the function is compiled once per decoded program and
kept on it (:attr:`engine.check.interp.Decoded.compiled`).

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.check.interp import run
>>> p = parse(".kernel k\\n.block entry\\n  %pa:u64 = param A\\n  %i:i32 = mov 0\\n.block loop\\n"
...           "  %i:i32 = add %i, 1\\n  st.global %pa, 0, %i\\n  %c:pred = setp.lt %i, 3\\n  cbr %c, loop, done\\n"
...           ".block done\\n  exit\\n")
>>> fast, plain = run(p, 0, compiled_path=True), run(p, 0, compiled_path=False)
>>> fast.stores == plain.stores and fast.executed == plain.executed == [1, 1, 3, 3, 3, 3, 1]
True
"""

from __future__ import annotations

import time

from engine.ir.immediates import MASK32, MASK64, mix, text_tag

#: the kinds of :mod:`engine.check.interp` (kept equal by test_interp_compiled)
FMA, LOCAL_LOAD, LOCAL_STORE, NARROW1, POINTER_LOAD, POINTER_STORE, NARROW, OP, LOAD, STORE, BRANCH, CBRANCH, EXIT = range(13)
_PRIME = 0x100000001B3
#: deadline checks every this many steps, as the loop does
TICK = 16384


class Memory(dict):
    """A lane's memory: a cell never written reads as its input, ``mix(seed, tag(space), address)``, and is
    kept, as the loop's ``_load`` keeps it; so every load is one subscript."""

    __slots__ = ("prefix", "seed")

    def __init__(self, seed: int, cells=()):
        super().__init__(cells)
        self.seed = seed
        self.prefix: dict = {}     # space -> mix(seed, tag(space)): the hash's state before the address

    def __missing__(self, key):
        space, address = key
        h = self.prefix.get(space)
        if h is None:
            h = self.prefix[space] = mix(self.seed, text_tag(space))
        h = ((h ^ (address & MASK64)) * _PRIME) & MASK64   # mix's last step, on the address
        value = self[key] = h ^ h >> 29
        return value


class Compiled:
    """One decoded program as a Python function of one lane, and what maps its results back.

    ``segments``: (first instruction, length) of each segment; ``names``:
    local variable -> register key, for the state handed back to the loop.
    """

    def __init__(self, code: list, constants: dict, fixed: dict):
        self.n = len(code)
        self.segments = _segments(code)
        source, namespace, self.names = _Writer(code, constants, fixed, self.segments).function()
        exec(compile(source, "<engine.check.interp_compiled>", "exec"), namespace)   # noqa: S102 (our own text)
        self.lane = namespace["lane"]
        self.source = source

    def execute(self, env: dict, memory: dict, seed: int, stores: list, max_steps: int, deadline: float | None,
                where) -> tuple:
        """Run one lane: (visits per segment, path, taken, steps, handed back) where ``handed back`` is None
        for a run that ended, else (pc, registers) to continue from in the loop."""
        visits, path, taken = [0] * len(self.segments), [], set()

        def tick(steps: int, pc: int, length: int) -> int:
            if steps + length > max_steps:
                return -1
            if deadline is not None and time.monotonic() > deadline:
                from engine.base.errors import TimeLimitError
                raise TimeLimitError(f"{steps} instructions run, stopped at {where(pc)}")
            return min(steps + TICK, max_steps)

        pc, steps, state = self.lane(env, memory, seed, stores, visits, path, taken, tick, tick(0, 0, 0))
        if pc is None:
            return visits, path, taken, steps, None
        names = self.names
        registers = {names[k]: v for k, v in state.items() if k in names}
        return visits, path, taken, steps, (pc, registers)

    def executed(self, visits: list) -> list[int]:
        """Executions per instruction from visits per segment."""
        out: list[int] = []
        for (_, length), count in zip(self.segments, visits):
            out.extend([count] * length)
        return out


def _segments(code: list) -> list[tuple[int, int]]:
    """Maximal straight runs: each starts at 0, at a jump target or after a jump, and ends before the next."""
    n = len(code)
    leaders = {0}
    for pc, entry in enumerate(code):
        kind, extra = entry[0], entry[6]
        if kind >= BRANCH:
            leaders.add(pc + 1)
            if kind == BRANCH:
                leaders.add(extra)
            elif kind == CBRANCH:
                leaders.update(extra)
    starts = sorted(p for p in leaders if 0 <= p < n)
    return [(s, e - s) for s, e in zip(starts, starts[1:] + [n])]


class _Writer:
    """The function's source: a dispatch on the segment number, each segment straight-line code."""

    def __init__(self, code: list, constants: dict, fixed: dict, segments: list):
        self.code, self.constants, self.fixed = code, constants, fixed
        self.segments = segments
        self.segment_at = {start: k for k, (start, _) in enumerate(segments)}
        self.local: dict = {}        # register key -> local name
        self.namespace: dict = {"mix": mix, "_signed": fixed["signed"], "_signed32": fixed["signed32"]}
        self.objects: dict = {}      # id -> namespace name, for functions and keys
        self.lines: list[str] = []

    # -- names --------------------------------------------------------------------------------------------
    def reg(self, key) -> str:
        """The expression reading one register key (a constant is its literal)."""
        if type(key) is str and key.startswith("#"):
            return repr(self.constants[key])
        name = self.local.get(key)
        if name is None:
            name = self.local[key] = f"v{len(self.local)}"
        return name

    def read(self, key) -> str:
        """One read: a key, or a pair of keys for a 64-bit value."""
        if type(key) is tuple:
            return f"({self.reg(key[0])} | {self.reg(key[1])} << 32)"
        return self.reg(key)

    def obj(self, value, prefix: str) -> str:
        name = self.objects.get(id(value))
        if name is None:
            name = self.objects[id(value)] = f"{prefix}{len(self.objects)}"
            self.namespace[name] = value
        return name

    def target(self, pc: int) -> str:
        """The statement that goes to ``pc`` (the end of the program returns)."""
        if pc >= len(self.code):
            return "return None, steps, None"
        return f"s = {self.segment_at[pc]}; continue"

    # -- the function -------------------------------------------------------------------------------------
    def function(self) -> tuple[str, dict, dict]:
        body: list[str] = []
        self.lines = body
        self._dispatch(0, len(self.segments), 2)
        head = ["def lane(E, mem, seed, stores, visits, path, taken, tick, nxt):"]
        # every key that may be set before the run starts (inputs, physical registers) is read from the
        # lane's initial environment; a key the environment lacks stays unbound, as it is absent in the loop
        start = [(key, name) for key, name in self.local.items() if type(key) is int or key.startswith("$")]
        if start:
            self.namespace["INITIAL"] = tuple(key for key, _ in start)
            head.append(f"    {', '.join(name for _, name in start)}, = map(E.__getitem__, INITIAL)")
        head += ["    steps = 0", "    s = 0", "    while True:"]
        if not self.segments:
            head.append("        return None, steps, None")
        names = {name: key for key, name in self.local.items()}
        return "\n".join(head + body) + "\n", self.namespace, names

    def _dispatch(self, lo: int, hi: int, depth: int) -> None:
        pad = "    " * depth
        if hi - lo == 1:
            self._segment(lo, depth)
            return
        mid = (lo + hi) // 2
        self.lines.append(f"{pad}if s < {mid}:")
        self._dispatch(lo, mid, depth + 1)
        self.lines.append(f"{pad}else:")
        self._dispatch(mid, hi, depth + 1)

    def _segment(self, k: int, depth: int) -> None:
        start, length = self.segments[k]
        pad = "    " * depth
        out = self.lines
        out.append(f"{pad}if steps + {length} > nxt:")
        out.append(f"{pad}    nxt = tick(steps, {start}, {length})")
        out.append(f"{pad}    if nxt < 0: return {start}, steps, locals()")
        out.append(f"{pad}steps += {length}; visits[{k}] += 1; path.append({k})")
        for pc in range(start, start + length):
            self._instruction(pc, depth)
        last = start + length - 1
        if self.code[last][0] < BRANCH:
            out.append(f"{pad}{self.target(last + 1)}")

    def _instruction(self, pc: int, depth: int) -> None:
        kind, reads, writes, guard, negated, fn, extra = self.code[pc]
        pad = "    " * depth
        if kind >= BRANCH:
            self._jump(pc, depth)
            return
        body = self._body(kind, reads, writes, fn, extra)
        if guard is not None:
            self.lines.append(f"{pad}if {'not ' if negated else ''}{self.reg(guard)}:")
            pad += "    "
        self.lines.extend(pad + line for line in body)

    def _jump(self, pc: int, depth: int) -> None:
        kind, reads, _, guard, negated, _, extra = self.code[pc]
        pad = "    " * depth
        out = self.lines
        if guard is not None:
            out.append(f"{pad}if {'' if negated else 'not '}{self.reg(guard)}:")   # the guard fails: fall through
            out.append(f"{pad}    {self.target(pc + 1)}")
        if kind == EXIT:
            out.append(f"{pad}return None, steps, None")
        elif kind == BRANCH:
            out.append(f"{pad}{self.target(extra)}")
        else:
            out.append(f"{pad}if {self.reg(reads[0])}:")
            out.append(f"{pad}    taken.add(({pc}, True)); {self.target(extra[0])}")
            out.append(f"{pad}taken.add(({pc}, False)); {self.target(extra[1])}")

    def _body(self, kind: int, reads, writes, fn, extra) -> list[str]:
        if kind == FMA:
            a, b, c = (self.reg(r) for r in reads)
            return [f"{self.reg(writes[0])} = ({a} * {b} + {c}) & {writes[1]}"]
        if kind == LOCAL_LOAD:
            where, key, mask = extra
            return [f"{self.reg(key)} = mem[{where!r}] & {mask}"]
        if kind == LOCAL_STORE:
            return [f"mem[{extra!r}] = {self.reg(reads[1])}"]
        if kind == NARROW1:
            args = [self.reg(r) for r in reads]
            tag = getattr(fn, "hash_tag", None)
            if tag is not None and args:     # mix(tag, 0, *args), its first two words folded into a constant
                lines = [f"h = (({mix(tag, 0)} ^ ({args[0]} & {MASK64})) * {_PRIME}) & {MASK64}"]
                lines += [f"h = (((h ^ h >> 29) ^ ({a} & {MASK64})) * {_PRIME}) & {MASK64}" for a in args[1:]]
                return lines + [f"{self.reg(writes[0])} = (h ^ h >> 29) & {writes[1]}"]
            return [f"{self.reg(writes[0])} = {self._call(fn, args, 0)} & {writes[1]}"]
        if kind == POINTER_LOAD:
            space, tag, key, mask = extra
            p, offset = reads
            address = f"(({self.reg(p[0])} | {self.reg(p[1])} << 32) + {self.reg(offset)}) & {MASK64}"
            return [f"{self.reg(key)} = mem[({space!r}, {address})] & {mask}"]
        if kind == POINTER_STORE:
            p, offset, x = reads
            lines = [f"a = (({self.reg(p[0])} | {self.reg(p[1])} << 32) + {self.reg(offset)}) & {MASK64}",
                     f"mem[({extra!r}, a)] = {self.reg(x)}"]
            return lines + ([f"stores.append(({extra!r}, a, {self.reg(x)}))"] if extra != "local" else [])
        ops = "o = [" + ", ".join(self.read(r) for r in reads) + "]"
        if kind == NARROW:
            f = self.obj(fn, "F")
            return [ops] + [f"{self.reg(key)} = {f}(o, {k}, seed) & {mask}" for k, (key, mask) in enumerate(writes)]
        if kind == STORE:
            lines = [ops, f"a = sum(o[:-1]) & {MASK64}", f"mem[({extra!r}, a)] = o[-1]"]
            return lines + ([f"stores.append(({extra!r}, a, o[-1]))"] if extra != "local" else [])
        lines = [ops]
        if kind == LOAD:
            lines.append(f"a = sum(o) & {MASK64}")
        for k, (keys, mask) in enumerate(writes):
            value = f"mem[({extra!r}, (a + {4 * k}) & {MASK64})]" if kind == LOAD else f"{self.obj(fn, 'F')}(o, {k}, seed)"
            lines.append(f"t = {value} & {mask}")
            lines.append(f"{self.reg(keys[0])} = t & {MASK32}")
            if len(keys) == 2:
                lines.append(f"{self.reg(keys[1])} = t >> 32")
        return lines

    def _call(self, fn, args: list[str], k: int) -> str:
        """The expression ``fn(ops, k, seed)`` computes, inline for the functions of known meaning."""
        fixed = self.fixed
        if fn is fixed["mov"] or fn is fixed["cvt"] or fn is fixed["first"] or (fn is fixed["input"] and k == 0):
            return f"({args[0]})"
        if fn is fixed["sub"]:
            return f"({args[0]} - {args[1]})"
        if fn is fixed["mul"]:
            return f"({args[0]} * {args[1]})"
        if fn is fixed["fma"]:
            return f"({args[0]} * {args[1]} + {args[2]})"
        if fn is fixed["add"]:
            return f"({' + '.join(args)})" if args else "0"
        tag = getattr(fn, "hash_tag", None)
        if tag is not None:
            return f"mix({tag}, {k}{''.join(', ' + a for a in args)})"
        extreme = getattr(fn, "extreme", None)
        if extreme is not None:
            read = "_signed32" if fn.bits == 32 else "_signed"
            return f"{extreme}({', '.join(f'{read}({a})' for a in args)})" if len(args) > 1 else f"{read}({args[0]})"
        if getattr(fn, "wide_signed", False) and len(args) == 2:
            return f"(_signed32({args[0]}) * _signed32({args[1]}))"
        compare = getattr(fn, "compare", None)
        if compare is not None and len(args) == 2:
            read = "_signed32" if fn.bits == 32 else "_signed"
            return f"int({read}({args[0]}) {compare} {read}({args[1]}))"
        return f"{self.obj(fn, 'F')}([{', '.join(args)}], {k}, seed)"
