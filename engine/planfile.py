"""The plan file: DESIGN.md's JSON format, read with every field checked and written atomically.

Invariant: :func:`load_plan` returns only plans whose file is well formed and whose assignment passes
:func:`engine.check.verify.static_conflicts`, and otherwise raises a one-line :class:`PlanError` naming the
file, the field or value, the instruction and the register at fault. Writes are atomic
(:func:`engine.base.files.write_text_atomic`).

Examples
--------
>>> from engine.ir.parser import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
>>> plan = Plan(p, {"x": (0,)}, {}, 8, "hand")
>>> plan_from_dict(plan_to_dict(plan)) == plan
True
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.alloc import all_allocators
from engine.analysis.bounds import check_program
from engine.base.errors import PlanError, RegtuneError
from engine.base.fields import exact_keys, excerpt, is_int, load_json
from engine.base.files import read_text, write_text_atomic
from engine.base.limits import MAX_REGISTERS, MAX_SPILL_SLOT
from engine.check.verify import first_conflicts
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.plan import Figures, Plan
from engine.workloads import check_workload

FORMAT = "regtune-plan"
VERSION = 1


def plan_to_dict(plan: Plan) -> dict:
    """The JSON object of DESIGN.md's plan format."""
    order = {name: i for i, name in enumerate(plan.program.values)}
    return {
        "format": FORMAT, "version": VERSION,
        "workload": plan.workload, "options": plan.options,
        "allocator": plan.allocator, "budget": plan.budget,
        "program": print_program(plan.program),
        "assignment": {n: list(plan.assignment[n]) for n in sorted(plan.assignment, key=lambda n: (order.get(n, len(order)), n))},
        "spills": {n: plan.spills[n] for n in sorted(plan.spills, key=lambda n: (order.get(n, len(order)), n))},
        "predicted": plan.predicted.to_dict() if plan.predicted is not None else {},
    }


def write_plan(plan: Plan, path) -> Path:
    """Write ``plan`` as JSON, atomically."""
    return write_text_atomic(path, json.dumps(plan_to_dict(plan), indent=1) + "\n")


#: top-level fields of a plan file
PLAN_FIELDS = ("format", "version", "workload", "options", "allocator", "budget", "program", "assignment", "spills",
               "predicted")
#: a field that plan files before issue 20 carry, always empty (RegTune never wrote measured figures into a plan)
OLD_EMPTY_FIELDS = ("measured",)


