"""The sweep results store on a real SQLite file: schema, unique key, listings, queries, migration from version 1."""

import sqlite3

import pytest

from engine.store import (
    COLUMNS,
    KEY,
    SCHEMA_V1,
    SCHEMA_VERSION,
    StoreError,
    digest,
    open_store,
)


def _row(m, allocator="naive", **more):
    return {"workload": "gemm", "m": m, "n": 4, "k": 4, "config": f"gemm {m}x4x4", "options": "{}",
            "tile": "4x4", "schedule": "k-outer", "allocator": allocator, "budget": 255, "registers": 10 + m,
            **more}


def test_a_store_is_wal_versioned_and_keeps_the_first_result_of_a_key(tmp_path):
    path = tmp_path / "s.sqlite"
    with open_store(path) as s:
        assert s.put([_row(2), _row(3), _row(2, "dsatur")]) == 3
        assert s.put([_row(2, registers=99), _row(4)]) == 1       # (2, naive) is there already: kept as it was
        assert s.count() == 4
        assert s.rows("m == 2 and allocator == 'naive'", ["registers"]) == [{"registers": 12}]
        assert s.version() == SCHEMA_VERSION
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {r[1] for r in db.execute("PRAGMA table_info(results)")} >= set(COLUMNS)


def test_rows_give_every_column_and_the_plan_only_when_asked(tmp_path):
    with open_store(tmp_path / "s.sqlite") as s:
        s.put([_row(2, plan_json='{"plan": 1}'), _row(3, plan_json='{"plan": 1}')])
        r = s.rows("m == 2")[0]
        assert set(r) == set(COLUMNS) - {"ptxas_log"} and r["arch"] == "-" and r["measured_ms"] is None
        assert r["created"].endswith("Z")
        both = s.rows(None, ["m", "plan_json"])
        assert both == [{"m": 2, "plan_json": '{"plan": 1}'}, {"m": 3, "plan_json": '{"plan": 1}'}]
        assert s.listing(r["plan_digest"]) == '{"plan": 1}' and r["plan_digest"] == digest('{"plan": 1}')
        assert s.db.execute("SELECT COUNT(*) FROM listings").fetchone()[0] == 1     # one text, stored once


def test_a_query_is_the_filter_language_never_sql(tmp_path):
    with open_store(tmp_path / "s.sqlite") as s:
        s.put([_row(2), _row(3), _row(5)])
        assert [r["m"] for r in s.rows("m in (2, 5) or not m < 5", ["m"])] == [2, 5]
        assert s.count("heads == 3") == 0                  # None fields: false, and not of it true
        assert s.count("not heads == 3") == 3
        with pytest.raises(StoreError, match="unknown column"):
            s.rows(None, ["m; DROP TABLE results"])
        from engine.base.query import FilterError
        with pytest.raises(FilterError, match="column 2"):
            s.rows("m; DROP TABLE results")
        assert s.count() == 3


def test_readonly_and_bad_files_are_one_line_errors(tmp_path):
    with pytest.raises(StoreError, match="no such sweep store"):
        open_store(tmp_path / "none.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a readable sweep store"):
        open_store(junk)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a RegTune sweep store"):
        open_store(other)
    with pytest.raises(StoreError, match="not a RegTune sweep store"):     # read: never "migrate it" advice
        open_store(other, readonly=True)
    with pytest.raises(StoreError, match="a folder, not a store file"):
        open_store(tmp_path, readonly=True)
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match="an empty file, not a sweep store"):
        open_store(empty, readonly=True)
    with open_store(tmp_path / "s.sqlite") as s:
        s.put([_row(2)])
    with open_store(tmp_path / "s.sqlite", readonly=True) as s:
        assert s.count() == 1
        with pytest.raises(StoreError, match="read-only"):
            s.put([_row(3)])


def test_a_version_1_store_migrates_keeping_every_row(tmp_path):
    path = tmp_path / "v1.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_V1)
    v1 = []
    for m in range(2, 17):
        for allocator in ("naive", "dsatur"):
            v1.append((f"gemm {m}x8x8", m, allocator, 100 + m, f'{{"m": {m}, "a": "{allocator}"}}'))
    v1.append(("mha heads 16 batch 1 head_dim 32 groups 1", None, "naive", 77, None))
    for config, m, allocator, regs, plan in v1:
        db.execute("INSERT INTO results (workload, m, n, k, config, tile, schedule, allocator, budget, "
                   "registers, plan_json, seconds, created) VALUES (?, ?, 8, 8, ?, '4x4', 'k-outer', ?, 255, ?, "
                   "?, 0.5, '2026-01-01T00:00:00Z')",
                   ("gemm" if m else "mha", m, config, allocator, regs, plan))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 1"):
        open_store(path, readonly=True)
    with open_store(path) as s:
        assert s.version() == 2
        rows = s.rows(None, ["config", "allocator", "registers", "plan_json", "options", "created", "arch"])
        assert len(rows) == len(v1)
        got = {(r["config"], r["allocator"]): r for r in rows}
        for config, m, allocator, regs, plan in v1:
            r = got[config, allocator]
            assert (r["registers"], r["plan_json"], r["arch"]) == (regs, plan, "-")
            assert r["created"] == "2026-01-01T00:00:00Z"
            assert r["options"] == '{"schedule":"k-outer","tile":"4x4"}'
        assert s.count("allocator == 'dsatur' and m <= 4") == 3
        assert s.put([{**rows[0], "plan_json": None}]) == 0     # its key is there: the migrated row stays
    with open_store(path, readonly=True) as s:
        assert s.count() == len(v1)


def test_the_key_is_what_the_notes_name(tmp_path):
    assert KEY == ("config", "options", "allocator", "budget", "arch", "cap", "toolchain")
