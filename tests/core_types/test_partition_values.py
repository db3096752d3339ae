"""delta_core.model.partition_values against real partition values, directories and delta-rs output."""

from __future__ import annotations

import datetime as dt
import decimal
import pathlib
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import CorruptLogError, PartitionValueError
from delta_core.model.partition_values import (
    HIVE_DEFAULT_PARTITION,
    deserialize_partition_value,
    escape_path_name,
    map_value,
    partition_path,
    serialize_partition_value,
    typed_partition_values,
    unescape_path_name,
    url_decode_path,
    url_encode_path,
)
from delta_core.model.schema import PrimitiveType, StructType
from tests.core_types.logdata import actions, expected, last_metadata, table_dirs

UTC = dt.UTC


def _partitioned_tables() -> list[pathlib.Path]:
    out = []
    for t in table_dirs():
        md = last_metadata(t)
        if md and md.get("partitionColumns") and actions(t, "add"):
            out.append(t)
    return out


def _key(schema: StructType, column: str, pv: dict) -> str:
    phys = schema[column].physical_name
    return phys if phys in pv else column


@pytest.mark.parametrize("table", _partitioned_tables(), ids=lambda p: p.name)
def test_every_logged_partition_value_parses_and_round_trips(table):
    md = last_metadata(table)
    schema = StructType.from_json(md["schemaString"])
    for add in actions(table, "add"):
        pv = add["partitionValues"]
        for col in md["partitionColumns"]:
            t = schema[col].type
            text = pv.get(_key(schema, col, pv))
            value = deserialize_partition_value(text, t, column=col)
            if text in (None, ""):
                assert value is None
                continue
            again = serialize_partition_value(value, t)
            # our spelling may differ (e.g. ISO timestamps), never the value
            assert deserialize_partition_value(again, t) == value


@pytest.mark.parametrize("table", [t for t in _partitioned_tables() if expected(t).get("data_files_present")],
                         ids=lambda p: p.name)
def test_add_paths_decode_once_to_files_on_disk(table):
    live = set(expected(table)["latest"]["files"])
    for add in actions(table, "add"):
        if add["path"] not in live:
            continue
        assert (table / url_decode_path(add["path"])).is_file(), add["path"]


def test_escaped_chars_table_directories(conformance_dir):
    table = conformance_dir / "golden-data-reader-escaped-chars"
    for add in actions(table, "add"):
        directory = partition_path(["_2"], add["partitionValues"])
        assert directory == "_2=" + escape_path_name(add["partitionValues"]["_2"])
        assert add["path"].startswith(url_encode_path(directory) + "/")
        assert (table / url_decode_path(add["path"])).is_file()
        # decoding twice names a directory that does not exist
        assert not (table / url_decode_path(url_decode_path(add["path"]))).exists()


def test_special_characters_and_emoji_directories(conformance_dir):
    table = conformance_dir / "dat-multi_partitioned"
    md = last_metadata(table)
    for add in actions(table, "add"):
        directory = partition_path(md["partitionColumns"], add["partitionValues"])
        assert add["path"].startswith(url_encode_path(directory) + "/"), add["path"]
    assert partition_path(["letter"], {"letter": "/%20%f"}) == "letter=%2F%2520%25f"
    assert url_encode_path("letter=%2F%2520%25f") == "letter=%252F%252520%2525f"
    assert url_encode_path("data=😈") == "data=😈"


def test_null_and_empty_values_use_the_hive_default_partition():
    assert partition_path(["a", "b", "c"], {"a": None, "b": ""}) == "/".join(
        f"{c}={HIVE_DEFAULT_PARTITION}" for c in "abc")
    assert deserialize_partition_value("", "integer") is None
    assert serialize_partition_value(None, "date") is None


