"""Every allocator's plans on the golden programs are bit-identical to the digests written before the redesign."""

import json

import pytest

from tests.engine.golden_plans import GOLDEN, digests


@pytest.mark.slow
def test_plans_equal_the_golden_digests():
    stored = json.loads(GOLDEN.read_text())
    found = digests()
    assert sorted(found) == sorted(stored)
    changed = sorted(k for k in found if found[k] != stored[k])
    assert not changed, f"{len(changed)} plans differ from the golden ones, e.g. {changed[:5]}"
