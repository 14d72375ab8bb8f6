"""Hostile and faulty inputs, as files and command lines a user or an attacker hands to ``regtune``.

Each case is a function ``(folder, marker) -> (argv, outputs)``: it writes
what it needs into ``folder`` and returns the command line and the output
paths that must not exist afterwards. A payload that ran would create
``marker``. Shared by tests/gui/cli/test_hostile_inputs.py (which asserts exit
2, one line on stderr, no marker, no partial file) and
tests/bench/bench_hostile.py (which measures each case's time and memory).
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path

from engine.predict import planned_and_run
from tests.engine.rule_cases import REFUSED_LINES

EXAMPLE = str(files("resources") / "examples" / "gemm_m1n1k2.txt")

#: a plan the hostile plans start from: GEMM 2x2x2, k-outer, dsatur, as `regtune allocate` writes it
_GOOD: dict = {}


def good_plan() -> dict:
    """A valid plan's JSON object (built once)."""
    if not _GOOD:
        from engine.alloc import allocate
        from engine.planfile import plan_to_dict
        from engine.workloads.gemm import Gemm, build_gemm

        w = Gemm(2, 2, 2)
        program, options = build_gemm(w)
        _GOOD.update(plan_to_dict(planned_and_run(allocate("dsatur", program), workload=w.as_dict(), options=options)))
    return json.loads(json.dumps(_GOOD))


def _payload(marker) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


def _plan_case(mutate, command: str = "check"):
    """A case that writes a mutated plan and runs ``command`` (check, build or budget-sweep) on it."""

    def case(folder, marker):
        data = good_plan()
        mutate(data, marker)
        path = folder / "plan.json"
        path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
        out = folder / "out"
        argv = {"check": ["check", str(path)],
                "build": ["build", str(path), "--out-dir", str(out), "--arch", "sm_80", "--no-simulate"],
                "budget-sweep": ["budget-sweep", str(path), "--from", "200", "--to", "208"]}[command]
        return argv, [out / "report.json"]

    return case


def _program_text(data: dict, old: str, new: str) -> None:
    assert old in data["program"], old
    data["program"] = data["program"].replace(old, new, 1)


def _set(path: tuple, value):
    def mutate(data, marker):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value(marker) if callable(value) else value
    return mutate


# -- plans whose text would reach generated source ----------------------------------------------
CODE_PLANS = {
    "allocator closes the docstring": _set(("allocator",), lambda m: f'dsatur"""\n{_payload(m)}\n"""'),
    "allocator with a newline": _set(("allocator",), "dsatur\nimport os"),
    "allocator in full-width letters": _set(("allocator",), "\uff44\uff53\uff41\uff54\uff55\uff52"),
    "allocator with terminal escapes": _set(("allocator",), "\x1b[31mdsatur\x1b[0m"),
    "workload m as code": _set(("workload", "m"), lambda m: f"2 if {_payload(m)} else 2"),
    "workload m as a float": _set(("workload", "m"), 2.0),
    "workload m as true": _set(("workload", "m"), True),
    "workload m outside the space": _set(("workload", "m"), 10 ** 30),
    "workload of an unknown kind": _set(("workload", "kind"), "conv"),
    "workload with an extra field": _set(("workload", "note"), lambda m: _payload(m)),
    "mha workload with code": _set(("workload",), lambda m: {"kind": "mha", "heads": f"32);{_payload(m)}#",
                                                             "batch": 64, "head_dim": 64, "groups": 4}),
    "options threads as code": _set(("options", "threads_per_block"), lambda m: f"int({_payload(m)} or 4)"),
    "options tile as code": _set(("options", "tile"), lambda m: [f"2]*0+[{_payload(m)}", 2]),
    "options with an unknown key": _set(("options", "__class__"), 1),
    "options schedule unknown": _set(("options", "schedule"), "k-outer'); import os; ('"),
    "spill slot in the program as code": lambda d, m: _program_text(
        d, "  exit", f"  st.local 0;{_payload(m).replace(' ', '')}#, %acc_0_0\n  exit"),
    "immediate as code": lambda d, m: _program_text(
        d, "%col:i32 = mul %tj, 2", f"%col:i32 = mul %tj, 2;{_payload(m).replace(' ', '')}#"),
    "parameter in full-width letters": lambda d, m: _program_text(d, "param C", "param \uff43\uff55\uff44\uff41"),
    "parameter named __debug__": lambda d, m: _program_text(d, "param C", "param __debug__"),
    "parameter named cuda": lambda d, m: _program_text(d, "param C", "param cuda"),
    "parameter read at another type": lambda d, m: _program_text(d, "param alpha", "param A"),
    "kernel name closing a string": lambda d, m: _program_text(d, ".kernel gemm", '.kernel """gemm'),
    "value with a quote": lambda d, m: _program_text(d, "%acc_0_0:f32", "%acc'_0_0:f32"),
}

