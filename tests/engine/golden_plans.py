"""The golden plans: every allocator's plan file on fixed programs, as SHA-256 digests of its JSON text.

The programs: the two 5,000-instruction benchmark programs (budget 255)
and a fixed sample of GEMM and MHA configs at budgets 255 and 32. A plan's
JSON holds its program (spill code included), assignment, spill slots and
every predicted figure, so equal digests mean bit-identical plans. The
digests in tests/engine/golden/plans.json were written before the
pipeline redesign (issue 11) and must not change with it. Both digest
files were written again once, deliberately, when issue 20 dropped the
plan file's always-empty ``"measured": {}`` field: each of the 80 new
digests was checked equal to the plan JSON of the code before that change
with only that field removed (before it, all 80 matched the old digests).

Write them again (only for a deliberate change of the plans):
``python -m tests.engine.golden_plans --write``

``--without-executed`` hashes each plan with its ``spill_stores_executed``
and ``spill_loads_executed`` figures removed, against
tests/engine/golden/plans-without-executed.json (written at 5619f9d): the
execution check's input model (issue 11) changes those two figures, which
come from a run of the program, and nothing else of a plan.

Issue 13 gave MAXLIVE one meaning, the program's before spill code, and
the pressure with spill code its own name (``peak_with_spill_code``, what
``maxlive`` held before). Until issue 20 the digests were hashed under the
figures' old names through a translation; at issue 20 they were written
again under today's names, after every plan had hashed to its old digest
under that translation (80 of 80), so they still pin the plans of
before the redesign; and again when plan files stopped carrying an
empty "measured" field (issue 20: 80 of 80 equal the plans before,
that field removed). On a deliberate rename, write them again.

Issue 24 wrote both files again, deliberately, for three changes of the
plans: ``linear-scan`` is now the scan with lifetime holes (the old scan
is ``linear-scan-hull``), spilled values never live at once share a spill
slot (naive's excepted: it reuses nothing), and Chaitin-Briggs spills by
executed cost. Before writing, each of the 100 plans (20 program-budget
pairs, five allocators) was hashed against the old digests,
``linear-scan-hull``'s under the name ``linear-scan``: 75 equal; the 25
that differ are 13 plans of the new ``linear-scan`` and 12 of the hull
scan, Chaitin-Briggs and DSatur, each of those 12 with a shared slot; no
plan without a shared slot of the other four allocators differs
(Chaitin-Briggs's new cost chose the same spills on this sample).

Issue 24 wrote both files again, once more, for rematerialisation and
splitting: the fast allocators now compute again (parameter reads,
special registers, constants and integer arithmetic on them) the values
they would spill that are cheap to recompute, and let one reload serve
the reads of a spilled value within 32 instructions of it
(``engine.alloc.common.RELOAD_REUSE``). Before writing, all 100 plans made
with ``allocate(..., spill_everywhere=True)`` (neither of the two) hashed
to the digests of ed34e9d, the last before them (100 of 100), so these two
are the only change.

Issue 24 wrote both files a third time for the register choice
(:func:`engine.alloc.choice.spread`): linear-scan, Chaitin-Briggs and
DSatur now give each value, at their colouring's count, the free register
freed longest ago instead of the lowest. Before writing, all 100 plans
made with ``spread`` replaced by the identity in those three allocators
hashed to the digests of 35b8a9d, the last before it (100 of 100); with
it, 60 differ (those three allocators' 20 each), in their assignments and
the two figures an assignment decides, bank conflicts (10,333 -> 9,712 in
all on the 60) and register-to-register moves (83 -> 80).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden") / "plans.json"
GOLDEN_WITHOUT_EXECUTED = GOLDEN.with_name("plans-without-executed.json")
EXECUTED_FIGURES = ("spill_stores_executed", "spill_loads_executed")
ALLOCATORS = ("naive", "linear-scan-hull", "linear-scan", "chaitin-briggs", "dsatur")
GEMM_SAMPLE = ((2, 2, 2), (4, 8, 3), (8, 8, 8), (5, 7, 11), (16, 16, 16), (12, 3, 9))
MHA_SAMPLE = ((32, 64, 64, 4, ()), (16, 1, 32, 1, ("fp16-softmax",)), (128, 4, 128, 8, ("qk-symmetric",)))
BUDGETS = (255, 32)


def programs() -> dict:
    """Name -> (program, workload dict, options, budgets) of every golden program."""
    from engine.ir.parser import parse
    from engine.workloads.gemm import Gemm, build_gemm
    from engine.workloads.mha import Mha, build_mha
    from tests.bench.programs import loop_shaped, straight_line

    found = {"bench straight-line": (parse(straight_line()), {}, {}, (255,)),
             "bench loop-shaped": (parse(loop_shaped()), {}, {}, (255,))}
    for m, n, k in GEMM_SAMPLE:
        w = Gemm(m, n, k)
        program, options = build_gemm(w)
        found[f"gemm {m}x{n}x{k}"] = (program, w.as_dict(), options, BUDGETS)
    for heads, batch, head_dim, groups, strategies in MHA_SAMPLE:
        w = Mha(heads, batch, head_dim, groups)
        program, options = build_mha(w, strategies)
        found[f"mha {heads}/{batch}/{head_dim}/{groups} {'+'.join(strategies) or 'plain'}"] = \
            (program, w.as_dict(), options, BUDGETS)
    return found


def _without_executed(data: dict) -> dict:
    """The plan's JSON object less the figures of a run (see ``--without-executed``)."""
    predicted = {k: v for k, v in data["predicted"].items() if k not in EXECUTED_FIGURES}
    return {**data, "predicted": predicted}


def digests(without_executed: bool = False) -> dict:
    """``"program | allocator | budget"`` -> SHA-256 of the plan's JSON text (as ``write_plan`` writes it),
    with the executed spill figures removed first when ``without_executed``."""
    from engine.alloc import allocate
    from engine.planfile import plan_to_dict
    from engine.predict import planned_and_run

    out = {}
    for name, (program, workload, options, budgets) in programs().items():
        for budget in budgets:
            for allocator in ALLOCATORS:
                plan = planned_and_run(allocate(allocator, program, budget), workload=workload, options=options)
                data = plan_to_dict(plan)
                text = json.dumps(_without_executed(data) if without_executed else data, indent=1) + "\n"
                out[f"{name} | {allocator} | {budget}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the digests (a deliberate change of plans)")
    parser.add_argument("--without-executed", action="store_true",
                        help="hash the plans without their spill_*_executed figures")
    args = parser.parse_args(argv)
    found = digests(args.without_executed)
    golden = GOLDEN_WITHOUT_EXECUTED if args.without_executed else GOLDEN
    if args.write:
        golden.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(found)} digests to {golden}")
        return
    stored = json.loads(golden.read_text())
    changed = sorted(k for k in found if stored.get(k) != found[k])
    print(f"{len(found)} plans, {len(changed)} differ from the golden digests" + "".join(f"\n  {k}" for k in changed))


if __name__ == "__main__":
    main()
