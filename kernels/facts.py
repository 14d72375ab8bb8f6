"""What a measurement derives from its plan, each derived once: analyses, the program without spill code, loop
trips, executed paths, ILP figures, traffic, the GPU grid.

A measurement (:func:`kernels.pipeline.measure`) and its report
(:mod:`kernels.report`), the simulator check (:mod:`kernels.run`) and the
kernel source (:mod:`kernels.codegen`) read these from one
:class:`PlanFacts` instead of asking the engine again. A caller that
already holds some of them (an allocation carries its analysis, spill code,
original program and its analysis; a plan file's admission its program
without spill code) hands them in (:meth:`PlanFacts.of_allocation`), and
nothing of it is computed at all.

Invariant: a :class:`PlanFacts` belongs to exactly one plan; every fact is
the engine's own function of that plan (the same values the engine would
give if asked again), computed on first use and kept; a fact given by the
caller is used as given. Nothing here is stored on the plan or its program
(STYLE 22): the caller owns the record.

Examples
--------
>>> from engine.ir.parser import parse
>>> from engine.plan import Plan
>>> p = parse(".kernel k\\n.block l\\n  %i:i32 = mov 0\\n  %p:pred = setp.lt %i, 4\\n  cbr %p, l, e\\n"
...           ".block e\\n  exit\\n")
>>> facts = PlanFacts(Plan(p, {"i": (0,)}, {}, 8, "hand"))
>>> facts.trips, facts.original is p, facts.maxlive
({'l': 4}, True, 1)
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property

from engine.analysis.liveness import Analysis, analyze
from engine.ir.cfg import loop_trips
from engine.ir.core import Program
from engine.ir.spill import SpillCode, has_spill_code, remove_spill_code, spill_code_of
from engine.model.arch import DEFAULT_ARCH
from engine.plan import Plan


class PlanFacts:
    """The derived data of one plan (see the module docstring); each attribute is computed once, on first use.

    Parameters
    ----------
    plan : the plan
    analysis : the liveness analysis of ``plan.program`` (spill code included), when the caller has it
    spill_code : where the spill code of ``plan.program`` is
    original : ``plan.program`` without its spill code
    original_analysis : the analysis of ``original``
    trips : loop label -> trip count of ``plan.program`` (:func:`engine.ir.cfg.loop_trips`)
    """

    def __init__(self, plan: Plan, analysis: Analysis | None = None, spill_code: SpillCode | None = None,
                 original: Program | None = None, original_analysis: Analysis | None = None,
                 trips: dict | None = None):
        self.plan = plan
        given = {"analysis": analysis, "spill_code": spill_code, "original": original,
                 "original_analysis": original_analysis, "trips": trips}
        for name, value in given.items():
            if value is not None:
                self.__dict__[name] = value          # the cached_property's slot: never computed
        self._ilp: dict = {}

    @classmethod
    def of_allocation(cls, allocation, plan: Plan) -> PlanFacts:
        """The facts of ``plan``, made from ``allocation`` (an :class:`engine.alloc.common.Allocation`), with
        the analyses, spill code and original program the allocator computed on the way."""
        return cls(plan, allocation.analysis, allocation.spill_code, allocation.original,
                   allocation.original_analysis)

    @cached_property
    def analysis(self) -> Analysis:
        return analyze(self.plan.program)

    @cached_property
    def spill_code(self) -> SpillCode:
        return spill_code_of(self.plan.program, self.plan.spills)

    @cached_property
    def original(self) -> Program:
        """The program without the plan's spill code (the program itself when the plan spills nothing)."""
        if not has_spill_code(self.plan.program, self.plan.spills):
            return self.plan.program
        return remove_spill_code(self.plan.program, self.plan.spills)

    @cached_property
    def original_analysis(self) -> Analysis:
        return self.analysis if self.original is self.plan.program else analyze(self.original)

    @property
    def maxlive(self) -> int:
        """MAXLIVE of the program before spill code (:func:`engine.predict.program_maxlive`)."""
        return self.original_analysis.maxlive

    @cached_property
    def trips(self) -> dict:
        return loop_trips(self.plan.program)

    @cached_property
    def plain(self) -> Plan:
        """The plan with the program without its spill code and no spills (:func:`kernels.codegen.without_spill_code`)."""
        if self.original is self.plan.program:
            return self.plan
        return self.plan.with_(program=self.original, spills={})

    @cached_property
    def path(self):
        """The executed path of ``plan.program`` (:func:`engine.model.ilp.executed_path`)."""
        from engine.model.ilp import executed_path

        return executed_path(self.plan.program, self.trips)

    @cached_property
    def original_path(self):
        """The executed path of the program without spill code."""
        from engine.model.ilp import executed_path

        return self.path if self.original is self.plan.program else executed_path(self.original, self.trips)

    def ilp(self, arch: str | None = None):
        """:func:`engine.model.ilp.plan_ilp` on ``arch`` (default: the plan's own arch), once per arch; on disk
        in the build cache under the plan's digest, the arch and :func:`kernels.build.code_digest`."""
        from dataclasses import asdict

        from engine.model.ilp import IlpFigures, plan_ilp
        from kernels.build import StageCache, code_digest

        arch = arch or (self.plan.options or {}).get("arch", DEFAULT_ARCH)
        if arch not in self._ilp:
            cache = StageCache.open("ILP model")
            key = (self.digest, arch, code_digest())
            stored = cache.read("ilp", _valid_ilp, *key)
            if stored is not None:
                data = json.loads(stored)
                self._ilp[arch] = IlpFigures(**{**data, "critical": tuple(data["critical"])})
            else:
                self._ilp[arch] = plan_ilp(self.plan, arch, self.original, self.path, self.original_path)
                cache.write(json.dumps(asdict(self._ilp[arch])), "ilp", *key)
        return self._ilp[arch]

    @cached_property
    def traffic(self):
        """The bytes one thread moves along its executed path (:func:`engine.model.timemodel.thread_traffic`)."""
        from engine.model.timemodel import thread_traffic

        return thread_traffic(self.plan.program, self.path)

    @cached_property
    def grid(self):
        """Blocks and threads per block of the run a GPU times (:func:`kernels.harness.gpu_grid`)."""
        from kernels.harness import gpu_grid

        return gpu_grid(self.plan, self.trips)

    @cached_property
    def digest(self) -> str:
        """A digest of everything of the plan a kernel and its measurement depend on (program, assignment,
        spills, budget, allocator, workload, options; not its stored figures): part of a cache key."""
        p = self.plan
        data = json.dumps([str(p.program), {k: list(v) for k, v in sorted(p.assignment.items())},
                           sorted(p.spills.items()), p.budget, p.allocator, p.workload or {}, p.options or {}],
                          sort_keys=True, default=str)
        return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _valid_ilp(text: str) -> bool:
    """A stored :class:`engine.model.ilp.IlpFigures` of the shape this version writes."""
    from dataclasses import fields

    from engine.model.ilp import IlpFigures

    data = json.loads(text)
    return isinstance(data, dict) and set(data) == {f.name for f in fields(IlpFigures)} and \
        isinstance(data["critical"], list) and isinstance(data["cycles"], int)


def facts_of(plan: Plan, facts: PlanFacts | None) -> PlanFacts:
    """``facts`` when the caller has them (they must be ``plan``'s), else new ones for ``plan``."""
    if facts is None:
        return PlanFacts(plan)
    if facts.plan is not plan and facts.plan != plan:
        raise ValueError("the facts handed in are of another plan")
    return facts
