"""The plan: a program, its register assignment and spill slots, and the figures predicted of it (the types only;
the file format is :mod:`engine.planfile`, the figures are computed by :mod:`engine.predict`).

Invariant: a :class:`Plan` and its :class:`Figures` are immutable. A plan read from a file has passed
:func:`engine.planfile.load_plan`'s checks; one built by an allocator or an edit is checked by its maker.
Figures cross module boundaries as :class:`Figures`; they are a dict only in a file (a plan's ``predicted``
field, a session, a worker's request), made by :meth:`Figures.to_dict` and read back by
:meth:`Figures.from_dict`, and ``Figures.from_dict(f.to_dict()) == f`` for every ``f``.

Examples
--------
>>> f = Figures(registers=2, maxlive=3, peak_with_spill_code=2, peak_instruction=1, spilled_values=1,
...             spill_stores=1, spill_loads=1, local_bytes=4, moves=0, bank_conflicts=0,
...             bank_model="sm_80: two-banks-two-reads")
>>> list(f.to_dict())[:3], f.executed
(['registers', 'maxlive', 'peak_with_spill_code'], False)
>>> Figures.from_dict(f.to_dict()) == f
True
>>> Figures.from_dict({**f.to_dict(), "maxlive": True}, "p.json: field 'predicted'")
Traceback (most recent call last):
...
engine.base.errors.PlanError: p.json: field 'predicted': figure 'maxlive' must be an integer >= 0, got true
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from engine.base.errors import PlanError
from engine.base.fields import excerpt, is_int
from engine.ir.core import Program


@dataclass(frozen=True)
class Figures:
    """What the model predicts of one plan (:func:`engine.predict.predict`), no tool involved.

    Attributes
    ----------
    registers : registers per thread the assignment uses (highest index plus one)
    maxlive : MAXLIVE of the program before spill code (one meaning everywhere)
    peak_with_spill_code : the largest pressure of the plan's program, spill code included
    peak_instruction : where that peak is (an index into the plan's program)
    spilled_values : values with a spill slot
    spill_stores, spill_loads : spill instructions in the program (static counts)
    local_bytes : local memory the spill slots take per thread
    moves : register-to-register ``mov`` instructions whose two registers differ
    bank_conflicts : register-bank conflicts under the plan's architecture
    bank_model : that architecture and its bank model, e.g. ``"sm_80: two-banks-two-reads"``
    rematerialised_values, remat_instructions : values computed again at their reads instead of spilled
        (:func:`engine.ir.spill.remat_definitions`), and the instructions that compute them (static count);
        in a file only where not 0
    spill_stores_executed, spill_loads_executed : spill instructions run on the execution check's deepest
        input (:func:`engine.predict.execution_figures`); None where no run was asked for, or where the run
        could not finish, which ``executed_note`` then says
    """

    registers: int
    maxlive: int
    peak_with_spill_code: int
    peak_instruction: int
    spilled_values: int
    spill_stores: int
    spill_loads: int
    local_bytes: int
    moves: int
    bank_conflicts: int
    bank_model: str
    rematerialised_values: int = 0
    remat_instructions: int = 0
    spill_stores_executed: int | None = None
    spill_loads_executed: int | None = None
    executed_note: str | None = None

    @property
    def executed(self) -> bool:
        """Whether the executed-spill figures were asked for (counted, or their run's failure noted)."""
        return self.spill_stores_executed is not None or self.executed_note is not None

    def to_dict(self) -> dict:
        """The figures as a plan file holds them: the static ones, then the executed ones when asked for."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in _EXECUTED and not (f.name in _REMAT and not getattr(self, f.name))}
        if self.executed:
            out["spill_stores_executed"] = self.spill_stores_executed
            out["spill_loads_executed"] = self.spill_loads_executed
        if self.executed_note is not None:
            out["executed_note"] = self.executed_note
        return out

    @classmethod
    def from_dict(cls, data: dict, where: str = "<figures>") -> Figures:
        """Figures from a file's object, every key known and every value typed (one-line PlanError naming
        ``where`` and the figure)."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise PlanError(f"{where}: unknown figure {excerpt(unknown[0])}")
        missing = [k for k in known if k not in _EXECUTED and k not in _REMAT and k not in data]
        if missing:
            raise PlanError(f"{where}: missing figure {missing[0]!r} (empty 'predicted' to leave the figures out)")
        for key, value in data.items():
            _check_figure(key, value, where)
        present = {k for k in _EXECUTED if k in data}
        counted = present == set(_EXECUTED[:2]) and None not in (data[k] for k in present)
        failed = present == set(_EXECUTED) and data[_EXECUTED[0]] is None is data[_EXECUTED[1]]
        if present and not (counted or failed):
            raise PlanError(f"{where}: the executed spill figures must be two counts, or two nulls and "
                            f"'executed_note', got {excerpt([data.get(k) for k in _EXECUTED])}")
        return cls(**data)


_EXECUTED = ("spill_stores_executed", "spill_loads_executed", "executed_note")
_REMAT = ("rematerialised_values", "remat_instructions")  # optional: plan files written before them hold neither


def _check_figure(key: str, value, where: str) -> None:
    if key in ("bank_model", "executed_note"):
        if not (isinstance(value, str) and value.isprintable() and len(value) <= 1024):
            raise PlanError(f"{where}: figure {key!r} must be a printable string, got {excerpt(value)}")
    elif not (is_int(value) and value >= 0 or value is None and key in _EXECUTED):
        raise PlanError(f"{where}: figure {key!r} must be an integer >= 0, got {excerpt(value)}")


@dataclass(frozen=True)
class Plan:
    """A register plan for one program.

    Attributes
    ----------
    program : the program, spill code included
    assignment : value name -> register indices (every non-predicate value)
    spills : spilled value name -> local-memory slot
    budget : registers per thread the plan may use (maxrregcount)
    allocator : the allocator's name, or "hand" for edited plans
    workload, options : where the program came from (JSON-ready)
    predicted : the model's figures of this plan (:func:`engine.predict.predict`), None until computed
    """

    program: Program
    assignment: dict
    spills: dict
    budget: int
    allocator: str
    workload: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    predicted: Figures | None = None

    def with_(self, **changes) -> "Plan":
        """A copy with some fields changed."""
        return replace(self, **changes)


def registers_used(assignment: dict) -> int:
    """Highest register index in use plus one (0 for an empty assignment)."""
    return max((r for regs in assignment.values() for r in regs), default=-1) + 1
