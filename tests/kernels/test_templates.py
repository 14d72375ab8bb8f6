"""The kernel-module templates are real modules whose text after the marker is what codegen embeds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernels import codegen
from kernels.templates import MARKER, template_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_texts_are_the_template_files_after_their_marker():
    for name in ("helpers", "main"):
        text = (ROOT / "kernels" / "templates" / f"{name}.py").read_text()
        assert text.endswith(template_text(name)) and text.count(MARKER) == 1
    assert codegen._HELPERS == template_text("helpers")
    assert codegen._MAIN.format(name="gemm_k") == template_text("main").replace("KERNEL_FUNCTION", "gemm_k")


def test_the_module_names_come_from_the_templates():
    assert {"kernel", "_EXCHANGE", "_simulated_shfl_xor_sync", "threading", "kernelapi"} <= codegen._MODULE_NAMES
    assert "KERNEL_FUNCTION" not in codegen._MODULE_NAMES      # a stand-in above the marker, never embedded


def test_a_generated_module_holds_the_templates_once_with_the_kernel_s_name():
    from tests.kernels.conftest import gemm_plan

    source = codegen.kernel_source(gemm_plan(2, 2, 2))
    assert source.text.count(template_text("helpers")) == 1
    assert f"return cuda.jit({source.name})" in source.text and "KERNEL_FUNCTION" not in source.text


@pytest.mark.slow
def test_in_the_simulator_the_helpers_shuffle_and_main_compiles_the_kernel_function():
    script = textwrap.dedent("""
        import numpy as np
        from numba import cuda
        from numba.cuda.simulator import kernelapi
        import kernels.templates.helpers as helpers
        from kernels.templates import main

        assert kernelapi.FakeCUDAModule.shfl_xor_sync is helpers._simulated_shfl_xor_sync
        assert main.kernel().py_func is main.KERNEL_FUNCTION

        @cuda.jit
        def swap(out):
            i = cuda.threadIdx.x
            out[i] = cuda.shfl_xor_sync(0xFFFFFFFF, i * 10, 2)

        out = np.zeros(4, dtype=np.int64)
        swap[1, 4](out)
        print(out.tolist())
    """)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[20,", "30,", "0,", "10]"]


def test_without_the_simulator_importing_the_helpers_patches_nothing():
    import kernels.templates.helpers as helpers

    assert not hasattr(helpers, "_simulated_shfl_xor_sync")


def test_the_template_and_harness_files_pass_the_linter():
    """Issue 11: the texts generated modules are made of are real .py files, linted like the rest (pyflakes
    rules: undefined and unused names, syntax errors), not strings nothing checks."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    r = subprocess.run([ruff, "check", "--no-cache", "--select", "F,E9", "kernels/templates", "kernels/harness"],
                       capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed" in r.stdout
