"""Shredded variant groups written to Parquet by pyarrow, rebuilt unshredded, and decoded by an
independent reader (pyspark's ``VariantVal``) as JSON: every ``typed_value`` kind of
VariantShredding.md, partially shredded objects, missing versus null fields, arrays and nesting.
The types pyspark 4 cannot decode (nanosecond timestamps, time, uuid) are checked against the
bytes VariantEncoding.md's primitive table gives."""

from __future__ import annotations

import datetime
import decimal
import json
import pathlib
import struct
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import VariantVal

from delta_core.errors import CorruptVariantError
from delta_core.model.variant_binary import encode_arrays, encode_object, encode_objects, encode_primitives
from delta_core.model.variant_shredding import UNSHREDDED, has_shredded, unshred
from tests.variant_values import metadata, short_string, small_object

META = metadata("b", "a", "c", "zz")  # unsorted on purpose: ids are not name order


def slot(value: pa.Array, typed: pa.Array | None) -> pa.StructArray:
    """A shredded field or element: ``value`` and, when given, ``typed_value``."""
    arrays, names = [value], ["value"]
    if typed is not None:
        arrays.append(typed)
        names.append("typed_value")
    return pa.StructArray.from_arrays(arrays, names=names)


def group(typed: pa.Array | None, value: list[bytes | None] | None = None, *,
          mask: list[bool] | None = None, meta: bytes = META) -> pa.StructArray:
    n = len(typed) if typed is not None else len(value or [])
    arrays = [pa.array([meta] * n, pa.binary()), pa.array(value or [None] * n, pa.binary())]
    names = ["metadata", "value"]
    if typed is not None:
        arrays.append(typed)
        names.append("typed_value")
    return pa.StructArray.from_arrays(arrays, names=names, mask=pa.array(mask) if mask else None)


def through_parquet(tmp_path: pathlib.Path, column: pa.Array) -> pa.Array:
    """The column as a Parquet reader returns it, after pyarrow wrote it to a file."""
    path = tmp_path / "shredded.parquet"
    pq.write_table(pa.table({"v": column}), path)
    return pq.read_table(path).column("v").combine_chunks()


def rebuilt_json(tmp_path: pathlib.Path, column: pa.Array, target: pa.DataType = UNSHREDDED) -> list[Any]:
    """Each row rebuilt, decoded by pyspark's VariantVal and parsed as JSON (None: SQL null)."""
    physical = through_parquet(tmp_path, column)
    assert has_shredded(physical.type)
    out = unshred(physical, target)
    assert out.type == target
    return [None if r is None else json.loads(VariantVal(r["value"], r["metadata"]).toJson())
            for r in out.to_pylist()]


def rebuilt_bytes(tmp_path: pathlib.Path, column: pa.Array) -> list[bytes | None]:
    out = unshred(through_parquet(tmp_path, column), UNSHREDDED)
    return [None if r is None else r["value"] for r in out.to_pylist()]


PRIMITIVES = [
    (pa.array([1, -2, None], pa.int8()), [1, -2, None]),
    (pa.array([300, None, -300], pa.int16()), [300, None, -300]),
    (pa.array([70000, None, 7], pa.int32()), [70000, None, 7]),
    (pa.array([2**40, None, -1], pa.int64()), [2**40, None, -1]),
    (pa.array([True, False, None]), [True, False, None]),
    (pa.array([1.5, None, -0.25], pa.float32()), [1.5, None, -0.25]),
    (pa.array([2.5, None, 1e300], pa.float64()), [2.5, None, 1e300]),
    (pa.array([decimal.Decimal("12.34"), decimal.Decimal("-0.01"), None], pa.decimal128(4, 2)),
     [12.34, -0.01, None]),
    (pa.array([decimal.Decimal("123456789012.345"), None, decimal.Decimal("-1.000")], pa.decimal128(15, 3)),
     [123456789012.345, None, -1.0]),
    (pa.array([decimal.Decimal("-12345678901234567890123.45"), None, decimal.Decimal("0.00")],
              pa.decimal128(30, 2)), [-12345678901234567890123.45, None, 0.0]),
    (pa.array([datetime.date(2024, 1, 2), None, datetime.date(1969, 12, 31)]), ["2024-01-02", None, "1969-12-31"]),
    (pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None, datetime.datetime(1960, 1, 1)],
              pa.timestamp("us", tz="UTC")),
     ["2024-01-02 03:04:05.000006+00:00", None, "1960-01-01 00:00:00+00:00"]),
    (pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None, None], pa.timestamp("us")),
     ["2024-01-02 03:04:05.000006", None, None]),
    (pa.array([b"\x01\x02", None, b""]), ["AQI=", None, ""]),
    (pa.array(["short", None, "long " * 20]), ["short", None, "long " * 20]),
    (pa.array(["", "é" * 40, None]), ["", "é" * 40, None]),  # 80 bytes: the long string form
]