def test_partition_values_table_types(conformance_dir):
    table = conformance_dir / "golden-data-reader-partition-values"
    md = last_metadata(table)
    schema = StructType.from_json(md["schemaString"])
    adds = actions(table, "add")
    pv_type = pa.map_(pa.string(), pa.string())
    maps = pa.array([list(a["partitionValues"].items()) for a in adds], pv_type)
    paths = pa.array([a["path"] for a in adds])
    typed = typed_partition_values(maps, schema, md["partitionColumns"], paths=paths)
    assert typed.column_names == ["path", *md["partitionColumns"]]
    rows = {r["as_int"]: r for r in typed.to_pylist()}
    one = rows[1]
    assert one["as_long"] == 1 and one["as_byte"] == 1 and one["as_boolean"] is False
    assert one["as_float"] == 1.0 and one["as_big_decimal"] == decimal.Decimal(1)
    assert one["as_date"] == dt.date(2021, 9, 8)
    assert one["as_timestamp"] == dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)
    assert one["as_string_lit_null"] == "null"  # the string "null" is not a null
    assert all(v is None for k, v in rows[None].items() if k != "path")
    assert typed.schema.field("as_timestamp").type == pa.timestamp("us", tz="UTC")
    assert typed.schema.field("as_byte").type == pa.int8()


def test_iso8601_timestamp_partition_values(conformance_dir):
    table = conformance_dir / "golden-kernel-timestamp-partition-col-ISO8601"
    values = [deserialize_partition_value(a["partitionValues"]["ts"], "timestamp") for a in actions(table, "add")]
    assert values == [dt.datetime(2024, 1, 1, 10, tzinfo=UTC), dt.datetime(2024, 1, 2, 12, 30, tzinfo=UTC)]


def test_timestamp_ntz_under_column_mapping(conformance_dir):
    table = conformance_dir / "golden-data-reader-timestamp_ntz-id-mode"
    md = last_metadata(table)
    schema = StructType.from_json(md["schemaString"])
    adds = actions(table, "add")
    maps = pa.array([list(a["partitionValues"].items()) for a in adds], pa.map_(pa.string(), pa.string()))
    typed = typed_partition_values(maps, schema, md["partitionColumns"], physical_keys=True)
    col = md["partitionColumns"][0]
    assert typed.schema.field(col).type == pa.timestamp("us")
    got = set(typed.column(col).to_pylist())
    assert dt.datetime(2021, 11, 18, 2, 30, 0, 123456) in got and None in got


@pytest.mark.parametrize("text,type_name,value", [
    ("2021-09-08 11:11:11", "timestamp", dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)),
    ("1970-01-01 00:00:00.123456", "timestamp", dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    ("1970-01-01T00:00:00.123456Z", "timestamp", dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    ("2024-01-01T12:00:00+02:00", "timestamp", dt.datetime(2024, 1, 1, 10, tzinfo=UTC)),
    ("2021-11-18 02:30:00", "timestamp_ntz", dt.datetime(2021, 11, 18, 2, 30)),
    ("-12", "byte", -12),
    ("9223372036854775807", "long", 2**63 - 1),
    ("2021.0", "double", 2021.0),
    ("NaN", "double", None),
    ("-Infinity", "float", float("-inf")),
    ("123.45", "decimal(5,2)", decimal.Decimal("123.45")),
    ("TRUE", "boolean", True),
    ("😈", "binary", "😈".encode()),
    ("1970-01-01", "date", dt.date(1970, 1, 1)),
])
def test_deserialize_accepted_formats(text, type_name, value):
    got = deserialize_partition_value(text, type_name)
    if value is None:  # NaN
        assert got != got
    else:
        assert got == value


@pytest.mark.parametrize("value,type_name,text", [
    (dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC), "timestamp", "1970-01-01T00:00:00.123456Z"),
    (dt.datetime(2021, 11, 18, 2, 30), "timestamp_ntz", "2021-11-18 02:30:00"),
    (dt.datetime(2021, 11, 18, 2, 30, 0, 5), "timestamp_ntz", "2021-11-18 02:30:00.000005"),
    (1.1, "float", "1.1"), (1e20, "double", "1.0E20"), (float("nan"), "double", "NaN"),
    (decimal.Decimal("1.5"), "decimal(5,2)", "1.50"), (True, "boolean", "true"),
    (dt.date(2020, 2, 29), "date", "2020-02-29"), (b"ab", "binary", "ab"), (7, "short", "7"),
])
def test_serialize_spellings(value, type_name, text):
    assert serialize_partition_value(value, type_name) == text


