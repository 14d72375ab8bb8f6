"""Undoable commands: every change to the document is one QUndoCommand (a compound edit is a stack macro).

Invariant: each redo/undo is a one-line call into the Qt-free document
(gui/model/document.py); a command keeps the plans before and after
(immutable), so undo restores an identical plan. What an edit or a
plan-list change does is computed by the document, never here.
"""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand

from gui.model.document import HandEdit, PlansChange


class EditCommand(QUndoCommand):
    """One hand edit of one plan (assignment or schedule edit)."""

    def __init__(self, doc, change: HandEdit):
        super().__init__(change.text)
        self.doc, self.name = doc, change.name
        self.before, self.after = change.before, change.after

    def redo(self):
        self.doc.set_plan(self.name, self.after, self.text())

    def undo(self):
        self.doc.set_plan(self.name, self.before, f"undo {self.text()}")


class PlansCommand(QUndoCommand):
    """A change to the list of plans: add a hand copy, rename, delete, reorder."""

    def __init__(self, doc, change: PlansChange):
        super().__init__(change.text)
        self.doc = doc
        self.before = (dict(doc.session.plans), doc.session.current)
        self.after = (dict(change.plans), change.current)

    def redo(self):
        self.doc.set_plans(*self.after)

    def undo(self):
        self.doc.set_plans(*self.before)


class WorkloadCommand(QUndoCommand):
    """A new workload or options (tile, schedule, budget, ...): new program, new plans."""

    def __init__(self, doc, text: str, workload: dict, options, plans: dict, current: str | None = None):
        """``current``: the plan to show (by default the one shown now, if the new plans have it, else the first)."""
        super().__init__(text)
        s = doc.session
        self.doc = doc
        self.before = (dict(s.workload), s.options, dict(s.plans), s.current)
        current = current if current in plans else s.current if s.current in plans else next(iter(plans), None)
        self.after = (dict(workload), options, dict(plans), current)

    def redo(self):
        self.doc.set_workload(*self.after)

    def undo(self):
        self.doc.set_workload(*self.before)


def push_plans(stack, doc, change: PlansChange) -> bool:
    """Push a plan-list change, or show why it was refused; True when pushed."""
    if change.rejected:
        doc.reject(change.rejected)
        return False
    stack.push(PlansCommand(doc, change))
    return True


def push_edit(stack, doc, edit, name: str | None = None) -> HandEdit:
    """Apply ``edit`` to plan ``name`` (current by default): push it when applied, show the reason when
    rejected. An edit of an allocator's plan adds its hand copy in the same undo step (a macro)."""
    change = doc.hand_edit(edit, name)
    if change.rejected:
        doc.reject(change.rejected)
    elif change.copy is None:
        stack.push(EditCommand(doc, change))
    else:
        stack.beginMacro(change.macro_text)      # each pushed command is owned by the stack
        stack.push(PlansCommand(doc, change.copy))
        stack.push(EditCommand(doc, change))
        stack.endMacro()
    return change