@pytest.mark.parametrize(("typed", "expected"), PRIMITIVES, ids=[str(t.type) for t, _ in PRIMITIVES])
def test_each_shredded_primitive_reads_as_its_value(tmp_path, typed, expected):
    # A null typed_value takes the row's value: a variant null (00) or an unshredded string.
    values = [None if e is not None else (b"\x00" if i % 2 else short_string("n/a")) for i, e in enumerate(expected)]
    assert rebuilt_json(tmp_path, group(typed, values)) == [
        e if e is not None else (None if i % 2 else "n/a") for i, e in enumerate(expected)]


def test_types_pyspark_cannot_decode_have_the_spec_bytes(tmp_path):
    nanos = 1_704_164_645_000_006_789
    cases = [
        (pa.array([nanos], pa.timestamp("ns", tz="UTC")), bytes([18 << 2]) + struct.pack("<q", nanos)),
        (pa.array([nanos], pa.timestamp("ns")), bytes([19 << 2]) + struct.pack("<q", nanos)),
        (pa.array([datetime.time(1, 2, 3, 4)], pa.time64("us")), bytes([17 << 2]) + struct.pack("<q", 3_723_000_004)),
    ]
    for typed, expected in cases:
        assert rebuilt_bytes(tmp_path, group(typed)) == [expected]
    ident = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    typed = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([ident.bytes], pa.binary(16)))
    assert rebuilt_bytes(tmp_path, group(typed)) == [bytes([20 << 2]) + ident.bytes]  # big-endian as stored


def test_the_spec_measurement_example(tmp_path):
    # VariantShredding.md "Value Shredding": 34, null, "n/a", 100 in a required group.
    typed = pa.array([34, None, None, 100], pa.int64())
    column = group(typed, [None, b"\x00", short_string("n/a"), None], meta=b"\x01\x00\x00")
    assert rebuilt_json(tmp_path, column) == [34, None, "n/a", 100]


def _event_rows() -> tuple[pa.StructArray, list[Any]]:
    """VariantShredding.md's ``event`` table (objects with event_type/event_ts shredded), every valid row."""
    meta = metadata("event_type", "event_ts", "email", "error_msg", "click")

    def obj(**fields: bytes) -> bytes:
        return small_object({"email": 2, "error_msg": 3, "click": 4}, **fields)

    ts = [1729794114937, 1729794146402, None, None, 1729794240241, 1729794954163, None, None, None, None]
    kind = ["noop", "login", None, None, None, None, "noop", None, None, None]
    kind_value = [None, None, None, None, None, b"\x00", None, None, None, None]
    ts_value = [None] * 6 + [short_string("2024-10-24")] + [None] * 3
    typed_mask = [False, False, False, True, False, False, False, False, True, True]
    value = [None, obj(email=short_string("user@example.com")), obj(error_msg=short_string("malformed: ...")),
             short_string("malformed: not an object"), obj(click=short_string("_button")), None, None, None,
             b"\x00", None]
    typed = pa.StructArray.from_arrays(
        [slot(pa.array(kind_value, pa.binary()), pa.array(kind, pa.string())),
         slot(pa.array(ts_value, pa.binary()), pa.array(ts, pa.timestamp("us", tz="UTC")))],
        names=["event_type", "event_ts"], mask=pa.array(typed_mask))
    column = pa.StructArray.from_arrays(
        [pa.array([meta] * 10, pa.binary()), pa.array(value, pa.binary()), typed],
        names=["metadata", "value", "typed_value"], mask=pa.array([False] * 9 + [True]))

    def stamp(micros: int) -> str:
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        return (epoch + datetime.timedelta(microseconds=micros)).isoformat(sep=" ")

    expected = [
        {"event_type": "noop", "event_ts": stamp(1729794114937)},
        {"event_type": "login", "event_ts": stamp(1729794146402), "email": "user@example.com"},
        {"error_msg": "malformed: ..."},
        "malformed: not an object",
        {"event_ts": stamp(1729794240241), "click": "_button"},
        {"event_type": None, "event_ts": stamp(1729794954163)},
        {"event_type": "noop", "event_ts": "2024-10-24"},
        {},
        None,  # Variant null
        None,  # SQL null: the variant is missing
    ]
    return column, expected


