"""NVIDIA's tools from their pip wheels: NVVM (through numba-cuda), ptxas and nvdisasm.

One wrapper per tool: temporary files, ``subprocess.run(check=True,
capture_output=True)``, clean-up in ``finally``. Tools are found inside
NVIDIA's wheels with ``cuda.pathfinder`` (never PATH, never
/usr/local/cuda); a missing one raises :class:`ToolchainError` naming the
pip package that provides it. The architecture is always explicit.

Invariant: a :class:`CompileReport` holds only figures ptxas printed; a
line of ptxas output this parser does not know is an error that quotes it,
never a silent zero.

Examples
--------
>>> text = '''ptxas info    : 8 bytes gmem
... ptxas info    : Compiling entry function 'k' for 'sm_90'
... ptxas info    : Function properties for k
...     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
... ptxas info    : Used 40 registers, used 0 barriers, 8 bytes cumulative stack size
... ptxas info    : Compile time = 12.5 ms'''
>>> r = parse_ptxas(text, "sm_90")
>>> r.registers, r.spill_store_bytes, r.stack_frame_bytes
(40, 4, 8)
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from engine.model.arch import check_register_cap, load_arch
from engine.base.errors import RegtuneError

#: pip package providing each tool (for the missing-tool message).
PACKAGES = {"ptxas": "nvidia-cuda-nvcc", "nvdisasm": "nvidia-cuda-nvdisasm", "nvvm": "numba-cuda[cu13] (nvidia-nvvm)"}
TOOL_TIMEOUT_S = 300


class ToolchainError(RegtuneError):
    """A tool is missing, failed, or printed something this parser does not know."""


@lru_cache(maxsize=None)
def find_tool(name: str) -> Path:
    """Path of ``ptxas`` or ``nvdisasm`` inside NVIDIA's wheels."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError as e:  # pragma: no cover - cuda-pathfinder comes with numba-cuda
        raise ToolchainError(f"cuda-pathfinder is not installed ({e}); pip install 'numba-cuda[cu13]'") from None
    found = find_nvidia_binary_utility(name)
    if not found:
        raise ToolchainError(f"{name} not found in NVIDIA's pip wheels; pip install {PACKAGES.get(name, name)}")
    return Path(found)


def _run(argv: list, what: str, timeout: float = TOOL_TIMEOUT_S) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as e:
        detail = (e.stderr or e.stdout or "").strip().splitlines()
        raise ToolchainError(f"{what} failed (exit {e.returncode}): {detail[0] if detail else 'no output'}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what} did not finish within {timeout:.0f} s") from None


@lru_cache(maxsize=None)
def tool_version(name: str) -> str:
    """The tool's release line, e.g. ``release 13.5, V13.5.37``."""
    out = _run([find_tool(name), "--version"], f"{name} --version").stdout
    found = re.search(r"release [^\n]*", out)
    return found.group(0).strip() if found else out.strip().splitlines()[-1]


@lru_cache(maxsize=None)
def nvvm_version() -> str:
    """NVVM's version as numba-cuda loads it (libnvvm from the nvidia-nvvm wheel)."""
    try:
        from numba.cuda.cudadrv import nvvm

        major, minor = nvvm.NVVM().get_version()
        return f"NVVM {major}.{minor}"
    except Exception as e:  # noqa: BLE001 - any failure to load libnvvm is reported as missing
        raise ToolchainError(f"NVVM could not be loaded ({str(e).splitlines()[0]}); "
                             f"pip install {PACKAGES['nvvm']}") from None


def toolchain_fingerprint() -> str:
    """Versions that key the compile cache: numba-cuda, NVVM, ptxas, nvdisasm."""
    from importlib.metadata import version

    return "|".join([f"numba-cuda {version('numba-cuda')}", nvvm_version(), f"ptxas {tool_version('ptxas')}",
                     f"nvdisasm {tool_version('nvdisasm')}"])


@dataclass(frozen=True)
class CompileReport:
    """What ``ptxas -v`` printed for one kernel and architecture."""

    arch: str
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    shared_bytes: int
    constant_bytes: dict
    barriers: int
    compile_ms: float
    max_registers: int | None = None
    warnings: tuple = field(default=())
    #: the flags ptxas ran with, exactly as passed (see :func:`ptxas_flags`)
    flags: tuple = field(default=())

    def as_dict(self) -> dict:
        d = asdict(self)
        d["warnings"], d["flags"] = list(self.warnings), list(self.flags)
        return d


_PTXAS_PATTERNS = [
    ("gmem", re.compile(r"^ptxas info\s*: (\d+) bytes gmem(?:, (\d+) bytes cmem\[(\d+)\])?$")),
    ("entry", re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)' for '(sm_\w+)'$")),
    ("properties", re.compile(r"^ptxas info\s*: Function properties for (\S+)$")),
    ("frame", re.compile(r"^(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads$")),
    ("used", re.compile(r"^ptxas info\s*: Used (\d+) registers(.*)$")),
    ("time", re.compile(r"^ptxas info\s*: Compile time = ([\d.]+) ms$")),
    ("override", re.compile(r"^ptxas info\s*: Overriding maximum register limit (\d+) for '[^']+' with\s+(\d+) of "
                            r"maxrregcount option$")),
    ("warning", re.compile(r"^ptxas warning\s*: (.*)$")),
]