# -- instructions no kernel can hold (engine/ir/rules.py): refused while parsing, by every command -------------
def in_programs(line: str) -> str:
    """A line of tests/engine/rule_cases.py in the names of the example program and of :func:`good_plan`'s
    (both have %pc and %acc_0_0)."""
    return line.replace("%pa", "%pc").replace("%f", "%acc_0_0")


def with_line(text: str, line: str) -> str:
    """``text`` with ``line`` before its first exit."""
    assert "  exit\n" in text
    return text.replace("  exit\n", f"  {in_programs(line)}\n  exit\n", 1)


def _program_with(name: str):
    """``allocate`` on the example program file with the rule case ``name``'s line in it."""
    def case(folder, marker):
        path = folder / "program.txt"
        path.write_text(with_line(Path(EXAMPLE).read_text(encoding="utf-8"), REFUSED_LINES[name][0]))
        out = folder / "allocated.json"
        return ["allocate", str(path), "--allocator", "dsatur", "--out", str(out)], [out]
    return case


def _plan_with(name: str):
    def mutate(data, marker):
        data["program"] = with_line(data["program"], REFUSED_LINES[name][0])
    return mutate


# -- plans that would take the machine ----------------------------------------------------------
SIZE_PLANS = {
    "budget of 10^8": _set(("budget",), 10 ** 8),
    "budget of 0": _set(("budget",), 0),
    "budget as a string": _set(("budget",), "255"),
    "register R10000000": lambda d, m: d["assignment"].update(acc_0_0=[10_000_000]),
    "register R10^11": lambda d, m: d["assignment"].update(acc_0_0=[10 ** 11]),
    "spill slot 10^11": lambda d, m: d["spills"].update(acc_0_0=10 ** 11),
    "spill slot in the program 10^11": lambda d, m: _program_text(d, "  exit", "  st.local 100000000000, %acc_0_0\n  exit"),
    "instruction with 20,000 operands": lambda d, m: _program_text(
        d, "  exit", "  %w:f32 = add " + ", ".join(["%acc_0_0"] * 20_000) + "\n  exit"),
    "operand of one megabyte": lambda d, m: _program_text(d, "  exit", f"  %w:f32 = mov {'9' * 1_000_000}\n  exit"),
    "version true": _set(("version",), True),
    "version 1.0": _set(("version",), 1.0),
    "not a plan format": _set(("format",), "regtune-plan\n"),
    "measured as a list": lambda d, m: d.update(measured=json.loads("[" * 900 + "]" * 900)),
}


def _raw_plan(text: bytes):
    def case(folder, marker):
        path = folder / "plan.json"
        path.write_bytes(text)
        return ["check", str(path)], []
    return case


def _deep_json(folder, marker):
    path = folder / "plan.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return ["check", str(path)], []


def _fifo(folder, marker):
    path = folder / "fifo.json"
    os.mkfifo(path)                        # opened plainly, it would wait for a writer for ever
    return ["check", str(path)], []


