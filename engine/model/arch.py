"""GPU architectures: their limits, occupancy, and register-bank conflicts.

Invariant: every number comes from a data file in ``resources/arch`` (each
with its source beside it); the occupancy calculator follows NVIDIA's
``cuda_occupancy.h`` rules: registers are allocated per warp in units of
256 within each of 4 sub-partitions, shared memory per block gets the
reserved 1 KB and is rounded up to 128 bytes, and the active blocks are
the smallest of the warp, block, register and shared-memory limits.

The architectures are exactly the ``resources/arch/*.toml`` files
(:data:`ARCHS`, ordered by compute capability); adding one is adding its
file. The defaults every interface uses are derived from that list here
and nowhere else: :data:`DEFAULT_ARCH` (the oldest, which plans target and
the budget sweep runs on) and :data:`DEFAULT_BUILD_ARCHS` (the oldest and
the newest, which a build measures: the PTX is compiled once for the
oldest, and the newest shows what a later ptxas makes of it).

Examples
--------
>>> ARCHS[0] == DEFAULT_ARCH, DEFAULT_BUILD_ARCHS == (ARCHS[0], ARCHS[-1])
(True, True)
>>> a100 = load_arch("sm_80")
>>> occ = occupancy(a100, registers=128, threads=256)
>>> occ.active_blocks, occ.active_warps, occ.limited_by
(2, 16, ('registers',))
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass, field, replace
from importlib.resources import files
from typing import TYPE_CHECKING

from engine.base.errors import RegtuneError

if TYPE_CHECKING:
    import numpy as np  # imported where it is used: the registry and the tables load without numpy


def _registry() -> tuple[str, ...]:
    """The names of the ``resources/arch`` data files, ordered by their compute capability."""
    found = {}
    for entry in (files("resources") / "arch").iterdir():
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            found[entry.name.removesuffix(".toml")] = tuple(data["compute_capability"])
    return tuple(sorted(found, key=lambda name: (found[name], name)))


#: every architecture known: one per file in ``resources/arch``, oldest first
ARCHS = _registry()
#: the architecture a plan targets and a budget sweep runs on when none is named
DEFAULT_ARCH = ARCHS[0]
#: the architectures a build measures when none are named: the oldest and the newest
DEFAULT_BUILD_ARCHS = (ARCHS[0], ARCHS[-1]) if len(ARCHS) > 1 else ARCHS


@dataclass(frozen=True)
class BankModel:
    """Register banks: bank(r) = r mod ``banks``; each bank serves ``reads_per_bank`` reads a cycle."""

    name: str
    banks: int
    reads_per_bank: int

    def conflicts(self, sources) -> int:
        """Extra cycles for one instruction reading the registers ``sources``.

        Examples
        --------
        >>> m = BankModel("two-banks-two-reads", 2, 2)
        >>> m.conflicts([0, 2, 4]), m.conflicts([0, 1, 2]), m.conflicts([0, 0, 2])
        (1, 0, 0)
        """
        per_bank: dict[int, int] = {}
        for r in set(sources):
            per_bank[r % self.banks] = per_bank.get(r % self.banks, 0) + 1
        return sum(math.ceil(n / self.reads_per_bank) - 1 for n in per_bank.values())

    def stall_added(self, held: int) -> int:
        """Extra cycles one more source register adds to a bank that ``held`` distinct source registers of the
        same instruction are in already (the step of :meth:`conflicts` for one bank).

        Examples
        --------
        >>> m = BankModel("two-banks-two-reads", 2, 2)
        >>> [m.stall_added(n) for n in range(5)]
        [0, 0, 1, 0, 1]
        >>> all(m.conflicts(range(0, 2 * (n + 1), 2)) - m.conflicts(range(0, 2 * n, 2)) == m.stall_added(n)
        ...     for n in range(8))
        True
        """
        return int(held > 0 and held % self.reads_per_bank == 0)


@dataclass(frozen=True)
class Arch:
    """One GPU architecture's limits (see the data files for their sources)."""

    name: str
    gpu: str
    compute_capability: tuple[int, int]
    warp_size: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    #: the lowest ``-maxrregcount`` ptxas takes as given (it raises lower ones to this, measured)
    min_register_cap: int
    register_allocation_unit: int
    register_sub_partitions: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    shared_memory_per_sm: int
    shared_memory_per_block: int
    shared_memory_reserved_per_block: int
    shared_memory_allocation_unit: int
    bank_model: BankModel


