"""The ILP model (engine/model/ilp.py): hand-worked programs, monotonic properties, and the latency table's completeness.

Expected cycles are written in terms of the latency table's own figures
(``L[...]``), so the hand counts check the model's arithmetic, not the figures.
"""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ir.spill import has_spill_code
from engine.alloc import ALLOCATORS, allocate
from engine.base.errors import RegtuneError
from engine.ir.parser import parse
from engine.model.arch import ARCHS, latency_table, load_latencies
from engine.model.ilp import (
    RAW,
    WAR,
    WAW,
    dependence_graph,
    executed_path,
    latency_class,
    plan_ilp,
    program_ilp,
    schedule,
)
from engine.plan import Plan
from engine.workloads.gemm import SCHEDULES, Gemm, gemm_program
from engine.workloads.mha import Mha, build_mha
from tests.engine.strategies import examples, programs

L = load_latencies("sm_80").cycles
I = load_latencies("sm_80").issue


def _program(body: str):
    return parse(".kernel k\n.block b\n" + body + "  exit\n")


def _plan(program, assignment):
    return Plan(program, assignment, {}, 255, "hand", options={"arch": "sm_80"})


def test_a_chain_is_its_latencies_in_a_row():
    p = _program("  %x:f32 = mov 1\n  %y:f32 = add %x, %x\n  %z:f32 = mul %y, %y\n")
    f = program_ilp(p, "sm_80")
    assert f.critical_path == L["alu"] + 2 * L["ffma"]
    assert f.instructions == 4 and f.ilp == pytest.approx(4 / f.critical_path)
    assert f.cycles == max(L["alu"] + 2 * L["ffma"], L["alu"] + L["ffma"] + 2)   # exit issues after z


def test_two_independent_chains_run_side_by_side():
    one = program_ilp(_program("  %x:f32 = mov 1\n  %y:f32 = add %x, %x\n"), "sm_80")
    two = program_ilp(_program("  %x:f32 = mov 1\n  %u:f32 = mov 2\n  %y:f32 = add %x, %x\n"
                               "  %v:f32 = add %u, %u\n"), "sm_80")
    assert one.critical_path == two.critical_path == L["alu"] + L["ffma"]
    assert two.ilp == pytest.approx(5 / two.critical_path) and two.ilp > one.ilp


REUSE = ("  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n  %y:f32 = add %x, %x\n  %z:f32 = ld.global %pa, 4\n"
         "  %w:f32 = add %z, %z\n  st.global %pa, 0, %y\n  st.global %pa, 4, %w\n")


def test_a_reused_register_adds_a_write_after_read_that_lengthens_the_critical_path():
    p = _program(REUSE)
    apart = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (4,), "w": (5,)}))
    reused = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,), "w": (4,)}))
    assert apart.critical_path == apart.reference_critical_path == L["alu"] + L["ld_global"] + L["ffma"] + 1
    # z's load waits for y's read of x (write after read, 1 cycle), so the second load starts after the first
    assert reused.critical_path == L["alu"] + 2 * L["ld_global"] + 1 + L["ffma"] + 1
    assert reused.reference_critical_path == apart.critical_path and reused.ilp < apart.ilp
    assert apart.false_edges == 0 and reused.false_edges == 2 and reused.critical_false == 1
    assert reused.critical == (0, 1, 2, 3, 4, 6)      # param, ld x, add y, ld z, add w, store w


def test_the_war_edge_is_where_the_register_is_reused():
    p = _program(REUSE)
    g = dependence_graph(p, "sm_80", {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,), "w": (4,)})
    edges = {(int(s), int(d), int(k)): int(w) for s, d, w, k in zip(g.src, g.dst, g.weight, g.kind)}
    assert edges[(2, 3, WAR)] == 1                                   # add y reads x; ld z overwrites it
    # ld z overwrites ld x's register: it waits for x's write scoreboard (a variable-latency writer), which the
    # chain through add y's read already implies, so the critical path is the same as with 1 cycle
    assert edges[(1, 3, WAW)] == L["ld_global"]
    assert edges[(1, 2, RAW)] == L["ld_global"]
    assert sum(1 for e in edges if e[2] != RAW) == 2


