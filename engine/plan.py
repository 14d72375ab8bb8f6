"""Plans: a program, its register assignment and spill slots, and their files.

Invariant: a :class:`Plan` is immutable; :func:`load_plan` returns only
plans whose file is well formed and whose assignment passes
:func:`engine.verify.static_conflicts`, and otherwise raises a one-line
:class:`PlanError` naming the file, the field or value, the instruction and
the register at fault. Writes are atomic (temporary file, then rename), and
several files written together appear all together or not at all
(:func:`write_files_atomic`); a failed write (a full disk) is a one-line
:class:`engine.errors.WriteError` and leaves the files as they were.

Examples
--------
>>> from engine.ir import parse
>>> p = parse(".kernel k\\n.block b\\n  %x:f32 = mov 1\\n  st.global %x, 0, %x\\n  exit\\n")
>>> plan = Plan(p, {"x": (0,)}, {}, 8, "hand")
>>> plan_from_dict(plan_to_dict(plan)) == plan
True
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.bounds import check_program
from engine.errors import PlanError, RegtuneError, WriteError
from engine.fields import digits, exact_keys, excerpt, is_int, load_json
from engine.ir import Program, parse, print_program
from engine.limits import MAX_FILE_BYTES, MAX_REGISTERS, MAX_SPILL_SLOT
from engine.verify import first_conflicts

FORMAT = "regtune-plan"
VERSION = 1


@dataclass(frozen=True)
class Plan:
    """A register plan for one program.

    Attributes
    ----------
    program : the program, spill code included
    assignment : value name -> register indices (every non-predicate value)
    spills : spilled value name -> local-memory slot
    budget : registers per thread the plan may use (maxrregcount)
    allocator : the allocator's name, or "hand" for edited plans
    workload, options : where the program came from (JSON-ready)
    predicted, measured : figures (JSON-ready)
    """

    program: Program
    assignment: dict
    spills: dict
    budget: int
    allocator: str
    workload: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    predicted: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)

    def with_(self, **changes) -> "Plan":
        """A copy with some fields changed."""
        return replace(self, **changes)


def registers_used(assignment: dict) -> int:
    """Highest register index in use plus one (0 for an empty assignment)."""
    return max((r for regs in assignment.values() for r in regs), default=-1) + 1


def plan_to_dict(plan: Plan) -> dict:
    """The JSON object of DESIGN.md's plan format."""
    order = {name: i for i, name in enumerate(plan.program.values)}
    return {
        "format": FORMAT, "version": VERSION,
        "workload": plan.workload, "options": plan.options,
        "allocator": plan.allocator, "budget": plan.budget,
        "program": print_program(plan.program),
        "assignment": {n: list(plan.assignment[n]) for n in sorted(plan.assignment, key=lambda n: (order.get(n, len(order)), n))},
        "spills": {n: plan.spills[n] for n in sorted(plan.spills, key=lambda n: (order.get(n, len(order)), n))},
        "predicted": plan.predicted, "measured": plan.measured,
    }


def write_plan(plan: Plan, path) -> Path:
    """Write ``plan`` as JSON, atomically."""
    return write_text_atomic(path, json.dumps(plan_to_dict(plan), indent=1) + "\n")


TMP_SUFFIX = ".regtune-tmp"


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file, fsync and a rename.

    The file gets the mode a plain ``open(path, "w")`` would give (0666 less
    the umask: plans are meant to be shared). The temporary file's name holds
    the writer's process id, so a write that was killed halfway leaves a
    file the next write to the same path removes. A write that fails (a full
    disk) raises a one-line :class:`WriteError` and leaves ``path`` as it was.
    """
    path = Path(path)
    _remove_stale_temporaries(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    try:
        _write_new(tmp, text, path)
        _rename(tmp, path)
    except WriteError as exc:
        raise WriteError(f"{exc} (nothing was written)") from None
    finally:
        _remove(tmp)
    return path


def write_files_atomic(folder, files: dict) -> list[Path]:
    """Write the files ``files`` (name -> text) into ``folder`` all together or not at all.

    Every file is first written in full and fsynced into a staging folder
    inside ``folder``, so a full disk or any other write error strikes before
    a file of ``folder`` is touched; then each is renamed into place, which
    needs no space. If a rename still fails, the files already renamed are
    removed again: ``folder`` ends up with all of them or none of them (an
    earlier file of the same name is kept unless a rename replaced it). A
    failure is one :class:`WriteError` line; the staging folder is removed in
    every case, and one left by a killed writer goes with the next write.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> [p.name for p in write_files_atomic(folder, {"a.txt": "a", "b.txt": "b"})]
    ['a.txt', 'b.txt']
    >>> sorted(p.name for p in folder.iterdir())
    ['a.txt', 'b.txt']
    """
    folder = Path(folder)
    _remove_stale_temporaries(folder / "regtune-files")
    stage = folder / f".regtune-files.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    placed: list[Path] = []
    try:
        _make_folder(stage)
        for name, text in files.items():
            _write_new(stage / name, text, folder / name)
        for name in files:
            _rename(stage / name, folder / name)
            placed.append(folder / name)
    except BaseException as exc:
        for path in placed:
            _remove(path)
        if isinstance(exc, WriteError):
            raise WriteError(f"{exc} (none of the {len(files)} files was kept: they are written all together "
                             "or not at all)") from None
        raise
    finally:
        _remove(stage)
    return placed


def _write_new(tmp: Path, text: str, shown: Path) -> None:
    """Create ``tmp`` (it must not exist), write ``text`` and fsync; an OSError becomes a WriteError naming
    ``shown``, the file the caller is writing."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # the umask applies, as for open()
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise _write_error(shown, exc) from None


