"""Why this many registers: at the peak (or a chosen instruction), the values live there, where each is defined and next used.

Invariant: the live values are exactly the analysis's own ``live_at`` (the
values counted in the pressure there), so the rows add up to the pressure
the timeline draws; definitions and uses come from the analysis's
(instruction, value) rows, never from a second scan of the program.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from engine.ir.spill import has_spill_code
from engine.plan import Plan, registers_used
from engine.workloads.roles import role_of


class Occurrences:
    """The instructions that define and that read each value of one analysis, sorted, without repeats.

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> a = analyze(parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = add %x, %x\\n"
    ...                   "  st.global %y, 0, %x\\n  exit\\n"))
    >>> occ = Occurrences(a)
    >>> occ.defined(a.index["x"]), occ.used(a.index["x"])
    ([0], [1, 2])
    """

    def __init__(self, analysis):
        self.n = len(analysis.names)
        self._defs = self._group(analysis.definitions)
        self._uses = self._group(analysis.operand_reads)

    def _group(self, rows: np.ndarray) -> tuple[list[int], list[int]]:
        rows = np.asarray(rows).reshape(-1, 2)
        codes = np.unique(rows[:, 1].astype(np.int64) * (1 << 32) + rows[:, 0])
        values, instructions = codes >> 32, codes & ((1 << 32) - 1)
        return np.searchsorted(values, np.arange(self.n + 1)).tolist(), instructions.tolist()

    @staticmethod
    def _of(grouped, v: int) -> list[int]:
        bounds, instructions = grouped
        return instructions[bounds[v]:bounds[v + 1]]

    def defined(self, v: int) -> list[int]:
        """Instructions that write value number ``v``."""
        return self._of(self._defs, v)

    def used(self, v: int) -> list[int]:
        """Instructions that read value number ``v``."""
        return self._of(self._uses, v)


@dataclass(frozen=True)
class WhyRow:
    """One value live at the instruction: the definition that reaches it and the next (up to three) uses."""

    name: str
    type: str
    role: str
    registers: tuple[int, ...]
    defined: tuple[int, ...]
    used: tuple[int, ...]


@dataclass(frozen=True)
class WhyReport:
    """The values live at ``index`` and the figures around them."""

    index: int
    peak: int
    instruction: str
    pressure: int
    maxlive: int
    registers: int
    rows: tuple[WhyRow, ...]
    #: the plan's program carries spill code, so its largest pressure is not the program's MAXLIVE
    spill_code: bool = False

    @cached_property
    def caption(self) -> str:
        where = "the peak" if self.index == self.peak else "the selected instruction"
        largest = "peak with spill code" if self.spill_code else "MAXLIVE"
        return (f"instruction {self.index} ({where}): {self.instruction}\npressure {self.pressure} "
                f"({largest} {self.maxlive} at {self.peak}); {len(self.rows)} values live, "
                f"{self.registers} registers in the plan")


def why_this_many(plan: Plan, analysis, index: int | None = None, occurrences: Occurrences | None = None
                  ) -> WhyReport:
    """The values live after instruction ``index`` (the peak when None or out of range).

    Examples
    --------
    >>> from engine.ir.parser import parse
    >>> from engine.analysis.liveness import analyze
    >>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  %y:f32 = mov 2\\n  st.global %x, 0, %y\\n  exit\\n")
    >>> report = why_this_many(Plan(p, {"x": (0,), "y": (1,)}, {}, 4, "hand"), analyze(p))
    >>> report.index, [(r.name, r.registers, r.defined, r.used) for r in report.rows]
    (1, [('x', (0,), (0,), (2,)), ('y', (1,), (1,), (2,))])
    """
    peak = analysis.peak
    index = peak if index is None or not 0 <= index < len(analysis.pressure) else index
    occ = occurrences or Occurrences(analysis)
    rows = tuple(_row(plan, analysis, occ, name, index) for name in analysis.live_at(index))
    return WhyReport(index, peak, str(plan.program.instructions[index]), int(analysis.pressure[index]),
                     analysis.maxlive, registers_used(plan.assignment), rows,
                     has_spill_code(plan.program, plan.spills))


def _row(plan: Plan, analysis, occ: Occurrences, name: str, index: int) -> WhyRow:
    v = analysis.index[name]
    value = plan.program.values[name]
    defs, uses = occ.defined(v), occ.used(v)
    reaching = defs[max(bisect.bisect_right(defs, index) - 1, 0):][:1]
    return WhyRow(name, value.type, role_of(value), tuple(plan.assignment.get(name, ())), tuple(reaching),
                  tuple(uses[bisect.bisect_right(uses, index):][:3]))


def false_dependence_why(arch: str, figures=None) -> str:
    """What a false dependence (a register reused by the plan) costs in the ILP model, per hazard kind, with the
    figures of ``arch``'s tables and their sources; with ``figures`` (the plan's
    :class:`engine.model.ilp.IlpFigures`) also how many of each the plan has.

    Examples
    --------
    >>> text = false_dependence_why("sm_80")
    >>> "fixed-latency" in text and "read scoreboard" in text and "arXiv 1804.06826" in text
    True
    """
    from engine.model.arch import load_latencies

    t = load_latencies(arch)
    memory = sorted(c for c in t.reads if c.startswith(("ld_", "st_")))
    other = sorted(c for c in t.reads if c not in memory)
    lines = [
        f"What a reused register costs (ILP model, {arch}; a model):",
        "- Write after a fixed-latency read (ALU, FMA, IMAD, branch): no wait. The reader read its operands "
        "when it issued and issue is in order, so the writer only issues after it (1 cycle, the issue order).",
        "- Write after a variable-latency read: the writer waits for the reader's read scoreboard, "
        + ", ".join(f"{c} {t.reads[c]}" for c in memory + other) + " cycles after it issued.",
        f"- Write after write: after a variable-latency writer, its write scoreboard (its latency, e.g. ld_global "
        f"{t.cycles['ld_global']}); after a fixed-latency one, results land in order (max(1, first - second + 1)).",
        "- What a reuse really costs is what it forbids: the next value cannot be computed before the last read of "
        "the previous one, so a load cannot be hoisted above it and its latency is not hidden. cycles/warp (model) "
        "lets a list scheduler order each block once, as ptxas orders the PTX it is given (of the instructions "
        "whose dependences are met, the one with the longest path to the block's end first: Gibbons and Muchnick, "
        "SIGPLAN '86); it keeps every edge the plan's registers make, so a reused register is a hoist the schedule "
        "cannot make. Issued in the plan's own order instead, nothing is hoisted and every load waits in line. "
        f"Each instruction also holds its pipe: ffma {t.issue['ffma']}, ld_global {t.issue['ld_global']}, mufu "
        f"{t.issue['mufu']} cycles ([issue]; Accel-Sim's initiation intervals, the LD/ST units per SM partition).",
        "Sources: Jia et al. 2018, 'Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking' "
        "(arXiv 1804.06826), p. 12, on control codes: fixed-latency instructions are scheduled by stall counts, "
        "variable-latency ones by read and write dependency barriers; latencies: resources/arch/"
        f"{arch}.toml [latency] (Accel-Sim's tuned configs, Abdelkhalik et al. 2022); read scoreboards: "
        f"[read_scoreboard] — {t.read_sources.get('ld_global', 'none')}",
        "ptxas allocates the plan PTX's registers again, so the compiled kernel has its own reuse, usually at the "
        "same count with loads spread over more registers. Linear scan, Chaitin-Briggs and DSatur choose so too "
        "(each value the free register freed longest ago: engine/alloc/choice.py); a plan whose reuse puts the "
        "loads in one line (a hand edit, the hull scan, lowest-first) costs more here than its SASS does. The SASS "
        "issue cycles (control bits) are the figure to trust for the kernel.",
    ]
    if figures is not None:
        lines.insert(1, f"This plan: {figures.war_free} writes after a fixed-latency read (no wait), "
                        f"{figures.war_waiting} after a variable-latency read (a read-scoreboard wait), "
                        f"{figures.waw} writes after writes; {figures.critical_false} on the critical path.")
    return "\n".join(lines)
