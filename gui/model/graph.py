"""The interference view's model, Qt-free: the interference matrix as an image, a value's neighbourhood with
the edges among its members, and a register's class of values.

Invariant: everything here is read from :class:`engine.analysis.interference.Interference`'s ``indptr``/``indices``
arrays with numpy (no graph of the whole program is ever built); the matrix is at most
:data:`MAX_SIDE` pixels a side whatever the program's size, one pixel per value up to that and one per
block of values beyond; red cells are exactly the conflicts the caller passes (the plan's own, as
:func:`engine.check.verify.static_conflicts` finds them); every array returned is a new one the caller owns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: how the matrix orders its values
ORDERS = ("live-range start", "register")
#: how the matrix colours an interfering pair
COLOURINGS = ("register", "conflict")
#: the largest side of the matrix image in pixels (beyond: one pixel per block of values)
MAX_SIDE = 2048
#: the register colours (a value's first register, modulo their number)
#: (no reds or pinks: red is a conflict's)
PALETTE = ("#4e79a7", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#bab0ac", "#1f77b4",
           "#17becf", "#bcbd22", "#aec7e8")
#: image codes: 0 no interference, 1..len(PALETTE) a register colour, then these
NO_REGISTER, INTERFERE, CONFLICT = len(PALETTE) + 1, len(PALETTE) + 2, len(PALETTE) + 3
#: codes of the density shades of a pixel that stands for a block of values (fewest to most pairs)
DENSITY = tuple(range(CONFLICT + 1, CONFLICT + 9))


def _rgba(colour: str, alpha: int = 255) -> tuple[int, int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16), alpha


def lookup_table() -> np.ndarray:
    """The (256, 4) RGBA colour of each image code: dark background, register colours, red conflicts.

    Examples
    --------
    >>> lut = lookup_table()
    >>> lut.shape, lut[CONFLICT].tolist(), lut[0].tolist()
    ((256, 4), [255, 0, 0, 255], [20, 20, 24, 255])
    """
    lut = np.zeros((256, 4), dtype=np.uint8)
    lut[:] = (20, 20, 24, 255)
    for code, colour in enumerate(PALETTE, start=1):
        lut[code] = _rgba(colour)
    lut[NO_REGISTER] = (150, 150, 150, 255)
    lut[INTERFERE] = (110, 130, 160, 255)
    lut[CONFLICT] = (255, 0, 0, 255)
    for level, code in enumerate(DENSITY, start=1):
        grey = 60 + level * 195 // len(DENSITY)
        lut[code] = (grey, grey, grey, 255)
    return lut


def first_registers(names, assignment: dict) -> np.ndarray:
    """Each value's first register (-1: none, a predicate or a value the plan leaves out).

    Examples
    --------
    >>> first_registers(("x", "p", "y"), {"x": [3], "y": [4, 5]}).tolist()
    [3, -1, 4]
    """
    return np.array([(assignment.get(n) or (-1,))[0] for n in names], dtype=np.int64)


def value_order(analysis, assignment: dict, by: str = ORDERS[0]) -> np.ndarray:
    """The value numbers the matrix shows (every value that takes registers), in ``by`` order.

    ``"live-range start"``: by the first position each is live, ties by name; ``"register"``: by first
    register (values without one last), then by live-range start.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> [a.names[v] for v in value_order(a, {"x": [1], "y": [0], "z": [0]})]
    ['x', 'y', 'z']
    >>> [a.names[v] for v in value_order(a, {"x": [1], "y": [0], "z": [0]}, "register")]
    ['y', 'z', 'x']
    """
    if by not in ORDERS:
        raise ValueError(f"unknown order {by!r} (one of: {', '.join(ORDERS)})")
    shown = np.flatnonzero(np.asarray(analysis.widths) > 0)
    names = np.array(analysis.names, dtype=object)[shown]
    keys = [names, np.asarray(analysis.start)[shown]]
    if by == "register":
        regs = first_registers(analysis.names, assignment)[shown]
        keys.append(np.where(regs < 0, np.iinfo(np.int64).max, regs))
    return shown[np.lexsort(keys)]


def conflict_pairs(conflicts) -> list[tuple[str, str]]:
    """The value pairs of a plan's overlap conflicts (two live values in one register).

    Examples
    --------
    >>> from engine.check.verify import Conflict
    >>> conflict_pairs([Conflict(4, "overlap", ("a", "b"), 2, ""), Conflict(-1, "slot", ("c", "d"), None, "")])
    [('a', 'b')]
    """
    return [tuple(c.values) for c in conflicts if c.kind == "overlap" and len(c.values) == 2]


@dataclass(frozen=True)
class InterferenceMatrix:
    """The interference matrix as an image of codes (see :func:`lookup_table`), rows and columns in
    ``order``; ``per_pixel`` values share one pixel a side (1: one value per pixel)."""

    order: np.ndarray
    image: np.ndarray
    per_pixel: int
    interferences: int
    conflicts: int

    @property
    def side(self) -> int:
        return self.image.shape[0]

    def values_at(self, row: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        """The value numbers a pixel stands for: (its rows' values, its columns' values); empty outside."""
        if not (0 <= row < self.side and 0 <= col < self.side):
            return self.order[:0], self.order[:0]
        p = self.per_pixel
        return self.order[row * p:(row + 1) * p], self.order[col * p:(col + 1) * p]

    def pixel_of(self, value: int) -> int | None:
        """The row (and column) of value number ``value``; None when the matrix does not show it."""
        at = np.flatnonzero(self.order == value)
        return int(at[0]) // self.per_pixel if len(at) else None


def _pairs(interference, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every interfering pair, both ways, as (row, column) positions in the order."""
    rows = np.repeat(rank[:len(interference.names)], interference.degree)
    cols = rank[interference.indices]
    keep = (rows >= 0) & (cols >= 0)
    return rows[keep], cols[keep]


