"""Plans made from program files, end to end: the README's IR example built and checked in numba's simulator,
its exported kernel run on its own, and broken spill code caught by the comparison with compiler spills."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

from engine.alloc.hand import Spill, apply_edit
from engine.check.symbolic import check_allocation
from engine.ir.core import Imm, Instruction, replace_blocks
from engine.ir.parser import parse
from engine.plan import Plan
from engine.planfile import load_plan
from kernels import codegen
from kernels.codegen import kernel_source, without_spill_code
from kernels.harness import HARNESSES, MARKER
from kernels.harness import program as program_harness
from kernels.measurement import SimulatorCheck
from kernels.run import simulate
from kernels.templates import template_text
from tests.kernels.conftest import gemm_plan

ROOT = Path(__file__).resolve().parents[2]
#: the README's own example: ``regtune allocate resources/examples/gemm_m1n1k2_loop.txt --allocator naive --budget 6``
EXAMPLE = str(files("resources") / "examples" / "gemm_m1n1k2_loop.txt")
EQUAL = re.compile(r"plan's spill code vs compiler spills \(the program without it\), 3 runs on the same seeded "
                   r"inputs: all ([\d,]+) array elements equal bit for bit; the kernels changed ([\d,]+) of "
                   r"them \(what they wrote, less any element written with the value it held\), the other "
                   r"([\d,]+) are the inputs as they were")


def _example_plan(tmp_path) -> Path:
    """The README's example as ``regtune allocate ... --allocator naive --budget 6`` writes it (the engine's
    path; tests/gui/cli/test_cli_program_plans.py runs the command itself)."""
    from engine.alloc import allocate
    from engine.planfile import write_plan
    from engine.predict import planned_and_run
    from engine.workloads import workload_named
    from engine.workloads.program import read

    program, config = read(EXAMPLE)
    plan = planned_and_run(allocate("naive", program, 6), workload=workload_named("program").to_dict(config),
                           options={})
    return write_plan(plan, tmp_path / "plan.json")


def _broken(plan: Plan) -> tuple[Plan, int]:
    """``plan`` with its first f32 reload pointed at the slot of another f32 value stored before it."""
    code = plan.program.instructions
    types = {v: plan.program.values[v].type for v in plan.spills}
    stored: list[tuple[str, int]] = []
    for at, ins in enumerate(code):
        if ins.opcode == "st.local":
            stored.append((ins.operands[1].name.split(".")[0], int(ins.operands[0].text)))
        if ins.opcode == "ld.local" and ins.defs[0].type == "f32":
            own = ins.defs[0].name.split(".")[0]
            other = next((slot for v, slot in stored if v != own and types.get(v) == "f32"), None)
            if other is not None:
                wrong = dataclasses.replace(ins, operands=(Imm(str(other)),))
                return plan.with_(program=_replace(plan.program, at, wrong)), at
    raise AssertionError("no f32 reload after another f32 value's store")


def _replace(program, at: int, new: Instruction):
    blocks, k = [], 0
    for b in program.blocks:
        body = list(b.instructions)
        for i in range(len(body)):
            if k == at:
                body[i] = new
            k += 1
        blocks.append(type(b)(b.name, tuple(body)))
    return replace_blocks(program, blocks)


def test_a_reload_from_the_wrong_slot_is_caught_by_the_comparison_with_compiler_spills(tmp_path):
    plan = load_plan(str(_example_plan(tmp_path)))
    broken, at = _broken(plan)
    # the static check refuses it, so it never comes from a file: the test hands it to the kernels directly
    assert any(e.instruction == at for e in check_allocation(broken.program, broken.assignment, broken.spills))
    # the program without spill code is the same as the correct plan's: the stray reload is spill code too
    assert without_spill_code(broken).program == without_spill_code(plan).program
    result = simulate(broken)
    assert isinstance(result, SimulatorCheck), result
    assert result.ok is False and result.reference is None
    assert re.search(r"3 runs on the same seeded inputs: [\d,]+ of [\d,]+ array elements differ \(first C\[0\]: ",
                     result.spill_code), result.spill_code
    assert str(result).startswith("MISMATCH: plan's spill code vs compiler spills")
    assert simulate(plan).ok is True                   # the plan before the edit passes the same comparison
    done = _run_module(kernel_source(broken).text, tmp_path)    # and the exported module says so too
    assert done.returncode == 1 and " array elements differ (first C[0]: " in done.stdout, done.stdout + done.stderr


def _run_module(text: str, tmp_path):
    """``python kernel.py`` of a kernel module in numba's simulator, without RegTune on the path."""
    path = tmp_path / "kernel.py"
    path.write_text(text)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path, check=False)


