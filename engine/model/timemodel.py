"""Model time: a latency-hiding model of a kernel's time on one architecture (a model, labelled as one).

Everything here is a model and every interface names it "model time"; it
is never shown as, or mixed with, a time measured on a GPU. It is a stage
of its own: it takes figures other stages computed (issue cycles per warp,
a register count, a grid, bytes moved) and returns a typed
:class:`ModelTime`; it changes nothing.

The machine
-----------
Each architecture's ``[throughput]`` table in ``resources/arch/*.toml``
names one product that stands for it (sm_80: A100 SXM4 40 GB; sm_86: A10;
sm_89: L4; sm_90: H100 SXM5) and gives, each with its source, the SM count
``S``, the boost clock ``f`` (MHz), the memory bandwidth ``BW`` (GB/s) and
the warp schedulers per SM ``q`` (each issues one warp instruction a cycle).

The model
---------
Inputs: ``C``, issue cycles of one warp alone (in order, each instruction
waiting on its operands), with ``I`` instructions issued, either the
plan's (:mod:`engine.model.ilp`, ``source="plan"``) or ptxas's SASS
(:mod:`kernels.control`, ``source="sass"``): every :class:`ModelTime`
says which; the registers per thread and threads per block, which give
the active blocks ``b`` and warps ``W = b * w`` per SM
(:func:`engine.model.arch.occupancy`); the grid's ``G`` blocks; and the bytes
one thread moves along its executed path, global loads and stores plus
spill traffic (local loads and stores), :func:`thread_traffic`.

- waves = ceil(G / (S * b))
- cycles per wave = max(C, ceil(W * I / q)): the resident warps overlap one
  another's latencies completely (latency-bound: a wave lasts one warp's
  own chain, ``C``) until the schedulers are busy every cycle
  (issue-bound: ``W * I`` warp instructions at ``q`` a cycle).
- compute time = waves * cycles per wave / f
- memory time = G * threads per block * bytes per thread / BW
- **model time** = max(compute time, memory time)

Assumptions, stated because they are not true of every kernel: every
byte a thread moves crosses DRAM once (no reuse in L1 or L2, so memory
time is an upper bound on DRAM time, and spill traffic, which mostly hits
L1, is priced the same way); every thread runs the executed path (the
longer side of each ``if``); warps of a wave start together and a wave
ends with its slowest warp; the clock is the boost clock; a launch costs
nothing (measured times include the launch overhead); the bank conflicts
and the dual issue of some pairs are ignored.

Invariant: more bytes, more issue cycles or instructions, more blocks, or
fewer active blocks per SM at a latency-bound point never make the model
time shorter; every figure of the machine comes from the arch file with its
source.

Examples
--------
>>> t = model_time("sm_80", issue_cycles=1000, instructions=100, registers=32, threads=128, blocks=108 * 16,
...                bytes_per_thread=0, source="plan")
>>> t.active_blocks, t.warps_per_sm, t.waves, t.cycles_per_wave, t.bound
(16, 64, 1, 1600, 'issue')
>>> round(t.model_time_us, 3)      # 1600 cycles at 1410 MHz
1.135
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib.resources import files

from engine.base.errors import RegtuneError
from engine.ir.core import WIDTHS, Program
from engine.model.arch import load_arch, occupancy
from engine.model.ilp import executed_path

#: where an issue-cycle figure comes from
SOURCES = {"plan": "the plan's issue model (engine/model/ilp.py)",
           "sass": "ptxas's SASS control bits (kernels/control.py)"}
#: the figures a ``[throughput]`` table holds, each as ``{value, source}``
MACHINE_FIGURES = ("sms", "clock_mhz", "memory_bandwidth_gbs", "schedulers_per_sm")


@dataclass(frozen=True)
class Machine:
    """The product standing for an arch in the time model, and where each figure comes from."""

    arch: str
    product: str
    sms: int
    clock_mhz: int
    memory_bandwidth_gbs: int
    schedulers_per_sm: int
    sources: dict


@functools.cache
def load_machine(name: str) -> Machine:
    """The ``[throughput]`` table of arch ``name``; a one-line error naming a figure without a value or source.

    Examples
    --------
    >>> m = load_machine("sm_80")
    >>> m.product, m.sms, m.clock_mhz, m.memory_bandwidth_gbs, "whitepaper" in m.sources["sms"]
    ('A100 SXM4 40 GB', 108, 1410, 1555, True)
    """
    load_arch(name)
    data = tomllib.loads((files("resources") / "arch" / f"{name}.toml").read_text(encoding="utf-8"))
    table = data.get("throughput") or {}
    for key in MACHINE_FIGURES:
        row = table.get(key)
        if not isinstance(row, dict) or not isinstance(row.get("value"), int) or row["value"] < 1 \
                or not str(row.get("source", "")).strip():
            raise RegtuneError(f"{name}: [throughput] {key} needs an integer value >= 1 and a source")
    return Machine(name, str(table.get("product", "")), *(table[k]["value"] for k in MACHINE_FIGURES),
                   {k: table[k]["source"] for k in MACHINE_FIGURES})


@dataclass(frozen=True)
class Traffic:
    """Bytes one thread moves along its executed path: global loads and stores, local (spill) loads and stores."""

    global_bytes: int
    local_bytes: int

    @property
    def total(self) -> int:
        return self.global_bytes + self.local_bytes


def _moved(program: Program, ins) -> int:
    """Bytes a load or store moves: its result's width, or its stored value's (the last operand)."""
    name = ins.defs[0].name if ins.opcode.startswith("ld") else ins.uses[-1]
    return 4 * WIDTHS[program.values[name].type]


def thread_traffic(program: Program, path=None) -> Traffic:
    """The bytes one thread of ``program`` moves along its executed path (:func:`engine.model.ilp.executed_path`;
    ``path``: the caller's).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
    ...           "  st.local 0, %x\\n  %y:f32 = ld.local 0\\n  st.global %pa, 0, %y\\n  exit\\n")
    >>> thread_traffic(p)
    Traffic(global_bytes=8, local_bytes=8)
    """
    per = [0, 0]
    counts = {}
    for i in (path if path is not None else executed_path(program)).indices.tolist():
        counts[i] = counts.get(i, 0) + 1
    instructions = program.instructions
    for i, n in counts.items():
        ins = instructions[i]
        space = ins.opcode.split(".")[1] if ins.opcode.split(".")[0] in ("ld", "st") and "." in ins.opcode else ""
        if space in ("global", "local"):
            per[space == "local"] += n * _moved(program, ins)
    return Traffic(per[0], per[1])


@dataclass(frozen=True)
class ModelTime:
    """Model time of one kernel on one arch (see the module docstring); never a measured time.

    ``source`` names whose issue cycles it uses (:data:`SOURCES`); ``bound``
    is "latency", "issue" (compute time, by the larger term of a wave) or
    "memory"; times in microseconds.
    """

    arch: str
    product: str
    source: str
    issue_cycles: int
    instructions: int
    registers: int
    blocks: int
    threads: int
    active_blocks: int
    warps_per_sm: int
    waves: int
    cycles_per_wave: int
    compute_us: float
    bytes_moved: int
    memory_us: float
    model_time_us: float
    bound: str


def model_time(arch: str, issue_cycles: int, instructions: int, registers: int, threads: int, blocks: int,
               bytes_per_thread: int, source: str) -> ModelTime:
    """The model time of ``blocks`` blocks of ``threads`` threads on ``arch`` (see the module docstring).

    A one-line error when the kernel does not fit on an SM or a figure is out of range.

    Examples
    --------
    >>> t = model_time("sm_80", 5000, 100, 32, 128, 1, 0, "sass")
    >>> t.waves, t.cycles_per_wave, t.bound, round(t.model_time_us, 3)
    (1, 5000, 'latency', 3.546)
    """
    if source not in SOURCES:
        raise RegtuneError(f"unknown issue-cycle source {source!r} (known: {', '.join(SOURCES)})")
    if min(issue_cycles, instructions, blocks) < 1 or bytes_per_thread < 0:
        raise RegtuneError(f"{arch}: model time needs issue cycles, instructions and blocks >= 1 and bytes >= 0, "
                           f"got {issue_cycles}, {instructions}, {blocks}, {bytes_per_thread}")
    m = load_machine(arch)
    occ = occupancy(load_arch(arch), registers, threads)
    if occ.active_blocks == 0:
        raise RegtuneError(f"{arch}: a block of {threads} threads at {registers} registers does not fit on an SM")
    waves = math.ceil(blocks / (m.sms * occ.active_blocks))
    issue = math.ceil(occ.active_warps * instructions / m.schedulers_per_sm)
    per_wave = max(issue_cycles, issue)
    compute = waves * per_wave / m.clock_mhz
    moved = blocks * threads * bytes_per_thread
    memory = moved / (m.memory_bandwidth_gbs * 1e3)
    bound = "memory" if memory > compute else "latency" if issue_cycles >= issue else "issue"
    return ModelTime(arch, m.product, source, issue_cycles, instructions, registers, blocks, threads,
                     occ.active_blocks,
                     occ.active_warps, waves, per_wave, compute, moved, memory, max(compute, memory), bound)
