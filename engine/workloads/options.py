"""Build options: how a workload's program is to be built, one typed value from the session, the window or the
command line to :meth:`engine.workloads.Workload.build`.

Invariant: a :class:`BuildOptions` is immutable and holds tuples, never lists; it is a dict only in a file (a
session's ``options``), made by :meth:`BuildOptions.to_dict` and read back, every field checked, by
:meth:`BuildOptions.from_dict`, and ``BuildOptions.from_dict(o.to_dict(), w) == o`` for every ``o`` a file can
hold. A plan keeps the options its program was built with (its ``options``, the plan file's JSON object);
:meth:`BuildOptions.of_plan` is the request that builds that program again.

Examples
--------
>>> o = BuildOptions(tile=[4, 4], strategies=["fp16-softmax"])
>>> o.tile, o.strategies, o.arch == BuildOptions().arch
((4, 4), ('fp16-softmax',), True)
>>> o.to_dict()["tile"], list(o.to_dict())
([4, 4], ['arch', 'budget', 'headroom', 'schedule', 'tile', 'strategies', 'bc'])
>>> BuildOptions.from_dict(o.to_dict(), "s.json: options") == o
True
>>> BuildOptions.from_dict({"budget": 0}, "s.json: options")
Traceback (most recent call last):
...
engine.base.errors.PlanError: s.json: options: field 'budget' must be an integer in 1..255, got 0
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from engine.base import fields as check
from engine.base.errors import RegtuneError
from engine.workloads.gemm import DEFAULT_SCHEDULE, FIT, HEADROOM, SCHEDULES
from engine.workloads.mha import DEFAULT_BC, STRATEGIES


def _default_arch() -> str:
    # imported here, not above: the workload registry stays cheap to import (regtune --help)
    from engine.model.arch import DEFAULT_ARCH

    return DEFAULT_ARCH


@dataclass(frozen=True)
class BuildOptions:
    """How to build a program and allocate its plans.

    Attributes
    ----------
    arch : the architecture (the default GEMM tile's register limit, the plans' bank model and occupancy)
    budget : registers per thread the plans may use (GEMM's ``tile="fit"`` fits the tile under it)
    headroom : the share of the register limit a default GEMM tile keeps free
    schedule : GEMM's loop schedule
    tile : GEMM's tile ``(TM, TN)``; None: the largest keeping ``headroom`` under the architecture's limit;
        ``"fit"``: the same under ``budget``
    strategies : MHA's strategies, by name
    bc : MHA's keys per K/V tile
    projection : MHA's Q/K/V projection phase instead of attention
    """

    arch: str = field(default_factory=_default_arch)
    budget: int = 255
    headroom: float = HEADROOM
    schedule: str = DEFAULT_SCHEDULE
    tile: tuple[int, int] | str | None = None
    strategies: tuple[str, ...] = ()
    bc: int = DEFAULT_BC
    projection: bool = False

    def __post_init__(self):
        if self.tile is not None and self.tile != FIT:
            object.__setattr__(self, "tile", tuple(self.tile))
        object.__setattr__(self, "strategies", tuple(self.strategies))

    def with_(self, **changes) -> BuildOptions:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """The options as a session file holds them (``projection`` only when set)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "projection"}
        out["tile"] = list(self.tile) if isinstance(self.tile, tuple) else self.tile
        out["strategies"] = list(self.strategies)
        if self.projection:
            out["projection"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict, where: str) -> BuildOptions:
        """Options from a file's object, each field typed and in range; one-line PlanError naming ``where``."""
        from engine.model.arch import ARCHS

        check.exact_keys(data, [f.name for f in fields(cls)], where)
        out = {}
        checks = {"arch": lambda: check.choice(data, "arch", where, ARCHS),
                  "budget": lambda: check.integer(data, "budget", where, 1, 255),
                  "schedule": lambda: check.choice(data, "schedule", where, SCHEDULES),
                  "bc": lambda: check.integer(data, "bc", where, 2, 2048),
                  "projection": lambda: check.boolean(data, "projection", where)}
        for key, read in checks.items():
            if key in data:
                out[key] = read()
        headroom = data.get("headroom", HEADROOM)
        if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or not 0 <= headroom < 1:
            raise RegtuneError(f"{where}: field 'headroom' must be a number in [0, 1), got {check.excerpt(headroom)}")
        out["headroom"] = float(headroom)
        tile = data.get("tile")
        if tile is not None and not (isinstance(tile, list) and len(tile) == 2
                                     and all(check.is_int(t) and 1 <= t <= 16 for t in tile)):
            raise RegtuneError(f"{where}: field 'tile' must be null or [TM, TN] in 1..16, got {check.excerpt(tile)}")
        out["tile"] = tile
        strategies = data.get("strategies", [])
        if not isinstance(strategies, list) or any(not isinstance(s, str) or s not in STRATEGIES for s in strategies):
            raise RegtuneError(f"{where}: field 'strategies' must list names from {', '.join(STRATEGIES)}")
        out["strategies"] = strategies
        return cls(**out)

    @classmethod
    def of_plan(cls, options: dict, budget: int = 255) -> BuildOptions:
        """The options that build a plan's program again, from the plan's own (checked) ``options``: its tile,
        schedule, strategies, keys per tile, projection and architecture where it names them."""
        names = ("arch", "schedule", "tile", "strategies", "bc", "projection")
        return cls(budget=budget, **{k: options[k] for k in names if k in options})
