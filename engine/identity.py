"""The identity proof: that a plan's program, its spill code removed, is the program its workload builds, or
a reordering of it within its dependences (proved structurally), with a run of both as a second opinion.

It sits above the workloads, which rebuild the program from the plan's workload and options; its structural
core is :func:`engine.analysis.dependence.reordering_problem` and its runs are the check layer's
(:class:`engine.check.verify.ReferenceRuns`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.analysis.dependence import moved_instructions, reordering_problem
from engine.base.errors import VerificationError
from engine.base.limits import CHECK_SECONDS, MAX_STEPS
from engine.check.interp import Trace
from engine.check.verify import SEEDS, ReferenceRuns, choose_seeds
from engine.ir.core import Program
from engine.ir.spill import remove_spill_code
from engine.workloads import (
    BuildOptions,
    build_workload,
    config_label,
    input_model,
    workload_named,
)


def _memory_after(trace: Trace) -> dict:
    """Global and shared memory as the run leaves it: (space, address) -> the last value stored there."""
    return {(space, address): value for space, address, value in trace.stores}


@dataclass(frozen=True)
class IdentityProof:
    """That a plan's program, its spill code removed, is its workload's program: proved structurally
    (:func:`engine.analysis.dependence.reordering_problem`), with a run of both as a second opinion.

    ``moved``: instructions that stand elsewhere than in the workload's program (0: the same program);
    ``inputs``: the inputs both programs ran on for the second opinion (0 when they are identical).

    Examples
    --------
    >>> print(IdentityProof("gemm 2x2x2", 0, 0).text)
    its program, spill code removed, is the one gemm 2x2x2 builds, instruction for instruction (proved structurally)
    >>> print(IdentityProof("gemm 2x2x2", 2, 6).text)  # doctest: +NORMALIZE_WHITESPACE
    its program, spill code removed, is the one gemm 2x2x2 builds with 2 instructions moved within their blocks,
    every true, anti, output and memory dependence kept (proved structurally; second opinion: the same memory on 6
    inputs)
    """

    label: str
    moved: int
    inputs: int

    @property
    def text(self) -> str:
        head = f"its program, spill code removed, is the one {self.label} builds"
        if not self.moved:
            return head + ", instruction for instruction (proved structurally)"
        plural = "s" * (self.moved != 1)
        return (f"{head} with {self.moved} instruction{plural} moved within their blocks, every true, anti, output "
                f"and memory dependence kept (proved structurally; second opinion: the same memory on {self.inputs} "
                "inputs)")


def prove_identity(program: Program, spills: dict, workload: dict, options: dict, seeds=SEEDS,
                   max_steps: int = MAX_STEPS, max_seconds: float | None = CHECK_SECONDS,
                   runs: ReferenceRuns | None = None, original: Program | None = None) -> IdentityProof | None:
    """Prove that a plan's program is what its workload builds; None for a plan made from an IR file (no
    workload to rebuild).

    The program without its spill code must be the program the workload
    builds from the plan's own options, or that program reordered within
    its blocks keeping every dependence (:mod:`engine.analysis.dependence`: exact, not
    sampled). A reordered one then runs beside the workload's own on the
    execution check's inputs (the model's cases at the guards' edges and
    random ones), as a second opinion that must agree. ``runs`` and
    ``original`` (the program without spill code), when the caller has
    them, are shared with its execution check (:func:`verify_execution`), so
    the program without spill code runs once on each input.

    Raises
    ------
    VerificationError
        naming the first instruction that differs or the first dependence a move breaks (or, for the
        second opinion, the input and the first memory cell that ends differently).

    Examples
    --------
    >>> from engine.workloads import BuildOptions, build_workload
    >>> w = {"kind": "gemm", "m": 2, "n": 2, "k": 2}
    >>> program, _, options = build_workload(w, BuildOptions())
    >>> prove_identity(program, {}, w, options).moved
    0
    """
    if not workload or workload_named(workload.get("kind")).example is None:
        return None
    rebuilt = build_workload(workload, BuildOptions.of_plan(options))[0]
    original = original if original is not None else remove_spill_code(program, spills)
    label = config_label(workload)
    problem = reordering_problem(original, rebuilt, label)
    if problem:
        raise VerificationError(f"the plan's program, spill code removed, is not {label}'s program nor a "
                                f"reordering of it within its dependences: {problem}")
    moved = moved_instructions(original, rebuilt)
    if not moved:
        return IdentityProof(label, 0, 0)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    model = input_model(workload, options)
    runs = runs if runs is not None else ReferenceRuns()
    chosen = choose_seeds(rebuilt, model, (*seeds, *model.case_seeds), max_steps, deadline, runs=runs)
    for seed in chosen:
        want = _memory_after(runs.trace(rebuilt, seed, model, max_steps, deadline))
        got = _memory_after(runs.trace(original, seed, model, max_steps, deadline))
        if got != want:
            cell = min(want.keys() ^ got.keys() or {k for k in want if want[k] != got[k]})
            raise VerificationError(
                f"the plan's program does not compute what {label} builds: on {model.describe(seed)}, "
                f"{cell[0]}[{cell[1]:#x}] ends as {_cell(got, cell)} where {label}'s own program leaves "
                f"{_cell(want, cell)}")
    return IdentityProof(label, moved, len(chosen))


def _cell(memory: dict, cell) -> str:
    return f"{memory[cell]:#x}" if cell in memory else "unwritten"
