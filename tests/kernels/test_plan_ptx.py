"""The plan's own PTX (kernels/plan_ptx.py), with the real ptxas and nvdisasm from NVIDIA's wheels: ptxas accepts
it for every allocator on a sample of GEMM and MHA configs and the program-file examples, each PTX line maps back
to the IR instruction that wrote it, each IR opcode's PTX computes what the interpreter computes, and its ptxas
figures stand beside the Numba kernel's."""

from __future__ import annotations

import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files

import pytest

from engine.ir.spill import has_spill_code, spill_code_of
from engine.alloc import ALLOCATORS, allocate
from engine.check.interp import run
from engine.ir.core import Block, Imm, Instruction, Program, Use, Value
from engine.ir.parser import parse
from engine.plan import Plan, registers_used
from engine.workloads.gemm import Gemm, build_gemm, gemm_configs
from engine.workloads.mha import Mha, build_mha, mha_configs
from engine.workloads.program import read
from kernels.codegen import kernel_source
from kernels.measurement import PlanPtxFigures
from kernels.plan_ptx import (
    PTX_TABLE,
    PlanPtxError,
    SpillFrame,
    plan_ptx,
    plan_ptx_figures,
)
from kernels.toolchain import ToolchainError, ptxas

ALLOCATOR_NAMES = sorted(ALLOCATORS)
EXAMPLES = sorted(p for p in files("resources").joinpath("examples").iterdir() if p.name.endswith(".txt"))
#: IR instructions that write no PTX line (none: every one writes at least one)
EMIT_NOTHING: frozenset = frozenset()
_IR_COMMENT = re.compile(r"\t// ir (\d+)$")


def plans_of(program, workload=None, options=None, budget=255) -> list[Plan]:
    """The plan of every allocator (no figures: the PTX needs none)."""
    return [allocate(name, program, budget).plan(workload=workload or {}, options=options or {})
            for name in ALLOCATOR_NAMES]


def gemm_plans(w: Gemm, budget=255, tile=None) -> list[Plan]:
    program, options = build_gemm(w, tile)
    return plans_of(program, w.as_dict(), options, budget)


def mha_plans(w: Mha, strategies=(), budget=255, projection=False) -> list[Plan]:
    program, options = build_mha(w, strategies, projection=projection)
    return plans_of(program, w.as_dict(), options, budget)


def example_plans() -> list[Plan]:
    out = []
    for path in EXAMPLES:
        program, config = read(str(path))
        for budget in (255, 6):        # 6: the README's spilling budget
            out += plans_of(program, {"kind": "program", "name": config.name}, {}, budget)
    return out


def accepted(plan: Plan, spills: str = "volatile") -> tuple[str, int]:
    """ptxas (sm_80, no cap) on the plan's PTX: the plan's name and ptxas's registers; a refusal fails the test
    with the plan named."""
    try:
        report, _ = ptxas(plan_ptx(plan, "sm_80", spills).text, "sm_80")
    except ToolchainError as e:
        pytest.fail(f"{plan.program.name} ({plan.allocator}, budget {plan.budget}): {e}")
    return f"{plan.program.name}/{plan.allocator}", report.registers


def read_back(text: str) -> list[int | None]:
    """The IR index each line's ``// ir N`` comment names (None: no comment)."""
    return [int(m.group(1)) if (m := _IR_COMMENT.search(line)) else None for line in text.splitlines()]


# -- ptxas accepts it ----------------------------------------------------------------------------------------
def test_ptxas_accepts_the_plan_ptx_of_small_configs_spilled_plans_and_the_examples():
    plans = gemm_plans(Gemm(2, 2, 2)) + gemm_plans(Gemm(8, 8, 8), budget=64, tile=(8, 8)) + example_plans()
    assert sum(1 for p in plans if has_spill_code(p.program, p.spills)) >= 8, "the sample must hold spill code"
    assert any(spill_code_of(p.program, p.spills).remats for p in plans), "and rematerialised values (ld.param again)"
    with ThreadPoolExecutor(max_workers=2) as pool:
        for spills in ("volatile", "plain"):
            done = list(pool.map(accepted, plans, [spills] * len(plans)))
            assert len(done) == len(plans) and all(regs > 0 for _, regs in done)


