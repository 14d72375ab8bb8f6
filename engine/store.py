"""The sweep results store: one SQLite file (stdlib ``sqlite3``, WAL), one row per (workload config, options,
allocator, budget, arch, cap, toolchain version), every figure in a typed column.

The row's columns are :data:`COLUMNS` (the schema ``/work/notes/sweep_rows.md`` names, plus ``options``,
``strategies``, ``measured_why`` and ``plan_digest``). Large texts (the plan file, SASS listings) live once each in
the ``listings`` table, keyed by the SHA-256 of their text and zlib-compressed; a row names them by digest
(``plan_digest``, ``sass_digest``), and :meth:`Store.rows` gives the plan text back as ``plan_json`` when asked.

Invariant: a row is written once (the key is UNIQUE; a second write of the same key is ignored, so a sweep that
meets a stored result never replaces it); rows are written in one transaction per finished config or chunk, so a
process killed at any point (kill -9 included) leaves every committed row and a readable file (SQLite's WAL);
queries take the sweep filter language (:mod:`engine.base.query`), never SQL, compiled to a parameterised WHERE over
the whitelisted columns. The schema carries its version (table ``schema_version``) and every older version
migrates forward in place (:data:`MIGRATIONS`) keeping every row.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "s.sqlite")
>>> with open_store(path) as s:
...     s.put([{"workload": "gemm", "m": 2, "n": 2, "k": 2, "config": "gemm 2x2x2", "options": "{}",
...             "allocator": "naive", "budget": 255, "registers": 12}])
...     s.rows("m == 2", ["config", "registers", "arch"])
1
[{'config': 'gemm 2x2x2', 'registers': 12, 'arch': '-'}]
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import zlib
from pathlib import Path

from engine.base.errors import RegtuneError
from engine.base.query import parse_filter

#: the schema this module writes (older ones migrate forward when a store is opened for writing)
SCHEMA_VERSION = 2

#: every column of a row, with its SQLite type; the key's columns are NOT NULL (SQLite's UNIQUE treats NULLs as
#: distinct) and default to '-' (analysis-only rows: no arch, cap or toolchain)
COLUMNS: dict[str, str] = {
    # identity
    "workload": "TEXT", "m": "INTEGER", "n": "INTEGER", "k": "INTEGER",
    "heads": "INTEGER", "batch": "INTEGER", "head_dim": "INTEGER", "groups": "INTEGER",
    "config": "TEXT", "options": "TEXT", "tile": "TEXT", "schedule": "TEXT", "strategies": "TEXT",
    "allocator": "TEXT", "budget": "INTEGER", "arch": "TEXT", "cap": "TEXT", "toolchain": "TEXT",
    # planned
    "instructions": "INTEGER", "maxlive": "INTEGER", "naive_demand": "INTEGER", "registers": "INTEGER",
    "spilled": "INTEGER", "spill_static": "INTEGER", "spill_executed": "INTEGER", "stack_bytes": "INTEGER",
    "naive_registers": "INTEGER", "best_registers": "INTEGER", "occupancy_warps": "INTEGER",
    "model_cycles": "INTEGER",
    # ptxas on the plan PTX
    "ptxas_registers": "INTEGER", "ptxas_spill_stores": "INTEGER", "ptxas_spill_loads": "INTEGER",
    "ptxas_stack": "INTEGER", "sass_maxlive": "INTEGER", "ptxas_log": "TEXT", "sass_digest": "TEXT",
    # the Numba kernel
    "numba_registers": "INTEGER", "numba_spill_stores": "INTEGER", "numba_spill_loads": "INTEGER",
    # the GPU
    "measured_ms": "REAL", "measured_why": "TEXT",
    # meta
    "plan_digest": "TEXT", "error": "TEXT", "seconds": "REAL", "created": "TEXT",
}
#: what makes a row one result (UNIQUE): the config, the options asked for, allocator, budget, arch, cap, toolchain
KEY = ("config", "options", "allocator", "budget", "arch", "cap", "toolchain")
#: columns a row dict may carry that are not stored as such: the plan text (stored by digest in ``listings``)
VIRTUAL = ("plan_json",)
#: the large texts :meth:`Store.rows` leaves out unless named in ``columns``
LARGE = ("plan_json", "ptxas_log")
#: the filter language's view of the columns (REAL columns are not filterable: equality on floats misleads)
FILTER_FIELDS = {name: ("int" if t == "INTEGER" else "str") for name, t in COLUMNS.items() if t != "REAL"}

#: indexes on the config fields a filter names first (SQLite uses one per query: the leading field's range; the
#: trailing fields let it test more of the filter in the index); none on workload, which splits rows in two
_INDEXES = {
    "results_gemm": ("m", "n", "k", "workload", "allocator"),
    "results_gemm_k": ("k", "m", "n", "workload", "allocator"),
    "results_mha": ("head_dim", "groups", "heads", "batch", "workload", "allocator"),
    "results_allocator": ("allocator", "arch", "cap"),
    "results_config": ("config",),
}


class StoreError(RegtuneError):
    """The store cannot be opened or read (names the file)."""


def default_path() -> Path:
    """``platformdirs.user_data_dir("regtune") / "sweeps.sqlite"`` (the folder made when needed)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("regtune")) / "sweeps.sqlite"


