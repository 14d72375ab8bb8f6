"""Mutation testing of the checks themselves (STYLE 24): run mutmut, print the kill rate and the survivors.

Mutates the modules named in ``[tool.mutmut]`` of pyproject.toml (the two
interpreters, the allocation checker, liveness) and runs, for each mutant,
only the tests of the targeted selection there that reach the mutated
function. A mutant counts as killed when a test fails or times out.
Mutants judged equivalent (no test could tell them apart: the behaviour is
the same) are listed with their reason in ``tests/mutation_equivalent.txt``
and left out of the rate.

Run: ``python -m tests.mutation [--max-children N] [--report-only] [--retest-survivors] [PATTERN ...]`` (patterns of
mutant names, e.g. ``'engine.check.symbolic.*'``, to test some modules first); exits 1
below the target of 90 % of the non-equivalent mutants killed. Mutants and
their results are kept in ``mutants/`` (ignored by git), so a second run
only tests what changed. ``--report-only`` with no earlier run (no
``mutants/``, as in a fresh clone) says so and exits 2, as does a report
in which no mutant has been tested yet: there is no rate to compare.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

TARGET = 0.90
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
EQUIVALENT_FILE = Path(__file__).with_name("mutation_equivalent.txt")
#: where mutmut keeps the mutants and their results (relative to the folder it runs in: the repository root)
MUTANTS = Path("mutants")


def equivalent_mutants(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """Mutant name -> why it is equivalent, from lines ``NAME  # reason``."""
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        name, _, reason = line.partition("#")
        if name.strip():
            out[name.strip()] = reason.strip()
    return out


def forget_survivors(patterns=(), root: Path = Path("mutants")) -> int:
    """Clear the cached verdict of every surviving mutant, so the next run tests it against the tests as
    they are now (mutmut re-tests a mutant when its function changes, not when a test does); only those
    matching one of ``patterns`` where any are given; the count."""
    count = 0
    for meta in root.rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        survivors = [k for k, code in codes.items() if code in (0, 5, 33)
                     and (not patterns or any(fnmatch.fnmatch(k, p) for p in patterns))]
        for k in survivors:
            codes[k] = None
        if survivors:
            meta.write_text(json.dumps(data))
            count += len(survivors)
    return count


def results(mutmut: list[str]) -> dict[str, str]:
    """Mutant name -> status, from ``mutmut results --all true``."""
    text = subprocess.run(mutmut + ["results", "--all", "true"], check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            out[name] = status
    return out


def report(statuses: dict[str, str], equivalent: dict[str, str]) -> float | None:
    """Print counts per module, the kill rate over non-equivalent mutants and every survivor; the rate (None:
    no mutant tested, no rate)."""
    per_module = collections.defaultdict(collections.Counter)
    for name, status in statuses.items():
        module = name.split(".x")[0] if ".x" in name else name.rsplit(".", 1)[0]
        kind = ("not run" if status == "not checked" else "equivalent" if name in equivalent and status not in KILLED
                else "killed" if status in KILLED else "survived")
        per_module[module][kind] += 1
    for module, counts in sorted(per_module.items()):
        print(f"{module:28s} {counts['killed']:5d} killed {counts['survived']:4d} survived "
              f"{counts['equivalent']:4d} equivalent {counts['not run']:4d} not run yet")
    killed = sum(c["killed"] for c in per_module.values())
    counted = killed + sum(c["survived"] for c in per_module.values())
    if not counted:
        print("kill rate: no mutant has been tested yet (none killed, none survived): no rate to report")
        return None
    rate = killed / counted
    print(f"kill rate: {killed}/{counted} non-equivalent mutants = {100 * rate:.1f}% (target {100 * TARGET:.0f}%)")
    for name, status in sorted(statuses.items()):
        if status not in KILLED and name not in equivalent and status != "not checked":
            print(f"  survivor: {name} ({status})")
    return rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--report-only", action="store_true", help="report the last run's results")
    parser.add_argument("--retest-survivors", action="store_true",
                        help="test the last run's survivors again (after strengthening the tests)")
    parser.add_argument("patterns", nargs="*", help="test only the mutants whose names match (fnmatch)")
    args = parser.parse_args(argv)
    mutmut = [sys.executable, "-m", "mutmut"]
    if args.retest_survivors:
        print(f"{forget_survivors(args.patterns)} surviving mutants to test again")
    if args.report_only and not MUTANTS.is_dir():
        print(f"tests.mutation: no earlier run to report: {MUTANTS.resolve()} does not exist (run "
              "'python -m tests.mutation' from the repository root first; it keeps its results there)",
              file=sys.stderr)
        return 2
    if not args.report_only:
        env = {**os.environ, "REGTUNE_MUTATION": "1"}
        subprocess.run(mutmut + ["run", "--max-children", str(args.max_children), *args.patterns], check=False, env=env)
    rate = report(results(mutmut), equivalent_mutants())
    if rate is None:
        return 2
    return 0 if rate >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
