"""The optimal reference: an exact allocation as a 0-1 program, solved by OR-Tools CP-SAT (or HiGHS).

Two problems, one model. Every value is an *item* that holds a register
(an even-aligned pair for a 64-bit value: its base register's domain holds
even registers only) over its live segments. A *point* is a position of
the program (an instruction's read or write moment, ``engine.analysis.liveness``'s
numbering); the items covering one point are a clique, and every two
values that interfere cover some point together, so "each register is
held by at most one item of each point" is exactly "no two interfering
values share a register" (one at-most-one row per point and register;
points whose items are a subset of a neighbouring point's are left out).

- **Registers** (no spill needed): minimise the registers used, between
  the lower bound MAXLIVE (width-weighted; chordal graphs reach it) and the
  best heuristic's count (DSatur, Chaitin-Briggs). Where the heuristic
  reaches MAXLIVE, it is proved optimal without a solver run. Symmetry is
  broken by fixing the pairs of one MAXLIVE point to the first aligned
  pairs (or, with no pairs in the program, its values to the first
  registers): any colouring can be renumbered so.
- **Spills** (the budget is below what the program needs): minimise the
  spill instructions executed, *optimal within spill-everywhere*: a spilled
  value is stored after each definition and reloaded before each
  instruction that reads it, as :mod:`engine.ir.spill` inserts it and every
  heuristic here spills (no splitting, no rematerialisation). A spilled
  value's item is absent and its pieces are present instead: a reload is
  live at the read moment of the instruction it feeds, a definition until
  its store just after the write moment (a guarded one from its own reload
  before the read), which is where the spill code puts them. Executed
  counts weigh each instruction by :func:`engine.ir.cfg.block_frequencies`
  (counted loops by their trip count, an if's two sides both as often as
  the code around them). It is solved in Appel and George's two phases
  first: the registers-live relaxation (:func:`pressure_model`: at every
  point the widths present fit the budget, no registers named), whose
  optimum is a lower bound and, when its spill choice colours (DSatur or
  Chaitin-Briggs, else the exact colouring model), the optimum. When it
  does not, a heuristic that spills more on top of it is an upper bound,
  and the full model (:func:`spill_model`, with the relaxation's rows
  added to strengthen its bound) gets the time left. The register count
  is not minimised here.

Invariant: the allocation returned passes :func:`engine.check.verify.static_conflicts`
(checked before it is returned; a conflict would be a formulation error
and raises); its notes say "optimal" only when the solver (or the bounds)
proved it, else "best found, bound B, gap G%"; every solver run shares
one deadline, ``time_limit`` seconds from the start (building the models
and running the heuristics come on top: about 2 s on GEMM 8x8x8), and
the allocation is then the best found: the solver's, a repair's or the
best heuristic's.

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
>>> a = optimal(p, budget=8)
>>> a.assignment, a.notes[0]
({'x': (0,), 'y': (0,)}, 'optimal: 1 registers, proved (the bound MAXLIVE is reached)')
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np

from engine.alloc import register
from engine.alloc.common import Allocation, _check_slots
from engine.analysis.liveness import Analysis, analyze, loop_depths
from engine.analysis.respill import analyze_spilled
from engine.base.errors import AllocationError
from engine.base.limits import OPTIMAL_SECONDS
from engine.ir.cfg import StructureError, block_frequencies
from engine.ir.core import Program
from engine.ir.spill import SpillCode, first_free_slot, spill_insertion

#: seconds the solver may run per allocation unless told otherwise
DEFAULT_TIME_LIMIT = OPTIMAL_SECONDS
#: the solvers :func:`optimal` can use (``cp-sat`` is the default; ``highs`` is there for the comparison)
SOLVERS = ("cp-sat", "highs")
#: the heuristics whose best result is the upper bound (and the fallback when the solver finds nothing better)
HEURISTICS = ("dsatur", "chaitin-briggs", "linear-scan")


@dataclass
class Model:
    """A 0-1 program over items and registers, independent of the solver.

    ``items``: a value number (the value whole, in a register over its live range) or a piece
    ``(value, instruction, kind)``, kind ``r`` (a reload) or ``d`` (a definition); ``cells`` registers; ``columns``: per item, its
    domain as ``(register, column)``; ``rows``: (columns, coefficients, low, high); ``objective``: column ->
    coefficient (minimised); ``integer_bounds``: the non-binary columns' bounds; ``hint``: column -> value.
    """

    cells: int
    items: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    objective: dict = field(default_factory=dict)
    integer_bounds: dict = field(default_factory=dict)
    hint: dict = field(default_factory=dict)
    size: int = 0

    def column(self, low: int = 0, high: int = 1) -> int:
        self.size += 1
        if (low, high) != (0, 1):
            self.integer_bounds[self.size - 1] = (low, high)
        return self.size - 1

    def row(self, cols, coefs, low, high) -> None:
        self.rows.append((list(cols), list(coefs), low, high))


@dataclass(frozen=True)
class Solution:
    """What a solver returned: ``status`` ``optimal``/``feasible``/``infeasible``/``unknown``, the value of
    each column (None without a solution), the objective, its proved bound and the seconds taken."""

    status: str
    values: list | None
    objective: float | None
    bound: float | None
    seconds: float


def _points(analysis: Analysis, pieces: dict, position: dict) -> list[list[int]]:
    """The item sets to keep one row per register for: each position's items (as ``position`` numbers them),
    maximal among its neighbours, without repeats. ``pieces``: piece -> the positions it covers (every value in
    ``position`` covers its live segments)."""
    n = 2 * len(analysis.program.instructions)
    cover: list[list[int]] = [[] for _ in range(n)]
    for v, s, e in zip(analysis.seg_value.tolist(), analysis.seg_start.tolist(), analysis.seg_end.tolist()):
        k = position.get(v)
        if k is not None:
            for p in range(s, e + 1):
                cover[p].append(k)
    for piece, positions in pieces.items():
        for p in positions:
            cover[p].append(position[piece])
    sets: list[frozenset] = []
    for c in cover:
        f = frozenset(c)
        if f and (not sets or sets[-1] != f):
            sets.append(f)
    kept, seen = [], set()
    for k, f in enumerate(sets):
        if (k and f < sets[k - 1]) or (k + 1 < len(sets) and f < sets[k + 1]) or f in seen:
            continue
        seen.add(f)
        kept.append(sorted(f))
    return kept


def _piece_positions(analysis: Analysis) -> tuple[dict, dict]:
    """The pieces a spilled value would be cut into: (value, instruction, kind) -> positions, and each value's
    pieces. A reload ``r`` is live at the read moment of the instruction it feeds; a definition ``d`` at the
    write moment (and at the read moment too when the definition is guarded: its own reload comes first)."""
    widths, instructions = analysis.widths, analysis.program.instructions
    pieces: dict = {}
    for i, v in sorted({(int(i), int(v)) for i, v in analysis.operand_reads.tolist()}):
        if widths[v] > 0:
            pieces[(v, i, "r")] = (2 * i,)
    for i, v in sorted({(int(i), int(v)) for i, v in analysis.definitions.tolist()}):
        if widths[v] > 0:
            pieces[(v, i, "d")] = (2 * i, 2 * i + 1) if instructions[i].guard is not None else (2 * i + 1,)
    of: dict = {}
    for key in pieces:
        of.setdefault(key[0], []).append(key)
    return pieces, of


def spill_costs(analysis: Analysis, frequency: np.ndarray | None = None) -> np.ndarray:
    """Executed spill instructions spilling each value costs (spill-everywhere): a store per definition, a
    reload per instruction reading it and per guarded definition, each weighted by its instruction's
    frequency (default :func:`engine.ir.cfg.block_frequencies`)."""
    freq = instruction_frequencies(analysis.program) if frequency is None else frequency
    cost = np.zeros(len(analysis.names), dtype=np.int64)
    reads = {(int(i), int(v)) for i, v in analysis.operand_reads.tolist()}
    for i, v in reads:
        cost[v] += freq[i]
    instructions = analysis.program.instructions
    for i, v in {(int(i), int(v)) for i, v in analysis.definitions.tolist()}:
        cost[v] += freq[i] * (2 if instructions[i].guard is not None else 1)
    return cost


def instruction_frequencies(program: Program, original: Program | None = None) -> np.ndarray:
    """How often each instruction of ``program`` runs under :func:`engine.ir.cfg.block_frequencies` of
    ``original``, the program before spill code (spill code adds no block, and a spilled loop counter would
    make the loop look uncounted); a program that is no nest of loops and ifs: 10 ** its loop depth,
    Chaitin's weight."""
    source = program if original is None else original
    try:
        per_block = block_frequencies(source)
    except StructureError:
        per_block = [10 ** int(loop_depths(source)[first]) if len(b.instructions) else 1
                     for b, first in zip(source.blocks, source.block_starts)]
    return np.repeat(np.array(per_block, dtype=np.int64), [len(b.instructions) for b in program.blocks])


