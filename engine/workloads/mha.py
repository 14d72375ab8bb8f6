"""Multi-head attention: the design note's config space and a fused forward pass per thread.

The config space: heads in {16, 32, 40, 64, 96, 128}, batch in {1, 4, 16,
32, 64, 128, 256, 512, 1024}, head_dim in {32, 64, 80, 96, 128, 192, 256},
attention groups (query heads sharing one K/V head) in {1, 2, 4, 8},
seq_len 2048: 1,512 configs.

The per-thread program is FlashAttention-style: a block per (batch, K/V
head, query tile); ``tpr`` threads share one query row, each holding
head_dim/tpr elements of it (elements lane, lane+tpr, ...: the same
strided set of q, k, v and o, so the partial dot products add up to q.k
across the tpr lanes). The loop over K/V tiles of ``bc`` keys is a
real loop (2048/bc trips): partial dot products, the reduction across the
tpr threads (butterfly shuffles), the 1/sqrt(head_dim) scale, the online
softmax (running max, exp, running sum, rescale) and the P*V accumulation.
A thread serves every query head of its group against the K/V rows it
loaded once, so pressure grows with the group size. The batch size only
changes the grid; the head count changes index constants, not the
program's shape. The module registers :class:`MhaWorkload` as workload
``mha``.

Invariant: strategies are named transforms (see :data:`STRATEGIES`), each
changing exactly what its docstring says; one with no effect on a config's
program says so in :func:`strategy_effects` rather than being tuned.

Examples
--------
>>> from engine.analysis.liveness import analyze
>>> w = Mha(heads=32, batch=64, head_dim=64, groups=4)
>>> p, options = build_mha(w)
>>> options["tpr"], options["elements"], options["trips"]
(16, 4, 128)
>>> analyze(p).maxlive > analyze(build_mha(Mha(32, 64, 64, 1))[0]).maxlive
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.base import fields
from engine.base.errors import PlanError, RegtuneError
from engine.check.inputs import InputModel
from engine.ir.core import Program
from engine.workloads import Flag, register
from engine.workloads.writer import ProgramWriter

if TYPE_CHECKING:
    from engine.workloads.options import BuildOptions

HEADS = (16, 32, 40, 64, 96, 128)
BATCHES = (1, 4, 16, 32, 64, 128, 256, 512, 1024)
HEAD_DIMS = (32, 64, 80, 96, 128, 192, 256)
GROUPS = (1, 2, 4, 8)
SEQ_LEN = 2048
DEFAULT_BC = 16
THREADS_PER_BLOCK = 128


@dataclass(frozen=True)
class Mha:
    """One attention configuration (seq_len is always 2048)."""

    heads: int
    batch: int
    head_dim: int
    groups: int
    seq_len: int = SEQ_LEN

    def as_dict(self) -> dict:
        return {"kind": "mha", "heads": self.heads, "batch": self.batch, "head_dim": self.head_dim,
                "groups": self.groups, "seq_len": self.seq_len, "dtype": "f32"}

    @classmethod
    def from_dict(cls, data: dict, where: str) -> "Mha":
        """The config a plan file names, every field checked against the config space.

        Examples
        --------
        >>> Mha.from_dict({"kind": "mha", "heads": 32, "batch": 64, "head_dim": 64, "groups": 4}, "p.json")
        Mha(heads=32, batch=64, head_dim=64, groups=4, seq_len=2048)
        """
        fields.exact_keys(data, ("kind", "heads", "batch", "head_dim", "groups", "seq_len", "dtype"), where,
                          required=("kind", "heads", "batch", "head_dim", "groups"))
        if "dtype" in data:
            fields.choice(data, "dtype", where, ("f32",))
        values = [fields.integer(data, key, where, min(allowed), max(allowed), allowed)
                  for key, allowed in (("heads", HEADS), ("batch", BATCHES), ("head_dim", HEAD_DIMS),
                                       ("groups", GROUPS))]
        if "seq_len" in data:
            fields.integer(data, "seq_len", where, SEQ_LEN, SEQ_LEN)
        return cls(*values)


#: options an MHA plan may carry (those :func:`build_mha` writes, and the session's architecture)
OPTION_KEYS = ("strategies", "bc", "projection", "tpr", "elements", "trips", "threads_per_block", "arch")


def check_options(w: Mha, options: dict, where: str) -> dict:
    """The options of an MHA plan file, checked (known strategies, a tile size that divides seq_len, counts
    derived from the config)."""
    from engine.model.arch import ARCHS

    fields.exact_keys(options, OPTION_KEYS, where)
    out = {}
    if "strategies" in options:
        names = options["strategies"]
        if not isinstance(names, list) or len(names) > len(STRATEGIES) or len(set(map(str, names))) != len(names) \
                or any(not isinstance(s, str) or s not in STRATEGIES for s in names):
            raise PlanError(f"{where}: field 'strategies' must be a list of distinct names from "
                            f"{', '.join(STRATEGIES)}, got {fields.excerpt(names)}")
        out["strategies"] = list(names)
    if "bc" in options:
        out["bc"] = fields.integer(options, "bc", where, 2, SEQ_LEN)
        if out["bc"] % 2 or SEQ_LEN % out["bc"]:
            raise PlanError(f"{where}: field 'bc' must be even and divide {SEQ_LEN}, got {out['bc']}")
    if "projection" in options:
        out["projection"] = fields.boolean(options, "projection", where)
    tpr = threads_per_row(w.head_dim)
    for key, allowed in (("tpr", (tpr,)), ("elements", (w.head_dim // tpr,)),
                         ("threads_per_block", (THREADS_PER_BLOCK,))):
        if key in options:
            out[key] = fields.integer(options, key, where, 1, 1024, allowed)
    if "trips" in options:
        out["trips"] = fields.integer(options, "trips", where, 1, SEQ_LEN)
    if "arch" in options:
        out["arch"] = fields.choice(options, "arch", where, ARCHS)
    return out


def mha_configs() -> list[Mha]:
    """The design note's 1,512 configs."""
    return [Mha(h, b, d, g) for h in HEADS for b in BATCHES for d in HEAD_DIMS for g in GROUPS]