@functools.cache
def load_arch(name: str) -> Arch:
    """The architecture ``name``, one of :data:`ARCHS` (checked before any file is read)."""
    if name not in ARCHS:
        raise RegtuneError(f"unknown architecture {name!r} (known: {', '.join(ARCHS)})")
    data = tomllib.loads((files("resources") / "arch" / f"{name}.toml").read_text(encoding="utf-8"))
    data["compute_capability"] = tuple(data["compute_capability"])
    data["bank_model"] = BankModel(**data["bank_model"])
    data.pop("latency", None)           # the latency table: load_latencies
    data.pop("throughput", None)        # the time model's machine: engine.model.timemodel.load_machine
    data.pop("read_scoreboard", None)   # the variable-latency classes: load_latencies
    data.pop("issue", None)             # each class's pipe and issue interval: load_latencies
    return Arch(**data)


def check_register_cap(arch: Arch, cap: int) -> int:
    """``cap`` when ptxas applies it to ``arch`` as given; a one-line error naming the cap and the range otherwise.

    ptxas raises a ``-maxrregcount`` below :attr:`Arch.min_register_cap` to
    it and ignores one above :attr:`Arch.max_registers_per_thread` (both
    measured, see ``resources/arch``): such a flag would not be the cap it says.

    Examples
    --------
    >>> check_register_cap(load_arch("sm_80"), 88)
    88
    >>> check_register_cap(load_arch("sm_80"), 8)
    Traceback (most recent call last):
    ...
    engine.base.errors.RegtuneError: -maxrregcount=8 is not a cap ptxas applies on sm_80: it takes 24..255 (it would raise 8 to 24)
    """
    low, high = arch.min_register_cap, arch.max_registers_per_thread
    if isinstance(cap, bool) or not isinstance(cap, int) or not low <= cap <= high:
        what = (f"it would raise {cap} to {low}" if isinstance(cap, int) and cap < low
                else f"it would ignore {cap}" if isinstance(cap, int) else f"{type(cap).__name__} is not a count")
        raise RegtuneError(f"-maxrregcount={cap} is not a cap ptxas applies on {arch.name}: it takes {low}..{high} "
                           f"({what})")
    return cap


def plan_register_cap(arch: Arch, registers: int) -> int | None:
    """The ``-maxrregcount`` that realises a plan of ``registers`` on ``arch``: that count; ptxas's floor when
    the plan needs fewer (ptxas would raise it there anyway); None (no flag) at the arch's maximum, which ptxas
    never exceeds without a flag (the flag at the maximum changes ptxas's schedule, not its limit).

    Examples
    --------
    >>> a = load_arch("sm_90")
    >>> plan_register_cap(a, 88), plan_register_cap(a, 12), plan_register_cap(a, 255)
    (88, 24, None)
    """
    if registers >= arch.max_registers_per_thread:
        return None
    return check_register_cap(arch, max(int(registers), arch.min_register_cap))


@dataclass(frozen=True)
class Latencies:
    """One architecture's latency table (a model's data): class -> cycles, and class -> where the figure
    comes from. Cycles run from an instruction's issue until a dependent instruction may issue."""

    arch: str
    cycles: dict
    sources: dict
    #: the variable-latency classes (``[read_scoreboard]``): class -> cycles from issue until the instruction has
    #: read its source registers (its read barrier is released); a class not here reads them at issue
    reads: dict = field(default_factory=dict)
    read_sources: dict = field(default_factory=dict)
    #: ``[issue]``: class -> cycles from its issue until its pipe takes the warp's next instruction of that pipe
    #: (the issue interval), class -> the pipe's name, class -> the source; every class of ``cycles`` has one
    issue: dict = field(default_factory=dict)
    pipes: dict = field(default_factory=dict)
    issue_sources: dict = field(default_factory=dict)

    def variable(self, cls: str) -> bool:
        """Whether class ``cls`` is variable-latency (tracked by scoreboards, reads its operands late)."""
        return cls in self.reads


