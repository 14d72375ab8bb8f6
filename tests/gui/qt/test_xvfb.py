"""One end-to-end test of the event path: the real window on Xvfb, a click from xdotool through the X server,
xcb and Qt to the plans list (issue 22). Every other window test sends Qt events (QTest); this one sends none."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _free_display() -> int:
    return next(n for n in range(90 + os.getpid() % 50, 400) if not Path(f"/tmp/.X11-unix/X{n}").exists()
                and not Path(f"/tmp/.X{n}-lock").exists())


@pytest.mark.slow
def test_a_click_from_xdotool_on_xvfb_selects_a_plan_in_the_real_window(tmp_path):
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: the end-to-end X test needs Xvfb and xdotool "
                    "(apt-get install xvfb xdotool)")
    number = _free_display()
    server = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {**os.environ, "DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb",
           "REGTUNE_SESSION_DIR": str(tmp_path / "session"), "PYTHONPATH": str(ROOT)}
    child = None
    try:
        deadline = time.monotonic() + 20
        while not Path(f"/tmp/.X11-unix/X{number}").exists():
            assert server.poll() is None and time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.05)
        child = subprocess.Popen([sys.executable, "-m", "tests.gui.qt.xdriven_window"], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = child.stdout.readline()
        assert line.startswith("READY "), line or child.stderr.read()    # NO-WINDOW: what Qt's xcb plugin lacks
        ready = line.split()
        x, y, before = int(ready[1]), int(ready[2]), ready[3]
        assert before != "naive"                         # the window opens on the best verified plan
        subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y), "click", "1"], env=env, check=True,
                       timeout=20, capture_output=True)
        said = child.stdout.readline().split()
        assert said == ["CURRENT", "naive"], (said, child.stderr.read())
        assert child.wait(timeout=30) == 0
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        server.terminate()
        server.wait(timeout=10)
