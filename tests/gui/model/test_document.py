"""The Qt-free document: plan-list operations, hand edits, events, and memos it owns (STYLE rule 19: push, undo, identical)."""

import pytest

from engine.alloc.hand import Assign, Move, Spill
from engine.planfile import plan_to_dict
from engine.check.verify import static_conflicts
from gui.model.document import MEMO_LIMIT, Document
from gui.model.events import EventEmitter


@pytest.fixture
def doc(gemm_plans):
    d = Document(autosave=False)
    d.set_plans(gemm_plans, "chaitin-briggs")
    return d


@pytest.fixture
def seen(doc):
    log = []
    for name in doc.events.names:
        getattr(doc.events, name).connect(lambda *args, name=name: log.append((name, *args)))
    return log


def _state(doc):
    return [(n, plan_to_dict(p)) for n, p in doc.session.plans.items()], doc.session.current


def test_duplicate_adds_a_hand_copy_and_makes_it_current(doc, seen):
    before = _state(doc)
    plans_before = dict(doc.session.plans)
    change = doc.duplicated("dsatur")
    assert change.text == "copy dsatur to hand 1" and change.rejected is None
    doc.set_plans(change.plans, change.current)
    assert list(doc.session.plans)[-1] == "hand 1" == doc.session.current
    assert doc.plan.allocator == "hand" and doc.plan.assignment == plans_before["dsatur"].assignment
    assert seen == [("plans",), ("current",)]
    doc.set_plans(plans_before, before[1])          # what the undo command does
    assert _state(doc) == before


def test_rename_keeps_the_place_and_refuses_a_name_in_use_or_blank(doc):
    change = doc.renamed("chaitin-briggs", "tight")
    doc.set_plans(change.plans, change.current)
    assert list(doc.session.plans) == ["naive", "linear-scan", "tight", "dsatur"] and doc.session.current == "tight"
    assert doc.renamed("tight", "naive").rejected == "a plan named 'naive' already exists"
    assert doc.renamed("tight", "  ").rejected == "a plan name cannot be blank"


def test_delete_moves_the_current_plan_to_the_first_left(doc):
    change = doc.deleted("chaitin-briggs")
    doc.set_plans(change.plans, change.current)
    assert list(doc.session.plans) == ["naive", "linear-scan", "dsatur"] and doc.session.current == "naive"
    change = doc.deleted("dsatur")
    assert change.current == "naive"


def test_reorder_takes_a_permutation_only(doc):
    order = ["dsatur", "naive", "chaitin-briggs", "linear-scan"]
    change = doc.reordered(order)
    doc.set_plans(change.plans, change.current)
    assert list(doc.session.plans) == order and doc.session.current == "chaitin-briggs"
    assert "each plan once" in doc.reordered(order[:3]).rejected
    assert "each plan once" in doc.reordered(order + ["naive"]).rejected


def test_added_plans_never_replace_a_plan_of_the_same_name(doc, gemm_plans):
    mine = gemm_plans["naive"].with_(allocator="hand")
    doc.set_plans({"mine": mine, "naive": mine}, "mine")
    change = doc.added(gemm_plans, "mine")
    assert list(change.plans) == ["mine", "naive", "linear-scan", "chaitin-briggs", "dsatur"]
    assert change.plans["naive"] is mine


def test_set_current_and_selection_emit_once_and_only_on_change(doc, seen):
    doc.set_current("dsatur")
    doc.set_current("dsatur")
    doc.set_current("nowhere")
    doc.select("acc_0_0")
    doc.select("acc_0_0")
    doc.select("")
    doc.select_instruction(3)
    doc.select_instruction(-1)
    assert seen == [("current",), ("selection", "acc_0_0"), ("selection", None), ("instruction", 3),
                    ("instruction", None)]


def test_an_edit_of_an_allocators_plan_goes_to_a_hand_copy_and_undo_restores_it(doc, gemm_plans):
    before = _state(doc)
    name = "acc_0_0"
    change = doc.hand_edit(Assign(name, (0,)))
    assert change.copy is not None and change.name == "hand 1" and change.source == "chaitin-briggs"
    assert change.macro_text == "hand 1 (copy of chaitin-briggs): assign %acc_0_0 to R0"
    doc.set_plans(change.copy.plans, change.copy.current)          # the macro's two redo calls
    doc.set_plan(change.name, change.after, change.text)
    assert doc.plan.assignment[name] == (0,) and doc.session.plans["chaitin-briggs"] is gemm_plans["chaitin-briggs"]
    assert doc.conflicts() == static_conflicts(doc.plan.program, doc.plan.assignment, doc.plan.spills,
                                               doc.plan.budget)
    doc.set_plan(change.name, change.before)                        # and the two undo calls
    doc.set_plans(dict(gemm_plans), "chaitin-briggs")
    assert _state(doc) == before


def test_an_edit_of_a_hand_plan_changes_it_in_place_and_a_rejected_edit_says_why(doc):
    copy = doc.duplicated("dsatur")
    doc.set_plans(copy.plans, copy.current)
    change = doc.hand_edit(Spill("acc_1_1"))
    assert change.copy is None and change.name == "hand 1" and "acc_1_1" in change.after.spills
    assert change.text == "hand 1: spill %acc_1_1 (assignment edit)"
    program = doc.plan.program
    load = next(i for i, ins in enumerate(program.instructions) if str(ins).startswith("%a_0_0"))
    use = next(i for i, ins in enumerate(program.instructions) if "a_0_0" in ins.uses)
    rejected = doc.hand_edit(Move(use, load))
    assert rejected.after is None and f"cannot move instruction {use}" in rejected.rejected


def test_conflicts_are_memoised_by_the_document_bounded_and_never_on_the_program(doc, gemm_plans):
    plan = gemm_plans["dsatur"]
    first = doc.conflicts(plan)
    assert doc.conflicts(plan) is first
    assert "window_conflicts" not in getattr(plan.program, "cache", {})
    for n in range(MEMO_LIMIT + 5):
        doc.conflicts(plan.with_(budget=plan.budget - n % 3))
    assert len(doc._conflicts) <= MEMO_LIMIT
    broken = plan.with_(assignment={**plan.assignment, "acc_0_0": plan.assignment["acc_0_1"]})
    assert doc.conflicts(broken) and not doc.conflicts(plan)


def test_an_emitter_calls_each_callback_once_in_order_and_forgets_disconnected_ones():
    calls = []
    e = EventEmitter("x")
    first, second = (lambda v: calls.append(("first", v))), (lambda v: calls.append(("second", v)))
    e.connect(first)
    e.connect(second)
    e.connect(first)
    e.emit(1)
    e.disconnect(first)
    e.disconnect(first)
    e.emit(2)
    assert calls == [("first", 1), ("second", 1), ("second", 2)]
