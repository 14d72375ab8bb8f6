"""SASS instructions mapped back to the IR through line info, on kernels built with NVVM, ptxas and nvdisasm."""

from __future__ import annotations

import pytest

from engine.ir.parser import parse
from engine.plan import Plan
from kernels.build import build_plan, compile_ptx, rename_entry
from kernels.codegen import kernel_source
from kernels.measurement import Measurement, Unavailable
from kernels.report import measurement
from kernels.sass_lines import SassIrMap, ir_map, parse_line_listing, strip_line_info
from kernels.toolchain import LINE_INFO, nvdisasm, ptxas
from tests.kernels.conftest import gemm_plan

ARCHS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def gemm4():
    plan = gemm_plan(4, 4, 4)
    return plan, build_plan(plan, ARCHS)


def _opcode(sass_text: str) -> str:
    words = sass_text.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def test_every_line_an_instruction_wrote_names_that_instruction():
    plan = gemm_plan(2, 2, 2)
    source = kernel_source(plan)
    lines = source.text.splitlines()
    code = plan.program.instructions
    assert [line for line, _ in source.ir_lines] == sorted({line for line, _ in source.ir_lines})
    for line, ir in source.ir_lines:
        text = lines[line - 1].strip()
        ins = code[ir]
        if ins.opcode == "cbr":
            assert text.startswith("if "), (line, text, str(ins))
        elif ins.opcode == "st.global":
            assert text.startswith(("C[", "acc_")), (line, text, str(ins))
        elif ins.defs:
            # its definition, or the definition's store into the carry array that takes it to the next block
            assert ins.defs[0].name.replace(".", "__") in text, (line, text, str(ins))
    # every instruction that computes something has a line; params that only bind an argument and the
    # terminators br/exit have none
    named = {ir for _, ir in source.ir_lines}
    missing = [str(ins) for i, ins in enumerate(code) if i not in named
               and ins.opcode not in ("br", "exit") and not (ins.opcode == "param" and ins.defs[0].type != "u64")]
    assert missing == []


def test_a_guarded_instruction_and_a_branch_keep_their_lines():
    program = parse(".kernel k\n.block entry\n  %A:u64 = param A\n  %n:i32 = param batch\n"
                    "  %tid:i32 = sreg.tid.x\n  %p:pred = setp.lt %tid, %n\n  cbr %p, body, done\n"
                    ".block body\n  %x:f32 = ld.global %A, 0\n  %y:f32 = mul %x, %x\n  @%p st.global %A, 0, %y\n"
                    "  br done\n.block done\n  exit\n")
    source = kernel_source(Plan(program, {}, {}, 255, "hand"))
    lines = source.text.splitlines()
    by_ir = {}
    for line, ir in source.ir_lines:
        by_ir.setdefault(ir, []).append(lines[line - 1].strip())
    assert by_ir[4] == ["if p:"]
    assert by_ir[7] == ["if p:", "A[v_A] = y"]          # the value of "param A" is an index, not the array


def test_line_info_adds_loc_lines_only_and_changes_no_sass(gemm4):
    """Measured: the PTX with line info is numba's PTX without it plus .loc/.file lines, and ptxas gives the
    same instructions and registers with and without them."""
    _, built = gemm4
    plain = rename_entry(compile_ptx(built.source, (8, 0), lineinfo=False), built.source.entry)
    assert built.ptx == strip_line_info(plain) == plain.rstrip()
    lined = rename_entry(compile_ptx(built.source, (8, 0), lineinfo=True), built.source.entry)
    assert lined.count(".loc") > 100
    for arch in ARCHS:
        cap = built.archs[arch].report.max_registers
        report, cubin = ptxas(lined, arch, cap)
        assert report.registers == built.archs[arch].report.registers
        listing = parse_line_listing(nvdisasm(cubin, LINE_INFO))
        sass = built.archs[arch].sass
        assert listing.texts[:len(sass.texts)] == sass.texts
        assert set(listing.texts[len(sass.texts):]) <= {"NOP"}