SLOTS = ("  %pa:u64 = param A\n  %a:f32 = ld.global %pa, 0\n  st.local 0, %a\n  %b:f32 = ld.global %pa, 4\n"
         "  %a.r1:f32 = ld.local 0\n  st.local {slot}, %b\n  %b.r1:f32 = ld.local {slot}\n"
         "  %s:f32 = add %a.r1, %b.r1\n  st.global %pa, 0, %s\n")
SLOT_REGS = {"pa": (0, 1), "a": (2,), "b": (3,), "a.r1": (4,), "b.r1": (5,), "s": (6,)}


def test_a_reused_spill_slot_makes_the_second_store_wait_for_the_first_reload():
    own = plan_ilp(_plan(_program(SLOTS.format(slot=1)), SLOT_REGS))
    shared = plan_ilp(_plan(_program(SLOTS.format(slot=0)), SLOT_REGS))
    spill = L["alu"] + L["ld_global"] + L["st_local"] + L["ld_local"]
    assert own.critical_path == spill + L["ffma"] + 1
    # b's store into slot 0 waits for a's reload from it (write after read), then b's reload for that store
    assert shared.critical_path == spill + 1 + L["st_local"] + L["ffma"] + 1
    assert shared.false_edges - own.false_edges == 2                 # WAR and WAW on slot 0


LOOP = (".kernel k\n.block entry\n  %acc:f32 = mov 0\n  %i:i32 = mov 0\n.block loop\n  %acc:f32 = add %acc, %acc\n"
        "  %i:i32 = add %i, 1\n  %p:pred = setp.lt %i, {trips}\n  cbr %p, loop, done\n.block done\n  exit\n")


@pytest.mark.parametrize("trips", [1, 3, 5])
def test_a_loop_runs_its_trip_count_and_carries_its_dependences(trips):
    p = parse(LOOP.format(trips=trips))
    path = executed_path(p)
    assert path.indices.tolist() == [0, 1] + [2, 3, 4, 5] * trips + [6]
    f = program_ilp(p, "sm_80")
    # the accumulator's chain crosses every iteration; so does the counter's, ending in the last setp and cbr
    assert f.critical_path == max(L["alu"] + trips * L["ffma"], L["alu"] * (trips + 2) + 1)
    assert f.instructions == 3 + 4 * trips


def test_a_loop_without_a_readable_trip_count_runs_once_and_says_so():
    p = parse(".kernel k\n.block entry\n  %n:i32 = param N\n  %i:i32 = mov 0\n.block loop\n  %i:i32 = add %i, 1\n"
              "  %p:pred = setp.lt %i, %n\n  cbr %p, loop, done\n.block done\n  exit\n")
    path = executed_path(p)
    assert path.indices.tolist() == [0, 1, 2, 3, 4, 5] and "run once (blocks loop)" in path.note


def test_the_longer_side_of_an_if_runs():
    p = parse(".kernel k\n.block a\n  %c:pred = setp.lt 1, 2\n  cbr %c, b, c\n.block b\n  %x:i32 = mov 1\n"
              "  %y:i32 = mov 2\n.block c\n  exit\n")
    assert executed_path(p).indices.tolist() == [0, 1, 2, 3, 4]


def test_an_unstructured_program_runs_in_layout_order_and_says_so():
    p = parse(".kernel k\n.block a\n  br c\n.block b\n  exit\n.block c\n  br b\n")
    path = executed_path(p)
    assert path.indices.tolist() == [0, 1, 2] and "not structured" in path.note


def test_a_path_past_the_limit_is_one_clear_error():
    p = parse(LOOP.format(trips=10**7))
    with pytest.raises(RegtuneError, match="more than the ILP model's limit"):
        executed_path(p)


@settings(max_examples=examples(60), deadline=None)
@given(program=programs(), budget=st.sampled_from([255, 12, 8]), name=st.sampled_from(sorted(ALLOCATORS)),
       extra=st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(1, 500)))