def _field(data: dict, key: str, kind, source: str, default=None):
    if key not in data:
        if default is not None:
            return default
        raise PlanError(f"{source}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise PlanError(f"{source}: field {key!r} must be {_KIND_NAMES[kind]}, got {excerpt(value)}")
    return value


_KIND_NAMES = {int: "an integer", str: "a string", dict: "an object", list: "a list"}


def _registers(name: str, regs, source: str) -> tuple[int, ...]:
    """Register numbers of one value: a list of one or two ints in 0..254 (the budget is checked with the
    conflicts, where the message can say which registers the budget allows)."""
    if not (isinstance(regs, list) and 1 <= len(regs) <= 2
            and all(is_int(r) and 0 <= r < MAX_REGISTERS for r in regs)):
        raise PlanError(f"{source}: assignment of %{excerpt(name)[1:-1]} must be a list of one or two register "
                        f"numbers in 0..{MAX_REGISTERS - 1}, got {excerpt(regs)}")
    return tuple(int(r) for r in regs)


def _slot(name: str, slot, source: str) -> int:
    if not is_int(slot) or not 0 <= slot <= MAX_SPILL_SLOT:
        raise PlanError(f"{source}: spill slot of %{excerpt(name)[1:-1]} must be an integer in 0..{MAX_SPILL_SLOT}, "
                        f"got {excerpt(slot)}")
    return int(slot)


def _old_empty(data: dict, source: str) -> None:
    """Files written before issue 20 carry ``"measured": {}``: read, and dropped; anything else in it is refused
    (measurements live in the session and the build report, never in a plan file)."""
    for key in OLD_EMPTY_FIELDS:
        if key in data and data[key] != {}:
            raise PlanError(f"{source}: field {key!r} must be empty ({{}}) where present: a plan file holds no "
                            f"measured figures (the build report does), got {excerpt(data[key])}")


def _allocator(data: dict, source: str) -> str:
    known = (*all_allocators(), "hand")
    value = data.get("allocator")
    if not isinstance(value, str) or value not in known:
        raise PlanError(f"{source}: field 'allocator' must be one of {', '.join(known)}, got {excerpt(value)}")
    return value


def plan_from_dict(data, source: str = "<plan>", check: bool = True) -> Plan:
    """Check and build a plan from its JSON object (see module invariant).

    Every field is checked to its type and range before anything else reads
    it: the budget in 1..255, registers inside the budget, spill slots in
    0..MAX_SPILL_SLOT, the allocator a known name, the workload and options
    inside their config space (:func:`engine.workloads.check_workload`), the
    program within :mod:`engine.base.limits` and the rules of :mod:`engine.ir.rules`
    (the parser's: spill code at a slot in 0..MAX_SPILL_SLOT, immediates a kernel
    can hold, each known opcode in its shape). ``check=False`` skips only the
    assignment check (conflicts), for a session that holds a hand-edited
    plan the window shows as broken."""
    if not isinstance(data, dict):
        raise PlanError(f"{source}: a plan must be a JSON object, got {excerpt(data)}")
    if data.get("format") != FORMAT:
        raise PlanError(f"{source}: field 'format' must be {FORMAT!r}, got {excerpt(data.get('format'))}")
    if not (is_int(data.get("version")) and data["version"] == VERSION):    # not 1.0, not true
        raise PlanError(f"{source}: unsupported plan version {excerpt(data.get('version'))} (this RegTune reads {VERSION})")
    exact_keys(data, PLAN_FIELDS + OLD_EMPTY_FIELDS, source, required=("budget", "program", "assignment", "allocator"))
    _old_empty(data, source)
    budget = _field(data, "budget", int, source)
    if not 1 <= budget <= MAX_REGISTERS:
        raise PlanError(f"{source}: field 'budget' must be an integer in 1..{MAX_REGISTERS} "
                        f"(registers per thread), got {budget}")
    allocator = _allocator(data, source)
    workload, options = check_workload(_field(data, "workload", dict, source, {}),
                                       _field(data, "options", dict, source, {}), source)
    assignment = {n: _registers(n, r, source) for n, r in _field(data, "assignment", dict, source).items()}
    spills = {n: _slot(n, s, source) for n, s in _field(data, "spills", dict, source, {}).items()}
    try:
        program = parse(_field(data, "program", str, source), f"{source}: field 'program'")
    except PlanError:
        raise
    except RegtuneError as exc:
        raise PlanError(str(exc)) from None
    check_program(program, source)
    predicted = _field(data, "predicted", dict, source, {})
    figures = Figures.from_dict(predicted, f"{source}: field 'predicted'") if predicted else None
    plan = Plan(program, assignment, spills, budget, allocator, workload, options, figures)
    if check:
        check_plan(plan, source)
    return plan


def check_plan(plan: Plan, source: str = "<plan>") -> None:
    """Raise :class:`PlanError` with the first violation, if any."""
    conflicts, total = first_conflicts(plan.program, plan.assignment, plan.spills, plan.budget, 1)
    if conflicts:
        more = f" (and {total - 1} more)" if total > 1 else ""
        raise PlanError(f"{source}: {conflicts[0].message}{more}")


def load_plan(path) -> Plan:
    """Read and check a plan file (see module invariant)."""
    return plan_from_dict(load_json(read_text(path), str(path)), str(path))
