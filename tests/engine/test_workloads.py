"""The workload registry: every workload keeps the protocol, and a third one added by a test alone runs the
whole pipeline (analyze, allocate, check, kernel source, NVVM + ptxas build) without touching other code."""

import json
from dataclasses import dataclass

import pytest

from engine.base import fields
from engine.base.errors import PlanError, RegtuneError
from engine.check.inputs import InputModel
from engine.ir.core import Program
from engine.ir.parser import parse
from engine.workloads import (WORKLOADS, Flag, Workload, check_workload, config_label, parse_config_label, register,
                              unregister, workload_named)


@pytest.mark.parametrize("name", [n for n in WORKLOADS if WORKLOADS[n].example is not None])
def test_every_workload_round_trips_configs_labels_and_plan_fields(name):
    w = workload_named(name)
    assert isinstance(w, Workload)
    configs = w.configs()
    assert len(configs) == len(set(configs)) > 0 and w.example in configs
    for c in configs[:: max(1, len(configs) // 50)]:
        data = w.to_dict(c)
        assert data["kind"] == name and w.from_dict(data, "t") == c
        assert check_workload(data, {}, "t")[0] == data
        assert parse_config_label(config_label(data)) == data


def test_a_taken_name_and_an_incomplete_workload_are_refused():
    with pytest.raises(RegtuneError, match="'gemm' is registered already"):
        register(WORKLOADS["gemm"])
    with pytest.raises(RegtuneError, match="lacks part of the Workload protocol"):
        register(object())
    with pytest.raises(RegtuneError, match=r"unknown workload 'conv' \(known: gemm, mha, program\)"):
        unregister("conv")


# -- a toy third workload: Z[t] = dot(X[t], Y[t]) for vectors of LENGTH elements, one thread each --------

@dataclass(frozen=True)
class Dot:
    length: int


def dot_program(length: int) -> Program:
    lines = [".kernel dot_n%d" % length, ".block entry", "  %px:u64 = param X", "  %py:u64 = param Y",
             "  %pz:u64 = param Z", "  %batch:i32 = param batch", "  %lane:i32 = sreg.tid.x",
             "  %block:i32 = sreg.ctaid.x", "  %tid:i32 = fma %block, 32, %lane", "  %inside:pred = setp.lt %tid, %batch", "  cbr %inside, body, done", ".block body",
             f"  %e:i32 = mul %tid, {length}"]
    for v in ("x", "y"):
        lines += [f"  %o{v}:u64 = mul.wide.s32 %e, 4", f"  %t{v}:u64 = add %p{v}, %o{v}"]
    lines += ["  %oz:u64 = mul.wide.s32 %tid, 4", "  %tz:u64 = add %pz, %oz"]
    for i in range(length):
        lines += [f"  %x_{i}:f32 = ld.global %tx, {4 * i}", f"  %y_{i}:f32 = ld.global %ty, {4 * i}"]
        lines.append("  %acc:f32 = mul %x_0, %y_0" if i == 0 else f"  %acc:f32 = fma %x_{i}, %y_{i}, %acc")
    lines += ["  st.global %tz, 0, %acc", "  exit", ".block done", "  exit"]
    return parse("\n".join(lines) + "\n")


class DotWorkload:
    name = "dot"
    title = "dot product (source 'dot')"
    example = Dot(4)
    flags = (Flag("--length", "length", int, required=True, help="elements per vector, 2..8"),)

    def from_dict(self, data, where):
        fields.exact_keys(data, ("kind", "length"), where, required=("kind", "length"))
        return Dot(fields.integer(data, "length", where, 2, 8))

    def to_dict(self, config):
        return {"kind": "dot", "length": config.length}

    def configs(self):
        return [Dot(n) for n in range(2, 9)]

    def build(self, config, options):
        return dot_program(config.length), {"threads_per_block": 32}

    def label(self, config):
        return f"dot {config.length}"

    def parse_label(self, words):
        return Dot(int(words[0]))

    def check_options(self, config, options, where):
        fields.exact_keys(options, ("threads_per_block", "arch"), where)
        return dict(options)

    def input_model(self, config, options):
        # one block of 32 threads and a batch that ends inside it: both sides of the guard get drawn
        return InputModel.of({"%tid.x": (0, 31), "%ctaid.x": (0, 0), "batch": (8, 24)})

    def from_flags(self, values):
        return Dot(values["length"]), {}


DOT_HARNESS = '''
def grid(batch):
    return (batch + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, THREADS_PER_BLOCK


def make_inputs(batch, seed=0):
    rng = np.random.default_rng(seed)
    x, y = (rng.uniform(-1, 1, batch * LENGTH).astype(np.float32) for _ in range(2))
    return {"X": x, "Y": y, "Z": np.full(batch, np.nan, np.float32), "batch": np.int32(batch)}


def check(inputs, output):
    b = int(inputs["batch"])
    expected = (inputs["X"].astype(np.float64) * inputs["Y"]).reshape(b, LENGTH).sum(axis=1)
    error = float(np.max(np.abs(output["Z"] - expected)))
    return error, error <= TOLERANCE


def launch_args(inputs, device=None):
    return [inputs[name] if device is None else device.get(name, inputs[name]) for name in PARAMS[:-1]] + [np.int32(0)]


def simulator_runs(request):
    return [{"inputs": make_inputs(40, request.get("seed", 0)), "grid": grid(40)}]


def gpu_run(request):
    batch = request.get("batch") or 4096
    return {"inputs": make_inputs(batch, request.get("seed", 0)), "grid": grid(batch), "batch": batch}


def main_run():
    return make_inputs(DEFAULT_BATCH), grid(DEFAULT_BATCH)


OUTPUT = "Z"
DEFAULT_BATCH = 64
'''


@pytest.fixture
def dot():
    """The toy workload and its kernel harness, registered for one test only."""
    from kernels.harness import HARNESSES, Harness
    from kernels.harness import register as register_harness
    from kernels.harness import unregister as unregister_harness

    register(DotWorkload())
    register_harness(Harness("dot", DOT_HARNESS, lambda plan, trips: {"LENGTH": plan.workload["length"],
                                                                        "TOLERANCE": 1e-5}, ("LENGTH", "TOLERANCE")))
    try:
        yield WORKLOADS["dot"]
    finally:
        unregister_harness("dot")
        unregister("dot")
    assert "dot" not in WORKLOADS and "dot" not in HARNESSES


def _allocated(tmp_path, capsys, length=5):
    from gui.cli.main import main

    out = tmp_path / "dot.json"
    assert main(["allocate", "dot", "--length", str(length), "--allocator", "dsatur", "--budget", "24",
                 "--out", str(out)]) == 0
    assert "execution check (sampled): the same stores on" in capsys.readouterr().out
    return out


def test_a_toy_workload_runs_analyze_allocate_and_check_through_the_registry(dot, tmp_path, capsys):
    from gui.cli.main import admit_plan, main

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


def test_a_toy_workload_gets_its_harness_in_the_kernel_module_and_is_gone_after(dot, tmp_path, capsys):
    from engine.planfile import load_plan
    from kernels.codegen import kernel_source

    plan = load_plan(_allocated(tmp_path, capsys, length=3))
    text = kernel_source(plan).text
    assert "LENGTH = 3" in text and "def simulator_runs(" in text and "inputs, (blocks, threads) = main_run()" in text
    unregister("dot")
    try:
        with pytest.raises(PlanError, match="field 'kind' must be one of gemm, mha, program, got 'dot'"):
            load_plan(tmp_path / "dot.json")
    finally:
        register(DotWorkload())


@pytest.mark.slow
def test_a_toy_workload_builds_with_nvvm_and_ptxas_and_passes_the_simulator(dot, tmp_path, capsys):
    from engine.planfile import load_plan
    from kernels.build import build_plan
    from kernels.run import simulate

    plan = load_plan(_allocated(tmp_path, capsys))
    build = build_plan(plan, ("sm_80",), use_cache=False)
    assert ".entry" in build.ptx and build.archs["sm_80"].report.registers > 0
    result = simulate(plan)
    assert result.ok is True and result.runs == 1, result
