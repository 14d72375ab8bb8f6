"""The timeline's model: a bar per live segment per register, spill slots below, bars split by role, conflict and selection bars."""

import numpy as np

from engine.alloc.hand import Assign, Spill, apply_edit
from engine.analysis.liveness import analyze
from gui.model.timeline import BAR_ROLES, plan_timeline, sass_timeline, stall_strip
from kernels.control import parse_hex
from kernels.sass import parse_sass


def test_a_bar_per_segment_per_register_and_one_per_spill_slot(gemm_plans):
    plan = apply_edit(gemm_plans["dsatur"], Spill("acc_2_2")).plan
    a = analyze(plan.program)
    d = plan_timeline(plan, a)
    widths = a.widths[a.seg_value]
    assert len(d.x0) == int(widths.sum()) + len(plan.spills)
    assert (d.row < 0).sum() == len(plan.spills) and d.slot_rows == [plan.spills["acc_2_2"]]
    assert d.maxlive == a.maxlive and d.peak == a.peak
    bars = d.selection_bars("acc_0_0")
    v = a.index["acc_0_0"]
    segs = [(s / 2, (e + 1) / 2) for val, s, e in zip(a.seg_value, a.seg_start, a.seg_end) if val == v]
    assert sorted(zip(bars.x0.tolist(), bars.x1.tolist())) == sorted(segs)
    assert set(bars.y.tolist()) == set(plan.assignment["acc_0_0"])
    assert d.value_at(float(bars.x0[0]) + 0.01, int(bars.y[0])) == v


def test_the_role_bars_partition_every_bar(gemm_plans):
    d = plan_timeline(gemm_plans["linear-scan"], analyze(gemm_plans["linear-scan"].program))
    by_role = d.role_bars()
    assert list(by_role) == [r for r in BAR_ROLES if r in by_role]
    assert sum(len(b) for b in by_role.values()) == len(d.x0)
    assert np.isclose(sum(float((b.x1 - b.x0).sum()) for b in by_role.values()), float((d.x1 - d.x0).sum()))


def test_conflict_bars_cover_each_conflicts_instruction(gemm_plans):
    plan = gemm_plans["dsatur"]
    result = apply_edit(plan, Assign("acc_0_0", plan.assignment["acc_0_1"]))
    assert result.conflicts
    d = plan_timeline(result.plan, analyze(result.plan.program))
    bars = d.conflict_bars(result.conflicts)
    assert len(bars) >= 2
    at = result.conflicts[0].instruction + 0.5
    assert any(x0 <= at <= x1 for x0, x1 in zip(bars.x0.tolist(), bars.x1.tolist()))
    assert len(d.conflict_bars(())) == 0


def test_operand_bars_are_every_bar_of_the_values_an_instruction_writes_or_reads(gemm_plans):
    plan = apply_edit(gemm_plans["dsatur"], Spill("acc_2_2")).plan
    a = analyze(plan.program)
    d = plan_timeline(plan, a)
    for i in (0, len(plan.program.instructions) // 2, len(plan.program.instructions) - 1):
        ins = plan.program.instructions[i]
        names = {x.name for x in ins.defs} | set(ins.uses)
        bars = d.operand_bars([i])
        # each segment on each register of the value, and its spill slot's bar
        expected = sum(len(a.live_positions(n)) * len(plan.assignment.get(n, ())) + (n in plan.spills)
                       for n in names)
        assert len(bars) == expected
        assert sorted(bars.x0.tolist()) == sorted(x for n in names for x in d.selection_bars(n).x0.tolist())
    assert len(d.operand_bars([])) == 0


#: a SASS listing with a read that the register outlives (R0 read on row 1, live on to row 2) and a read-and-write
SASS = """// | GPR |
// |   # 012 |
  /*0000*/ MOV R0, 0x1 ;              // |   1 ^   |
  /*0010*/ IADD3 R1, R0, 0x1, RZ ;    // |   2 v^  |
  /*0020*/ IADD3 R1, R0, R1, RZ ;     // |   2 vx  |
  /*0030*/ STG.E [R2.64], R1 ;        // |   1  v  |
  /*0040*/ EXIT ;                     // |   0     |"""


def test_sass_operand_bars_are_the_ranges_a_row_writes_or_reads():
    s = parse_sass(SASS)
    d = sass_timeline(s)
    assert s.names == ("R0@0000", "R1@0010", "R0@0020", "R1@0020")
    ranges = lambda rows: sorted(zip(d.operand_bars(rows).y.tolist(), d.operand_bars(rows).x0.tolist()))
    # R0's value is two ranges (the parse ends one at the read on row 1): each outline is the whole value
    assert ranges([0]) == [(0, 0.0), (0, 2.0)]                          # writes R0
    assert ranges([1]) == [(0, 0.0), (0, 2.0), (1, 1.0)]                # reads R0, writes R1
    assert ranges([2]) == [(0, 0.0), (0, 2.0), (1, 1.0), (1, 2.0)]      # reads R0 and the old R1, writes the new R1
    assert ranges([3]) == [(1, 2.0)]
    assert ranges([4]) == []


HEX = "\n".join(f"  /*{o:04x}*/ {t} ; /* 0x0000000000000000 */\n        /* 0x{c << 41:016x} */" for o, t, c in (
    (0x00, "MOV R0, 0x1", 0x7E1), (0x10, "IADD3 R1, R0, 0x1, RZ", 0x7E2 | 1 << 11),
    (0x20, "IADD3 R1, R0, R1, RZ", 0x7E3), (0x30, "STG.E [R2.64], R1", 0x7E4 | 3 << 11), (0x40, "EXIT", 0x7E5)))


def test_the_stall_strip_is_the_decoded_control_bits_row_by_row():
    strip = stall_strip(parse_sass(SASS), parse_hex(HEX))
    assert strip.stall.tolist() == [i.control.stall for i in parse_hex(HEX).instructions] == [1, 2, 3, 4, 5]
    assert strip.waits.tolist() == [1, 3]
    assert strip.describe(3).splitlines()[1:] == ["stall 4 cycles, yield (----:B01----:R-:W-:Y:S04)",
                                                 "sets write barrier none, read barrier none; waits on SB0, SB1"]


def test_a_listing_of_other_instructions_aligns_nothing():
    s = parse_sass(SASS)
    shifted = HEX.replace("/*0020*/", "/*0028*/")
    assert stall_strip(s, parse_hex(shifted)) == ("the -hex listing does not match the life-range listing at row 2 "
                                                  "(/*0028*/ IADD3 against /*0020*/ IADD3)")
    other = HEX.replace("STG.E [R2.64], R1", "STL [R1], R1")
    assert "at row 3 (/*0030*/ STL against /*0030*/ STG.E)" in stall_strip(s, parse_hex(other))
    short = HEX.rsplit("\n", 2)[0]
    assert stall_strip(s, parse_hex(short)) == "the -hex listing has 4 instructions, the life-range listing 5"
    padded = HEX + "\n  /*0050*/ NOP ; /* 0x0000000000007918 */\n        /* 0x000fc00000000000 */"
    assert stall_strip(s, parse_hex(padded)).stall.tolist() == [1, 2, 3, 4, 5]       # padding after EXIT: no row
    assert stall_strip(s, parse_hex(padded.replace("NOP", "MOV R0, 0x2"))) == (
        "the -hex listing has 6 instructions, the life-range listing 5 (/*0050*/ MOV after its last row is not "
        "NOP padding)")
