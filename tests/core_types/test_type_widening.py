"""Type widening's recorded type changes (PROTOCOL.md "Type Widening"): the real fixtures' changes
are supported widenings, ``typeWidening-preview`` is treated as ``typeWidening`` (as Delta Spark
does), and any other recorded change is refused by the write gate before anything is written."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest

from delta_core.errors import MaintenanceError, UnsupportedWriterFeatureError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import rewrite_files, rewrite_output_key
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.actions import Metadata
from delta_core.model.schema import PrimitiveType, parse_data_type
from delta_core.model.table_features import check_write_supported
from delta_core.model.type_widening import (
    is_supported_widening,
    readable_as,
    type_changes,
    unsupported_type_changes,
)
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing
from tests.core_write.handlog import field, struct, write_table


def widening(a: str, b: str) -> bool:
    fa, fb = parse_data_type(a), parse_data_type(b)
    assert isinstance(fa, PrimitiveType) and isinstance(fb, PrimitiveType)
    return is_supported_widening(fa, fb)


@pytest.mark.parametrize(("from_type", "to_type"), [
    ("byte", "short"), ("short", "integer"), ("byte", "long"), ("integer", "long"), ("float", "double"),
    ("byte", "double"), ("short", "double"), ("integer", "double"), ("date", "timestamp_ntz"),
    ("decimal(10,2)", "decimal(20,2)"), ("decimal(10,2)", "decimal(20,5)"), ("decimal(6,2)", "decimal(10,4)"),
    ("byte", "decimal(10,0)"), ("integer", "decimal(11,1)"), ("long", "decimal(20,0)"), ("long", "decimal(21,1)"),
])
def test_protocol_widenings_are_supported(from_type, to_type):
    assert widening(from_type, to_type)


@pytest.mark.parametrize(("from_type", "to_type"), [
    ("long", "integer"), ("double", "float"), ("long", "double"), ("date", "timestamp"),
    ("decimal(10,2)", "decimal(10,3)"),  # k2 > k1: digits before the point shrink
    ("decimal(10,2)", "decimal(9,2)"), ("integer", "decimal(10,1)"), ("long", "decimal(19,0)"),
    ("integer", "float"), ("string", "integer"), ("timestamp_ntz", "date"),
])
def test_other_changes_are_not(from_type, to_type):
    assert not widening(from_type, to_type)


def _metadata(table_dir) -> Metadata:
    return DeltaTable(str(table_dir)).snapshot().metadata


def test_real_preview_tables_record_only_supported_changes(conformance_dir):
    flat = _metadata(conformance_dir / "golden-type-widening")
    changes = list(type_changes(flat))
    assert len(changes) == 13 and {c.column for c in changes} >= {"byte_long", "date_timestamp_ntz"}
    nested = _metadata(MODERN_DIR / "golden-type-widening-nested")
    where = {c.where for c in type_changes(nested)}
    assert {"struct.a", "map.key", "map.value", "array.element"} <= where
    assert unsupported_type_changes(flat) == [] and unsupported_type_changes(nested) == []


def _edit_changes(table_dir, edit) -> None:
    """Rewrite the schemaString of the table's last metaData (Delta Spark writes one per commit)."""
    log = table_dir / "_delta_log"
    last = sorted(log.glob("*.json"))[-1]
    lines = [json.loads(line) for line in last.read_text().splitlines()]
    for action in lines:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            edit(schema)
            action["metaData"]["schemaString"] = json.dumps(schema)
    last.write_text("".join(json.dumps(a) + "\n" for a in lines))


@pytest.mark.parametrize("feature", ["typeWidening-preview", "typeWidening"])
def test_unsupported_recorded_change_is_refused_before_anything_is_written(conformance_dir, tmp_path, feature):
    table_dir = tmp_path / "t"
    shutil.copytree(conformance_dir / "golden-type-widening", table_dir)

    def narrow(schema):
        field = next(f for f in schema["fields"] if f["name"] == "int_long")
        field["metadata"]["delta.typeChanges"].append({"fromType": "long", "toType": "integer"})
        if feature == "typeWidening":  # the stable feature's entries carry no tableVersion
            for f in schema["fields"]:
                for entry in f["metadata"].get("delta.typeChanges", []):
                    entry.pop("tableVersion", None)

    _edit_changes(table_dir, narrow)
    if feature == "typeWidening":
        for path in (table_dir / "_delta_log").glob("*.json"):
            path.write_text(path.read_text().replace("typeWidening-preview", "typeWidening"))
    table = DeltaTable(str(table_dir))
    snap = table.snapshot()
    with pytest.raises(UnsupportedWriterFeatureError, match=r"int_long: long -> integer") as ei:
        check_write_supported(snap.protocol, snap.metadata, path=table.uri, version=snap.version)
    assert (ei.value.path, ei.value.version) == (table.uri, snap.version)
    before = listing(str(table_dir))

    def no_spark():
        raise AssertionError("Spark must not start for a refused table")

    with pytest.raises(UnsupportedWriterFeatureError, match="not supported widenings"):
        compact(table, no_spark)
    assert listing(str(table_dir)) == before


