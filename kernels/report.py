"""Planned against actual: the figures of a plan beside what ptxas and the SASS show, and why they differ.

Invariant: every number here was computed from the plan or printed by a
tool; a figure that could not be had is a string saying why ("no CUDA
device"), never a number (an :class:`~kernels.measurement.Unavailable`).
Each gap between planned and actual comes with
a sentence naming its cause, from the figures themselves.

Examples
--------
>>> allocated_registers(37), allocated_registers(40), allocated_registers(0)
(40, 40, 0)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from engine.base.errors import RegtuneError
from engine.model.arch import (
    DEFAULT_ARCH,
    load_arch,
    load_latencies,
    next_register_step,
    occupancy,
)
from engine.model.timemodel import model_time
from engine.plan import Plan, registers_used
from engine.predict import predict
from kernels.build import Build
from kernels.control import (
    ControlError,
    issue_cycles,
    latency_class,
    loops,
    parse_hex,
    traffic,
)
from kernels.facts import PlanFacts, facts_of
from kernels.measurement import (
    GpuRun,
    KernelFigures,
    Listings,
    Measurement,
    ModelTimeFigures,
    OccupancyFigures,
    Planned,
    PlanSummary,
    PtxasFigures,
    SassFigures,
    ScheduleFigures,
    SimulatorCheck,
    Unavailable,
)
from kernels.toolchain import CompileReport

#: registers per thread are allocated per warp in units of 256, i.e. 8 per thread
REGISTER_GRANULE = 8


def allocated_registers(registers: int) -> int:
    """Registers a thread holds after the per-warp allocation unit (256 per warp = 8 per thread)."""
    return -(-registers // REGISTER_GRANULE) * REGISTER_GRANULE


def threads_per_block(plan: Plan) -> int:
    return int((plan.options or {}).get("threads_per_block", 128))


def planned(plan: Plan, arch: str = DEFAULT_ARCH, facts: PlanFacts | None = None) -> Planned:
    """The plan's own figures (no tool involved), its occupancy on ``arch``; ``facts``: the caller's
    :class:`kernels.facts.PlanFacts` of ``plan`` (its analyses and spill code)."""
    f = facts_of(plan, facts)
    figures = predict(plan, f.analysis, f.spill_code, f.original_analysis)
    regs = figures.registers
    threads = threads_per_block(plan)
    a = load_arch(arch)
    step = next_register_step(a, regs, threads)
    return Planned(regs, figures.maxlive, figures.spilled_values, figures.spill_stores,
                   figures.spill_loads, figures.bank_conflicts, threads, arch,
                   _occupancy(arch, regs, threads),
                   f"free {regs - step[0]} registers (to {step[0]}) to reach {step[1]} warps"
                   if step else "registers do not limit occupancy")


def _occupancy(arch: str, registers: int, threads: int) -> OccupancyFigures:
    occ = occupancy(load_arch(arch), registers, threads)
    return OccupancyFigures(occ.active_warps, round(occ.occupancy, 4), tuple(occ.limited_by))


def _pairs(plan: Plan) -> int:
    return sum(1 for v in plan.program.values.values() if v.width == 2)


def explain(plan: Plan, build: Build, arch: str, facts: PlanFacts | None = None) -> list[str]:
    """One sentence per gap between the plan and what ptxas/SASS show for ``arch``, each naming the cap its
    figures come from: the plan cap (``-maxrregcount`` = the plan's count) or no cap (ptxas's own choice)."""
    b = build.archs[arch]
    plan_regs = registers_used(plan.assignment)
    maxlive = facts_of(plan, facts).maxlive       # the program's, before spill code (as everywhere)
    at_plan, own = b.report, b.compiler
    plan_flag = "no -maxrregcount" if at_plan.max_registers is None else f"-maxrregcount={at_plan.max_registers}"
    top = b.sass.highest_register()
    out = []
    if plan_regs < maxlive:
        remat = facts_of(plan, facts).spill_code.rematerialised
        again = f" and computes {len(remat)} again where they are read (rematerialised)" if remat else ""
        out.append(f"planned registers {plan_regs} vs MAXLIVE {maxlive}: the plan spills {len(plan.spills)} "
                   f"value(s) to local memory{again}, so {maxlive - plan_regs} register(s) fewer than the program's "
                   "peak are live at once")
    elif plan_regs > maxlive:
        out.append(f"planned registers {plan_regs} vs MAXLIVE {maxlive}: "
                   + (f"{_pairs(plan)} 64-bit values need even-aligned pairs, and "
                      if _pairs(plan) else "")
                   + f"the {plan.allocator} assignment leaves {plan_regs - maxlive} register(s) of slack")
    if at_plan.max_registers is None:
        out.append(f"the plan's {plan_regs} registers are {arch}'s maximum, which ptxas never exceeds, so the plan "
                   "cap passes no -maxrregcount (the flag at the maximum changes ptxas's schedule, not its limit)")
    elif at_plan.max_registers != plan_regs:
        out.append(f"the plan's {plan_regs} registers are below ptxas's floor on {arch}, so the plan cap is "
                   f"{plan_flag} (ptxas raises any lower cap to it)")
    out.append(_plan_cap_sentence(at_plan, plan_regs, plan_flag, b.sass.maxlive, maxlive))
    out.append(_own_choice_sentence(own, plan_regs))
    if at_plan.registers != top + 1 and top >= 0:
        out.append(f"at the plan cap ptxas counts {at_plan.registers} registers while no SASS instruction names one "
                   f"above R{top}: the {at_plan.registers - top - 1} on top are ptxas's own reservation, with no "
                   "live range in the SASS")
    if allocated_registers(at_plan.registers) != at_plan.registers:
        out.append(f"at the plan cap the GPU allocates {allocated_registers(at_plan.registers)} registers per thread "
                   f"for {at_plan.registers} (256 per warp = {REGISTER_GRANULE} per thread)")
    out.append(spill_sentence(plan, build, arch))
    return out


def _plan_cap_sentence(r: CompileReport, plan_regs: int, flag: str, sass_maxlive: int, maxlive: int) -> str:
    """What ptxas did with the plan's count as its cap: fitted it, or spilled."""
    fit = (f"spilled {r.spill_store_bytes} B stored / {r.spill_load_bytes} B loaded: the plan's count does not "
           "fit ptxas's own schedule" if r.spill_store_bytes or r.spill_load_bytes
           else "without spilling: the plan's count fits ptxas's schedule")
    return (f"at the plan cap ({flag}) ptxas used {r.registers} registers for the plan's {plan_regs} and {fit}; "
            f"SASS MAXLIVE there is {sass_maxlive} against the plan's {maxlive}")


