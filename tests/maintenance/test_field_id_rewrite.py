"""Rewrites of column mapping tables (PROTOCOL.md "Column Mapping"): in mode ``id`` columns are
read by Parquet field id, at every depth; in mode ``none`` leftover mapping metadata is ignored.

The ``id``-mode table is a hand-written ``_delta_log`` whose data files (pyarrow) hold the right
field ids under other column names, as after a rename or a conversion from Iceberg.
delta-kernel-rs (polars-deltalake 1.3.2) matches columns by physical name, not field id: it reads
every value of those files as null, so the rows before are ours; after a rewrite the files name
their columns physically and kernel-rs reads the expected rows.
"""

from __future__ import annotations

import collections
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import MaintenanceError, MissingFieldIdsError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file, rewrite_files
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import Add, Metadata, Protocol, encode_actions
from delta_core.model.partition_values import url_decode_path
from delta_core.model.schema import PARQUET_FIELD_ID
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows


def fid(name: str, typ: pa.DataType, field_id: int, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, typ, nullable=nullable, metadata={PARQUET_FIELD_ID: str(field_id).encode()})


def cm(field_id: int, physical: str, **extra: object) -> dict:
    return {"delta.columnMapping.id": field_id, "delta.columnMapping.physicalName": physical, **extra}


# Logical schema: id, name, info{a, b}, tags array<string>, props map<string,long>, added long.
SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": cm(1, "col-id")},
    {"name": "name", "type": "string", "nullable": True, "metadata": cm(2, "col-name")},
    {"name": "info", "nullable": True, "metadata": cm(3, "col-info"), "type": {"type": "struct", "fields": [
        {"name": "a", "type": "integer", "nullable": True, "metadata": cm(4, "col-a")},
        {"name": "b", "type": "string", "nullable": True, "metadata": cm(5, "col-b")}]}},
    {"name": "tags", "nullable": True,
     "metadata": cm(6, "col-tags", **{"delta.columnMapping.nested.ids": {"col-tags.element": 7}}),
     "type": {"type": "array", "elementType": "string", "containsNull": True}},
    {"name": "props", "nullable": True,
     "metadata": cm(8, "col-props", **{"delta.columnMapping.nested.ids": {"col-props.key": 9, "col-props.value": 10}}),
     "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}},
    {"name": "added", "type": "long", "nullable": True, "metadata": cm(11, "col-added")},
]}

# What an older writer (or Iceberg) left: same ids, other names, other child order.
OLD = pa.schema([
    fid("ident", pa.int64(), 1),
    fid("label", pa.string(), 2),
    fid("details", pa.struct([fid("bee", pa.string(), 5), fid("ay", pa.int32(), 4)]), 3),
    fid("labels", pa.list_(fid("item", pa.string(), 7)), 6),
    fid("attrs", pa.map_(fid("k", pa.string(), 9, nullable=False), fid("v", pa.int64(), 10)), 8),
    fid("extra", pa.int64(), 11),
])


def rows(start: int, n: int) -> list[dict]:
    return [{"id": i, "name": None if i % 4 == 0 else f"n{i}",
             "info": None if i % 5 == 0 else {"a": i * 10, "b": f"b{i}"},
             "tags": [f"t{i}", None] if i % 3 else None, "props": [("p", i)] if i % 2 else [],
             "added": i * 100} for i in range(start, start + n)]


def old_file(data: list[dict], *, with_added: bool = True) -> pa.Table:
    schema = OLD if with_added else pa.schema(list(OLD)[:-1] + [fid("dropped", pa.string(), 99)])
    cols = {
        "ident": [r["id"] for r in data], "label": [r["name"] for r in data],
        "details": [None if r["info"] is None else {"bee": r["info"]["b"], "ay": r["info"]["a"]} for r in data],
        "labels": [r["tags"] for r in data], "attrs": [r["props"] for r in data],
    }
    if with_added:
        cols["extra"] = [r["added"] for r in data]
    else:
        cols["dropped"] = ["gone"] * len(data)
    return pa.table(cols, schema=schema)


def without_ids(data: pa.Table) -> pa.Table:
    """``data`` with no field id at any depth (as a writer unaware of ids makes it)."""
    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, plain(f.type), f.nullable) for f in t])
        if pa.types.is_list(t):
            return pa.list_(pa.field(t.value_field.name, plain(t.value_type), t.value_field.nullable))
        if pa.types.is_map(t):
            return pa.map_(pa.field("key", plain(t.key_type), False), pa.field("value", plain(t.item_type)))
        return t
    return data.cast(pa.schema([pa.field(f.name, plain(f.type), f.nullable) for f in data.schema]))