def test_a_gemm_plan_is_checked_against_numpy_and_against_compiler_spills():
    plan = gemm_plan(3, 3, 4, "chaitin-briggs", tile=(3, 3))
    spilled = apply_edit(plan, Spill("a_1_3")).plan
    assert spilled.spills
    result = simulate(spilled)
    assert result.ok is True and result.runs == 2, result
    assert result.reference.startswith("numpy float64 reference on 2 runs: max abs error ")
    assert result.reference.endswith("within its tolerance")
    assert re.fullmatch(r"plan's spill code vs compiler spills \(the program without it\), 2 runs on the same "
                        r"seeded inputs: all [\d,]+ array elements equal bit for bit; the kernels changed [\d,]+ of "
                        r"them \(what they wrote, less any element written with the value it held\), the other "
                        r"[\d,]+ are the inputs as they were", result.spill_code), result.spill_code
    assert str(result) == f"ok: {result.reference}; {result.spill_code}; covered: {result.scope}"
    assert "taken both ways" in result.scope


def test_a_plan_without_spill_code_says_nothing_was_compared_with_compiler_spills(tmp_path):
    program = parse(Path(EXAMPLE).read_text(), EXAMPLE)
    source = kernel_source(Plan(program, {}, {}, 255, "hand"))
    assert "def gemm_m1n1k2_without_spill_code(" in source.text and 'if __name__ == "__main__":' in source.text
    done = _run_module(source.text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ("gemm_m1n1k2 (numba's simulator): ran on 3 seeded inputs (seeds 0..2); the plan "
                                   "has no spill code and a program file no numpy reference, so nothing was compared")
    check = SimulatorCheck(True, 0.0, 0.0, 3, 1.0,
                           spill_code="no spill code in the plan: nothing to compare with compiler spills")
    assert str(check) == ("ran, nothing compared: no numpy reference (a program file) and no spill code in the "
                          "plan: nothing to compare with compiler spills")


def test_gemm_modules_keep_the_numpy_main():
    source = kernel_source(gemm_plan(2, 2, 2))
    assert "_without_spill_code" not in source.text and "def check(inputs, output, matrices=None):" in source.text
    assert template_text("main").replace("KERNEL_FUNCTION", source.name) in source.text


def test_the_program_template_and_harness_are_embedded_as_their_files():
    assert codegen._MAIN_PROGRAM.format(name="k", reference="k_plain") == \
        template_text("main_program").replace("KERNEL_FUNCTION", "k").replace("REFERENCE_FUNCTION", "k_plain")
    text = Path(program_harness.__file__).read_text()
    assert HARNESSES["program"].text.strip() == text.split(MARKER)[1].strip()
    assert HARNESSES["program"].main == "main_program" and HARNESSES["gemm"].main == "main"
    assert {"reference_kernel", "compare_outputs", "SPILL_INSTRUCTIONS"} <= codegen._MODULE_NAMES


def test_a_program_named_like_the_module_s_own_names_gets_two_distinct_safe_kernel_functions():
    import ast

    text = Path(EXAMPLE).read_text().replace(".kernel gemm_m1n1k2", ".kernel reference_kernel")
    plan = Plan(parse(text, "tricky"), {}, {}, 255, "hand")
    source = kernel_source(plan)
    functions = [f.name for f in ast.parse(source.text).body if isinstance(f, ast.FunctionDef)]
    assert source.name == "v_reference_kernel" and functions.count("reference_kernel") == 1
    assert "reference_kernel_without_spill_code" in functions and len(set(functions)) == len(functions)
