"""The sweep filter language: ``m <= 4 and n == k``, ``workload == 'gemm'``, ``not (m in (2, 4) or k > 8)``.

One small language for ``regtune sweep --filter`` (over each config's fields) and the results store's queries
(:meth:`engine.store.Store.rows`, compiled to a parameterised SQL ``WHERE``). A tokenizer and a recursive-descent
parser build a small tree; nothing is ever handed to ``eval`` and no text of the expression reaches SQL except
through whitelisted column names and ``?`` parameters.

Grammar (lowest precedence first)::

    expr       := and ('or' and)*
    and        := not ('and' not)*
    not        := 'not' not | primary
    primary    := '(' expr ')' | comparison
    comparison := operand OP operand | operand ['not'] 'in' '(' literal (',' literal)* [','] ')'
    operand    := NAME | INT | STRING            OP := == != < <= > >=

Invariant: a name is one of the fields the caller allows, each with a type ('int' or 'str'); a comparison of an
int with a str is refused where it is written, so Python and SQL agree on every answer. A field that is None (a
GEMM field of an MHA row) makes its comparison false, ``not`` of it true, in both. Every error is one line naming
the position (1-based column) and what was expected.

Examples
--------
>>> q = parse_filter("m <= 4 and n == k", {"m": "int", "n": "int", "k": "int"})
>>> q.matches({"m": 2, "n": 3, "k": 3}), q.matches({"m": 8, "n": 3, "k": 3})
(True, False)
>>> q.sql()
('(COALESCE("m" <= ?, 0) AND COALESCE("n" = "k", 0))', [4])
>>> parse_filter("m <= ", {"m": "int"})
Traceback (most recent call last):
engine.base.query.FilterError: filter 'm <= ' at column 6: expected a name, a number or a string, got the end
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from engine.base.errors import RegtuneError
from engine.base.fields import excerpt

#: the longest filter expression read (a command line, a window's box)
MAX_FILTER = 4096
#: the most literals an ``in (...)`` list holds
MAX_IN = 1000

_TOKEN = re.compile(r"""\s*(?:(?P<int>-?\d+)|(?P<str>'[^'\\]*'|"[^"\\]*")|(?P<name>[A-Za-z_][A-Za-z_0-9]*)
                        |(?P<op>==|!=|<=|>=|<|>|=)|(?P<punct>[(),]))""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in"}
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}
_SQL_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class FilterError(RegtuneError):
    """A filter expression that cannot be read, or names a field that is not there (one line, with the column)."""


@dataclass(frozen=True)
class _Tok:
    kind: str      # int, str, name, op, punct, kw, end
    text: str
    pos: int       # 0-based


@dataclass(frozen=True)
class Operand:
    kind: str      # name, int, str
    value: object
    pos: int


@dataclass(frozen=True)
class Compare:
    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True)
class In:
    operand: Operand
    values: tuple
    negated: bool


@dataclass(frozen=True)
class BoolOp:
    op: str        # and, or
    parts: tuple


@dataclass(frozen=True)
class Not:
    part: object


def _tokens(text: str, error) -> list[_Tok]:
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            out.append(_Tok("end", "", pos))
            return out
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise error(pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        start = m.start(kind)
        word = m.group(kind)
        if kind == "op" and word == "=":
            raise error(start, "'=' is not a comparison: write '=='")
        if kind == "name" and word in _KEYWORDS:
            kind = "kw"
        out.append(_Tok(kind, word, start))
        pos = m.end()


class _Parser:
    def __init__(self, text: str, fields: dict):
        self.text, self.fields = text, fields
        self.toks = _tokens(text, self.error)
        self.k = 0

    def error(self, pos: int, what: str) -> FilterError:
        return FilterError(f"filter {excerpt(self.text, 120)} at column {pos + 1}: {what}")

    @property
    def tok(self) -> _Tok:
        return self.toks[self.k]

    def take(self) -> _Tok:
        t = self.toks[self.k]
        self.k += 1
        return t

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.tok.kind == kind and (text is None or self.tok.text == text)

    def shown(self, t: _Tok) -> str:
        return "the end" if t.kind == "end" else repr(t.text)

    def expect(self, kind: str, text: str, what: str) -> _Tok:
        if not self.at(kind, text):
            raise self.error(self.tok.pos, f"expected {what}, got {self.shown(self.tok)}")
        return self.take()

    def parse(self):
        node = self.expr()
        if not self.at("end"):
            raise self.error(self.tok.pos, f"expected 'and', 'or' or the end, got {self.shown(self.tok)}")
        return node

    def expr(self):
        parts = [self.conj()]
        while self.at("kw", "or"):
            self.take()
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else BoolOp("or", tuple(parts))

    def conj(self):
        parts = [self.neg()]
        while self.at("kw", "and"):
            self.take()
            parts.append(self.neg())
        return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))

    def neg(self):
        if self.at("kw", "not"):
            self.take()
            return Not(self.neg())
        return self.primary()

    def primary(self):
        if self.at("punct", "("):
            self.take()
            node = self.expr()
            self.expect("punct", ")", "')'")
            return node
        left = self.operand()
        if self.at("kw", "in") or self.at("kw", "not"):
            negated = self.take().text == "not"
            if negated:
                self.expect("kw", "in", "'in' after 'not'")
            self.expect("punct", "(", "'(' to open the list")
            values = [self.literal(left)]
            while self.at("punct", ","):
                self.take()
                if self.at("punct", ")"):
                    break
                values.append(self.literal(left))
                if len(values) > MAX_IN:
                    raise self.error(self.tok.pos, f"more than {MAX_IN} values in one list")
            self.expect("punct", ")", "',' or ')'")
            return In(left, tuple(values), negated)
        if not self.at("op"):
            raise self.error(self.tok.pos, f"expected a comparison (== != < <= > >= in), got {self.shown(self.tok)}")
        op = self.take().text
        right = self.operand()
        if left.kind != "name" and right.kind != "name":
            raise self.error(left.pos, "a comparison needs a field's name on one side")
        lt, rt = self.type_of(left), self.type_of(right)
        if lt != rt:
            raise self.error(right.pos, f"compares {self.said(left, lt)} with {self.said(right, rt)}")
        return Compare(op, left, right)

    def said(self, o: Operand, t: str) -> str:
        return f"{o.value} ({'a number' if t == 'int' else 'a string'})" if o.kind == "name" else \
            ("a number" if t == "int" else "a string")

    def type_of(self, o: Operand) -> str:
        return self.fields[o.value] if o.kind == "name" else o.kind

    def literal(self, left: Operand) -> object:
        o = self.operand()
        if o.kind == "name":
            raise self.error(o.pos, "an 'in' list holds numbers or strings, not names")
        if self.type_of(left) != o.kind:
            raise self.error(o.pos, f"compares {self.said(left, self.type_of(left))} with "
                                    f"{self.said(o, o.kind)}")
        return o.value

    def operand(self) -> Operand:
        t = self.take()
        if t.kind == "int":
            return Operand("int", int(t.text), t.pos)
        if t.kind == "str":
            return Operand("str", t.text[1:-1], t.pos)
        if t.kind == "name":
            if t.text not in self.fields:
                raise self.error(t.pos, f"unknown field {t.text!r} (known: {', '.join(sorted(self.fields))})")
            return Operand("name", t.text, t.pos)
        raise self.error(t.pos, f"expected a name, a number or a string, got {self.shown(t)}")