def test_objects_partial_shredding_and_missing_versus_null_fields(tmp_path):
    column, expected = _event_rows()
    got = rebuilt_json(tmp_path, column)
    assert got == expected
    out = unshred(through_parquet(tmp_path, column), UNSHREDDED)
    assert out.is_null().to_pylist() == [False] * 9 + [True]  # a missing variant stays SQL null
    assert out.field("value")[8].as_py() == b"\x00"  # the null one holds Variant null


def test_shredded_arrays_of_the_spec_tags_example(tmp_path):
    elements = slot(pa.array([None, None, None, b"\x00", None, None, None], pa.binary()),
                    pa.array(["comedy", "drama", "horror", None, "comedy", "drama", "romance"]))
    tags = pa.ListArray.from_arrays(pa.array([0, 2, 4, 7, 7, 7], pa.int32()), elements,
                                    mask=pa.array([False, False, False, True, False]))
    column = group(tags, [None, None, None, b"\x00", None], meta=b"\x01\x00\x00")
    assert rebuilt_json(tmp_path, column) == [
        ["comedy", "drama"], ["horror", None], ["comedy", "drama", "romance"], None, []]


def test_nesting_objects_in_arrays_in_objects(tmp_path):
    # {"b": [{"a": 1, "c": [true]}, {"a": "x"}], "zz": 2.5} with every level shredded; the
    # second element's "a" is not an int, so it sits in value; its "c" is missing.
    c_elems = slot(pa.nulls(1, pa.binary()), pa.array([True]))
    c = slot(pa.nulls(2, pa.binary()), pa.ListArray.from_arrays(pa.array([0, 1, 1], pa.int32()), c_elems,
                                                                mask=pa.array([False, True])))
    a = slot(pa.array([None, short_string("x")], pa.binary()), pa.array([1, None], pa.int64()))
    elem = slot(pa.nulls(2, pa.binary()), pa.StructArray.from_arrays([a, c], names=["a", "c"]))
    b = slot(pa.nulls(1, pa.binary()), pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), elem))
    zz = slot(pa.nulls(1, pa.binary()), pa.array([2.5]))
    column = group(pa.StructArray.from_arrays([b, zz], names=["b", "zz"]))
    assert rebuilt_json(tmp_path, column) == [{"b": [{"a": 1, "c": [True]}, {"a": "x"}], "zz": 2.5}]


def test_shredded_groups_inside_structs_lists_and_maps(tmp_path):
    inner = group(pa.array([5, None, 7], pa.int32()), [None, short_string("s"), None])
    target = pa.struct([
        pa.field("list", pa.list_(pa.field("element", UNSHREDDED))),
        pa.field("map", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", UNSHREDDED))),
    ])
    column = pa.StructArray.from_arrays(
        [pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), inner),
         pa.MapArray.from_arrays(pa.array([0, 1, 3], pa.int32()), pa.array(["k", "l", "m"]), inner)],
        names=["list", "map"])
    out = unshred(through_parquet(tmp_path, column), target)
    assert out.type == target
    decoded = [{"list": [json.loads(VariantVal(e["value"], e["metadata"]).toJson()) for e in r["list"]],
                "map": {k: json.loads(VariantVal(v["value"], v["metadata"]).toJson()) for k, v in r["map"]}}
               for r in out.to_pylist()]
    assert decoded == [{"list": [5, "s"], "map": {"k": 5}}, {"list": [7], "map": {"l": "s", "m": 7}}]


def test_unshredded_columns_pass_through_unchanged(tmp_path):
    plain = pa.StructArray.from_arrays([pa.array([b"\x0c\x01"]), pa.array([b"\x01\x00\x00"])],
                                       fields=list(UNSHREDDED))
    assert not has_shredded(plain.type)
    assert unshred(plain, UNSHREDDED) is plain


def test_a_field_missing_from_the_metadata_is_a_corrupt_file(tmp_path):
    typed = pa.StructArray.from_arrays([slot(pa.nulls(1, pa.binary()), pa.array([1], pa.int64()))], names=["nope"])
    with pytest.raises(CorruptVariantError, match="'nope' is not in its row's metadata dictionary"):
        unshred(group(typed), UNSHREDDED)


def test_a_partially_shredded_non_object_is_a_corrupt_file(tmp_path):
    typed = pa.StructArray.from_arrays([slot(pa.nulls(1, pa.binary()), pa.array([1], pa.int64()))], names=["a"])
    with pytest.raises(CorruptVariantError, match="not an object"):
        unshred(group(typed, [short_string("a")]), UNSHREDDED)


