"""The SASS control-bit decoder and the issue cycles it gives, on kernels built with NVIDIA's real tools.

Three kernels are built once for the module (GEMM 2x2x2 and 4x4x4, sm_80 and sm_90; the smallest MHA
config, whose key/value loop is the only loop a workload has). The hand-decoded words below were read
from GEMM 2x2x2's sm_80 listing at its plan cap (ptxas 13.5, -maxrregcount=24) and are checked to occur
in the one built here.
"""

from __future__ import annotations

import dataclasses

import pytest

from engine.ir.cfg import loop_trips
from engine.ir.core import replace_blocks
from engine.model.arch import load_latencies
from kernels.build import build_plan
from kernels.control import (
    ControlError,
    decode_control,
    executed_path,
    issue_cycles,
    latency_class,
    parse_hex,
)
from kernels.measurement import Measurement, ScheduleFigures, Unavailable
from kernels.report import compare_rows, measurement, schedule_figures
from tests.kernels.conftest import gemm_plan, mha_plan

ARCHS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def gemm2():
    plan = gemm_plan(2, 2, 2)
    return plan, build_plan(plan, ARCHS)


@pytest.fixture(scope="module")
def gemm4():
    plan = gemm_plan(4, 4, 4, "chaitin-briggs")
    return plan, build_plan(plan, ARCHS)


@pytest.fixture(scope="module")
def mha():
    plan = mha_plan(16, 1, 32, 1)
    return plan, build_plan(plan, ("sm_80",))


def _listings(*builds):
    return [(arch, parse_hex(b.archs[arch].hex_text)) for _, b in builds for arch in b.archs]


# Hand decoding: the control code is the high word's top 23 bits, code = hi >> 41. The top three bytes of
# hi are the hex digits 0x00 0x0e 0x28 of 0x000e28..., so code = 0x000e28 >> 1 = 0x714 and then
# stall = code & 0xf, yield bit = code >> 4 & 1 (0 means yield), wbar = code >> 5 & 7, rbar = code >> 8 & 7
# (7 means none), wait = code >> 11 & 0x3f, reuse = code >> 17.
HAND = [
    # S2R R0, SR_TID.X: code 0x714 = 0b111_0001_0100: stall 0b0100 = 4, yield bit 1 (no yield),
    # wbar 0b000 = 0, rbar 0b111 = none, wait 0, reuse 0
    ("S2R R0, SR_TID.X", 0x000E280000002100,
     {"stall": 4, "yield_hint": False, "write_barrier": 0, "read_barrier": None, "wait_mask": 0, "reuse": 0}),
    # LEA R0, R3, R0, 0x7: 0x001fc8 >> 1 = 0xfe4 = 0b1_1111_1110_0100: stall 4, yield bit 0 (yield),
    # wbar 0b111 none, rbar 0b111 none, wait 0xfe4 >> 11 = 1 (scoreboard 0, the two S2R), reuse 0
    ("LEA R0, R3, R0, 0x7", 0x001FC800078E38FF,
     {"stall": 4, "yield_hint": True, "write_barrier": None, "read_barrier": None, "wait_mask": 1, "reuse": 0}),
    # ISETP.GE.AND P0, PT, R0, c[0x0][0x210], PT: 0x000fda >> 1 = 0x7ed: stall 0xd = 13, yield bit 0 (yield),
    # wbar (0x7ed >> 5) & 7 = 0x3f & 7 = 7 none, rbar 0x7 & 7 = 7 none, wait 0, reuse 0
    ("ISETP.GE.AND P0, PT, R0, c[0x0][0x210], PT", 0x000FDA0003F06270,
     {"stall": 13, "yield_hint": True, "write_barrier": None, "read_barrier": None, "wait_mask": 0, "reuse": 0}),
    # LDG.E R19, [R4.64]: 0x000ea8 >> 1 = 0x754: stall 4, yield bit 1, wbar (0x754 >> 5) & 7 = 0x3a & 7 = 2,
    # rbar 7 none, wait 0, reuse 0
    ("LDG.E R19, [R4.64]", 0x000EA8000C1E1900,
     {"stall": 4, "yield_hint": False, "write_barrier": 2, "read_barrier": None, "wait_mask": 0, "reuse": 0}),
    # FMUL R14, R14, R13.reuse: 0x090fe4 >> 1 = 0x487f2: stall 2, yield bit (0x487f2 >> 4) & 1 = 1,
    # wbar 0x243f & 7 = 7, rbar 0x487 & 7 = 7, wait (0x487f2 >> 11) & 0x3f = 0x90 & 0x3f = 0x10 (scoreboard 4),
    # reuse 0x487f2 >> 17 = 2 (the second source, R13)
    ("FMUL R14, R14, R13.reuse", 0x090FE40000400000,
     {"stall": 2, "yield_hint": False, "write_barrier": None, "read_barrier": None, "wait_mask": 0x10, "reuse": 2}),
]