def _schema_v2(db: sqlite3.Connection) -> None:
    cols = ",\n  ".join(f'"{name}" {t}' + (" NOT NULL DEFAULT '-'" if name in KEY[3:] and t == "TEXT" else
                                            " NOT NULL" if name in KEY else "")
                        for name, t in COLUMNS.items())
    db.execute(f"CREATE TABLE results (\n  id INTEGER PRIMARY KEY,\n  {cols},\n  UNIQUE ({', '.join(KEY)}))")
    for name, cols_ in _INDEXES.items():
        db.execute(f"CREATE INDEX {name} ON results ({', '.join(cols_)})")
    db.execute("CREATE TABLE listings (digest TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL)")


#: version 1 (the first sweeps' store): fewer figures, the plan inline, no options column (tile and schedule were
#: the options), no listings table. Kept to create old stores in tests and to document what migrates.
SCHEMA_V1 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  workload TEXT, m INTEGER, n INTEGER, k INTEGER, heads INTEGER, batch INTEGER, head_dim INTEGER, groups INTEGER,
  config TEXT NOT NULL, tile TEXT NOT NULL DEFAULT '-', schedule TEXT NOT NULL DEFAULT '-',
  allocator TEXT NOT NULL, budget INTEGER NOT NULL, arch TEXT NOT NULL DEFAULT '-', cap TEXT NOT NULL DEFAULT '-',
  toolchain TEXT NOT NULL DEFAULT '-',
  instructions INTEGER, maxlive INTEGER, registers INTEGER, spilled INTEGER,
  ptxas_registers INTEGER, ptxas_spill_stores INTEGER, ptxas_spill_loads INTEGER, sass_maxlive INTEGER,
  plan_json TEXT, error TEXT, seconds REAL, created TEXT,
  UNIQUE (config, tile, schedule, allocator, budget, arch, cap, toolchain));
INSERT INTO schema_version VALUES (1);
"""

_V1_COPIED = ("workload", "m", "n", "k", "heads", "batch", "head_dim", "groups", "config", "tile", "schedule",
              "allocator", "budget", "arch", "cap", "toolchain", "instructions", "maxlive", "registers", "spilled",
              "ptxas_registers", "ptxas_spill_stores", "ptxas_spill_loads", "sass_maxlive", "error", "seconds",
              "created")


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Version 1 -> 2: the typed columns added (None: not measured then), ``options`` made from v1's tile and
    schedule (the options v1 keyed on), each inline plan moved to ``listings`` by digest."""
    db.execute("ALTER TABLE results RENAME TO results_v1")
    _schema_v2(db)
    names = ", ".join(_V1_COPIED)
    db.execute(f"INSERT INTO results (id, {names}, options, plan_digest) "
               f"SELECT id, {names}, json_object('schedule', schedule, 'tile', tile), NULL FROM results_v1")
    for row_id, text in db.execute("SELECT id, plan_json FROM results_v1 WHERE plan_json IS NOT NULL").fetchall():
        db.execute("UPDATE results SET plan_digest = ? WHERE id = ?", (_put_listing(db, text), row_id))
    db.execute("DROP TABLE results_v1")