def test_column_wise_objects_are_the_bytes_of_one_object_at_a_time():
    """``encode_objects`` against ``encode_object`` row by row, with widths past one byte: 300
    fields (4-byte count), ids up to 70,000 (3-byte ids), over 64 KB of values (3-byte offsets)."""
    rng = np.random.default_rng(7)
    n, k = 40, 300
    names = sorted(f"f{j:03d}" for j in range(k))
    ids = rng.integers(0, 70_000, size=(n, k))
    fields = []
    for j in range(k):
        big = j % 50 == 0  # six fields of 20-30 KB in every row
        sizes = rng.integers(20_000, 30_000, size=n) if big else rng.integers(1, 8, size=n)
        values = [None if not big and rng.random() < 0.2 else bytes(rng.integers(0, 256, size=s, dtype=np.uint8))
                  for s in sizes]
        fields.append(pa.array(values, pa.large_binary()))
    built = encode_objects(fields, ids).to_pylist()
    rows = [[(names[j], int(ids[i, j]), fields[j][i].as_py()) for j in range(k) if fields[j][i].is_valid]
            for i in range(n)]
    assert built == [encode_object(r) for r in rows]
    assert {b[0] >> 2 & 3 for b in built} == {2} and {b[0] >> 4 & 3 for b in built} == {2}  # 3-byte widths
    small = encode_objects(fields[:2], ids[:, :2] % 200).to_pylist()
    assert small == [encode_object([(names[j], int(ids[i, j]) % 200, fields[j][i].as_py()) for j in range(2)
                                    if fields[j][i].is_valid]) for i in range(n)]


def test_column_wise_arrays_decode_as_their_elements():
    """``encode_arrays`` decoded by VariantVal: empty arrays, 300 elements (4-byte count), over
    64 KB of elements (3-byte offsets)."""
    counts = np.array([0, 1, 300, 2, 0, 5, 3])
    texts = [f"e{i}" * (15_000 if 5 <= i < 8 else 1) for i in range(int(counts.sum()))]  # 3 long ones in row 2
    elements = encode_primitives(pa.array(texts))
    bounds = np.concatenate([[0], np.cumsum(counts)])
    built = encode_arrays(elements, bounds).to_pylist()
    assert [json.loads(VariantVal(b, b"\x01\x00\x00").toJson()) for b in built] == \
        [texts[bounds[i]:bounds[i + 1]] for i in range(len(counts))]
    assert built[2][0] >> 4 & 1 == 1 and built[2][0] >> 2 & 3 == 2  # large count; 3-byte offsets


def test_what_lies_under_a_null_group_is_not_decoded():
    """Arrow may keep any bytes under a null slot (here an empty metadata and a shredded field):
    the row is SQL null and nothing under it is read."""
    typed = pa.StructArray.from_arrays([slot(pa.nulls(2, pa.binary()), pa.array([1, 2], pa.int64()))], names=["a"])
    column = pa.StructArray.from_arrays([pa.array([META, b""]), pa.nulls(2, pa.binary()), typed],
                                        names=["metadata", "value", "typed_value"], mask=pa.array([False, True]))
    inside = pa.StructArray.from_arrays([column], names=["v"], mask=pa.array([False, False]))
    out = unshred(inside, pa.struct([pa.field("v", UNSHREDDED)])).to_pylist()
    assert json.loads(VariantVal(out[0]["v"]["value"], META).toJson()) == {"a": 1}
    assert out[1]["v"] is None


def test_wide_shredded_objects_are_assembled_in_slices_alike():
    """300 shredded fields over 4,000 rows pass the cells assembled at once: the rows come out
    as one object each, in order, across the slices."""
    n, k = 4000, 300
    names = [f"f{j:03d}" for j in range(k)]
    typed = pa.StructArray.from_arrays(
        [slot(pa.nulls(n, pa.binary()), pa.array([None if (i + j) % 7 == 0 else i for i in range(n)], pa.int32()))
         for j in range(k)], names=names)
    out = unshred(group(typed, meta=metadata(*names)), UNSHREDDED).field("value").to_pylist()
    assert len(out) == n
    for i in (0, 1, 3494, 3495, 3496, n - 1):
        assert json.loads(VariantVal(out[i], metadata(*names)).toJson()) == \
            {name: i for j, name in enumerate(names) if (i + j) % 7}
