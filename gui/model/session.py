"""The session (workload, options, plans, measurements, the list of edits), its file, and the plain functions that build its plans; Qt-free.

The window changes a session only through the document (gui/model/document.py),
whose methods each undoable command calls. Long work (building programs,
allocating) is done by the plain functions below, which the window runs in
background workers.

Invariant: ``plans`` keeps insertion order; the four allocators' plans are
named after their allocator, hand copies "hand 1", "hand 2", ...; every plan
of a session has the session's program or a schedule edit of it. A session
file (autosave) is written atomically and holds everything needed to
restore it: workload, options, every plan in its edited state, which plan
is current, and the list of edits made.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.alloc import allocate
from engine.base import fields
from engine.base.errors import RegtuneError
from engine.base.files import read_text, write_text_atomic
from engine.base.jobs import NullProgress, Progress
from engine.plan import Plan
from engine.planfile import plan_from_dict, plan_to_dict
from engine.predict import predicted_plan
from engine.workloads import WORKLOADS, BuildOptions, check_workload
from engine.workloads import build_workload as _build

if TYPE_CHECKING:
    from kernels.measurement import Measurement

try:
    import fcntl
except ImportError:         # Windows: msvcrt's byte-range lock, also dropped when the process ends
    fcntl = None
    import msvcrt

#: the allocators whose plans a session makes; ``linear-scan-hull`` (the textbook scan, kept to compare with) is
#: left to the command line (``regtune allocate --allocator linear-scan-hull``, ``compare --allocators all``)
ALLOCATOR_ORDER = ("naive", "linear-scan", "chaitin-briggs", "dsatur")
SESSION_FORMAT = "regtune-session"
SESSION_VERSION = 1
#: the first registered workload's example (GEMM 8x8x8)
DEFAULT_WORKLOAD = next(w.to_dict(w.example) for w in WORKLOADS.values() if w.example is not None)
#: the session's options when none are given (also what the window's Reset shows)
DEFAULT_OPTIONS = BuildOptions()


def session_options(options, source: str) -> BuildOptions:
    """A session file's ``options`` (the fields of :class:`engine.workloads.BuildOptions`), each typed and in range."""
    where = f"{source}: options"
    if not isinstance(options, dict):
        raise RegtuneError(f"{where}: must be an object")
    return BuildOptions.from_dict(options, where)


def build_workload(workload: dict, options: BuildOptions):
    """The program, the checked workload and the build options of a workload dict and the session's options
    (the workload's kind is checked by name first, see :func:`engine.workloads.build_workload`)."""
    return _build(workload, options)


def allocate_all(workload: dict, options: BuildOptions, progress: Progress | None = None) -> dict:
    """Build the program and run the four allocators: name -> Plan (with predicted figures)."""
    progress = progress or NullProgress()
    program, wl, built = build_workload(workload, options)
    budget = options.budget
    plans = {}
    for n, name in enumerate(ALLOCATOR_ORDER):
        progress.advance(n, len(ALLOCATOR_ORDER))
        if progress.cancelled():
            from engine.base.jobs import Cancelled

            raise Cancelled("allocation cancelled")
        plans[name] = predicted_plan(allocate(name, program, budget),
                              workload=wl, options={**built, "arch": options.arch})
    progress.advance(len(ALLOCATOR_ORDER), len(ALLOCATOR_ORDER))
    return plans


def best_plan(plans: dict, conflicts_of) -> tuple[str, str] | None:
    """The plan to show first and why: of the verified plans (no conflict: ``conflicts_of(plan)`` is empty),
    the one with the fewest registers, then the fewest spilled values, then the first; None when no plan is
    verified.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> plans = {"naive": P(predicted=P(registers=50, spilled_values=0)),
    ...          "dsatur": P(predicted=P(registers=13, spilled_values=1)),
    ...          "linear-scan": P(predicted=P(registers=13, spilled_values=0)),
    ...          "hand 1": P(predicted=P(registers=9, spilled_values=0))}
    >>> best_plan(plans, lambda p: ["x"] if p is plans["hand 1"] else [])
    ('linear-scan', 'showing linear-scan: of 3 verified plans, the fewest registers (13), then spills (0)')
    """
    def figures(plan):
        p = plan.predicted
        return (p.registers, p.spilled_values) if p is not None else (1 << 30, 1 << 30)

    verified = [name for name, plan in plans.items() if not conflicts_of(plan)]
    if not verified:
        return None
    name = min(verified, key=lambda n: figures(plans[n]))
    registers, spills = figures(plans[name])
    return name, (f"showing {name}: of {len(verified)} verified plan{'s' * (len(verified) != 1)}, "
                  f"the fewest registers ({registers}), then spills ({spills})")


