"""Typed results of the kernels pipeline: what was planned, what the tools measured, what could not be had.

Invariant: these frozen dataclasses are what crosses module boundaries
(the CLI, the window, the session); dicts exist only at process and file
boundaries, made by ``to_dict`` and read back by ``from_dict``, and
``X.from_dict(x.to_dict()) == x`` for every result ``x``. A figure that
could not be had is an :class:`Unavailable` carrying the reason ("no CUDA
device"), never a number; a plan not built yet has no :class:`Measurement`
at all (``None``), never a half-filled one.

Examples
--------
>>> gpu = check_from_dict({"error": "no CUDA device"})
>>> gpu, gpu.to_dict()
(Unavailable(reason='no CUDA device'), {'error': 'no CUDA device'})
>>> row = SweepRow(32, 32, 8, 8, 16, 32, 0.5)
>>> SweepRow.from_dict(row.to_dict()) == row
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields

from engine.model.timemodel import ModelTime
from kernels.sass_lines import SassIrMap


def _plain(value):
    """A field's value as JSON data: records by their ``to_dict``, tuples as lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Record:
    """to_dict/from_dict by field name; ``_NESTED`` names the fields read by another record's from_dict."""

    _NESTED: dict = {}
    _TUPLES: tuple = ()

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if not (f.default is None and getattr(self, f.name) is None)}

    @classmethod
    def from_dict(cls, data: dict):
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        for name, read in cls._NESTED.items():
            if name in values:
                values[name] = read(values[name])
        for name in cls._TUPLES:
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)


@dataclass(frozen=True)
class Unavailable:
    """A figure that could not be had, and why (``"no CUDA device"``, ``"not run (--no-simulate)"``)."""

    reason: str

    def to_dict(self) -> dict:
        return {"error": self.reason}

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class OccupancyFigures(_Record):
    """Active warps per SM at some register count, and what limits them."""

    active_warps: int
    occupancy: float
    limited_by: tuple = ()
    _TUPLES = ("limited_by",)


@dataclass(frozen=True)
class Planned(_Record):
    """The plan's own figures, no tool involved (:func:`kernels.report.planned`)."""

    registers: int
    maxlive: int
    spills: int
    spill_stores: int
    spill_loads: int
    bank_conflicts: int
    threads_per_block: int
    arch: str
    occupancy: OccupancyFigures
    next_step: str

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["occupancy"] = {"arch": out.pop("arch"), **out["occupancy"]}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Planned:
        occ = dict(data["occupancy"])
        return super().from_dict({**data, "arch": occ.pop("arch"), "occupancy": OccupancyFigures.from_dict(occ)})


@dataclass(frozen=True)
class PtxasFigures(_Record):
    """What ``ptxas -v`` reported for one architecture at one cap, with the occupancy its register count gives.

    ``cap``: "plan" (``-maxrregcount`` = the plan's register count) or
    "compiler" (no ``-maxrregcount``, ptxas's own choice); ``flags``: the
    flags ptxas ran with, exactly (``max_registers`` is None without a cap).
    """

    cap: str
    flags: tuple
    registers: int
    allocated_registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    shared_bytes: int
    constant_bytes: dict
    max_registers: int | None
    compile_ms: float
    warnings: tuple
    occupancy: OccupancyFigures
    _NESTED = {"occupancy": OccupancyFigures.from_dict}
    _TUPLES = ("warnings", "flags")

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def cap_text(self) -> str:
        """The cap in words, e.g. ``plan cap -maxrregcount=88`` or ``no -maxrregcount (ptxas's own choice)``."""
        if self.max_registers is not None:
            return f"{self.cap} cap -maxrregcount={self.max_registers}"
        if self.cap == "plan":
            return "plan cap, no -maxrregcount (the plan's count is the arch's maximum)"
        return "no -maxrregcount (ptxas's own choice)"


@dataclass(frozen=True)
class ScheduleFigures(_Record):
    """ptxas's schedule read from the SASS control bits: issue cycles per warp along the executed path
    (a model, :func:`kernels.control.issue_cycles`); ``source`` says what is decoded and what is priced."""

    issue_cycles: int
    stall_cycles: int
    barrier_wait_cycles: int
    instructions_issued: int
    loop: str
    source: str