def _own_choice_sentence(r: CompileReport, plan_regs: int) -> str:
    """What ptxas chose with no cap, against the plan's count."""
    diff = r.registers - plan_regs
    gap = (f"{abs(diff)} {'more' if diff > 0 else 'fewer'} than planned: it re-allocates and reschedules the PTX "
           "itself" if diff else "as many as planned")
    spills = (f", and spilled {r.spill_store_bytes + r.spill_load_bytes} B" if r.spill_store_bytes
              or r.spill_load_bytes else "")
    return (f"with no -maxrregcount (ptxas's own choice, what a plain numba.cuda.jit gets) ptxas used "
            f"{r.registers} registers, {gap}{spills}")


def spill_sentence(plan: Plan, build: Build, arch: str) -> str:
    """Whose spills the kernel at the plan cap has: the plan's (kept as st.local) and/or ptxas's own."""
    r = build.archs[arch].report
    src = build.source
    ptxas_own = r.spill_store_bytes or r.spill_load_bytes
    if src.spills == "plan" and src.spill_stores:
        kept = (f"the plan's spills are in the kernel: {build.ptx_count('st.local')} st.local / "
                f"{build.ptx_count('ld.local')} ld.local in the PTX for {src.spill_stores} planned stores / "
                f"{src.spill_loads} planned reloads (NVVM merges reloads of a slot with no store between)")
    else:
        kept = "the plan has no spills" if not plan.spills else "the plan's spills were left to the compiler"
    own = (f"; at the plan cap ptxas spilled on its own: {r.spill_store_bytes} B stored, {r.spill_load_bytes} B "
           "loaded" if ptxas_own else "; at the plan cap ptxas added no spills of its own")
    return kept + own


