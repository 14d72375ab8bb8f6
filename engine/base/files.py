"""Files: atomic writes (one file, or several together), a check that a path can be written, and a
bounded, checked read of a text file. Every failure is one line naming the file.

Writes are atomic (temporary file, then rename), and several files written together appear all together
or not at all (:func:`write_files_atomic`); a failed write (a full disk) is a one-line
:class:`engine.base.errors.WriteError` and leaves the files as they were.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import stat
from pathlib import Path

from engine.base.errors import PlanError, RegtuneError, WriteError
from engine.base.fields import digits, excerpt
from engine.base.limits import MAX_FILE_BYTES

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


def read_text(path, error=PlanError) -> str:
    """A file's text, refused in one line when missing, unreadable, not a regular file or over
    :data:`engine.base.limits.MAX_FILE_BYTES` (checked before reading, so /dev/zero or a 5 GB file costs nothing).

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