def test_every_ffma_maps_to_an_fma_and_loads_and_stores_to_theirs(gemm4):
    plan, built = gemm4
    code = plan.program.instructions
    for arch in ARCHS:
        m, sass = built.archs[arch].ir_map, built.archs[arch].sass
        assert m.note == "" and len(m.ir) == len(sass.texts)
        pairs = [(_opcode(t), None if ir is None else code[ir]) for t, ir in zip(sass.texts, m.ir)]
        ffma = [ins for op, ins in pairs if op == "FFMA"]
        assert len(ffma) == 64 and all(ins is not None and ins.opcode == "fma" and ins.defs[0].type == "f32"
                                       for ins in ffma)
        loads = [ins for op, ins in pairs if op == "LDG"]
        assert len(loads) == 48 and all(ins is not None and ins.opcode == "ld.global" for ins in loads)
        stores = [ins for op, ins in pairs if op == "STG"]
        assert len(stores) == 16 and all(ins is not None and ins.opcode == "st.global" for ins in stores)
        # measured: 180 of 181 (sm_80) and 184 of 185 (sm_90); only the stack-pointer set-up before the
        # first statement has no IR instruction
        assert m.coverage > 0.98, (arch, m.mapped, len(m.ir))
        assert [i for i, ir in enumerate(m.ir) if ir is None] == [0]


def test_each_fma_of_the_plan_has_its_own_ffma(gemm4):
    plan, built = gemm4
    m = built.archs["sm_80"].ir_map
    fmas = [i for i, ins in enumerate(plan.program.instructions) if ins.opcode == "fma" and ins.defs[0].type == "f32"]
    assert len(fmas) == 64
    texts = built.archs["sm_80"].sass.texts
    assert all([_opcode(texts[s]) for s in m.sass_of(i)] == ["FFMA"] for i in fmas)


def test_the_map_is_in_the_report_and_reads_back(gemm4):
    plan, built = gemm4
    report = measurement(plan, built, Unavailable("not run"), Unavailable("no GPU")).to_dict()
    data = report["sass"]["sm_80"]["ir_map"]
    assert data["arch"] == "sm_80" and data["instructions"] == len(data["ir"]) == 181 and data["mapped"] == 180
    again = Measurement.from_dict(report)
    assert again.sass["sm_90"].ir_map == built.archs["sm_90"].ir_map


def test_a_listing_that_differs_gives_no_map_and_says_where():
    listing = parse_line_listing('\t//## File "k", line 5\n        /*0000*/   MOV R1, c[0x0][0x28] ;\n'
                                 '        /*0010*/   EXIT ;\n        /*0020*/   NOP ;\n')
    assert ir_map("sm_80", listing, ("0000", "0010"), ("MOV R1, c[0x0][0x28]", "EXIT"), {5: 2}) == \
        SassIrMap("sm_80", (2, 2))
    other = ir_map("sm_80", listing, ("0000", "0010"), ("MOV R2, c[0x0][0x28]", "EXIT"), {5: 2})
    assert other.ir == () and "at SASS instruction 0" in other.note and other.coverage == 0.0
    with pytest.raises(Exception, match="no instructions"):
        parse_line_listing("nothing here")


def test_a_second_build_reads_the_line_listing_from_the_cache(gemm4):
    plan, built = gemm4
    again = build_plan(plan, ARCHS)
    assert again.cached and not any(k.startswith("line info") for k in again.timings_ms)
    assert {a: b.ir_map for a, b in again.archs.items()} == {a: b.ir_map for a, b in built.archs.items()}


def test_a_kernel_with_planned_spills_keeps_its_local_memory_without_line_info():
    """The PTX of planned spill code declares ``.local`` memory: removing the line info keeps it (a ``.loc`` prefix
    match once dropped it and ptxas refused the kernel)."""
    plan = gemm_plan(2, 2, 4, "chaitin-briggs", budget=7, schedule="load-all-first")  # 8: ptxas keeps the 3 left in registers
    assert plan.spills
    source = kernel_source(plan)
    plain = compile_ptx(source, (8, 0), lineinfo=False)
    lined = compile_ptx(source, (8, 0), lineinfo=True)
    assert ".local" in plain and ".loc\t" in lined
    stripped = strip_line_info(rename_entry(lined, source.entry))
    assert stripped == rename_entry(plain, source.entry).rstrip()
    assert ptxas(stripped, "sm_80")[0].stack_frame_bytes > 0
