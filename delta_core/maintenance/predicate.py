"""Partition predicates for maintenance operations (``--where "date >= '2024-01-01' AND region = 'eu'"``).

A small SQL-expression subset, parsed once into frozen nodes and evaluated column-wise with
pyarrow over the snapshot's typed partition values (``Snapshot.partition_values_typed()``):

    expr       := or
    or         := and ("OR" and)*
    and        := not ("AND" not)*
    not        := "NOT" not | primary
    primary    := "(" expr ")" | comparison
    comparison := column op literal | literal op column
                | column "IS" ["NOT"] "NULL"
                | column ["NOT"] "IN" "(" literal ("," literal)* ")"
                | column ["NOT"] "BETWEEN" literal "AND" literal
    op         := = | == | != | <> | < | <= | > | >=
    literal    := 'text' ('' escapes a quote) | number | TRUE | FALSE | NULL
                | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss'
    column     := identifier | `back-quoted name`

Only partition columns may be referenced (compaction and Z-order select whole files by their
partition values, so a predicate on data columns could not be honoured exactly): anything else
is a ``ConfigError`` naming the partition columns (or, for a name the table schema does not
have at all, the schema's columns). Evaluation follows SQL three-valued logic;
a partition for which the predicate is NULL is not selected. Column names match
case-insensitively, as in Delta.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<quoted>`(?:[^`]|``)+`)
      | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
      | (?P<op><=|>=|<>|!=|==|=|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "TRUE", "FALSE", "DATE", "TIMESTAMP"}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# --- nodes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any  # None, bool, int, float, str
    kind: str = "auto"  # "auto", "date" or "timestamp" (typed SQL literals)

    def sql(self) -> str:
        if self.value is None:
            return "NULL"
        if isinstance(self.value, bool):
            return "TRUE" if self.value else "FALSE"
        if isinstance(self.value, str):
            text = "'" + self.value.replace("'", "''") + "'"
            return f"{self.kind.upper()} {text}" if self.kind != "auto" else text
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Comparison:
    column: str
    op: str  # one of = != < <= > >=
    literal: Literal

    def sql(self) -> str:
        return f"{_quote(self.column)} {self.op} {self.literal.sql()}"


@dataclass(frozen=True, slots=True)
class IsNull:
    column: str
    negated: bool = False

    def sql(self) -> str:
        return f"{_quote(self.column)} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True, slots=True)
class InList:
    column: str
    values: tuple[Literal, ...]
    negated: bool = False

    def sql(self) -> str:
        vals = ", ".join(v.sql() for v in self.values)
        return f"{_quote(self.column)} {'NOT ' if self.negated else ''}IN ({vals})"


@dataclass(frozen=True, slots=True)
class Between:
    column: str
    low: Literal
    high: Literal
    negated: bool = False

    def sql(self) -> str:
        neg = "NOT " if self.negated else ""
        return f"{_quote(self.column)} {neg}BETWEEN {self.low.sql()} AND {self.high.sql()}"


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr

    def sql(self) -> str:
        return f"NOT ({self.operand.sql()})"


@dataclass(frozen=True, slots=True)
class BoolOp:
    op: str  # "AND" | "OR"
    operands: tuple[Expr, ...]

    def sql(self) -> str:
        return f" {self.op} ".join(f"({o.sql()})" if isinstance(o, BoolOp) else o.sql() for o in self.operands)


Expr = Comparison | IsNull | InList | Between | Not | BoolOp


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"


def referenced_columns(expr: Expr) -> set[str]:
    if isinstance(expr, (Comparison, IsNull, InList, Between)):
        return {expr.column}
    if isinstance(expr, Not):
        return referenced_columns(expr.operand)
    return set().union(*(referenced_columns(o) for o in expr.operands))


# --- parsing -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # string quoted number op punct word keyword end
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ConfigError(f"cannot parse predicate {text!r} at position {pos}: unexpected {text[pos:pos + 10]!r}")
        kind = m.lastgroup or ""
        tok = m.group(kind)
        if kind == "word" and tok.upper() in _KEYWORDS:
            out.append(_Tok("keyword", tok.upper(), m.start(kind)))
        else:
            out.append(_Tok(kind, tok, m.start(kind)))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def error(self, what: str) -> ConfigError:
        tok = self.toks[self.i]
        found = tok.text or "end of input"
        return ConfigError(f"cannot parse predicate {self.text!r}: expected {what} at position {tok.pos}, found {found!r}")

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None) -> _Tok:
        tok = self.peek()
        if tok.kind != kind or (text is not None and tok.text != text):
            raise self.error(text or kind)
        self.i += 1
        return tok

    def parse(self) -> Expr:
        expr = self.parse_or()
        if self.peek().kind != "end":
            raise self.error("AND, OR or end of input")
        return expr

    def parse_or(self) -> Expr:
        parts = [self.parse_and()]
        while self.accept("keyword", "OR"):
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else BoolOp("OR", tuple(parts))

    def parse_and(self) -> Expr:
        parts = [self.parse_not()]
        while self.accept("keyword", "AND"):
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else BoolOp("AND", tuple(parts))

    def parse_not(self) -> Expr:
        if self.accept("keyword", "NOT"):
            return Not(self.parse_not())
        return self.parse_primary()

    def parse_primary(self) -> Expr:
        if self.accept("punct", "("):
            expr = self.parse_or()
            self.expect("punct", ")")
            return expr
        tok = self.peek()
        if tok.kind in ("word", "quoted") or self._at_typed_name():
            return self.parse_comparison(self.parse_column())
        if self._at_literal():
            lit = self.parse_literal()
            op = self.expect("op").text
            column = self.parse_column()
            return Comparison(column, _FLIP[_norm_op(op)], lit)
        raise self.error("a column name, literal or '('")

    def _at_typed_name(self) -> bool:
        # DATE / TIMESTAMP start a typed literal only before a string; otherwise they name a column.
        tok = self.peek()
        return (tok.kind == "keyword" and tok.text in ("DATE", "TIMESTAMP")
                and self.toks[self.i + 1].kind != "string")

    def _at_literal(self) -> bool:
        tok = self.peek()
        return tok.kind in ("string", "number") or (
            tok.kind == "keyword" and tok.text in ("TRUE", "FALSE", "NULL", "DATE", "TIMESTAMP")
        )

    def parse_column(self) -> str:
        tok = self.take()
        if tok.kind == "word":
            return tok.text
        if tok.kind == "keyword" and tok.text in ("DATE", "TIMESTAMP"):
            return self.text[tok.pos:tok.pos + len(tok.text)]
        if tok.kind == "quoted":
            return tok.text[1:-1].replace("``", "`")
        self.i -= 1
        raise self.error("a column name")

    def parse_comparison(self, column: str) -> Expr:
        if self.accept("keyword", "IS"):
            negated = self.accept("keyword", "NOT")
            self.expect("keyword", "NULL")
            return IsNull(column, negated)
        negated = self.accept("keyword", "NOT")
        if self.accept("keyword", "IN"):
            self.expect("punct", "(")
            values = [self.parse_literal()]
            while self.accept("punct", ","):
                values.append(self.parse_literal())
            self.expect("punct", ")")
            return InList(column, tuple(values), negated)
        if self.accept("keyword", "BETWEEN"):
            low = self.parse_literal()
            self.expect("keyword", "AND")
            high = self.parse_literal()
            return Between(column, low, high, negated)
        if negated:
            raise self.error("IN or BETWEEN after NOT")
        op = self.expect("op").text
        return Comparison(column, _norm_op(op), self.parse_literal())

    def parse_literal(self) -> Literal:
        tok = self.take()
        if tok.kind == "string":
            return Literal(tok.text[1:-1].replace("''", "'"))
        if tok.kind == "number":
            text = tok.text
            return Literal(float(text) if any(c in text for c in ".eE") else int(text))
        if tok.kind == "keyword":
            if tok.text in ("TRUE", "FALSE"):
                return Literal(tok.text == "TRUE")
            if tok.text == "NULL":
                return Literal(None)
            if tok.text in ("DATE", "TIMESTAMP"):
                text = self.expect("string").text
                return Literal(text[1:-1].replace("''", "'"), tok.text.lower())
        self.i -= 1
        raise self.error("a literal ('text', number, TRUE, FALSE, NULL, DATE '...', TIMESTAMP '...')")


def _norm_op(op: str) -> str:
    return {"==": "=", "<>": "!="}.get(op, op)


def parse_predicate_syntax(text: str) -> Expr:
    """Parse ``text`` without binding its columns: what can be checked before the table's
    partition columns are known (e.g. when tables.yaml is loaded). ``ConfigError`` for a
    syntax error."""
    if not text or not text.strip():
        raise ConfigError("the partition predicate is empty; omit --where to select every partition")
    return _Parser(text).parse()


def parse_predicate(text: str, partition_columns: Sequence[str], *,
                    schema_columns: Sequence[str] | None = None) -> Expr:
    """Parse ``text`` and bind its columns to ``partition_columns`` (case-insensitive).

    Raises ``ConfigError`` for a syntax error or a column that is not a partition column; with
    ``schema_columns`` (the table's top-level columns), a name missing from the schema is
    reported as such, listing the columns, rather than as "not a partition column".
    """
    expr = parse_predicate_syntax(text)
    by_lower = {c.lower(): c for c in partition_columns}
    unknown = sorted(c for c in referenced_columns(expr) if c.lower() not in by_lower)
    if schema_columns is not None:
        in_schema = {c.lower() for c in schema_columns} | set(by_lower)
        missing = [c for c in unknown if c.lower() not in in_schema]
        if missing:
            raise ConfigError(
                f"predicate {text!r} refers to {', '.join(missing)}, which "
                f"{'does' if len(missing) == 1 else 'do'} not exist in the table schema; "
                f"the table's columns are {', '.join(schema_columns)}"
            )
    if unknown:
        allowed = ", ".join(partition_columns) or "none: the table is not partitioned"
        raise ConfigError(
            f"predicate {text!r} refers to {', '.join(unknown)}, which "
            f"{'is not a partition column' if len(unknown) == 1 else 'are not partition columns'}; "
            f"maintenance predicates may only use partition columns ({allowed})"
        )
    return _bind(expr, by_lower)


def _bind(expr: Expr, by_lower: dict[str, str]) -> Expr:
    if isinstance(expr, Comparison):
        return Comparison(by_lower[expr.column.lower()], expr.op, expr.literal)
    if isinstance(expr, IsNull):
        return IsNull(by_lower[expr.column.lower()], expr.negated)
    if isinstance(expr, InList):
        return InList(by_lower[expr.column.lower()], expr.values, expr.negated)
    if isinstance(expr, Between):
        return Between(by_lower[expr.column.lower()], expr.low, expr.high, expr.negated)
    if isinstance(expr, Not):
        return Not(_bind(expr.operand, by_lower))
    return BoolOp(expr.op, tuple(_bind(o, by_lower) for o in expr.operands))


# --- evaluation --------------------------------------------------------------------------


def _scalar(lit: Literal, typ: pa.DataType, column: str) -> pa.Scalar:
    if lit.value is None:
        return pa.scalar(None, type=typ)
    value = lit.value
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        value = lit.sql() if isinstance(value, bool) else (value if isinstance(value, str) else str(value))
        return pa.scalar(value, type=typ)
    try:
        if isinstance(value, str) and pa.types.is_timestamp(typ) and typ.tz is not None:
            # Partition timestamps without an offset are UTC (Delta writes them that way).
            try:
                return pa.scalar(value).cast(typ)
            except pa.ArrowInvalid:
                return pa.scalar(value).cast(pa.timestamp(typ.unit)).cast(typ)
        if isinstance(value, str) and pa.types.is_boolean(typ):
            return pa.scalar({"true": True, "false": False}[value.strip().lower()], type=typ)
        return pa.scalar(value).cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError, ValueError) as exc:
        raise ConfigError(
            f"literal {lit.sql()} cannot be compared with partition column {column!r} of type {typ}: {exc}"
        ) from None


_OPS = {
    "=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
    ">": pc.greater, ">=": pc.greater_equal,
}


def _eval(expr: Expr, table: pa.Table) -> pa.ChunkedArray | pa.Array:
    if isinstance(expr, Comparison):
        col = table.column(expr.column)
        return _OPS[expr.op](col, _scalar(expr.literal, col.type, expr.column))
    if isinstance(expr, IsNull):
        col = table.column(expr.column)
        result = pc.is_null(col)
        return pc.invert(result) if expr.negated else result
    if isinstance(expr, InList):
        col = table.column(expr.column)
        scalars = [_scalar(v, col.type, expr.column) for v in expr.values]
        non_null = [s for s in scalars if s.is_valid]
        hit = pc.is_in(col, value_set=pa.array([s.as_py() for s in non_null], type=col.type))
        # SQL: x IN (..., NULL) is NULL when x matches nothing; a NULL x is NULL.
        hit = pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), hit)
        if len(non_null) < len(scalars):
            hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
        return pc.invert(hit) if expr.negated else hit
    if isinstance(expr, Between):
        col = table.column(expr.column)
        low = _scalar(expr.low, col.type, expr.column)
        high = _scalar(expr.high, col.type, expr.column)
        result = pc.and_kleene(pc.greater_equal(col, low), pc.less_equal(col, high))
        return pc.invert(result) if expr.negated else result
    if isinstance(expr, Not):
        return pc.invert(_eval(expr.operand, table))
    combine = pc.and_kleene if expr.op == "AND" else pc.or_kleene
    result = _eval(expr.operands[0], table)
    for operand in expr.operands[1:]:
        result = combine(result, _eval(operand, table))
    return result


def evaluate(expr: Expr, partition_values: pa.Table) -> pa.Array:
    """A boolean mask over the rows of ``partition_values`` (typed partition columns).

    NULL results count as not selected.
    """
    result = _eval(expr, partition_values)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks() if result.num_chunks else pa.array([], pa.bool_())
    if isinstance(result, pa.Scalar):
        result = pa.array([result.as_py()] * partition_values.num_rows, pa.bool_())
    return pc.fill_null(result, False)