#: version -> the function that migrates a store of that version to the next
MIGRATIONS = {1: _migrate_1_to_2}


def digest(text: str) -> str:
    """The content key of a listing: SHA-256 of its UTF-8 text, hex."""
    return hashlib.sha256(text.encode()).hexdigest()


def _put_listing(db: sqlite3.Connection, text: str) -> str:
    key = digest(text)
    db.execute("INSERT OR IGNORE INTO listings (digest, size, data) VALUES (?, ?, ?)",
               (key, len(text), zlib.compress(text.encode(), 6)))
    return key


def key_of(row: dict) -> tuple:
    """A row's key (:data:`KEY`), its defaults filled in as the store fills them."""
    return tuple(row.get(name, "-") if name in KEY[4:] else row.get(name) for name in KEY)


class Store:
    """An open results store (:func:`open_store`); a context manager that closes it."""

    def __init__(self, db: sqlite3.Connection, path: Path, readonly: bool):
        self.db, self.path, self.readonly = db, path, readonly
        self.written = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.db is not None:
            if self.written:
                self.db.execute("ANALYZE")      # the planner's statistics, so a filter takes its most selective index
            self.db.close()
            self.db = None

    # ---- writing
    def put(self, rows) -> int:
        """Write ``rows`` (dicts with :data:`COLUMNS` keys and optionally ``plan_json``) in one transaction;
        a row whose key is stored already is left as it was. The number of rows new."""
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")
        rows = list(rows)
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        names = list(COLUMNS)
        sql = (f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})")
        new = 0
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                unknown = set(row) - set(COLUMNS) - set(VIRTUAL) - {"listings"}
                if unknown:
                    raise StoreError(f"{self.path}: a row with unknown fields: {', '.join(sorted(unknown))}")
                values = dict(row)
                if values.get("plan_json") is not None:
                    values["plan_digest"] = _put_listing(self.db, values["plan_json"])
                for text in (values.get("listings") or ()):
                    _put_listing(self.db, text)
                values.setdefault("created", created)
                for name in KEY[4:]:
                    values.setdefault(name, "-")
                new += self.db.execute(sql, [values.get(n) for n in names]).rowcount
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.written = self.written or new > 0
        return new

    def put_listing(self, text: str) -> str:
        """Store a large text once (SASS, life ranges); its digest."""
        with self.db:
            return _put_listing(self.db, text)

    # ---- reading
    def _where(self, where: str | None) -> tuple[str, list]:
        if where is None:
            return "", []
        sql, params = parse_filter(where, FILTER_FIELDS).sql()
        return " WHERE " + sql, params

    @staticmethod
    def row_columns() -> list[str]:
        """The columns :meth:`rows` gives when none are named (an export of no rows still has its header)."""
        return [c for c in [*COLUMNS, *VIRTUAL] if c not in LARGE]

    def rows(self, where: str | None = None, columns: list[str] | None = None) -> list[dict]:
        """The rows ``where`` (a sweep filter expression, never SQL; None: all) selects, as dicts of ``columns``
        (None: every column but the large texts :data:`LARGE`, which come only when named), in the order they were
        stored (the rowid's: free, where the key's order costs a sort of every row)."""
        wanted = self.row_columns() if columns is None else list(columns)
        unknown = [c for c in wanted if c not in COLUMNS and c not in VIRTUAL]
        if unknown:
            raise StoreError(f"{self.path}: unknown column {unknown[0]!r} (known: {', '.join([*COLUMNS, *VIRTUAL])})")
        stored = [c for c in wanted if c in COLUMNS]
        plan = "plan_json" in wanted
        if plan and "plan_digest" not in stored:
            stored.append("plan_digest")
        clause, params = self._where(where)
        select = ", ".join(f'"{c}"' for c in stored) or "id"
        cursor = self._read(f"SELECT {select} FROM results{clause} ORDER BY id", params)
        out = [dict(zip(stored, r)) for r in cursor]
        if plan:
            for row in out:
                d = row["plan_digest"] if "plan_digest" in wanted else row.pop("plan_digest")
                row["plan_json"] = None if d is None else self.listing(d)
        if columns is not None:
            out = [{c: row[c] for c in wanted} for row in out]
        return out

    def count(self, where: str | None = None) -> int:
        """How many rows ``where`` selects (None: all)."""
        clause, params = self._where(where)
        return self._read(f"SELECT COUNT(*) FROM results{clause}", params).fetchone()[0]

    def keys(self) -> set[tuple]:
        """Every stored row's key (:data:`KEY`), to skip what is done."""
        return set(self._read(f"SELECT {', '.join(KEY)} FROM results", []).fetchall())

    def listing(self, key: str) -> str:
        """The large text stored under ``key`` (a plan, a SASS listing)."""
        found = self._read("SELECT data FROM listings WHERE digest = ?", [key]).fetchone()
        if found is None:
            raise StoreError(f"{self.path}: no listing {key!r}")
        return zlib.decompress(found[0]).decode()

    def version(self) -> int:
        return _version(self.db)

    def _read(self, sql: str, params: list):
        try:
            return self.db.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from None


