"""Test configuration: headless Qt, deterministic hypothesis in CI, a fresh kernel build cache per session
(one folder shared by all of pytest-xdist's workers of that session)."""

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory):
    """Kernel builds go to a folder of this session (cold at the start, shared by the tests after).

    Under pytest-xdist each worker has a base folder of its own below the session's: the cache is one folder
    beside them, so a kernel one worker built is a hit for the other (entries are written atomically).
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / "regtune-cache"
        path.mkdir(exist_ok=True)
    else:
        path = tmp_path_factory.mktemp("regtune-cache")
    old = os.environ.get("REGTUNE_CACHE_DIR")
    os.environ["REGTUNE_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("REGTUNE_CACHE_DIR", None)
    else:
        os.environ["REGTUNE_CACHE_DIR"] = old
