"""The timeline's model, Qt-free: bars (one per live segment per register), rows, pressure and shading, as numpy arrays.

Invariant: bar ``k`` spans instructions ``[x0[k], x1[k])`` on row ``row[k]``
(a register, or ``-1 - slot`` for a spill slot) and belongs to value
``value[k]`` (-1: none); a plan gives one bar per live segment per register
of its value and one per spilled value's slot, a SASS listing one per
nvdisasm live range. ``operands`` (when given) pairs values with the
instructions that write or read them: value ``operands[0][k]`` at
instruction ``operands[1][k]``. Everything the Qt view draws is computed
here from arrays; the view only hands them to pyqtgraph.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from engine.ir.spill import has_spill_code
from engine.plan import Plan
from engine.workloads.roles import ROLES, role_of
from gui.model.why import Occurrences

#: the roles in drawing (and legend) order
#: a SASS live range whose value the line map cannot tie to a plan value: drawn grey
SASS_UNMAPPED = "SASS, no plan value"
BAR_ROLES = (*ROLES, SASS_UNMAPPED, "spill slot")


@dataclass(frozen=True)
class Bars:
    """Bars as arrays: left edges, right edges and screen rows (y)."""

    x0: np.ndarray
    x1: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.x0)


def _empty_bars() -> Bars:
    return Bars(np.zeros(0), np.zeros(0), np.zeros(0))


class TimelineData:
    """Bars, rows and lookups for one plan or one SASS listing (see the module invariant).

    Examples
    --------
    >>> import numpy as np
    >>> d = TimelineData(["x", "y"], ["f32", "f32"], ["scalar", "scalar"], np.array([0, 1]), np.array([1, 3]),
    ...                  np.array([4, 4]), np.array([[0], [1]]), [1, 2, 1], positions=True)
    >>> d.x0.tolist(), d.x1.tolist(), d.row.tolist(), d.value_at(2.0, 1)
    ([0.5, 1.5], [2.5, 2.5], [0, 1], 1)
    """

    def __init__(self, names, types, roles, seg_value, seg_start, seg_end, registers, pressure,
                 phases=(), loops=(), slots=None, describe=None, positions=False, peak_label="MAXLIVE",
                 operands=None):
        """``registers``: (values, k) array of each value's registers, -1 where it has fewer.
        ``positions``: segments are the engine's positions (2i before instruction i reads, 2i+1 after it
        writes), drawn from i+0.5 (after a definition) to j+0.5 (the last read); otherwise whole rows.
        ``peak_label``: what the largest pressure is called (MAXLIVE is the program's before spill code).
        ``operands``: (values, instructions) arrays, value ``values[k]`` written or read by ``instructions[k]``."""
        self.peak_label = peak_label
        self.operands = tuple(np.asarray(a, dtype=np.int64) for a in operands) if operands is not None else None
        self.names, self.types, self.roles = list(names), list(types), list(roles)
        self.number = {n: i for i, n in enumerate(self.names)}
        self.pressure = np.asarray(pressure)
        self.phases, self.loops = list(phases), list(loops)
        self.describe = describe
        x0, x1, row, value = _segment_bars(np.asarray(seg_value), np.asarray(seg_start), np.asarray(seg_end),
                                           np.asarray(registers, dtype=np.int64).reshape(len(self.names), -1),
                                           positions)
        self.rows_used = int(row.max()) + 1 if len(row) else 0
        slot_items = sorted((slots or {}).items(), key=lambda kv: kv[1])
        self.x0 = np.concatenate([x0, [s + 0.5 for _n, (_slot, s, _e) in slot_items]])
        self.x1 = np.concatenate([x1, [e + 0.5 for _n, (_slot, _s, e) in slot_items]])
        self.row = np.concatenate([row, [-1 - slot for _n, (slot, _s, _e) in slot_items]]).astype(np.int64)
        self.value = np.concatenate([value, [self.number.get(n, -1) for n, _ in slot_items]]).astype(np.int64)
        self.slot_rows = sorted({-r - 1 for r in self.row.tolist() if r < 0})
        self._index = None

    # -- geometry ------------------------------------------------------------------------------
    def y(self, row) -> np.ndarray:
        """Screen row: registers 0..R-1, then a gap, then spill slots."""
        row = np.asarray(row)
        return np.where(row >= 0, row, self.rows_used + 1 + (-row - 1))

    @property
    def height(self) -> int:
        """Screen rows in all: the registers, and the spill slots after a gap."""
        return (self.rows_used + (1 + len(self.slot_rows) if self.slot_rows else 0)) or 1

    @property
    def maxlive(self) -> int:
        return int(self.pressure.max()) if len(self.pressure) else 0

    @property
    def peak(self) -> int:
        return int(self.pressure.argmax()) if len(self.pressure) else 0

    def row_at(self, y: float) -> int | None:
        """The register (or ``-1 - slot``) drawn at screen row ``y``; None between and beyond rows."""
        r = int(round(y))
        if 0 <= r < self.rows_used:
            return r
        if r > self.rows_used and r - self.rows_used - 1 in self.slot_rows:
            return -1 - (r - self.rows_used - 1)
        return None

    def value_at(self, x: float, row: int) -> int | None:
        """The value whose bar covers instruction x on row (None if none)."""
        if self._index is None:
            self._index = {}
            order = np.lexsort((self.x0, self.row))
            for r in np.unique(self.row):
                sel = order[self.row[order] == r]
                self._index[int(r)] = (self.x0[sel].tolist(), self.x1[sel].tolist(), self.value[sel].tolist())
        starts, ends, values = self._index.get(row, ([], [], []))
        for k in range(bisect.bisect_right(starts, x) - 1, -1, -1):   # a row holds at most a few thousand bars
            if starts[k] <= x < ends[k]:
                return values[k] if values[k] >= 0 else None
        return None

    # -- what the view draws -------------------------------------------------------------------
    def role_bars(self) -> dict[str, Bars]:
        """The bars of each role present, in :data:`BAR_ROLES` order (spill slots as their own role)."""
        slot = self.row < 0
        role_code = np.array([BAR_ROLES.index(r) for r in self.roles] + [-1], dtype=np.int64)[self.value]
        role_code[slot] = BAR_ROLES.index("spill slot")
        ys = self.y(self.row)
        out = {}
        for k, role in enumerate(BAR_ROLES):
            mask = role_code == k
            if mask.any():
                out[role] = Bars(self.x0[mask], self.x1[mask], ys[mask])
        return out

    def bars_of(self, mask: np.ndarray) -> Bars:
        return Bars(self.x0[mask], self.x1[mask], self.y(self.row[mask]))

    def selection_bars(self, names) -> Bars:
        """Every bar of the value ``names`` or of each value of the tuple ``names`` (none for unknown names)."""
        names = (names,) if isinstance(names, str) else tuple(names or ())
        values = [self.number[n] for n in names if n in self.number]
        return self.bars_of(np.isin(self.value, values)) if values else _empty_bars()

    def operand_bars(self, rows) -> Bars:
        """Every bar of the values that the instructions ``rows`` write or read (none without ``operands``):
        the live ranges of a set of marked instructions.

        Examples
        --------
        >>> import numpy as np
        >>> d = TimelineData(["x", "y"], ["f32", "f32"], ["scalar", "scalar"], np.array([0, 1]), np.array([0, 1]),
        ...                  np.array([2, 3]), np.array([[0], [1]]), [1, 2, 2, 1],
        ...                  operands=([0, 1, 0, 1], [0, 1, 2, 3]))
        >>> d.operand_bars([2]).y.tolist(), d.operand_bars([1, 2]).y.tolist(), len(d.operand_bars([]))
        ([0], [0, 1], 0)
        """
        if self.operands is None:
            return _empty_bars()
        values, instructions = self.operands
        touched = np.unique(values[np.isin(instructions, np.asarray(list(rows), dtype=np.int64))])
        return self.bars_of(np.isin(self.value, touched))

    def conflict_bars(self, conflicts) -> Bars:
        """The bars of each conflict's values that cover its instruction."""
        mask = np.zeros(len(self.x0), dtype=bool)
        for c in conflicts:
            at = c.instruction + 0.5
            for name in c.values:
                v = self.number.get(name)
                if v is not None:
                    mask |= (self.value == v) & (self.x0 <= at) & (self.x1 >= at)
        return self.bars_of(mask)

    def conflict_points(self, conflicts) -> tuple[np.ndarray, np.ndarray]:
        """Where the pressure strip marks the conflicts: x (instruction + 0.5) and the pressure there, once per
        instruction, sorted; a conflict at no instruction (a value without a register) has no mark.

        Examples
        --------
        >>> from types import SimpleNamespace as C
        >>> d = TimelineData(["x"], ["f32"], ["scalar"], np.array([0]), np.array([0]), np.array([4]),
        ...                  np.array([[0]]), [1, 2, 3])
        >>> [a.tolist() for a in d.conflict_points([C(instruction=2), C(instruction=-1), C(instruction=2)])]
        [[2.5], [3.0]]
        """
        at = sorted({c.instruction for c in conflicts if 0 <= c.instruction < len(self.pressure)})
        return np.asarray(at, dtype=float) + 0.5, self.pressure[np.asarray(at, dtype=np.int64)].astype(float)

    def pressure_steps(self) -> tuple[np.ndarray, np.ndarray]:
        """x edges (n + 1) and pressure (n) for a step curve."""
        return np.arange(len(self.pressure) + 1), self.pressure

    def spans(self, runs) -> tuple[np.ndarray, np.ndarray]:
        """x0 and x1 arrays of (start, end, label) runs (the phases or the loops)."""
        return (np.array([s for s, _e, _l in runs], dtype=float), np.array([e for _s, e, _l in runs], dtype=float))


def _segment_bars(seg_value, seg_start, seg_end, registers, positions: bool):
    """One bar per segment per register of its value, in segment order."""
    if positions:
        x0, x1 = seg_start / 2, (seg_end + 1) / 2
    else:
        x0, x1 = seg_start.astype(float), seg_end + 1.0
    regs = registers[seg_value] if len(seg_value) else np.zeros((0, registers.shape[1]), dtype=np.int64)
    valid = regs >= 0
    per = valid.sum(axis=1)
    return (np.repeat(x0, per), np.repeat(x1, per), regs[valid], np.repeat(seg_value, per).astype(np.int64))


def runs(labels) -> list[tuple[int, int, str]]:
    """Maximal runs of equal, non-empty labels as (start, end, label), end exclusive.

    Examples
    --------
    >>> runs(["", "load", "load", "mma", ""])
    [(1, 3, 'load'), (3, 4, 'mma')]
    """
    out, start = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            if labels[start]:
                out.append((start, i, labels[start]))
            start = i
    return out


def register_array(assignment: dict, names) -> np.ndarray:
    """(values, 2) registers of each value, -1 where it has fewer (none for a predicate or an unassigned value)."""
    out = np.full((len(names), 2), -1, dtype=np.int64)
    for v, name in enumerate(names):
        regs = assignment.get(name, ())
        out[v, :len(regs)] = regs
    return out


def spill_slot_spans(plan: Plan) -> dict[str, tuple[int, int, int]]:
    """Spilled value -> (slot, first, last instruction of its spill code at that slot). Values never live at
    once may share a slot (issue 24): each gets the span of its own stores and reloads."""
    from engine.ir.core import Use
    from engine.ir.spill import spill_code_of

    origin = spill_code_of(plan.program, plan.spills).origin
    firsts, lasts = {}, {}
    for i, ins in enumerate(plan.program.instructions):
        if ins.opcode in ("st.local", "ld.local") and ins.operands:
            moved = ins.defs[0].name if ins.opcode == "ld.local" and ins.defs else (
                ins.operands[1].name if len(ins.operands) > 1 and isinstance(ins.operands[1], Use) else None)
            value = origin.get(moved, moved)
            if value in plan.spills and ins.operands[0].text == str(plan.spills[value]):
                firsts.setdefault(value, i)
                lasts[value] = i
    return {name: (int(slot), firsts[name], lasts[name]) for name, slot in plan.spills.items() if name in firsts}


def plan_timeline(plan: Plan, analysis) -> TimelineData:
    """Bars of a plan: each segment on each register of its value, spill slots below.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:u64 = mov 8\\n  st.global %y, 0, %x\\n  exit\\n")
    >>> d = plan_timeline(Plan(p, {"x": (0,), "y": (2, 3)}, {}, 4, "hand"), analyze(p))
    >>> d.row.tolist(), d.rows_used, d.maxlive, sorted(d.role_bars()), d.peak_label
    ([0, 2, 3], 4, 3, ['A fragment', 'address'], 'MAXLIVE')
    """
    program = plan.program
    names = list(analysis.names)
    values = [program.values[n] for n in names]
    regs = register_array(plan.assignment, names)
    phases = runs([ins.phase or "" for ins in program.instructions])
    loops = [(s, e, "loop") for s, e, _ in runs(["loop" if d > 0 else "" for d in analysis.loop_depth.tolist()])]
    return TimelineData(names, [v.type for v in values], [role_of(v) for v in values], analysis.seg_value,
                        analysis.seg_start, analysis.seg_end, regs, analysis.pressure, phases, loops,
                        spill_slot_spans(plan), _plan_describer(plan, analysis), positions=True,
                        # with spill code the curve is the plan program's, not the program's MAXLIVE
                        peak_label="peak with spill code" if has_spill_code(plan.program, plan.spills) else "MAXLIVE",
                        operands=plan_operands(program, names))


def plan_operands(program, names) -> tuple[np.ndarray, np.ndarray]:
    """(values, instructions): each value (index in ``names``) that an instruction defines or uses, once per
    instruction, in instruction order.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
    >>> [a.tolist() for a in plan_operands(p, ["x", "y"])]
    [[0, 1, 0, 1], [0, 1, 1, 2]]
    """
    number = {n: i for i, n in enumerate(names)}
    pairs = [(number[n], i) for i, ins in enumerate(program.instructions)
             for n in dict.fromkeys([*(d.name for d in ins.defs), *ins.uses]) if n in number]
    return (np.array([v for v, _ in pairs], dtype=np.int64), np.array([i for _, i in pairs], dtype=np.int64))


def _plan_describer(plan: Plan, analysis):
    occ: list[Occurrences] = []       # built on the first hover, not for every redraw

    def describe(v: int) -> str:
        if not occ:
            occ.append(Occurrences(analysis))
        name = analysis.names[v]
        value = plan.program.values[name]
        seg = [(s // 2, e // 2) for s, e in analysis.live_positions(name)]
        where = ", ".join(f"{s}-{e}" for s, e in seg[:6]) + (" ..." if len(seg) > 6 else "")
        reg = ":".join(f"R{r}" for r in plan.assignment.get(name, ())) or "none"
        spill = f", spilled to slot {plan.spills[name]}" if name in plan.spills else ""
        return (f"%{name}: {value.type} ({role_of(value)}) in {reg}{spill}\n"
                f"live {where}\ndefined at {_short(occ[0].defined(v))}; used at {_short(occ[0].used(v))}")

    return describe


def sass_roles(sass, ir_of_row, program) -> list[str]:
    """The role of each SASS live range: that of the plan value the instruction that starts its value wrote,
    where the line map ties that SASS instruction to a plan instruction that writes a value
    (``ir_of_row``: :attr:`kernels.sass_lines.SassIrMap.ir`); :data:`SASS_UNMAPPED` otherwise (no map, a
    row of numba's own code, a plan instruction that writes nothing, a register live on entry).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %acc_0_0:f32 = mov 1\\n  st.global %acc_0_0, 0, %acc_0_0\\n  exit\\n")
    >>> s = SimpleNamespace(registers=np.array([0, 0, 1]), start=np.array([0, 2, 1]), end=np.array([1, 3, 2]),
    ...                     defined=np.array([True, False, True]))
    >>> sass_roles(s, (0, 1, None, None), p)      # R0's second range goes on with the first's value
    ['accumulator', 'accumulator', 'SASS, no plan value']
    """
    n = len(sass.start)
    if not ir_of_row or program is None:
        return [SASS_UNMAPPED] * n
    code, chain = program.instructions, sass_chains(sass)
    head = {}
    for k in np.argsort(sass.start, kind="stable").tolist():
        head.setdefault(int(chain[k]), k)      # the chain's first range: where its value is written
    out = []
    for k in range(n):
        first = head[int(chain[k])]
        row = int(sass.start[first])
        ir = ir_of_row[row] if bool(sass.defined[first]) and row < len(ir_of_row) else None
        defs = code[ir].defs if ir is not None and ir < len(code) else ()
        out.append(role_of(defs[0]) if defs else SASS_UNMAPPED)
    return out


def sass_timeline(sass, roles=None) -> TimelineData:
    """Bars of a compiled kernel's SASS: nvdisasm's live ranges on their physical registers.

    A SASS row's operands are the ranges it writes (a range that starts on the row with nvdisasm's ``^`` or
    ``x`` mark) and the ranges it reads (its ``v`` and ``x`` marks: :attr:`kernels.sass.SassLiveness.read_row`),
    each with the other ranges of its value: the parse starts a new range after a read that the register
    outlives, and :func:`sass_chains` joins them again. ``roles``: each range's role (:func:`sass_roles`);
    None: all :data:`SASS_UNMAPPED`."""
    names = list(sass.names)
    regs = sass.registers.tolist()

    def describe(v: int) -> str:
        s, e = int(sass.start[v]), int(sass.end[v])
        role = "no plan value in the line map" if roles[v] == SASS_UNMAPPED else f"plan value: {roles[v]}"
        return (f"{names[v]} (R{regs[v]}, {role})\nlive SASS rows {s}-{e}\n"
                f"defined by /*{sass.offsets[s]}*/ {sass.texts[s]}\nlast read by /*{sass.offsets[e]}*/ {sass.texts[e]}")

    roles = list(roles) if roles is not None else [SASS_UNMAPPED] * len(names)
    return TimelineData(names, ["b32"] * len(names), roles, sass.seg_value,
                        sass.seg_start, sass.seg_end, np.asarray(regs, dtype=np.int64).reshape(-1, 1),
                        sass.pressure, describe=describe, peak_label="SASS MAXLIVE", operands=sass_operands(sass))


def sass_chains(sass) -> np.ndarray:
    """The value each SASS live range belongs to (an id per range): nvdisasm's parse starts a new range on the
    row after each read that the register outlives, so a range that no instruction writes (not
    ``defined``) and that starts on the row after a range of the same register ended continues that range's
    value; any other range starts a value of its own.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> s = SimpleNamespace(registers=np.array([0, 1, 0, 0]), start=np.array([0, 1, 3, 6]),
    ...                     end=np.array([2, 4, 4, 7]), defined=np.array([True, True, False, True]))
    >>> sass_chains(s).tolist()     # R0 [0,2] read on 2 goes on as [3,4]; [6,7] is written anew
    [0, 1, 0, 3]
    """
    n = len(sass.start)
    order = np.lexsort((sass.start, sass.registers))
    reg, start, end = sass.registers[order], sass.start[order], sass.end[order]
    goes_on = np.zeros(n, dtype=bool)
    goes_on[1:] = (reg[1:] == reg[:-1]) & (start[1:] == end[:-1] + 1) & ~np.asarray(sass.defined)[order][1:]
    head = np.maximum.accumulate(np.where(goes_on, 0, np.arange(n)))     # the first range of each run
    chain = np.empty(n, dtype=np.int64)
    chain[order] = order[head]
    return chain


def sass_operands(sass) -> tuple[np.ndarray, np.ndarray]:
    """(ranges, rows): the live ranges of every value a SASS row writes (first) or reads, all the ranges of
    each such value (:func:`sass_chains`), so an outline shows the value's whole life (see
    :func:`sass_timeline`)."""
    written = np.flatnonzero(sass.defined)
    ranges = np.concatenate([written, sass.read_value]).astype(np.int64)
    rows = np.concatenate([sass.start[written], sass.read_row]).astype(np.int64)
    chain = sass_chains(sass)
    by_chain = np.argsort(chain, kind="stable")
    first = np.searchsorted(chain[by_chain], chain[ranges], side="left")
    last = np.searchsorted(chain[by_chain], chain[ranges], side="right")
    counts = last - first
    members = by_chain[np.repeat(first - np.cumsum(np.concatenate([[0], counts[:-1]])), counts)
                       + np.arange(int(counts.sum()))]
    return members.astype(np.int64), np.repeat(rows, counts).astype(np.int64)


#: the legend's label of the critical-path overlay: a model (engine/model/ilp.py), not a measurement
CRITICAL_LABEL = "critical path (model)"
#: the legend's label of the hatched bars: :meth:`TimelineData.conflict_bars`
CONFLICT_LABEL = "conflict (a register shared while both live)"
#: the legend's label of the outlined bars: :meth:`TimelineData.operand_bars` of the marked instructions
OPERAND_LABEL = "written or read by the marked instruction(s)"


def critical_path_points(plan: Plan, critical) -> tuple[np.ndarray, np.ndarray]:
    """Where the critical-path overlay passes: x (instruction + 0.5) and register row of each instruction of
    ``critical`` (linear indices of ``plan.program``, from :class:`engine.model.ilp.IlpFigures`): the first register
    it writes, else the first it reads; an instruction that touches no register is left out.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n"
    ...           "  exit\\n")
    >>> x, rows = critical_path_points(Plan(p, {"x": (3,), "y": (1,)}, {}, 4, "hand"), (0, 1, 2, 3))
    >>> x.tolist(), rows.tolist()
    ([0.5, 1.5, 2.5], [3, 1, 1])
    """
    instructions, get = plan.program.instructions, plan.assignment.get
    xs, rows = [], []
    for i in critical:
        ins = instructions[i]
        regs = [r for d in ins.defs for r in get(d.name, ())] or [r for n in ins.uses for r in get(n, ())]
        if regs:
            xs.append(i + 0.5)
            rows.append(regs[0])
    return np.asarray(xs, dtype=float), np.asarray(rows, dtype=np.int64)


def _short(items: list[int]) -> str:
    return ", ".join(map(str, items[:8])) + (f" ... ({len(items)} in all)" if len(items) > 8 else "") or "-"


#: the legend's labels of the stall strip under the SASS timeline: figures decoded from the encoding, not a model
STALL_LABEL = "stall cycles ptxas encoded (control bits; not run-time stalls)"
WAIT_LABEL = "waits on a scoreboard"


@dataclass(frozen=True)
class StallStrip:
    """Each SASS row's control code (a :class:`kernels.control.Control`), row ``i`` the life-range listing's
    row ``i``: what :func:`stall_strip` aligned."""

    offsets: tuple
    texts: tuple
    controls: tuple

    @property
    def stall(self) -> np.ndarray:
        """The encoded stall cycles of each row."""
        return np.array([c.stall for c in self.controls], dtype=np.int64)

    @property
    def waits(self) -> np.ndarray:
        """The rows that wait on a scoreboard (a non-empty wait mask)."""
        return np.array([i for i, c in enumerate(self.controls) if c.wait_mask], dtype=np.int64)

    def describe(self, row: int) -> str:
        """A row's stall, yield and scoreboards in words."""
        c = self.controls[row]
        waits = ", ".join(f"SB{b}" for b in range(6) if c.wait_mask >> b & 1) or "none"
        board = (lambda b: "none" if b is None else f"SB{b}")
        return (f"/*{self.offsets[row]}*/ {self.texts[row]}\nstall {c.stall} cycle{'s' * (c.stall != 1)}, "
                f"{'yield' if c.yield_hint else 'no yield'} ({c})\nsets write barrier {board(c.write_barrier)}, "
                f"read barrier {board(c.read_barrier)}; waits on {waits}")


def stall_strip(sass, listing) -> StallStrip | str:
    """The control codes of ``listing`` (``nvdisasm -hex``, :class:`kernels.control.Listing`) on the rows of
    ``sass`` (the life-range listing of the same cubin, :class:`kernels.sass.SassLiveness`), matched by offset
    and opcode; if the two listings' instructions differ, a sentence saying where (nothing to draw).

    ``nvdisasm -plr`` leaves out the NOPs that pad the kernel's code after its last instruction and ``-hex``
    prints them (measured on sm_80 and sm_90 with the CUDA 13 nvdisasm): trailing NOPs of the ``-hex`` listing
    have no row and are not drawn; any other extra instruction is a mismatch.

    Examples
    --------
    >>> from kernels.control import parse_hex
    >>> from kernels.sass import parse_sass
    >>> sass = parse_sass('''// | GPR |
    ... // |   # 0 |
    ...   /*0000*/ MOV R0, 0x1 ; // |   1 ^ |
    ...   /*0010*/ EXIT ; // |   0   |''')
    >>> hexed = '''  /*0000*/ MOV R0, 0x1 ; /* 0x0000000100007802 */
    ...                               /* 0x%016x */
    ...   /*0010*/ EXIT ; /* 0x000000000000794d */
    ...                               /* 0x%016x */'''
    >>> strip = stall_strip(sass, parse_hex(hexed % (0x7E2 << 41, (0x7E5 | 1 << 12) << 41)))
    >>> strip.stall.tolist(), strip.waits.tolist()
    ([2, 5], [1])
    >>> stall_strip(sass, parse_hex(hexed.replace("0010", "0020") % (0, 0)))
    'the -hex listing does not match the life-range listing at row 1 (/*0020*/ EXIT against /*0010*/ EXIT)'
    """
    hexed = listing.instructions
    for i, (ins, offset, opcode) in enumerate(zip(hexed, sass.offsets, sass.opcodes())):
        if ins.offset != int(offset, 16) or ins.opcode != opcode:
            return (f"the -hex listing does not match the life-range listing at row {i} "
                    f"(/*{ins.offset:04x}*/ {ins.opcode} against /*{offset}*/ {opcode})")
    extra = [ins for ins in hexed[len(sass.offsets):] if ins.opcode != "NOP"]
    if len(hexed) < len(sass.offsets) or extra:
        return (f"the -hex listing has {len(hexed)} instructions, the life-range listing {len(sass.offsets)}"
                + (f" (/*{extra[0].offset:04x}*/ {extra[0].opcode} after its last row is not NOP padding)"
                   if extra else ""))
    return StallStrip(tuple(sass.offsets), tuple(sass.texts), tuple(ins.control for ins in hexed[:len(sass.offsets)]))
