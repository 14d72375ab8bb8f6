"""A few plans, their programs with spill code and their kernel modules equal the texts under tests/golden/,
and a difference is shown as a unified diff (tests/golden_text.py)."""

import pytest

from tests.golden_text import FOLDER, SAMPLES, SUFFIXES, differences


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_equals_its_golden_texts(name):
    assert all((FOLDER / (name + s)).exists() for s in SUFFIXES), f"no golden texts for {name}: write them"
    diffs = differences(name)
    assert not diffs, "\n".join(diffs)


def test_a_difference_reads_as_a_unified_diff(tmp_path, monkeypatch):
    """The failure message names the file and shows the changed lines, not a digest."""
    import tests.golden_text as golden

    name = "gemm_2x2x2.naive.8"
    for s in SUFFIXES:
        text = (FOLDER / (name + s)).read_text()
        (tmp_path / (name + s)).write_text(text.replace('"budget": 8', '"budget": 9') if s == ".plan.json" else text)
    monkeypatch.setattr(golden, "FOLDER", tmp_path)
    (diff,) = golden.differences(name)
    assert f"--- golden/{name}.plan.json" in diff and '\n- "budget": 9,\n' in diff and '\n+ "budget": 8,\n' in diff