def executed_spill_instructions(allocation: Allocation) -> int:
    """The spill instructions an allocation's program executes under :func:`engine.ir.cfg.block_frequencies`
    (the model :func:`optimal` minimises; heuristics' plans are counted the same way for their gap)."""
    freq = instruction_frequencies(allocation.program, allocation.original)
    code = allocation.spill_code
    return int(sum(int(freq[i]) for i in (*code.loads, *code.stores)))


# -- building the model -------------------------------------------------------------------------------------


def _domain(width: int, cells: int) -> range:
    return range(0, cells - 1, 2) if width == 2 else range(cells)


def _add_items(model: Model, items, widths) -> None:
    for item in items:
        w = widths[item]
        model.items.append(item)
        model.columns.append([(r, model.column()) for r in _domain(w, model.cells)])


def _add_points(model: Model, points, widths: list) -> None:
    """One at-most-one row per point and register: the items of the point (by number) that would hold it."""
    for point in points:
        held: dict = {}
        for k in point:
            w = widths[k]
            for r, col in model.columns[k]:
                for k in range(w):
                    held.setdefault(r + k, []).append(col)
        for cols in held.values():
            if len(cols) > 1:
                model.row(cols, [1] * len(cols), 0, 1)


def register_model(analysis: Analysis, cells: int, low: int, fix: list) -> tuple[Model, dict, int]:
    """The minimum-register model over registers ``0..cells-1`` (objective: registers used, at least
    ``low``); ``fix``: (value, register) pairs the symmetry breaking fixes. Returns the model, each value's
    position in it and the objective's column."""
    widths = analysis.widths.tolist()
    values = [v for v, w in enumerate(widths) if w > 0]
    model = Model(cells)
    _add_items(model, values, {v: widths[v] for v in values})
    position = {v: k for k, v in enumerate(values)}
    for cols in model.columns:
        model.row([c for _, c in cols], [1] * len(cols), 1, 1)
    _add_points(model, _points(analysis, {}, position), [widths[v] for v in values])
    top = model.column(low, cells)
    model.objective[top] = 1
    for v, cols in zip(values, model.columns):
        for r, c in cols:
            if r + widths[v] > low:  # top >= r + width when the value takes r
                model.row([top, c], [1, -(r + widths[v])], 0, cells)
    for v, r in fix:
        for rr, c in model.columns[position[v]]:
            if rr == r:
                model.row([c], [1], 1, 1)
    return model, position, top