@pytest.mark.parametrize("text,type_name", [
    ("abc", "integer"), ("300", "byte"), ("1.5", "long"), ("yes", "boolean"),
    ("2021-13-01", "date"), ("123.456", "decimal(5,2)"), ("1234.5", "decimal(5,2)"),
    ("2021-01-01 10:00:00+01:00", "timestamp_ntz"), ("tomorrow", "timestamp"),
])
def test_bad_logged_values_raise_corrupt_log(text, type_name):
    with pytest.raises(CorruptLogError, match="rewrite the partition or fix the log entry") as ei:
        deserialize_partition_value(text, type_name, column="c")
    assert "'c'" in str(ei.value) and repr(text) in str(ei.value)


@pytest.mark.parametrize("value,type_name", [
    ("x", "integer"), (2**40, "integer"), (1.5, "long"), ("true", "boolean"),
    (decimal.Decimal("1.234"), "decimal(5,2)"), (dt.datetime(2020, 1, 1, tzinfo=UTC), "timestamp_ntz"),
    (dt.datetime(2020, 1, 1), "date"), (b"\xff", "binary"), (1, "string"),
])
def test_bad_user_values_raise_partition_value_error(value, type_name):
    with pytest.raises(PartitionValueError, match="convert the value"):
        serialize_partition_value(value, type_name)


def test_partition_columns_of_complex_type_are_refused():
    with pytest.raises(PartitionValueError, match="cannot be a partition column type"):
        serialize_partition_value(1, StructType(()))
    with pytest.raises(PartitionValueError):
        deserialize_partition_value("1", PrimitiveType("variant"))


def test_escaping_round_trips_on_awkward_strings():
    rng = random.Random(7)
    alphabet = "ab =/%:#?*\\'\"{}[]^+&@~!,;\x01\x1f\x7fé😈 "
    for _ in range(500):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert unescape_path_name(escape_path_name(s)) == s
        directory = partition_path(["k"], {"k": s or None})
        assert "/" not in directory
        assert url_decode_path(url_encode_path(directory)) == directory
    assert escape_path_name("a:b=c/d%") == "a%3Ab%3Dc%2Fd%25"
    assert url_encode_path("c:d/x:y.parquet") == "c%3Ad/x:y.parquet"  # no scheme look-alike
    assert url_decode_path(url_encode_path("c:d/x:y.parquet")) == "c:d/x:y.parquet"