def threads_per_row(head_dim: int) -> int:
    """The largest power of two up to 32 dividing head_dim with at least 4 elements per thread."""
    return max(t for t in (1, 2, 4, 8, 16, 32) if head_dim % t == 0 and head_dim // t >= 4)


def _strategy_qk_symmetric(o: "_Options") -> None:
    """qk-symmetric: in the projection phase, the K projection (with V's)
    runs in a second pass over the input, on the registers the Q
    accumulators held in the first, instead of beside them. The fused attention pass has no such pair
    (Q stays resident, K streams), so without ``projection`` it changes
    nothing."""
    o.qk_sequential = True


def _strategy_sliding_window(o: "_Options") -> None:
    """sliding-window: each query attends only to the last ``window`` keys
    (default 256), so the K/V loop runs window/bc trips instead of 2048/bc.
    The registers a trip needs are unchanged; the work is not."""
    o.window = o.window or 256


def _strategy_fp16_softmax(o: "_Options") -> None:
    """fp16-softmax: the softmax intermediates of a tile, the scaled scores
    and the probabilities, are packed two per register (f16x2) as soon as
    each pair exists and unpacked where they are read, halving the registers
    that hold them; q, k, v, o, m and l stay f32."""
    o.packed_p = True


def _strategy_head_shared(o: "_Options") -> None:
    """head-shared: the heads of a group are processed one after another,
    each with its own pass over K/V, on one register map (one head's q, o,
    m, l live at a time); K and V are loaded groups times instead of once.
    With one head per group it changes nothing."""
    o.heads_in_turn = True


def _strategy_group_pools(o: "_Options") -> None:
    """group-pools: a register pool per attention group. One thread serves
    one group, so per thread there is one pool and the program is
    unchanged; as an allocation constraint a pool can only add registers.
    It has no honest effect in this model."""


STRATEGIES = {
    "qk-symmetric": _strategy_qk_symmetric,
    "sliding-window": _strategy_sliding_window,
    "fp16-softmax": _strategy_fp16_softmax,
    "head-shared": _strategy_head_shared,
    "group-pools": _strategy_group_pools,
}


@dataclass
class _Options:
    bc: int = DEFAULT_BC
    projection: bool = False
    qk_sequential: bool = False
    window: int | None = None
    packed_p: bool = False
    heads_in_turn: bool = False


def check_mha(w: Mha, strategies=(), bc: int = DEFAULT_BC) -> None:
    """Raise a one-line error for a config, strategy or tile outside the space."""
    for name, value, allowed in (("heads", w.heads, HEADS), ("batch", w.batch, BATCHES),
                                 ("head_dim", w.head_dim, HEAD_DIMS), ("groups", w.groups, GROUPS)):
        if value not in allowed:
            raise RegtuneError(f"MHA {name}={value} is outside the config space ({', '.join(map(str, allowed))})")
    if w.seq_len != SEQ_LEN:
        raise RegtuneError(f"MHA seq_len={w.seq_len}: the config space fixes it at {SEQ_LEN}")
    for s in strategies:
        if s not in STRATEGIES:
            raise RegtuneError(f"unknown MHA strategy {s!r} (known: {', '.join(STRATEGIES)})")
    if bc < 1 or SEQ_LEN % bc or bc % 2:
        raise RegtuneError(f"keys per K/V tile bc={bc} must be even and divide {SEQ_LEN}")


class _Builder:
    """Writes the per-thread program; ``heads`` are the query heads a pass serves."""

    def __init__(self, w: Mha, o: _Options):
        self.w, self.o = w, o
        self.tpr = threads_per_row(w.head_dim)
        self.e = w.head_dim // self.tpr
        self.trips = (o.window or w.seq_len) // o.bc
        self.out = ProgramWriter(f"mha_d{w.head_dim}_g{w.groups}_bc{o.bc}")

    def prologue(self) -> None:
        out, w = self.out, self.w
        out.block("entry", "index")
        for name, type_, sym in (("pq", "u64", "Q"), ("pk", "u64", "K"), ("pv", "u64", "V"), ("po", "u64", "O")):
            out(f"%{name}:{type_} = param {sym}")
        out("%tid:i32 = sreg.tid.x")
        out("%qtile:i32 = sreg.ctaid.x")
        out("%kvh:i32 = sreg.ctaid.y")
        out("%b:i32 = sreg.ctaid.z")
        out(f"%lane:i32 = rem.u32 %tid, {self.tpr}")
        out(f"%row:i32 = div.u32 %tid, {self.tpr}")
        out(f"%qrow:i32 = fma %qtile, {THREADS_PER_BLOCK // self.tpr}, %row")
        out(f"%head0:i32 = mul %kvh, {w.groups}")
        out(f"%bh:i32 = fma %b, {w.heads}, %head0")
        out(f"%qe:i32 = fma %bh, {w.seq_len * w.head_dim}, %lane")
        out(f"%qoff:i32 = fma %qrow, {w.head_dim}, %qe")
        out(f"%bkv:i32 = fma %b, {w.heads // w.groups}, %kvh")
        out(f"%kvstart:i32 = mul %bkv, {w.seq_len * w.head_dim}")
        out("%kvoff:i32 = add %kvstart, %lane")
        for name, base, off in (("tq", "pq", "qoff"), ("to", "po", "qoff"), ("tk0", "pk", "kvoff"), ("tv0", "pv", "kvoff")):
            out(f"%w{name}:u64 = mul.wide.s32 %{off}, 4")
            out(f"%{name}:u64 = add %{base}, %w{name}")

    def stride(self, g: int) -> int:
        return 4 * g * self.w.seq_len * self.w.head_dim

    def load_q(self, heads) -> None:
        out, e = self.out, self.e
        out.phase("prologue")
        for g in heads:
            for d in range(e):
                out(f"%q_{g}_{d}:f32 = ld.global %tq, {self.stride(g) + 4 * d * self.tpr}")
            out(f"%m_{g}:f32 = mov -inf")
            out(f"%l_{g}:f32 = mov 0")
            for d in range(e):
                out(f"%o_{g}_{d}:f32 = mov 0")

    def loop(self, label: str, heads) -> None:
        out = self.out
        out("%tk:u64 = mov %tk0")
        out("%tv:u64 = mov %tv0")
        out("%it:i32 = mov 0")
        out.block(label)
        self.scores(heads)
        self.softmax(heads)
        self.weighted_sum(heads)
        out.phase("loop")
        step = 4 * self.o.bc * self.w.head_dim
        out(f"%tk:u64 = add %tk, {step}")
        out(f"%tv:u64 = add %tv, {step}")
        out("%it:i32 = add %it, 1")
        out(f"%more:pred = setp.lt %it, {self.trips}")
        after = f"after_{label}"
        out(f"cbr %more, {label}, {after}")
        out.block(after)

    def scores(self, heads) -> None:
        out, e, w = self.out, self.e, self.w
        out.phase("scores")
        scale = f"{1 / math.sqrt(w.head_dim):.9g}"
        for j in range(self.o.bc):
            for d in range(e):
                out(f"%k_{j}_{d}:f32 = ld.global %tk, {4 * (j * w.head_dim + d * self.tpr)}")
            for g in heads:
                s = f"s_{g}_{j}"
                out(f"%{s}:f32 = mul %q_{g}_0, %k_{j}_0")
                for d in range(1, e):
                    out(f"%{s}:f32 = fma %q_{g}_{d}, %k_{j}_{d}, %{s}")
                offset = self.tpr // 2
                while offset:
                    out(f"%x_{g}_{j}:f32 = shfl.sync.bfly %{s}, {offset}")
                    out(f"%{s}:f32 = add %{s}, %x_{g}_{j}")
                    offset //= 2
                out(f"%{s}:f32 = mul %{s}, {scale}")
                if self.o.packed_p and j % 2:
                    out(f"%sh_{g}_{j - 1}:f16x2 = cvt.rn.f16x2.f32 %s_{g}_{j - 1}, %{s}")

    def softmax(self, heads) -> None:
        out, bc = self.out, self.o.bc
        out.phase("softmax")
        for g in heads:
            out(f"%mn_{g}:f32 = max %m_{g}, {self.score(g, 0, 'a')}")
            for j in range(1, bc):
                out(f"%mn_{g}:f32 = max %mn_{g}, {self.score(g, j, 'a')}")
            out(f"%dm_{g}:f32 = sub %m_{g}, %mn_{g}")
            out(f"%corr_{g}:f32 = exp %dm_{g}")
            out(f"%m_{g}:f32 = mov %mn_{g}")
            out(f"%l_{g}:f32 = mul %l_{g}, %corr_{g}")
            for j in range(bc):
                out(f"%ds_{g}_{j}:f32 = sub {self.score(g, j, 'b')}, %mn_{g}")
                out(f"%p_{g}_{j}:f32 = exp %ds_{g}_{j}")
                out(f"%l_{g}:f32 = add %l_{g}, %p_{g}_{j}")
                if self.o.packed_p and j % 2:
                    out(f"%ph_{g}_{j - 1}:f16x2 = cvt.rn.f16x2.f32 %p_{g}_{j - 1}, %p_{g}_{j}")
            out.phase("rescale")
            for d in range(self.e):
                out(f"%o_{g}_{d}:f32 = mul %o_{g}_{d}, %corr_{g}")
            out.phase("softmax")

    def score(self, g: int, j: int, use: str) -> str:
        """The operand holding score (g, j): itself, or unpacked from its f16x2 pair."""
        if not self.o.packed_p:
            return f"%s_{g}_{j}"
        half = "lo" if j % 2 == 0 else "hi"
        self.out(f"%su{use}_{g}_{j}:f32 = cvt.f32.f16.{half} %sh_{g}_{j - j % 2}")
        return f"%su{use}_{g}_{j}"

    def probability(self, g: int, j: int) -> str:
        if not self.o.packed_p:
            return f"%p_{g}_{j}"
        half = "lo" if j % 2 == 0 else "hi"
        self.out(f"%pf_{g}_{j}:f32 = cvt.f32.f16.{half} %ph_{g}_{j - j % 2}")
        return f"%pf_{g}_{j}"

    def weighted_sum(self, heads) -> None:
        out, e, w = self.out, self.e, self.w
        out.phase("weighted_sum")
        for j in range(self.o.bc):
            for d in range(e):
                out(f"%v_{j}_{d}:f32 = ld.global %tv, {4 * (j * w.head_dim + d * self.tpr)}")
            for g in heads:
                p = self.probability(g, j)
                for d in range(e):
                    out(f"%o_{g}_{d}:f32 = fma {p}, %v_{j}_{d}, %o_{g}_{d}")

    def epilogue(self, heads) -> None:
        out = self.out
        out.phase("epilogue")
        for g in heads:
            out(f"%inv_{g}:f32 = rcp %l_{g}")
            for d in range(self.e):
                out(f"%o_{g}_{d}:f32 = mul %o_{g}_{d}, %inv_{g}")
                out(f"st.global %to, {self.stride(g) + 4 * d * self.tpr}, %o_{g}_{d}")

    def projection(self) -> None:
        """Q (one per head of the group), K and V projections of this thread's
        elements from a 16-wide input fragment per trip, over hidden = heads*head_dim."""
        out, e, w = self.out, self.e, self.w
        out("%px:u64 = param X")
        out("%pw:u64 = param W")
        targets = [f"q{g}" for g in range(w.groups)] + ["k", "v"]
        groups = [targets[:-2], ["k", "v"]] if self.o.qk_sequential else [targets]
        for n, group in enumerate(groups):
            out.phase("projection")
            for t in group:
                for d in range(e):
                    out(f"%acc_{t}_{d}:f32 = mov 0")
            out(f"%tx{n}:u64 = mov %px")
            out(f"%tw{n}:u64 = mov %pw")
            out(f"%jt{n}:i32 = mov 0")
            out.block(f"project{n}", "projection")
            for c in range(16):
                out(f"%x_{c}:f32 = ld.global %tx{n}, {4 * c}")
            for ti, t in enumerate(group):
                for d in range(e):
                    out(f"%wt_{d}:f32 = ld.global %tw{n}, {4 * (ti * e + d)}")
                    for c in range(16):
                        out(f"%acc_{t}_{d}:f32 = fma %x_{c}, %wt_{d}, %acc_{t}_{d}")
            out(f"%tx{n}:u64 = add %tx{n}, 64")
            out(f"%tw{n}:u64 = add %tw{n}, {4 * 16 * w.heads * w.head_dim}")
            out(f"%jt{n}:i32 = add %jt{n}, 1")
            out(f"%pmore{n}:pred = setp.lt %jt{n}, {w.heads * w.head_dim // 16}")
            out(f"cbr %pmore{n}, project{n}, projected{n}")
            out.block(f"projected{n}", "projection")
            for t in group:
                for d in range(e):
                    out(f"st.global %po, {4 * (targets.index(t) * e + d)}, %acc_{t}_{d}")


def mha_program(w: Mha, strategies=(), bc: int = DEFAULT_BC, projection: bool = False) -> Program:
    """The per-thread program (projection phase only, or the fused attention pass)."""
    check_mha(w, strategies, bc)
    o = _Options(bc=bc, projection=projection)
    for s in strategies:
        STRATEGIES[s](o)
    b = _Builder(w, o)
    b.prologue()
    if projection:
        b.projection()
    else:
        passes = [[g] for g in range(w.groups)] if o.heads_in_turn else [list(range(w.groups))]
        for n, heads in enumerate(passes):
            b.load_q(heads)
            b.loop(f"kv{n}", heads)
            b.epilogue(heads)
    b.out("exit")
    return b.out.program()


def build_mha(w: Mha, strategies=(), bc: int = DEFAULT_BC, projection: bool = False) -> tuple[Program, dict]:
    """The program and its options."""
    program = mha_program(w, tuple(strategies), bc, projection)
    tpr = threads_per_row(w.head_dim)
    window = 256 if "sliding-window" in strategies else w.seq_len
    options = {"strategies": list(strategies), "bc": bc, "projection": projection, "tpr": tpr,
               "elements": w.head_dim // tpr, "trips": window // bc, "threads_per_block": THREADS_PER_BLOCK}
    return program, options


def input_model(w: Mha, options: dict) -> InputModel:
    """The inputs a check runs the program on: a thread of a block of :data:`THREADS_PER_BLOCK` anywhere in
    the grid the config implies (query tiles x K/V heads x batch); pointers at their defaults (see
    :mod:`engine.check.inputs`). The program has no guard on its inputs, so every draw runs all of it.

    Examples
    --------
    >>> dict((n, (lo, hi)) for n, lo, hi in input_model(Mha(32, 64, 64, 4), {}).ranges)
    {'%ctaid.x': (0, 255), '%ctaid.y': (0, 7), '%ctaid.z': (0, 63), '%tid.x': (0, 127)}
    """
    rows = THREADS_PER_BLOCK // threads_per_row(w.head_dim)
    return InputModel.of({"%tid.x": (0, THREADS_PER_BLOCK - 1), "%ctaid.x": (0, w.seq_len // rows - 1),
                          "%ctaid.y": (0, w.heads // w.groups - 1), "%ctaid.z": (0, w.batch - 1)})


def _values(allowed) -> str:
    return ", ".join(map(str, allowed))


class MhaWorkload:
    """MHA in the workload registry (:class:`engine.workloads.Workload`); build options: ``strategies``,
    ``bc``, ``projection``.

    Examples
    --------
    >>> w = MhaWorkload()
    >>> w.label(w.example)
    'mha heads 32 batch 64 head_dim 64 groups 4'
    >>> w.parse_label("heads 16 batch 1 head_dim 32 groups 2".split())
    Mha(heads=16, batch=1, head_dim=32, groups=2, seq_len=2048)
    """

    name = "mha"
    title = f"MHA (source 'mha', seq_len {SEQ_LEN})"
    example = Mha(heads=32, batch=64, head_dim=64, groups=4)
    flags = (Flag("--heads", "heads", int, required=True, help=f"one of {_values(HEADS)}"),
             Flag("--batch", "batch", int, required=True,
                  help=f"one of {_values(BATCHES)} (sets the grid only, not the per-thread program)"),
             Flag("--head-dim", "head_dim", int, required=True, help=f"one of {_values(HEAD_DIMS)}"),
             Flag("--groups", "groups", int, required=True,
                  help=f"query heads per K/V head, one of {_values(GROUPS)}"),
             Flag("--strategies", "strategies", help=f"comma-separated: {', '.join(STRATEGIES)}"),
             Flag("--bc", "bc", int, DEFAULT_BC,
                  help=f"keys per K/V tile, even and dividing {SEQ_LEN} (default {DEFAULT_BC})"),
             Flag("--projection", "projection", switch=True, help="the Q/K/V projection phase instead"))

    def from_dict(self, data: dict, where: str) -> Mha:
        return Mha.from_dict(data, where)

    def to_dict(self, config: Mha) -> dict:
        return config.as_dict()

    def configs(self) -> list[Mha]:
        return mha_configs()

    def build(self, config: Mha, options: BuildOptions) -> tuple[Program, dict]:
        return build_mha(config, options.strategies, options.bc, options.projection)

    def label(self, config: Mha) -> str:
        return f"mha heads {config.heads} batch {config.batch} head_dim {config.head_dim} groups {config.groups}"

    def parse_label(self, words: list) -> Mha:
        values = dict(zip(words[0::2], (int(x) for x in words[1::2])))
        return Mha(values["heads"], values["batch"], values["head_dim"], values["groups"])

    def input_model(self, config: Mha, options: dict) -> InputModel:
        return input_model(config, options)

    def check_options(self, config: Mha, options: dict, where: str) -> dict:
        return check_options(config, options, where)

    def from_flags(self, values: dict) -> tuple[Mha, BuildOptions]:
        from engine.workloads import BuildOptions

        text = values.get("strategies")
        strategies = tuple(s.strip() for s in text.split(",") if s.strip()) if text else ()
        return (Mha(values["heads"], values["batch"], values["head_dim"], values["groups"]),
                BuildOptions(strategies=strategies, bc=values["bc"], projection=values["projection"]))


register(MhaWorkload())