@functools.cache
def load_latencies(name: str) -> Latencies:
    """The ``[latency]``, ``[read_scoreboard]`` and ``[issue]`` tables of the architecture ``name``; every class
    has integer cycles and a source, and in ``[issue]`` a pipe.

    Examples
    --------
    >>> t = load_latencies("sm_80")
    >>> t.cycles["ffma"], "Accel-Sim" in t.sources["ffma"]
    (4, True)
    >>> t.variable("ld_global"), t.variable("ffma"), t.reads["mufu"]
    (True, False, 8)
    >>> t.issue["ffma"], t.pipes["ffma"], t.pipes["ld_global"]
    (2, 'fp32', 'lsu')
    """
    load_arch(name)
    data = tomllib.loads((files("resources") / "arch" / f"{name}.toml").read_text(encoding="utf-8"))
    table = latency_table(name, data.get("latency"))
    reads = data.get("read_scoreboard") or {}
    for cls, row in sorted(reads.items()):
        if cls not in table.cycles or not isinstance(row.get("cycles"), int) or row["cycles"] < 1 \
                or not str(row.get("source", "")).strip():
            raise RegtuneError(f"{name}: read-scoreboard class {cls!r} needs a [latency] row, integer cycles >= 1 "
                               "and a source")
    issue = issue_table(name, data.get("issue"), table.cycles)
    return replace(table, reads={c: r["cycles"] for c, r in reads.items()},
                   read_sources={c: r["source"] for c, r in reads.items()},
                   issue={c: r["cycles"] for c, r in issue.items()}, pipes={c: r["pipe"] for c, r in issue.items()},
                   issue_sources={c: r["source"] for c, r in issue.items()})


def issue_table(name: str, table: dict | None, classes) -> dict:
    """The ``[issue]`` rows of arch ``name``, checked: one for each latency class in ``classes``, each with integer
    cycles >= 1, a pipe and a source; a one-line error naming the first class (in sorted order) that has none.

    Examples
    --------
    >>> issue_table("sm_80", {"ffma": {"cycles": 2, "pipe": "fp32", "source": "a source"}}, ["ffma", "alu"])
    Traceback (most recent call last):
    ...
    engine.base.errors.RegtuneError: sm_80: latency class 'alu' needs an [issue] row with integer cycles >= 1, a pipe and a source
    """
    table = table or {}
    for cls in sorted(set(classes) | set(table)):
        row = table.get(cls, {})
        if cls not in classes or not isinstance(row.get("cycles"), int) or row["cycles"] < 1 \
                or not str(row.get("pipe", "")).strip() or not str(row.get("source", "")).strip():
            raise RegtuneError(f"{name}: latency class {cls!r} needs an [issue] row with integer cycles >= 1, a pipe "
                               "and a source")
    return table


def latency_table(name: str, table: dict | None) -> Latencies:
    """The latencies of a ``[latency]`` table as read from arch ``name``'s file; a one-line error naming the
    first class (in sorted order) without integer cycles >= 1 or without a source.

    Examples
    --------
    >>> latency_table("sm_80", {"ffma": {"cycles": 4}})
    Traceback (most recent call last):
    ...
    engine.base.errors.RegtuneError: sm_80: latency class 'ffma' needs integer cycles >= 1 and a source
    """
    if not table:
        raise RegtuneError(f"{name}: resources/arch/{name}.toml has no [latency] table")
    for cls, row in sorted(table.items()):
        if not isinstance(row.get("cycles"), int) or row["cycles"] < 1 or not str(row.get("source", "")).strip():
            raise RegtuneError(f"{name}: latency class {cls!r} needs integer cycles >= 1 and a source")
    return Latencies(name, {c: r["cycles"] for c, r in table.items()}, {c: r["source"] for c, r in table.items()})


