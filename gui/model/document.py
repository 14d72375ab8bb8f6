"""The window's document, Qt-free: the session, its current plan, the selection, plan-list operations,
hand edits (through engine.alloc.hand) and the current plan's conflicts; every change emits an event.

Invariant: the session changes only through the ``set_*``, ``select*``,
``reject`` and ``replace_session`` methods (each undo command's redo/undo is
one call to one of them), and each of those emits the events that name what
changed (:class:`gui.model.events.DocumentEvents`). The plan-list and edit
operations only compute the change (a :class:`PlansChange` or
:class:`HandEdit`) for the caller to apply. Derived data (analyses,
conflicts) is memoised in bounded dicts the document owns, keyed by the
identity of the program or plan that the entry also keeps alive; nothing is
stored on IR objects.

Examples
--------
>>> from gui.model.session import allocate_all
>>> doc = Document(autosave=False)
>>> doc.set_plans(allocate_all({"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}, doc.session.options),
...               "dsatur")
>>> change = doc.duplicated("dsatur")
>>> change.text, change.current
('copy dsatur to hand 1', 'hand 1')
>>> doc.set_plans(change.plans, change.current)
>>> doc.plan.allocator, doc.conflicts()
('hand', [])
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from engine.alloc.hand import (
    EditResult,
    Move,
    apply_edit,
    describe_edit,
)
from engine.analysis.liveness import analyze
from engine.check.verify import static_conflicts
from engine.plan import Plan
from engine.predict import predict
from engine.workloads import BuildOptions
from gui.model.events import DocumentEvents
from gui.model.notifications import notify
from gui.model.session import ALLOCATOR_ORDER, Session, save_session
from gui.model.why import Occurrences, WhyReport, why_this_many

#: how many programs' analyses and plans' conflicts the document remembers
MEMO_LIMIT = 64


class IdentityMemo:
    """Values computed from objects, keyed by the object's identity, least recently used dropped first.

    An entry keeps its key object alive, so an ``id`` is never reused while its entry exists.

    Examples
    --------
    >>> memo = IdentityMemo(limit=1)
    >>> a, b = [1], [2]
    >>> memo.get(a, len), memo.get(a, lambda _: 99), memo.get(b, sum), len(memo)
    (1, 1, 2, 1)
    """

    def __init__(self, limit: int = MEMO_LIMIT):
        self.limit = limit
        self._entries: OrderedDict[int, tuple[object, object]] = OrderedDict()

    def get(self, key: object, compute):
        """The value for ``key``, computed by ``compute(key)`` on a miss."""
        entry = self._entries.get(id(key))
        if entry is None or entry[0] is not key:
            entry = (key, compute(key))
            self._entries[id(key)] = entry
            if len(self._entries) > self.limit:
                self._entries.popitem(last=False)
        self._entries.move_to_end(id(key))
        return entry[1]

    def put(self, key: object, value) -> None:
        """Remember ``value`` for ``key`` (a value computed elsewhere, such as an edit's conflicts)."""
        self.get(key, lambda _k: value)

    def __len__(self) -> int:
        return len(self._entries)


def describe(edit) -> str:
    """One line naming a hand edit, as the undo history shows it (:func:`engine.alloc.hand.describe_edit`).

    Examples
    --------
    >>> from engine.alloc.hand import Assign
    >>> describe(Assign("acc_0_0", (4, 5))), describe(Move(3, 1))
    ('assign %acc_0_0 to R4:R5', 'move instruction 3 to 1')
    """
    return describe_edit(edit)


@dataclass(frozen=True)
class PlansChange:
    """A new list of plans and current plan (apply with :meth:`Document.set_plans`), or why there is none."""

    text: str
    plans: dict
    current: str | None
    rejected: str | None = None


@dataclass(frozen=True)
class HandEdit:
    """One hand edit, ready to apply: plan ``name`` goes from ``before`` to ``after``.

    When the edited plan is an allocator's, ``copy`` first adds the hand copy
    ``name`` (the same undo step); ``rejected`` says why nothing can change.
    """

    edit: object
    name: str
    before: Plan
    after: Plan | None
    copy: PlansChange | None = None
    source: str | None = None
    rejected: str | None = None

    @property
    def text(self) -> str:
        kind = "schedule" if isinstance(self.edit, Move) else "assignment"
        return f"{self.name}: {describe(self.edit)} ({kind} edit)"

    @property
    def macro_text(self) -> str:
        return f"{self.name} (copy of {self.source}): {describe(self.edit)}"


class Document:
    """The session behind the window (see the module docstring); ``events`` says what changed."""

    def __init__(self, session: Session | None = None, autosave: bool = True):
        self.session = session or Session()
        self.autosave_enabled = autosave
        #: where this document autosaves (its window's :class:`gui.model.session.AutosaveSlot`; None: slot 0)
        self.autosave_file = None
        self.selection: str | None = None
        #: every selected value, ``selection`` first (a conflict selects both of its values)
        self.selected: tuple[str, ...] = ()
        self.instruction: int | None = None
        self.rejection: str | None = None
        self.events = DocumentEvents()
        self._analyses = IdentityMemo()
        self._conflicts = IdentityMemo()
        self._occurrences = IdentityMemo()

    # -- derived -----------------------------------------------------------------------------
    @property
    def plan(self) -> Plan | None:
        """The current plan (None when the session has none)."""
        return self.session.plan

    def analysis(self, plan: Plan | None = None):
        """The liveness analysis of ``plan``'s program (the current plan by default)."""
        plan = plan or self.plan
        return self._analyses.get(plan.program, analyze) if plan else None

    def conflicts(self, plan: Plan | None = None) -> list:
        """Every conflict of ``plan`` (the current plan by default), sorted as the engine reports them."""
        plan = plan or self.plan
        if plan is None:
            return []
        return self._conflicts.get(plan, lambda p: static_conflicts(p.program, p.assignment, p.spills, p.budget,
                                                                    self.analysis(p)))

    def why(self, index: int | None = None) -> WhyReport | None:
        """Why the current plan needs this many registers at ``index`` (the peak by default)."""
        plan = self.plan
        if plan is None:
            return None
        analysis = self.analysis(plan)
        return why_this_many(plan, analysis, index, self._occurrences.get(analysis, Occurrences))

    # -- plan-list operations: each computes a PlansChange -------------------------------------
    def duplicated(self, name: str) -> PlansChange:
        """Add a hand copy of plan ``name`` ("hand N") and make it current."""
        copy = self.session.hand_name()
        plans = dict(self.session.plans)
        plans[copy] = self.session.plans[name].with_(allocator="hand")
        return PlansChange(f"copy {name} to {copy}", plans, copy)

    def renamed(self, old: str, new: str) -> PlansChange:
        """Rename plan ``old`` to ``new``, keeping its place; refused for a name in use or a blank one."""
        s = self.session
        new = new.strip()
        problem = (f"a plan named {new!r} already exists" if new in s.plans
                   else "a plan name cannot be blank" if not new else None)
        plans = {(new if k == old else k): v for k, v in s.plans.items()}
        return PlansChange(f"rename {old} to {new}", plans, new if s.current == old else s.current, problem)

    def deleted(self, name: str) -> PlansChange:
        """Remove plan ``name``; the first plan left becomes current if it was."""
        s = self.session
        plans = {k: v for k, v in s.plans.items() if k != name}
        current = s.current if s.current != name else next(iter(plans), None)
        return PlansChange(f"delete {name}", plans, current)

    def reordered(self, names: list[str]) -> PlansChange:
        """The plans in the order ``names`` gives (which must name each plan once)."""
        s = self.session
        problem = None if sorted(names) == sorted(s.plans) and len(set(names)) == len(names) else \
            f"a new order must name each plan once: {', '.join(sorted(s.plans))}"
        plans = {n: s.plans[n] for n in names if n in s.plans}
        return PlansChange("reorder the plans", plans, s.current, problem)

    def added(self, plans: dict, current: str | None) -> PlansChange:
        """Add the plans of ``plans`` whose names are not taken (the allocators' plans beside an opened file)."""
        merged = dict(self.session.plans)
        for name, plan in plans.items():
            merged.setdefault(name, plan)
        return PlansChange("add the allocators' plans", merged, current)

    # -- hand edits ----------------------------------------------------------------------------
    def hand_edit(self, edit, name: str | None = None) -> HandEdit:
        """Apply ``edit`` to plan ``name`` (the current one by default) without changing the document.

        An allocator's own plan is never changed: the edit goes to a new hand copy.
        """
        name = name or self.session.current
        before = self.session.plans[name]
        result = apply_edit(before, edit, self.analysis(before))   # the views' analysis: kept by edits that keep the program
        if result.rejected:
            return HandEdit(edit, name, before, None, rejected=result.rejected)
        if name not in ALLOCATOR_ORDER:
            return HandEdit(edit, name, before, self._edited(result))
        copy = self.duplicated(name)
        return HandEdit(edit, copy.current, copy.plans[copy.current], self._edited(result), copy, name)

    def _edited(self, result: EditResult) -> Plan:
        # interactive: the static figures only, no interpreter run per edit
        after = result.plan.with_(allocator="hand", predicted=predict(result.plan, result.analysis))
        self._conflicts.put(after, list(result.conflicts))     # the edit checked them already
        self._analyses.put(after.program, result.analysis)
        return after

    # -- changes (one call per undo command's redo/undo) -----------------------------------------
    def set_plan(self, name: str, plan: Plan, note: str | None = None) -> None:
        """Replace plan ``name`` (its measurements are dropped); ``note`` goes to the list of edits."""
        self.session.set_plan(name, plan)
        if note:
            self.session.edits.append(note)
        self.rejection = None
        self.events.plan.emit(name)
        self.autosave()

    def set_plans(self, plans: dict, current: str | None) -> None:
        """Replace the list of plans and the current plan."""
        self.session.plans = dict(plans)
        self.session.measurements = {k: v for k, v in self.session.measurements.items() if k in plans}
        self.session.current = current if current in plans else next(iter(plans), None)
        self.events.plans.emit()
        self.events.current.emit()
        self.autosave()

    def set_workload(self, workload: dict, options: BuildOptions, plans: dict, current: str | None) -> None:
        """A new workload and options with their plans; selection and measurements are cleared."""
        self.session.workload, self.session.options = dict(workload), options
        self.session.measurements = {}
        self.selection, self.selected, self.instruction = None, (), None
        self.events.workload.emit()
        self.set_plans(plans, current)

    def replace_session(self, session: Session) -> None:
        """Show another session (a restored autosave): everything changes, nothing is undoable across it."""
        self.session = session
        self.selection, self.selected, self.instruction, self.rejection = None, (), None, None
        self.events.workload.emit()
        self.events.plans.emit()
        self.events.current.emit()

    def set_current(self, name: str) -> None:
        """Make plan ``name`` current (nothing happens for an unknown name)."""
        if name in self.session.plans and name != self.session.current:
            self.session.current = name
            self.events.current.emit()
            self.autosave()

    def select(self, value: str | None, *also: str) -> None:
        """Select a value (None: no selection) in every view, and the values ``also`` beside it (the values
        of a conflict); the event carries the first."""
        value = value or None
        selected = (value, *(a for a in also if a and a != value)) if value else ()
        if selected != self.selected:
            self.selection, self.selected = value, selected
            self.events.selection.emit(value)

    def select_instruction(self, index: int | None) -> None:
        """Select an instruction (None or negative: none)."""
        index = None if index is None or index < 0 else index
        if index != self.instruction:
            self.instruction = index
            self.events.instruction.emit(index)

    def set_measurement(self, name: str, report: dict) -> None:
        """Keep the measurements of plan ``name``'s kernel."""
        self.session.measurements[name] = report
        self.events.measurements.emit(name)

    def reject(self, reason: str) -> None:
        """An edit that could not be applied: shown, nothing changed."""
        self.rejection = reason
        self.events.plan.emit(self.session.current or "")

    def autosave(self) -> None:
        """Write the session to its autosave file (when enabled); a failure is notified, never raised."""
        if not self.autosave_enabled:
            return
        try:
            save_session(self.session, self.autosave_file)
        except OSError as e:
            notify(f"autosave failed: {e}")
