"""Runs the interpreter benchmark once in the test suite, so CI prints its figures.

Timing figures are read from the output, not asserted; what is asserted cannot
be flaky: both paths gave the same stores inside the benchmark, and the
interpreter's own choice (engine.check.interp.COMPILE_AT) compiles the MHA
example and leaves the 5,000-instruction programs on the loop.
"""

import pytest

from engine.check.interp import decode, run
from tests.bench.bench_interp import _programs, main


@pytest.mark.slow
def test_interp_benchmark_runs_and_prints_its_figures(capsys):
    results = main(["--repeat", "1"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert [r["label"] for r in results["rows"]] == [label for label, *_ in _programs()]
    assert "sum(range(10**7))" in out
    for label, program, registers, model in _programs():
        decoded = decode(program, registers)
        run(program, 0, registers, decoded=decoded, **({} if model is None else {"model": model}))
        assert decoded.worth is label.startswith("MHA"), label