#: stalls of GEMM 2x2x2's sm_80 prologue, read by hand as (bits 40-47 of hi) >> 1 & 0xf, from MOV R1 to @P0 EXIT:
#: 0xe4 -> 2, 0x28 -> 4, 0x24 -> 2, 0xc8 -> 4, 0xda -> 13, 0xea -> 5
PROLOGUE_STALLS = 2 + 4 + 2 + 4 + 13 + 5


@pytest.mark.parametrize(("text", "high", "fields"), HAND, ids=[t.split()[0] for t, _, _ in HAND])
def test_hand_decoded_words_of_a_built_kernel(gemm2, text, high, fields):
    listing = parse_hex(gemm2[1].archs["sm_80"].hex_text)
    assert any(i.text == text and i.high == high for i in listing.instructions), f"{text} {high:#x} not built"
    c = decode_control(high)
    assert {k: getattr(c, k) for k in fields} == fields


def test_stall_sum_of_a_short_prologue_against_a_hand_count(gemm2):
    listing = parse_hex(gemm2[1].archs["sm_80"].hex_text)
    exit_at = next(n for n, i in enumerate(listing.instructions) if i.opcode == "EXIT")
    assert listing.instructions[exit_at].predicated
    assert sum(i.control.stall for i in listing.instructions[:exit_at + 1]) == PROLOGUE_STALLS


def test_reuse_flags_match_the_reuse_marks_nvdisasm_prints(gemm2, gemm4, mha):
    """An independent check of the reuse field on every instruction of every built kernel."""
    checked = 0
    for arch, listing in _listings(gemm2, gemm4, mha):
        for i in listing.instructions:
            assert i.control.reuse.bit_count() == i.text.count(".reuse"), (arch, i.text, str(i.control))
            checked += bool(i.control.reuse)
    assert checked > 10


def test_every_wait_is_on_a_scoreboard_an_earlier_instruction_set(gemm2, gemm4):
    """Straight-line kernels: a wait-mask bit names a barrier some earlier instruction set (write or read)."""
    for arch, listing in _listings(gemm2, gemm4):
        seen = set()
        for i in listing.instructions:
            waits = {b for b in range(6) if i.control.wait_mask >> b & 1}
            assert waits <= seen, (arch, i.text, str(i.control), seen)
            seen |= {b for b in (i.control.write_barrier, i.control.read_barrier) if b is not None}


def test_variable_latency_loads_set_write_barriers_and_alu_work_does_not(gemm2, gemm4):
    for arch, listing in _listings(gemm2, gemm4):
        for i in listing.instructions:
            if i.opcode.startswith(("LDG", "S2R")) and not i.opcode.startswith("S2UR"):
                assert i.control.write_barrier is not None, (arch, i.text)
            if i.opcode.startswith(("FFMA", "FMUL", "IADD3", "ISETP", "SHF")):
                assert i.control.write_barrier is None and i.control.read_barrier is None, (arch, i.text)