@pytest.mark.slow
def test_ptxas_accepts_the_plan_ptx_of_every_allocator_on_a_sample_of_gemm_and_mha_configs():
    """Every 34th GEMM config (100) and every 30th MHA config (51), default options, plus MHA strategies and the
    projection phase on the design note's example: 4 plans each, one ptxas run a plan, two at a time; and the
    example's fp16-softmax plans at a spilling budget with plain local accesses too."""
    programs = [(w, build_gemm(w)) for w in gemm_configs()[::34]] + [(w, build_mha(w)) for w in mha_configs()[::30]]
    example = Mha(32, 64, 64, 4)
    programs += [(example, build_mha(example, s)) for s in (("fp16-softmax",), ("sliding-window", "head-shared"),
                                                           ("group-pools",))]
    programs.append((example, build_mha(example, projection=True)))
    assert len(programs) >= 150
    with ThreadPoolExecutor(max_workers=2) as pool:
        for w, (program, options) in programs:
            done = list(pool.map(accepted, plans_of(program, w.as_dict(), options)))
            assert len(done) == len(ALLOCATOR_NAMES)
        spilled = mha_plans(example, ("fp16-softmax",), budget=64)
        assert all(p.spills for p in spilled)
        for spills in ("volatile", "plain"):
            assert len(list(pool.map(accepted, spilled, [spills] * len(spilled)))) == len(spilled)


# -- the line map --------------------------------------------------------------------------------------------
def _map_plans() -> list[Plan]:
    return (gemm_plans(Gemm(8, 8, 8), budget=64, tile=(8, 8)) + mha_plans(Mha(32, 64, 64, 4), ("fp16-softmax",))
            + mha_plans(Mha(16, 1, 32, 1), budget=32) + example_plans())


@pytest.mark.parametrize("spills", ["volatile", "plain"])
def test_every_ir_instruction_writes_its_lines_once_in_the_plans_order(spills):
    for plan in _map_plans():
        ptx = plan_ptx(plan, "sm_90", spills)
        back = read_back(ptx.text)
        assert back == list(ptx.line_ir), plan.program.name           # the comments say what the map says
        order = [ir for k, ir in enumerate(back) if ir is not None and (k == 0 or back[k - 1] != ir)]
        n = len(plan.program.instructions)
        assert order == [i for i in range(n) if i not in EMIT_NOTHING], f"{plan.program.name} ({plan.allocator})"


def test_each_ir_instructions_lines_hold_its_table_instruction():
    """Read back, every IR instruction's lines hold the PTX :data:`PTX_TABLE` gives its (opcode, type), its spill
    code a volatile local access, its parameter an ``ld.param``."""
    for plan in _map_plans()[:8]:
        ptx = plan_ptx(plan, "sm_80")
        lines = ptx.text.splitlines()
        by_ir: dict[int, list[str]] = {}
        for line, ir in zip(lines, ptx.line_ir):
            if ir is not None:
                by_ir.setdefault(ir, []).append(line)
        types = {n: v.type for n, v in plan.program.values.items()}
        for k, ins in enumerate(plan.program.instructions):
            text = "\n".join(by_ir[k])
            assert _expected(ins, types) in text, (k, str(ins), text)


def _expected(ins: Instruction, types: dict) -> str:
    if ins.opcode in ("st.local", "ld.local"):
        return ins.opcode.replace(".", ".volatile.")
    if ins.opcode == "param":
        return "ld.param."
    if ins.opcode in ("br", "cbr", "exit"):
        return PTX_TABLE[(ins.opcode, None)].instruction
    if ins.opcode.startswith("setp."):
        return PTX_TABLE[(ins.opcode, types[ins.operands[0].name])].instruction
    if ins.opcode == "st.global":
        return PTX_TABLE[("st.global", types[ins.operands[2].name])].instruction
    return PTX_TABLE[(ins.opcode, ins.defs[0].type)].instruction


