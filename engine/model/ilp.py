"""ILP and the cost of register reuse: a plan's dependence graph, critical path and issue cycles (a model).

Everything here is a model and every interface labels it so ("ILP (model)",
"cycles/warp (model)"). It is a stage of its own, like engine.predict: it
reads a plan (or a program) and returns typed figures; plan files are not
changed.

Definitions
-----------
- **Executed path.** The instructions one thread runs, in order. The
  program's structure tree (:func:`engine.ir.cfg.structure`) is walked
  from the top: a counted loop's body is repeated its trip count
  (:func:`engine.ir.cfg.loop_trips`; a loop whose count cannot be read
  runs once and the path says so); of an ``if``, the side with more
  instructions runs (GEMM's and MHA's bounds check: a thread inside the
  matrix; GEMM's ``beta != 0`` epilogue; spill code is not counted, so a
  plan runs the side its program without spill code runs); ``break`` ends nothing early (a
  counted loop leaves at its latch) and ``return`` ends the path. A program
  the structurer refuses is taken in layout order, each block once, and
  the path says so. Because the loop is unrolled along the path,
  loop-carried dependences are included: iteration k+1 reads what
  iteration k wrote. The path is at most :data:`MAX_PATH` instructions
  (the interpreter's limit for one run).
- **True dependences** (read after write): an instruction depends on the
  last earlier instruction on the path that defined each value it reads (a
  guarded definition also reads the value it may leave unchanged), and a
  spill reload (``ld.local SLOT``) on the last spill store to its slot.
- **False dependences**, from the plan's reuse of physical registers (every
  register of a value, both of a pair) and spill slots: write after read
  (a write waits for the reads of the previous contents) and write after
  write. Predicates are not allocated by a plan and get none.
- **Weights**, from the architecture's latency table
  (``resources/arch/*.toml``, :func:`engine.model.arch.load_latencies`, each
  opcode in a class by :func:`latency_class`), by NVIDIA's hazard rules
  (Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via
  Microbenchmarking", arXiv 1804.06826, p. 12 on control codes: fixed-latency
  instructions are scheduled by stall counts, variable-latency ones by
  read and write dependency barriers): read after write, the producer's
  latency; write after read (:func:`war_weight`), 1 cycle after a
  fixed-latency reader (it read its operands at issue: the reuse costs no
  wait) and the reader's read scoreboard after a variable-latency one
  (``[read_scoreboard]``: memory, ``shfl``, MUFU); write after write
  (:func:`waw_weight`), the first writer's latency when it is
  variable-latency (its write scoreboard), else ``max(1, latency(first) -
  latency(second) + 1)`` (fixed-latency results land in order). Spill
  slots: write after read 1 cycle, write after write as fixed latency.
- **Critical path**: the longest path in cycles, ending when the last
  result is written (an instruction without a result ends one cycle after
  it issues). **ILP** = instructions on the path / critical path.
- **Reference**: the program without spill code with true dependences
  only: unlimited registers, no reuse.
- **Issue model** (``cycles``, "cycles/warp (model)"): cycles per warp for
  one warp issuing at most one instruction per cycle, each waiting for its
  true and false dependences and for its pipe (``[issue]`` in the arch
  table: an FFMA takes the FMA pipe 2 cycles, a load the LD/ST pipe 4, each
  with its source), in the order a list scheduler gives each block, once
  for all its runs (:func:`list_schedule`: of the instructions whose
  dependences are met, the one with the longest path to the block's end
  first), ending when the last result is written. ptxas schedules the PTX it is given so (its SASS
  issues a block's loads ahead of the arithmetic the plan interleaves them
  with), so the plan's order is not the kernel's; the plan's registers
  are: a false dependence is an edge the scheduler must keep, and what a
  reuse costs is the hoisting it forbids.
- **In order** (``in_order_cycles``): the same warp issuing the path in
  its own order, nothing moved: ``issue(i) = max(issue(i-1) + 1, the cycle
  its pipe is free, max over edges p->i of issue(p) + weight)``.
- Global and shared memory accesses are not ordered by address (the plan
  changes none of them); only spill slots are.

Invariant: every figure is computed from the plan or program it describes
and the latency table; a false dependence never shortens the critical
path: a plan's critical path is never shorter than the reference's, and without spill code (the
same instructions) its ILP never exceeds the reference's.

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
...           "  %y:f32 = fma %x, %x, %x\\n  st.global %pa, 0, %y\\n  exit\\n")
>>> f = program_ilp(p, "sm_80")
>>> f.instructions, f.critical_path, f.cycles
(5, 409, 410)
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from engine.base.errors import RegtuneError
from engine.base.limits import MAX_STEPS
from engine.ir.cfg import (
    Code,
    If,
    Loop,
    Return,
    Seq,
    StructureError,
    loop_trips,
    structure,
)
from engine.ir.core import Instruction, Program
from engine.ir.spill import has_spill_code, remove_spill_code, spill_slot
from engine.model.arch import DEFAULT_ARCH, load_latencies

#: the most instructions an executed path may have (the interpreter's limit for one run)
MAX_PATH = MAX_STEPS
#: edge kinds
RAW, WAR, WAW = 0, 1, 2
KIND_NAMES = ("true (read after write)", "false (write after read)", "false (write after write)")

_MUFU = frozenset({"exp", "ex2", "rcp", "rsqrt", "sqrt", "lg2", "sin", "cos", "tanh"})
_ARITH = frozenset({"add", "sub", "mul", "fma", "mad", "max", "min", "neg", "abs"})
_MEMORY = {("ld", "global"): "ld_global", ("ld", "local"): "ld_local", ("ld", "shared"): "ld_shared",
           ("st", "global"): "st_global", ("st", "local"): "st_local", ("st", "shared"): "st_shared"}


def latency_class(ins: Instruction) -> str:
    """The latency-table class of an instruction (``default`` for opcodes without one of their own).

    Examples
    --------
    >>> from engine.ir.parser import parse_instruction as pi
    >>> [latency_class(pi(t)) for t in ("%a:f32 = fma %b, %c, %a", "%i:i32 = mul %j, 4",
    ...  "%w:u64 = mul.wide.s32 %i, 4", "%e:f32 = exp %x", "%h:f32 = cvt.f32.f16.lo %p",
    ...  "%x:f32 = ld.local 3", "%i:i32 = div.u32 %t, 2")]
    ['ffma', 'imad', 'imad', 'mufu', 'cvt', 'ld_local', 'default']
    """
    parts = ins.opcode.split(".")
    base = parts[0]
    if base in ("ld", "st"):
        return _MEMORY.get((base, parts[1] if len(parts) > 1 else ""), "default")
    if base in ("br", "cbr", "exit"):
        return "branch"
    if base in _MUFU:
        return "mufu"
    if base in ("cvt", "shfl"):
        return base
    if base in ("mov", "setp", "param") or base == "sreg":
        return "alu"
    if base in _ARITH:
        return _arith_class(base, ins.opcode, ins.defs[0].type if ins.defs else "f32")
    return "default"


def _arith_class(base: str, opcode: str, result: str) -> str:
    if result == "f64":
        return "dfma"
    if result in ("i32", "u64"):
        return "imad" if base in ("mul", "mad", "fma") or opcode.startswith("mul.wide") else "alu"
    return "ffma"


@dataclass(frozen=True)
class Path:
    """An executed path: ``indices[t]`` is the linear index of the t-th instruction run; ``note`` says how
    the path was taken."""

    indices: np.ndarray
    note: str

    def __len__(self) -> int:
        return len(self.indices)


def executed_path(program: Program, trips: dict | None = None) -> Path:
    """The path one thread runs (see the module docstring); a one-line RegtuneError past :data:`MAX_PATH`.
    ``trips``: the caller's :func:`engine.ir.cfg.loop_trips` of ``program``.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
    ...           "  %p:pred = setp.lt %i, 3\\n  cbr %p, loop, done\\n.block done\\n  exit\\n")
    >>> executed_path(p).indices.tolist()
    [0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4]
    """
    try:
        tree = structure(program)
    except StructureError as exc:
        return _capped(np.arange(len(program.instructions)), f"layout order, each block once (not structured: {exc})",
                       program)
    trips, unread = (loop_trips(program) if trips is None else trips), []
    # an if's side is weighed without spill code, so a plan runs the side its program without spill code runs
    work = np.array([not (ins.opcode in ("ld.local", "st.local") and spill_slot(ins) is not None)
                     for ins in program.instructions], dtype=np.int64)
    chunks, _ = _walk(tree, program, trips, unread, work)
    note = "executed path: loops by their trip counts, the longer side of each if"
    if unread:
        note += f"; loops without a readable trip count run once (blocks {', '.join(unread)})"
    indices = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    return _capped(indices, note, program)


def _capped(indices: np.ndarray, note: str, program: Program) -> Path:
    if len(indices) > MAX_PATH:
        raise RegtuneError(f"{program.name}: its executed path has {len(indices):,} instructions, more than the ILP "
                           f"model's limit of {MAX_PATH:,}")
    return Path(indices.astype(np.int64), note)


def _walk(node, program: Program, trips: dict, unread: list, work: np.ndarray) -> tuple[list, bool]:
    """(instruction index arrays in order, whether a return ended the path)."""
    if isinstance(node, Code):
        start = program.block_starts[node.index]
        return [np.arange(start, start + len(program.blocks[node.index].instructions))], False
    if isinstance(node, Seq):
        return _walk_seq(node.items, program, trips, unread, work)
    if isinstance(node, Loop):
        return _walk_loop(node, program, trips, unread, work)
    if isinstance(node, If):
        sides = [_walk(s, program, trips, unread, work) for s in (node.then, node.orelse or Seq())]
        return max(sides, key=lambda side: sum(int(work[c].sum()) for c in side[0]))
    return [], isinstance(node, Return)


def _walk_seq(items, program: Program, trips: dict, unread: list, work: np.ndarray) -> tuple[list, bool]:
    out: list = []
    for item in items:
        chunks, ended = _walk(item, program, trips, unread, work)
        out += chunks
        if ended:
            return out, True
    return out, False


def _walk_loop(node: Loop, program: Program, trips: dict, unread: list, work: np.ndarray) -> tuple[list, bool]:
    names = [item.name for item in node.body.items if isinstance(item, Code)]
    counts = [trips[n] for n in names if n in trips]
    if not counts:
        unread.append(names[0] if names else "?")
    body, ended = _walk(node.body, program, trips, unread, work)
    once = np.concatenate(body) if body else np.zeros(0, dtype=np.int64)
    if ended or not counts:
        return [once], ended
    if len(once) * max(counts[0], 1) > MAX_PATH:
        raise RegtuneError(f"{program.name}: loop {names[0]} runs {counts[0]:,} times {len(once):,} instructions, "
                           f"more than the ILP model's limit of {MAX_PATH:,}")
    return [np.tile(once, max(counts[0], 1))], False


@dataclass(frozen=True)
class DependenceGraph:
    """The dependence graph over an executed path: node t is the t-th instruction run.

    Attributes
    ----------
    path : the executed path
    latency : each node's latency in cycles (its class in the latency table)
    finish : cycles from each node's issue until it is done (its latency when it defines a value, else 1)
    src, dst, weight, kind : the edges (src < dst), their weights in cycles and kinds (RAW, WAR, WAW)
    arch : the latency table's architecture
    region : each node's scheduling region, non-decreasing along the path: one run of a block (a block instance;
        a loop's body is one region per trip); None: each node its own region (program order)
    last : whether a node must issue last in its region (a block's terminator: ``br``, ``cbr``, ``exit``)
    pipe, interval : each node's pipe (an index into the table's pipe names) and its issue interval in cycles
        (``[issue]``: until that pipe takes the warp's next instruction); None: one pipe, one cycle
    """

    path: Path
    latency: np.ndarray
    finish: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    arch: str
    region: np.ndarray | None = None
    last: np.ndarray | None = None
    pipe: np.ndarray | None = None
    interval: np.ndarray | None = None

    def count(self, kind: int) -> int:
        """Edges of one kind."""
        return int((self.kind == kind).sum())


def dependence_graph(program: Program, arch: str = DEFAULT_ARCH, assignment: dict | None = None,
                     path: Path | None = None) -> DependenceGraph:
    """True dependences of ``program`` and, with an ``assignment`` (value -> registers), the false ones
    its register and spill-slot reuse makes. ``path``: the caller's executed path of ``program``."""
    lat = load_latencies(arch)
    table = lat.cycles
    path = path if path is not None else executed_path(program)
    events = _Events(program, assignment)
    classes: dict = {}   # an instruction's class depends on its opcode and result type only: each pair once
    names = [classes[key] if (key := (ins.opcode, ins.defs[0].type if ins.defs else None)) in classes
             else classes.setdefault(key, latency_class(ins)) for ins in program.instructions]
    static = np.array([table[c] for c in names], dtype=np.int64)
    # cycles from issue until the operands are read: a variable-latency class's read scoreboard, else 0 (read at
    # issue); and whether the class is variable-latency (its result is tracked by a write scoreboard)
    static_read = np.array([lat.reads.get(c, 0) for c in names], dtype=np.int64)
    pipes = sorted(set(lat.pipes.values()))
    static_pipe = np.array([pipes.index(lat.pipes[c]) for c in names], dtype=np.int64)
    static_interval = np.array([lat.issue[c] for c in names], dtype=np.int64)
    latency = static[path.indices]
    read = static_read[path.indices]
    has_result = np.array([bool(ins.defs) for ins in program.instructions], dtype=bool)
    finish = np.where(has_result[path.indices], latency, 1)
    src, dst = _raw(events.dynamic(path, "true_reads"), events.dynamic(path, "true_writes"), len(path))
    edges = [(src, dst, latency[src], RAW)]
    if assignment is not None:
        reads, writes = events.dynamic(path, "false_reads"), events.dynamic(path, "false_writes")
        (war_s, war_d, war_r), (waw_s, waw_d, waw_r) = _false(reads, writes, len(path))
        edges += [(war_s, war_d, war_weight(read[war_s], war_r >= events.registers), WAR),
                  (waw_s, waw_d, waw_weight(latency[waw_s], latency[waw_d], read[waw_s] > 0,
                                            waw_r >= events.registers), WAW)]
    src, dst, weight = (np.concatenate([e[i] for e in edges]).astype(np.int64) for i in range(3))
    kind = np.concatenate([np.full(len(e[0]), e[3], dtype=np.int8) for e in edges])
    keep = _distinct_edges(src, dst, kind, len(path))
    terminator = np.array([ins.is_terminator for ins in program.instructions], dtype=bool)
    return DependenceGraph(path, latency, finish, src[keep], dst[keep], weight[keep], kind[keep], arch,
                           block_regions(program, path), terminator[path.indices], static_pipe[path.indices],
                           static_interval[path.indices])


def block_regions(program: Program, path: Path) -> np.ndarray:
    """Each node's scheduling region along ``path``: a new region wherever the path leaves a block or runs a block
    again (a loop's next trip), so a region is one run of one block.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block a\\n  %i:i32 = mov 0\\n.block loop\\n  %i:i32 = add %i, 1\\n"
    ...           "  %p:pred = setp.lt %i, 3\\n  cbr %p, loop, done\\n.block done\\n  exit\\n")
    >>> block_regions(p, executed_path(p)).tolist()
    [0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4]
    """
    n = len(program.instructions)
    block = np.zeros(n, dtype=np.int64)
    block[[b for b in program.block_starts[1:] if b < n]] = 1
    block = np.cumsum(block)[path.indices]
    idx = path.indices
    new = np.ones(len(idx), dtype=bool)
    new[1:] = (idx[1:] != idx[:-1] + 1) | (block[1:] != block[:-1])
    return (np.cumsum(new) - 1).astype(np.int64)


def war_weight(read: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Cycles from a reader's issue until a later instruction may overwrite what it read (write after read).

    - A fixed-latency reader (ALU, FMA, IMAD, ...) reads its operands when it issues, and instructions issue in
      order, so the writer only has to issue after it: 1 cycle, no wait (NVIDIA's fixed-latency pipelines have no
      read scoreboard; Jia et al. 2018, arXiv 1804.06826, p. 12: barriers track only
      variable-latency instructions).
    - A variable-latency reader (``ld``/``st`` global, local, shared; ``shfl``; MUFU; ``cvt`` on sm_90) reads them
      after issue and releases a read scoreboard when done; ptxas makes the writer wait on it: the class's
      ``[read_scoreboard]`` cycles (resources/arch/*.toml, each with its source; an assumption where marked).
    - A spill slot (``slot``) is written after its reload read it: the same thread's local accesses to one address
      are taken in order by the memory pipeline: 1 cycle (an assumption).

    Examples
    --------
    >>> war_weight(np.array([0, 4, 8, 4]), np.array([False, False, False, True])).tolist()
    [1, 4, 8, 1]
    """
    return np.where(slot, 1, np.maximum(1, read)).astype(np.int64)


def waw_weight(first: np.ndarray, second: np.ndarray, variable: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Cycles from a writer's issue until a later writer of the same register may issue (write after write).

    - After a variable-latency writer, its write scoreboard: the later writer waits until the first result is
      written (``first``, its latency), or the late result would land on the new one (Jia et al. 2018,
      p. 12: dependency barriers resolve the hazards of variable-latency instructions).
    - After a fixed-latency writer, results land in order through the pipelines, so the later writer issues as
      soon as its own result cannot land first: ``max(1, first - second + 1)`` (1 when it is no faster; an
      assumption: the fixed-latency pipelines write back in issue order).
    - Spill slots: as after a fixed-latency writer (the store reaches the slot in order).

    Examples
    --------
    >>> waw_weight(np.array([400, 4, 6]), np.array([4, 4, 4]), np.array([True, False, False]),
    ...            np.array([False, False, False])).tolist()
    [400, 1, 3]
    """
    ordered = np.maximum(1, first - second + 1)
    return np.where(variable & ~slot, first, ordered).astype(np.int64)


def _distinct_edges(src: np.ndarray, dst: np.ndarray, kind: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first edge of each (src, dst, kind): an instruction reading one register twice, or a
    pair's two registers, make the same edge again (its weight depends only on src, dst and kind)."""
    code = (src * (n + 1) + dst) * 3 + kind
    return np.sort(np.unique(code, return_index=True)[1])


class _Events:
    """Each instruction's reads and writes of resources, as CSR arrays (built once per program).

    True events name values (ids 0..V-1) and spill slots (ids from V); false events name physical
    registers (ids 0..R-1) and spill slots (ids from R)."""

    def __init__(self, program: Program, assignment: dict | None):
        values = {name: k for k, name in enumerate(program.values)}
        nv = len(values)
        regs = 1 + max((r for rs in (assignment or {}).values() for r in rs), default=-1)
        get = (assignment or {}).get
        keys = ("true_reads", "true_writes", "false_reads", "false_writes")
        flat = {key: [] for key in keys}
        counts = {key: [] for key in keys}
        tr, tw, fr, fw = (flat[k].extend for k in keys)
        ctr, ctw, cfr, cfw = (counts[k].append for k in keys)
        for ins in program.instructions:
            defs = [d.name for d in ins.defs]
            uses = ins.uses
            reads = [values[n] for n in uses] + ([values[n] for n in defs] if ins.guard is not None else [])
            writes = [values[n] for n in defs]
            false_reads = [r for n in uses for r in get(n, ())]
            false_writes = [r for n in defs for r in get(n, ())]
            opcode = ins.opcode
            if opcode in ("ld.local", "st.local"):
                slot = spill_slot(ins)
                if slot is not None:  # a spill slot is a resource too: read by its reload, written by its store
                    if opcode == "ld.local":
                        reads.append(nv + slot)
                        false_reads.append(regs + slot)
                    else:
                        writes.append(nv + slot)
                        false_writes.append(regs + slot)
            tr(reads), tw(writes), fr(false_reads), fw(false_writes)
            ctr(len(reads)), ctw(len(writes)), cfr(len(false_reads)), cfw(len(false_writes))
        self.csr = {key: _csr(counts[key], flat[key]) for key in keys}
        #: physical registers 0..registers-1 in the false events; spill slots from here on
        self.registers = regs

    def dynamic(self, path: Path, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(node, resource) of every event of kind ``key`` along ``path``."""
        ptr, res = self.csr[key]
        counts = ptr[path.indices + 1] - ptr[path.indices]
        nodes = np.repeat(np.arange(len(path)), counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return nodes, res[np.repeat(ptr[path.indices], counts) + offsets]


def _csr(counts: list, flat: list) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(counts)
    return ptr, np.array(flat, dtype=np.int64)


def _ordered(reads, writes, n: int, resources: bool = False):
    """Events sorted by (resource, node, reads before writes); each event's segment base (per resource); with
    ``resources``, also each event's resource."""
    t = np.concatenate([reads[0], writes[0]])
    r = np.concatenate([reads[1], writes[1]])
    w = np.concatenate([np.zeros(len(reads[0]), dtype=bool), np.ones(len(writes[0]), dtype=bool)])
    order = np.lexsort((w, t, r))
    t, r, w = t[order], r[order], w[order]
    seg = np.concatenate([[0], np.cumsum(r[1:] != r[:-1])]) if len(r) else np.zeros(0, dtype=np.int64)
    if resources:
        return t, w, seg.astype(np.int64) * (n + 1), r
    return t, w, seg.astype(np.int64) * (n + 1)


def _raw(reads, writes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Read-after-write edges: each read from the last earlier write of its resource."""
    t, w, base = _ordered(reads, writes, n)
    last = np.maximum.accumulate(np.where(w, base + t + 1, base)) - base if len(t) else t
    keep = ~w & (last > 0)
    return last[keep] - 1, t[keep]


def _false(reads, writes, n: int):
    """((WAR src, dst, resource), (WAW src, dst, resource)): each read to the next later write of its resource,
    each write from the previous write."""
    t, w, base, r = _ordered(reads, writes, n, resources=True)
    if not len(t):
        empty = np.zeros(0, dtype=np.int64)
        return (empty, empty, empty), (empty, empty, empty)
    acc = np.maximum.accumulate(np.where(w, base + t + 1, base))
    prev = np.maximum(np.concatenate([[0], acc[:-1]]), base) - base
    waw = w & (prev > 0)
    nxt = np.minimum.accumulate(np.where(w, base + t, base + n)[::-1])[::-1]
    after = np.minimum(np.concatenate([nxt[1:], [np.iinfo(np.int64).max]]), base + n) - base
    war = ~w & (after < n) & (after != t)
    return (t[war], after[war], r[war]), (prev[waw] - 1, t[waw], r[waw])


@dataclass(frozen=True)
class Schedule:
    """The dependence graph's timing: dataflow start cycles, list-scheduled issue cycles, and their ends.

    Attributes
    ----------
    start : earliest issue cycle of each node with unlimited issue (the dataflow limit)
    issue : issue cycle of each node under the list-scheduled issue model (:func:`list_schedule`)
    critical_path : cycles until the last node is done, dataflow
    cycles : cycles until the last node is done, list-scheduled issue model (cycles per warp)
    chain : nodes on one critical path, in order; chain_kinds: the kind of the edge into each (-1: none)
    in_order_cycles : cycles until the last node is done when the warp issues in the path's own order (the
        plan's order, nothing moved), one instruction a cycle
    """

    start: np.ndarray
    issue: np.ndarray
    critical_path: int
    cycles: int
    chain: tuple[int, ...]
    chain_kinds: tuple[int, ...]
    in_order_cycles: int = 0


def schedule(graph: DependenceGraph) -> Schedule:
    """Longest paths through ``graph``: the dataflow critical path, the in-order issue cycles and the
    list-scheduled issue cycles (:func:`list_schedule`).

    A scan in path order (edges always point forward); each node takes the latest of its in-edges.
    """
    n = len(graph.path)
    order = np.argsort(graph.dst, kind="stable")
    src, weight = graph.src[order].tolist(), graph.weight[order].tolist()
    ptr = np.searchsorted(graph.dst[order], np.arange(n + 1)).tolist()
    pipe, interval = _pipes(graph)
    start, in_order, into = _scan(n, src, weight, ptr, pipe, interval)
    done = np.asarray(start, dtype=np.int64) + graph.finish
    if not n:
        return Schedule(done, done, 0, 0, (), (), 0)
    in_order = np.asarray(in_order, dtype=np.int64)
    issue = np.asarray(_issue_along(block_orders(graph).tolist(), src, weight, ptr, pipe, interval), dtype=np.int64)
    chain, kinds = _chain(int(np.argmax(done)), into, src, graph.kind[order].tolist())
    return Schedule(np.asarray(start), issue, int(done.max()), int((issue + graph.finish).max()), chain, kinds,
                    int((in_order + graph.finish).max()))


def _pipes(graph: DependenceGraph) -> tuple[list, list]:
    """Each node's pipe and issue interval as lists (one pipe, one cycle where the graph has none)."""
    n = len(graph.path)
    if graph.pipe is None or graph.interval is None:
        return [0] * n, [1] * n
    return graph.pipe.tolist(), graph.interval.tolist()


def _scan(n: int, src: list, weight: list, ptr: list, pipe: list, interval: list) -> tuple[list, list, list]:
    """Dataflow start cycles (unlimited issue), issue cycles in path order (:func:`_issue_along` of ``range(n)``,
    in the same pass) and each node's latest in-edge for the dataflow."""
    start, issue, into = [0] * n, [0] * n, [-1] * n
    free = [0] * (max(pipe, default=0) + 1)     # the cycle each pipe takes its next instruction
    at = -1
    for t in range(n):     # `if`, not max(): a call per edge costs a third more in this loop
        best, edge = 0, -1
        at += 1
        if free[pipe[t]] > at:  # noqa: PLR1730
            at = free[pipe[t]]
        for k in range(ptr[t], ptr[t + 1]):
            s, w = src[k], weight[k]
            if start[s] + w > best:
                best, edge = start[s] + w, k
            if issue[s] + w > at:  # noqa: PLR1730
                at = issue[s] + w
        start[t], into[t], issue[t] = best, edge, at
        free[pipe[t]] = at + interval[t]
    return start, issue, into


def _issue_along(order, src: list, weight: list, ptr: list, pipe: list, interval: list) -> list:
    """Issue cycles when one warp issues the nodes in ``order`` (a topological order), in order, at most one a cycle,
    each when its in-edges (``ptr``: by destination) and its pipe allow."""
    issue = [0] * len(pipe)
    free = [0] * (max(pipe, default=0) + 1)     # the cycle each pipe takes its next instruction
    at = -1
    for t in order:      # `if`, not max(): a call per edge costs a third more in this loop
        at += 1
        if free[pipe[t]] > at:  # noqa: PLR1730
            at = free[pipe[t]]
        for k in range(ptr[t], ptr[t + 1]):
            if issue[src[k]] + weight[k] > at:  # noqa: PLR1730
                at = issue[src[k]] + weight[k]
        issue[t] = at
        free[pipe[t]] = at + interval[t]
    return issue


def list_schedule(graph: DependenceGraph) -> np.ndarray:
    """The issue cycle of each node when a compiler's list scheduler orders each block once (:func:`block_orders`)
    and one warp issues the path in that order, in order, at most one instruction a cycle (a model).

    The scheduler is the classic cycle-driven list scheduler (Gibbons and Muchnick, "Efficient Instruction
    Scheduling for a Pipelined Architecture", SIGPLAN '86; Muchnick, "Advanced Compiler Design and
    Implementation", 1997, section 17.1.2), once per block, as a compiler schedules the block's code once for every
    run of it: over the dependences inside the block's first run on the path (``graph.region``), each cycle it
    issues, of the nodes whose every in-edge is satisfied by then and whose pipe is free, the one with the longest
    path to the block's end (its height: weights plus its own ``finish``; ties in path order), and when none is
    ready it waits for the first that will be. Every run of the block issues in that order, each instruction when
    its dependences (those from earlier blocks and trips too) and its pipe allow. Every edge holds: a true dependence
    waits its producer's latency, a false one (the plan's register reuse) its hazard's weight, so the scheduler
    may hoist a load above the instructions before it only where the plan gave it a register that is free by
    then. A block's terminator (``graph.last``) issues last.
    ptxas reorders the PTX it is given in this way (its SASS issues loads ahead of the arithmetic that the plan
    PTX interleaves them with: tests/bench/bench_model_vs_sass.py holds the two), within what the registers allow;
    here the plan's registers are the plan's assignment, kept as written.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
    ...           "  %y:f32 = add %x, 1\\n  %z:f32 = ld.global %pa, 4\\n  %s:f32 = add %y, %z\\n"
    ...           "  st.global %pa, 0, %s\\n  exit\\n")
    >>> g = dependence_graph(p, "sm_80")
    >>> list_schedule(g).tolist()    # the second load issues before the add, once the LD/ST pipe takes it
    [0, 4, 404, 8, 408, 412, 413]
    """
    n = len(graph.path)
    order = np.argsort(graph.dst, kind="stable")
    src, weight = graph.src[order].tolist(), graph.weight[order].tolist()
    ptr = np.searchsorted(graph.dst[order], np.arange(n + 1)).tolist()
    pipe, interval = _pipes(graph)
    return np.asarray(_issue_along(block_orders(graph).tolist(), src, weight, ptr, pipe, interval), dtype=np.int64)


def block_orders(graph: DependenceGraph) -> np.ndarray:
    """The path's nodes in the order the list scheduler (:func:`list_schedule`) puts each run of a block: the order
    it finds for the block's first run on the path, the same for every run (a permutation of ``0..n-1`` that keeps
    the runs in path order)."""
    n = len(graph.path)
    region = graph.region if graph.region is not None else np.arange(n, dtype=np.int64)
    last = (graph.last if graph.last is not None else np.zeros(n, dtype=bool)).tolist()
    pipe, interval = _pipes(graph)
    inside = region[graph.src] == region[graph.dst]
    by_src = np.argsort(graph.src[inside], kind="stable")
    src, dst, weight = graph.src[inside][by_src], graph.dst[inside][by_src], graph.weight[inside][by_src]
    ptr = np.searchsorted(src, np.arange(n + 1)).tolist()
    dst, weight, finish = dst.tolist(), weight.tolist(), graph.finish.tolist()
    bounds = [0] + (np.flatnonzero(np.diff(region)) + 1).tolist() + [n]
    indices = graph.path.indices
    orders: dict = {}
    out = np.arange(n, dtype=np.int64)
    for lo, hi in pairwise(bounds):
        key = (int(indices[lo]), hi - lo)            # the block's first instruction and its length
        if key not in orders:
            orders[key] = np.asarray(_region_order(lo, hi, ptr, dst, weight, finish, last, pipe, interval)) - lo
        out[lo:hi] = lo + orders[key]
    return out


def _region_order(lo: int, hi: int, ptr: list, dst: list, weight: list, finish: list, last: list, pipe: list,
                  interval: list) -> list:
    """The list scheduler's order of nodes ``lo..hi-1`` (one run of a block) over the edges among them (``ptr``:
    by source), all of them ready at cycle 0 but for those edges."""
    import heapq

    push, pop = heapq.heappush, heapq.heappop
    height = {}
    for t in range(hi - 1, lo - 1, -1):
        h = finish[t]
        for k in range(ptr[t], ptr[t + 1]):
            h = max(h, weight[k] + height[dst[k]])
        height[t] = h
    waiting = dict.fromkeys(range(lo, hi), 0)
    for t in range(lo, hi):
        for k in range(ptr[t], ptr[t + 1]):
            waiting[dst[k]] += 1
    ready_at = dict.fromkeys(range(lo, hi), 0)
    free: dict = {}                           # the cycle each pipe takes its next instruction
    pending = [(0, t) for t in range(lo, hi) if not waiting[t] and not last[t]]
    ready: list = []                          # (-height, node) of the nodes whose edges are met by now
    final = [t for t in range(lo, hi) if last[t]]
    order, now, need = [], 0, hi - lo - len(final)
    while len(order) < need:
        while pending and pending[0][0] <= now:
            t = pop(pending)[1]
            push(ready, (-height[t], t))
        busy = []                             # ready, but their pipe is not free yet
        while ready and free.get(pipe[ready[0][1]], 0) > now:
            busy.append(pop(ready))
        if not ready:                         # wait for the next node or pipe to be ready
            waits = [free[pipe[t]] for _, t in busy] + ([pending[0][0]] if pending else [])
            if not waits:
                raise RegtuneError("the ILP model's list scheduler found nothing to issue: a cycle in a block's "
                                   "dependences")
            for entry in busy:
                push(ready, entry)
            now = min(waits)
            continue
        t = pop(ready)[1]
        for entry in busy:
            push(ready, entry)
        order.append(t)
        free[pipe[t]] = now + interval[t]
        for k in range(ptr[t], ptr[t + 1]):
            d = dst[k]
            ready_at[d] = max(ready_at[d], now + weight[k])
            waiting[d] -= 1
            if not waiting[d] and not last[d]:
                push(pending, (ready_at[d], d))
        now += 1
    return order + final


def _chain(end: int, into: list, src: list, kind: list) -> tuple[tuple, tuple]:
    nodes, kinds = [end], [kind[into[end]] if into[end] >= 0 else -1]
    while into[nodes[-1]] >= 0:
        nodes.append(src[into[nodes[-1]]])
        kinds.append(kind[into[nodes[-1]]] if into[nodes[-1]] >= 0 else -1)
    return tuple(reversed(nodes)), tuple(reversed(kinds))


@dataclass(frozen=True)
class IlpFigures:
    """A plan's ILP figures (a model) beside the reference with unlimited registers.

    Attributes
    ----------
    arch : the latency table's architecture
    path : how the executed path was taken
    instructions, critical_path, ilp, cycles : the plan's program (spill code included), true and false
        dependences: instructions on the path, critical path in cycles, ILP, issue-model cycles per warp
    reference_instructions, reference_critical_path, reference_ilp, reference_cycles : the same for the
        program without spill code, true dependences only
    false_edges : write-after-read and write-after-write edges the plan's reuse makes
    critical : the plan program's instructions on its critical path (linear indices, in path order, once each)
    critical_false : false dependences along that critical path
    war_free, war_waiting, waw : the false edges by hazard: write after read of a fixed-latency reader or a spill
        slot (1 cycle: issue order, no wait), write after read of a variable-latency reader (its read scoreboard),
        write after write (together ``false_edges``)
    in_order_cycles, reference_in_order_cycles : the issue cycles per warp of the plan's program and of the
        reference when the warp issues the path in its own order, nothing moved (``cycles`` lets a list scheduler
        order each block first: :func:`list_schedule`)
    """

    arch: str
    path: str
    instructions: int
    critical_path: int
    ilp: float
    cycles: int
    reference_instructions: int
    reference_critical_path: int
    reference_ilp: float
    reference_cycles: int
    false_edges: int
    critical: tuple[int, ...]
    critical_false: int
    war_free: int = 0
    war_waiting: int = 0
    waw: int = 0
    in_order_cycles: int = 0
    reference_in_order_cycles: int = 0

    @property
    def ilp_loss(self) -> float:
        """The share of the reference's ILP the plan's reuse and spills lose (0: none)."""
        return 1 - self.ilp / self.reference_ilp if self.reference_ilp else 0.0


def _ilp(instructions: int, critical_path: int) -> float:
    return instructions / critical_path if critical_path else 0.0


def program_ilp(program: Program, arch: str = DEFAULT_ARCH, path: Path | None = None) -> IlpFigures:
    """The reference figures of ``program`` alone (unlimited registers: true dependences only); ``path``: the
    caller's executed path of ``program``."""
    graph = dependence_graph(program, arch, path=path)
    s = schedule(graph)
    n = len(graph.path)
    return IlpFigures(arch, graph.path.note, n, s.critical_path, _ilp(n, s.critical_path), s.cycles, n,
                      s.critical_path, _ilp(n, s.critical_path), s.cycles, 0, _static(graph, s.chain), 0,
                      in_order_cycles=s.in_order_cycles, reference_in_order_cycles=s.in_order_cycles)


def plan_ilp(plan, arch: str | None = None, original: Program | None = None, path: Path | None = None,
             original_path: Path | None = None) -> IlpFigures:
    """A plan's ILP figures (a model) on ``arch`` (default: the plan's own arch, else the default arch).

    ``original`` (the program without spill code), ``path`` and ``original_path`` (the executed paths of the
    plan's program and of ``original``): the caller's, when it has them.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.plan import Plan
    >>> p = parse(".kernel k\\n.block b\\n  %pa:u64 = param A\\n  %x:f32 = ld.global %pa, 0\\n"
    ...           "  %y:f32 = fma %x, %x, %x\\n  %z:f32 = ld.global %pa, 4\\n  st.global %pa, 0, %y\\n"
    ...           "  st.global %pa, 4, %z\\n  exit\\n")
    >>> apart = plan_ilp(Plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (4,)}, {}, 8, "hand"))
    >>> reused = plan_ilp(Plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,)}, {}, 8, "hand"))
    >>> apart.critical_path, reused.critical_path, reused.false_edges
    (409, 806, 2)
    """
    arch = arch or (plan.options or {}).get("arch", DEFAULT_ARCH)
    if original is None:
        original = remove_spill_code(plan.program, plan.spills) if has_spill_code(plan.program, plan.spills) \
            else plan.program
    reference = program_ilp(original, arch, original_path)
    graph = dependence_graph(plan.program, arch, plan.assignment, path)
    s = schedule(graph)
    n = len(graph.path)
    false_on_path = sum(1 for k in s.chain_kinds if k in (WAR, WAW))
    waiting = int(((graph.kind == WAR) & (graph.weight > 1)).sum())
    return IlpFigures(arch, graph.path.note, n, s.critical_path, _ilp(n, s.critical_path), s.cycles,
                      reference.instructions, reference.critical_path, reference.ilp, reference.cycles,
                      graph.count(WAR) + graph.count(WAW), _static(graph, s.chain), false_on_path,
                      graph.count(WAR) - waiting, waiting, graph.count(WAW), s.in_order_cycles,
                      reference.in_order_cycles)


def _static(graph: DependenceGraph, chain: tuple) -> tuple[int, ...]:
    """The linear indices of the chain's nodes, in path order, each once."""
    return tuple(dict.fromkeys(graph.path.indices[list(chain)].tolist())) if chain else ()