def ptxas_figures(report: CompileReport, cap: str, threads: int) -> PtxasFigures:
    """What ptxas reported for one arch at ``cap`` ("plan" or "compiler"), with the occupancy of its count."""
    r = report
    return PtxasFigures(cap, tuple(r.flags), r.registers, allocated_registers(r.registers), r.spill_store_bytes,
                        r.spill_load_bytes, r.stack_frame_bytes, r.shared_bytes, dict(r.constant_bytes),
                        r.max_registers, r.compile_ms, tuple(r.warnings), _occupancy(r.arch, r.registers, threads))


def _schedule_source(arch: str, listing) -> str:
    """Where the issue cycles come from: the decoded control bits, and the latency-table classes that priced
    the scoreboards of this listing."""
    table = load_latencies(arch).cycles
    used = sorted({latency_class(x.opcode) for x in listing.instructions if x.control.write_barrier is not None})
    return ("model: stalls and scoreboards decoded from the SASS control bits (nvdisasm -hex); scoreboard waits "
            f"priced from resources/arch/{arch}.toml [latency]: " + ", ".join(f"{c} {table[c]}" for c in used))


def _unrolled(plan: Plan, listing, trips: dict) -> str:
    """Why the SASS loop is not the program's loop once per trip ('' when its global loads say it is): a body
    with more LDG than the program loop's block has ld.global was unrolled, and trip weighting would over-count."""
    found = loops(listing)
    if len(found) != 1 or len(trips) != 1:
        return ""
    block = next(b for b in plan.program.blocks if b.name == next(iter(trips)))
    ir = sum(1 for i in block.instructions if i.opcode.startswith("ld.global"))
    first, last = found[0]
    sass = sum(1 for x in listing.instructions[first:last + 1] if x.opcode.startswith("LDG"))
    return (f"SASS issue cycles not priced: the SASS loop has {sass} global loads, the program loop "
            f"{block.name} {ir}: unrolled, so weighting it by the trip count would over-count") if sass > ir else ""


def schedule_figures(plan: Plan, build: Build, arch: str, facts: PlanFacts | None = None,
                     listing=None) -> ScheduleFigures | Unavailable:
    """Issue cycles per warp from ``arch``'s control bits, the loop weighted by the plan's trip count
    (``listing``: the caller's :func:`kernels.control.parse_hex` of the arch's encodings)."""
    try:
        listing = listing if listing is not None else parse_hex(build.archs[arch].hex_text)
        trips = facts_of(plan, facts).trips
        why = _unrolled(plan, listing, trips)
        r = issue_cycles(listing, load_latencies(arch).cycles, trips)
    except ControlError as e:
        return Unavailable(f"SASS issue cycles not priced: {e}")
    if why:
        return Unavailable(why)
    return ScheduleFigures(r.cycles, r.stall_cycles, r.barrier_wait_cycles, r.instructions, r.loop,
                           _schedule_source(arch, listing))


def sass_figures(plan: Plan, build: Build, arch: str, facts: PlanFacts | None = None,
                 listing=None) -> SassFigures:
    """The SASS live-range figures of one arch, the sentences explaining its gaps to the plan, its issue cycles."""
    s = build.archs[arch].sass
    return SassFigures(s.maxlive, s.offsets[s.peak], len(s.texts), s.highest_register(),
                       s.bank_conflicts(load_arch(arch).bank_model), s.mix(),
                       tuple(explain(plan, build, arch, facts)), schedule_figures(plan, build, arch, facts, listing),
                       build.archs[arch].ir_map)


def _model(arch: str, cycles: int, instructions: int, registers: int, grid, nbytes: int, source: str):
    try:
        return ModelTimeFigures(**asdict(model_time(arch, cycles, instructions, registers, grid[1], grid[0], nbytes,
                                                    source)))
    except RegtuneError as e:
        return Unavailable(f"no model time: {e}")