def write_log(root, files: list[tuple[str, pa.Table]], *, schema: dict = SCHEMA, mode: str = "id") -> DeltaTable:
    (root / "_delta_log").mkdir(parents=True)
    adds = []
    for name, data in files:
        pq.write_table(data, root / name)
        adds.append(Add(name, {}, (root / name).stat().st_size, 1_700_000_000_000, True,
                        json.dumps({"numRecords": data.num_rows})))
    config = {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "11"}
    meta = Metadata(id="11111111-2222-3333-4444-555555555555", schema_string=json.dumps(schema),
                    partition_columns=(), configuration=config, created_time=1_700_000_000_000)
    (root / "_delta_log" / "00000000000000000000.json").write_bytes(
        encode_actions([Protocol(2, 5), meta, *adds]))
    return DeltaTable(str(root))


def live_rows(table: DeltaTable) -> list[dict]:
    snap = table.snapshot()
    out = []
    for add in snap.add_actions():
        out += read_data_file(table.storage, add.path, snap.metadata).to_pylist()
    return out


def canon(data: list[dict]) -> collections.Counter:
    def norm(v: object) -> object:
        if isinstance(v, dict):
            return tuple(sorted((k, norm(x)) for k, x in v.items()))
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        return v
    return collections.Counter(norm(r) for r in data)


def assert_kernel_reads(table: DeltaTable, expected: list[dict]) -> None:
    """delta-kernel-rs reads ``expected`` (maps as lists of key/value structs, as it returns them)."""
    as_kernel = [{**r, "props": None if r["props"] is None else [{"key": k, "value": v} for k, v in r["props"]]}
                 for r in expected]
    assert canon(kernel_rows(table.uri).to_pylist()) == canon(as_kernel)


def by_field_id(path, ids: dict[int, str]) -> list[dict]:
    """Rows of an output file read with pyarrow alone, columns named through their field ids."""
    data = pq.read_table(path)
    names = [ids[int(f.metadata[PARQUET_FIELD_ID])] for f in data.schema]
    return data.rename_columns(names).to_pylist()


@pytest.fixture
def id_table(tmp_path):
    """Two files with the right ids under old names; the second lacks column id 11 ("added")."""
    expected = rows(0, 6) + [{**r, "added": None} for r in rows(6, 5)]
    table = write_log(tmp_path / "t", [("old-1.parquet", old_file(rows(0, 6))),
                                        ("old-2.parquet", old_file(rows(6, 5), with_added=False))])
    return table, expected


def test_rewrite_reads_renamed_columns_by_field_id(id_table):
    table, expected = id_table
    snap = table.snapshot()
    assert canon(live_rows(table)) == canon(expected)
    add = rewrite_files(table.storage, snap.file_paths, metadata=snap.metadata, partition_values={})
    out = table.storage.local_path(url_decode_path(add.path))
    stats = json.loads(add.stats)
    assert stats["numRecords"] == 11 and stats["nullCount"]["col-added"] == 5
    assert stats["minValues"]["col-info"] == {"col-a": 10, "col-b": "b1"}
    # The new file names columns physically and keeps every id, nested ones included.
    written = pq.read_schema(out)
    assert written.names == ["col-id", "col-name", "col-info", "col-tags", "col-props", "col-added"]
    assert written.field("col-tags").type.value_field.metadata[PARQUET_FIELD_ID] == b"7"
    assert written.field("col-props").type.item_field.metadata[PARQUET_FIELD_ID] == b"10"
    got = by_field_id(out, {1: "id", 2: "name", 3: "info", 6: "tags", 8: "props", 11: "added"})
    for r in got:
        r["info"] = None if r["info"] is None else {"a": r["info"]["col-a"], "b": r["info"]["col-b"]}
    assert canon(got) == canon(expected)


def test_file_without_field_ids_is_refused(id_table, tmp_path):
    table, _ = id_table
    plain = without_ids(old_file(rows(20, 3)))
    pq.write_table(plain, tmp_path / "t" / "plain.parquet")
    before = listing(str(tmp_path / "t"))
    with pytest.raises(MissingFieldIdsError, match="plain.parquet has no Parquet field ids") as err:
        rewrite_files(table.storage, ["old-1.parquet", "plain.parquet"], metadata=table.snapshot().metadata,
                      partition_values={})
    assert err.value.path.endswith("plain.parquet")
    assert listing(str(tmp_path / "t")) == before