def spill_model(analysis: Analysis, cells: int, cost: np.ndarray, hint: set) -> tuple[Model, dict, dict]:
    """The minimum-executed-spill model over registers ``0..cells-1``: each value whole, or spilled (its
    pieces instead). Returns the model, each item's position in it and each value's spill column."""
    widths = analysis.widths.tolist()
    values = [v for v, w in enumerate(widths) if w > 0]
    pieces, of = _piece_positions(analysis)
    model = Model(cells)
    width_of = {v: widths[v] for v in values} | {p: widths[p[0]] for p in pieces}
    _add_items(model, values + list(pieces), width_of)
    position = {item: k for k, item in enumerate(model.items)}
    spilled = {}
    for v in values:
        s = spilled[v] = model.column()
        if cost[v]:
            model.objective[s] = int(cost[v])
        model.hint[s] = int(v in hint)
        for item in (v, *of.get(v, ())):
            cols = [c for _, c in model.columns[position[item]]]
            # whole: one register unless spilled; a piece: one register when spilled
            if item == v:
                model.row(cols + [s], [1] * len(cols) + [1], 1, 1)
            else:
                model.row(cols + [s], [1] * len(cols) + [-1], 0, 0)
    points = _points(analysis, pieces, position)
    _add_points(model, points, [width_of[item] for item in model.items])
    for point in points:  # the pressure at each point fits: redundant, but it makes the relaxation's bound strong
        cols = [c for k in point for _, c in model.columns[k]]
        model.row(cols, [width_of[model.items[k]] for k in point for _ in model.columns[k]], 0, cells)
    return model, position, spilled