def test_false_dependences_never_shorten_the_critical_path(program, budget, name, extra):
    a = allocate(name, program, budget)
    f = plan_ilp(_plan(a.program, a.assignment).with_(spills=a.spills))
    assert f.critical_path >= f.reference_critical_path
    if not has_spill_code(a.program, a.spills):  # same instructions: the reference (unlimited registers) has the most ILP
        assert f.ilp <= f.reference_ilp and f.instructions == f.reference_instructions
    g = dependence_graph(a.program, "sm_80", a.assignment)
    n = len(g.path)
    if n < 2:
        return
    s, d = sorted((int(extra[0] * (n - 1)), int(extra[1] * (n - 1))))
    s = min(s, n - 2)       # an edge from the last node would have no node after it
    d = max(d, s + 1)
    more = replace(g, src=np.r_[g.src, s], dst=np.r_[g.dst, d], weight=np.r_[g.weight, extra[2]],
                   kind=np.r_[g.kind, WAR].astype(np.int8))
    longer = schedule(more)
    # the list-scheduled cycles are a greedy heuristic's and need not grow with an edge (Graham's scheduling
    # anomalies); the dataflow bound and the issue in the path's own order do
    assert longer.critical_path >= schedule(g).critical_path
    assert longer.in_order_cycles >= schedule(g).in_order_cycles


def _workload_programs():
    for schedule_name in SCHEDULES:
        yield gemm_program(Gemm(4, 4, 4), (2, 2), schedule_name)
    strategies = [(), ("qk-symmetric",), ("sliding-window",), ("fp16-softmax",), ("head-shared",), ("group-pools",)]
    for s in strategies:
        yield build_mha(Mha(32, 64, 64, 4), s)[0]
    yield build_mha(Mha(32, 64, 64, 4), (), projection=True)[0]


def test_every_opcode_of_the_gemm_and_mha_workloads_has_a_latency_class_on_every_arch():
    opcodes = {}
    for p in _workload_programs():
        for ins in p.instructions:
            opcodes.setdefault(ins.opcode, latency_class(ins))
    defaulted = sorted(op for op, cls in opcodes.items() if cls == "default")
    assert defaulted == ["div.u32", "rem.u32"]          # named in the table's 'default' source
    for arch in ARCHS:
        table = load_latencies(arch)
        assert set(opcodes.values()) <= set(table.cycles)
        assert all(op in table.sources["default"] for op in defaulted)


def test_every_figure_of_every_latency_table_has_cycles_and_a_source():
    classes = {"ffma", "imad", "alu", "dfma", "mufu", "cvt", "shfl", "ld_global", "ld_local", "ld_shared",
               "st_global", "st_local", "st_shared", "branch", "default"}
    for arch in ARCHS:
        t = load_latencies(arch)
        assert set(t.cycles) == classes == set(t.sources)
        assert all(isinstance(c, int) and c >= 1 for c in t.cycles.values())
        assert all(len(s.split()) >= 4 for s in t.sources.values())
        # a figure not published for this arch says which figure stands in
        assert all("stands in" in s or "Accel-Sim" in s or "Table 3" in s for s in t.sources.values())
        # every class has an issue interval on a named pipe, with its source
        assert set(t.issue) == set(t.pipes) == set(t.issue_sources) == classes
        assert all(isinstance(c, int) and c >= 1 for c in t.issue.values())
        assert all(len(s.split()) >= 4 for s in t.issue_sources.values())
        assert t.pipes["ffma"] != t.pipes["ld_global"] and t.issue["ld_global"] >= t.issue["ffma"]


@pytest.mark.parametrize("row", [{"cycles": 4}, {"cycles": 4, "source": " "}, {"cycles": 0, "source": "x"},
                                 {"cycles": 4.5, "source": "x"}])
def test_a_table_row_without_integer_cycles_or_a_source_is_refused(row):
    good = {"alu": {"cycles": 4, "source": "a source"}}
    assert latency_table("sm_80", good).cycles == {"alu": 4}
    with pytest.raises(RegtuneError, match="latency class 'ffma' needs integer cycles >= 1 and a source"):
        latency_table("sm_80", {**good, "ffma": row})
    with pytest.raises(RegtuneError, match="no \\[latency\\] table"):
        latency_table("sm_80", None)


