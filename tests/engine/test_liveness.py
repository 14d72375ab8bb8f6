"""Liveness, pressure and interference: invariants on random programs, golden cases."""

import networkx as nx
from hypothesis import given

from engine.analysis.interference import build_interference_all_pairs
from engine.ir.parser import parse
from engine.analysis.liveness import analyze
from tests.engine.strategies import programs

LOOP = """.kernel loop
.block entry
  %p:u64 = param P
  %x:f32 = mov 1
  %i:i32 = mov 0
.block body
  %t:f32 = add %i, %i
  %i:i32 = add %i, 1
  %c:pred = setp.lt %i, 4
  cbr %c, body, done
.block done
  st.global %p, 0, %x
  st.global %p, 4, %t
  exit
"""


def test_value_defined_before_a_loop_and_used_after_is_live_across_the_back_edge():
    a = analyze(parse(LOOP))
    # %x is live at every instruction of the loop body, the back edge included.
    body = range(3, 7)
    assert all("x" in a.live_at(i) for i in body)
    assert a.loop_depth.tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]
    assert a.pressure.tolist() == [2, 3, 4, 5, 5, 5, 5, 3, 0, 0]
    assert a.maxlive == 5 and a.peak == 3


def test_dead_definition_counts_at_its_instruction():
    a = analyze(parse(".kernel k\n.block b\n  %x:f64 = mov 1\n  %y:f32 = mov 2\n  st.global %y, 0, %y\n  exit\n"))
    assert a.pressure.tolist() == [2, 1, 0, 0]


def test_result_may_take_the_register_of_an_operand_it_kills():
    a = analyze(parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  %y:f32 = add %x, %x\n  st.global %y, 0, %y\n  exit\n"))
    assert not a.interference.n_edges
    assert a.pressure.tolist() == [1, 1, 0, 0]


def test_guarded_definition_does_not_kill():
    text = """.kernel k
.block b
  %a:f32 = mov 1
  %q:pred = setp.lt %a, 2
  %x:f32 = mov 3
  %x:f32 = @%q mov %a
  st.global %a, 0, %x
  exit
"""
    a = analyze(parse(text))
    assert a.live_positions("x") == [(5, 8)]
    assert a.undefined == ()


def test_read_before_definition_is_reported():
    a = analyze(parse(".kernel k\n.block b\n  %x:f32 = @%q mov 1\n  %q:pred = setp.lt %x, 1\n  exit\n"))
    assert set(a.undefined) == {"q", "x"}


def _pressure_by_brute_force(a):
    """Pressure recomputed from per-instruction live sets (DESIGN.md's definition)."""
    out = []
    for i, ins in enumerate(a.program.instructions):
        live = {a.names[v] for v, s, e in zip(a.seg_value, a.seg_start, a.seg_end) if s <= 2 * i + 1 <= e}
        out.append(sum(a.program.values[n].width for n in live | {d.name for d in ins.defs}))
    return out


@given(programs())
def test_pressure_is_the_width_of_live_values_plus_dead_results(program):
    a = analyze(program)
    assert a.pressure.tolist() == _pressure_by_brute_force(a)


def _rows(edges):
    return set(map(tuple, edges.tolist()))


@given(programs())
def test_interference_equals_the_all_pairs_reference(program):
    a = analyze(program)
    assert _rows(a.interference.edges) == _rows(build_interference_all_pairs(a).edges)
    assert len(_rows(a.interference.edges)) == a.interference.n_edges
    g = a.interference.graph
    assert g.number_of_edges() == a.interference.n_edges
    for v, name in enumerate(a.names):
        if a.widths[v]:
            assert sorted(a.names[u] for u in a.interference.neighbors(v)) == sorted(g[name])


@given(programs(mixed=False, control=False, holes=False))
def test_straight_line_graph_is_an_interval_graph_with_clique_number_maxlive(program):
    a = analyze(program)
    g = a.interference.graph
    assert nx.is_chordal(g)
    clique = max((len(c) for c in nx.find_cliques(g)), default=0)
    assert clique == a.maxlive


def test_live_at_names_the_values_counted_in_the_pressure_after_each_instruction():
    a = analyze(parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  %y:f32 = mov 2\n  %p:pred = setp.lt %x, %y\n"
                      "  %z:f32 = add %x, %y\n  %w:u64 = mov 8\n  st.global %w, 0, %z\n  exit\n"))
    assert [a.live_at(i) for i in range(7)] == [["x"], ["x", "y"], ["x", "y"], ["z"], ["w", "z"], [], []]
    assert [len(a.live_at(i)) for i in range(7)] != a.pressure.tolist()  # pressure counts widths, live_at names