def pressure_model(analysis: Analysis, cells: int, cost: np.ndarray) -> tuple[Model, dict]:
    """The relaxation of :func:`spill_model` without registers (Appel & George's first phase): the values to
    spill so that at every point the registers live fit ``cells``. Its optimum bounds the spill model's;
    a choice that also colours in ``cells`` registers is optimal. Returns the model and each value's column."""
    widths = analysis.widths.tolist()
    values = [v for v, w in enumerate(widths) if w > 0]
    pieces, _ = _piece_positions(analysis)
    model = Model(cells)
    spilled = {v: model.column() for v in values}
    for v in values:
        if cost[v]:
            model.objective[spilled[v]] = int(cost[v])
    keys = values + list(pieces)
    position = {item: k for k, item in enumerate(keys)}
    for point in _points(analysis, pieces, position):
        coef: dict = {}
        fixed = 0
        for k in point:
            item = keys[k]
            if isinstance(item, tuple):  # a piece: present when its value is spilled
                coef[item[0]] = coef.get(item[0], 0) + widths[item[0]]
            else:  # the whole value: present unless spilled
                fixed += widths[item]
                coef[item] = coef.get(item, 0) - widths[item]
        cols = [(spilled[v], c) for v, c in coef.items() if c]
        if fixed > cells or any(c > 0 for _, c in cols):
            model.row([c for c, _ in cols], [k for _, k in cols], -len(analysis.names) * 4, cells - fixed)
    return model, spilled


# -- the solvers ------------------------------------------------------------------------------------------------


def solve(model: Model, solver: str, time_limit: float, workers: int | None = None) -> Solution:
    """Solve ``model`` with ``solver`` (one of :data:`SOLVERS`) for at most ``time_limit`` seconds."""
    if solver == "cp-sat":
        return _solve_cp_sat(model, time_limit, workers)
    if solver == "highs":
        return _solve_highs(model, time_limit)
    raise AllocationError(f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})")


def _import(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise AllocationError(f"the optimal allocator needs {package}: pip install 'regtune[optimal]' "
                              f"(or pip install {package})") from None


def _solve_cp_sat(model: Model, time_limit: float, workers: int | None) -> Solution:
    cp_model = _import("ortools.sat.python.cp_model", "ortools")
    m = cp_model.CpModel()
    x = [m.NewIntVar(*model.integer_bounds[c], f"z{c}") if c in model.integer_bounds else m.NewBoolVar(f"b{c}")
         for c in range(model.size)]
    for cols, coefs, low, high in model.rows:
        if low == 0 and high == 1 and all(k == 1 for k in coefs):
            m.AddAtMostOne([x[c] for c in cols])
        elif low == high == 1 and all(k == 1 for k in coefs):
            m.AddExactlyOne([x[c] for c in cols])
        else:
            m.AddLinearConstraint(cp_model.LinearExpr.WeightedSum([x[c] for c in cols], coefs), low, high)
    m.Minimize(cp_model.LinearExpr.WeightedSum([x[c] for c in model.objective], list(model.objective.values())))
    for c, v in model.hint.items():
        m.AddHint(x[c], v)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = float(time_limit)
    s.parameters.num_workers = workers or min(8, os.cpu_count() or 1)
    started = time.perf_counter()
    status = s.Solve(m)
    seconds = time.perf_counter() - started
    name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible",
            cp_model.INFEASIBLE: "infeasible"}.get(status, "unknown")
    if name in ("optimal", "feasible"):
        return Solution(name, [s.Value(v) for v in x], s.ObjectiveValue(), s.BestObjectiveBound(), seconds)
    return Solution(name, None, None, s.BestObjectiveBound() if name == "unknown" else None, seconds)


def _solve_highs(model: Model, time_limit: float) -> Solution:
    optimize = _import("scipy.optimize", "scipy")
    sparse = _import("scipy.sparse", "scipy")
    lb, ub = np.zeros(model.size), np.ones(model.size)
    for c, (lo, hi) in model.integer_bounds.items():
        lb[c], ub[c] = lo, hi
    data, ri, ci, low, high = [], [], [], [], []
    for r, (cols, coefs, lo, hi) in enumerate(model.rows):
        ri += [r] * len(cols)
        ci += cols
        data += coefs
        low.append(lo)
        high.append(hi)
    a = sparse.csr_array((data, (ri, ci)), shape=(len(model.rows), model.size))
    objective = np.zeros(model.size)
    for c, k in model.objective.items():
        objective[c] = k
    started = time.perf_counter()
    res = optimize.milp(objective, integrality=np.ones(model.size), bounds=optimize.Bounds(lb, ub),
                        constraints=optimize.LinearConstraint(a, low, high),
                        options={"time_limit": float(time_limit), "disp": False})
    seconds = time.perf_counter() - started
    bound = getattr(res, "mip_dual_bound", None)
    if res.status == 0:
        return Solution("optimal", np.round(res.x).astype(int).tolist(), float(res.fun), bound, seconds)
    if res.x is not None:
        return Solution("feasible", np.round(res.x).astype(int).tolist(), float(res.fun), bound, seconds)
    if res.status == 2:
        return Solution("infeasible", None, None, None, seconds)
    return Solution("unknown", None, None, bound, seconds)