def _used(rest: str, figures: dict) -> None:
    """The tail of ``Used N registers, ...``: barriers, smem, cmem[K], cumulative stack size."""
    for part in filter(None, (p.strip() for p in rest.split(","))):
        m = re.fullmatch(r"used (\d+) barriers", part)
        if m:
            figures["barriers"] = int(m.group(1))
            continue
        m = re.fullmatch(r"(\d+) bytes (smem|cmem\[(\d+)\]|cumulative stack size)", part)
        if not m:
            raise ToolchainError(f"unrecognised ptxas output: {part!r}")
        if m.group(2) == "smem":
            figures["shared"] = int(m.group(1))
        elif m.group(3) is not None:
            figures["cmem"][m.group(3)] = int(m.group(1))


def parse_ptxas(text: str, arch: str, max_registers: int | None = None, flags: tuple = ()) -> CompileReport:
    """A :class:`CompileReport` from ``ptxas -v`` output for a single-kernel module."""
    figures: dict = {"cmem": {}, "warnings": [], "shared": 0, "barriers": 0}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        kind, m = next(((k, m) for k, p in _PTXAS_PATTERNS if (m := p.match(line))), (None, None))
        if m is None:
            raise ToolchainError(f"unrecognised ptxas output: {line!r}")
        if kind == "gmem" and m.group(2):
            figures["cmem"][m.group(3)] = int(m.group(2))
        elif kind == "entry" and m.group(2) != arch:
            raise ToolchainError(f"ptxas compiled for {m.group(2)}, asked for {arch}")
        elif kind == "frame":
            figures["frame"] = tuple(int(g) for g in m.groups())
        elif kind == "used":
            figures["registers"] = int(m.group(1))
            _used(m.group(2), figures)
        elif kind == "time":
            figures["time"] = float(m.group(1))
        elif kind == "warning":
            figures["warnings"].append(m.group(1))
    for needed, what in (("registers", "Used N registers"), ("frame", "stack frame / spill bytes")):
        if needed not in figures:
            raise ToolchainError(f"ptxas output has no '{what}' line for {arch}")
    stack, stores, loads = figures["frame"]
    return CompileReport(arch, figures["registers"], stores, loads, stack, figures["shared"],
                         dict(sorted(figures["cmem"].items())), figures["barriers"], figures.get("time", 0.0),
                         max_registers, tuple(figures["warnings"]), tuple(flags))


def ptxas_flags(arch: str, max_registers: int | None = None) -> tuple[str, ...]:
    """The flags of a ptxas run, the one place they are made: ``-arch``, ``-v`` and, only for a cap, ``-maxrregcount``.

    ``None`` is no cap: no flag at all, ptxas's own choice (what a plain
    ``numba.cuda.jit`` gets). A cap ptxas would not apply as given (above
    255, below its floor) is an error, never a flag.

    Examples
    --------
    >>> ptxas_flags("sm_80"), ptxas_flags("sm_90", 88)
    (('-arch=sm_80', '-v'), ('-arch=sm_90', '-v', '-maxrregcount=88'))
    """
    a = load_arch(arch)
    if max_registers is None:
        return (f"-arch={a.name}", "-v")
    return (f"-arch={a.name}", "-v", f"-maxrregcount={check_register_cap(a, max_registers)}")


def ptxas(ptx: str, arch: str, max_registers: int | None = None) -> tuple[CompileReport, bytes]:
    """Assemble ``ptx`` for ``arch`` with :func:`ptxas_flags`; the report (flags included) and the cubin."""
    flags = ptxas_flags(arch, max_registers)
    with tempfile.TemporaryDirectory(prefix="regtune-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        done = _run([find_tool("ptxas"), *flags, src, "-o", out], f"ptxas {' '.join(flags)}")
        report = parse_ptxas(done.stdout + "\n" + done.stderr, arch, max_registers, flags)
        return report, out.read_bytes()


#: nvdisasm's flags for the life-range listing (:mod:`kernels.sass`) and the encoding listing (:mod:`kernels.control`);
#: ``-hex`` drops the life-range column, so they are two runs
LIFE_RANGES = ("-c", "-plr", "-lrm", "narrow")
ENCODINGS = ("-c", "-hex")
#: nvdisasm's flags for the source-line listing (:mod:`kernels.sass_lines`); ``-plr`` ignores ``-g``, another run
LINE_INFO = ("-c", "-g")


def nvdisasm(cubin: bytes, flags: tuple = LIFE_RANGES) -> str:
    """``nvdisasm`` of a cubin: by default SASS with a register life-range column per instruction
    (``-c -plr -lrm narrow``); with :data:`ENCODINGS`, each instruction's two 64-bit words."""
    fd, path = tempfile.mkstemp(prefix="regtune-", suffix=".cubin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        return _run([find_tool("nvdisasm"), *flags, path], f"nvdisasm {' '.join(flags)}").stdout
    finally:
        os.unlink(path)


def cuda_device() -> str | None:
    """The first CUDA device's name, or None when there is none (asked in a subprocess, so no
    driver state leaks into the caller)."""
    code = ("from numba import cuda\n"
            "print(cuda.get_current_device().name.decode() if cuda.is_available() else '')")
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    except subprocess.TimeoutExpired:
        return None
    name = done.stdout.strip()
    return name or None


def doctor() -> tuple[list[tuple[str, str]], list[str]]:
    """Rows (what, finding) and one line per missing piece."""
    rows, missing = [], []
    for name in ("ptxas", "nvdisasm"):
        try:
            rows.append((name, f"{find_tool(name)} ({tool_version(name)})"))
        except ToolchainError as e:
            missing.append(str(e))
    try:
        from importlib.metadata import version

        rows.append(("nvvm", f"{nvvm_version()} via numba-cuda {version('numba-cuda')}"))
    except (ToolchainError, Exception) as e:  # noqa: BLE001
        missing.append(str(e))
    device = cuda_device()
    rows.append(("cuda device", device or "none (no CUDA device: GPU runs and timings are unavailable)"))
    return rows, missing
