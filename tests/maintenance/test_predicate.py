"""Partition predicate parsing and evaluation (pure)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.maintenance.predicate import evaluate, parse_predicate

PARTS = pa.table({
    "date": pa.array([dt.date(2023, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 2, 1), None], pa.date32()),
    "region": pa.array(["eu", "us", "eu", "eu"], pa.string()),
    "n": pa.array([1, 2, 3, None], pa.int32()),
    "ts": pa.array([0, 3_600_000_000, 7_200_000_000, None], pa.timestamp("us", tz="UTC")),
})
COLS = ["date", "region", "n", "ts"]


def sel(text: str) -> list[bool]:
    return evaluate(parse_predicate(text, COLS), PARTS).to_pylist()


def test_and_of_comparisons():
    assert sel("date >= '2024-01-01' AND region = 'eu'") == [False, False, True, False]


@pytest.mark.parametrize("text,expected", [
    ("region = 'eu' OR n = 2", [True, True, True, True]),
    ("NOT (region = 'eu')", [False, True, False, False]),
    ("n IN (1, 3)", [True, False, True, False]),
    ("n NOT IN (1, 3)", [False, True, False, False]),
    ("n BETWEEN 2 AND 3", [False, True, True, False]),
    ("n IS NULL", [False, False, False, True]),
    ("date IS NOT NULL AND n <> 1", [False, True, True, False]),
    ("2 < n", [False, False, True, False]),
    ("`region` == 'us'", [False, True, False, False]),
    ("REGION = 'us'", [False, True, False, False]),
    ("date = DATE '2024-02-01'", [False, False, True, False]),
    ("ts >= TIMESTAMP '1970-01-01 01:00:00'", [False, True, True, False]),
    ("ts < '1970-01-01T02:00:00'", [True, True, False, False]),
    ("n = NULL", [False, False, False, False]),
])
def test_forms(text, expected):
    assert sel(text) == expected


def test_sql_round_trip():
    expr = parse_predicate("date >= '2024-01-01' AND (region = 'e''u' OR n IN (1, 2))", COLS)
    again = parse_predicate(expr.sql(), COLS)
    assert again == expr


@pytest.mark.parametrize("text", ["x = 1", "region = 'eu' AND value > 3"])
def test_non_partition_column_refused(text):
    with pytest.raises(ConfigError, match="partition column"):
        parse_predicate(text, COLS)


@pytest.mark.parametrize("text", ["", "region =", "region = 'eu' AND", "(region = 'eu'", "region ~ 'x'",
                                  "region = 'unterminated"])
def test_syntax_errors(text):
    with pytest.raises(ConfigError):
        parse_predicate(text, COLS)


def test_uncastable_literal():
    with pytest.raises(ConfigError, match="cannot be compared"):
        sel("date = 'not a date'")


def test_unpartitioned_table_refuses_any_predicate():
    with pytest.raises(ConfigError, match="not partitioned"):
        parse_predicate("a = 1", [])