# The inputs' stats hold numRecords only, so both rewrites also prove their outputs against
# summaries of what their tasks read (rewrite_proof.InputSummary).
@pytest.mark.spark
def test_compact_keeps_every_value(spark, id_table):
    table, expected = id_table
    metrics = compact(table, spark)
    assert (metrics.num_removed_files, metrics.num_added_files, metrics.version) == (2, 1, 1)
    assert canon(live_rows(table)) == canon(expected)
    assert_kernel_reads(table, expected)


@pytest.mark.spark
def test_zorder_keeps_every_value(spark, id_table):
    table, expected = id_table
    metrics = zorder(table, spark, ["id"])
    assert metrics.num_removed_files == 2 and metrics.num_added_files >= 1 and metrics.version == 1
    assert canon(live_rows(table)) == canon(expected)
    assert_kernel_reads(table, expected)


@pytest.mark.spark
def test_compact_refuses_file_without_field_ids(spark, tmp_path):
    plain = without_ids(old_file(rows(0, 3)))
    table = write_log(tmp_path / "t", [("old-1.parquet", old_file(rows(3, 3))), ("plain.parquet", plain)])
    before = listing(str(tmp_path / "t"))
    sizes = [a.size for a in table.snapshot().add_actions()]
    with pytest.raises(MaintenanceError, match="plain.parquet has no Parquet field ids"):
        # both small, together a file that is not: one bin, whatever their sizes
        compact(table, spark, target_size=4 * sum(sizes), min_file_size=max(sizes) + 1)
    assert listing(str(tmp_path / "t")) == before


def test_mode_none_ignores_leftover_mapping_metadata(tmp_path):
    # Delta Spark leaves physicalName/id behind when mapping is dropped: the files use logical names.
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["x", None, "z"],
                     "info": [{"a": 1, "b": "q"}, None, {"a": 3, "b": None}],
                     "tags": [["t"], None, []],
                     "props": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
                     "added": pa.array([7, 8, None], pa.int64())})
    table = write_log(tmp_path / "t", [("plain.parquet", data)], mode="none")
    snap = table.snapshot()
    assert live_rows(table) == data.to_pylist()
    add = rewrite_files(table.storage, snap.file_paths, metadata=snap.metadata, partition_values={})
    written = pq.read_table(table.storage.local_path(url_decode_path(add.path)))
    assert written.column_names == ["id", "name", "info", "tags", "props", "added"]
    assert written.schema.field("info").type.names == ["a", "b"]
    assert all(f.metadata is None for f in written.schema)
    assert written.to_pylist() == data.to_pylist()
    assert set(json.loads(add.stats)["nullCount"]) == {"id", "name", "info", "tags", "props", "added"}


def test_mode_none_append_writes_logical_names_delta_rs_reads(tmp_path):
    import deltalake

    from delta_core.write.table_writes import append

    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": cm(1, "col-id")},
        {"name": "region", "type": "string", "nullable": True, "metadata": cm(2, "col-region")}]}
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    meta = Metadata(id="11111111-2222-3333-4444-555555555556", schema_string=json.dumps(schema),
                    partition_columns=("region",), configuration={"delta.columnMapping.mode": "none"},
                    created_time=1_700_000_000_000)
    (root / "_delta_log" / "00000000000000000000.json").write_bytes(encode_actions([Protocol(1, 2), meta]))
    table = DeltaTable(str(root))
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]})
    append(table, data)
    adds = list(table.snapshot().add_actions())
    assert {k for a in adds for k in a.partition_values} == {"region"}
    assert all(a.path.startswith("region=") for a in adds)
    for a in adds:
        assert pq.read_schema(table.storage.local_path(url_decode_path(a.path))).names == ["id"]
        assert set(json.loads(a.stats)["minValues"]) == {"id"}
    got = deltalake.DeltaTable(str(root)).to_pyarrow_table().sort_by("id")
    assert got.select(["id", "region"]).to_pylist() == data.to_pylist()


def test_id_mode_schema_without_nested_id_is_refused(tmp_path):
    # Without an id, info.b could only ever read as NULL: the schema is incomplete, not the file.
    schema = json.loads(json.dumps(SCHEMA))
    del schema["fields"][2]["type"]["fields"][1]["metadata"]["delta.columnMapping.id"]
    table = write_log(tmp_path / "t", [("old-1.parquet", old_file(rows(0, 3)))], schema=schema)
    before = listing(str(tmp_path / "t"))
    with pytest.raises(MaintenanceError, match=r"no delta.columnMapping.id for \['col-info.col-b'\]"):
        rewrite_files(table.storage, ["old-1.parquet"], metadata=table.snapshot().metadata, partition_values={})
    assert listing(str(tmp_path / "t")) == before
