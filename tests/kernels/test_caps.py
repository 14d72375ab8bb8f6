"""Two caps per build, the plan's register count and none; their flags recorded; caps ptxas would not apply refused.

Real NVVM and ptxas: three plans at budget 255 (GEMM 8x8x8 by
chaitin-briggs, whose count is 88; GEMM 2x2x2, whose count is below
ptxas's floor; GEMM 8x8x8 by naive, which uses all 255 registers) are built
once for this module with every tool command line recorded where it is run.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from engine.model.arch import ARCHS, load_arch
from engine.base.errors import RegtuneError
from engine.plan import registers_used
from kernels import toolchain
from kernels.build import build_plan, compile_ptx, rename_entry
from kernels.codegen import kernel_source
from kernels.measurement import Measurement, Unavailable
from kernels.pipeline import budget_sweep
from kernels.report import measurement
from kernels.toolchain import find_tool, nvdisasm, ptxas
from tests.kernels.conftest import gemm_plan

BUILD_ARCHS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def built():
    """(plans, builds, every ptxas argv run while building them), the build cache off so every tool runs."""
    plans = {"8x8x8": gemm_plan(8, 8, 8, "chaitin-briggs"), "2x2x2": gemm_plan(2, 2, 2, "linear-scan"),
             "naive": gemm_plan(8, 8, 8, "naive")}
    argvs = []
    real = toolchain._run

    def recording(argv, what, *args, **kwargs):
        argvs.append([str(a) for a in argv])
        return real(argv, what, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(toolchain, "_run", recording)
        builds = {name: build_plan(plan, BUILD_ARCHS, use_cache=False) for name, plan in plans.items()}
    ptxas_runs = [argv for argv in argvs if argv[0] == str(find_tool("ptxas")) and argv[1:] != ["--version"]]
    return plans, builds, ptxas_runs


def test_every_plan_is_at_budget_255_with_the_counts_this_module_is_about(built):
    plans, _, _ = built
    assert {plan.budget for plan in plans.values()} == {255}
    assert registers_used(plans["8x8x8"].assignment) == 88
    assert registers_used(plans["2x2x2"].assignment) < 24
    assert registers_used(plans["naive"].assignment) == 255


def test_a_budget_of_255_is_never_passed_to_ptxas(built):
    _, _, runs = built
    # three plans, every arch: each ptxas ran at two caps, and once more at the plan cap on the PTX with line info
    assert len(runs) == 3 * 3 * len(BUILD_ARCHS)
    caps = sorted(next((a for a in argv if a.startswith("-maxrregcount")), "no flag") for argv in runs)
    assert caps == ["-maxrregcount=24"] * 4 + ["-maxrregcount=88"] * 4 + ["no flag"] * 10
    assert not any("-maxrregcount=255" in argv for argv in runs)


def test_a_plan_using_the_arch_maximum_gets_no_flag_and_the_sentence_says_why(built):
    plans, builds, _ = built
    m = measurement(plans["naive"], builds["naive"], Unavailable("-"), Unavailable("-"))
    for arch in BUILD_ARCHS:
        assert m.ptxas[arch].max_registers is None and m.ptxas[arch].flags == (f"-arch={arch}", "-v")
        assert m.ptxas[arch].registers == m.ptxas_compiler[arch].registers        # the same run, twice
        assert m.ptxas[arch].cap_text == "plan cap, no -maxrregcount (the plan's count is the arch's maximum)"
        assert f"the plan's 255 registers are {arch}'s maximum, which ptxas never exceeds, so the plan cap passes " \
               "no -maxrregcount" in " ".join(m.sass[arch].explanation)


def test_each_arch_is_measured_at_the_plan_cap_and_with_no_cap(built):
    _, builds, runs = built
    build = builds["8x8x8"]
    for arch, b in build.archs.items():
        assert b.report.flags == (f"-arch={arch}", "-v", "-maxrregcount=88") and b.report.max_registers == 88
        assert b.compiler.flags == (f"-arch={arch}", "-v") and b.compiler.max_registers is None
        assert b.report.registers <= 88 and b.compiler.registers > 0
        assert [*b.report.flags] in [argv[1:-3] for argv in runs]      # the recorded flags are the ones run
    # GEMM 8x8x8 k-outer: ptxas's own choice is not the plan's count (96 measured with ptxas 13.5, 88 planned)
    assert build.archs["sm_80"].compiler.registers != 88


def test_a_count_below_ptxas_floor_is_capped_at_the_floor_and_the_sentence_says_so(built):
    plans, builds, _ = built
    count = registers_used(plans["2x2x2"].assignment)
    m = measurement(plans["2x2x2"], builds["2x2x2"], Unavailable("not run (test)"), Unavailable("not run (test)"))
    for arch in BUILD_ARCHS:
        assert m.ptxas[arch].max_registers == load_arch(arch).min_register_cap == 24
        assert not any("adjusting" in w for w in m.ptxas[arch].warnings)        # ptxas took the cap as given
        assert f"the plan's {count} registers are below ptxas's floor on {arch}, so the plan cap is " \
               "-maxrregcount=24" in " ".join(m.sass[arch].explanation)


def test_report_json_has_both_caps_with_their_flags(built):
    plans, builds, _ = built
    m = measurement(plans["8x8x8"], builds["8x8x8"], Unavailable("not run (test)"), Unavailable("no CUDA device"))
    report = m.to_dict()
    for arch in BUILD_ARCHS:
        plan_cap, no_cap = report["ptxas"][arch], report["ptxas_compiler"][arch]
        assert (plan_cap["cap"], plan_cap["flags"]) == ("plan", [f"-arch={arch}", "-v", "-maxrregcount=88"])
        assert (no_cap["cap"], no_cap["flags"], no_cap["max_registers"]) == ("compiler", [f"-arch={arch}", "-v"],
                                                                            None)
        assert no_cap["registers"] == builds["8x8x8"].archs[arch].compiler.registers
    assert Measurement.from_dict(report) == m


def test_the_gap_sentences_name_the_cap_of_every_ptxas_figure(built):
    plans, builds, _ = built
    for name, plan in plans.items():
        for arch in BUILD_ARCHS:
            m = measurement(plan, builds[name], Unavailable("-"), Unavailable("-"))
            sentences = m.sass[arch].explanation
            about_ptxas = [s for s in sentences if "ptxas" in s and "floor" not in s]
            assert about_ptxas and all("plan cap" in s or "no -maxrregcount" in s for s in about_ptxas), sentences
            own = next(s for s in sentences if s.startswith("with no -maxrregcount"))
            assert f"ptxas used {builds[name].archs[arch].compiler.registers} registers" in own
            cap = m.ptxas[arch].max_registers
            flag = "no -maxrregcount" if cap is None else f"-maxrregcount={cap}"
            at_plan = next(s for s in sentences if s.startswith(f"at the plan cap ({flag})"))
            assert f"ptxas used {m.ptxas[arch].registers} registers" in at_plan


def test_ptxas_floor_in_the_arch_files_is_what_ptxas_does(built, tmp_path):
    """The floor recorded in resources/arch: ptxas raises one below it (with a warning) and takes it as given."""
    _, builds, _ = built
    path = tmp_path / "k.ptx"
    path.write_text(builds["8x8x8"].ptx)
    for arch in ARCHS:
        floor = load_arch(arch).min_register_cap
        for cap, raised in ((floor - 1, True), (floor, False)):
            done = subprocess.run([str(find_tool("ptxas")), f"-arch={arch}", "-v", f"-maxrregcount={cap}", str(path),
                                   "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True, check=True)
            text = done.stdout + done.stderr
            assert int(re.search(r"Used (\d+) registers", text).group(1)) == floor
            assert (f"lower bound of {floor}" in text) is raised, text


@pytest.mark.parametrize("cap", [0, 8, 23, 256, 1000])
def test_a_cap_the_arch_does_not_allow_is_one_clear_error(built, cap):
    _, builds, _ = built
    with pytest.raises(RegtuneError) as info:
        ptxas(builds["8x8x8"].ptx, "sm_90", cap)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"-maxrregcount={cap} is not a cap ptxas applies on sm_90")
    assert "it takes 24..255" in message


def test_the_ptx_and_sass_carry_the_short_kernel_name(built):
    _, builds, _ = built
    build = builds["8x8x8"]
    assert build.entry == "regtune_gemm_m8n8k8_t8x8_k_outer_chaitin_briggs"
    assert ".visible .entry regtune_gemm_m8n8k8_t8x8_k_outer_chaitin_briggs(" in build.ptx
    assert "_ZN" not in build.ptx and "NumbaEnv" in build.ptx
    for b in build.archs.values():
        assert "_ZN" not in b.sass_text and "regtune_gemm_m8n8k8_t8x8_k_outer_chaitin_briggs" in b.sass_text
        assert max(len(w) for w in re.findall(r"[A-Za-z_$][\w$]*", b.sass_text)) < 80     # no long symbol at all


def test_renaming_the_kernel_changes_no_instruction(built):
    """The PTX as NVVM wrote it (numba's mangled name) and renamed: same registers, same SASS but for the name."""
    plans, builds, _ = built
    source = kernel_source(plans["2x2x2"])
    mangled = compile_ptx(source)
    assert len(re.search(r"\.entry (\S+)\(", mangled).group(1)) > 150
    renamed = rename_entry(mangled, source.entry)
    assert renamed == builds["2x2x2"].ptx
    (before, cubin_before), (after, cubin_after) = ptxas(mangled, "sm_80"), ptxas(renamed, "sm_80")
    assert before.registers == after.registers == builds["2x2x2"].archs["sm_80"].compiler.registers

    def code(cubin) -> list:
        return [line.split("//")[0].strip() for line in nvdisasm(cubin).splitlines()
                if re.match(r"\s*/\*[0-9a-f]{4,}\*/", line)]
    assert code(cubin_before) == code(cubin_after)


def test_the_budget_sweep_marks_the_plans_count_and_ptxas_own_choice(built):
    plans, builds, _ = built
    sweep = budget_sweep(plans["8x8x8"], "sm_80", 80, 96)
    assert [r.maxrregcount for r in sweep.rows] == [80, 88, 96]
    assert sweep.plan_registers == 88
    assert sweep.no_cap.maxrregcount is None
    assert sweep.no_cap.registers == builds["8x8x8"].archs["sm_80"].compiler.registers
    assert sweep.rows[1].registers == builds["8x8x8"].archs["sm_80"].report.registers
    with pytest.raises(RegtuneError, match=r"^-maxrregcount=8 is not a cap ptxas applies on sm_80"):
        budget_sweep(plans["8x8x8"], "sm_80", 8, 96)