def test_delta_rs_partitioned_table(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    data = pa.table({
        "id": pa.array(range(6), pa.int64()),
        "s": ["a/b", "x y", "p%q", "c:d", "e=f", None],
        "n": pa.array([1, 1, 2, 2, 3, None], pa.int32()),
        "d": pa.array([dt.date(2024, 1, 1)] * 3 + [dt.date(1999, 12, 31)] * 2 + [None], pa.date32()),
        "b": [True, False, True, False, True, None],
    })
    deltalake.write_deltalake(str(tmp_path), data, partition_by=["s", "n", "d", "b"])
    md = last_metadata(tmp_path)
    schema = StructType.from_json(md["schemaString"])
    adds = actions(tmp_path, "add")
    assert len(adds) == 6
    maps = pa.array([list(a["partitionValues"].items()) for a in adds], pa.map_(pa.string(), pa.string()))
    typed = typed_partition_values(maps, schema, md["partitionColumns"], paths=pa.array([a["path"] for a in adds]))
    by_path = {r["path"]: r for r in typed.to_pylist()}
    for add in adds:
        f = tmp_path / url_decode_path(add["path"])
        assert f.is_file(), add["path"]
        ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()
        assert len(ids) == 1
        source = data.slice(ids[0], 1).to_pylist()[0]
        row = by_path[add["path"]]
        assert {k: row[k] for k in ("s", "n", "d", "b")} == {k: source[k] for k in ("s", "n", "d", "b")}


def test_year_one_and_9999_serialize_with_four_digit_years():
    """glibc's strftime("%Y") spells year 1 as "1"; the protocol's ISO forms need "0001"."""
    first = dt.datetime(1, 1, 1, 0, 0, 0, 5)
    last = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert serialize_partition_value(first, "timestamp") == "0001-01-01T00:00:00.000005Z"
    assert serialize_partition_value(last, "timestamp") == "9999-12-31T23:59:59.999999Z"
    assert serialize_partition_value(dt.datetime(1, 1, 1), "timestamp_ntz") == "0001-01-01 00:00:00"
    assert serialize_partition_value(first, "timestamp_ntz") == "0001-01-01 00:00:00.000005"
    for value, kind in ((first, "timestamp_ntz"), (last, "timestamp_ntz")):
        assert deserialize_partition_value(serialize_partition_value(value, kind), kind) == value


def test_map_value_agrees_with_arrows_map_lookup():
    """Null maps, empty maps, absent keys, a key held twice (the first wins), null values, and
    slices of the array (offsets into a larger entries array)."""
    from delta_core.log.file_actions import STRING_MAP

    rng = random.Random(7)
    rows = []
    for _ in range(3000):
        if rng.random() < 0.05:
            rows.append(None)
            continue
        entries = [(rng.choice("abcd"), rng.choice([None, "x", "y", str(rng.randrange(50))]))
                   for _ in range(rng.randrange(4))]
        rows.append(entries)
    maps = pa.array(rows, STRING_MAP)
    for part in (maps, maps.slice(1), maps.slice(977, 1500), maps.slice(3000), maps.slice(10, 0)):
        for key in "abcde":
            assert map_value(part, key).equals(pc.map_lookup(part, pa.scalar(key), "first")), (key, part.offset)


@pytest.mark.parametrize("width", [1, 3])
def test_map_value_of_aligned_maps_agrees_with_arrows_map_lookup(width):
    """Maps as writers log a partitioned table's ``partitionValues`` (each the same keys in the
    same order: looked up without a search), and the same with one row out of line in each way
    the shortcut must notice: a key elsewhere or missing, one entry more or less, a null map,
    the key held twice, a null value; each whole and sliced."""
    from delta_core.log.file_actions import STRING_MAP

    keys = ["day", "region", "hour"][:width]

    def row(i: int) -> list[tuple[str, str | None]]:
        return [(k, f"{k}-{i % 7}") for k in keys]

    n = 2000
    aligned = [row(i) for i in range(n)]
    odd_rows = {
        "moved": [*reversed(row(5))] if width > 1 else [("other", "x")],
        "missing": [(k, v) for k, v in row(5) if k != keys[-1]] + [("other", "x")],
        "longer": [*row(5), ("extra", "x")],
        "shorter": row(5)[:-1],
        "null map": None,
        "twice": [(keys[0], "first"), *row(5)[1:], (keys[0], "second")] if width > 1 else [(keys[0], "first")],
        "null value": [(k, None) for k in keys],
    }
    cases = {"aligned": aligned, **{name: aligned[:1500] + [odd] + aligned[1501:] for name, odd in odd_rows.items()}}
    for name, rows in cases.items():
        maps = pa.array(rows, STRING_MAP)
        for part in (maps, maps.slice(1), maps.slice(1000, 800), maps.slice(1501), maps.slice(10, 0)):
            for key in [*keys, "other", "absent"]:
                assert map_value(part, key).equals(pc.map_lookup(part, pa.scalar(key), "first")), (name, key, part.offset)
