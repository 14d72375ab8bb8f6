"""Batched small GEMM, C = alpha*A*B + beta*C, seen from one thread.

The config space is the design note's: M, N, K each in 2..16, 3,375
configs. A thread block serves a group of matrices; each thread computes
a tm x tn tile of one C (tm divides M, tn divides N), so the program holds
what ptxas must hold too: the thread and batch index arithmetic, the
64-bit pointers, the A and B fragments, the accumulators and the
alpha/beta epilogue, which loads C only when beta is not 0.

Invariant: for one tile, MAXLIVE(load-all-first) >= MAXLIVE(k-outer) >=
MAXLIVE(dot): loading everything first keeps every fragment live, k-outer
keeps one column of A and one row of B, dot keeps one pair of elements.
The module registers :class:`GemmWorkload` as workload ``gemm``.

Examples
--------
>>> from engine.analysis.liveness import Analysis, analyze
>>> w = Gemm(8, 8, 8)
>>> [analyze(gemm_program(w, tile=(4, 4), schedule=s)).maxlive for s in SCHEDULES]
[77, 32, 26]
>>> len(gemm_configs())
3375
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.base import fields
from engine.base.errors import PlanError, RegtuneError
from engine.check.inputs import InputModel
from engine.ir.core import Program
from engine.workloads import Flag, register
from engine.workloads.writer import ProgramWriter

if TYPE_CHECKING:
    from engine.analysis.liveness import Analysis
    from engine.workloads.options import BuildOptions

SIZES = range(2, 17)
SCHEDULES = ("load-all-first", "k-outer", "dot")
DEFAULT_SCHEDULE = "k-outer"
HEADROOM = 0.25
#: thread blocks in the grid an execution check models
GRID_BLOCKS = 4


@dataclass(frozen=True)
class Gemm:
    """One GEMM configuration (single precision)."""

    m: int
    n: int
    k: int

    def as_dict(self) -> dict:
        return {"kind": "gemm", "m": self.m, "n": self.n, "k": self.k, "dtype": "f32"}

    @classmethod
    def from_dict(cls, data: dict, where: str) -> "Gemm":
        """The config a plan file names, every field checked (see :mod:`engine.base.fields`).

        Examples
        --------
        >>> Gemm.from_dict({"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"}, "plan.json: workload")
        Gemm(m=8, n=8, k=8)
        >>> Gemm.from_dict({"kind": "gemm", "m": "8)", "n": 8, "k": 8}, "plan.json: workload")
        Traceback (most recent call last):
        ...
        engine.base.errors.PlanError: plan.json: workload: field 'm' must be an integer in 2..16, got '8)'
        """
        fields.exact_keys(data, ("kind", "m", "n", "k", "dtype"), where, required=("kind", "m", "n", "k"))
        if "dtype" in data:
            fields.choice(data, "dtype", where, ("f32",))
        return cls(*(fields.integer(data, key, where, SIZES.start, SIZES.stop - 1) for key in ("m", "n", "k")))


#: options a GEMM plan may carry (those :func:`build_gemm` writes, and the session's architecture)
OPTION_KEYS = ("tile", "schedule", "threads_per_block", "matrices_per_block", "arch")


def check_options(w: Gemm, options: dict, where: str) -> dict:
    """The options of a GEMM plan file, checked against the config (tile divides C, counts derived from it)."""
    from engine.model.arch import ARCHS

    fields.exact_keys(options, OPTION_KEYS, where)
    out = {}
    if "tile" in options:
        tile = options["tile"]
        if not (isinstance(tile, list) and len(tile) == 2 and all(fields.is_int(t) for t in tile)
                and 1 <= tile[0] <= w.m and 1 <= tile[1] <= w.n and not w.m % tile[0] and not w.n % tile[1]):
            raise PlanError(f"{where}: field 'tile' must be [TM, TN] dividing C ({w.m}x{w.n}), "
                            f"got {fields.excerpt(tile)}")
        out["tile"] = [int(tile[0]), int(tile[1])]
    if "schedule" in options:
        out["schedule"] = fields.choice(options, "schedule", where, SCHEDULES)
    for key, derive in (("threads_per_block", threads_per_block), ("matrices_per_block", matrices_per_block)):
        if key in options:
            allowed = (derive(w, tuple(out["tile"])),) if "tile" in out else None
            out[key] = fields.integer(options, key, where, 1, 1024, allowed)
    if "arch" in options:
        out["arch"] = fields.choice(options, "arch", where, ARCHS)
    return out


def gemm_configs() -> list[Gemm]:
    """The design note's config space: every (M, N, K) with each in 2..16."""
    return [Gemm(m, n, k) for m in SIZES for n in SIZES for k in SIZES]


