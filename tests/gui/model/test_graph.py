"""The interference view's model, without Qt: the matrix image, orderings, induced neighbourhoods and register
classes, read from the interference CSR and checked against networkx on the same graph."""

import networkx as nx
import numpy as np
import pytest

from engine.alloc.hand import Assign, apply_edit
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts
from gui.model.graph import (
    CONFLICT,
    DENSITY,
    INTERFERE,
    NO_REGISTER,
    PALETTE,
    conflict_pairs,
    edges_to_draw,
    first_registers,
    interference_matrix,
    interferences_among,
    neighbourhood,
    neighbourhood_layout,
    neighbours,
    register_class,
    value_order,
)


def _pairs_in(matrix, names):
    rows, cols = np.nonzero(matrix.image)
    return {frozenset((names[matrix.order[r]], names[matrix.order[c]])) for r, c in zip(rows, cols)}


@pytest.mark.parametrize("by", ["live-range start", "register"])
def test_the_orders_show_every_value_with_registers_once_in_their_order(gemm_plans, by):
    plan = gemm_plans["chaitin-briggs"]
    a = analyze(plan.program)
    order = value_order(a, plan.assignment, by)
    assert sorted(order.tolist()) == np.flatnonzero(a.widths > 0).tolist()
    starts = a.start[order]
    if by == "live-range start":
        assert (np.diff(starts) >= 0).all()
    else:
        regs = first_registers(a.names, plan.assignment)[order]
        assert (np.diff(regs) >= 0).all()
        same = np.diff(regs) == 0                        # within a register: by live-range start
        assert (np.diff(starts)[same] >= 0).all()


def test_the_matrix_has_a_cell_exactly_for_each_interference_coloured_by_the_row_register(gemm_plans):
    plan = gemm_plans["dsatur"]
    a = analyze(plan.program)
    regs = first_registers(a.names, plan.assignment)
    m = interference_matrix(a.interference, value_order(a, plan.assignment), regs)
    assert "graph" not in a.interference.__dict__            # no networkx graph of the whole program
    g = a.interference.graph
    assert m.per_pixel == 1 and m.side == g.number_of_nodes()
    assert _pairs_in(m, a.names) == {frozenset(e) for e in g.edges}
    rows, cols = np.nonzero(m.image)
    want = np.where(regs[m.order[rows]] < 0, NO_REGISTER, 1 + regs[m.order[rows]] % len(PALETTE))
    assert (m.image[rows, cols] == want).all()
    assert m.interferences == g.number_of_edges() and m.conflicts == 0
    plain = interference_matrix(a.interference, m.order, regs, "conflict")
    assert set(np.unique(plain.image).tolist()) == {0, INTERFERE}


def test_conflicts_are_red_cells_exactly_at_the_plans_conflicting_pairs(gemm_plans):
    plan = gemm_plans["linear-scan"]
    a = analyze(plan.program)
    busy = next(n for n in neighbours(a.interference, "acc_1_2") if plan.program.values[n].width == 1)
    broken = apply_edit(plan, Assign("acc_1_2", tuple(plan.assignment[busy]))).plan
    b = analyze(broken.program)
    pairs = conflict_pairs(static_conflicts(broken.program, broken.assignment, broken.spills, broken.budget, b))
    assert ("acc_1_2", busy) in pairs or (busy, "acc_1_2") in pairs
    for colouring in ("register", "conflict"):
        m = interference_matrix(b.interference, value_order(b, broken.assignment),
                                first_registers(b.names, broken.assignment), colouring, pairs)
        red = np.argwhere(m.image == CONFLICT)
        assert {frozenset((b.names[m.order[r]], b.names[m.order[c]])) for r, c in red} == \
            {frozenset(p) for p in pairs}
        assert m.conflicts == len(pairs)


def test_a_large_matrix_keeps_its_side_and_shades_exactly_the_blocks_that_interfere(gemm_plans):
    plan = gemm_plans["naive"]
    a = analyze(plan.program)
    regs = first_registers(a.names, plan.assignment)
    order = value_order(a, plan.assignment)
    exact = interference_matrix(a.interference, order, regs, "conflict")
    small = interference_matrix(a.interference, order, regs, "conflict", max_side=40)
    p = small.per_pixel
    assert small.side <= 40 and p == -(-len(order) // 40) and small.side == -(-len(order) // p)
    padded = np.zeros((small.side * p, small.side * p), dtype=bool)
    padded[:exact.side, :exact.side] = exact.image > 0
    any_in_block = padded.reshape(small.side, p, small.side, p).any(axis=(1, 3))
    assert ((small.image > 0) == any_in_block).all()
    assert set(np.unique(small.image).tolist()) <= {0, *DENSITY}
    rows, cols = small.values_at(3, 5)
    assert rows.tolist() == order[3 * p:4 * p].tolist() and cols.tolist() == order[5 * p:6 * p].tolist()


@pytest.mark.parametrize("radius", [1, 2])
def test_a_neighbourhood_is_the_induced_subgraph_of_the_values_near_the_selection(gemm_plans, radius):
    plan = gemm_plans["chaitin-briggs"]
    a = analyze(plan.program)
    g = a.interference.graph
    for centre in ("acc_1_2", "a_0_0"):
        h = neighbourhood(a.interference, a.index[centre], radius)
        want = nx.ego_graph(g, centre, radius=radius)
        names = [a.names[v] for v in h.nodes]
        assert names[0] == centre and set(names) == set(want.nodes) and len(names) == len(set(names))
        assert {frozenset((names[u], names[v])) for u, v in h.edges.tolist()} == {frozenset(e) for e in want.edges}
        pos = neighbourhood_layout(a, h.nodes, first_registers(a.names, plan.assignment))
        # x in instructions, as the timeline draws it: the engine's positions count two a instruction
        assert pos[0].tolist() == [a.start[a.index[centre]] / 2, plan.assignment[centre][0]]
        assert pos[:, 0].max() <= len(plan.program.instructions)


def test_drawing_a_huge_neighbourhood_keeps_the_selected_values_own_edges(gemm_plans):
    a = analyze(gemm_plans["dsatur"].program)
    h = neighbourhood(a.interference, a.index["acc_1_2"], 1)
    few = edges_to_draw(h, limit=10)
    assert len(h.edges) > 10 and len(few) == len(h.nodes) - 1 and (few == 0).any(axis=1).all()
    assert edges_to_draw(h) is h.edges


def test_a_register_class_holds_the_values_of_its_register_and_none_of_them_interfere(gemm_plans):
    plan = gemm_plans["dsatur"]
    a = analyze(plan.program)
    used = sorted({r for regs in plan.assignment.values() for r in regs})
    for r in used:
        members = register_class(a.names, plan.assignment, r)
        assert {a.names[v] for v in members} == {n for n, regs in plan.assignment.items() if r in regs}
        assert interferences_among(a.interference, members) == 0
    everyone = np.flatnonzero(a.widths > 0)
    assert interferences_among(a.interference, everyone) == a.interference.n_edges
