"""Plan -> kernel source -> PTX (NVVM, once) -> cubin and report per arch and cap (ptxas) -> SASS and encodings.

The PTX is compiled once per plan for the lowest architecture asked for
(``cc`` is explicit; the PTX for sm_80 and sm_90 differs only in
``.target``); numba's mangled kernel name (about 240 characters) is
replaced in it by the short :func:`kernels.codegen.entry_name`, so the
PTX, the SASS and every file and view carry that name. ptxas then
assembles it twice for every architecture (without a list,
:data:`engine.model.arch.DEFAULT_BUILD_ARCHS`):

- at the **plan** cap, ``-maxrregcount`` = the plan's register count
  (raised to ptxas's floor; no flag when the count is the arch's maximum,
  :func:`engine.model.arch.plan_register_cap`): the kernel whose SASS is listed
  and run on a GPU; ptxas spills here say the plan's count does not fit
  ptxas's own schedule;
- at the **compiler** cap, no ``-maxrregcount`` at all: ptxas's own choice,
  what a plain ``numba.cuda.jit`` gets.

The plan's budget is never a flag (``-maxrregcount=255`` changes ptxas's
schedule: GEMM 8x8x8 k-outer gets 217 registers with it, 96 without, ptxas 13.5).
NVVM compiles with line info (``lineinfo``); the measured kernel is
assembled from that PTX without its ``.loc`` lines (numba's PTX without
line info, tests/kernels/test_sass_lines.py), and a third ptxas run per
arch, of the PTX with them at the plan cap, gives ``nvdisasm -g``'s source
lines: :mod:`kernels.sass_lines` maps each measured SASS instruction to its
IR instruction through them.

Every stage is cached on disk under the user cache directory
(``$REGTUNE_CACHE_DIR``, else ``$XDG_CACHE_HOME/regtune``, else
``~/.cache/regtune``), keyed by the source, the architecture, the flags and
the toolchain's versions, so a second identical request compiles nothing.

Invariant: a :class:`Build` holds what the tools produced for exactly its
source; each ptxas report carries the flags it ran with; ``cached`` says
whether any tool ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path

from engine.model.arch import DEFAULT_BUILD_ARCHS, load_arch, plan_register_cap
from engine.base.files import write_text_atomic
from engine.plan import Plan
from kernels.codegen import KernelSource, kernel_source
from kernels.run import WORKER_MEMORY_MB, run_worker
from kernels.sass import SassLiveness, parse_sass
from kernels.sass_lines import SassIrMap, ir_map, parse_line_listing, strip_line_info
from kernels.templates import template_text
from kernels.toolchain import (ENCODINGS, LINE_INFO, CompileReport, ToolchainError, nvdisasm, ptxas, ptxas_flags,
                               toolchain_fingerprint)

def cache_dir() -> Path:
    """Where builds are cached (created on first use)."""
    root = os.environ.get("REGTUNE_CACHE_DIR")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "regtune"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _key(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


#: the two caps every build measures: the plan's register count, and none (ptxas's own choice)
CAPS = ("plan", "compiler")
#: each cap in words (timings, tables)
CAP_LABELS = {"plan": "plan cap", "compiler": "no cap"}


@dataclass(frozen=True)
class ArchBuild:
    """One architecture's measurements of a kernel at both caps.

    ``report``, ``sass_text`` and ``sass`` are of the kernel at the plan cap
    (``report.flags`` holds its ``-maxrregcount``); ``compiler`` is ptxas's
    report of the same PTX with no ``-maxrregcount``.
    """

    arch: str
    report: CompileReport
    sass_text: str
    sass: SassLiveness
    compiler: CompileReport
    #: ``nvdisasm -c -hex``: each instruction's encoding, control bits included (:mod:`kernels.control`)
    hex_text: str = ""
    #: each SASS instruction's IR instruction, from the same kernel assembled with line info (None: not built)
    ir_map: SassIrMap | None = None


@dataclass(frozen=True)
class Build:
    """A kernel built from a plan and measured by NVIDIA's tools."""

    source: KernelSource
    ptx: str
    entry: str
    archs: dict
    timings_ms: dict
    cached: bool
    toolchain: str
    #: a note for the user when the build cache could not be used (empty otherwise)
    cache_warning: str = ""
    #: the PTX with numba's line info (``.loc`` lines naming the module's lines): what ``ptx`` came from
    ptx_lines: str = ""

    def ptx_count(self, opcode_prefix: str) -> int:
        """PTX instructions whose opcode starts with ``opcode_prefix`` (e.g. ``st.local``)."""
        return sum(1 for line in self.ptx.splitlines() if line.strip().startswith(opcode_prefix))


