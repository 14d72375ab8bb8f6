"""Undoable commands: every change to the document is one QUndoCommand (a compound edit is a stack macro).

Each redo/undo is a one-line call into QtDocument; a command keeps the
plans before and after (immutable), so undo restores an identical plan.
"""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand

from dataclasses import replace

from engine.edits import Assign, Move, Spill, Swap, Unspill, apply_edit
from engine.predict import predict


def describe(edit) -> str:
    if isinstance(edit, Assign):
        return f"assign %{edit.value} to {'R' + ':R'.join(map(str, edit.registers))}"
    if isinstance(edit, Swap):
        return f"swap R{edit.a} and R{edit.b}"
    if isinstance(edit, Spill):
        return f"spill %{edit.value}"
    if isinstance(edit, Unspill):
        return f"unspill %{edit.value}"
    if isinstance(edit, Move):
        return f"move instruction {edit.index} to {edit.to}"
    return type(edit).__name__


class EditCommand(QUndoCommand):
    """One hand edit of one plan (assignment or schedule edit)."""

    def __init__(self, doc, name: str, edit, before, after):
        kind = "schedule" if isinstance(edit, Move) else "assignment"
        super().__init__(f"{name}: {describe(edit)} ({kind} edit)")
        self.doc, self.name = doc, name
        self.before, self.after = before, after.with_(allocator="hand")

    def redo(self):
        self.doc.set_plan(self.name, self.after, self.text())

    def undo(self):
        self.doc.set_plan(self.name, self.before, f"undo {self.text()}")


class PlansCommand(QUndoCommand):
    """A change to the list of plans: add a hand copy, rename, delete."""

    def __init__(self, doc, text: str, plans: dict, current: str | None):
        super().__init__(text)
        self.doc = doc
        self.before = (dict(doc.session.plans), doc.session.current)
        self.after = (dict(plans), current)

    def redo(self):
        self.doc.set_plans(*self.after)

    def undo(self):
        self.doc.set_plans(*self.before)


class WorkloadCommand(QUndoCommand):
    """A new workload or options (tile, schedule, budget, ...): new program, new plans."""

    def __init__(self, doc, text: str, workload: dict, options: dict, plans: dict):
        super().__init__(text)
        s = doc.session
        self.doc = doc
        self.before = (dict(s.workload), dict(s.options), dict(s.plans), s.current)
        current = s.current if s.current in plans else next(iter(plans), None)
        self.after = (dict(workload), dict(options), dict(plans), current)

    def redo(self):
        self.doc.set_workload(*self.after)

    def undo(self):
        self.doc.set_workload(*self.before)


def push_edit(stack, doc, edit, name: str | None = None) -> object:
    """Apply ``edit`` to plan ``name`` (current by default): push it when applied, show the reason when
    rejected. An allocator's own plan is never changed: the edit goes to a new hand copy ("hand N"),
    made in the same undoable step."""
    from gui.model.session import ALLOCATOR_ORDER

    name = name or doc.session.current
    before = doc.session.plans[name]
    result = apply_edit(before, edit)
    if result.rejected:
        doc.reject(result.rejected)
        return result
    # interactive: the static figures only, no interpreter run per edit
    result = replace(result, plan=result.plan.with_(predicted=predict(result.plan, result.analysis)))
    if name not in ALLOCATOR_ORDER:
        stack.push(EditCommand(doc, name, edit, before, result.plan))
        return result
    copy = doc.session.hand_name()
    plans = dict(doc.session.plans)
    plans[copy] = before.with_(allocator="hand")
    # one undo step made of two commands (Qt's macro: each pushed command is owned by the stack)
    stack.beginMacro(f"{copy} (copy of {name}): {describe(edit)}")
    stack.push(PlansCommand(doc, f"copy {name} to {copy}", plans, copy))
    stack.push(EditCommand(doc, copy, edit, before.with_(allocator="hand"), result.plan))
    stack.endMacro()
    return result
