"""The real NVVM, ptxas and nvdisasm from NVIDIA's wheels, and the parsers of what they print."""

from __future__ import annotations

import re
import subprocess

import pytest

import kernels.toolchain as toolchain
from engine.base.errors import RegtuneError
from gui.cli.main import main
from kernels.build import build_plan
from kernels.sass import SassError, parse_sass
from kernels.toolchain import ToolchainError, find_tool, parse_ptxas, ptxas
from tests.kernels.conftest import gemm_plan


def test_tools_come_from_nvidia_wheels():
    for name in ("ptxas", "nvdisasm"):
        path = find_tool(name)
        assert path.is_file() and "site-packages" in str(path) and "nvidia" in str(path)
    assert toolchain.nvvm_version().startswith("NVVM ")


def test_doctor_lists_every_tool_and_the_device(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for what in ("ptxas", "nvdisasm", "nvvm", "cuda device"):
        assert re.search(rf"^{what}\s+\S", out, re.M), out
    assert "release 13" in out


def test_a_missing_tool_names_its_package(monkeypatch):
    import cuda.pathfinder

    toolchain.find_tool.cache_clear()
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    try:
        with pytest.raises(ToolchainError, match=r"ptxas not found in NVIDIA's pip wheels; pip install nvidia-cuda-nvcc"):
            find_tool("ptxas")
    finally:
        toolchain.find_tool.cache_clear()


def test_unrecognised_ptxas_output_is_an_error_quoting_the_line():
    text = "ptxas info    : Used 40 registers, used 0 barriers\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Something new = 3"
    with pytest.raises(ToolchainError, match=r"unrecognised ptxas output: 'ptxas info    : Something new = 3'"):
        parse_ptxas(text, "sm_80")
    with pytest.raises(ToolchainError, match="no 'Used N registers' line"):
        parse_ptxas("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", "sm_80")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_parsed_registers_equal_what_ptxas_prints(arch, tmp_path):
    build = build_plan(gemm_plan(4, 4, 4, "chaitin-briggs"), (arch,))
    ptx = tmp_path / "k.ptx"
    ptx.write_text(build.ptx)
    for report in (build.archs[arch].report, build.archs[arch].compiler):   # each run again with its own flags
        done = subprocess.run([str(find_tool("ptxas")), *report.flags, str(ptx), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True, check=True)
        printed = int(re.search(r"Used (\d+) registers", done.stdout + done.stderr).group(1))
        assert report.registers == printed
    assert build.archs[arch].sass.maxlive <= build.archs[arch].report.registers


def test_a_cap_below_the_need_makes_ptxas_spill_and_the_report_says_so():
    build = build_plan(gemm_plan(8, 8, 8), ("sm_80",), spills="compiler")
    report, _ = ptxas(build.ptx, "sm_80", 32)
    assert report.registers <= 32
    assert report.spill_store_bytes > 0 and report.spill_load_bytes > 0
    with pytest.raises(RegtuneError, match=r"^-maxrregcount=16 is not a cap ptxas applies on sm_80: it takes 24\.\.255"):
        ptxas(build.ptx, "sm_80", 16)                     # ptxas would raise it to 24: never passed


def test_sass_live_ranges_add_up_to_nvdisasm_counts():
    build = build_plan(gemm_plan(6, 4, 5, "dsatur"), ("sm_80",))
    sass = build.archs["sm_80"].sass
    covered = [0] * len(sass.pressure)
    for start, end in zip(sass.seg_start.tolist(), sass.seg_end.tolist()):
        for i in range(start, end + 1):
            covered[i] += 1
    assert covered == sass.pressure.tolist()
    assert sass.maxlive <= build.archs["sm_80"].report.registers
    assert sass.mix()["global loads"] >= 1 and sass.mix()["global stores"] == 24


def test_sass_parser_rejects_output_without_life_ranges():
    with pytest.raises(SassError, match="no life-range header"):
        parse_sass("        /*0000*/   EXIT ;\n")
    header = "// |   # 01 |\n"
    with pytest.raises(SassError, match="counts 2 live registers at /\\*0000\\*/, the marks show 1"):
        parse_sass(header + "        /*0000*/   MOV R0, R1 ;   // |   2 ^  |\n")


def test_a_second_identical_build_compiles_nothing():
    plan = gemm_plan(3, 4, 5, "naive", tile=(3, 2))
    first = build_plan(plan, ("sm_80", "sm_90"))
    again = build_plan(plan, ("sm_80", "sm_90"))
    assert again.cached and "nvvm" not in again.timings_ms
    assert not any(k.startswith(("ptxas", "nvdisasm")) for k in again.timings_ms)
    assert again.ptx == first.ptx and again.archs["sm_90"].report == first.archs["sm_90"].report
    assert build_plan(plan.with_(budget=64), ("sm_80", "sm_90")).cached      # the budget is no flag: nothing runs
    wider = plan.with_(assignment={v: tuple(r + 2 for r in regs) for v, regs in plan.assignment.items()})
    other = build_plan(wider, ("sm_80",))       # two more registers: another plan cap, ptxas runs again at it only
    assert other.archs["sm_80"].report.max_registers == first.archs["sm_80"].report.max_registers + 2
    assert "ptxas sm_80 plan cap" in other.timings_ms and "nvvm" not in other.timings_ms
    assert "ptxas sm_80 no cap" not in other.timings_ms