# -- the allocator ----------------------------------------------------------------------------------------------


def _best_heuristic(program, analysis, budget, key):
    from engine.alloc import allocate

    found = []
    for name in HEURISTICS:
        try:
            found.append(allocate(name, program, budget, analysis, spill_everywhere=True))  # optimal's model
        except AllocationError:
            continue
    return min(found, key=key) if found else None


def _symmetry_fix(analysis: Analysis) -> list:
    """(value, register) pairs one MAXLIVE point may be fixed to without losing an optimum: its pairs to
    registers 0, 2, 4, ... (full aligned pairs are interchangeable); with no pair in the program, its values
    to 0, 1, 2, ..."""
    if not len(analysis.pressure):
        return []
    live = [analysis.index[n] for n in analysis.live_at(analysis.peak)]
    widths = analysis.widths
    if (widths == 2).any():
        pairs = sorted(v for v in live if widths[v] == 2)
        return [(v, 2 * k) for k, v in enumerate(pairs)]
    return [(v, k) for k, v in enumerate(sorted(live))]


def _gap(value: float, bound: float) -> str:
    return f"{100 * (value - bound) / value:.1f}%" if value else "0%"


@register("optimal", expensive=True)
def optimal(program: Program, analysis: Analysis | None = None, budget: int = 255,
            time_limit: float = DEFAULT_TIME_LIMIT, solver: str = "cp-sat", workers: int | None = None) -> Allocation:
    """The exact allocation of ``program`` under ``budget`` (see the module's text), in at most about
    ``time_limit`` seconds: every solver run gets what is left of it (building the models counts too)."""
    if solver not in SOLVERS:
        raise AllocationError(f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})")
    if not (isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool) and time_limit > 0):
        raise AllocationError(f"optimal: the time limit must be a positive number of seconds, got {time_limit!r}")
    deadline = time.monotonic() + time_limit
    analysis = analysis if analysis is not None else analyze(program)
    low = analysis.maxlive
    registers = lambda a: max((r for regs in a.assignment.values() for r in regs), default=-1) + 1
    upper = _best_heuristic(program, analysis, 255, lambda a: (bool(a.spills), registers(a)))
    high = registers(upper) if upper is not None and not upper.spills else None
    notes: list[str] = []
    if low <= budget and high is not None:
        if high <= low:
            return _done(upper, budget, [f"optimal: {high} registers, proved (the bound MAXLIVE is reached)"])
        cells = min(high - 1, budget)
        model, position, _ = register_model(analysis, cells, low, _symmetry_fix(analysis))
        sol = solve(model, solver, _left(deadline), workers)
        how = f"{solver}, {sol.seconds:.2f} s"
        if sol.status in ("optimal", "feasible"):
            found = _registers_allocation(program, analysis, budget, model, position, sol)
            value = round(sol.objective)
            if sol.status == "optimal":
                return _done(found, budget, [f"optimal: {value} registers, proved ({how})"])
            bound = max(low, int(np.ceil(sol.bound - 1e-6)))
            note = (f"best found: {value} registers, bound {bound}, gap {_gap(value, bound)} "
                    f"({how}: stopped at the {time_limit:g} s limit)")
            return _done(found, budget, [note])
        if sol.status == "infeasible" and high <= budget:
            note = f"optimal: {high} registers, proved ({how}: none fits {high - 1}; the plan is {upper.allocator}'s)"
            return _done(upper, budget, [note])
        if high <= budget:  # unknown: the heuristic's colouring stands, with the bound
            bound = max(low, int(np.ceil(sol.bound - 1e-6))) if sol.bound is not None else low
            note = (f"best found: {high} registers ({upper.allocator}'s), bound {bound}, gap {_gap(high, bound)} "
                    f"({how}: stopped at the {time_limit:g} s limit)")
            return _done(upper, budget, [note])
        notes.append(f"no colouring in {budget} registers: "
                     + ("proved" if sol.status == "infeasible" else f"none found in {time_limit:g} s") + f" ({how})")
    return _spill(program, analysis, budget, time_limit, deadline, solver, workers, notes)