def test_unreadable_type_change_entry_is_refused(conformance_dir, tmp_path):
    table_dir = tmp_path / "t"
    shutil.copytree(conformance_dir / "golden-type-widening", table_dir)
    _edit_changes(table_dir, lambda s: s["fields"][0]["metadata"].update({"delta.typeChanges": [{"toType": "long"}]}))
    snap = DeltaTable(str(table_dir)).snapshot()
    with pytest.raises(UnsupportedWriterFeatureError, match="fromType"):
        check_write_supported(snap.protocol, snap.metadata)


@pytest.mark.parametrize(("stored", "table"), [
    (pa.int8(), pa.int64()), (pa.int32(), pa.int8()),  # Parquet stores a byte as INT32
    (pa.float32(), pa.float64()), (pa.int16(), pa.float64()), (pa.int32(), pa.decimal128(11, 1)),
    (pa.date32(), pa.timestamp("us")), (pa.timestamp("ns"), pa.timestamp("us", tz="UTC")),
    (pa.large_string(), pa.string()), (pa.dictionary(pa.int32(), pa.string()), pa.string()),
    # delta-rs 1.6 rewrites strings and binaries as views (its delete/update), nested too
    (pa.string_view(), pa.string()), (pa.binary_view(), pa.binary()), (pa.large_binary(), pa.binary()),
    (pa.list_(pa.string_view()), pa.list_(pa.string())), (pa.list_view(pa.int32()), pa.list_(pa.int64())),
    (pa.struct([("q", pa.string_view())]), pa.struct([("q", pa.string())])),
    (pa.struct([("a", pa.int32())]), pa.struct([("a", pa.int64()), ("b", pa.string())])),
    (pa.map_(pa.int32(), pa.int32()), pa.map_(pa.int64(), pa.int64())), (pa.list_(pa.int32()), pa.list_(pa.int64())),
])
def test_files_with_narrower_or_other_width_types_are_readable(stored, table):
    assert readable_as(stored, table)


@pytest.mark.parametrize(("stored", "table"), [
    (pa.string(), pa.int64()), (pa.int64(), pa.string()), (pa.float64(), pa.int64()), (pa.date32(), pa.timestamp("us", tz="UTC")),
    (pa.timestamp("us"), pa.date32()), (pa.bool_(), pa.int32()), (pa.list_(pa.string()), pa.list_(pa.int64())),
    (pa.struct([("a", pa.string())]), pa.struct([("a", pa.int64())])), (pa.int64(), pa.struct([("a", pa.int64())])),
    (pa.string_view(), pa.binary()), (pa.binary_view(), pa.string()), (pa.string_view(), pa.int64()),
])
def test_files_holding_other_kinds_of_values_are_not(stored, table):
    assert not readable_as(stored, table)


def test_rewrite_refuses_a_file_whose_column_is_not_the_tables_type(tmp_path):
    # the schema says long, the file (another writer's) holds strings that would cast to numbers
    root = str(tmp_path / "t")
    write_table(root, struct(field("n", "long")), [("f.parquet", pa.table({"n": ["1", "2"]}))])
    table = DeltaTable(root)
    snap = table.snapshot()
    before = listing(root)
    with pytest.raises(MaintenanceError, match="holds string values, but the table's schema says int64") as info:
        rewrite_files(table.storage, snap.file_paths, metadata=snap.metadata, partition_values={},
                      key=rewrite_output_key(snap.metadata, {}))
    assert "remove" not in str(info.value) and "delet" not in str(info.value)  # never advise dropping data
    assert listing(root) == before
