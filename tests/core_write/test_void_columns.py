"""Issue 21 §6: ``void`` columns (PROTOCOL.md "Void Type").

Tables are hand-written as Spark leaves them (``"type": "void"`` in the schemaString, data files
from pyarrow without that column). New files must not hold void columns (nor their stats), and
schemas that have no Parquet form refuse every write before anything is written.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import SchemaMismatchError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, overwrite
from tests.core_write.conftest import listing
from tests.core_write.handlog import field, struct, write_table

VOID_SCHEMA = struct(
    field("id", "long"),
    field("v", "void"),
    field("s", struct(field("x", "long"), field("n", "void"))),
)
STORED = pa.schema([("id", pa.int64()), ("s", pa.struct([("x", pa.int64())]))])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "s": [{"x": i * 10} for i in ids]}, schema=STORED)


@pytest.fixture()
def void_table(table_dir) -> DeltaTable:
    write_table(table_dir, VOID_SCHEMA, [("a.parquet", _rows([1, 2])), ("b.parquet", _rows([3]))])
    return DeltaTable(table_dir)


def _new_files(table: DeltaTable, version: int) -> list:
    return [a for a in table.snapshot(version).add_actions() if a.path not in ("a.parquet", "b.parquet")]


def _assert_void_free(table: DeltaTable, add) -> None:
    assert pq.read_schema(f"{table.storage.root.removeprefix('file://')}/{url_decode_path(add.path)}") \
        .remove_metadata() == STORED
    stats = json.loads(add.stats)
    for key in ("minValues", "maxValues", "nullCount"):
        assert "v" not in stats.get(key, {})
        assert "n" not in stats.get(key, {}).get("s", {})
    assert stats["nullCount"]["id"] == 0


@pytest.mark.parametrize("with_void_data", [False, True])
def test_append_omits_void_columns(void_table, with_void_data):
    data = _rows([4, 5])
    if with_void_data:  # the caller may pass the void column as nulls; it is still not stored
        data = data.append_column("v", pa.nulls(2))
    result = append(void_table, data)
    (add,) = _new_files(void_table, result.version)
    _assert_void_free(void_table, add)
    snap = void_table.snapshot()
    back = read_data_file(void_table.storage, add.path, snap.metadata)
    assert back.column("v").to_pylist() == [None, None]
    assert back.column("s").to_pylist() == [{"x": 40, "n": None}, {"x": 50, "n": None}]
    assert back.column("id").to_pylist() == [4, 5]


@pytest.mark.spark
def test_compact_omits_void_columns(void_table, spark):
    metrics = compact(void_table, spark, min_input_files=2)
    assert metrics.num_removed_files == 2 and metrics.num_added_files == 1
    (add,) = _new_files(void_table, metrics.version)
    _assert_void_free(void_table, add)
    back = read_data_file(void_table.storage, add.path, void_table.snapshot().metadata)
    assert sorted(back.column("id").to_pylist()) == [1, 2, 3]
    assert back.column("v").null_count == 3


def _no_spark():
    raise AssertionError("a refused rewrite must not start Spark")


@pytest.mark.parametrize("schema, why", [
    (struct(field("id", "long"), field("a", {"type": "array", "elementType": "void", "containsNull": True})),
     "array holding a void"),
    (struct(field("id", "long"), field("m", {"type": "map", "keyType": "string", "valueType": "void",
                                             "valueContainsNull": True})), "map holding a void"),
    (struct(field("id", "long"),
            field("a", {"type": "array", "containsNull": True,
                        "elementType": struct(field("x", "long"), field("n", "void"))})), "array holding a void"),
    (struct(field("id", "long"), field("s", struct(field("n1", "void"), field("n2", "void")))),
     "struct whose fields are all void"),
    (struct(field("v1", "void"), field("v2", "void")), "every column of the table is void"),
])
def test_unwritable_void_schemas_refused_before_writing(table_dir, schema, why):
    write_table(table_dir, schema, [])
    table = DeltaTable(table_dir)
    before = listing(table_dir)
    data = pa.table({"id": [1]}) if any(f["name"] == "id" for f in schema["fields"]) else pa.table(
        {"v1": pa.nulls(1)})
    for write in (append, overwrite):
        with pytest.raises(SchemaMismatchError, match=why):
            write(table, data)
    with pytest.raises(SchemaMismatchError, match=why) as e:
        compact(table, _no_spark)
    assert e.value.path == table.uri and e.value.version == 0
    with pytest.raises(SchemaMismatchError, match=why):
        zorder(table, _no_spark, ["id"])
    assert listing(table_dir) == before


def test_only_partition_columns_besides_void_refused(table_dir):
    schema = struct(field("p", "string"), field("v", "void"))
    write_table(table_dir, schema, [], partition_columns=["p"])
    before = listing(table_dir)
    with pytest.raises(SchemaMismatchError, match="all but the partition columns"):
        append(DeltaTable(table_dir), pa.table({"p": ["a"]}))
    assert listing(table_dir) == before
