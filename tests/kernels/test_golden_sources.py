"""Generated kernel sources are byte-identical to the digests written before codegen was split (issue 11)."""

import json

import pytest

from tests.kernels.golden_sources import GOLDEN, digests


@pytest.mark.slow
def test_kernel_sources_equal_the_golden_digests():
    stored = json.loads(GOLDEN.read_text())
    found = digests()
    assert sorted(found) == sorted(stored)
    changed = sorted(k for k in found if found[k] != stored[k])
    assert not changed, f"{len(changed)} kernel sources differ from the golden ones, e.g. {changed[:5]}"