def test_a_plan_s_figures_are_the_same_given_its_program_without_spill_code():
    """plan_ilp(plan, original=allocation.original) skips removing the spill code and gives the same figures."""
    from engine.alloc import allocate
    from engine.ir.parser import parse
    from engine.model.ilp import plan_ilp
    from tests.bench.programs import loop_shaped

    for name in ("naive", "linear-scan"):
        allocation = allocate(name, parse(loop_shaped(n=600, peak=40)), 24)
        assert allocation.spills
        assert plan_ilp(allocation.plan(), original=allocation.original) == plan_ilp(allocation.plan())


# --- NVIDIA's hazards by kind (engine/model/ilp.py war_weight, waw_weight; resources/arch [read_scoreboard]) ---

R = load_latencies("sm_80").reads


def _edges(p, assignment):
    g = dependence_graph(p, "sm_80", assignment)
    return {(int(s), int(d), int(k)): int(w) for s, d, w, k in zip(g.src, g.dst, g.weight, g.kind)}


# x is read by a fixed-latency add (node 2) or by a store (node 2); then node 3 writes x's register
WAR_FIXED = ("  %pa:u64 = param A\n  %x:f32 = mov 1\n  %y:f32 = add %x, %x\n  %z:f32 = mov 2\n"
             "  st.global %pa, 0, %y\n  st.global %pa, 4, %z\n")
WAR_MEMORY = ("  %pa:u64 = param A\n  %x:f32 = mov 1\n  st.global %pa, 0, %x\n  %z:f32 = mov 2\n"
              "  st.global %pa, 4, %z\n")


def test_a_reuse_after_a_fixed_latency_reader_costs_no_extra_cycle():
    p = _program(WAR_FIXED)
    apart = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (4,)}))
    reused = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,)}))
    assert _edges(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,)})[(2, 3, WAR)] == 1   # issue order only
    assert reused.false_edges >= 1
    # in the path's own order, mov z issues after add y anyway: no extra cycle; the list scheduler and the dataflow
    # bound may no longer hoist z above add y, which costs the one issue slot and nothing more
    assert reused.in_order_cycles == apart.in_order_cycles
    assert 0 <= reused.cycles - apart.cycles <= 1
    assert reused.critical_path - apart.critical_path <= 1


def test_a_reuse_after_a_memory_reader_waits_for_its_read_scoreboard():
    p = _program(WAR_MEMORY)
    assignment = {"pa": (0, 1), "x": (2,), "z": (2,)}
    assert _edges(p, assignment)[(2, 3, WAR)] == R["st_global"]
    apart = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "z": (3,)}))
    reused = plan_ilp(_plan(p, assignment))
    # mov z now issues R cycles after the store of x instead of 1: the in-order issue of every later
    # instruction moves by the same amount
    assert reused.in_order_cycles - apart.in_order_cycles == R["st_global"] - 1
    # the list scheduler would hoist mov z above the store (its height is the same, it is ready first): with its
    # register reused it waits the read scoreboard instead
    assert reused.cycles > apart.cycles
    # an ld.global reading an address register holds it the same way
    q = _program("  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n  %pb:u64 = param B\n"
                 "  %y:f32 = ld.global %pb, 0\n  %s:f32 = add %x, %y\n  st.global %pb, 0, %s\n")
    assert _edges(q, {"pa": (0, 1), "x": (2,), "pb": (0, 1), "y": (3,), "s": (2,)})[(1, 2, WAR)] == R["ld_global"]