@dataclass(frozen=True)
class Occupancy:
    """Active blocks and warps per SM, and what limits them."""

    arch: str
    registers: int
    threads: int
    shared_bytes: int
    warps_per_block: int
    registers_per_warp: int
    shared_per_block_allocated: int
    limits: dict
    active_blocks: int
    active_warps: int
    occupancy: float
    limited_by: tuple[str, ...]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _register_limit(arch: Arch, registers: int, warps: int) -> tuple[int, int]:
    per_warp = _round_up(registers * arch.warp_size, arch.register_allocation_unit)
    assumed = per_warp * _round_up(warps, arch.register_sub_partitions)
    if registers > arch.max_registers_per_thread or assumed > arch.registers_per_block:
        return 0, per_warp
    if per_warp == 0:
        return arch.max_blocks_per_sm, per_warp
    warps_per_part = (arch.registers_per_sm // arch.register_sub_partitions) // per_warp
    return warps_per_part * arch.register_sub_partitions // warps, per_warp


def _shared_limit(arch: Arch, shared_bytes: int) -> tuple[int, int]:
    allocated = _round_up(shared_bytes + arch.shared_memory_reserved_per_block, arch.shared_memory_allocation_unit)
    if allocated > arch.shared_memory_per_block + arch.shared_memory_reserved_per_block:
        return 0, allocated
    return arch.shared_memory_per_sm // allocated, allocated


def occupancy(arch: Arch, registers: int, threads: int, shared_bytes: int = 0) -> Occupancy:
    """Occupancy of a kernel using ``registers`` per thread in blocks of ``threads``."""
    if not 1 <= threads <= arch.max_threads_per_block:
        raise RegtuneError(f"{arch.name}: threads per block must be 1..{arch.max_threads_per_block}, got {threads}")
    if registers < 0 or shared_bytes < 0:
        raise RegtuneError(f"{arch.name}: registers and shared memory must not be negative")
    warps = -(-threads // arch.warp_size)
    by_registers, per_warp = _register_limit(arch, registers, warps)
    by_shared, allocated = _shared_limit(arch, shared_bytes)
    limits = {"warps": arch.max_warps_per_sm // warps, "blocks": arch.max_blocks_per_sm,
              "registers": by_registers, "shared memory": by_shared}
    blocks = min(limits.values())
    return Occupancy(arch.name, registers, threads, shared_bytes, warps, per_warp, allocated, limits,
                     blocks, blocks * warps, blocks * warps / arch.max_warps_per_sm,
                     tuple(k for k, v in limits.items() if v == blocks))


def next_register_step(arch: Arch, registers: int, threads: int, shared_bytes: int = 0) -> tuple[int, int] | None:
    """The most registers per thread that gives more active warps, and those warps.

    None when fewer registers cannot help (registers do not limit, or 0 already).

    Examples
    --------
    >>> next_register_step(load_arch("sm_80"), 130, 256)
    (128, 16)
    """
    now = occupancy(arch, registers, threads, shared_bytes).active_warps
    for r in range(registers - 1, -1, -1):
        warps = occupancy(arch, r, threads, shared_bytes).active_warps
        if warps > now:
            return r, warps
    return None


def bank_conflicts(program, assignment: dict, model: BankModel, analysis=None) -> tuple[int, list[tuple[int, int]]]:
    """Predicted bank conflicts of an allocated program: the total and (instruction, cycles) pairs.

    Each instruction's distinct source registers (operands, both halves of
    a pair) are counted per bank; see :meth:`BankModel.conflicts`.
    ``analysis``, the caller's liveness analysis of ``program``, saves computing it again.
    """
    import numpy as np

    from engine.analysis.liveness import analyze

    analysis = analysis if analysis is not None else analyze(program)
    reads = analysis.operand_reads
    get = assignment.get
    base = np.fromiter(((get(name) or (-1,))[0] for name in analysis.names), dtype=np.int64, count=len(analysis.names))
    ins, val = reads[:, 0], reads[:, 1]
    keep = base[val] >= 0
    ins, val = ins[keep], val[keep]
    pair = analysis.widths[val] == 2
    ins = np.concatenate([ins, ins[pair]])
    regs = np.concatenate([base[val], base[val[pair]] + 1])
    if not len(regs):
        return 0, []
    unique = _distinct(ins * (1 << 20) + regs)
    ins, regs = unique >> 20, unique & ((1 << 20) - 1)
    cell = np.sort(ins * model.banks + regs % model.banks)
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    cells, counts = cell[starts], np.diff(np.r_[starts, len(cell)])
    cost = -(-counts // model.reads_per_bank) - 1
    per = np.bincount(cells[cost > 0] // model.banks, weights=cost[cost > 0])
    where = np.flatnonzero(per)
    return int(per.sum()), [(int(i), int(per[i])) for i in where]


def _distinct(codes: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hash path is slower on these sizes)."""
    import numpy as np

    codes = np.sort(codes)
    return codes[np.r_[True, codes[1:] != codes[:-1]]]
