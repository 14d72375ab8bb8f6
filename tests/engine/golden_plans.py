"""The golden plans: every allocator's plan file on fixed programs, as SHA-256 digests of its JSON text.

The programs: the two 5,000-instruction benchmark programs (budget 255)
and a fixed sample of GEMM and MHA configs at budgets 255 and 32. A plan's
JSON holds its program (spill code included), assignment, spill slots and
every predicted figure, so equal digests mean bit-identical plans. The
digests in tests/engine/golden/plans.json were written before the
pipeline redesign (issue 11) and must not change with it.

Write them again (only for a deliberate change of the plans):
``python -m tests.engine.golden_plans --write``
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden") / "plans.json"
ALLOCATORS = ("naive", "linear-scan", "chaitin-briggs", "dsatur")
GEMM_SAMPLE = ((2, 2, 2), (4, 8, 3), (8, 8, 8), (5, 7, 11), (16, 16, 16), (12, 3, 9))
MHA_SAMPLE = ((32, 64, 64, 4, ()), (16, 1, 32, 1, ("fp16-softmax",)), (128, 4, 128, 8, ("qk-symmetric",)))
BUDGETS = (255, 32)


def programs() -> dict:
    """Name -> (program, workload dict, options, budgets) of every golden program."""
    from engine.ir import parse
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


def digests() -> dict:
    """``"program | allocator | budget"`` -> SHA-256 of the plan's JSON text (as ``write_plan`` writes it)."""
    from engine.allocators import allocate
    from engine.plan import plan_to_dict
    from engine.predict import planned_and_run

    out = {}
    for name, (program, workload, options, budgets) in programs().items():
        for budget in budgets:
            for allocator in ALLOCATORS:
                plan = planned_and_run(allocate(allocator, program, budget), workload=workload, options=options)
                text = json.dumps(plan_to_dict(plan), indent=1) + "\n"
                out[f"{name} | {allocator} | {budget}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the digests (a deliberate change of plans)")
    args = parser.parse_args(argv)
    found = digests()
    if args.write:
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(found)} digests to {GOLDEN}")
        return
    stored = json.loads(GOLDEN.read_text())
    changed = sorted(k for k in found if stored.get(k) != found[k])
    print(f"{len(found)} plans, {len(changed)} differ from the golden digests" + "".join(f"\n  {k}" for k in changed))


if __name__ == "__main__":
    main()
