"""Plan -> kernel source -> PTX (NVVM, once) -> cubin and report per arch (ptxas) -> SASS live ranges, encodings.

The PTX is compiled once per plan for the lowest architecture asked for
(``cc`` is explicit; the PTX for sm_80 and sm_90 differs only in
``.target``) and assembled by ptxas for every architecture with
``-maxrregcount`` = the plan's budget; without a list, the architectures
are :data:`engine.arch.DEFAULT_BUILD_ARCHS`. Every stage is cached on disk under
the user cache directory (``$REGTUNE_CACHE_DIR``, else
``$XDG_CACHE_HOME/regtune``, else ``~/.cache/regtune``), keyed by the
source, the architecture, the flags and the toolchain's versions, so a
second identical request compiles nothing.

Invariant: a :class:`Build` holds what the tools produced for exactly its
source; ``cached`` says whether any tool ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path

from engine.arch import DEFAULT_BUILD_ARCHS, load_arch
from engine.plan import Plan, write_text_atomic
from kernels.codegen import KernelSource, kernel_source
from kernels.run import WORKER_MEMORY_MB, run_worker
from kernels.sass import SassLiveness, parse_sass
from kernels.toolchain import ENCODINGS, CompileReport, ToolchainError, nvdisasm, ptxas, toolchain_fingerprint

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


@dataclass(frozen=True)
class ArchBuild:
    """One architecture's measurements of a kernel."""

    arch: str
    report: CompileReport
    sass_text: str
    sass: SassLiveness
    #: ``nvdisasm -c -hex``: each instruction's encoding, control bits included (:mod:`kernels.control`)
    hex_text: str = ""


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

    def ptx_count(self, opcode_prefix: str) -> int:
        """PTX instructions whose opcode starts with ``opcode_prefix`` (e.g. ``st.local``)."""
        return sum(1 for line in self.ptx.splitlines() if line.strip().startswith(opcode_prefix))


@dataclass(frozen=True)
class Limits:
    """What one NVVM compile may take: it runs in a worker process killed (with its process group) past
    ``seconds``, and capped at ``memory_mb`` of address space. ``regtune build --timeout/--memory`` set them."""

    seconds: float = 900.0
    memory_mb: int = WORKER_MEMORY_MB


def compile_ptx(source: KernelSource, cc: tuple = (8, 0), limits: Limits = Limits()) -> str:
    """NVVM through numba-cuda, in a worker process under ``limits``: the kernel's PTX for ``cc``."""
    reply = run_worker({"mode": "ptx", "source": source.text, "kernel": source.name, "signature": source.signature,
                        "cc": list(cc)}, simulator=False, timeout=limits.seconds, memory_mb=limits.memory_mb)
    if "ptx" not in reply:
        error = reply.get("error", "no reply")
        raise ToolchainError(error.removeprefix("ToolchainError: ") if error.startswith("ToolchainError: ")
                             else f"NVVM could not compile {source.name}: {error}")
    return reply["ptx"]


def entry_name(ptx: str) -> str:
    """The mangled kernel name (it changes per compile, so it is read from the PTX)."""
    for line in ptx.splitlines():
        if line.strip().startswith(".visible .entry") or line.strip().startswith(".entry"):
            return line.split(".entry", 1)[1].strip().split("(")[0].strip()
    raise ToolchainError("PTX has no .entry")


def _cc(arch: str) -> tuple:
    return tuple(load_arch(arch).compute_capability)


CACHE_FORMAT = "regtune-cache"


class _Cache:
    """Build results on disk, one file per entry, each with a checksum of its content.

    An entry that cannot be read, is not an entry of this format, fails its
    checksum or its shape check is a miss: the caller builds again and the
    entry is overwritten. A root that cannot be used (a file, read-only, not
    creatable) turns the cache off for this build with one note in
    ``warning``; nothing fails because of the cache.
    """

    def __init__(self, root: Path | None, fingerprint: str, warning: str = ""):
        self.root, self.fingerprint, self.warning = root, fingerprint, warning

    @classmethod
    def open(cls, fingerprint: str) -> "_Cache":
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
            and isinstance(report["warnings"], list) and isinstance(report["constant_bytes"], dict))


def build_source(source: KernelSource, archs=DEFAULT_BUILD_ARCHS, use_cache: bool = True,
                 limits: Limits = Limits()) -> Build:
    """Compile and measure ``source`` for every arch in ``archs`` (cached)."""
    archs = tuple(archs)
    for a in archs:
        load_arch(a)
    fingerprint = toolchain_fingerprint()
    cache = _Cache.open(fingerprint)
    timings: dict = {}
    ran = False
    cc = min(_cc(a) for a in archs)
    # the PTX depends on the kernel function and its signature only (not on the budget, which ptxas applies)
    ptx_key = (source.body or source.text, source.signature, repr(cc))
    ptx = cache.read("ptx", _valid_ptx, *ptx_key) if use_cache else None
    if ptx is None:
        t = time.perf_counter()
        ptx = compile_ptx(source, cc, limits)
        timings["nvvm"] = (time.perf_counter() - t) * 1000
        cache.write(ptx, "ptx", *ptx_key)
        ran = True
    # ptxas and nvdisasm are separate processes: the architectures run side by side
    with ThreadPoolExecutor(max_workers=len(archs)) as pool:
        done = list(pool.map(lambda a: _arch_build(ptx, a, source.budget, cache, timings, use_cache), archs))
    results = {a: r for a, (r, _) in zip(archs, done)}
    ran = ran or any(arch_ran for _, arch_ran in done)
    return Build(source, ptx, entry_name(ptx), results, timings, not ran, fingerprint, cache.warning)


def _arch_build(ptx: str, arch: str, budget: int, cache: _Cache, timings: dict, use_cache: bool):
    flags = f"-maxrregcount={budget}"
    stored = cache.read("measure", _valid_measure, ptx, arch, flags) if use_cache else None
    ran = stored is None
    if stored is None:
        t = time.perf_counter()
        report, cubin = ptxas(ptx, arch, budget)
        timings[f"ptxas {arch}"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        sass_text = nvdisasm(cubin)
        hex_text = nvdisasm(cubin, ENCODINGS)
        timings[f"nvdisasm {arch}"] = (time.perf_counter() - t) * 1000
        cache.write(json.dumps({"report": report.as_dict(), "sass": sass_text, "hex": hex_text}), "measure", ptx,
                    arch, flags)
    else:
        data = json.loads(stored)
        r = data["report"]
        report = CompileReport(**{**r, "warnings": tuple(r["warnings"])})
        sass_text, hex_text = data["sass"], data["hex"]
    t = time.perf_counter()
    sass = parse_sass(sass_text)
    timings[f"parse {arch}"] = (time.perf_counter() - t) * 1000
    return ArchBuild(arch, report, sass_text, sass, hex_text), ran


def build_plan(plan: Plan, archs=DEFAULT_BUILD_ARCHS, spills: str = "plan", use_cache: bool = True,
               limits: Limits = Limits()) -> Build:
    """Generate the kernel for ``plan`` and build it (see :func:`build_source`)."""
    t = time.perf_counter()
    source = kernel_source(plan, spills)
    codegen_ms = (time.perf_counter() - t) * 1000
    built = build_source(source, archs, use_cache, limits)
    return Build(built.source, built.ptx, built.entry, built.archs, {"codegen": codegen_ms, **built.timings_ms},
                 built.cached, built.toolchain, built.cache_warning)