def plan_model_time(plan: Plan, arch: str, ilp=None, facts: PlanFacts | None = None) -> ModelTimeFigures | Unavailable:
    """Model time of the plan on ``arch`` from the plan alone: its issue cycles (engine/model/ilp.py), register
    count and traffic, over the grid a GPU run launches; ``ilp``: the caller's
    :func:`engine.model.ilp.plan_ilp` on ``arch`` (else ``facts``'s)."""
    facts = facts_of(plan, facts)
    grid = facts.grid
    if grid is None:
        return Unavailable("no model time: the plan has no workload, so no grid")
    f = ilp or facts.ilp(arch)
    return _model(arch, f.cycles, f.instructions, registers_used(plan.assignment), grid, facts.traffic.total,
                  "plan")


def sass_model_time(plan: Plan, build: Build, arch: str, schedule, facts: PlanFacts | None = None,
                    listing=None) -> ModelTimeFigures | Unavailable:
    """Model time of the built kernel on ``arch``: the SASS's issue cycles (``schedule``), ptxas's registers at
    the plan cap and the SASS's global and local loads and stores along its executed path
    (:func:`kernels.control.executed_path`, which takes a predicated forward branch: where ptxas branches
    around a side, e.g. GEMM's ``beta != 0`` loads of C, that side's bytes are not counted, while the plan's
    path takes the longer side; GEMM 8x8x8: 768 against 1024 bytes a thread)."""
    facts = facts_of(plan, facts)
    grid = facts.grid
    if grid is None:
        return Unavailable("no model time: the plan has no workload, so no grid")
    if not isinstance(schedule, ScheduleFigures):
        return Unavailable(f"no model time: {schedule}")
    listing = listing if listing is not None else parse_hex(build.archs[arch].hex_text)
    moved = traffic(listing, facts.trips).total
    return _model(arch, schedule.issue_cycles, schedule.instructions_issued, build.archs[arch].report.registers,
                  grid, moved, "sass")


def model_times(plan: Plan, build: Build, sass: dict, facts: PlanFacts | None = None,
                listings: dict | None = None) -> dict:
    """arch -> {"plan": ..., "sass": ...} model times of every arch built (``sass``: its SassFigures;
    ``listings``: arch -> the caller's parsed encodings)."""
    facts = facts_of(plan, facts)
    return {a: {"plan": plan_model_time(plan, a, facts=facts),
                "sass": sass_model_time(plan, build, a, s.schedule, facts, (listings or {}).get(a))}
            for a, s in sass.items()}


def kernel_figures(build: Build) -> KernelFigures:
    """Whose spills the kernel carries, and how many local and global accesses reached its PTX."""
    src = build.source
    return KernelFigures(src.spills, src.spill_stores, src.spill_loads, build.ptx_count("st.local"),
                         build.ptx_count("ld.local"), build.ptx_count("ld.global"), build.entry)


def realisation_sentences(plan: Plan, build: Build, own, arch: str) -> list[str]:
    """The plan PTX (``own``: :class:`PlanPtxFigures`, or why there is none) against the Numba kernel for
    ``arch``: one sentence per cap where ptxas's registers differ, one when they agree at both; nothing for an
    older report (``own`` None)."""
    if own is None:
        return []
    if isinstance(own, Unavailable):
        return [own.reason]
    if arch not in own.ptxas:
        return []
    b = build.archs[arch]
    caps = (("at the plan cap", own.ptxas[arch], b.report), ("with no cap", own.ptxas_compiler[arch], b.compiler))
    loads = sum(ins.opcode == "ld.global" for ins in plan.program.instructions)   # one PTX line each
    out = [f"{cap} the plan PTX gets {mine.registers} registers where the Numba kernel gets {numba.registers}: "
           f"NVVM's PTX differs from the plan's (the plan PTX has {loads} ld.global, the Numba kernel's "
           f"{build.ptx_count('ld.global')} ld.global, {build.ptx_count('st.local')} st.local, "
           f"{build.ptx_count('ld.local')} ld.local)"
           for cap, mine, numba in caps if mine.registers != numba.registers]
    if not out:
        out = [(f"the plan PTX gets the Numba kernel's registers at both caps ({b.report.registers} at the plan "
                f"cap, {b.compiler.registers} with no cap)")]
    return out


