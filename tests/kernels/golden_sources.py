"""The golden kernel sources: SHA-256 of ``kernel_source(plan, spills).text`` for a fixed sample of plans.

The generated text is cached by the build and its PTX was measured, so a
refactoring of codegen must leave it byte-identical. The sample: GEMM
2x2x2, 4x8x3, 8x8x8 and 16x16x16 and two MHA configs, each allocated by
dsatur and naive at budgets 255 and 32; the loop-shaped example program
(resources/examples/gemm_m1n1k2_loop.txt) and the two benchmark programs
(tests/bench/programs.py) as program plans at budget 255 (and 6 for the
small example, so it spills); every plan written with spills "plan" and
"compiler". The digests in tests/kernels/golden/sources.json were written
before codegen was split into parts (issue 11), and written again when
runs of global loads began to stand between ``order_loads()`` lines (issue
12): then every text minus those lines, the helpers' load-order primitives
and the header's load-order sentence hashed to its old digest (64 of 64);
and again when ``python kernel.py`` began to refuse a machine without a
GPU in one line (issue 19): every text minus those three lines of the
entry point hashed to its old digest (64 of 64); and again when a spilled
f16x2 value became two float16 halves of its slot (issue 19: the old text
stored the pair into the float32 spill array, which NVVM refused): only the
two MHA fp16-softmax naive budget-32 texts changed, in those stores, their
reloads and one ``spill_f16`` array line; and again when the simulator
check began to run a grid chosen for coverage (issue 21): only the embedded
GEMM and MHA harness text changed (``check`` takes the matrices or rows
that ran, ``simulator_runs`` the parent's runs): every GEMM and MHA text
with the old harness text put back hashed to its old digest (48 of 48),
the 16 program-file texts did not change; and again when the program
harness's bit-for-bit sentence came to count what the kernels changed
(issue 22): those 16 texts differ in that sentence alone (the golden text
of the loop example shows the diff); and again when spilled values never
live at once began to share a spill slot (issue 24): the 4 texts that
changed are both texts (spills "plan" and "compiler") of the 2 plans of
the sample whose slots are now shared (DSatur's on the straight-line
benchmark program and on MHA 32/64/64/4 at budget 32; naive shares no
slot); the 60 others hash to their old digests; and again when the
allocators began to split spilled ranges around nearby reads and to
rematerialise (issue 24): with ``--spill-everywhere`` (neither) all 64
texts hash to their old digests, so the 36 texts that changed changed
with the plans alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden") / "sources.json"
ALLOCATORS = ("dsatur", "naive")
GEMM_SAMPLE = ((2, 2, 2), (4, 8, 3), (8, 8, 8), (16, 16, 16))
MHA_SAMPLE = ((32, 64, 64, 4, ()), (16, 1, 32, 1, ("fp16-softmax",)))
BUDGETS = (255, 32)
SPILLS = ("plan", "compiler")
EXAMPLE = "resources/examples/gemm_m1n1k2_loop.txt"


def programs() -> dict:
    """Name -> (program, workload dict, options, budgets) of every golden program."""
    from engine.ir.parser import parse
    from engine.workloads.gemm import Gemm, build_gemm
    from engine.workloads.mha import Mha, build_mha
    from tests.bench.programs import loop_shaped, straight_line

    root = Path(__file__).resolve().parents[2]
    found = {}
    for m, n, k in GEMM_SAMPLE:
        w = Gemm(m, n, k)
        program, options = build_gemm(w)
        found[f"gemm {m}x{n}x{k}"] = (program, w.as_dict(), options, BUDGETS)
    for heads, batch, head_dim, groups, strategies in MHA_SAMPLE:
        w = Mha(heads, batch, head_dim, groups)
        program, options = build_mha(w, strategies)
        found[f"mha {heads}/{batch}/{head_dim}/{groups} {'+'.join(strategies) or 'plain'}"] = \
            (program, w.as_dict(), options, BUDGETS)
    example = parse((root / EXAMPLE).read_text(), EXAMPLE)
    found["example loop"] = (example, {"kind": "program", "name": example.name, "source": EXAMPLE}, {}, (255, 6))
    for name, text in (("straight-line", straight_line()), ("loop-shaped", loop_shaped())):
        program = parse(text, name)
        found[f"bench {name}"] = (program, {"kind": "program", "name": program.name, "source": f"bench {name}"},
                                  {}, (255,))
    return found


def digests(spill_everywhere: bool = False) -> dict:
    """``"program | allocator | budget | spills"`` -> SHA-256 of the generated kernel module's text (plans in
    the spill-everywhere model with ``spill_everywhere``: to check that a change is splitting's or
    rematerialisation's alone)."""
    from engine.alloc import allocate
    from engine.predict import planned_and_run
    from kernels.codegen import kernel_source

    out = {}
    for name, (program, workload, options, budgets) in programs().items():
        for budget in budgets:
            for allocator in ALLOCATORS:
                plan = planned_and_run(allocate(allocator, program, budget, spill_everywhere=spill_everywhere),
                                       workload=workload, options=options)
                for spills in SPILLS:
                    text = kernel_source(plan, spills).text
                    out[f"{name} | {allocator} | {budget} | {spills}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the digests (a deliberate change of the text)")
    parser.add_argument("--spill-everywhere", action="store_true",
                        help="the plans in the spill-everywhere model (no splitting, no rematerialisation)")
    args = parser.parse_args(argv)
    found = digests(args.spill_everywhere)
    if args.write:
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(found)} digests to {GOLDEN}")
        return
    stored = json.loads(GOLDEN.read_text())
    changed = sorted(k for k in found if stored.get(k) != found[k])
    print(f"{len(found)} sources, {len(changed)} differ from the golden digests" + "".join(f"\n  {k}" for k in changed))


if __name__ == "__main__":
    main()
