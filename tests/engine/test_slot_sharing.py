"""Spill-slot sharing (issue 24): spilled values that are never live at once share a slot, the stack frame
shrinks with it, and the plans pass the static checker, the symbolic proof and the execution check."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.alloc import ALLOCATORS, allocate
from engine.analysis.liveness import analyze
from engine.check.symbolic import check_allocation
from engine.check.verify import static_conflicts, verify_execution
from engine.ir.spill import remove_spill_code
from engine.predict import predicted_plan
from engine.workloads.mha import Mha, build_mha
from tests.engine.strategies import programs


def _shared_values_never_live_at_once(allocation) -> bool:
    original = analyze(remove_spill_code(allocation.program, allocation.spills))
    graph = original.interference
    by_slot = {}
    for name, slot in allocation.spills.items():
        by_slot.setdefault(slot, []).append(original.index[name])
    return all(not set(graph.neighbors(u).tolist()) & set(vs) for vs in by_slot.values() for u in vs)


SHARING = sorted(set(ALLOCATORS) - {"naive"})  # naive reuses nothing, slots included


def test_naive_never_shares_a_slot():
    plan = allocate("naive", build_mha(Mha(16, 1, 32, 2))[0], 24)
    assert len(set(plan.spills.values())) == len(plan.spills)


@pytest.mark.parametrize("name", SHARING)
def test_mha_at_a_tight_budget_shares_slots_and_verifies(name):
    program = build_mha(Mha(16, 1, 32, 2))[0]
    allocation = allocate(name, program, 24)
    plan = predicted_plan(allocation)
    slots = set(plan.spills.values())
    assert len(slots) < len(plan.spills), "some slot should be shared"
    widths = {}
    for v, slot in plan.spills.items():
        widths[slot] = max(widths.get(slot, 0), program.values[v].width)
    assert plan.predicted.local_bytes == 4 * sum(widths.values())
    assert plan.predicted.local_bytes < 4 * sum(program.values[v].width for v in plan.spills)
    assert _shared_values_never_live_at_once(allocation)
    assert static_conflicts(plan.program, plan.assignment, plan.spills, 32) == []
    assert check_allocation(plan.program, plan.assignment, plan.spills) == []
    verify_execution(plan.program, plan.assignment, plan.spills)


@settings(max_examples=40)
@given(program=programs(mixed=True), budget=st.sampled_from([10, 8, 6]), name=st.sampled_from(sorted(ALLOCATORS)))
def test_shared_slots_hold_values_never_live_at_once_and_the_proof_agrees(program, budget, name):
    allocation = allocate(name, program, budget)
    assert _shared_values_never_live_at_once(allocation)
    assert check_allocation(allocation.program, allocation.assignment, allocation.spills) == []
