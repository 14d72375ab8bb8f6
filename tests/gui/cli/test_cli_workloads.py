"""The toy workload of tests/engine/test_workloads.py through the command: registered workloads get
analyze, configs, allocate and check with no change to the command."""

import json

from engine.workloads import config_label, parse_config_label
from gui.cli.common import admit_plan
from gui.cli.main import main
from tests.engine.test_workloads import dot  # noqa: F401  (the fixture)


def _allocated(tmp_path, capsys, length=5):
    out = tmp_path / "dot.json"
    assert main(["allocate", "dot", "--length", str(length), "--allocator", "dsatur", "--budget", "24",
                 "--out", str(out)]) == 0
    assert "execution check (sampled): the same stores on" in capsys.readouterr().out
    return out


def test_a_toy_workload_runs_analyze_allocate_and_check_through_the_registry(dot,  # noqa: F811
                                                                                      tmp_path, capsys):
    assert main(["analyze", "dot", "--length", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kernel"] == "dot_n5" and summary["maxlive"] >= 7   # 4 pointers (2 registers each) + acc
    assert main(["analyze", "dot"]) == 2 and "dot needs --length" in capsys.readouterr().err
    assert main(["configs", "dot", "--count"]) == 0 and capsys.readouterr().out == "7\n"
    path = _allocated(tmp_path, capsys)
    admitted = admit_plan(str(path))
    plan, check = admitted.plan, admitted.check
    assert admitted.identity.label == "dot 5" and admitted.identity.moved == 0
    assert check.verified and check.stores > 0 and plan.workload == {"kind": "dot", "length": 5}
    assert main(["check", str(path)]) == 0 and "kernel module: can be generated" in capsys.readouterr().out
    assert config_label(plan.workload) == "dot 5" and parse_config_label("dot 5") == plan.workload