def schedule_from_dict(data: dict) -> ScheduleFigures | Unavailable:
    """Issue cycles from a report, or why there are none."""
    return Unavailable(data["error"]) if "error" in data else ScheduleFigures.from_dict(data)


@dataclass(frozen=True)
class SassFigures(_Record):
    """The SASS live ranges of one architecture, the sentences explaining the gaps to the plan, and the issue
    cycles its control bits give (None in a report written before they were measured)."""

    maxlive: int
    peak_offset: int
    instructions: int
    highest_register: int
    bank_conflicts: int
    mix: dict
    explanation: tuple
    schedule: ScheduleFigures | Unavailable | None = None
    #: each SASS instruction's IR instruction (:mod:`kernels.sass_lines`; None in a report written before)
    ir_map: SassIrMap | None = None
    _TUPLES = ("explanation",)
    _NESTED = {"schedule": schedule_from_dict, "ir_map": SassIrMap.from_dict}


@dataclass(frozen=True)
class PlanPtxFigures(_Record):
    """ptxas and the SASS on a plan's own PTX (:mod:`kernels.plan_ptx`, "plan PTX"), per architecture.

    ``ptxas`` is ptxas at the plan cap, ``ptxas_compiler`` with no
    ``-maxrregcount``, each with its flags, as in a :class:`Measurement`;
    ``sass`` the live ranges of the plan-cap cubin (no explanation, schedule
    or IR map: those are the Numba kernel's); ``spills`` how its spill code
    reached local memory ("volatile" or "plain").
    """

    entry: str
    spills: str
    ptxas: dict
    ptxas_compiler: dict
    sass: dict
    timings_ms: dict
    cached: bool
    _NESTED = {"ptxas": lambda d: {a: PtxasFigures.from_dict(v) for a, v in d.items()},
               "ptxas_compiler": lambda d: {a: PtxasFigures.from_dict(v) for a, v in d.items()},
               "sass": lambda d: {a: SassFigures.from_dict(v) for a, v in d.items()}}


def plan_ptx_from_dict(data: dict) -> PlanPtxFigures | Unavailable:
    """A report's plan-PTX figures, or why there are none (a plan the emitter refuses)."""
    return Unavailable(data["error"]) if "error" in data else PlanPtxFigures.from_dict(data)


@dataclass(frozen=True)
class KernelFigures(_Record):
    """The generated kernel: whose spills it carries, and what of them reached the PTX."""

    spills: str
    planned_spill_stores: int
    planned_spill_loads: int
    ptx_st_local: int
    ptx_ld_local: int
    ptx_global_loads: int
    entry: str


@dataclass(frozen=True)
class SimulatorCheck(_Record):
    """A run in numba's CUDA simulator, and what it was compared with.

    ``reference``: the numpy check in words (None: the workload has no numpy
    reference, a program file); ``spill_code``: the plan's kernel against the
    same program without the plan's spill code on the same inputs, in words
    (or why nothing was compared); ``scope``: what the runs covered (the
    grid chosen for coverage: which blocks and threads ran, and why they
    take every branch both ways; MHA's loops cut to a few trips).
    ``max_error`` is the numpy check's, else the largest difference of the
    spill-code comparison; ``ok`` is true only if every comparison made agreed.

    Examples
    --------
    >>> print(SimulatorCheck(True, 0.0, 0.0, 3, 1.0, spill_code="plan's spill code vs compiler spills: equal"))
    ok: plan's spill code vs compiler spills: equal
    >>> print(SimulatorCheck(True, 1e-7, 1e-5, 2, 1.0))
    ok (max err 1e-07)
    """

    ok: bool
    max_error: float
    tolerance: float
    runs: int
    seconds: float
    trips: dict | None = None
    scope: str | None = None
    reference: str | None = None
    spill_code: str | None = None

    @property
    def compared(self) -> tuple[str, ...]:
        """What the check compared, one line each (numpy, then the spill code)."""
        return tuple(line for line in (self.reference, self.spill_code) if line)

    def __str__(self) -> str:
        if not self.compared:          # a report written before the checks said what they compared
            return f"{'ok' if self.ok else 'MISMATCH'} (max err {self.max_error:.2g})"
        if self.reference is None and self.spill_code.endswith("nothing to compare with compiler spills"):
            return f"ran, nothing compared: no numpy reference (a program file) and {self.spill_code}"
        covered = f"; covered: {self.scope}" if self.scope else ""
        return f"{'ok' if self.ok else 'MISMATCH'}: " + "; ".join(self.compared) + covered