@dataclass
class Session:
    """What the window shows and edits."""

    workload: dict = field(default_factory=lambda: dict(DEFAULT_WORKLOAD))
    options: BuildOptions = field(default_factory=BuildOptions)
    plans: dict = field(default_factory=dict)
    current: str | None = None
    edits: list = field(default_factory=list)
    #: plan name -> its kernels.measurement.Measurement; a plan not built yet (or edited since) has none
    measurements: dict = field(default_factory=dict)

    @property
    def plan(self) -> Plan | None:
        return self.plans.get(self.current)

    def measurement(self, name: str | None) -> "Measurement | None":
        """The measurement of plan ``name``; None when it was not built since it last changed."""
        return self.measurements.get(name)

    def set_plan(self, name: str, plan: Plan) -> None:
        self.plans[name] = plan
        self.measurements.pop(name, None)

    def hand_name(self) -> str:
        n = 1
        while f"hand {n}" in self.plans:
            n += 1
        return f"hand {n}"

    def to_dict(self) -> dict:
        return {"format": SESSION_FORMAT, "version": SESSION_VERSION, "workload": self.workload, "options": self.options.to_dict(),
                "current": self.current, "edits": list(self.edits),
                "plans": {name: plan_to_dict(plan) for name, plan in self.plans.items()}}

    @classmethod
    def from_dict(cls, data: dict, source: str = "<session>") -> "Session":
        """A session from its file's JSON object, every field checked like a plan file's (one-line errors)."""
        if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
            raise RegtuneError(f"{source}: not a RegTune session file")
        fields.exact_keys(data, ("format", "version", "workload", "options", "current", "edits", "plans"), source,
                          required=("workload", "options"))
        if "version" in data and not (fields.is_int(data["version"]) and data["version"] == SESSION_VERSION):
            raise RegtuneError(f"{source}: unsupported session version {fields.excerpt(data['version'])} "
                               f"(this RegTune reads {SESSION_VERSION})")
        plans, current, edits = data.get("plans", {}), data.get("current"), data.get("edits", [])
        if not isinstance(plans, dict) or not all(isinstance(n, str) and n.isprintable() and len(n) <= 64
                                                  for n in plans):
            raise RegtuneError(f"{source}: field 'plans' must map printable names to plans")
        if current is not None and current not in plans:
            raise RegtuneError(f"{source}: field 'current' names no plan of the session: {fields.excerpt(current)}")
        if not isinstance(edits, list) or not all(isinstance(e, str) and len(e) <= 256 for e in edits):
            raise RegtuneError(f"{source}: field 'edits' must be a list of short strings")
        workload = dict(data["workload"]) if isinstance(data["workload"], dict) else None
        if workload is None:
            raise RegtuneError(f"{source}: field 'workload' must be an object")
        workload = check_workload(workload, {}, source)[0]
        plans = {name: plan_from_dict(d, f"{source}: plan {name!r}", check=False)   # broken hand edits included
                 for name, d in plans.items()}
        return cls(workload, session_options(data["options"], source), plans, current, list(edits))


def autosave_path(slot: int = 0, folder: Path | None = None) -> Path:
    """Where autosave slot ``slot`` is written (in ``folder``, else $REGTUNE_SESSION_DIR, else the user's data
    folder): one slot per open window (:class:`AutosaveSlot`), the first ``autosave.json``, then
    ``autosave-1.json``, ..."""
    root = folder or os.environ.get("REGTUNE_SESSION_DIR")
    if root:
        base = Path(root)
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "regtune"
    base.mkdir(parents=True, exist_ok=True)
    return base / ("autosave.json" if slot == 0 else f"autosave-{slot}.json")


def _try_lock(fd: int) -> bool:
    """Lock the open file ``fd`` for this process without waiting (the system drops it when the process ends,
    a crash included); False when another open window holds it."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


class AutosaveSlot:
    """The autosave file of one open window, held through a lock on ``<file>.lock`` for as long as the window
    lives: a second window takes the next free slot, and a slot whose lock is free but whose file exists is a
    session that did not close cleanly (its window crashed), offered for restoring.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> first, second = AutosaveSlot.claim(folder), AutosaveSlot.claim(folder)
    >>> first.path.name, second.path.name
    ('autosave.json', 'autosave-1.json')
    >>> first.release(); AutosaveSlot.claim(folder).path.name
    'autosave.json'
    """

    def __init__(self, slot: int, path: Path, fd: int):
        self.slot, self.path, self._fd = slot, path, fd

    @classmethod
    def claim(cls, folder: Path | None = None, limit: int = 64) -> AutosaveSlot:
        """The first slot no open window holds, locked for this one (``folder``: see :func:`autosave_path`)."""
        for slot in range(limit):
            path = autosave_path(slot, folder)
            fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            if _try_lock(fd):
                return cls(slot, path, fd)
            os.close(fd)
        raise RegtuneError(f"{autosave_path(0, folder).parent}: {limit} RegTune windows hold an autosave already")

    @property
    def orphaned(self) -> bool:
        """A session is saved in this slot: one that did not close cleanly (no live window holds it)."""
        return self.path.exists()

    def release(self) -> None:
        """Let another window take this slot (the file stays: clear it first on a clean close)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        self.release()


def save_session(session: Session, path: Path | None = None) -> Path:
    return write_text_atomic(path or autosave_path(), json.dumps(session.to_dict()))


def load_session(path: Path | None = None) -> Session:
    path = path or autosave_path()
    return Session.from_dict(fields.load_json(read_text(path, RegtuneError), str(path)), str(path))


def clear_autosave(path: Path | None = None) -> None:
    p = path or autosave_path()
    if p.exists():
        p.unlink()
