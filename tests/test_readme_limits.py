"""The README's table of limits states the figures the code enforces (a changed limit fails here first)."""

import re
from pathlib import Path

from engine.base import limits
from engine.ir import rules as ir_rules
from kernels.build import Limits
from kernels.run import SIMULATOR_TIMEOUT_S

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _row(label: str) -> str:
    rows = [line for line in README.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, f"README has no single limits row for {label!r}"
    return rows[0]


def _numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


def test_readme_limits_table_matches_the_code():
    assert f"{limits.MAX_FILE_BYTES // 2 ** 20} MiB" in _row("plan, session or program file")
    assert _numbers(_row("instructions in one program")) == [limits.MAX_INSTRUCTIONS]
    assert _numbers(_row("blocks in one program")) == [limits.MAX_BLOCKS]
    assert _numbers(_row("operands / results of one instruction")) == [limits.MAX_OPERANDS, limits.MAX_DEFS]
    assert _numbers(_row("IR names, immediates")) == [limits.MAX_NAME, limits.MAX_IMMEDIATE]
    assert "-2^63..2^64-1 (read as i32 or pred: -2^31..2^32-1)" in _row("integer immediates")
    assert (ir_rules.INT64, ir_rules.INT32) == ((-2 ** 63, 2 ** 64 - 1), (-2 ** 31, 2 ** 32 - 1))
    assert _numbers(_row("registers live at once (MAXLIVE)")) == [limits.MAX_LIVE]
    assert _numbers(_row("loops and ifs nested in one another")) == [limits.MAX_NESTING]
    assert _numbers(_row("interference edges of one program")) == [limits.MAX_INTERFERENCE_EDGES]
    assert _numbers(_row("execution check"))[:2] == [int(limits.CHECK_SECONDS), limits.MAX_STEPS]
    assert _numbers(_row("one NVVM compile")) == [int(Limits.seconds), Limits.memory_mb]
    assert _numbers(_row("one simulator run")) == [SIMULATOR_TIMEOUT_S]
    assert f"0..{limits.MAX_SPILL_SLOT}" in README


def test_readme_store_commands_read_the_store_they_name():
    """Each command of 'Using the command' that reads a store names s.sqlite, and a sweep there makes it: the
    Kernel Tuner line once read the default store, and no line made s.sqlite, so both failed as written."""
    block = README.split("## Using the command", 1)[1].split("```", 2)[1]
    readers = [line for line in block.splitlines()
               if re.match(r"regtune (report sweep|export sweep|screenshot --view store)", line)]
    assert len(readers) >= 4
    assert re.search(r"^regtune sweep .*--store s\.sqlite", block, re.M), "nothing in the block makes s.sqlite"
    assert all("--store s.sqlite" in line for line in readers), readers