def _value(o: Operand, row: dict):
    return row.get(o.value) if o.kind == "name" else o.value


def _matches(node, row: dict) -> bool:
    if isinstance(node, Compare):
        a, b = _value(node.left, row), _value(node.right, row)
        return a is not None and b is not None and _OPS[node.op](a, b)
    if isinstance(node, In):
        a = _value(node.operand, row)
        return a is not None and ((a in node.values) != node.negated)
    if isinstance(node, Not):
        return not _matches(node.part, row)
    if node.op == "and":
        return all(_matches(p, row) for p in node.parts)
    return any(_matches(p, row) for p in node.parts)


def _quote(name: str) -> str:
    return '"' + name + '"'        # a whitelisted identifier: letters, digits and '_' only


def _sql(node, params: list, column) -> str:
    def side(o: Operand) -> str:
        if o.kind == "name":
            return _quote(column(o.value))
        params.append(o.value)
        return "?"
    if isinstance(node, Compare):
        left = side(node.left)
        right = side(node.right)
        return f"COALESCE({left} {_SQL_OPS[node.op]} {right}, 0)"
    if isinstance(node, In):
        left = side(node.operand)
        params.extend(node.values)
        word = "NOT IN" if node.negated else "IN"
        return f"COALESCE({left} {word} ({', '.join('?' * len(node.values))}), 0)"
    if isinstance(node, Not):
        return f"(NOT {_sql(node.part, params, column)})"
    return "(" + f" {node.op.upper()} ".join(_sql(p, params, column) for p in node.parts) + ")"


def _names(node) -> set:
    if isinstance(node, Compare):
        return {o.value for o in (node.left, node.right) if o.kind == "name"}
    if isinstance(node, In):
        return {node.operand.value}
    if isinstance(node, Not):
        return _names(node.part)
    return set().union(*(_names(p) for p in node.parts))


@dataclass(frozen=True)
class Filter:
    """A parsed filter: :meth:`matches` a dict in Python, :meth:`sql` the same test as a parameterised WHERE."""

    text: str
    tree: object

    def matches(self, row: dict) -> bool:
        return _matches(self.tree, row)

    def sql(self, column=lambda name: name) -> tuple[str, list]:
        """``(where, params)``; ``column`` maps a field to its column's name (whitelisted by the caller)."""
        params: list = []
        return _sql(self.tree, params, column), params

    def names(self) -> set:
        """The fields the expression reads."""
        return _names(self.tree)


def parse_filter(text: str, fields: dict) -> Filter:
    """``text`` parsed over ``fields`` (name -> 'int' or 'str'); a one-line :class:`FilterError` naming the column
    of the first thing wrong."""
    if not isinstance(text, str):
        raise FilterError(f"a filter is a text expression, got {excerpt(text)}")
    if len(text) > MAX_FILTER:
        raise FilterError(f"filter of {len(text)} characters: the limit is {MAX_FILTER}")
    if not text.strip():
        raise FilterError("filter is empty: write an expression such as \"m <= 4 and n == k\"")
    bad = [name for name, t in fields.items() if t not in ("int", "str") or not re.fullmatch(r"[a-z_][a-z_0-9]*", name)]
    if bad:
        raise FilterError(f"filter fields must be lowercase names typed 'int' or 'str': {bad[0]!r}")
    return Filter(text, _Parser(text, fields).parse())