def measurement(plan: Plan, build: Build, simulator: SimulatorCheck | Unavailable,
                gpu: GpuRun | Unavailable, plan_ptx=None, facts: PlanFacts | None = None) -> Measurement:
    """Everything known about ``plan``'s kernel: planned beside ptxas, SASS, simulator and GPU per arch, and
    ``plan_ptx`` (ptxas on the plan's own PTX, or why there is none) beside them.

    The planned occupancy is on the build's first arch; ``to_dict`` of the
    result is the report ``regtune build`` writes. ``facts``: the caller's
    :class:`kernels.facts.PlanFacts` of ``plan``; each encoding listing is
    parsed once.
    """
    facts = facts_of(plan, facts)
    threads = threads_per_block(plan)
    listings = {a: _parsed_hex(b.hex_text) for a, b in build.archs.items()}
    sass = {a: sass_figures(plan, build, a, facts, listings[a]) for a in build.archs}
    sass = {a: replace(s, explanation=s.explanation + tuple(realisation_sentences(plan, build, plan_ptx, a)))
            for a, s in sass.items()}
    return Measurement(PlanSummary(plan.allocator, plan.budget, plan.program.name, plan.workload),
                       planned(plan, next(iter(build.archs)), facts),
                       {a: ptxas_figures(b.report, "plan", threads) for a, b in build.archs.items()},
                       {a: ptxas_figures(b.compiler, "compiler", threads) for a, b in build.archs.items()},
                       sass, kernel_figures(build),
                       simulator, gpu, build.toolchain, {k: round(v, 1) for k, v in build.timings_ms.items()},
                       build.cached, Listings(build.source.text, build.ptx,
                                              {a: b.sass_text for a, b in build.archs.items()},
                                              {a: b.hex_text for a, b in build.archs.items()}),
                       build.cache_warning, model_times(plan, build, sass, facts, listings), plan_ptx)


def _parsed_hex(text: str):
    """:func:`kernels.control.parse_hex` of ``text``, or None where it cannot be parsed (each figure that needs
    it parses again and says why)."""
    try:
        return parse_hex(text)
    except ControlError:
        return None


#: what a measured row shows for a plan that has no measurement yet
NOT_BUILT = "not built"


@dataclass(frozen=True)
class Column:
    """One plan in a comparison: its planned figures, and its measurement (None: not built yet)."""

    planned: Planned
    measurement: Measurement | None = None


def _measured(get):
    """A row getter on a column's measurement: NOT_BUILT without one."""
    return lambda c: NOT_BUILT if c.measurement is None else get(c.measurement)


def _on(arch: str, get):
    """A row getter on one arch's figures at the plan cap: why there are none when it was not built for it."""
    def read(m: Measurement):
        return get(m.ptxas[arch], m.sass[arch]) if arch in m.ptxas else f"not built for {arch}"
    return _measured(read)


def _no_cap(arch: str, get):
    """A row getter on one arch's ptxas figures with no cap (ptxas's own choice)."""
    def read(m: Measurement):
        return get(m.ptxas_compiler[arch]) if arch in m.ptxas_compiler else f"not built for {arch}"
    return _measured(read)


def _plan_ptx(arch: str, get):
    """A row getter on one arch's plan-PTX figures (``get(ptxas at the plan cap, with no cap, sass)``), or why
    there are none."""
    def read(m: Measurement):
        own = m.plan_ptx
        if own is None:
            return "not measured (an older report)"
        if isinstance(own, Unavailable):
            return own.reason
        if arch not in own.ptxas:
            return f"not built for {arch}"
        return get(own.ptxas[arch], own.ptxas_compiler[arch], own.sass[arch])
    return _measured(read)


def _issue(schedule) -> object:
    """The issue cycles of a SASS schedule, or why there are none."""
    if schedule is None:
        return "not measured (an older report)"
    return schedule.reason if isinstance(schedule, Unavailable) else schedule.issue_cycles