def test_a_dead_definition_is_live_only_at_its_own_instruction():
    a = analyze(parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  %d:f32 = mov 9\n  st.global %x, 0, %x\n  exit\n"))
    assert [a.live_at(i) for i in range(4)] == [["x"], ["d", "x"], [], []]
    assert a.segments["d"] == [(3, 3)]


def test_a_loop_of_several_blocks_nests_its_header_and_body_one_deep():
    a = analyze(parse(".kernel k\n.block entry\n  %i:i32 = mov 0\n.block head\n  %i:i32 = add %i, 1\n"
                      "  %p:pred = setp.lt %i, 3\n  cbr %p, body, done\n.block body\n  %j:i32 = mul %i, %i\n"
                      "  br head\n.block done\n  exit\n"))
    assert a.loop_depth.tolist() == [0, 1, 1, 1, 1, 1, 0]


def test_a_value_dead_before_a_self_loop_is_not_live_around_it():
    a = analyze(parse(".kernel k\n.block entry\n  %x:i32 = mov 1\n  %i:i32 = add %x, 1\n.block loop\n"
                      "  %i:i32 = add %i, 1\n  %p:pred = setp.lt %i, 3\n  cbr %p, loop, done\n.block done\n  exit\n"))
    assert a.segments["x"] == [(1, 2)] and a.segments["i"] == [(3, 9)]
    assert a.pressure.tolist() == [1, 1, 1, 1, 1, 0]


def test_a_program_without_reads_still_has_integer_rows_and_spill_weights():
    a = analyze(parse(".kernel k\n.block b\n  %x:f32 = mov 1\n  exit\n"))
    assert a.operand_reads.shape == (0, 2) and a.spill_weight.tolist() == [1.0]


def test_nested_loops_add_up_and_live_out_is_kept_per_block():
    a = analyze(parse(".kernel k\n.block entry\n  %i:i32 = mov 0\n.block outer\n  %j:i32 = mov 0\n.block inner\n"
                      "  %j:i32 = add %j, 1\n  %q:pred = setp.lt %j, 2\n  cbr %q, inner, next\n.block next\n"
                      "  %i:i32 = add %i, 1\n  %p:pred = setp.lt %i, 3\n  cbr %p, outer, done\n.block done\n  exit\n"))
    assert a.loop_depth.tolist() == [0, 1, 2, 2, 2, 1, 1, 1, 0]
    index = a.index
    assert [sorted(a.names[v] for v in range(len(a.names)) if out >> v & 1) for out in a.live_out] == [
        ["i"], ["i", "j"], ["i", "j"], ["i"], []]
    assert index["i"] == 0


def test_an_empty_program_has_an_empty_analysis():
    from engine.ir.core import Program

    a = analyze(Program("k", ()))
    assert (a.names, a.undefined, a.maxlive, a.segments) == ((), (), 0, {})


GUARDED_BRANCH = """.kernel k
.block a
  %pa:u64 = param A
  %x:i32 = ld.global %pa, 0
  %p:pred = setp.lt %x, 5
  @%p br c
.block b
  st.global %pa, 4, %x
  exit
.block c
  exit
"""


def test_a_guarded_branch_falls_through_so_what_the_next_block_reads_stays_live_across_it():
    """``@%p br c`` runs block b when %p is false: %x must be live out of block a (it was not, once)."""
    from engine.check.symbolic import check_allocation

    program = parse(GUARDED_BRANCH)
    a = analyze(program)
    x = a.index["x"]
    assert a.end[x] >= 2 * 4, "x dies before the store in the fall-through block"
    assert a.pressure[3] >= 3     # pa (2) and x live after the guarded branch
    clobber = {"pa": (0, 1), "x": (2,)}
    assert check_allocation(program, clobber, {}) == []