def test_a_write_after_a_variable_latency_write_waits_for_its_scoreboard():
    # x's load is overwritten before it is read (a dead load): the mov must wait until the load has written
    p = _program("  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n  %z:f32 = mov 2\n  st.global %pa, 0, %z\n")
    e = _edges(p, {"pa": (0, 1), "x": (2,), "z": (2,)})
    assert e[(1, 2, WAW)] == L["ld_global"]
    # after a fixed-latency writer, results land in order: one cycle when the second is no faster
    q = _program("  %x:f32 = mov 1\n  %z:f32 = add 2, 2\n  %pa:u64 = param A\n  st.global %pa, 0, %z\n")
    assert _edges(q, {"x": (2,), "z": (2,), "pa": (0, 1)})[(0, 1, WAW)] == max(1, L["alu"] - L["ffma"] + 1)


@settings(max_examples=examples(30), deadline=None)
@given(program=programs(), name=st.sampled_from(sorted(ALLOCATORS)))
def test_model_cycles_are_monotone_in_every_weight(program, name):
    """Raising any one edge's weight never lowers the issue cycles or the critical path; every false edge weighs
    at least one cycle and no more than the largest latency or read-scoreboard figure of the table."""
    a = allocate(name, program, 255)
    g = dependence_graph(a.program, "sm_80", a.assignment)
    false = g.kind != RAW
    assert (g.weight[false] >= 1).all() and (g.weight[false] <= max(L.values())).all()
    base = schedule(g)
    for k in range(0, len(g.src), max(1, len(g.src) // 5)):
        heavier = replace(g, weight=g.weight + (np.arange(len(g.src)) == k) * 37)
        s = schedule(heavier)
        assert s.in_order_cycles >= base.in_order_cycles and s.critical_path >= base.critical_path


# --- the list scheduler (engine/model/ilp.py list_schedule) ---


def test_the_list_scheduler_hoists_a_load_whose_register_is_free_and_not_one_whose_is_not():
    p = _program(REUSE)      # ld x, add y (reads x), ld z, add w (reads z), two stores
    own = {"pa": (0, 1), "x": (2,), "y": (3,), "z": (4,), "w": (5,)}
    apart = plan_ilp(_plan(p, own))
    reused = plan_ilp(_plan(p, {"pa": (0, 1), "x": (2,), "y": (3,), "z": (2,), "w": (4,)}))
    # apart: ld z is hoisted above add y; it issues as soon as the LD/ST pipe takes it, so the two loads overlap
    s = schedule(dependence_graph(p, "sm_80", own))
    assert s.issue[3] == s.issue[1] + I["ld_global"] and s.issue[3] < s.issue[2]
    # in the path's own order ld z waits for add y, a load's latency after ld x; the rest follows it the same way
    assert apart.in_order_cycles - apart.cycles == L["ld_global"] + 1 - I["ld_global"]
    assert apart.cycles == apart.reference_cycles
    # reused: ld z writes x's register, so it waits for add y's read of x: the hoist is gone, and so is the overlap
    assert reused.cycles - apart.cycles >= L["ld_global"] - I["ld_global"]
    assert reused.critical_path <= reused.cycles <= reused.in_order_cycles


@settings(max_examples=examples(40), deadline=None)
@given(program=programs(), budget=st.sampled_from([255, 12, 8]), name=st.sampled_from(sorted(ALLOCATORS)))
def test_the_list_schedule_keeps_every_dependence_and_issues_one_instruction_a_cycle(program, budget, name):
    a = allocate(name, program, budget)
    g = dependence_graph(a.program, "sm_80", a.assignment)
    s = schedule(g)
    issue = s.issue
    assert (issue[g.dst] >= issue[g.src] + g.weight).all()
    assert len(set(issue.tolist())) == len(issue)                     # one instruction a cycle
    for pipe in np.unique(g.pipe):                                    # each pipe takes one every interval
        on = np.flatnonzero(g.pipe == pipe)
        on = on[np.argsort(issue[on])]
        assert (np.diff(issue[on]) >= g.interval[on][:-1]).all()
    # regions one after the other, each block's terminator last in its run
    for r in np.unique(g.region)[:-1]:
        assert issue[g.region == r].max() < issue[g.region == r + 1].min()
    for t in np.flatnonzero(g.last):
        assert issue[t] == issue[g.region == g.region[t]].max()
    assert s.cycles >= s.critical_path and s.cycles >= len(g.path)