def _model_us(arch: str, source: str):
    """A row getter on one arch's model time from ``source``'s issue cycles, or why there is none."""
    def read(m: Measurement):
        if arch not in m.model_time:
            return f"not built for {arch}" if arch not in m.ptxas else "not modelled (an older report)"
        t = m.model_time[arch][source]
        return t.reason if isinstance(t, Unavailable) else round(t.model_time_us, 3)
    return _measured(read)


def _gpu_ms(gpu) -> object:
    return gpu.reason if isinstance(gpu, Unavailable) else round(float(gpu.median_ms), 4)


def _driver(gpu) -> str:
    return gpu.reason if isinstance(gpu, Unavailable) else f"{gpu.registers} / {gpu.local_bytes}"


def compare_rows(archs) -> list[tuple[str, str, object]]:
    """The rows of a planned-vs-actual comparison: (label, 'min' | 'max' | '' (better), get(column)).

    ``get`` takes a :class:`Column`; a measured row of a column without a
    measurement gives :data:`NOT_BUILT`.

    Examples
    --------
    >>> [label for label, _, _ in compare_rows(["sm_80"])][6:10]
    ['sm_80 ptxas flags, plan cap', 'sm_80 ptxas registers, plan cap', 'sm_80 ptxas flags, no cap', \
'sm_80 ptxas registers, no cap']
    """
    rows = [("planned registers", "min", lambda c: c.planned.registers),
            ("planned MAXLIVE", "min", lambda c: c.planned.maxlive),
            ("planned spills (values)", "min", lambda c: c.planned.spills),
            ("bank conflicts (plan model)", "min", lambda c: c.planned.bank_conflicts),
            ("occupancy, planned (warps/SM)", "max", lambda c: c.planned.occupancy.active_warps),
            ("next occupancy step", "", lambda c: c.planned.next_step)]
    for a in archs:
        rows += [(f"{a} ptxas flags, plan cap", "", _on(a, lambda p, s: " ".join(p.flags))),
                 (f"{a} ptxas registers, plan cap", "min", _on(a, lambda p, s: p.registers)),
                 (f"{a} ptxas flags, no cap", "", _no_cap(a, lambda p: " ".join(p.flags))),
                 (f"{a} ptxas registers, no cap", "min", _no_cap(a, lambda p: p.registers)),
                 (f"{a} spill bytes (st+ld), no cap", "min", _no_cap(a, lambda p: p.spill_bytes)),
                 (f"{a} allocated (8/thread), plan cap", "min", _on(a, lambda p, s: p.allocated_registers)),
                 (f"{a} spill bytes (st+ld), plan cap", "min", _on(a, lambda p, s: p.spill_bytes)),
                 (f"{a} stack frame bytes, plan cap", "min", _on(a, lambda p, s: p.stack_frame_bytes)),
                 (f"{a} occupancy (warps/SM), plan cap", "max", _on(a, lambda p, s: p.occupancy.active_warps)),
                 (f"{a} SASS MAXLIVE, plan cap", "min", _on(a, lambda p, s: s.maxlive)),
                 (f"{a} SASS issue cycles/warp (model)", "min", _on(a, lambda p, s: _issue(s.schedule))),
                 (f"{a} model time (us), plan issue cycles", "min", _model_us(a, "plan")),
                 (f"{a} model time (us), SASS issue cycles", "min", _model_us(a, "sass")),
                 (f"{a} plan PTX registers, plan cap", "min", _plan_ptx(a, lambda p, c, s: p.registers)),
                 (f"{a} plan PTX registers, no cap", "min", _plan_ptx(a, lambda p, c, s: c.registers)),
                 (f"{a} plan PTX spill bytes, plan cap", "min", _plan_ptx(a, lambda p, c, s: p.spill_bytes)),
                 (f"{a} plan PTX SASS MAXLIVE", "min", _plan_ptx(a, lambda p, c, s: s.maxlive))]
    rows += [("simulator check", "", _measured(lambda m: str(m.simulator))),
             ("GPU time (ms)", "min", _measured(lambda m: _gpu_ms(m.gpu))),
             ("GPU registers / local B (driver)", "", _measured(lambda m: _driver(m.gpu)))]
    return rows