def interference_matrix(interference, order: np.ndarray, registers: np.ndarray, colouring: str = COLOURINGS[0],
                        conflicts=(), max_side: int = MAX_SIDE) -> InterferenceMatrix:
    """The matrix of ``interference`` over the values ``order`` (see :func:`value_order`).

    A cell of two interfering values is coloured by the row value's register (``"register"``) or as plain
    interference (``"conflict"``); a pair of ``conflicts`` (value-name pairs: :func:`conflict_pairs`) is red
    either way. Beyond ``max_side`` values a pixel stands for a block of values, shaded by how many of its
    pairs interfere, red if any of them conflicts.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> regs = first_registers(a.names, {"x": [1], "y": [1], "z": [0]})
    >>> m = interference_matrix(a.interference, value_order(a, {}), regs, conflicts=[("x", "y")])
    >>> m.image.tolist() == [[0, CONFLICT, 0], [CONFLICT, 0, 0], [0, 0, 0]], m.conflicts
    (True, 1)
    """
    if colouring not in COLOURINGS:
        raise ValueError(f"unknown colouring {colouring!r} (one of: {', '.join(COLOURINGS)})")
    n = len(order)
    per_pixel = max(1, -(-n // max_side))
    side = -(-n // per_pixel)
    rank = np.full(len(interference.names), -1, dtype=np.int64)
    rank[order] = np.arange(n)
    rows, cols = _pairs(interference, rank)
    if per_pixel == 1:
        image = _exact(side, rows, cols, order, registers, colouring)
    else:
        image = _binned(side, per_pixel, rows, cols)
    found = _mark_conflicts(image, interference, rank, per_pixel, conflicts)
    return InterferenceMatrix(order, image, per_pixel, len(rows) // 2, found)


def _exact(side: int, rows, cols, order, registers, colouring: str) -> np.ndarray:
    image = np.zeros((side, side), dtype=np.uint8)
    if colouring == "conflict":
        image[rows, cols] = INTERFERE
        return image
    reg = registers[order][rows]
    image[rows, cols] = np.where(reg < 0, NO_REGISTER, 1 + reg % len(PALETTE))
    return image


def _binned(side: int, per_pixel: int, rows, cols) -> np.ndarray:
    counts = np.bincount((rows // per_pixel) * side + cols // per_pixel, minlength=side * side)
    share = counts.reshape(side, side) / float(per_pixel * per_pixel)
    levels = np.ceil(share * len(DENSITY)).astype(np.int64)
    image = np.zeros((side, side), dtype=np.uint8)
    busy = levels > 0
    image[busy] = DENSITY[0] - 1 + np.minimum(levels[busy], len(DENSITY))
    return image


def _mark_conflicts(image: np.ndarray, interference, rank, per_pixel: int, conflicts) -> int:
    index = {n: i for i, n in enumerate(interference.names)}
    at = [(rank[index[a]], rank[index[b]]) for a, b in conflicts if a in index and b in index]
    at = [(r // per_pixel, c // per_pixel) for r, c in at if r >= 0 and c >= 0]
    for r, c in at:
        image[r, c] = image[c, r] = CONFLICT
    return len(at)


# -- a value's neighbourhood -----------------------------------------------------------------------

@dataclass(frozen=True)
class Neighbourhood:
    """A value, the values within ``radius`` steps of it, and every interference among them.

    ``nodes`` are value numbers, the centre first; ``edges`` (E, 2) index into ``nodes``, each pair once.
    """

    centre: int
    radius: int
    nodes: np.ndarray
    edges: np.ndarray


def _rows_of(interference, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, neighbour) for every CSR entry of the values ``nodes``."""
    starts, counts = interference.indptr[nodes], interference.degree[nodes]
    total = int(counts.sum())
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
    return np.repeat(nodes, counts), interference.indices[offsets]


def neighbourhood(interference, centre: int, radius: int = 1) -> Neighbourhood:
    """The values within ``radius`` steps of value ``centre`` and the induced subgraph on them.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %w:f32 = mov 3\\n"
    ...                   "  %z:f32 = add %x, %y\\n  st.global %z, 0, %w\\n  exit\\n"))
    >>> h = neighbourhood(a.interference, a.index["x"])
    >>> [a.names[v] for v in h.nodes], sorted(tuple(sorted(a.names[h.nodes[i]] for i in e)) for e in h.edges)
    (['x', 'y', 'w'], [('w', 'x'), ('w', 'y'), ('x', 'y')])
    """
    inside = np.zeros(len(interference.names), dtype=bool)
    inside[centre] = True
    frontier = np.array([centre], dtype=np.int64)
    for _ in range(radius):
        reached = np.unique(_rows_of(interference, frontier)[1])
        frontier = reached[~inside[reached]]
        inside[frontier] = True
    nodes = np.concatenate([[centre], np.flatnonzero(inside & (np.arange(len(inside)) != centre))])
    local = np.full(len(inside), -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    u, v = _rows_of(interference, nodes)
    keep = inside[v] & (u < v)
    return Neighbourhood(centre, radius, nodes, np.stack([local[u[keep]], local[v[keep]]], axis=1))


def neighbourhood_layout(analysis, nodes: np.ndarray, registers: np.ndarray) -> np.ndarray:
    """(N, 2) positions: x the live-range start in instructions (the engine's position / 2, as the timeline
    draws it), y the first register (-1: none).

    Examples
    --------
    >>> class A: start = np.array([0, 4, 3])
    >>> neighbourhood_layout(A, np.array([2, 0]), np.array([5, -1, 7])).tolist()
    [[1.5, 7.0], [0.0, 5.0]]
    """
    return np.stack([np.asarray(analysis.start)[nodes] / 2, registers[nodes]], axis=1).astype(float)


def neighbours(interference, name: str) -> list[str]:
    """The values interfering with ``name``, sorted by name.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> neighbours(a.interference, "x"), neighbours(a.interference, "z")
    (['y'], [])
    """
    v = interference.names.index(name)
    return sorted(interference.names[u] for u in interference.neighbors(v).tolist())


# -- a register's class ----------------------------------------------------------------------------

def register_class(names, assignment: dict, register: int) -> np.ndarray:
    """The value numbers whose registers include ``register`` (a pair counts for both of its registers).

    Examples
    --------
    >>> register_class(("x", "y", "z"), {"x": [0], "y": [2, 3], "z": [3]}, 3).tolist()
    [1, 2]
    """
    return np.array([i for i, n in enumerate(names) if register in (assignment.get(n) or ())], dtype=np.int64)


def interferences_among(interference, values: np.ndarray) -> int:
    """How many interfering pairs lie inside ``values`` (0 for a valid register class).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  %z:f32 = add %x, %y\\n"
    ...                   "  st.global %z, 0, %z\\n  exit\\n"))
    >>> interferences_among(a.interference, np.array([0, 1])), interferences_among(a.interference, np.array([0, 2]))
    (1, 0)
    """
    if not len(values):
        return 0
    inside = np.zeros(len(interference.names), dtype=bool)
    inside[values] = True
    u, v = _rows_of(interference, np.asarray(values, dtype=np.int64))
    return int(np.count_nonzero(inside[v] & (u < v)))


#: the most edges the neighbourhood view draws (beyond: only the selected value's own)
EDGE_LIMIT = 30_000


def edges_to_draw(h: Neighbourhood, limit: int = EDGE_LIMIT) -> np.ndarray:
    """The edges of ``h`` to draw: all of them up to ``limit``, else only those of its centre.

    Examples
    --------
    >>> h = Neighbourhood(7, 1, np.array([7, 8, 9]), np.array([[0, 1], [0, 2], [1, 2]]))
    >>> edges_to_draw(h).tolist(), edges_to_draw(h, limit=2).tolist()
    ([[0, 1], [0, 2], [1, 2]], [[0, 1], [0, 2]])
    """
    if len(h.edges) <= limit:
        return h.edges
    return h.edges[(h.edges == 0).any(axis=1)]


#: above this many neighbours the neighbourhood pane groups them (a fan of hundreds of lines says nothing)
GROUP_LIMIT = 100
#: how the neighbourhood pane may group the neighbours: "auto" groups by role above :data:`GROUP_LIMIT`
GROUPINGS = ("auto", "none", "register", "role")


@dataclass(frozen=True)
class NeighbourGroup:
    """Neighbours of one register or one role: ``members`` are value indices (of the analysis)."""

    label: str
    members: np.ndarray


def grouping_of(by: str, neighbours: int) -> str:
    """The grouping in force: ``by``, or for "auto" "role" above :data:`GROUP_LIMIT` neighbours, else "none".

    Examples
    --------
    >>> grouping_of("auto", 120), grouping_of("auto", 12), grouping_of("register", 12)
    ('role', 'none', 'register')
    """
    if by == "auto":
        return "role" if neighbours > GROUP_LIMIT else "none"
    return by


def group_neighbours(nodes: np.ndarray, registers: np.ndarray, roles, by: str) -> list[NeighbourGroup]:
    """The neighbours ``nodes[1:]`` (``nodes[0]`` is the centre) grouped by first register or by role, groups in
    register order or in the order roles are listed (``roles``: the role of each value); [] for "none".

    Examples
    --------
    >>> nodes, regs = np.array([0, 1, 2, 3]), np.array([0, 4, 2, 4])
    >>> roles = ["accumulator", "A fragment", "accumulator", "A fragment"]
    >>> [(g.label, g.members.tolist()) for g in group_neighbours(nodes, regs, roles, "register")]
    [('R2', [2]), ('R4', [1, 3])]
    >>> [(g.label, g.members.tolist()) for g in group_neighbours(nodes, regs, roles, "role")]
    [('A fragment', [1, 3]), ('accumulator', [2])]
    """
    others = np.asarray(nodes[1:], dtype=np.int64)
    if by == "register":
        keys = registers[others]
        return [NeighbourGroup(f"R{k}" if k >= 0 else "no register", others[keys == k]) for k in np.unique(keys)]
    if by == "role":
        names = [roles[v] for v in others.tolist()]
        order = list(dict.fromkeys(sorted(names, key=_role_rank)))
        return [NeighbourGroup(r, others[np.array([n == r for n in names], dtype=bool)]) for r in order]
    return []


def _role_rank(role: str) -> tuple:
    from engine.workloads.roles import ROLES

    return (ROLES.index(role) if role in ROLES else len(ROLES), role)


def restrict(h: Neighbourhood, keep: np.ndarray) -> Neighbourhood:
    """The neighbourhood ``h`` on its centre and the values ``keep`` only (the edges among them kept).

    Examples
    --------
    >>> h = Neighbourhood(5, 1, np.array([5, 7, 9]), np.array([[0, 1], [0, 2], [1, 2]]))
    >>> r = restrict(h, np.array([9]))
    >>> r.nodes.tolist(), r.edges.tolist()
    ([5, 9], [[0, 1]])
    """
    inside = np.zeros(len(h.nodes), dtype=bool)
    inside[0] = True
    inside |= np.isin(h.nodes, keep)
    local = np.cumsum(inside) - 1
    edges = h.edges[inside[h.edges[:, 0]] & inside[h.edges[:, 1]]] if len(h.edges) else h.edges
    return Neighbourhood(h.centre, h.radius, h.nodes[inside], local[edges].reshape(-1, 2))
