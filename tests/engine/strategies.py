"""Hypothesis strategies: random, well-formed programs for property tests.

Every generated program is strict (each read is reached by a definition on
every path), terminates (loops are counted, 1-3 trips), and ends with
global stores of some of its values so that a wrong allocation changes what
it writes.
"""

from __future__ import annotations

import os

from hypothesis import strategies as st

from engine.ir.parser import parse

ALU = ["add", "sub", "mul", "fma", "max", "exp", "rcp", "cvt", "mov", "tex.opaque"]


class _Gen:
    def __init__(self, draw, mixed: bool, control: bool, holes: bool):
        self.draw, self.mixed, self.control, self.holes = draw, mixed, control, holes
        self.lines: list[str] = []
        self.types: dict[str, str] = {}
        self.avail: list[str] = []
        self.preds: list[str] = []
        self.fixed: set[str] = set()
        self.n = 0

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def type_(self) -> str:
        pool = ["f32", "i32", "u64", "f64", "f16x2"] if self.mixed else ["f32", "i32"]
        return self.draw(st.sampled_from(pool))

    def operands(self, k: int) -> list[str]:
        return [f"%{self.draw(st.sampled_from(self.avail))}" for _ in range(k)]

    def emit(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def define(self, name: str, type_: str, rhs: str) -> None:
        self.types.setdefault(name, type_)
        self.emit(f"%{name}:{type_} = {rhs}")

    def op(self) -> None:
        kind = self.draw(st.integers(0, 9))
        redef = [v for v in self.avail if v not in self.fixed]
        if kind == 0 and self.preds and redef:
            target = self.draw(st.sampled_from(redef))
            p = self.draw(st.sampled_from(self.preds))
            bang = self.draw(st.sampled_from(["", "!"]))
            self.define(target, self.types[target], f"@{bang}%{p} mov {self.operands(1)[0]}")
        elif kind == 1 and redef:
            target = self.draw(st.sampled_from(redef))
            keep = not self.holes or self.draw(st.booleans())
            reads = self.operands(2) + ([f"%{target}"] if keep else self.operands(1))
            self.define(target, self.types[target], f"fma {', '.join(reads)}")
        elif kind == 2 and self.mixed:
            a, b, address = self.fresh(), self.fresh(), self.operands(1)[0]
            self.emit(f"%{a}:f32, %{b}:f32 = ld.global.v2 {address}, {4 * self.draw(st.integers(0, 8))}")
            self.avail += [a, b]
            self.types[a] = self.types[b] = "f32"
        elif kind == 3:
            name = self.fresh()
            self.define(name, self.type_(), f"ld.global {self.operands(1)[0]}, {4 * self.draw(st.integers(0, 8))}")
            self.avail.append(name)
        else:
            opcode = self.draw(st.sampled_from(ALU))
            arity = {"fma": 3, "exp": 1, "rcp": 1, "cvt": 1, "mov": 1}.get(opcode, 2)
            name = self.fresh()
            self.define(name, self.type_(), f"{opcode} {', '.join(self.operands(arity))}")
            self.avail.append(name)

    def straight(self, lo: int = 1, hi: int = 6) -> None:
        if self.draw(st.integers(0, 3)) == 0:
            self.lines.append(f".phase {self.draw(st.sampled_from(['-', 'scores', 'softmax']))}")
        for _ in range(self.draw(st.integers(lo, hi))):
            self.op()

    def loop(self) -> None:
        i, p, label = self.fresh("i"), self.fresh("p"), self.fresh("loop")
        self.define(i, "i32", "mov 0")
        self.fixed.add(i)
        self.avail.append(i)
        self.lines.append(f".block {label}")
        self.straight()
        self.emit(f"%{i}:i32 = add %{i}, 1")
        self.emit(f"%{p}:pred = setp.lt %{i}, {self.draw(st.integers(1, 3))}")
        after = self.fresh("after")
        self.emit(f"cbr %{p}, {label}, {after}")
        self.lines.append(f".block {after}")
        self.types[p] = "pred"
        self.preds.append(p)

    def diamond(self) -> None:
        c, then, other, join = self.fresh("c"), self.fresh("then"), self.fresh("else"), self.fresh("join")
        self.define(c, "pred", f"setp.lt {', '.join(self.operands(2))}")
        self.emit(f"cbr %{c}, {then}, {other}")
        outer = list(self.avail)
        both = self.fresh("phi")
        type_ = self.type_()
        for label, closing in ((then, f"br {join}"), (other, None)):
            self.lines.append(f".block {label}")
            self.avail = list(outer)
            self.straight(0, 4)
            self.define(both, type_, f"add {', '.join(self.operands(2))}")
            if closing:
                self.emit(closing)
        self.lines.append(f".block {join}")
        self.avail = outer + [both]
        self.preds.append(c)

    def program(self) -> str:
        self.lines = [".kernel random", ".block entry"]
        for k in range(self.draw(st.integers(1, 2))):
            name = f"p{k}"
            self.define(name, "u64" if self.mixed else "i32", f"param P{k}")
            self.avail.append(name)
            self.fixed.add(name)
        for _ in range(self.draw(st.integers(1, 6))):
            region = self.draw(st.integers(0, 3)) if self.control else 0
            [self.straight, self.straight, self.loop, self.diamond][region]()
        stored = self.draw(st.lists(st.sampled_from(self.avail), min_size=1, max_size=6))
        for k, v in enumerate(stored):
            self.emit(f"st.global %p0, {4 * k}, %{v}")
        self.emit("exit")
        return "\n".join(self.lines) + "\n"


@st.composite
def program_texts(draw, mixed: bool = True, control: bool = True, holes: bool = True) -> str:
    """Text of a random program (see the module docstring)."""
    return _Gen(draw, mixed, control, holes).program()


@st.composite
def programs(draw, mixed: bool = True, control: bool = True, holes: bool = True):
    """A random parsed program."""
    return parse(draw(program_texts(mixed, control, holes)), "random")


def examples(n: int) -> int:
    """Hypothesis examples for a property: ``n``, or a quarter of it (at least 5) under mutation testing,
    where every surviving mutant runs every property that reaches it (``python -m tests.mutation`` sets
    ``REGTUNE_MUTATION``)."""
    return max(5, n // 4) if os.environ.get("REGTUNE_MUTATION") else n