@dataclass(frozen=True)
class GpuRun(_Record):
    """A launch on a CUDA device: checked against numpy, timed with CUDA events, registers from the driver."""

    ok: bool
    max_error: float
    tolerance: float
    device: str
    median_ms: float
    repeats: int
    batch: int
    registers: int
    local_bytes: int
    reference_ms: dict | None = None
    #: the ``max_registers`` the kernel was jitted with (the plan cap), None: no cap
    max_registers: int | None = None
    #: a plan-PTX launch only (:func:`kernels.run.run_plan_ptx_on_gpu`): ptxas's own register count for the
    #: cubin the driver loaded, and the architecture it was assembled for
    ptxas_registers: int | None = None
    arch: str | None = None

    def __str__(self) -> str:
        return f"{'ok' if self.ok else 'MISMATCH'} (max err {self.max_error:.2g})"


def check_from_dict(data: dict) -> SimulatorCheck | Unavailable:
    """A simulator result from its worker's reply: the check, or why there is none."""
    return Unavailable(data["error"]) if "error" in data else SimulatorCheck.from_dict(data)


def gpu_from_dict(data: dict) -> GpuRun | Unavailable:
    """A GPU result from its worker's reply: the run, or why there is none."""
    return Unavailable(data["error"]) if "error" in data else GpuRun.from_dict(data)


@dataclass(frozen=True)
class ModelTimeFigures(_Record, ModelTime):
    """Model time of the kernel on one arch (:class:`engine.model.timemodel.ModelTime`, a model, never a measured
    time), as a measurement's record: ``source`` "plan" (the plan's issue cycles, registers and traffic) or
    "sass" (ptxas's issue cycles, registers at the plan cap and the SASS's loads and stores); times in
    microseconds."""


def model_time_from_dict(data: dict) -> ModelTimeFigures | Unavailable:
    """A model time from a report, or why there is none."""
    return Unavailable(data["error"]) if "error" in data else ModelTimeFigures.from_dict(data)


@dataclass(frozen=True)
class PlanSummary(_Record):
    """Which plan a measurement is of."""

    allocator: str
    budget: int
    program: str
    workload: dict | None


@dataclass(frozen=True)
class Listings:
    """The texts a build produced: the kernel source, its PTX, and per architecture the SASS listing with its
    life ranges (``sass``) and with its encodings (``hex``, ``nvdisasm -c -hex``: the control bits)."""

    source: str
    ptx: str
    sass: dict
    hex: dict = field(default_factory=dict)


def _measurement_fields() -> dict:
    return {"plan": PlanSummary.from_dict, "planned": Planned.from_dict,
            "ptxas": lambda d: {a: PtxasFigures.from_dict(v) for a, v in d.items()},
            "ptxas_compiler": lambda d: {a: PtxasFigures.from_dict(v) for a, v in d.items()},
            "sass": lambda d: {a: SassFigures.from_dict(v) for a, v in d.items()},
            "kernel": KernelFigures.from_dict, "simulator": check_from_dict, "gpu": gpu_from_dict}