def test_issue_cycles_are_stalls_plus_waits_and_bounded_by_the_latencies(gemm2, gemm4):
    for arch, listing in _listings(gemm2, gemm4):
        table = load_latencies(arch).cycles
        r = issue_cycles(listing, table)
        path, _ = executed_path(listing, {})
        assert r.instructions == len(path)
        floors = sum(max(listing.instructions[i].control.stall, 1) for i in path)
        assert r.cycles == floors + r.barrier_wait_cycles
        assert r.stall_cycles == sum(listing.instructions[i].control.stall for i in path)
        assert 0 < r.barrier_wait_cycles <= sum(table[latency_class(listing.instructions[i].opcode)]
                                                for i in path if listing.instructions[i].control.write_barrier
                                                is not None)
        assert listing.instructions[path[-1]].opcode == "EXIT"


def test_a_bigger_gemm_issues_more_cycles(gemm2, gemm4):
    for arch in ARCHS:
        table = load_latencies(arch).cycles
        small = issue_cycles(parse_hex(gemm2[1].archs[arch].hex_text), table)
        big = issue_cycles(parse_hex(gemm4[1].archs[arch].hex_text), table)
        assert big.instructions > small.instructions and big.cycles > small.cycles


def test_the_loop_is_weighted_by_its_trip_count(mha):
    plan, build = mha
    listing = parse_hex(build.archs["sm_80"].hex_text)
    trips = loop_trips(plan.program)
    once = executed_path(listing, {k: 1 for k in trips})[0]
    path, note = executed_path(listing, trips)
    n = next(iter(trips.values()))
    body = len(path) - len(once)
    assert body % (n - 1) == 0 and body // (n - 1) > 0, note
    assert f"{n} trips" in note
    table = load_latencies("sm_80").cycles
    assert issue_cycles(listing, table, trips).cycles > issue_cycles(listing, table, {k: 1 for k in trips}).cycles


def test_a_loop_without_one_trip_count_is_refused_in_one_line(mha):
    plan, build = mha
    with pytest.raises(ControlError, match="1 loop.*0 counted loop"):
        issue_cycles(parse_hex(build.archs["sm_80"].hex_text), load_latencies("sm_80").cycles, {})
    figures = schedule_figures(plan, build, "sm_80")
    assert isinstance(figures, ScheduleFigures) and figures.issue_cycles > 0


def test_a_sass_loop_with_more_loads_than_the_program_loop_is_not_weighted(mha):
    """The unrolling guard: the same SASS against the program with every other load of its loop removed."""
    plan, build = mha
    label = next(iter(loop_trips(plan.program)))
    loads = [n for n, i in enumerate(next(b for b in plan.program.blocks if b.name == label).instructions)
             if i.opcode == "ld.global"]
    blocks = [dataclasses.replace(b, instructions=tuple(i for n, i in enumerate(b.instructions)
                                                        if n not in loads[::2]))
              if b.name == label else b for b in plan.program.blocks]
    figures = schedule_figures(plan.with_(program=replace_blocks(plan.program, blocks)), build, "sm_80")
    assert isinstance(figures, Unavailable)
    assert f"{len(loads)} global loads, the program loop {label} {len(loads) - len(loads[::2])}: unrolled" \
        in figures.reason


def test_report_json_and_the_compare_row_carry_the_issue_cycles(gemm2):
    plan, build = gemm2
    m = measurement(plan, build, Unavailable("not run"), Unavailable("no CUDA device"))
    for arch in ARCHS:
        s = m.sass[arch].schedule
        assert s.issue_cycles == issue_cycles(parse_hex(build.archs[arch].hex_text), load_latencies(arch).cycles).cycles
        table = load_latencies(arch).cycles
        assert "decoded from the SASS control bits" in s.source and f"resources/arch/{arch}.toml [latency]" in s.source
        assert f"ld_global {table['ld_global']}" in s.source       # the GEMM's LDG scoreboards are priced
    report = m.to_dict()
    assert report["sass"]["sm_80"]["schedule"]["issue_cycles"] == m.sass["sm_80"].schedule.issue_cycles
    assert Measurement.from_dict(report) == m
    from kernels.report import Column

    rows = {label: get(Column(m.planned, m)) for label, _, get in compare_rows(ARCHS)}
    assert rows["sm_90 SASS issue cycles/warp (model)"] == m.sass["sm_90"].schedule.issue_cycles


