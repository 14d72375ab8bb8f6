"""Kernels built from plans: the schedule reaches the PTX, planned spills survive NVVM, the source runs alone."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from collections import Counter
from importlib.resources import files

import pytest

from engine.alloc import ALLOCATORS, allocate
from engine.alloc.hand import Move, apply_edit
from engine.ir.core import Block, Imm, replace_blocks
from engine.ir.parser import parse
from engine.ir.rules import shape_of
from engine.plan import Plan, registers_used
from engine.planfile import plan_from_dict, plan_to_dict
from kernels.build import build_plan, compile_ptx
from kernels.codegen import KernelError, kernel_source
from kernels.run import simulate
from kernels.sass_lines import PTX_GLOBAL_LOADS, ptx_ir_lines, ptx_ir_of
from kernels.toolchain import ToolchainError
from kernels.worker import compile_ptx_here
from tests.bench.bench_load_order import ahead
from tests.engine.rule_cases import ACCEPTED_LINES, RULES_BASE
from tests.kernels.conftest import gemm_plan, mha_plan

_LOAD = re.compile(r"ld\.global\.f32\s+%f\d+, \[(%rd\d+)(?:\+(-?\d+))?\]")


def _groups(program) -> dict:
    """Each planned global load's (pointer, byte offset) -> index of its run of loads between computations."""
    group, out, in_run = -1, {}, False
    for ins in program.instructions:
        if ins.opcode == "ld.global":
            if not in_run:
                group += 1
            out[(ins.operands[0].name, int(ins.operands[1].text))] = group
            in_run = True
        elif ins.defs:
            in_run = False
    return out


def _ptx_groups(plan, ptx) -> list[int]:
    """The planned group of each PTX load, in PTX order (base registers matched by their offsets)."""
    planned = _groups(plan.program)
    loads = [(m.group(1), int(m.group(2) or 0)) for m in _LOAD.finditer(ptx)]
    names = {}
    for reg in {r for r, _ in loads}:
        offsets = Counter(o for r, o in loads if r == reg)
        names[reg] = next(p for p in {p for p, _ in planned}
                          if Counter(o for q, o in planned if q == p) == offsets)
    return [planned[(names[r], o)] for r, o in loads]


def _load_order(build) -> list:
    """The plan's IR instruction of each global load of ``build``'s PTX, in PTX order (from its line info)."""
    return ptx_ir_of(build.ptx_lines, PTX_GLOBAL_LOADS, build.source.ir_of_line())


def _planned_loads(plan) -> list:
    return [i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "ld.global"]


def _waiting(plan, build=None) -> int:
    """The most loaded values waiting for their first use at once: in the plan's order, or in ``build``'s PTX."""
    code = plan.program.instructions
    if build is None:
        return ahead([(i, True) for i in range(len(code))], code)
    lines = ptx_ir_lines(build.ptx_lines, build.source.ir_of_line())
    return ahead([(ir, text.startswith(PTX_GLOBAL_LOADS)) for ir, text in lines], code)


@pytest.mark.parametrize("schedule", ["k-outer", "load-all-first"])
def test_ptx_global_loads_follow_the_plans_order(schedule):
    plan = gemm_plan(8, 8, 8, tile=(4, 4), schedule=schedule)
    build = build_plan(plan, ("sm_80",))
    assert build.source.load_order == "barrier" and build.source.load_barriers > 0
    assert _load_order(build) == _planned_loads(plan)
    assert _waiting(plan, build) == _waiting(plan)           # as far ahead of their uses as the plan put them
    order = _ptx_groups(plan, build.ptx)           # the same read from the PTX's addresses, without line info
    assert order == sorted(order) and set(order) == set(_groups(plan.program).values())