def _rename(tmp: Path, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except OSError as exc:
        raise _write_error(path, exc) from None


def _make_folder(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except OSError as exc:
        raise _write_error(path.parent, exc) from None


def _write_error(path: Path, exc: OSError) -> WriteError:
    """``path: cannot write: no space left on device`` (the system's reason, in lower case)."""
    reason = exc.strerror or str(exc)
    return WriteError(f"{path}: cannot write: {reason[:1].lower()}{reason[1:]}")


def _remove(path: Path) -> None:
    """Remove a temporary file or staging folder if it is there (quietly: it is litter, not data)."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def check_writable(path, what: str = "output file") -> Path:
    """Raise a one-line :class:`RegtuneError` unless ``path`` can be written as a file, before any work:
    its folder exists and takes a new file (tried, not guessed: /proc and read-only mounts say no to a
    real create only), and ``path`` is not a folder."""
    text = str(path)
    if not text.strip():
        raise RegtuneError(f"{what}: an empty path")
    path = Path(text)
    folder = path.parent
    if path.is_dir():
        raise RegtuneError(f"{what} {excerpt(text, 80)}: is a folder, not a file")
    if not folder.is_dir():
        raise RegtuneError(f"{what} {excerpt(text, 80)}: folder {excerpt(str(folder), 80)} does not exist")
    probe = folder / f".{path.name}.{os.getpid()}.probe{TMP_SUFFIX}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        raise RegtuneError(f"{what} {excerpt(text, 80)}: cannot write there ({exc.strerror or exc})") from None
    return path


def _remove_stale_temporaries(path: Path) -> None:
    """Temporary files (and staging folders) of earlier writes to ``path`` whose writer process is gone."""
    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*{TMP_SUFFIX}"))
    except OSError:
        return
    for tmp in candidates:
        pid = tmp.name[len(path.name) + 2:].split(".", 1)[0]
        if digits(pid) and not _alive(int(pid)):
            _remove(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: top-level fields of a plan file
PLAN_FIELDS = ("format", "version", "workload", "options", "allocator", "budget", "program", "assignment", "spills",
               "predicted", "measured")


def _field(data: dict, key: str, kind, source: str, default=None):
    if key not in data:
        if default is not None:
            return default
        raise PlanError(f"{source}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise PlanError(f"{source}: field {key!r} must be {_KIND_NAMES[kind]}, got {excerpt(value)}")
    return value


_KIND_NAMES = {int: "an integer", str: "a string", dict: "an object", list: "a list"}


def _registers(name: str, regs, source: str) -> tuple[int, ...]:
    """Register numbers of one value: a list of one or two ints in 0..254 (the budget is checked with the
    conflicts, where the message can say which registers the budget allows)."""
    if not (isinstance(regs, list) and 1 <= len(regs) <= 2
            and all(is_int(r) and 0 <= r < MAX_REGISTERS for r in regs)):
        raise PlanError(f"{source}: assignment of %{excerpt(name)[1:-1]} must be a list of one or two register "
                        f"numbers in 0..{MAX_REGISTERS - 1}, got {excerpt(regs)}")
    return tuple(int(r) for r in regs)


def _slot(name: str, slot, source: str) -> int:
    if not is_int(slot) or not 0 <= slot <= MAX_SPILL_SLOT:
        raise PlanError(f"{source}: spill slot of %{excerpt(name)[1:-1]} must be an integer in 0..{MAX_SPILL_SLOT}, "
                        f"got {excerpt(slot)}")
    return int(slot)


def _allocator(data: dict, source: str) -> str:
    from engine.allocators import ALLOCATORS

    known = (*sorted(ALLOCATORS), "hand")
    value = data.get("allocator")
    if not isinstance(value, str) or value not in known:
        raise PlanError(f"{source}: field 'allocator' must be one of {', '.join(known)}, got {excerpt(value)}")
    return value


def plan_from_dict(data, source: str = "<plan>", check: bool = True) -> Plan:
    """Check and build a plan from its JSON object (see module invariant).

    Every field is checked to its type and range before anything else reads
    it: the budget in 1..255, registers inside the budget, spill slots in
    0..MAX_SPILL_SLOT, the allocator a known name, the workload and options
    inside their config space (:func:`engine.workloads.check_workload`), the
    program within :mod:`engine.limits` and the rules of :mod:`engine.ir_rules`
    (the parser's: spill code at a slot in 0..MAX_SPILL_SLOT, immediates a kernel
    can hold, each known opcode in its shape). ``check=False`` skips only the
    assignment check (conflicts), for a session that holds a hand-edited
    plan the window shows as broken."""
    from engine.workloads import check_workload

    if not isinstance(data, dict):
        raise PlanError(f"{source}: a plan must be a JSON object, got {excerpt(data)}")
    if data.get("format") != FORMAT:
        raise PlanError(f"{source}: field 'format' must be {FORMAT!r}, got {excerpt(data.get('format'))}")
    if not (is_int(data.get("version")) and data["version"] == VERSION):    # not 1.0, not true
        raise PlanError(f"{source}: unsupported plan version {excerpt(data.get('version'))} (this RegTune reads {VERSION})")
    exact_keys(data, PLAN_FIELDS, source, required=("budget", "program", "assignment", "allocator"))
    budget = _field(data, "budget", int, source)
    if not 1 <= budget <= MAX_REGISTERS:
        raise PlanError(f"{source}: field 'budget' must be an integer in 1..{MAX_REGISTERS} "
                        f"(registers per thread), got {budget}")
    allocator = _allocator(data, source)
    workload, options = check_workload(_field(data, "workload", dict, source, {}),
                                       _field(data, "options", dict, source, {}), source)
    assignment = {n: _registers(n, r, source) for n, r in _field(data, "assignment", dict, source).items()}
    spills = {n: _slot(n, s, source) for n, s in _field(data, "spills", dict, source, {}).items()}
    try:
        program = parse(_field(data, "program", str, source), f"{source}: field 'program'")
    except PlanError:
        raise
    except RegtuneError as exc:
        raise PlanError(str(exc)) from None
    check_program(program, source)
    plan = Plan(program, assignment, spills, budget, allocator, workload, options,
                _field(data, "predicted", dict, source, {}), _field(data, "measured", dict, source, {}))
    if check:
        check_plan(plan, source)
    return plan


def check_plan(plan: Plan, source: str = "<plan>") -> None:
    """Raise :class:`PlanError` with the first violation, if any."""
    conflicts, total = first_conflicts(plan.program, plan.assignment, plan.spills, plan.budget, 1)
    if conflicts:
        more = f" (and {total - 1} more)" if total > 1 else ""
        raise PlanError(f"{source}: {conflicts[0].message}{more}")


def read_text(path, error=PlanError) -> str:
    """A file's text, refused in one line when missing, unreadable, not a regular file or over
    :data:`engine.limits.MAX_FILE_BYTES` (checked before reading, so /dev/zero or a 5 GB file costs nothing).

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` before the first read: a plain open
    of a named pipe waits for a writer forever, and a check by name before the open could be raced."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise error(f"{path}: {_kind_of(mode)}")
            with open(fd, "rb", closefd=False) as f:
                data = f.read(MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{path}: larger than {MAX_FILE_BYTES} bytes (RegTune's limit for a plan or program file)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _kind_of(mode: int) -> str:
    """Why a file that is not a regular one is refused, in words."""
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((text for test, text in kinds if test(mode)), "a special file") + ", not a regular file"


def load_plan(path) -> Plan:
    """Read and check a plan file (see module invariant)."""
    return plan_from_dict(load_json(read_text(path), str(path)), str(path))