@dataclass(frozen=True)
class Limits:
    """What one NVVM compile may take: it runs in a worker process killed (with its process group) past
    ``seconds``, and capped at ``memory_mb`` of address space. ``regtune build --timeout/--memory`` set them."""

    seconds: float = 900.0
    memory_mb: int = WORKER_MEMORY_MB


def compile_ptx(source: KernelSource, cc: tuple = (8, 0), limits: Limits = Limits(), lineinfo: bool = False) -> str:
    """NVVM through numba-cuda, in a worker process under ``limits``: the kernel's PTX for ``cc`` (with ``.loc``
    lines under ``lineinfo``)."""
    reply = run_worker({"mode": "ptx", "source": source.text, "kernel": source.name, "signature": source.signature,
                        "cc": list(cc), "lineinfo": lineinfo}, simulator=False, timeout=limits.seconds,
                       memory_mb=limits.memory_mb)
    if "ptx" not in reply:
        error = reply.get("error", "no reply")
        raise ToolchainError(error.removeprefix("ToolchainError: ") if error.startswith("ToolchainError: ")
                             else f"NVVM could not compile {source.name}: {error}")
    return reply["ptx"]


def entry_name(ptx: str) -> str:
    """The kernel's name in ``ptx`` (numba's mangled one changes per compile, so it is read from the PTX)."""
    for line in ptx.splitlines():
        if line.strip().startswith(".visible .entry") or line.strip().startswith(".entry"):
            return line.split(".entry", 1)[1].strip().split("(")[0].strip()
    raise ToolchainError("PTX has no .entry")


def rename_entry(ptx: str, short: str) -> str:
    """``ptx`` with its kernel's name, and every symbol named after it (its ``_param_N`` parameters, numba's
    ``NumbaEnv`` global), renamed to ``short``; the code is untouched.

    Examples
    --------
    >>> ptx = ".common .global .u64 _ZN08NumbaEnv3m_k1fB2v1Ei;\\n.visible .entry _ZN3m_k1fB2v1Ei(\\n" \\
    ...       "  .param .u64 _ZN3m_k1fB2v1Ei_param_0)\\n{ ld.param.u64 %rd1, [_ZN3m_k1fB2v1Ei_param_0]; }"
    >>> print(rename_entry(ptx, "regtune_k"))
    .common .global .u64 regtune_k_NumbaEnv;
    .visible .entry regtune_k(
      .param .u64 regtune_k_param_0)
    { ld.param.u64 %rd1, [regtune_k_param_0]; }
    """
    mangled = entry_name(ptx)
    if mangled == short:
        return ptx
    if re.search(rf"(?<![\w$]){re.escape(short)}(?![\w$])", ptx):
        raise ToolchainError(f"the PTX of {mangled[:60]}... already has a symbol {short}: it cannot be renamed")
    tail = mangled.removeprefix("_ZN")

    def short_symbol(m: re.Match) -> str:
        symbol = m.group(0)
        if symbol.startswith(mangled):
            return short + symbol[len(mangled):]
        return f"{short}_{re.sub(r'^_ZN[0-9]*', '', symbol[:symbol.index(tail)])}"

    return re.sub(rf"(?<![\w$])[\w$]*{re.escape(tail)}[\w$]*", short_symbol, ptx)


def _cc(arch: str) -> tuple:
    return tuple(load_arch(arch).compute_capability)


CACHE_FORMAT = "regtune-cache"


class StageCache:
    """Build results on disk, one file per entry, each with a checksum of its content (the cache of every tool
    stage: this module's, and kernels/plan_ptx.py's ptxas runs under a kind of their own).

    An entry that cannot be read, is not an entry of this format, fails its
    checksum or its shape check is a miss: the caller builds again and the
    entry is overwritten. A root that cannot be used (a file, read-only, not
    creatable) turns the cache off for this build with one note in
    ``warning``; nothing fails because of the cache.
    """

    def __init__(self, root: Path | None, fingerprint: str, warning: str = ""):
        self.root, self.fingerprint, self.warning = root, fingerprint, warning

    @classmethod
    def open(cls, fingerprint: str) -> "StageCache":
        try:
            return cls(cache_dir(), fingerprint)
        except OSError as exc:
            root = os.environ.get("REGTUNE_CACHE_DIR") or "the user cache folder"
            return cls(None, fingerprint, f"build cache {root} is unusable ({exc.strerror or exc}): "
                                          "building without a cache")

    def path(self, kind: str, *parts: str) -> Path:
        return self.root / kind / f"{_key(self.fingerprint, *parts)}"

    def read(self, kind: str, valid, *parts: str) -> str | None:
        """The entry's content when it is intact and ``valid(content)`` holds; None otherwise (a miss)."""
        if self.root is None:
            return None
        try:
            envelope = json.loads(_read_entry(self.path(kind, *parts)))
            content = envelope["content"]
            intact = (envelope.get("format") == CACHE_FORMAT and envelope.get("kind") == kind
                      and isinstance(content, str) and envelope.get("sha256") == _digest(content))
            return content if intact and valid(content) else None
        except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError, RecursionError):
            return None

    def write(self, content: str, kind: str, *parts: str) -> None:
        if self.root is None:
            return
        p = self.path(kind, *parts)
        envelope = {"format": CACHE_FORMAT, "kind": kind, "sha256": _digest(content), "content": content}
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            p.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(p, json.dumps(envelope))
        except OSError as exc:
            self.warning = self.warning or f"build cache {self.root} cannot be written ({exc.strerror or exc}): " \
                                           "this build is not cached"