@pytest.mark.parametrize("load_order", ["fence", "volatile"])
def test_the_other_load_orders_keep_the_plans_order_too(load_order):
    plan = gemm_plan(8, 8, 8, tile=(4, 4), schedule="load-all-first")
    build = build_plan(plan, ("sm_80",), load_order=load_order)
    assert _load_order(build) == _planned_loads(plan)
    if load_order == "fence":
        assert build.ptx_count("membar.cta") == build.source.load_barriers > 0
    else:
        assert build.ptx_count("ld.volatile.global.f32") == len(_planned_loads(plan)) and build.ptx_count("membar") == 0


def test_left_to_nvvm_a_load_all_first_plan_loads_at_first_use():
    """The measured reason for the barrier: without it NVVM sinks each load to its first use."""
    plan = gemm_plan(8, 8, 8, tile=(4, 4), schedule="load-all-first")
    build = build_plan(plan, ("sm_80",), load_order="nvvm")
    assert build.source.load_barriers == 0
    order = _load_order(build)
    assert sorted(order) == _planned_loads(plan) and order != _planned_loads(plan)
    # the plan has its 64 A and B values waiting for their FMAs at once; NVVM's PTX loads each just before its use
    assert _waiting(plan) == 64 and _waiting(plan, build) <= 4


def _offsets(pattern, ptx) -> list[int]:
    return [int(m.group(2) or 0) for m in pattern.finditer(ptx)]


_STORE = re.compile(r"st\.global\.f32\s+\[(%rd\d+)(?:\+(-?\d+))?\]")


def test_a_schedule_edit_of_a_store_reaches_the_ptx():
    plan = gemm_plan(8, 8, 8, tile=(4, 4), schedule="k-outer")
    stores = [i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "st.global"]
    edited = apply_edit(plan, Move(stores[-1], stores[0]))
    # the kept assignment may now conflict (the model's business); the kernel realizes the new order anyway
    assert edited.rejected is None
    assert _offsets(_STORE, build_plan(plan, ("sm_80",)).ptx)[:2] == [0, 4]
    assert _offsets(_STORE, build_plan(edited.plan, ("sm_80",)).ptx)[:2] == [108, 0]


def test_a_schedule_edit_hoisting_a_load_reaches_the_ptx():
    plan = gemm_plan(8, 8, 8, tile=(4, 4), schedule="k-outer")
    instructions = plan.program.instructions
    b73 = next(i for i, ins in enumerate(instructions) if str(ins).startswith("%b_7_3"))
    first_load = min(i for i, ins in enumerate(instructions) if ins.opcode == "ld.global")
    edited = apply_edit(plan, Move(b73, first_load))
    assert edited.rejected is None
    # b_7_3 is byte 4*(7*8+3) = 236 of B, in the last k step's 8 loads (56..63) as planned, first once hoisted
    assert _offsets(_LOAD, build_plan(plan, ("sm_80",)).ptx).index(236) >= 56
    moved = build_plan(edited.plan, ("sm_80",))
    assert _offsets(_LOAD, moved.ptx).index(236) == 0
    assert _load_order(moved) == _planned_loads(edited.plan)
    # left to NVVM, the hoisted load goes back to its first use
    assert _offsets(_LOAD, build_plan(edited.plan, ("sm_80",), load_order="nvvm").ptx).index(236) >= 56


def test_planned_spills_survive_nvvm_as_local_memory():
    plan = gemm_plan(8, 8, 8, "chaitin-briggs", budget=40, tile=(4, 4), schedule="load-all-first")
    assert plan.spills
    build = build_plan(plan, ("sm_80",))
    assert build.source.spill_stores == sum(1 for i in plan.program.instructions if i.opcode == "st.local")
    assert build.ptx_count("st.local") >= build.source.spill_stores
    assert 0 < build.ptx_count("ld.local") <= build.source.spill_loads
    report = build.archs["sm_80"].report
    assert report.stack_frame_bytes >= 4 * len(set(plan.spills.values()))
    # every planned store reaches the SASS, though ptxas may merge neighbouring ones (STL.64, STL.128: measured,
    # the 40 stores of this plan as 20 STL.128 with ptxas 13)
    stl = [op for op in build.archs["sm_80"].sass.opcodes() if op.startswith("STL")]
    assert sum({"STL.64": 2, "STL.128": 4}.get(op, 1) for op in stl) >= build.source.spill_stores
    compiler = build_plan(plan, ("sm_80",), spills="compiler")
    assert compiler.ptx_count("st.local") == 0 and compiler.archs["sm_80"].report.stack_frame_bytes == 0


