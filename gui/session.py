"""The window's document: one session (workload, options, plans, selection, measurements), Qt-free.

The window changes a session only through undoable commands (gui/qt_commands.py),
each a one-line call into the methods here. Long work (building programs,
allocating, building kernels) is done by the plain functions below, which the
window runs in background workers.

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

from engine.allocators import allocate
from engine.errors import RegtuneError
from engine.jobs import NullProgress, Progress
from engine.plan import Plan, plan_from_dict, plan_to_dict, predict, write_text_atomic
from engine.workloads.gemm import Gemm, build_gemm
from engine.workloads.mha import Mha, build_mha

ALLOCATOR_ORDER = ("naive", "linear-scan", "chaitin-briggs", "dsatur")
SESSION_FORMAT = "regtune-session"
DEFAULT_WORKLOAD = {"kind": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "f32"}
DEFAULT_OPTIONS = {"arch": "sm_80", "budget": 255, "headroom": 0.25, "schedule": "k-outer", "tile": None,
                   "strategies": [], "bc": 16}


def build_workload(workload: dict, options: dict):
    """The program and its options for a workload (GEMM m,n,k or MHA heads,batch,head_dim,groups)."""
    budget = int(options.get("budget", 255))
    if workload["kind"] == "gemm":
        w = Gemm(workload["m"], workload["n"], workload["k"])
        tile = tuple(options["tile"]) if options.get("tile") else None
        program, built = build_gemm(w, tile, options.get("schedule", "k-outer"), budget,
                                    float(options.get("headroom", 0.25)))
        return program, w.as_dict(), built
    if workload["kind"] == "mha":
        w = Mha(workload["heads"], workload["batch"], workload["head_dim"], workload["groups"])
        program, built = build_mha(w, tuple(options.get("strategies") or ()), int(options.get("bc", 16)))
        return program, w.as_dict(), built
    raise RegtuneError(f"unknown workload kind {workload.get('kind')!r} (gemm or mha)")


def allocate_all(workload: dict, options: dict, progress: Progress | None = None) -> dict:
    """Build the program and run the four allocators: name -> Plan (with predicted figures)."""
    progress = progress or NullProgress()
    program, wl, built = build_workload(workload, options)
    budget = int(options.get("budget", 255))
    plans = {}
    for n, name in enumerate(ALLOCATOR_ORDER):
        progress.advance(n, len(ALLOCATOR_ORDER))
        if progress.cancelled():
            from engine.jobs import Cancelled

            raise Cancelled("allocation cancelled")
        plan = allocate(name, program, budget)
        plan = plan.with_(workload=wl, options={**built, "arch": options.get("arch", "sm_80")})
        plans[name] = plan.with_(predicted=predict(plan, execute=False))
    progress.advance(len(ALLOCATOR_ORDER), len(ALLOCATOR_ORDER))
    return plans


@dataclass
class Session:
    """What the window shows and edits."""

    workload: dict = field(default_factory=lambda: dict(DEFAULT_WORKLOAD))
    options: dict = field(default_factory=lambda: dict(DEFAULT_OPTIONS))
    plans: dict = field(default_factory=dict)
    current: str | None = None
    edits: list = field(default_factory=list)
    measurements: dict = field(default_factory=dict)

    @property
    def plan(self) -> Plan | None:
        return self.plans.get(self.current)

    def set_plan(self, name: str, plan: Plan) -> None:
        self.plans[name] = plan
        self.measurements.pop(name, None)

    def hand_name(self) -> str:
        n = 1
        while f"hand {n}" in self.plans:
            n += 1
        return f"hand {n}"

    def to_dict(self) -> dict:
        return {"format": SESSION_FORMAT, "version": 1, "workload": self.workload, "options": self.options,
                "current": self.current, "edits": list(self.edits),
                "plans": {name: plan_to_dict(plan) for name, plan in self.plans.items()}}

    @classmethod
    def from_dict(cls, data: dict, source: str = "<session>") -> "Session":
        if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
            raise RegtuneError(f"{source}: not a RegTune session file")
        plans = {name: plan_from_dict(d, f"{source}: plan {name!r}", check=False)   # broken hand edits included
                 for name, d in data.get("plans", {}).items()}
        return cls(dict(data["workload"]), dict(data["options"]), plans, data.get("current"),
                   list(data.get("edits", [])))


def autosave_path() -> Path:
    """Where the session is autosaved ($REGTUNE_SESSION_DIR, else the user's data folder)."""
    root = os.environ.get("REGTUNE_SESSION_DIR")
    if root:
        base = Path(root)
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "regtune"
    base.mkdir(parents=True, exist_ok=True)
    return base / "autosave.json"


def save_session(session: Session, path: Path | None = None) -> Path:
    return write_text_atomic(path or autosave_path(), json.dumps(session.to_dict()))


def load_session(path: Path | None = None) -> Session:
    path = path or autosave_path()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise RegtuneError(f"{path}: cannot read the session: {e}") from None
    return Session.from_dict(data, str(path))


def clear_autosave(path: Path | None = None) -> None:
    p = path or autosave_path()
    if p.exists():
        p.unlink()
