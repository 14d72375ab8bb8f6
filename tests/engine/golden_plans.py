"""The golden plans: every allocator's plan file on fixed programs, as SHA-256 digests of its JSON text.

The programs: the two 5,000-instruction benchmark programs (budget 255)
and a fixed sample of GEMM and MHA configs at budgets 255 and 32. A plan's
JSON holds its program (spill code included), assignment, spill slots and
every predicted figure, so equal digests mean bit-identical plans. The
digests in tests/engine/golden/plans.json were written before the
pipeline redesign (issue 11) and must not change with it.

Write them again (only for a deliberate change of the plans):
``python -m tests.engine.golden_plans --write``

``--without-executed`` hashes each plan with its ``spill_stores_executed``
and ``spill_loads_executed`` figures removed, against
tests/engine/golden/plans-without-executed.json (written at 5619f9d): the
execution check's input model (issue 11) changes those two figures, which
come from a run of the program, and nothing else of a plan.

Issue 13 gave MAXLIVE one meaning, the program's before spill code, and
the pressure with spill code its own name (``peak_with_spill_code``, what
``maxlive`` held before). The digests predate that: each plan is hashed
with its figures under the names they had when the digests were written
(:func:`_as_written`), so every other byte of every plan is still checked;
tests/engine/test_predict_maxlive.py checks the two figures themselves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden") / "plans.json"
GOLDEN_WITHOUT_EXECUTED = GOLDEN.with_name("plans-without-executed.json")
EXECUTED_FIGURES = ("spill_stores_executed", "spill_loads_executed")
ALLOCATORS = ("naive", "linear-scan", "chaitin-briggs", "dsatur")
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


def _as_written(data: dict) -> dict:
    """The plan's JSON object with its figures named as when the digests were written (before issue 13):
    ``maxlive`` was the pressure with spill code, and there was no ``peak_with_spill_code``."""
    predicted = dict(data["predicted"])
    predicted["maxlive"] = predicted.pop("peak_with_spill_code")
    return {**data, "predicted": predicted}


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
                data = _as_written(plan_to_dict(plan))
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