def test_the_signature_and_entry_are_the_numba_kernels():
    for plan in gemm_plans(Gemm(4, 4, 4))[:1] + mha_plans(Mha(32, 64, 64, 4))[:1] + example_plans()[:1]:
        ptx, source = plan_ptx(plan, "sm_80"), kernel_source(plan)
        assert ptx.params == source.params and ptx.entry == source.entry
        declared = re.findall(r"\.param \.(\w+) " + ptx.entry + r"_param_(\d+)", ptx.text)
        arrays = len(source.arrays)
        assert [int(k) for _, k in declared] == list(range(len(declared)))
        assert len(declared) == 7 * arrays + len(source.params) - arrays   # numba's seven words an array


def test_spill_code_addresses_the_plans_slots_in_one_frame_of_the_plans_bytes():
    [plan] = [p for p in gemm_plans(Gemm(8, 8, 8), budget=64, tile=(8, 8)) if p.allocator == "chaitin-briggs"]
    ptx = plan_ptx(plan, "sm_80")
    assert f".local .align 8 .b8 regtune_spill[{4 * len(plan.spills)}];" in ptx.text     # 25 f32 slots
    stores = re.findall(r"st\.volatile\.local\.f32 \[regtune_spill\+(\d+)\]", ptx.text)
    assert len(stores) == ptx.spill_stores == sum(1 for i in plan.program.instructions if i.opcode == "st.local")
    assert {int(s) // 4 for s in stores} == set(plan.spills.values())          # slots 0..24, 4 bytes each
    assert "ld.local" not in ptx.text and "st.local" not in ptx.text
    plain = plan_ptx(plan, "sm_80", "plain")
    assert "volatile" not in plain.text and plain.spill_loads == ptx.spill_loads > 0


def test_a_frame_of_mixed_widths_holds_each_slot_once_aligned():
    """The hull linear scan spills pointers (u64) beside floats: 8 bytes each, 8-aligned, the floats 4 bytes
    each, floats never live at once sharing a slot (issue 24; pointers never share)."""
    program, _ = build_gemm(Gemm(7, 10, 7))
    allocation = allocate("linear-scan-hull", program, 64)
    wide = {n for n in allocation.spills if program.values[n].type == "u64"}
    assert wide and len(wide) < len(allocation.spills)
    wide_slots = {allocation.spills[n] for n in wide}
    assert len(wide_slots) == len(wide)
    frame = SpillFrame.of(allocation.program)
    assert sorted(frame.offsets) == sorted(set(allocation.spills.values()))
    ends = sorted((frame.offsets[slot], 8 if slot in wide_slots else 4) for slot in frame.offsets)
    assert all(a + w <= b for (a, w), (b, _) in itertools.pairwise(ends))                # no two slots overlap
    assert frame.size == ends[-1][0] + ends[-1][1]
    narrow = len(frame.offsets) - len(wide_slots)
    assert 8 * len(wide) + 4 * narrow <= frame.size <= 12 * len(wide) + 4 * narrow     # at most 4 B to align each
    assert all(frame.offsets[slot] % 8 == 0 for slot in wide_slots)
    report, _ = ptxas(plan_ptx(allocation.plan(), "sm_80").text, "sm_80")
    assert report.stack_frame_bytes == -(-frame.size // 8) * 8


def test_volatile_spill_code_survives_ptxas_and_plain_spill_code_is_promoted_to_registers(capsys):
    """TOOLCHAIN-NOTES.md's measurement (ptxas 13.5): GEMM 8x8x8 Chaitin-Briggs at budget 64 keeps its stack frame
    and the plan's count with volatile local accesses (its 104 bytes are the plan's 25 slots and 4 bytes of
    alignment); plain ones ptxas turns back into registers."""
    [plan] = [p for p in gemm_plans(Gemm(8, 8, 8), budget=64, tile=(8, 8)) if p.allocator == "chaitin-briggs"]
    slots = 1 + max(plan.spills.values())
    figures = {}
    for spills in ("volatile", "plain"):
        report, _ = ptxas(plan_ptx(plan, "sm_80", spills).text, "sm_80")
        figures[spills] = report
    with capsys.disabled():
        print(f"\nGEMM 8x8x8 chaitin-briggs budget 64 ({len(plan.spills)} spilled, {slots} slots), no cap: "
              + "; ".join(f"{s}: {r.registers} registers, {r.stack_frame_bytes} B stack frame"
                          for s, r in figures.items()))
    assert figures["volatile"].stack_frame_bytes == -(-4 * slots // 8) * 8      # the slots, the frame 8-aligned
    assert figures["volatile"].registers <= registers_used(plan.assignment) < figures["plain"].registers
    assert figures["plain"].stack_frame_bytes == 0


def test_plain_spill_code_stays_in_memory_when_the_frame_mixes_widths():
    """Measured (ptxas 13.5): a frame with a pointer among floats is not promoted, plain or volatile (the hull
    scan's plan spills pointers here; the scan with holes spills none at this budget)."""
    program, _ = build_gemm(Gemm(7, 10, 7))
    allocation = allocate("linear-scan-hull", program, 64)
    size = -(-SpillFrame.of(allocation.program).size // 8) * 8
    for spills in ("plain", "volatile"):
        report, _ = ptxas(plan_ptx(allocation.plan(), "sm_80", spills).text, "sm_80")
        assert report.stack_frame_bytes == size > 0, spills


# -- what each opcode means ----------------------------------------------------------------------------------
M32 = (1 << 32) - 1
#: bit patterns of i32 values: small and large, bit 31 set and clear
ANY_32 = (0, 1, 2, 7, 100, 65535, 1 << 20, (1 << 31) - 1, 1 << 31, M32, M32 - 6, 0x9E3779B9)
#: the integer opcodes and the operands they are checked on: any 32 bits, the signed readings (max, min, setp,
#: mul.wide.s32) included; division with a divisor other than 0 (PTX leaves that unspecified)
INTEGER_OPCODES = {"add": ANY_32, "sub": ANY_32, "mul": ANY_32, "fma": ANY_32, "mov": ANY_32,
                   "max": ANY_32, "min": ANY_32, "mul.wide.s32": ANY_32,
                   "div.u32": ANY_32, "rem.u32": ANY_32,
                   **{f"setp.{c}": ANY_32 for c in ("lt", "le", "gt", "ge", "eq", "ne")}}


def interpreted(opcode: str, operands: tuple, type_: str = "i32") -> int:
    """What engine/check/interp.py computes: the operands defined by ``mov`` (so they are i32 values, masked to 32
    bits), the opcode applied, the result stored."""
    defs = [Instruction("mov", (Value(f"x{k}", type_),), (Imm(str(v)),)) for k, v in enumerate(operands)]
    kind = "pred" if opcode.startswith("setp.") else "u64" if opcode == "mul.wide.s32" else type_
    args = tuple(Use(f"x{k}") for k in range(len(operands)))
    if opcode == "mul.wide.s32":
        args = (args[0], Imm(str(operands[1])))
        defs = defs[:1]
    code = [Instruction("param", (Value("p", "u64"),), (Imm("P"),)), *defs,
            Instruction(opcode, (Value("r", kind),), args),
            Instruction("st.global", (), (Use("p"), Imm("0"), Use("r"))), Instruction("exit")]
    [(_, _, value)] = run(Program("t", (Block("b", tuple(code)),)), seed=0).stores
    return value


def _arity(opcode: str) -> int:
    return {"fma": 3, "mov": 1}.get(opcode, 2)


def _samples(opcode: str, values: tuple) -> list[tuple]:
    n = _arity(opcode)
    out = list(dict.fromkeys((a, b, c)[:n] for a in values for b in values for c in values))
    if opcode in ("div.u32", "rem.u32"):
        out = [s for s in out if s[1]]
    if opcode == "mul.wide.s32":
        out = [(a, b) for a, b in out if b % 4 == 0]      # a byte scale
    return out


@pytest.mark.parametrize("opcode", sorted(INTEGER_OPCODES))
def test_each_integer_opcodes_ptx_computes_what_the_interpreter_computes(opcode):
    key = (".".join(opcode.split(".")[:2]) if opcode.startswith("setp.") else opcode,
           "u64" if opcode == "mul.wide.s32" else "i32")
    entry = PTX_TABLE[key]
    assert entry.compute is not None, entry
    samples = _samples(opcode, INTEGER_OPCODES[opcode])
    assert len(samples) >= 10
    for operands in samples:
        assert entry.compute(*operands) == interpreted(opcode, operands), (entry.instruction, operands)


@pytest.mark.parametrize("opcode", ["max", "min", "setp.lt", "mul.wide.s32"])
def test_signed_opcodes_agree_on_negative_values_too(opcode):
    """-1 < 4, max(-1, 4) = 4, min(-1, 4) = -1 (all ones), -1 * 4 = -4 (64 bits): an i32's bit 31 is its sign
    in the interpreter as in PTX's .s32 (it was read unsigned until issue 21's table test caught it)."""
    key = (opcode, "u64" if opcode == "mul.wide.s32" else "i32")
    operands = (M32, 4)          # -1 and 4
    want = {"max": 4, "min": M32, "setp.lt": 1, "mul.wide.s32": (1 << 64) - 4}[opcode]
    assert PTX_TABLE[key].compute(*operands) == interpreted(opcode, operands) == want


def test_the_table_covers_what_the_workloads_generate():
    seen = set()
    for plan in _map_plans():
        types = {n: v.type for n, v in plan.program.values.items()}
        for ins in plan.program.instructions:
            if ins.opcode.startswith("setp."):
                seen.add((ins.opcode, types[ins.operands[0].name]))
            elif ins.defs and ins.opcode not in ("param", "ld.local"):
                seen.add((ins.opcode, ins.defs[0].type))
    assert {"exp", "rcp", "max", "shfl.sync.bfly", "cvt.rn.f16x2.f32", "mul.wide.s32", "div.u32"} <= {
        op for op, _ in seen}
    assert seen <= set(PTX_TABLE), sorted(seen - set(PTX_TABLE))


# -- what it refuses -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "message"), [
    ("%y:f32 = tex.fetch %x", r"instruction 2 \('%y:f32 = tex.fetch %x'\): opcode 'tex.fetch' is opaque"),
    ("%y:f32 = cvt %x", r"instruction 2 \('%y:f32 = cvt %x'\): cvt has no PTX"),
    ("%y:u64 = add %pa, %x", r"instruction 2 \('%y:u64 = add %pa, %x'\): %x is f32 where the instruction reads u64"),
    ("%y:f32 = exp %pa", r"instruction 2 \('%y:f32 = exp %pa'\): %pa is u64 where the instruction reads f32"),
])
def test_what_has_no_ptx_is_refused_naming_the_instruction(line, message):
    program = parse(f".kernel k\n.block entry\n  %pa:u64 = param A\n  %x:f32 = ld.global %pa, 0\n  {line}\n"
                    "  st.global %pa, 4, %x\n  exit\n")
    with pytest.raises(PlanPtxError, match=message):
        plan_ptx(plans_of(program)[0], "sm_80")


def test_an_unknown_spill_access_is_refused():
    with pytest.raises(PlanPtxError, match="unknown spill access 'cached' .known: volatile, plain."):
        plan_ptx(example_plans()[0], "sm_80", "cached")


# -- figures -------------------------------------------------------------------------------------------------
def test_figures_are_cached_by_the_ptx_and_round_trip():
    plan = gemm_plans(Gemm(2, 2, 2))[1]
    # measured whatever the cache holds (a build or compare earlier in the session stores this plan's figures too)
    cold = plan_ptx_figures(plan, ("sm_80",), use_cache=False)
    again = plan_ptx_figures(plan, ("sm_80",))
    assert again.cached and {k for k in again.timings_ms} == {"emit"}
    assert (again.ptxas, again.ptxas_compiler, again.sass) == (cold.ptxas, cold.ptxas_compiler, cold.sass)
    assert cold.ptxas["sm_80"].flags == ("-arch=sm_80", "-v", "-maxrregcount=24")     # ptxas's floor
    assert cold.ptxas_compiler["sm_80"].flags == ("-arch=sm_80", "-v")
    assert cold.sass["sm_80"].maxlive > 0
    assert PlanPtxFigures.from_dict(cold.to_dict()) == cold
    other = plan_ptx_figures(plan, ("sm_80",), spills="plain")       # another text: measured, not read back
    assert not cold.cached and not other.cached


@pytest.mark.slow
@pytest.mark.parametrize(("size", "allocator", "expected"), [(8, "dsatur", (96, 88)),
                                                             (16, "chaitin-briggs", (168, 160))])
def test_plan_ptx_registers_beside_the_numba_kernels(size, allocator, expected, capsys):
    """TOOLCHAIN-NOTES.md measured the plan PTX of GEMM 8x8x8 (DSatur) and 16x16x16 (Chaitin-Briggs): ptxas gives
    the Numba kernel's registers, with no cap and at the plan cap (96/88, 168/160). The Numba side costs NVVM."""
    from kernels.build import build_plan

    [plan] = [p for p in gemm_plans(Gemm(size, size, size)) if p.allocator == allocator]
    mine = plan_ptx_figures(plan, ("sm_80", "sm_90"))
    numba = build_plan(plan, ("sm_80", "sm_90"))
    with capsys.disabled():
        for a in ("sm_80", "sm_90"):
            print(f"\nGEMM {size}^3 {allocator} {a}, plan {registers_used(plan.assignment)} registers: plan PTX "
                  f"{mine.ptxas_compiler[a].registers} no cap / {mine.ptxas[a].registers} at the plan cap, Numba "
                  f"kernel {numba.archs[a].compiler.registers} / {numba.archs[a].report.registers}; SASS MAXLIVE "
                  f"{mine.sass[a].maxlive} / {numba.archs[a].sass.maxlive}")
    for a in ("sm_80", "sm_90"):
        assert (mine.ptxas_compiler[a].registers, mine.ptxas[a].registers) == expected
        assert mine.ptxas[a].flags == tuple(numba.archs[a].report.flags)
    declared = re.findall(r"\.param \.(\w+) \w+_param_\d+", numba.ptx)
    assert declared == re.findall(r"\.param \.(\w+) \w+_param_\d+", plan_ptx(plan, "sm_80").text)


@pytest.mark.slow
def test_every_parameter_type_is_declared_as_numba_declares_it():
    """An array, a pred, an i32 and an f64 parameter: the plan PTX's .param list is the Numba kernel's (NVVM's)."""
    from kernels.build import compile_ptx

    program = parse(".kernel k\n.block entry\n  %pa:u64 = param A\n  %flag:pred = param flag\n  %n:i32 = param n\n"
                    "  %s:f64 = param s\n  %x:f32 = ld.global %pa, 0\n  @%flag st.global %pa, 4, %x\n  exit\n")
    [plan] = plans_of(program, {"kind": "program", "name": "k"})[:1]
    numba = compile_ptx(kernel_source(plan), (8, 0))
    ours = plan_ptx(plan, "sm_80").text
    pattern = r"\.param \.(\w+) \w+_param_\d+"
    assert re.findall(pattern, ours) == re.findall(pattern, numba) == ["u64"] * 7 + ["u8", "u32", "f64", "u32"]
    assert ptxas(ours, "sm_80")[0].registers > 0