def _left(deadline: float) -> float:
    """Seconds left before ``deadline`` (a twentieth of a second at least: a solver run always starts)."""
    return max(deadline - time.monotonic(), 0.05)


def _spill(program, analysis, budget, time_limit, deadline, solver, workers, notes) -> Allocation:
    cost = spill_costs(analysis)
    fallback = _best_heuristic(program, analysis, budget, executed_spill_instructions)
    hint = {analysis.index[n] for n in fallback.spills if n in analysis.index} if fallback else set()
    within = "within spill-everywhere, executed spill instructions under the trip-count model"
    relaxed, columns = pressure_model(analysis, budget, cost)
    first = solve(relaxed, solver, _left(deadline), workers)
    how = f"{solver}, {first.seconds:.2f} s"
    if first.status == "optimal":
        chosen = sorted(v for v, c in columns.items() if first.values[c])
        found, repair, coloured = _coloured(program, analysis, budget, chosen, solver, deadline, workers)
        if repair is not None and (fallback is None or
                                   executed_spill_instructions(repair) < executed_spill_instructions(fallback)):
            fallback = repair
            hint = {analysis.index[n] for n in fallback.spills if n in analysis.index}
        if found is not None:
            value = executed_spill_instructions(found)
            note = f"optimal {within}: {value}, proved ({how}: the registers-live bound is reached and its choice colours)"
            return _done(found, budget, [*notes, note])
        notes.append(f"the registers-live bound {round(first.objective)} ({how}): its spill choice, {coloured}")
    elif first.status == "infeasible":
        raise AllocationError(f"optimal: {program.name} cannot be allocated in {budget} registers even with "
                              f"every value spilled")
    if deadline - time.monotonic() < 0.1 * time_limit:  # no time left to build and solve the full model
        sol = Solution("unknown", None, None, None, 0.0)
    else:
        model, position, spilled = spill_model(analysis, budget, cost, hint)
        sol = solve(model, solver, _left(deadline), workers)
    how = f"{solver}, {sol.seconds:.2f} s"
    relaxed_bound = first.objective if first.status == "optimal" else first.bound
    if sol.bound is not None and relaxed_bound is not None:
        sol = replace(sol, bound=max(sol.bound, relaxed_bound))
    elif relaxed_bound is not None:
        sol = replace(sol, bound=relaxed_bound)
    if sol.status in ("optimal", "feasible"):
        found = _spill_allocation(program, analysis, budget, model, position, spilled, sol)
        value = executed_spill_instructions(found)
        if sol.status == "optimal":
            return _done(found, budget, [*notes, f"optimal {within}: {value}, proved ({how})"])
        bound = int(np.ceil(sol.bound - 1e-6))
        whose = ""
        if fallback is not None and executed_spill_instructions(fallback) < value:
            found, value, whose = fallback, executed_spill_instructions(fallback), f" (from {fallback.allocator})"
        note = (f"best found {within}: {value}{whose}, bound {bound}, gap {_gap(value, bound)} "
                f"({how}: stopped at the {time_limit:g} s limit)")
        return _done(found, budget, [*notes, note])
    if sol.status == "infeasible":
        raise AllocationError(f"optimal: {program.name} cannot be allocated in {budget} registers even with "
                              f"every value spilled ({how}: {sol.status})")
    if fallback is None:
        raise AllocationError(f"optimal: no allocation of {program.name} in {budget} registers found within "
                              f"{time_limit:g} s, and no heuristic finds one (raise --time-limit)")
    value = executed_spill_instructions(fallback)
    bound = int(np.ceil(sol.bound - 1e-6)) if sol.bound is not None else 0
    note = (f"best found {within}: {value} (from {fallback.allocator}; the solver found none in "
            f"{time_limit:g} s), bound {bound}, gap {_gap(value, bound)} ({how})")
    return _done(fallback, budget, [*notes, note])