def _key_twice(folder, marker):
    """The plan's JSON with a second register for %acc_0_0 (a JSON reader keeps the last and drops the first)."""
    text = json.dumps(good_plan()).replace('"acc_0_0": [', '"acc_0_0": [7], "acc_0_0": [', 1)
    path = folder / "plan.json"
    path.write_text(text)
    return ["check", str(path)], []


def _huge_file(folder, marker):
    path = folder / "plan.json"
    with open(path, "wb") as f:
        f.truncate(20 * 1024 * 1024)       # sparse: costs no disk, and the reader refuses it before reading
    return ["check", str(path)], []


def _too_many_instructions(folder, marker):
    path = folder / "big.txt"
    body = "".join(f"  %v{i}:f32 = mov {i}\n" for i in range(200_001))
    path.write_text(f".kernel big\n.block b\n{body}  exit\n")
    return ["analyze", str(path)], []


def _too_many_live(folder, marker):
    path = folder / "live.txt"
    loads = "".join(f"  %v{i}:f32 = ld.global %pa, {4 * i}\n" for i in range(2100))
    stores = "".join(f"  st.global %pa, {4 * i}, %v{i}\n" for i in range(2100))
    path.write_text(f".kernel live\n.block b\n  %pa:u64 = param A\n{loads}{stores}  exit\n")
    return ["analyze", str(path)], []


def _endless_loop(command: str):
    def case(folder, marker):
        data = good_plan()
        data["program"] = data["program"].replace("  exit", "  br spin_forever") + \
            ".block spin_forever\n  br spin_forever\n"
        path = folder / "plan.json"
        path.write_text(json.dumps(data))
        out = folder / "out"
        argv = ["check", str(path), "--time-limit", "2"] if command == "check" else \
            ["build", str(path), "--out-dir", str(out), "--time-limit", "2", "--no-simulate"]
        return argv, [out / "report.json"]
    return case


def _many_blocks(folder, marker):
    path = folder / "blocks.txt"
    path.write_text(".kernel k\n" + "".join(f".block b{i}\n" for i in range(200_000)) + "  exit\n")
    return ["analyze", str(path)], []


def _two_arrays_in_one_slot(command: str):
    """Pointers into A and B stored to one spill slot: the pointer analysis once flipped between them for ever."""
    def case(folder, marker):
        program = (".kernel k\n.block b\n  %pa:u64 = param A\n  %pb:u64 = param B\n  st.local 0, %pa\n"
                   "  st.local 0, %pb\n  %x:f32 = ld.global %pa, 0\n  st.global %pb, 0, %x\n  exit\n")
        data = {"format": "regtune-plan", "version": 1, "allocator": "linear-scan", "budget": 255,
                "program": program, "assignment": {"pa": [0, 1], "pb": [2, 3], "x": [0]}}
        path = folder / "plan.json"
        path.write_text(json.dumps(data))
        out = folder / "out"
        argv = ["check", str(path)] if command == "check" else ["build", str(path), "--out-dir", str(out)]
        return argv, [out / "report.json"]
    return case


FILE_CASES = {
    "a spill slot holding pointers into two arrays (check)": _two_arrays_in_one_slot("check"),
    "a spill slot holding pointers into two arrays (build)": _two_arrays_in_one_slot("build"),
    "200,000 empty blocks": _many_blocks,
    "not JSON": _raw_plan(b"{'format': 'regtune-plan'"),
    "not UTF-8": _raw_plan(b"\xff\xfe{}"),
    "JSON nested 100,000 deep": _deep_json,
    "a 20 MB plan file": _huge_file,
    "a directory as the plan": lambda folder, marker: (["check", str(folder)], []),
    "a device as the plan": lambda folder, marker: (["check", "/dev/zero"], []),
    "a named pipe as the plan": _fifo,
    "a key twice in the plan's JSON": _key_twice,
    "200,001 instructions": _too_many_instructions,
    "2,100 values live at once": _too_many_live,
    "an endless loop (check)": _endless_loop("check"),
    "an endless loop (build)": _endless_loop("build"),
}


