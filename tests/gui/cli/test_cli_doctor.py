"""``regtune doctor``: every tool NVIDIA's wheels gave, and the device (or why there is none)."""

import re

from gui.cli.main import main


def test_doctor_lists_every_tool_and_the_device(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for what in ("ptxas", "nvdisasm", "nvvm", "cuda device"):
        assert re.search(rf"^{what}\s+\S", out, re.M), out
    assert "release 13" in out
