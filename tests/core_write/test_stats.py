"""Per-file statistics from Arrow data: values, nesting, truncation, indexed-column limits."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest

from delta_core.model.schema import schema_from_arrow
from delta_core.model.stats import parse_stats_struct, stats_parsed_type
from delta_core.model.stats_collect import collect_stats, stats_json, truncate_max_string, truncate_min_string

MAX = "\U0010ffff"


def _utf8_le(a: str, b: str) -> bool:
    return a.encode("utf-8") <= b.encode("utf-8")


@pytest.mark.parametrize("value, expected_min, expected_max", [
    ("abc", "abc", "abc"),
    ("a" * 32, "a" * 32, "a" * 32),
    ("a" * 40, "a" * 32, "a" * 32 + "\x7f"),
    ("a" * 32 + "é" + "z", "a" * 32, "a" * 32 + MAX),
    ("a" * 32 + MAX + "b", "a" * 32, "a" * 32 + MAX + "\x7f"),
    # a surrogate pair straddling the cut stays whole
    ("a" * 31 + "😀" + "x" * 10, "a" * 31 + "😀", "a" * 31 + "😀" + "\x7f"),
])
def test_string_truncation_like_delta(value, expected_min, expected_max):
    assert truncate_min_string(value, 32) == expected_min
    assert truncate_max_string(value, 32) == expected_max
    assert _utf8_le(truncate_min_string(value, 32), value)
    assert _utf8_le(value, truncate_max_string(value, 32))


def test_max_of_only_max_characters_is_dropped():
    assert truncate_max_string(MAX * 40, 32) is None
    assert truncate_max_string(MAX * 20, 32) == MAX * 20  # 40 UTF-16 units, but the loop reaches the end


def test_stats_values_types_and_nesting():
    schema = pa.schema([
        ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()), ("d", pa.float64()),
        ("dec", pa.decimal128(12, 3)), ("s", pa.string()), ("b", pa.bool_()), ("bin", pa.binary()),
        ("date", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("x", pa.int16()), ("y", pa.struct([("z", pa.string())]))])),
        ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64())),
    ])
    data = pa.table({
        "i": [3, None, -1], "l": [10, 20, 30], "f": [1.5, 2.5, None], "d": [None, None, None],
        "dec": [decimal.Decimal("1.500"), decimal.Decimal("-20.125"), None],
        "s": ["b", "a", "c" * 50], "b": [True, None, False], "bin": [b"x", None, b"y"],
        "date": [dt.date(2020, 1, 2), dt.date(1999, 12, 31), None],
        "ts": [dt.datetime(2024, 1, 1, 0, 0, 0, 999999, tzinfo=dt.UTC), None,
               dt.datetime(1969, 12, 31, 23, 59, 59, 500, tzinfo=dt.UTC)],
        "ntz": [dt.datetime(2024, 5, 6, 7, 8, 9, 123456), None, None],
        "st": [{"x": 1, "y": {"z": "q"}}, None, {"x": None, "y": None}],
        "arr": [[1, 2], None, []], "m": [[("k", 1)], [], None],
    }, schema=schema)
    s = json.loads(stats_json(data))
    assert s["numRecords"] == 3
    assert s["minValues"] == {
        "i": -1, "l": 10, "f": 1.5, "dec": -20.125, "s": "a",
        "date": "1999-12-31", "ts": "1969-12-31T23:59:59.000Z", "ntz": "2024-05-06T07:08:09.123",
        "st": {"x": 1, "y": {"z": "q"}},
    }
    assert s["maxValues"]["s"] == "c" * 32 + "\x7f"
    assert s["maxValues"]["ts"] == "2024-01-01T00:00:00.999Z"  # floored to ms, as Delta does
    assert s["maxValues"]["dec"] == 1.5
    assert "b" not in s["minValues"] and "bin" not in s["minValues"] and "arr" not in s["minValues"]
    assert s["nullCount"] == {
        "i": 1, "l": 0, "f": 1, "d": 3, "dec": 1, "s": 0, "b": 1, "bin": 1, "date": 1, "ts": 1,
        "ntz": 2, "st": {"x": 2, "y": {"z": 2}}, "arr": 1, "m": 1,
    }
    # decimals are exact JSON numbers, not floats
    assert '"dec":-20.125' in stats_json(data)


def test_nan_and_infinity_get_no_bounds():
    s = collect_stats(pa.table({"f": [1.0, float("nan")], "g": [1.0, float("inf")], "h": [1.0, 2.0]}))
    assert "f" not in s["minValues"] and "g" not in s["maxValues"]
    assert s["minValues"]["h"] == 1.0 and s["nullCount"] == {"f": 0, "g": 0, "h": 0}


def test_num_indexed_cols_and_stats_columns():
    data = pa.table({"a": [1], "b": [2], "c": [3]})
    s = collect_stats(data, num_indexed_cols=2)
    assert set(s["nullCount"]) == {"a", "b"}
    s = collect_stats(data, stats_columns=["c"])
    assert set(s["nullCount"]) == {"c"} and s["minValues"] == {"c": 3}
    assert set(collect_stats(data, num_indexed_cols=-1)["nullCount"]) == {"a", "b", "c"}


def test_empty_file_stats():
    s = collect_stats(pa.table({"a": pa.array([], pa.int64())}))
    assert s == {"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {"a": 0}}


def test_stats_parse_back_into_struct():
    schema = pa.schema([("a", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("d", pa.date32()),
                        ("dec", pa.decimal128(5, 2)), ("st", pa.struct([("x", pa.string())]))])
    data = pa.table({"a": [1, 2], "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * 2,
                     "d": [dt.date(2024, 1, 1), None], "dec": [decimal.Decimal("1.25"), None],
                     "st": [{"x": "u"}, {"x": "v"}]}, schema=schema)
    col = pa.array([stats_json(data), None], pa.string())
    parsed = parse_stats_struct(col, schema_from_arrow(schema))
    assert parsed.type == stats_parsed_type(schema_from_arrow(schema))
    parsed = parsed.to_pylist()
    assert parsed[1] == {"numRecords": None, "tightBounds": None, "minValues": None, "maxValues": None,
                         "nullCount": None}
    assert parsed[0]["numRecords"] == 2
    assert parsed[0]["minValues"]["ts"] == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert parsed[0]["maxValues"]["dec"] == decimal.Decimal("1.25")
    assert parsed[0]["maxValues"]["st"] == {"x": "v"}
    assert parsed[0]["nullCount"] == {"a": 0, "ts": 0, "d": 1, "dec": 1, "st": {"x": 0}}
