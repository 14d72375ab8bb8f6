"""The build cache heals itself: a bad entry is a miss that is rebuilt and overwritten; an unusable root gives
one warning and an uncached build. Real NVVM, ptxas and nvdisasm; a cache folder of the test's own."""

import json

import pytest

from kernels.build import CACHE_FORMAT, build_plan
from tests.kernels.conftest import gemm_plan

ARCH = ("sm_80",)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("REGTUNE_CACHE_DIR", str(root))
    return root


def _entries(root, kind):
    return sorted((root / kind).iterdir())


def _envelope(content: str) -> str:
    import hashlib

    return json.dumps({"format": CACHE_FORMAT, "kind": "measure", "content": content,
                       "sha256": hashlib.sha256(content.encode()).hexdigest()})


MEASURE_DAMAGE = {
    "truncated": lambda text: text[: len(text) // 2],
    "garbage": lambda text: "\x00\xff garbage",
    "empty": lambda text: "",
    "hand-edited (checksum no longer matches)": lambda text: text.replace('"registers\\": ', '"registers\\": 1'),
    "wrongly shaped, with a correct checksum": lambda text: _envelope(json.dumps({"report": {"registers": "many"}})),
    "the previous version's plain JSON": lambda text: json.loads(text)["content"],
}


@pytest.mark.slow
def test_every_kind_of_damaged_entry_is_rebuilt_and_overwritten(cache):
    plan = gemm_plan(2, 2, 3, "dsatur")
    first = build_plan(plan, ARCH)
    assert not first.cached and not first.cache_warning
    entries = _entries(cache, "measure")          # ptxas at the plan cap (with its SASS) and with no cap
    assert len(entries) == 2
    [measure] = [e for e in entries if '"-maxrregcount=' in e.read_text()]
    good = measure.read_text()
    for what, damage in MEASURE_DAMAGE.items():
        measure.write_text(damage(good), encoding="utf-8", errors="surrogateescape")
        again = build_plan(plan, ARCH)
        assert "ptxas sm_80 plan cap" in again.timings_ms, f"{what}: the damaged entry was used"
        assert again.archs["sm_80"].report.registers == first.archs["sm_80"].report.registers, what
        assert again.archs["sm_80"].sass_text == first.archs["sm_80"].sass_text, what
        stored = json.loads(measure.read_text())
        assert stored["format"] == CACHE_FORMAT and "registers" in stored["content"], f"{what}: not overwritten"
        assert build_plan(plan, ARCH).cached, f"{what}: the rewritten entry is not used"
    measure.unlink()
    measure.mkdir()                                            # a folder where the entry should be
    assert "ptxas sm_80 plan cap" in build_plan(plan, ARCH).timings_ms and measure.is_file()
    [ptx] = _entries(cache, "ptx")
    ptx.write_text(ptx.read_text().replace(".entry", ".entri"))   # hand-edited PTX: the checksum catches it
    healed = build_plan(plan, ARCH)
    assert "nvvm" in healed.timings_ms and healed.ptx == first.ptx


@pytest.mark.slow
@pytest.mark.parametrize("root", ["a file", "/proc/regtune-cache"])
def test_an_unusable_cache_root_gives_one_warning_and_an_uncached_build(tmp_path, monkeypatch, root):
    if root == "a file":
        path = tmp_path / "cache-file"
        path.write_text("not a folder")
        root = str(path)
    monkeypatch.setenv("REGTUNE_CACHE_DIR", root)
    build = build_plan(gemm_plan(2, 2, 3, "dsatur"), ARCH)
    assert build.cache_warning.startswith(f"build cache {root} is unusable") and "\n" not in build.cache_warning
    assert build.archs["sm_80"].report.registers > 0 and not build.cached


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["a FIFO", "a link to /dev/zero"])
def test_an_entry_that_is_not_a_regular_file_is_a_miss_that_costs_nothing(cache, kind):
    import os

    plan = gemm_plan(2, 2, 3, "dsatur")
    build_plan(plan, ARCH)
    [ptx] = _entries(cache, "ptx")
    ptx.unlink()
    if kind == "a FIFO":
        os.mkfifo(ptx)               # reading it would wait for a writer for ever
    else:
        ptx.symlink_to("/dev/zero")  # reading it would never end
    again = build_plan(plan, ARCH)
    assert "nvvm" in again.timings_ms and ptx.is_file() and not ptx.is_symlink()
