"""The graph view's model reads the interference CSR: same nodes, edges and neighbourhoods as networkx, no whole-program graph built."""

import networkx as nx

from engine.liveness import analyze
from gui.model.graph import GraphLayouts, graph_shown, neighbourhood_tree, neighbours


def reference_tree(graph, centre, radius):
    """The window's first implementation, on a networkx graph of the whole program."""
    tree = nx.Graph()
    tree.add_node(centre, ring=0)
    frontier = [centre]
    for ring in range(1, radius + 1):
        nxt = []
        for u in frontier:
            for v in sorted(graph.neighbors(u)):
                if v not in tree:
                    tree.add_node(v, ring=ring)
                    tree.add_edge(u, v)
                    nxt.append(v)
        frontier = nxt
    return tree


def test_the_whole_graph_has_networkx_nodes_and_edges_without_building_it(gemm_plans):
    a = analyze(gemm_plans["dsatur"].program)
    shown = graph_shown(a.interference, None, 1, full_limit=10_000)
    assert "graph" not in a.interference.__dict__            # no networkx graph of the whole program
    g = a.interference.graph
    assert list(shown.names) == list(g.nodes)
    assert {frozenset((shown.names[u], shown.names[v])) for u, v in shown.edges.tolist()} == \
        {frozenset(e) for e in g.edges}
    assert shown.caption == f"{len(g)} values, {g.number_of_edges()} interferences"


def test_neighbourhood_trees_match_the_networkx_bfs(gemm_plans):
    a = analyze(gemm_plans["linear-scan"].program)
    g = a.interference.graph
    for centre in ("acc_1_2", "a_0_0", "pa"):
        assert neighbours(a.interference, centre) == sorted(g.neighbors(centre))
        for radius in (1, 2):
            nodes, rings, edges = neighbourhood_tree(a.interference, a.index[centre], radius)
            want = reference_tree(g, centre, radius)
            assert [a.names[v] for v in nodes] == list(want.nodes)
            assert rings == [want.nodes[n]["ring"] for n in want.nodes]
            assert {frozenset((a.names[u], a.names[v])) for u, v in edges} == {frozenset(e) for e in want.edges}


def test_a_large_graph_shows_the_selected_neighbourhood_or_asks_for_a_selection(gemm_plans):
    a = analyze(gemm_plans["dsatur"].program)
    empty = graph_shown(a.interference, None, 1, full_limit=5)
    assert empty.names == () and "select a value" in empty.caption
    shown = graph_shown(a.interference, "acc_1_2", 1, full_limit=5)
    assert shown.names[0] == "acc_1_2" and set(shown.names[1:]) == set(neighbours(a.interference, "acc_1_2"))
    assert set(shown.rings) == {0, 1} and len(shown.edges) == len(shown.names) - 1
    layouts = GraphLayouts(limit=2)
    pos = layouts.positions(shown, a.program, ("acc_1_2", 1))
    assert pos.shape == (len(shown.names), 2) and layouts.positions(shown, a.program, ("acc_1_2", 1)) is pos