@dataclass(frozen=True)
class Measurement(_Record):
    """A plan's kernel built and measured: planned figures beside ptxas, SASS, simulator and GPU per arch.

    ``ptxas`` is ptxas at the plan cap (the kernel ``sass``, the simulator
    and the GPU run are of), ``ptxas_compiler`` ptxas on the same PTX with
    no ``-maxrregcount``; each carries its flags. ``plan_ptx`` is the same
    two ptxas runs on the plan's own PTX (the "plan PTX" realisation; the
    "Numba kernel" above stays the one exported, simulated and launched).

    ``to_dict`` is the report ``regtune build`` writes (report.json);
    :meth:`to_reply`/:meth:`from_reply` add the listings for the worker's reply.
    """

    plan: PlanSummary
    planned: Planned
    ptxas: dict
    ptxas_compiler: dict
    sass: dict
    kernel: KernelFigures
    simulator: SimulatorCheck | Unavailable
    gpu: GpuRun | Unavailable
    toolchain: str
    timings_ms: dict
    cached: bool
    listings: Listings | None = field(default=None, compare=False)
    #: a note for the user when the build cache could not be used (not part of the report)
    cache_warning: str = field(default="", compare=False)
    #: arch -> {"plan": ..., "sass": ...}: :class:`ModelTimeFigures` or why there is none (empty: an older report)
    model_time: dict = field(default_factory=dict)
    #: ptxas on the plan's own PTX ("plan PTX", :mod:`kernels.plan_ptx`) beside the Numba kernel's, or why there
    #: is none; None: a report written before it was measured
    plan_ptx: PlanPtxFigures | Unavailable | None = None

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(self.ptxas)

    def to_dict(self) -> dict:
        out = super().to_dict()
        out.pop("listings", None)
        out.pop("cache_warning", None)
        return out

    @classmethod
    def from_dict(cls, data: dict, listings: Listings | None = None) -> Measurement:
        values = {name: read(data[name]) for name, read in _measurement_fields().items()}
        model = {a: {s: model_time_from_dict(v) for s, v in by.items()} for a, by in data.get("model_time", {}).items()}
        plan_ptx = plan_ptx_from_dict(data["plan_ptx"]) if "plan_ptx" in data else None
        return cls(**values, toolchain=data["toolchain"], timings_ms=dict(data["timings_ms"]),
                   cached=data["cached"], listings=listings, model_time=model, plan_ptx=plan_ptx)

    def to_reply(self) -> dict:
        """The worker's reply: the report and the listings."""
        listings = self.listings or Listings("", "", {})
        return {"report": self.to_dict(), "ptx": listings.ptx, "source": listings.source, "sass": dict(listings.sass),
                "hex": dict(listings.hex)}

    @classmethod
    def from_reply(cls, reply: dict) -> Measurement:
        return cls.from_dict(reply["report"], Listings(reply["source"], reply["ptx"], dict(reply["sass"]),
                                                       dict(reply["hex"])))

    @functools.cached_property
    def _parsed(self) -> dict:
        return {}

    def sass_liveness(self, arch: str):
        """The parsed SASS listing of ``arch`` (a :class:`kernels.sass.SassLiveness`), None without listings."""
        from kernels.sass import parse_sass

        if self.listings is None or arch not in self.listings.sass:
            return None
        if arch not in self._parsed:
            self._parsed[arch] = parse_sass(self.listings.sass[arch])
        return self._parsed[arch]

    def control_listing(self, arch: str):
        """The parsed ``nvdisasm -hex`` listing of ``arch`` (a :class:`kernels.control.Listing`: each instruction's
        control bits), None without it."""
        from kernels.control import parse_hex

        if self.listings is None or not self.listings.hex.get(arch):
            return None
        if ("hex", arch) not in self._parsed:
            self._parsed[("hex", arch)] = parse_hex(self.listings.hex[arch])
        return self._parsed[("hex", arch)]


@dataclass(frozen=True)
class SweepRow(_Record):
    """ptxas at one ``-maxrregcount`` (None: none): registers, spill and stack bytes, and the occupancy they give."""

    maxrregcount: int | None
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    active_warps: int
    occupancy: float

    @property
    def spills(self) -> bool:
        return bool(self.spill_store_bytes or self.spill_load_bytes)


@dataclass(frozen=True)
class Sweep(_Record):
    """A budget sweep of one plan's PTX on one architecture, a row per cap, caps ascending.

    The marks on its curve: ``plan_registers``, the plan's own count, and
    ``no_cap``, ptxas on the same PTX with no ``-maxrregcount`` (its own
    choice; its ``maxrregcount`` is None: no flag).
    """

    arch: str
    threads_per_block: int
    rows: tuple
    plan_registers: int
    no_cap: SweepRow
    _NESTED = {"rows": lambda rows: tuple(SweepRow.from_dict(r) for r in rows), "no_cap": SweepRow.from_dict}

    def to_dict(self) -> dict:
        return {"arch": self.arch, "threads_per_block": self.threads_per_block,
                "sweep": [r.to_dict() for r in self.rows], "plan_registers": self.plan_registers,
                "no_cap": self.no_cap.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> Sweep:
        return super().from_dict({**data, "rows": data["sweep"]})

    def cliff(self) -> int | None:
        """The highest cap at which ptxas spills (None: it spills at no cap swept)."""
        return next((r.maxrregcount for r in reversed(self.rows) if r.spills), None)
