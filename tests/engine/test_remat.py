"""Rematerialisation (issue 24): values computed again at their reads instead of spilled.

What must hold: only values that are the same wherever they are computed qualify; the copies are spill code
(the program without them is the workload's own, so the identity proof holds); the plans the allocators make
with them are proved by the symbolic checker and pass the execution check; a copy that computes something
else, or sits where its register is overwritten, is caught; and the kernels build and run from them.
"""

from __future__ import annotations

import pytest

from engine.alloc import ALLOCATORS, allocate
from engine.check.symbolic import check_allocation
from engine.check.verify import static_conflicts, verify_execution
from engine.identity import prove_identity
from engine.ir.core import Block, Imm, Instruction, replace_blocks
from engine.ir.parser import parse
from engine.ir.spill import has_spill_code, remat_definitions, remove_spill_code, spill_code_of, spill_insertion
from engine.predict import predicted_plan
from engine.workloads import input_model
from engine.workloads.gemm import Gemm, build_gemm

LOOP = parse(""".kernel k
.block entry
  %pa:u64 = param A
  %n:i32 = param n
  %t:i32 = sreg.tid.x
  %four:i32 = mov 4
  %o:u64 = mul.wide.s32 %t, 4
  %a:u64 = add %pa, %o
  %x:f32 = ld.global %a, 0
  %s:f32 = mul %x, 2
  %i:i32 = mov 0
  %g:pred = setp.lt %t, 3
  %h:i32 = mov 1
  %h:i32 = @%g mov 2
  br loop
.block loop
  %k:i32 = mul %t, %four
  %i:i32 = add %i, %k
  %p:pred = setp.lt %i, %n
  cbr %p, loop, done
.block done
  st.global %a, 0, %s
  exit
""")


def test_only_values_the_same_wherever_computed_qualify():
    found = remat_definitions(LOOP)
    # parameters, a special register, a constant, integer arithmetic on them, and k (inside a loop, computed
    # from t and four alone: the same every trip)
    assert sorted(found) == ["a", "four", "k", "n", "o", "pa", "t"]
    # x is loaded (memory), s floating-point arithmetic, i defined twice (and carried around the loop),
    # h guarded, g a predicate
    for name in ("x", "s", "i", "h", "g", "p"):
        assert name not in found


def test_copies_are_spill_code_the_checker_and_removal_recognise():
    r = spill_insertion(LOOP, {}, remat={"k", "a"})
    code = spill_code_of(r.program, {})
    assert code.remats == r.code.remats and len(code.remats) == 11    # a read twice: pa, t, o, a each time; k: t, four, k
    assert code.rematerialised == r.code.rematerialised == {"a", "k", "pa", "t", "o", "four"}
    assert remove_spill_code(r.program, {}) == LOOP
    assert has_spill_code(r.program, {}) and not has_spill_code(LOOP, {})


def test_a_lookalike_copy_is_not_spill_code():
    r = spill_insertion(LOOP, {}, remat={"k"})
    # the copy of %four computes 5 instead of 4: not a copy of %four, so it stays in the program without
    # spill code and the program is no longer the original one
    program = _replace(r.program, lambda ins: Instruction("mov", ins.defs, (Imm("5"),), phase=ins.phase)
                       if ins.defs and ins.defs[0].name == "four.m1" else ins)
    assert remove_spill_code(program, {}) != LOOP
    assert len(spill_code_of(program, {}).remats) == 2


def _replace(program, change):
    blocks = [Block(b.name, tuple(change(ins) for ins in b.instructions)) for b in program.blocks]
    return replace_blocks(program, blocks)


def _gemm(m, n, k):
    w = Gemm(m, n, k)
    program, options = build_gemm(w)
    return program, w.as_dict(), options


#: a case where each allocator rematerialises (each spills %alpha and %beta, or naive its first values, there)
CASES = {"chaitin-briggs": ("gemm 8x8x8", 80), "dsatur": ("gemm 4x4x4", 16), "linear-scan": ("gemm 4x4x4", 16),
         "linear-scan-hull": ("gemm 4x8x3", 16), "naive": ("gemm 4x4x4", 16)}


@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_rematerialised_plans_are_proved_and_pass_the_execution_check(allocator):
    label, budget = CASES[allocator]
    program, workload, options = _gemm(*map(int, label.split()[1].split("x")))
    a = allocate(allocator, program, budget)
    plan = predicted_plan(a, workload=workload, options=options)
    assert plan.predicted.remat_instructions >= plan.predicted.rematerialised_values > 0
    assert not static_conflicts(a.program, a.assignment, a.spills, budget)
    assert check_allocation(a.program, a.assignment, a.spills) == []
    check = verify_execution(a.program, a.assignment, a.spills, model=input_model(workload, options))
    assert check.stores > 0 and check.covered
    assert prove_identity(a.program, a.spills, workload, options).moved == 0


def test_the_allocators_rematerialise_alpha_and_beta_where_they_would_spill_them():
    program, workload, options = _gemm(8, 8, 8)
    remat = predicted_plan(allocate("chaitin-briggs", program, 80)).predicted
    spill = predicted_plan(allocate("chaitin-briggs", program, 80, spill_everywhere=True)).predicted
    assert remat.rematerialised_values == 2 and remat.spilled_values < spill.spilled_values
    assert remat.spill_stores + remat.spill_loads < spill.spill_stores + spill.spill_loads
    assert remat.local_bytes < spill.local_bytes
    assert spill.rematerialised_values == spill.remat_instructions == 0


def test_a_copy_whose_register_is_overwritten_before_its_read_is_caught():
    program, workload, options = _gemm(8, 8, 8)
    a = allocate("chaitin-briggs", program, 80)
    code = a.spill_code
    i = code.remats[0]
    copy = a.program.instructions[i].defs[0].name
    reader = i + 1
    assert copy in a.program.instructions[reader].uses
    # give the copy the register of a value live across it: that value is clobbered, or the copy is
    victim = next(n for n in a.program.instructions[reader].uses if n != copy)
    broken = {**a.assignment, copy: a.assignment[victim]}
    assert check_allocation(a.program, broken, a.spills)