#: the largest cache entry read (the SASS listing of GEMM 16x16x16 for one arch is about 2 MB)
MAX_ENTRY_BYTES = 64 * 1024 * 1024


def _read_entry(path: Path) -> str:
    """An entry's text: a regular file (not a link, a FIFO or a device, which could block or never end) of at
    most :data:`MAX_ENTRY_BYTES`; anything else raises OSError, which the reader takes as a miss."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path}: not a cache entry")
        return f.read(MAX_ENTRY_BYTES + 1).decode("utf-8")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


#: the helpers every kernel module embeds, which its kernel function calls (part of a PTX's cache key)
_HELPERS_DIGEST = _digest(template_text("helpers"))


def _valid_ptx(text: str) -> bool:
    return ".entry" in text


def _valid_measure(text: str) -> bool:
    """A stored ptxas report, SASS listing and encoding listing of the shape this version writes."""
    data = json.loads(text)
    report = data["report"]
    expected = {f.name for f in fields(CompileReport)}
    return (isinstance(data.get("sass"), str) and isinstance(data.get("hex"), str) and isinstance(report, dict)
            and set(report) == expected
            and all(isinstance(report[k], int) and not isinstance(report[k], bool)
                    for k in ("registers", "spill_store_bytes", "spill_load_bytes", "stack_frame_bytes",
                              "shared_bytes", "barriers"))
            and isinstance(report["warnings"], list) and isinstance(report["constant_bytes"], dict)
            and isinstance(report["flags"], list) and all(isinstance(f, str) for f in report["flags"]))


def _body_line(source: KernelSource) -> int:
    """The line of the module where the kernel function starts (0: the whole module is the key anyway)."""
    at = source.text.find(source.body) if source.body else -1
    return source.text.count("\n", 0, at) + 1 if at >= 0 else 0


def build_source(source: KernelSource, archs=DEFAULT_BUILD_ARCHS, use_cache: bool = True,
                 limits: Limits = Limits()) -> Build:
    """Compile and measure ``source`` for every arch in ``archs`` (cached)."""
    archs = tuple(archs)
    for a in archs:
        load_arch(a)
    fingerprint = toolchain_fingerprint()
    cache = StageCache.open(fingerprint)
    timings: dict = {}
    ran = False
    cc = min(_cc(a) for a in archs)
    # the PTX depends on the kernel function, its signature and the helpers it calls (the load-order intrinsics of
    # kernels/templates/helpers.py), not on the caps, which ptxas applies; with line info the PTX's .loc lines also
    # name the module's lines: the body's first line is in the key
    ptx_key = (source.body or source.text, source.signature, repr(cc), f"lineinfo, body at line {_body_line(source)}",
               _HELPERS_DIGEST)
    lined = cache.read("ptx", _valid_ptx, *ptx_key) if use_cache else None
    if lined is None:
        t = time.perf_counter()
        lined = compile_ptx(source, cc, limits, lineinfo=True)
        timings["nvvm"] = (time.perf_counter() - t) * 1000
        cache.write(lined, "ptx", *ptx_key)
        ran = True
    lined = rename_entry(lined, source.entry)
    ptx = strip_line_info(lined)
    # ptxas and nvdisasm are separate processes: the architectures and caps run side by side
    runs = [(a, cap) for a in archs for cap in CAPS]
    with ThreadPoolExecutor(max_workers=len(runs) + len(archs)) as pool:
        done = dict(zip(runs, pool.map(lambda run: _ptxas_run(ptx, *run, source.registers, cache, timings,
                                                              use_cache), runs)))
        lines = dict(zip(archs, pool.map(lambda a: _line_run(lined, a, source.registers, cache, timings,
                                                             use_cache), archs)))
    results = {a: _arch_build(a, done[(a, "plan")], done[(a, "compiler")], timings, lines[a][0], source)
               for a in archs}
    ran = ran or any(run[-1] for run in lines.values())
    ran = ran or any(run[-1] for run in done.values())
    return Build(source, ptx, entry_name(ptx), results, timings, not ran, fingerprint, cache.warning, lined)


def cap_registers(cap: str, arch: str, plan_registers: int) -> int | None:
    """The ``-maxrregcount`` of ``cap`` (one of :data:`CAPS`) on ``arch`` (None: no flag): for "plan" the plan's
    count as :func:`engine.model.arch.plan_register_cap` makes it a cap, for "compiler" None."""
    if cap not in CAPS:
        raise ToolchainError(f"unknown cap {cap!r} (known: {', '.join(CAPS)})")
    return plan_register_cap(load_arch(arch), plan_registers) if cap == "plan" else None


def _ptxas_run(ptx: str, arch: str, cap: str, plan_registers: int, cache: StageCache, timings: dict,
               use_cache: bool) -> tuple[CompileReport, str, str, bool]:
    """ptxas at one cap (and, at the plan cap, nvdisasm of its cubin): the report, the SASS listing and its
    encodings ("" without) and whether a tool ran."""
    max_registers = cap_registers(cap, arch, plan_registers)
    key = (ptx, arch, " ".join(ptxas_flags(arch, max_registers)), "sass" if cap == "plan" else "no sass")
    stored = cache.read("measure", _valid_measure, *key) if use_cache else None
    if stored is not None:
        data = json.loads(stored)
        r = data["report"]
        report = CompileReport(**{**r, "warnings": tuple(r["warnings"]), "flags": tuple(r["flags"])})
        return report, data["sass"], data["hex"], False
    t = time.perf_counter()
    report, cubin = ptxas(ptx, arch, max_registers)
    timings[f"ptxas {arch} {CAP_LABELS[cap]}"] = (time.perf_counter() - t) * 1000
    sass_text = hex_text = ""
    if cap == "plan":
        t = time.perf_counter()
        sass_text = nvdisasm(cubin)
        hex_text = nvdisasm(cubin, ENCODINGS)
        timings[f"nvdisasm {arch}"] = (time.perf_counter() - t) * 1000
    cache.write(json.dumps({"report": report.as_dict(), "sass": sass_text, "hex": hex_text}), "measure", *key)
    return report, sass_text, hex_text, True


def _line_run(lined: str, arch: str, plan_registers: int, cache: StageCache, timings: dict,
              use_cache: bool) -> tuple[str, bool]:
    """ptxas of the PTX with line info at the plan cap, then ``nvdisasm -c -g``: the listing with source lines
    (the measured kernel's instructions when ptxas ignored the lines) and whether a tool ran."""
    max_registers = cap_registers("plan", arch, plan_registers)
    key = (lined, arch, " ".join(ptxas_flags(arch, max_registers)), "lines")
    stored = cache.read("lines", lambda text: "/*0000*/" in text, *key) if use_cache else None
    if stored is not None:
        return stored, False
    t = time.perf_counter()
    _, cubin = ptxas(lined, arch, max_registers)
    text = nvdisasm(cubin, LINE_INFO)
    timings[f"line info {arch}"] = (time.perf_counter() - t) * 1000
    cache.write(text, "lines", *key)
    return text, True


def _arch_build(arch: str, plan_run: tuple, compiler_run: tuple, timings: dict, line_text: str,
                source: KernelSource) -> ArchBuild:
    report, sass_text, hex_text, _ = plan_run
    t = time.perf_counter()
    sass = parse_sass(sass_text)
    mapped = ir_map(arch, parse_line_listing(line_text), sass.offsets, sass.texts, source.ir_of_line())
    timings[f"parse {arch}"] = (time.perf_counter() - t) * 1000
    return ArchBuild(arch, report, sass_text, sass, compiler_run[0], hex_text, mapped)


def build_plan(plan: Plan, archs=DEFAULT_BUILD_ARCHS, spills: str = "plan", use_cache: bool = True,
               limits: Limits = Limits(), load_order: str = "barrier") -> Build:
    """Generate the kernel for ``plan`` (``load_order``: :data:`kernels.codegen.LOAD_ORDERS`) and build it (see
    :func:`build_source`)."""
    t = time.perf_counter()
    source = kernel_source(plan, spills, load_order=load_order)
    codegen_ms = (time.perf_counter() - t) * 1000
    built = build_source(source, archs, use_cache, limits)
    return Build(built.source, built.ptx, built.entry, built.archs, {"codegen": codegen_ms, **built.timings_ms},
                 built.cached, built.toolchain, built.cache_warning, built.ptx_lines)