def _version(db: sqlite3.Connection) -> int:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_version" not in tables:
        return 0
    return db.execute("SELECT version FROM schema_version").fetchone()[0]


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """Create the current schema in an empty file, or migrate an older one forward (one transaction each)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _version(db)
        if version == 0:
            if db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                raise StoreError(f"{path}: an SQLite file that is not a RegTune sweep store (no schema_version)")
            db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            db.execute("INSERT INTO schema_version VALUES (0)")
            _schema_v2(db)
            version = SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise StoreError(f"{path}: schema version {version} is newer than this RegTune's ({SCHEMA_VERSION}); "
                             "upgrade RegTune")
        while version < SCHEMA_VERSION:
            MIGRATIONS[version](db)
            version += 1
        db.execute("UPDATE schema_version SET version = ?", (version,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def open_store(path: str | os.PathLike | None = None, readonly: bool = False) -> Store:
    """The store at ``path`` (None: :func:`default_path`), made or migrated as needed; ``readonly``: never
    written (a missing file is an error then). One-line :class:`StoreError` naming the file."""
    path = Path(path) if path is not None else default_path()
    try:
        if readonly:
            if path.is_dir():
                raise StoreError(f"{path}: a folder, not a store file")
            if not path.is_file():
                raise StoreError(f"{path}: no such sweep store")
            if path.stat().st_size == 0:
                raise StoreError(f"{path}: an empty file, not a sweep store (`regtune sweep --store` makes one)")
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30,
                                 isolation_level=None, check_same_thread=False)
        else:
            if path.is_dir():
                raise StoreError(f"{path}: a folder, not a store file")
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")     # WAL: a kill loses nothing committed; power loss the last
            _prepare(db, path)
        version = _version(db)
        if version == 0:
            db.close()
            raise StoreError(f"{path}: an SQLite file that is not a RegTune sweep store (no schema_version)")
        if version != SCHEMA_VERSION:
            db.close()
            raise StoreError(f"{path}: schema version {version}, this RegTune reads {SCHEMA_VERSION} (open it "
                             "for writing once to migrate it)")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a readable sweep store ({exc})") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the sweep store ({exc.strerror or exc})") from None
    return Store(db, path, readonly)


def canonical(options: dict) -> str:
    """The options a result was asked with, as the key's text (sorted keys, no spaces)."""
    return json.dumps(options, sort_keys=True, separators=(",", ":"))
