"""The sweep filter language: Python and SQL agree on every expression; bad ones name their column."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.base.query import FilterError, parse_filter

FIELDS = {"m": "int", "n": "int", "k": "int", "workload": "str", "heads": "int"}


@pytest.mark.parametrize("text, column, what", [
    ("m <= ", 6, "expected a name"), ("m = 4", 3, "'=='"), ("m == 'x'", 6, "a string"),
    ("zz == 1", 1, "unknown field 'zz'"), ("(m < 3", 7, "')'"), ("m < 3 m", 7, "'and', 'or' or the end"),
    ("m in (1, n)", 10, "not names"), ("1 == 2", 1, "a field's name"), ("m ! 3", 3, "unexpected character"),
    ("m", 2, "expected a comparison"), ("m not 3", 7, "'in' after 'not'"),
])
def test_a_bad_expression_is_one_line_naming_its_column(text, column, what):
    with pytest.raises(FilterError) as e:
        parse_filter(text, FIELDS)
    msg = str(e.value)
    assert "\n" not in msg and f"at column {column}:" in msg and what in msg, msg


def test_eval_never_runs():
    with pytest.raises(FilterError):
        parse_filter("__import__('os').system('true')", FIELDS)


ROWS = [{"m": m, "n": n, "k": k, "workload": "gemm", "heads": None} for m in (2, 3, 8) for n in (2, 8)
        for k in (3, 8)] + [{"m": None, "n": None, "k": None, "workload": "mha", "heads": h} for h in (16, 32)]


def _sqlite():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER, m INTEGER, n INTEGER, k INTEGER, workload TEXT, heads INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)",
                   [(i, r["m"], r["n"], r["k"], r["workload"], r["heads"]) for i, r in enumerate(ROWS)])
    return db


_DB = _sqlite()

names = st.sampled_from(["m", "n", "k", "heads"])
ints = st.integers(0, 40).map(str)
cmp = st.builds(lambda a, op, b: f"{a} {op} {b}", names, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                st.one_of(names, ints))
ins = st.builds(lambda a, neg, vs: f"{a} {'not in' if neg else 'in'} ({', '.join(vs)})", names, st.booleans(),
                st.lists(ints, min_size=1, max_size=4))
wl = st.sampled_from(["workload == 'gemm'", 'workload != "mha"'])
leaf = st.one_of(cmp, ins, wl)
exprs = st.recursive(leaf, lambda inner: st.one_of(
    st.builds(lambda a, b: f"({a}) and ({b})", inner, inner), st.builds(lambda a, b: f"{a} or {b}", inner, inner),
    st.builds(lambda a: f"not ({a})", inner)), max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(exprs)
def test_python_and_sql_select_the_same_rows(text):
    q = parse_filter(text, FIELDS)
    where, params = q.sql()
    in_sql = [r[0] for r in _DB.execute(f"SELECT id FROM t WHERE {where} ORDER BY id", params)]
    assert in_sql == [i for i, r in enumerate(ROWS) if q.matches(r)], (text, where)


def test_precedence_not_binds_tighter_than_and_than_or():
    q = parse_filter("not m == 2 and n == 2 or k == 8", FIELDS)
    assert q.matches({"m": 3, "n": 2, "k": 3}) and q.matches({"m": 2, "n": 8, "k": 8})
    assert not q.matches({"m": 2, "n": 2, "k": 3})
    assert parse_filter("m in (2, 3,)", FIELDS).names() == {"m"}
