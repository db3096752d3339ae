"""delta_core.model.schema against the schemaStrings of real tables and delta-rs output."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import CorruptLogError, SchemaMismatchError
from delta_core.model.schema import (
    ArrayType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_data_type,
    physical_name_map,
    schema_from_arrow,
    schema_to_arrow,
    to_logical_path,
    to_physical_path,
)
from tests.core_types.logdata import actions, expected, last_metadata, table_dirs

SCHEMA_TABLES = [t for t in table_dirs() if last_metadata(t) is not None]


def _data_files(table):
    return sorted(p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts)


@pytest.mark.parametrize("table", SCHEMA_TABLES, ids=lambda p: p.name)
def test_every_schema_string_round_trips(table):
    for md in actions(table, "metaData"):
        if not md.get("schemaString"):
            continue
        schema = StructType.from_json(md["schemaString"])
        assert StructType.from_json(schema.to_json()) == schema
        # the encoding keeps what the writer put in (modulo whitespace and key order)
        assert json.loads(schema.to_json()) == _normalise(json.loads(md["schemaString"]))
        logical, physical = schema_to_arrow(schema), schema_to_arrow(schema, physical=True)
        assert logical.names == schema.field_names
        assert physical.names == [f.physical_name for f in schema.fields]
        assert schema_from_arrow(logical).field_names == schema.field_names


def _normalise(obj):
    """Fill the defaults our encoder writes explicitly (nullable/metadata/containsNull)."""
    if isinstance(obj, dict):
        out = {k: _normalise(v) for k, v in obj.items()}
        if "name" in out and "type" in out:
            out.setdefault("nullable", True)
            out.setdefault("metadata", {})
        if out.get("type") == "array":
            out.setdefault("containsNull", True)
        if out.get("type") == "map":
            out.setdefault("valueContainsNull", True)
        return out
    if isinstance(obj, list):
        return [_normalise(v) for v in obj]
    return obj


@pytest.mark.parametrize("table", [t for t in SCHEMA_TABLES if expected(t).get("outcome") == "ok"],
                         ids=lambda p: p.name)
def test_top_level_names_match_expectation(table):
    want = expected(table)["latest"].get("schema_field_names")
    if want is None:
        pytest.skip("no expectation")
    names = StructType.from_json(last_metadata(table)["schemaString"]).field_names
    # a later checkpoint may carry a newer metaData than the JSON commits we read here
    if names != want and not any((table / "_delta_log").glob("*.checkpoint*.parquet")):
        pytest.fail(f"{names} != {want}")


def test_all_primitive_types_match_the_data_file(conformance_dir):
    table = conformance_dir / "dat-all_primitive_types"
    schema = StructType.from_json(last_metadata(table)["schemaString"])
    file_schema = pq.read_schema(_data_files(table)[0])
    ours = schema_to_arrow(schema)
    for f in ours:
        got = file_schema.field(f.name).type
        if pa.types.is_timestamp(f.type):
            # Spark wrote INT96 (read as ns, no zone); the Delta type is still UTC micros
            assert pa.types.is_timestamp(got)
            assert f.type == pa.timestamp("us", tz="UTC")
        else:
            assert got == f.type, f.name
    assert str(schema["decimal"].type) == "decimal(5,3)"
    assert schema["decimal"].type == PrimitiveType.decimal(5, 3)


def test_nested_types_match_the_data_file(conformance_dir):
    table = conformance_dir / "dat-nested_types"
    schema = StructType.from_json(last_metadata(table)["schemaString"])
    ours = schema_to_arrow(schema)
    theirs = pq.read_schema(_data_files(table)[0])
    assert isinstance(schema["array"].type, ArrayType)
    assert isinstance(schema["map"].type, MapType)
    for name in ("pk", "struct", "array"):
        assert ours.field(name).type == theirs.field(name).type, name
    assert ours.field("map").type.key_type == theirs.field("map").type.key_type
    assert ours.field("map").type.item_type == theirs.field("map").type.item_type


@pytest.mark.parametrize("name", ["golden-table-with-columnmapping-mode-name",
                                  "golden-table-with-columnmapping-mode-id",
                                  "golden-data-reader-timestamp_ntz-id-mode"])
def test_column_mapping_physical_names_and_ids_match_data_files(conformance_dir, name):
    table = conformance_dir / name
    schema = StructType.from_json(last_metadata(table)["schemaString"])
    physical = schema_to_arrow(schema, physical=True)
    file_schema = pq.read_schema(_data_files(table)[0])
    for f in schema.fields:
        assert f.physical_name != f.name and f.physical_name.startswith("col-")
        if f.physical_name not in file_schema.names:
            continue  # partition columns are not stored in the file
        theirs = file_schema.field(f.physical_name)
        ours = physical.field(f.physical_name)
        assert ours.metadata[b"PARQUET:field_id"] == theirs.metadata[b"PARQUET:field_id"]
        assert int(theirs.metadata[b"PARQUET:field_id"]) == f.field_id
    assert physical_name_map(schema) == {f.name: f.physical_name for f in schema.fields}


def test_nested_logical_physical_paths(conformance_dir):
    schema = StructType.from_json(
        last_metadata(conformance_dir / "golden-table-with-columnmapping-mode-name")["schemaString"])
    nested = [(path, leaf) for path, leaf in schema.leaves() if len(path) > 1]
    assert nested, "the table has nested struct columns"
    for path, leaf in nested:
        phys = to_physical_path(schema, path)
        assert phys[-1] == leaf.physical_name
        assert to_logical_path(schema, phys) == path
        assert schema.find(path) == leaf
    renamed = schema.physical()
    assert renamed.field_names == [f.physical_name for f in schema.fields]
    with pytest.raises(KeyError):
        to_physical_path(schema, ("no_such_column",))


def test_protocol_example_schema():
    text = json.dumps({"type": "struct", "fields": [
        {"name": "a", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "b", "type": {"type": "struct", "fields": [
            {"name": "d", "type": "integer", "nullable": False, "metadata": {}}]},
         "nullable": True, "metadata": {}},
        {"name": "c", "type": {"type": "array", "elementType": "integer", "containsNull": False},
         "nullable": True, "metadata": {}},
        {"name": "f", "type": {"type": "map", "keyType": "string", "valueType": "string",
                               "valueContainsNull": True}, "nullable": True, "metadata": {}},
        {"name": "n", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
    ]})
    s = StructType.from_json(text)
    arrow = schema_to_arrow(s)
    assert arrow.field("a").type == pa.int32() and not arrow.field("a").nullable
    assert arrow.field("c").type == pa.list_(pa.field("element", pa.int32(), nullable=False))
    assert arrow.field("n").type == pa.timestamp("us")
    assert pa.types.is_struct(arrow.field("v").type)
    assert s.find(["b", "d"]).type == PrimitiveType("integer")


def test_arrow_round_trip_and_widening():
    arrow = pa.schema([
        pa.field("s", pa.large_string()), pa.field("u8", pa.uint8()), pa.field("u32", pa.uint32()),
        pa.field("ts", pa.timestamp("ns", tz="Europe/Paris")), pa.field("ntz", pa.timestamp("ms")),
        pa.field("d", pa.decimal128(38, 10)), pa.field("l", pa.large_list(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.float32())),
        pa.field("st", pa.struct([pa.field("x", pa.dictionary(pa.int32(), pa.string()))]), nullable=False),
    ])
    s = schema_from_arrow(arrow)
    assert [str(f.type) for f in s.fields[:6]] == [
        "string", "short", "long", "timestamp", "timestamp_ntz", "decimal(38,10)"]
    assert s["st"].nullable is False
    back = schema_to_arrow(s)
    assert back.field("ts").type == pa.timestamp("us", tz="UTC")
    assert back.field("st").type == pa.struct([pa.field("x", pa.string())])


@pytest.mark.parametrize("arrow_type", [pa.uint64(), pa.null(), pa.decimal256(40, 2),
                                        pa.duration("s"), pa.time64("us")])
def test_arrow_types_without_delta_equivalent_are_refused(arrow_type):
    with pytest.raises(SchemaMismatchError, match="cast"):
        schema_from_arrow(pa.schema([pa.field("x", arrow_type)]))


def test_delta_rs_schema_string_matches_written_data(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    data = pa.table({
        "id": pa.array([1, 2], pa.int64()), "name": ["a", None],
        "when": pa.array([1_000_000, 2_000_000], pa.timestamp("us", tz="UTC")),
        "price": pa.array([1.5, 2.5], pa.float64()),
        "tags": pa.array([["x"], []], pa.list_(pa.string())),
        "nested": pa.array([{"a": 1, "b": "q"}, None], pa.struct([("a", pa.int32()), ("b", pa.string())])),
    })
    deltalake.write_deltalake(str(tmp_path), data)
    schema = StructType.from_json(last_metadata(tmp_path)["schemaString"])
    assert schema.field_names == data.schema.names
    ours = schema_to_arrow(schema)
    file_schema = pq.read_schema(_data_files(tmp_path)[0])
    for name in ("id", "name", "when", "price", "nested"):
        assert ours.field(name).type == file_schema.field(name).type, name
    assert schema_from_arrow(data.schema).field_names == schema.field_names


BAD_SCHEMAS = [
    ("", "missing or empty"),
    ("{not json", "not valid JSON"),
    ('{"type":"array","elementType":"integer"}', "must be a struct"),
    ('{"type":"struct"}', "needs a 'fields' list"),
    ('{"type":"struct","fields":[{"type":"integer"}]}', "lacks a string 'name'"),
    ('{"type":"struct","fields":[{"name":"a"}]}', "lacks 'type'"),
    ('{"type":"struct","fields":[{"name":"a","type":"uuid"}]}', "unknown primitive type 'uuid'"),
    ('{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)"}]}', "precision must be 1..38"),
    ('{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}',
     "unique regardless of case"),
    ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}', "true or false"),
    ('{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"string"}}]}',
     "needs 'keyType' and 'valueType'"),
]


@pytest.mark.parametrize("text,fragment", BAD_SCHEMAS)
def test_invalid_schema_strings_raise_corrupt_log(text, fragment):
    with pytest.raises(CorruptLogError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as ei:
        StructType.from_json(text)
    assert ei.value.kind == "corrupt_log"


def test_corrupt_schema_message_says_what_to_do():
    with pytest.raises(CorruptLogError, match="restore the log from a backup"):
        StructType.from_json("{oops")


def test_field_id_must_be_an_integer():
    f = StructField("a", PrimitiveType("long"), True, {"delta.columnMapping.id": "x"})
    with pytest.raises(CorruptLogError, match="non-integer"):
        _ = f.field_id
    assert StructField("b", PrimitiveType("long")).physical_name == "b"


def test_type_name_aliases_and_defaults():
    assert parse_data_type("int") == PrimitiveType("integer")
    assert parse_data_type("decimal") == PrimitiveType.decimal(10, 0)
    assert parse_data_type("decimal(10, 4)") == PrimitiveType.decimal(10, 4)
    assert PrimitiveType.decimal(10, 4).to_json_value() == "decimal(10,4)"
