"""The golden texts: a small sample of plans kept as text files, so a change shows as a unified diff.

For each sample the files under tests/golden/ are the plan file as ``write_plan`` writes it (``.plan.json``),
the program with its spill code as the IR's printer writes it (``.spilled.ir``) and the kernel module the
plan builds with its own spill code (``.kernel.txt``, not ``.py``: pytest collects every .py file under tests). The broad sample stays as digests
(tests/engine/golden_plans.py, tests/kernels/golden_sources.py); these few show what changed, line by
line, the way xDSL's filecheck tests do.

After a deliberate change, write them again and read the diff before committing:
``python -m tests.golden_text --write``
"""

from __future__ import annotations

import argparse
import difflib
import json
from pathlib import Path

FOLDER = Path(__file__).with_name("golden")
ROOT = Path(__file__).resolve().parent.parent
#: name -> (workload or example path, allocator, budget); chosen to spill, to loop and to cover both workloads
SAMPLES = {
    "gemm_4x8x3.dsatur.32": ({"kind": "gemm", "m": 4, "n": 8, "k": 3}, "dsatur", 32),
    "gemm_2x2x2.naive.8": ({"kind": "gemm", "m": 2, "n": 2, "k": 2}, "naive", 8),
    "mha_16x1x32x1.chaitin-briggs.32": ({"kind": "mha", "heads": 16, "batch": 1, "head_dim": 32, "groups": 1},
                                        "chaitin-briggs", 32),
    "example_loop.linear-scan.6": ("resources/examples/gemm_m1n1k2_loop.txt", "linear-scan", 6),
}
SUFFIXES = (".plan.json", ".spilled.ir", ".kernel.txt")


def texts(name: str) -> dict[str, str]:
    """Suffix -> text of one sample, made now."""
    from engine.alloc import allocate
    from engine.ir.core import print_program
    from engine.planfile import plan_to_dict
    from engine.predict import planned_and_run
    from engine.workloads import BuildOptions, build_workload
    from engine.workloads.program import read
    from kernels.codegen import kernel_source

    source, allocator, budget = SAMPLES[name]
    if isinstance(source, str):
        program, config = read(str(ROOT / source))
        workload = {"kind": "program", "name": program.name, "source": source}
        options = {}
    else:
        program, workload, options = build_workload(source, BuildOptions())
    plan = planned_and_run(allocate(allocator, program, budget), workload=workload, options=options)
    return {".plan.json": json.dumps(plan_to_dict(plan), indent=1) + "\n",
            ".spilled.ir": print_program(plan.program),
            ".kernel.txt": kernel_source(plan, "plan").text}


def differences(name: str) -> list[str]:
    """A unified diff per file of the sample that differs from its golden text (empty: all equal)."""
    out = []
    for suffix, text in texts(name).items():
        path = FOLDER / (name + suffix)
        want = path.read_text() if path.exists() else ""
        if text != want:
            diff = difflib.unified_diff(want.splitlines(True), text.splitlines(True), f"golden/{path.name}",
                                        "made now", n=2)
            out.append("".join(list(diff)[:80]))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the texts (after a deliberate change)")
    args = parser.parse_args(argv)
    for name in SAMPLES:
        if args.write:
            for suffix, text in texts(name).items():
                (FOLDER / (name + suffix)).write_text(text)
            print(f"wrote {name}{{{','.join(SUFFIXES)}}}")
        else:
            diffs = differences(name)
            print(f"{name}: " + ("equal" if not diffs else f"{len(diffs)} files differ\n" + "\n".join(diffs)))


if __name__ == "__main__":
    main()