def tiles(w: Gemm) -> list[tuple[int, int]]:
    """Every tile tm x tn with tm dividing M and tn dividing N, largest first."""
    options = [(tm, tn) for tm in range(1, w.m + 1) if w.m % tm == 0 for tn in range(1, w.n + 1) if w.n % tn == 0]
    return sorted(options, key=lambda t: (-t[0] * t[1], abs(t[0] - t[1]), -t[0]))


def check_gemm(w: Gemm, tile=None, schedule: str = DEFAULT_SCHEDULE) -> None:
    """Raise a one-line error for a config, tile or schedule outside the space."""
    for name, value in (("M", w.m), ("N", w.n), ("K", w.k)):
        if value not in SIZES:
            raise RegtuneError(f"GEMM {name}={value} is outside the config space 2..16")
    if schedule not in SCHEDULES:
        raise RegtuneError(f"unknown GEMM schedule {schedule!r} (known: {', '.join(SCHEDULES)})")
    if tile is not None and (w.m % tile[0] or w.n % tile[1] or min(tile) < 1):
        raise RegtuneError(f"tile {tile[0]}x{tile[1]} does not divide C ({w.m}x{w.n})")


def _index(out: ProgramWriter, w: Gemm, tm: int, tn: int, per_block: int) -> None:
    """Parameters, thread/batch index arithmetic and the 64-bit tile pointers."""
    tiles_n, tiles = w.n // tn, (w.m // tm) * (w.n // tn)
    out.phase("index")
    for name, type_, symbol in (("pa", "u64", "A"), ("pb", "u64", "B"), ("pc", "u64", "C"),
                                ("alpha", "f32", "alpha"), ("beta", "f32", "beta"), ("batch", "i32", "batch")):
        out(f"%{name}:{type_} = param {symbol}")
    out("%tid:i32 = sreg.tid.x")
    out("%ctaid:i32 = sreg.ctaid.x")
    out(f"%local:i32 = div.u32 %tid, {tiles}")
    out(f"%mat:i32 = fma %ctaid, {per_block}, %local")
    out("%inside:pred = setp.lt %mat, %batch")
    out("cbr %inside, body, done")
    out.block("body")
    out.phase("index")
    out(f"%tile:i32 = rem.u32 %tid, {tiles}")
    out(f"%ti:i32 = div.u32 %tile, {tiles_n}")
    out(f"%tj:i32 = rem.u32 %tile, {tiles_n}")
    out(f"%col:i32 = mul %tj, {tn}")
    out(f"%row_a:i32 = mul %ti, {tm * w.k}")
    out(f"%ea:i32 = fma %mat, {w.m * w.k}, %row_a")
    out(f"%eb:i32 = fma %mat, {w.k * w.n}, %col")
    out(f"%row_c:i32 = fma %ti, {tm * w.n}, %col")
    out(f"%ec:i32 = fma %mat, {w.m * w.n}, %row_c")
    for name, e in (("a", "ea"), ("b", "eb"), ("c", "ec")):
        out(f"%o{name}:u64 = mul.wide.s32 %{e}, 4")
        out(f"%t{name}:u64 = add %p{name}, %o{name}")


def _load_a(out, w, i, k, name=None):
    out(f"%{name or f'a_{i}_{k}'}:f32 = ld.global %ta, {4 * (i * w.k + k)}")


def _load_b(out, w, k, j, name=None):
    out(f"%{name or f'b_{k}_{j}'}:f32 = ld.global %tb, {4 * (k * w.n + j)}")


def _madd(out, i, j, k, a=None, b=None):
    a, b = a or f"a_{i}_{k}", b or f"b_{k}_{j}"
    if k == 0:
        out(f"%acc_{i}_{j}:f32 = mul %{a}, %{b}")
    else:
        out(f"%acc_{i}_{j}:f32 = fma %{a}, %{b}, %acc_{i}_{j}")


def _load_all_first(out, w, tm, tn):
    out.phase("load")
    for i in range(tm):
        for k in range(w.k):
            _load_a(out, w, i, k)
    for k in range(w.k):
        for j in range(tn):
            _load_b(out, w, k, j)
    out.phase("compute")
    for k in range(w.k):
        for i in range(tm):
            for j in range(tn):
                _madd(out, i, j, k)


