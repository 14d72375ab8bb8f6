"""The whole config spaces: every config builds, parses back, and verifies under every allocator."""

import pytest

from engine.alloc import ALLOCATORS
from engine.sweep import parses_back, program_key, run_parallel
from engine.workloads.gemm import build_gemm, gemm_configs
from engine.workloads.mha import Mha, build_mha, mha_configs
from tests.bench.bench_sweeps import main


def _gemm_parses_back(w):
    return parses_back(build_gemm(w)[0])


def _mha_parses_back(key):
    heads, head_dim, groups = key
    return parses_back(build_mha(Mha(heads, 64, head_dim, groups))[0])


@pytest.mark.slow
def test_every_config_of_both_spaces_verifies_under_every_allocator(capsys):
    results = main([])
    with capsys.disabled():
        print("\n" + capsys.readouterr().out)
    for name, expected in (("GEMM", 3375), ("MHA", 1512)):
        rows = results[name]["rows"]
        assert len(rows) == expected
        assert [r for r in rows if "error" in r] == []
        assert all(set(r["allocators"]) == set(ALLOCATORS) for r in rows)


@pytest.mark.slow
def test_every_gemm_program_parses_back_from_its_text():
    assert all(run_parallel(_gemm_parses_back, gemm_configs()))


@pytest.mark.slow
def test_every_mha_program_parses_back_and_batch_only_changes_the_grid():
    keys = sorted({program_key(c) for c in mha_configs()})
    assert len(keys) == 168
    assert all(run_parallel(_mha_parses_back, keys))
    assert build_mha(Mha(32, 1, 64, 4))[0] == build_mha(Mha(32, 1024, 64, 4))[0]