def _coloured(program, analysis, budget, chosen, solver, deadline, workers) -> tuple:
    """``program`` with the values ``chosen`` spilled, coloured in ``budget`` registers (by a heuristic, else
    exactly, in half the time left): (that allocation or None, a repair or None, what happened in words). The repair is the cheapest
    heuristic allocation that spills more original values on top of ``chosen`` (an upper bound when the
    choice does not colour)."""
    from engine.alloc import ALLOCATORS
    from engine.ir.spill import spill_code_of

    slots = {}
    if chosen:
        slot = first_free_slot(program)
        _check_slots(program, "optimal", slot, len(chosen))
        slots = {analysis.names[v]: slot + k for k, v in enumerate(chosen)}
    touching = sorted({int(i) for i, v in analysis.occurrences.tolist() if v in set(chosen)})
    insertion = spill_insertion(program, slots, touching) if slots else None
    spilled = analyze_spilled(analysis, insertion) if insertion else analysis
    new = insertion.program if insertion else program
    code = insertion.code if insertion else SpillCode({}, (), (), {})
    repairs = []
    for name in ("dsatur", "chaitin-briggs"):
        try:
            a = ALLOCATORS[name](new, spilled, budget, spill_everywhere=True)
        except AllocationError:
            continue
        extra = a.spills.keys() - slots.keys()
        if not extra:
            return Allocation("optimal", budget, new, a.assignment, dict(code.spills), program, code, a.analysis,
                              analysis), None, "coloured"
        if extra <= analysis.index.keys():  # more original values spilled: a repair
            spills = {**slots, **a.spills}
            repairs.append(Allocation(f"the relaxation's choice repaired by {name}", budget, a.program, a.assignment, spills, program,
                                      spill_code_of(a.program, spills), a.analysis, analysis))
    repair = min(repairs, key=executed_spill_instructions, default=None)
    if deadline - time.monotonic() < 0.05:
        return None, repair, "no time left to colour it exactly"
    model, position, _ = register_model(spilled, budget, min(spilled.maxlive, budget), _symmetry_fix(spilled))
    sol = solve(model, solver, max(_left(deadline) / 2, 0.05), workers)
    if sol.values is None:
        return None, repair, ("it colours in no way (proved)" if sol.status == "infeasible" else
                              f"no heuristic colours it, nor did {solver} in {sol.seconds:.2f} s")
    base = {v: _taken(model, position, v, sol.values) for v in position}
    return Allocation("optimal", budget, new, _names(spilled, base), dict(code.spills), program, code, spilled,
                      analysis), repair, "coloured"


def _done(allocation: Allocation, budget: int, notes: list) -> Allocation:
    from engine.check.verify import static_conflicts

    result = replace(allocation, allocator="optimal", budget=budget, notes=tuple(notes))
    conflicts = static_conflicts(result.program, result.assignment, result.spills, budget, result.analysis,
                                 result.spill_code)
    if conflicts:  # a formulation error, never a user's
        raise AllocationError(f"optimal: internal error, the solution for {result.program.name} has a conflict: "
                              f"{conflicts[0]}")
    return result


def _taken(model: Model, position: dict, item, values: list) -> int | None:
    for r, c in model.columns[position[item]]:
        if values[c]:
            return r
    return None


def _names(analysis: Analysis, base: dict) -> dict:
    return {analysis.names[v]: (r,) if analysis.widths[v] == 1 else (r, r + 1) for v, r in base.items()}


def _registers_allocation(program, analysis, budget, model, position, sol) -> Allocation:
    base = {v: _taken(model, position, v, sol.values) for v in position}
    return Allocation("optimal", budget, program, _names(analysis, base), {}, program, SpillCode({}, (), (), {}),
                      analysis, analysis)


def _spill_allocation(program, analysis, budget, model, position, spilled, sol) -> Allocation:
    chosen = sorted(v for v, s in spilled.items() if sol.values[s])
    base = {v: _taken(model, position, v, sol.values) for v in spilled if v not in chosen}
    if not chosen:
        return Allocation("optimal", budget, program, _names(analysis, base), {}, program,
                          SpillCode({}, (), (), {}), analysis, analysis)
    slot = first_free_slot(program)
    _check_slots(program, "optimal", slot, len(chosen))
    slots = {analysis.names[v]: slot + k for k, v in enumerate(chosen)}
    touching = sorted({int(i) for i, v in analysis.occurrences.tolist() if v in set(chosen)})
    insertion = spill_insertion(program, slots, touching)
    new = insertion.program
    assignment = _names(analysis, base)
    # walk the rewritten instructions: each spill copy is the piece of the instruction it was made for
    at, instructions, origin = 0, new.instructions, insertion.code.origin
    for i in range(len(program.instructions)):
        before, after = int(insertion.added[0, i]), int(insertion.added[1, i])
        main = instructions[at + before]
        own = {d.name for d in main.defs}
        for ins in instructions[at : at + before]:
            name = ins.defs[0].name
            v = analysis.index[origin.get(name, name)]
            if name not in own:
                assignment[name] = _piece_register(analysis, model, position, (v, i, "r"), sol)
        for d in main.defs:
            v = analysis.index[origin.get(d.name, d.name)]
            if v in chosen:
                assignment[d.name] = _piece_register(analysis, model, position, (v, i, "d"), sol)
        at += before + 1 + after
    return Allocation("optimal", budget, new, assignment, dict(insertion.code.spills), program, insertion.code,
                      analyze_spilled(analysis, insertion), analysis)