def _k_outer(out, w, tm, tn):
    for k in range(w.k):
        out.phase("load")
        for i in range(tm):
            _load_a(out, w, i, k)
        for j in range(tn):
            _load_b(out, w, k, j)
        out.phase("compute")
        for i in range(tm):
            for j in range(tn):
                _madd(out, i, j, k)


def _dot(out, w, tm, tn):
    for i in range(tm):
        for j in range(tn):
            for k in range(w.k):
                a, b = f"a_{i}_{k}.j{j}", f"b_{k}_{j}.i{i}"
                out.phase("load")
                _load_a(out, w, i, k, a)
                _load_b(out, w, k, j, b)
                out.phase("compute")
                _madd(out, i, j, k, a, b)


def _epilogue(out, w, tm, tn):
    out.phase("epilogue")
    for i in range(tm):
        for j in range(tn):
            out(f"%acc_{i}_{j}:f32 = mul %acc_{i}_{j}, %alpha")
    out("%beta_zero:pred = setp.eq %beta, 0")
    out("cbr %beta_zero, store, beta")
    out.block("beta")
    out.phase("epilogue")
    for i in range(tm):
        for j in range(tn):
            out(f"%c_{i}_{j}:f32 = ld.global %tc, {4 * (i * w.n + j)}")
            out(f"%acc_{i}_{j}:f32 = fma %c_{i}_{j}, %beta, %acc_{i}_{j}")
    out.block("store")
    out.phase("epilogue")
    for i in range(tm):
        for j in range(tn):
            out(f"st.global %tc, {4 * (i * w.n + j)}, %acc_{i}_{j}")
    out("exit")
    out.block("done")
    out("exit")


_SCHEDULE_WRITERS = {"load-all-first": _load_all_first, "k-outer": _k_outer, "dot": _dot}


