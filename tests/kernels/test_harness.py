"""The kernel harnesses as files of their own: importable, their checks catch a wrong output, and the
text a kernel module embeds is exactly the file's part below the marker."""

from pathlib import Path

import numpy as np

from kernels.harness import HARNESSES, MARKER, gemm, mha


def test_the_gemm_check_accepts_numpy_and_catches_one_wrong_element():
    inputs = gemm.make_inputs(5, seed=3)
    right = gemm.reference(inputs).astype(np.float32)
    assert gemm.check(inputs, {"C": right})[1]
    wrong = right.copy()
    wrong[-1] += 1e-3
    assert not gemm.check(inputs, {"C": wrong})[1]
    runs = gemm.simulator_runs({"seed": 1})
    assert [int(r["inputs"]["beta"] != 0) for r in runs] == [1, 0]
    assert runs[0]["grid"][0] == 2 and gemm.grid(gemm.MATRICES_PER_BLOCK) == (1, gemm.THREADS_PER_BLOCK)


def test_the_mha_check_accepts_the_reference_and_catches_a_row_left_unwritten():
    inputs = mha.make_inputs(1, heads=mha.GROUPS)
    o = inputs["O"].reshape(1, mha.GROUPS, mha.SEQ_LEN, mha.HEAD_DIM).copy()
    rows = np.arange(mha.ROWS_PER_BLOCK)
    for g in range(mha.GROUPS):
        o[0, g, rows] = mha.reference_rows(inputs, 0, g, rows, mha.TRIPS * mha.BC)
    assert mha.check(inputs, {"O": o.reshape(-1)})[1]
    o[0, 1, 3] = np.nan
    error, ok = mha.check(inputs, {"O": o.reshape(-1)})
    assert not ok and np.isnan(error)


def test_a_kernel_module_embeds_the_file_below_the_marker():
    for name, module in (("gemm", gemm), ("mha", mha)):
        text = Path(module.__file__).read_text()
        assert HARNESSES[name].text.strip() == text.split(MARKER)[1].strip()
        assert set(module.CONSTANTS) <= HARNESSES[name].names and "constants" not in HARNESSES[name].names