def _piece_register(analysis, model, position, piece, sol) -> tuple:
    r = _taken(model, position, piece, sol.values)
    if r is None:
        raise AllocationError(f"optimal: internal error, piece {piece} of a spilled value has no register")
    return (r,) if analysis.widths[piece[0]] == 1 else (r, r + 1)


# -- each heuristic's gap ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GapRow:
    """One allocator's result beside the optimal one: registers, spilled values, static and executed (the
    trip-count model) spill instructions, and its gap to ``optimal`` (registers when nothing spills, else
    executed spill instructions); ``gap`` is None where ``optimal`` was not proved."""

    allocator: str
    registers: int
    spilled_values: int
    spill_instructions: int
    executed_spill_instructions: int
    gap: str | None
    #: the gap as a number (in ``unit``), None where ``optimal`` was not proved
    excess: int | None = None
    unit: str | None = None


def is_proved(allocation: Allocation) -> bool:
    """Whether ``optimal`` proved ``allocation`` optimal (its last note says so; a heuristic's has no notes)."""
    return bool(allocation.notes) and allocation.notes[-1].startswith("optimal")


def registers_of(allocation: Allocation) -> int:
    """Registers an allocation uses (highest index plus one)."""
    return max((r for regs in allocation.assignment.values() for r in regs), default=-1) + 1


def gap_rows(program: Program, budget: int = 255, best: Allocation | None = None,
             time_limit: float = DEFAULT_TIME_LIMIT, analysis: Analysis | None = None) -> list[GapRow]:
    """Every fast allocator's result on ``program`` under ``budget`` beside ``optimal``'s (``best``, when the
    caller has it), and each one's gap to it: ``+N`` (``+P%``) registers or executed spill instructions
    above the optimum, ``-`` where ``optimal`` did not prove its result (its notes give the bound). The fast
    allocators run in the spill-everywhere model here (``spill_everywhere=True``: no splitting, no
    rematerialisation), the model ``optimal`` solves, so the gap compares like for like.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n  st.global %y, 0, %y\\n  exit\\n")
    >>> [(r.allocator, r.registers, r.gap) for r in gap_rows(p, 8)][-2:]
    [('naive', 2, '+1 registers (+100%)'), ('optimal', 1, '0')]
    """
    from engine.alloc import ALLOCATORS, allocate

    analysis = analysis if analysis is not None else analyze(program)
    best = best if best is not None else allocate("optimal", program, budget, analysis, time_limit=time_limit)
    proved = is_proved(best)
    rows = []
    for name in [*sorted(ALLOCATORS), "optimal"]:
        a = best if name == "optimal" else allocate(name, program, budget, analysis, spill_everywhere=True)
        rows.append(_row(name, a, best, proved))
    return rows


def _row(name: str, a: Allocation, best: Allocation, proved: bool) -> GapRow:
    executed = executed_spill_instructions(a)
    gap = None
    if proved:
        if best.spills:
            mine, theirs, unit = executed, executed_spill_instructions(best), "executed spill instructions"
        elif a.spills:
            mine, theirs, unit = executed, 0, "executed spill instructions"
        else:
            mine, theirs, unit = registers_of(a), registers_of(best), "registers"
        gap = "0" if mine == theirs else (f"+{mine - theirs} {unit}" +
                                          (f" (+{100 * (mine - theirs) / theirs:.0f}%)" if theirs else ""))
    return GapRow(name, registers_of(a), len(a.spills), len(a.spill_code.loads) + len(a.spill_code.stores),
                  executed, gap, *((mine - theirs, unit) if proved else (None, None)))
