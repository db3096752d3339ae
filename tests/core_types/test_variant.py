"""The variant type in the model (PROTOCOL.md "Variant Data Type"): schemas with variants at any
depth, the Arrow layout and its marker, the stored layouts a reader accepts, statistics with one
``nullCount`` per variant and no bounds, and the features in the gate."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from delta_core.errors import CorruptLogError
from delta_core.model.actions import Metadata, Protocol
from delta_core.model.metadata_validation import validate_metadata
from delta_core.model.schema import (
    ArrayType,
    MapType,
    PrimitiveType,
    StructType,
    is_variant_field,
    schema_to_arrow,
)
from delta_core.model.stats_collect import StatsCollector, indexed_leaves
from delta_core.model.table_features import WRITER_FEATURES, check_write_supported
from delta_core.model.variant import has_variant, stored_layout_problem, variant_columns

VARIANT = PrimitiveType("variant")
# the object spelling of the protocol's example and the string Delta Spark writes, at every depth
SCHEMA = StructType.from_json(json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
    {"name": "a", "type": {"type": "array", "elementType": {"type": "variant"}, "containsNull": True},
     "nullable": True, "metadata": {}},
    {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "variant", "valueContainsNull": True},
     "nullable": True, "metadata": {}},
    {"name": "s", "type": {"type": "struct", "fields": [
        {"name": "w", "type": "variant", "nullable": True, "metadata": {}},
        {"name": "n", "type": "integer", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
]}))
LAYOUT = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
FLIPPED = pa.struct([pa.field("metadata", pa.binary_view(), False), pa.field("value", pa.large_binary(), False)])
SHREDDED = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()),
                      pa.field("typed_value", pa.int64())])


def test_variants_are_recognised_at_any_depth_and_written_as_delta_spark_spells_them():
    assert SCHEMA["v"].type == VARIANT and SCHEMA["a"].type == ArrayType(VARIANT)
    assert SCHEMA["m"].type == MapType(PrimitiveType("string"), VARIANT)
    assert SCHEMA.find(["s", "w"]).type == VARIANT
    assert [f.name for f in SCHEMA if has_variant(f.type)] == ["v", "a", "m", "s"]
    assert variant_columns(SCHEMA, ["ID", "V", "s"]) == ["v", "s"]
    text = SCHEMA.to_json()
    assert '"type":{"type":"variant"}' not in text and '"elementType":"variant"' in text
    assert StructType.from_json(text) == SCHEMA


def test_the_arrow_layout_is_the_protocols_struct_marked_as_a_variant():
    arrow = schema_to_arrow(SCHEMA, physical=True)
    assert arrow.field("v").type == LAYOUT and is_variant_field(arrow.field("v"))
    assert is_variant_field(arrow.field("a").type.value_field) and is_variant_field(arrow.field("m").type.item_field)
    assert is_variant_field(arrow.field("s").type.field("w")) and not is_variant_field(arrow.field("s"))
    assert not is_variant_field(arrow.field("id")) and not is_variant_field(pa.field("v", LAYOUT))


@pytest.mark.parametrize(("delta_type", "stored", "problem"), [
    (VARIANT, LAYOUT, None),
    (VARIANT, FLIPPED, None),  # delta-rs and kernel-rs order, view and large binaries
    (VARIANT, pa.null(), None),  # a column added after the file was written
    (VARIANT, SHREDDED, "variant column 'c' is stored as struct<metadata: binary not null, value: binary, "
                        "typed_value: int64>"),
    (VARIANT, pa.struct([pa.field("metadata", pa.binary())]), "variant column 'c' is stored as"),
    (VARIANT, pa.binary(), "variant column 'c' is stored as binary"),
    (ArrayType(VARIANT), pa.list_(SHREDDED), "variant column 'c.element'"),
    (MapType(PrimitiveType("string"), VARIANT), pa.map_(pa.string(), FLIPPED), None),
    (MapType(PrimitiveType("string"), VARIANT), pa.map_(pa.string(), SHREDDED), "variant column 'c.value'"),
    (SCHEMA["s"].type, pa.struct([pa.field("w", SHREDDED)]), "variant column 'c.w'"),
    (SCHEMA["s"].type, pa.struct([pa.field("n", pa.int32())]), None),
])
def test_only_unshredded_variants_are_readable(delta_type, stored, problem):
    got = stored_layout_problem(delta_type, stored, column="c")
    assert got == problem if problem is None else got.startswith(problem)


def test_a_variant_gets_one_null_count_and_no_bounds():
    arrow = schema_to_arrow(SCHEMA)
    collector = StatsCollector(arrow)
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "v": pa.array([{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}, None, None], LAYOUT),
        "a": pa.array([None, [], None], arrow.field("a").type),
        "m": pa.array([None, None, None], arrow.field("m").type),
        "s": pa.array([{"w": None, "n": 1}, None, {"w": {"value": b"\x00", "metadata": b"\x01\x00\x00"}, "n": 2}],
                      arrow.field("s").type),
    }, schema=arrow)
    collector.update(data)
    assert collector.result() == {"numRecords": 3, "minValues": {"id": 1, "s": {"n": 1}},
                                  "maxValues": {"id": 3, "s": {"n": 2}},
                                  "nullCount": {"id": 0, "v": 2, "a": 2, "m": 3, "s": {"w": 2, "n": 1}}}


def test_a_variant_counts_as_one_indexed_column():
    arrow = schema_to_arrow(SCHEMA)
    assert indexed_leaves(arrow, num_indexed_cols=5) == {("id",), ("v",), ("a",), ("m",), ("s", "w")}
    assert ("s", "w", "value") not in indexed_leaves(arrow, num_indexed_cols=-1)


def test_variant_and_shredding_features_are_written():
    assert WRITER_FEATURES["variantType"].module == WRITER_FEATURES["variantType-preview"].module == \
        "delta_core.model.variant"
    assert WRITER_FEATURES["variantShredding"].module == WRITER_FEATURES["variantShredding-preview"].module == \
        "delta_core.model.variant_shredding"
    meta = Metadata("m", SCHEMA.to_json())
    check_write_supported(Protocol(3, 7, ("variantType",), ("variantType",)), meta)
    check_write_supported(Protocol(3, 7, ("variantType-preview",), ("variantType-preview",)), meta)
    for shredding in ("variantShredding", "variantShredding-preview"):
        check_write_supported(Protocol(3, 7, (shredding, "variantType"), (shredding, "variantType")), meta)


def test_a_variant_partition_column_is_invalid():
    meta = Metadata("m", SCHEMA.to_json(), partition_columns=("v",))
    with pytest.raises(CorruptLogError, match="'v' is a variant, which is not a comparable type"):
        validate_metadata(meta, path="/t", version=3)