def test_an_older_report_without_issue_cycles_says_so(gemm2):
    plan, build = gemm2
    report = measurement(plan, build, Unavailable("not run"), Unavailable("no CUDA device")).to_dict()
    for arch in ARCHS:
        del report["sass"][arch]["schedule"]
    m = Measurement.from_dict(report)
    from kernels.report import Column

    rows = {label: get(Column(m.planned, m)) for label, _, get in compare_rows(ARCHS)}
    assert rows["sm_80 SASS issue cycles/warp (model)"] == "not measured (an older report)"


def test_a_listing_without_encodings_is_a_clear_error():
    with pytest.raises(ControlError, match="run with -hex"):
        parse_hex("        /*0000*/                   EXIT ;   // |   0      |")
    with pytest.raises(ControlError, match="second 64-bit word"):
        parse_hex("        /*0000*/  EXIT ;  /* 0x000000000000794d */\n")


CLASS_OF = [("LDS.U.128", "ld_shared"), ("ATOMS.ADD", "ld_shared"), ("LDL.64", "ld_local"), ("STL", "st_local"),
            ("LDG.E.128", "ld_global"), ("ATOM.E.ADD", "ld_global"), ("MUFU.EX2", "mufu"), ("LDC", "default"),
            ("S2R", "default"), ("SHFL.BFLY", "shfl"), ("STG.E", "st_global"), ("STS", "st_shared"),
            ("F2I.TRUNC", "cvt"), ("DFMA", "dfma")]


@pytest.mark.parametrize(("opcode", "kind"), CLASS_OF)
def test_each_opcode_is_priced_by_its_class_in_every_arch_table(opcode, kind):
    assert latency_class(opcode) == kind
    for arch in ARCHS:
        assert load_latencies(arch).cycles[kind] >= 1


def test_a_loop_without_a_way_out_is_refused():
    """Hand-made words: an unconditional back edge and no predicated branch out of the body."""
    code = 0x7E1 << 41                                     # stall 1, no barriers, no wait
    lines = [".L_x_0:", f"  /*0000*/ FADD R0, R0, R0 ; /* 0x0000000000007221 */\n /* {code:#018x} */",
             f"  /*0010*/ BRA `(.L_x_0) ; /* 0xfffffff000007947 */\n /* {code:#018x} */",
             f"  /*0020*/ EXIT ; /* 0x000000000000794d */\n /* {code:#018x} */"]
    listing = parse_hex("\n".join(lines))
    with pytest.raises(ControlError, match="no predicated branch out of its body"):
        issue_cycles(listing, {"default": 4}, {"l": 3})


def _hand_listing(lines: list[tuple[str, int]]) -> str:
    """An ``nvdisasm -hex`` listing: (text, control code) per instruction, 16 bytes apart."""
    out = []
    for i, (text, code) in enumerate(lines):
        out.append(f"  /*{i * 16:04x}*/ {text} ; /* 0x0000000000007221 */\n /* {code << 41:#018x} */")
    return "\n".join(out)


def test_a_predicated_forward_branch_is_not_taken_when_the_guarded_side_is_asked_for():
    """The plan model runs the longer side of an if (GEMM's beta != 0 loads); forward_taken=False prices the same
    work in the SASS, the default keeps ptxas's slow-path rule (the branch taken)."""
    stall = 0x7E4                                   # no barriers, yield, 4 cycles
    text = (_hand_listing([("@!P0 BRA `(.L_x_0)", stall), ("FADD R0, R0, R0", stall), ("FADD R0, R0, R0", stall)])
            + "\n.L_x_0:\n" + _hand_listing([("EXIT", stall)]).replace("/*0000*/", "/*0030*/"))
    listing = parse_hex(text)
    taken, _ = executed_path(listing, {})
    guarded, _ = executed_path(listing, {}, forward_taken=False)
    assert taken == [0, 3] and guarded == [0, 1, 2, 3]
    assert issue_cycles(listing, {"default": 4}, forward_taken=False).cycles == \
        issue_cycles(listing, {"default": 4}).cycles + 8