def _args(*argv, outputs=()):
    return lambda folder, marker: ([a.format(folder=folder) for a in argv], [o.format(folder=folder) for o in outputs])


ARGUMENT_CASES = {
    "--tile with a superscript digit": _args("program", "gemm", "--m", "8", "--n", "8", "--k", "8", "--tile", "\u00b2x2"),
    "compare --allocators ,": _args("compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--allocators", ","),
    "--tile 0x4": _args("program", "gemm", "--m", "8", "--n", "8", "--k", "8", "--tile", "0x4"),
    "--out into a missing folder": _args("allocate", EXAMPLE, "--allocator", "dsatur", "--out",
                                         "{folder}/missing/plan.json", outputs=["{folder}/missing/plan.json"]),
    "--out into /proc": _args("allocate", EXAMPLE, "--allocator", "dsatur", "--out", "/proc/plan.json"),
    "--out onto a directory": _args("allocate", EXAMPLE, "--allocator", "dsatur", "--out", "{folder}"),
    "--out empty": _args("allocate", EXAMPLE, "--allocator", "dsatur", "--out", ""),
    "build --out-dir onto a file": _args("build", "{folder}/plan.json", "--out-dir", EXAMPLE),
    "build --out-dir under /proc": _args("build", "{folder}/plan.json", "--out-dir", "/proc/regtune-out"),
    "report --out into a missing folder": _args("report", "claims", "--out", "{folder}/missing/r.md",
                                                outputs=["{folder}/missing/r.md"]),
    "report --workers 0": _args("report", "claims", "--workers", "0", "--out", "{folder}/r.md",
                                outputs=["{folder}/r.md"]),
    "screenshot --gemm abc": _args("screenshot", "--gemm", "abc", "--out", "{folder}/s.png",
                                   outputs=["{folder}/s.png"]),
    "screenshot --gemm 8x8": _args("screenshot", "--gemm", "8x8", "--out", "{folder}/s.png",
                                   outputs=["{folder}/s.png"]),
    "--budget 100000000": _args("allocate", EXAMPLE, "--allocator", "linear-scan", "--budget", "100000000",
                                "--out", "{folder}/p.json", outputs=["{folder}/p.json"]),
    "--budget 0": _args("compare", "gemm", "--m", "2", "--n", "2", "--k", "2", "--budget", "0"),
    "budget-sweep --to 100000": _args("budget-sweep", "{folder}/plan.json", "--to", "100000"),
    "build --timeout 0": _args("build", "{folder}/plan.json", "--out-dir", "{folder}/o", "--timeout", "0"),
    "check --time-limit nan": _args("check", "{folder}/plan.json", "--time-limit", "nan"),
    "occupancy --regs 10^9": _args("occupancy", "--regs", "1000000000", "--threads", "128"),
}


def all_cases() -> dict:
    """Every case by name: plans for check and for build, plan files, command lines."""
    cases = {}
    for name, mutate in CODE_PLANS.items():
        cases[f"check: {name}"] = _plan_case(mutate, "check")
        cases[f"build: {name}"] = _plan_case(mutate, "build")
    cases["budget-sweep: allocator closes the docstring"] = _plan_case(CODE_PLANS["allocator closes the docstring"],
                                                                       "budget-sweep")
    for name, mutate in SIZE_PLANS.items():
        cases[f"check: {name}"] = _plan_case(mutate, "check")
    for name in REFUSED_LINES:
        cases[f"allocate: program with {name}"] = _program_with(name)
        cases[f"check: program with {name}"] = _plan_case(_plan_with(name), "check")
        cases[f"build: program with {name}"] = _plan_case(_plan_with(name), "build")
    cases.update(FILE_CASES)
    cases.update(ARGUMENT_CASES)
    return cases