def test_the_plan_cap_is_the_plans_register_count_not_its_budget():
    plan = gemm_plan(8, 8, 8, "dsatur", budget=64, tile=(4, 4))
    build = build_plan(plan, ("sm_80", "sm_90"))
    count = registers_used(plan.assignment)
    assert 24 <= count < 64 == plan.budget
    for arch, b in build.archs.items():
        assert b.report.max_registers == count and b.report.registers <= count
        assert b.report.flags == (f"-arch={arch}", "-v", f"-maxrregcount={count}")
        assert b.compiler.max_registers is None and b.compiler.flags == (f"-arch={arch}", "-v")
    assert "MAX_REGISTERS = 64" in build.source.text


def test_generated_source_runs_on_its_own_in_the_simulator(tmp_path):
    source = kernel_source(gemm_plan(3, 5, 4, "naive", budget=24, tile=(1, 5)))
    path = tmp_path / "kernel.py"
    path.write_text(source.text)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "within tolerance" in done.stdout


@pytest.mark.parametrize("which", ["gemm 2x2x2", "program file"])
def test_without_a_gpu_the_module_says_in_one_line_to_use_the_simulator(tmp_path, which):
    """``python kernel.py`` where no CUDA device is (this machine): one line naming NUMBA_ENABLE_CUDASIM, exit 1,
    instead of numba's CudaSupportError traceback; the GEMM and the program-file entry points alike."""
    from engine.alloc import allocate
    from engine.predict import planned_and_run
    from engine.workloads.program import read

    if which == "gemm 2x2x2":
        plan = gemm_plan(2, 2, 2, "dsatur")
    else:
        program, config = read(str(files("resources") / "examples" / "gemm_m1n1k2.txt"))
        plan = planned_and_run(allocate("dsatur", program), workload={"kind": "program", "name": config.name})
    path = tmp_path / "kernel.py"
    path.write_text(kernel_source(plan).text)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "PYTHONPATH")}
    done = subprocess.run([sys.executable, "kernel.py"], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    if done.returncode == 0:
        pytest.skip(f"a CUDA device ran it here: {done.stdout.strip()[:200]}")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("kernel.py: no CUDA GPU here; to run the kernel in numba's CUDA simulator instead, set "
                           "NUMBA_ENABLE_CUDASIM=1 (NUMBA_ENABLE_CUDASIM=1 python kernel.py)\n")


def test_numba_fix_computes_what_numba_cuda_computes(monkeypatch):
    from numba.cuda import lowering

    from kernels import numba_fix

    numba_fix.apply()
    original, linear = numba_fix.original_method(), numba_fix.linear_find_singly_assigned_variable
    compared = []

    def both(self):
        original(self)
        expected = set(self._singly_assigned_vars)
        linear(self)
        assert self._singly_assigned_vars == expected
        compared.append(len(expected))

    monkeypatch.setattr(lowering.Lower, "_find_singly_assigned_variable", both)
    source = kernel_source(gemm_plan(4, 4, 4, "chaitin-briggs", budget=24, tile=(2, 2)))
    compile_ptx_here(source.text, source.name, source.signature)
    assert compared and compared[0] > 50


def test_unstructured_control_flow_and_unknown_opcodes_are_refused_by_name():
    text = (".kernel k\n.block a\n  %p:pred = setp.lt 1, 2\n  cbr %p, c, b\n.block b\n  br d\n.block c\n"
            "  br b\n.block d\n  exit\n")
    program = parse(text)
    with pytest.raises(KernelError, match="block"):
        kernel_source(Plan(program, {}, {}, 8, "hand"))
    program = parse(".kernel k\n.block a\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n"
                    "  %y:f32 = tanh.approx %x\n  st.global %pa, 0, %y\n  exit\n")
    with pytest.raises(KernelError, match=r"instruction 2 \(%y:f32 = tanh.approx %x\): opcode tanh.approx has no CUDA lowering"):
        kernel_source(Plan(program, {"pa": (0, 1), "x": (2,), "y": (2,)}, {}, 8, "hand"))


@pytest.mark.slow
@pytest.mark.parametrize("strategies", [(), ("fp16-softmax",)])
def test_mha_kernels_compile_for_sm80_and_sm90(strategies):
    plan = mha_plan(strategies=strategies)
    build = build_plan(plan, ("sm_80", "sm_90"))
    for arch, b in build.archs.items():
        assert 24 <= b.report.registers <= 255
        assert b.sass.maxlive <= b.report.registers
        # ptxas for sm_90 was seen to duplicate the loop body (512 SHFL): a multiple of the 256 in the PTX
        assert b.sass.mix()["shuffles"] % 256 == 0 and b.sass.mix()["shuffles"] >= 256
    assert build.ptx_count("shfl.sync.bfly") == 256


def test_values_crossing_blocks_go_through_a_carry_array_and_guarded_definitions_keep_the_old_value():
    text = (".kernel k\n.block a\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n  %p:pred = setp.lt %x, 0\n"
            "  %x:f32 = @%p mul %x, -1\n  %i:i32 = mov 0\n.block loop\n  %x:f32 = add %x, %x\n  %i:i32 = add %i, 1\n"
            "  %more:pred = setp.lt %i, 3\n  cbr %more, loop, done\n.block done\n  st.global %pa, 0, %x\n  exit\n")
    program = parse(text)
    source = kernel_source(Plan(program, {"pa": (0, 1), "x": (2,), "i": (3,)}, {}, 8, "hand"))
    body = source.text[source.text.index("def k("):]
    assert "carry_f32 = cuda.local.array(1, float32)" in body and "carry_i32 = cuda.local.array(1, int32)" in body
    assert "    else:\n" in body                     # the guarded x keeps its old value when p is false
    assert "while True:" in body and "if not more:" in body
    ptx = compile_ptx(source)
    assert "st.local" not in ptx and "ld.local" not in ptx      # SROA turned the carry cells into registers


def test_compiler_spill_variables_never_take_a_value_s_name():
    """With spills="compiler" a slot becomes a variable ``slot_N_T``; a value of that name keeps its own."""
    program = parse(".kernel k\n.block b\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n"
                    "  %slot_0_f32:f32 = ld.global %pa, 4\n  st.local 0, %x\n  %y:f32 = ld.local 0\n"
                    "  %z:f32 = add %y, %slot_0_f32\n  st.global %pa, 8, %z\n  exit\n")
    plan = Plan(program, {"pa": (0, 1), "x": (2,), "slot_0_f32": (3,), "y": (2,), "z": (2,)}, {}, 255, "hand")
    body = kernel_source(plan, spills="compiler").body
    assert "slot_0_f32 = A[pa + uint64(1)]" in body
    assert "v_slot_0_f32 = x" in body and "y = v_slot_0_f32" in body and "z = y + slot_0_f32" in body


def test_an_array_parameters_value_named_like_the_array_does_not_shadow_it():
    program = parse(".kernel k\n.block entry\n  %A:u64 = param A\n  %C:u64 = param C\n  %x:f32 = ld.global %A, 4\n"
                    "  st.global %C, 0, %x\n  exit\n")
    body = kernel_source(Plan(program, {"A": (0, 1), "C": (2, 3), "x": (4,)}, {}, 8, "hand")).body
    assert body.startswith("def k(A, C, spill_zero):")
    assert "v_A = uint64(0)" in body and "x = A[v_A + uint64(1)]" in body and "C[v_C] = x" in body
    assert "\n    A = " not in body


def test_each_run_of_loads_stands_between_two_barriers():
    program = parse(".kernel k\n.block entry\n  %A:u64 = param A\n  %C:u64 = param C\n  %i:i32 = sreg.tid.x\n"
                    "  %x:f32 = ld.global %A, 4\n  %y:f32 = ld.global %A, 8\n  %z:f32 = add %x, %y\n"
                    "  %w:f32 = ld.global %A, 12\n  st.global %C, 0, %z\n  st.global %C, 4, %w\n  exit\n")
    plan = Plan(program, {}, {}, 255, "hand")
    lines = [line.strip() for line in kernel_source(plan).body.splitlines()]
    loads = [n for n, line in enumerate(lines) if "= A[" in line]
    assert [lines[n] for n in (loads[0] - 1, loads[1] + 1, loads[2] - 1, loads[2] + 1)] == ["order_loads()"] * 4
    assert lines.count("order_loads()") == 4 == kernel_source(plan).load_barriers
    fenced = kernel_source(plan, load_order="fence").body
    assert fenced.count("cuda.threadfence_block()") == 4 and "order_loads" not in fenced
    assert kernel_source(plan, load_order="volatile").body.count("load_volatile(A, ") == 3
    assert "order_loads" not in kernel_source(plan, load_order="nvvm").body
    with pytest.raises(KernelError, match="unknown load order 'sometimes'"):
        kernel_source(plan, load_order="sometimes")


def _rules_plan(lines: list[str]) -> Plan:
    """A plan (linear scan) of :data:`RULES_BASE` holding ``lines``, each result renamed apart (line k's ``%x``
    becomes ``%x_k``) so that every line may define what another defines."""
    renamed = [re.sub(r"%(\w+):", lambda m: f"%{m.group(1)}_{k}:", line) for k, line in enumerate(lines)]
    program = parse(RULES_BASE.format(line="\n".join(f"  {line}" for line in renamed)))
    return allocate("linear-scan", program, 255).plan()


def _opaque(line: str) -> bool:
    words = line.split("=")[-1].split()
    return shape_of(words[1] if words[0].startswith("@") else words[0]) is None


def test_a_kernel_module_is_written_from_every_line_the_parser_takes_and_an_opaque_opcode_is_named():
    for line in ACCEPTED_LINES:
        plan = _rules_plan([line])
        if _opaque(line):
            with pytest.raises(KernelError, match=r"instruction 6 \(.*\): opcode \S+ has no CUDA lowering"):
                kernel_source(plan)
        else:
            compile(kernel_source(plan).text, line, "exec")


#: the ends of every range the parser takes, in each place a kernel reads an immediate (numba types every
#: statement, used or not: its typing is what refuses a number past 64 bits)
EXTREMES = ["%a:i32 = mov 4294967295", "%b:i32 = add %i, -2147483648", "%c:i32 = fma %i, 4294967295, -2147483648",
            "%d:i32 = div.u32 %i, 4294967295", "%e:f32 = mul %f, 18446744073709551615",
            "%g:f32 = mul %f, -9223372036854775808", "%k:f32 = mul %f, 1e999", "%p:pred = setp.lt %i, 4294967295",
            "%u:u64 = add %pa, 18446744073709551612", "%w:u64 = add %pa, -9223372036854775808",
            "%o:u64 = mul.wide.s32 %i, -4", "st.global %pa, 18446744073709551612, %f",
            "st.global %pa, -9223372036854775808, -1e999"]


@pytest.mark.slow
def test_nvvm_compiles_the_ends_of_every_range_the_parser_takes_and_not_one_past_64_bits():
    source = kernel_source(_rules_plan([line for line in ACCEPTED_LINES if not _opaque(line)] + EXTREMES))
    assert ".entry" in compile_ptx_here(source.text, source.name, source.signature)
    program = parse(".kernel k\n.block entry\n  %pa:u64 = param A\n  %j:i32 = mov 1\n  st.global %pa, 0, %j\n  exit\n")
    block = program.blocks[0]
    past = dataclasses.replace(block.instructions[1], operands=(Imm(str(2 ** 64)),))   # the parser refuses it
    plan = Plan(replace_blocks(program, [Block("entry", (block.instructions[0], past, *block.instructions[2:]))]),
                {"pa": (0, 1), "j": (2,)}, {}, 255, "hand")
    source = kernel_source(plan)
    with pytest.raises(ToolchainError, match="NVVM/numba could not compile"):
        compile_ptx_here(source.text, source.name, source.signature)


def _programs_to_round_trip() -> dict:
    """The example program files and a few GEMM and MHA programs (schedules and strategies apart)."""
    from importlib.resources import files

    from engine.workloads.gemm import Gemm, build_gemm
    from engine.workloads.mha import Mha, build_mha
    from engine.workloads.program import read

    examples = {p.name: read(str(p))[0] for p in sorted(files("resources").joinpath("examples").iterdir())
                if p.name.endswith(".txt")}
    return {**examples, "gemm 2x2x2": build_gemm(Gemm(2, 2, 2))[0],
            "gemm 4x4x4 load-all-first": build_gemm(Gemm(4, 4, 4), schedule="load-all-first")[0],
            "gemm 3x5x7 dot": build_gemm(Gemm(3, 5, 7), schedule="dot")[0],
            "mha 16/1/32/1": build_mha(Mha(16, 1, 32, 1))[0],
            "mha 16/1/32/2 fp16-softmax": build_mha(Mha(16, 1, 32, 2), ("fp16-softmax",))[0]}


@pytest.mark.parametrize("budget", [255, 40, 24])
def test_every_allocators_plan_of_the_examples_and_workloads_loads_and_gets_a_kernel_module(budget):
    """One validator: what the parser takes (the example files, the workloads' programs), every allocator's plan
    of it (spill code included) as the loader reads it back, and a kernel module written from that plan."""
    programs = _programs_to_round_trip()
    assert len(programs) >= 7
    spilled = 0
    for name, program in programs.items():
        assert parse(str(program), name) == program
        for allocator in sorted(ALLOCATORS):
            plan = allocate(allocator, program, budget).plan()
            loaded = plan_from_dict(plan_to_dict(plan), f"{name} {allocator}")
            assert loaded == plan
            source = kernel_source(loaded)
            assert source.spill_stores == sum(i.opcode == "st.local" for i in plan.program.instructions)
            compile(source.text, f"{name} {allocator}", "exec")
            spilled += bool(plan.spills)
    assert spilled or budget == 255


def test_a_spilled_f16_pair_is_two_halves_of_its_slot_and_compiles():
    """An allocator spills f16x2 values (MHA's fp16-softmax at budget 40): a pair is two float16 cells, not a tuple
    in a float32 array, which NVVM refused."""
    from engine.alloc.hand import Spill

    program = parse(".kernel k\n.block entry\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n"
                    "  %h:f16x2 = cvt.rn.f16x2.f32 %x, %x\n  %y:f32 = ld.global %pa, 4\n"
                    "  %lo:f32 = cvt.f32.f16.lo %h\n  %z:f32 = add %lo, %y\n  st.global %pa, 8, %z\n  exit\n")
    plan = apply_edit(allocate("linear-scan", program, 255).plan(workload={"kind": "program", "name": "k"}),
                      Spill("h", 3)).plan
    source = kernel_source(plan)
    assert "spill_f16[6], spill_f16[7] = h" in source.text
    assert "(spill_f16[6 + spill_zero], spill_f16[7 + spill_zero])" in source.text
    assert "spill_f16 = cuda.local.array(8, float16)" in source.text
    assert ".local" in compile_ptx_here(source.text, source.name, source.signature)
    compiler = kernel_source(plan, spills="compiler")
    assert "spill_f16" not in compiler.text
    compile_ptx_here(compiler.text, compiler.name, compiler.signature)
    check = simulate(plan)        # the spilled pair against the kernel without spill code, bit for bit
    assert check.ok and "all 196,608 array elements equal bit for bit" in check.spill_code, check