def matrices_per_block(w: Gemm, tile: tuple[int, int]) -> int:
    """Matrices one thread block serves: enough tiles for about 128 threads."""
    tiles_per_matrix = (w.m // tile[0]) * (w.n // tile[1])
    return max(1, 128 // tiles_per_matrix)


def threads_per_block(w: Gemm, tile: tuple[int, int]) -> int:
    return matrices_per_block(w, tile) * (w.m // tile[0]) * (w.n // tile[1])


def gemm_program(w: Gemm, tile: tuple[int, int], schedule: str = DEFAULT_SCHEDULE) -> Program:
    """The per-thread program of ``w`` for one tile and schedule."""
    check_gemm(w, tile, schedule)
    tm, tn = tile
    out = ProgramWriter(f"gemm_m{w.m}n{w.n}k{w.k}_t{tm}x{tn}_{schedule.replace('-', '_')}")
    out.block("entry")
    _index(out, w, tm, tn, matrices_per_block(w, tile))
    _SCHEDULE_WRITERS[schedule](out, w, tm, tn)
    _epilogue(out, w, tm, tn)
    return out.program()


def _lower_bound(w: Gemm, tile: tuple[int, int], schedule: str) -> int:
    """A MAXLIVE no program of this tile can beat: every accumulator plus the
    fragments live beside them at the last k step (k-outer: a column of A and
    a row of B; dot: one element of each); load-all-first also holds all of
    A and B once the loads end."""
    tm, tn = tile
    if schedule == "load-all-first":
        return max((tm + tn) * w.k, tm * tn + tm + tn)
    return tm * tn + (tm + tn if schedule == "k-outer" else 2)


@dataclass(frozen=True)
class GemmBuild:
    """A built GEMM program: its options, and the analysis the build made of it to choose the tile (None when
    the tile was given), which a caller that analyses the program next need not compute again."""

    program: Program
    options: dict
    analysis: Analysis | None = None


def _fitting(w: Gemm, schedule: str, budget: int, headroom: float) -> tuple[tuple[int, int], Program, Analysis | None]:
    # imported here, not above: the workload registry stays cheap to import (regtune --help)
    from engine.analysis.liveness import analyze

    limit = (1 - headroom) * budget
    for tile in tiles(w):
        if _lower_bound(w, tile, schedule) > limit:
            continue
        program = gemm_program(w, tile, schedule)
        analysis = analyze(program)
        if analysis.maxlive <= limit:
            return tile, program, analysis
    return (1, 1), gemm_program(w, (1, 1), schedule), None


def arch_limit(arch: str | None = None) -> int:
    """Registers per thread the architecture allows (the default tile's reference, not the budget).

    Examples
    --------
    >>> arch_limit(), arch_limit("sm_90")
    (255, 255)
    """
    from engine.model.arch import DEFAULT_ARCH, load_arch

    return load_arch(arch or DEFAULT_ARCH).max_registers_per_thread


def default_tile(w: Gemm, schedule: str = DEFAULT_SCHEDULE, limit: int | None = None,
                 headroom: float = HEADROOM) -> tuple[int, int]:
    """The largest tile whose MAXLIVE keeps ``headroom`` of ``limit`` free (default: the architecture's
    register limit, :func:`arch_limit`; pass the budget to fit the tile to it)."""
    check_gemm(w, None, schedule)
    return _fitting(w, schedule, limit or arch_limit(), headroom)[0]


def build_gemm(w: Gemm, tile=None, schedule: str = DEFAULT_SCHEDULE, limit: int | None = None,
               headroom: float = HEADROOM) -> tuple[Program, dict]:
    """The program and its options; ``tile`` None: :func:`default_tile` against ``limit`` (default: the
    architecture's register limit, never the budget unless the caller passes it as ``limit``)."""
    built = gemm_build(w, tile, schedule, limit, headroom)
    return built.program, built.options


def gemm_build(w: Gemm, tile=None, schedule: str = DEFAULT_SCHEDULE, limit: int | None = None,
               headroom: float = HEADROOM) -> GemmBuild:
    """:func:`build_gemm`'s program and options, with the analysis choosing the tile made of the program."""
    check_gemm(w, tile, schedule)
    analysis = None
    if tile is None:
        tile, program, analysis = _fitting(w, schedule, limit or arch_limit(), headroom)
    else:
        tile = tuple(tile)
        program = gemm_program(w, tile, schedule)
    options = {"tile": list(tile), "schedule": schedule, "threads_per_block": threads_per_block(w, tile),
               "matrices_per_block": matrices_per_block(w, tile)}
    return GemmBuild(program, options, analysis)


def input_model(w: Gemm, options: dict) -> InputModel:
    """The inputs a check runs the program on: a grid of :data:`GRID_BLOCKS` blocks of
    ``threads_per_block`` threads for a batch of P+1..4P matrices (P per block), so a thread is past the
    batch's end (the early exit) on about 3 draws in 8 and in the body otherwise; ``beta`` 0 or not
    (the epilogue loads C or not); pointers and ``alpha`` at their defaults (see :mod:`engine.check.inputs`).
    Its three cases take both guards both ways at their edges: the first thread past the batch's end,
    the batch's last thread with ``beta`` not 0, and a thread inside with ``beta`` 0.
    The tile is the options' own, else :func:`default_tile`'s.

    Examples
    --------
    >>> dict((n, (lo, hi)) for n, lo, hi in input_model(Gemm(8, 8, 8), {"tile": [4, 4]}).ranges)
    {'%ctaid.x': (0, 3), '%tid.x': (0, 127), 'batch': (33, 128), 'beta': (0, 1)}
    """
    tile = tuple(options.get("tile") or default_tile(w, options.get("schedule", DEFAULT_SCHEDULE)))
    per_block, threads = matrices_per_block(w, tile), threads_per_block(w, tile)
    one = 0x3F800000                    # 1.0f: beta is read as its bits
    cases = {
        "the first thread past the batch's end (matrix = batch)":
            {"%ctaid.x": 1, "%tid.x": 0, "batch": per_block, "beta": one},
        "the last thread of the batch's last matrix (matrix = batch - 1), beta != 0":
            {"%ctaid.x": 1, "%tid.x": threads - 1, "batch": 2 * per_block, "beta": one},
        "a thread inside the batch, beta == 0": {"%ctaid.x": 0, "%tid.x": 0, "batch": 2 * per_block, "beta": 0},
    }
    return InputModel.of({"%tid.x": (0, threads - 1), "%ctaid.x": (0, GRID_BLOCKS - 1),
                          "batch": (per_block + 1, GRID_BLOCKS * per_block), "beta": (0, 1)}, cases)


def parse_sizes(text: str, count: int, lo: int, hi: int) -> tuple[int, ...] | None:
    """``AxB`` / ``AxBxC`` with ``count`` ASCII integers in ``lo..hi``; None for anything else.

    Examples
    --------
    >>> parse_sizes("8x4X2", 3, 2, 16), parse_sizes("8x1x2", 3, 2, 16)
    ((8, 4, 2), None)
    """
    parts = [p.strip() for p in text.lower().split("x")]
    if len(parts) != count or not all(fields.digits(p) and lo <= int(p) <= hi for p in parts):
        return None
    return tuple(int(p) for p in parts)


#: ``--tile fit``: the largest tile that keeps the headroom under the budget instead of the architecture's limit
FIT = "fit"


def parse_tile(text: str) -> tuple[int, int] | str:
    """``--tile TMxTN`` as a tile, or :data:`FIT`; a one-line error naming the text otherwise.

    Examples
    --------
    >>> parse_tile("4x8"), parse_tile("fit")
    ((4, 8), 'fit')
    """
    if text.strip().lower() == FIT:
        return FIT
    tile = parse_sizes(text, 2, 1, 16)
    if tile is None:
        raise RegtuneError(f"--tile must be TMxTN with TM, TN in 1..16 dividing M and N (e.g. 4x8), or 'fit'; "
                           f"got {fields.excerpt(text)}")
    return tile


class GemmWorkload:
    """GEMM in the workload registry (:class:`engine.workloads.Workload`); build options: ``tile`` (None:
    the largest keeping ``headroom`` under the architecture's register limit; ``"fit"``: under ``budget``
    instead; or [TM, TN]), ``schedule``, ``budget``, ``headroom``, ``arch``.

    Examples
    --------
    >>> w = GemmWorkload()
    >>> w.label(w.parse_label(["4x2x8"]))
    'gemm 4x2x8'
    >>> config, options = w.from_flags({"m": 4, "n": 2, "k": 8, "tile": "2x2", "schedule": "dot"})
    >>> config, options.tile, options.schedule
    (Gemm(m=4, n=2, k=8), (2, 2), 'dot')
    """

    name = "gemm"
    title = "GEMM (source 'gemm')"
    example = Gemm(8, 8, 8)
    flags = (Flag("--m", "m", int, required=True, help=f"rows of A and C, {SIZES.start}..{SIZES.stop - 1}"),
             Flag("--n", "n", int, required=True, help=f"columns of B and C, {SIZES.start}..{SIZES.stop - 1}"),
             Flag("--k", "k", int, required=True, help=f"columns of A, rows of B, {SIZES.start}..{SIZES.stop - 1}"),
             Flag("--tile", "tile", help="TMxTN (TM divides M, TN divides N), e.g. 4x4; or 'fit': the largest "
                  "that keeps 25%% headroom under --budget (default: the largest that keeps 25%% headroom under "
                  "the architecture's 255 registers, whatever the budget)"),
             Flag("--schedule", "schedule", default=DEFAULT_SCHEDULE,
                  help=f"one of: {', '.join(SCHEDULES)} (default {DEFAULT_SCHEDULE})"))

    def from_dict(self, data: dict, where: str) -> Gemm:
        return Gemm.from_dict(data, where)

    def to_dict(self, config: Gemm) -> dict:
        return config.as_dict()

    def configs(self) -> list[Gemm]:
        return gemm_configs()

    def build(self, config: Gemm, options: BuildOptions) -> tuple[Program, dict]:
        fit = options.tile == FIT
        limit = options.budget if fit else arch_limit(options.arch)
        return build_gemm(config, None if fit else options.tile, options.schedule, limit, options.headroom)

    def label(self, config: Gemm) -> str:
        return f"gemm {config.m}x{config.n}x{config.k}"

    def parse_label(self, words: list) -> Gemm:
        m, n, k = (int(x) for x in words[0].split("x"))
        return Gemm(m, n, k)

    def input_model(self, config: Gemm, options: dict) -> InputModel:
        return input_model(config, options)

    def check_options(self, config: Gemm, options: dict, where: str) -> dict:
        return check_options(config, options, where)

    def from_flags(self, values: dict) -> tuple[Gemm, BuildOptions]:
        from engine.workloads import BuildOptions

        tile = parse_tile(values["tile"]) if values.get("tile") else None
        return Gemm(values["m"], values["n"], values["k"]), BuildOptions(tile=tile, schedule=values["schedule"])


register(GemmWorkload())
