"""Checkpoints we write: spec schema, single file (multi-part read only), struct stats, expiry,
``_last_checkpoint``; read back by us and by delta-rs with the commits before them gone (and
by delta-kernel-rs on column-mapping and V2-checkpoint tables)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.last_checkpoint import decode_last_checkpoint
from delta_core.log.table import DeltaTable
from delta_core.model.stats import stats_parsed_type
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import appended_table
from tests.kernel_oracle import kernel_rows
from tests.multipart import spark_string_hash, write_multipart_checkpoint

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("st", pa.struct([("x", pa.int32())])), ("day", pa.date32())])


def _data(ids: list[int]) -> pa.Table:
    return pa.table({
        "id": ids, "name": [f"n{i}" for i in ids],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i) for i in ids],
        "st": [{"x": i} for i in ids], "day": [dt.date(2024, 1, 1 + i % 3) for i in ids],
    }, schema=SCHEMA)


def _build(table_dir: str, n: int, **props: str) -> DeltaTable:
    return appended_table(table_dir, _data, n, **props)


def _strip_commits(src: str, dst: str, upto: int) -> None:
    shutil.copytree(src, dst)
    for v in range(upto + 1):
        os.unlink(os.path.join(dst, "_delta_log", f"{v:020d}.json"))


def _ids_deltars(path: str) -> list[int]:
    import deltalake

    return sorted(pa.table(deltalake.DeltaTable(path).to_pyarrow_table()).column("id").to_pylist())


def test_single_file_checkpoint_read_by_both(table_dir, tmp_path):
    t = _build(table_dir, 4)
    delete_files(t, [t.snapshot().file_paths[0]])
    append(t, _data([100]))
    res = write_checkpoint(t)
    assert res.version == 6 and res.sidecars == 0
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{6:020d}.checkpoint.parquet"))
    assert {"protocol", "metaData", "txn", "add", "remove"} <= set(cp.column_names)
    assert cp.num_rows == res.size
    assert cp.schema.field("protocol").type.field("minReaderVersion").type == pa.int32()
    adds = [a for a in cp.column("add").to_pylist() if a]
    assert len(adds) == res.num_add_files and all(a["dataChange"] is False for a in adds)
    assert all(json.loads(a["stats"])["numRecords"] >= 1 for a in adds)
    removes = [r for r in cp.column("remove").to_pylist() if r]
    assert len(removes) == 1 and "stats" not in removes[0]
    last = decode_last_checkpoint(open(os.path.join(table_dir, "_delta_log", "_last_checkpoint"), "rb").read())
    assert (last.version, last.size, last.size_in_bytes, last.num_of_add_files) == (
        6, res.size, res.size_in_bytes, res.num_add_files)
    assert last.checksum is not None
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, 6)
    expected = sorted(pa.table(__import__("deltalake").DeltaTable(table_dir).to_pyarrow_table()).column("id").to_pylist())
    assert _ids_deltars(copy) == expected
    ours = DeltaTable(copy).snapshot()
    assert ours.version == 6 and ours.num_files == t.snapshot().num_files
    assert sorted(ours.file_paths) == sorted(t.snapshot().file_paths)
    assert ours.tombstones.num_rows == 1


def test_multi_part_checkpoint_hash_partitioned_is_read_by_both(table_dir, tmp_path):
    """Multi-part checkpoints are read, never written: the test helper writes one clustered as
    PROTOCOL.md requires (Spark hash of the path), and we and delta-rs read the table from it."""
    t = _build(table_dir, 12)
    keys = write_multipart_checkpoint(t, parts=3)
    log_dir = os.path.join(table_dir, "_delta_log")
    parts = [pq.read_table(os.path.join(table_dir, k)) for k in keys]
    for i, p in enumerate(parts):
        paths = [a["path"] for a in p.column("add").to_pylist() if a]
        assert all(spark_string_hash(x) % 3 == i for x in paths)
    assert json.loads(open(os.path.join(log_dir, "_last_checkpoint")).read())["parts"] == 3
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, 12)
    assert _ids_deltars(copy) == list(range(24))
    ours = DeltaTable(copy).snapshot()
    assert len(ours.log_segment.checkpoint_files) == 3
    assert sorted(ours.file_paths) == sorted(t.snapshot().file_paths)
    # Our next checkpoint of that table is one classic file again.
    res = write_checkpoint(DeltaTable(copy))
    assert res.path.endswith(f"{12:020d}.checkpoint.parquet") and res.sidecars == 0
    assert "parts" not in json.loads(open(os.path.join(copy, "_delta_log", "_last_checkpoint")).read())


def test_stats_as_struct(table_dir, tmp_path):
    """By default, as Delta Spark writes them: the JSON and typed ``stats_parsed``."""
    t = _build(table_dir, 3)
    write_checkpoint(t)
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{3:020d}.checkpoint.parquet"))
    add_type = cp.schema.field("add").type
    sp = add_type.field("stats_parsed").type
    assert sp.field("minValues").type.field("ts").type == pa.timestamp("us", tz="UTC")
    assert sp.field("nullCount").type.field("st").type == pa.struct([("x", pa.int64())])
    assert add_type.field("partitionValues_parsed").type == pa.struct([("day", pa.date32())])
    adds = [a for a in cp.column("add").to_pylist() if a]
    for a in adds:
        js = json.loads(a["stats"])
        assert a["stats_parsed"]["numRecords"] == js["numRecords"]
        assert a["stats_parsed"]["minValues"]["id"] == js["minValues"]["id"]
        assert a["partitionValues_parsed"]["day"].isoformat() == a["partitionValues"][0][1]
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, 3)
    assert _ids_deltars(copy) == list(range(6))
    assert DeltaTable(copy).snapshot().num_records == 6


def test_stats_as_json_only_when_asked(table_dir):
    t = _build(table_dir, 2, **{"delta.checkpoint.writeStatsAsStruct": "false"})
    write_checkpoint(t)
    add_type = pq.read_schema(os.path.join(table_dir, "_delta_log", f"{2:020d}.checkpoint.parquet")).field("add").type
    assert add_type.get_field_index("stats") >= 0
    assert add_type.get_field_index("stats_parsed") < 0 and add_type.get_field_index("partitionValues_parsed") < 0


def _stats_parsed_by_path(table_dir: str, version: int) -> dict[str, tuple[dict, str | None]]:
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    return {a["path"]: (a["stats_parsed"], a["stats"]) for a in cp.column("add").to_pylist() if a}


def _commit_schema(t: DeltaTable, schema: dict) -> None:
    txn = Transaction(t, operation="ADD COLUMNS")
    with txn:
        txn.add_action(replace(txn.snapshot.metadata, schema_string=json.dumps(schema)))
        txn.commit()


def test_struct_stats_are_carried_to_the_next_checkpoint(table_dir, tmp_path):
    """The next checkpoint takes the struct of the files the last one holds from it (same schema,
    same types) and parses only the files added since; every row is what its JSON says, and
    delta-rs and kernel-rs read the table from it."""
    t = _build(table_dir, 3)
    write_checkpoint(t)
    first = _stats_parsed_by_path(table_dir, 3)
    gone = sorted(first)[0]
    delete_files(t, [gone])
    append(t, _data([100, 101]))
    snap = t.snapshot()
    typ = pq.read_schema(os.path.join(table_dir, "_delta_log", f"{3:020d}.checkpoint.parquet")) \
        .field("add").type.field("stats_parsed").type
    pieces = list(snap.iter_stats_with_struct(typ))
    carried = [p for _, p in pieces if p is not None]
    assert sum(len(p) for p in carried) == len(first) - 1  # the checkpoint's files still live
    assert sum(len(s) for s, p in pieces if p is None) == 2  # the appended files: from their commit
    write_checkpoint(t)
    second = _stats_parsed_by_path(table_dir, 5)
    assert set(second) == set(first) - {gone} | {p for p in snap.file_paths if p not in first}
    for path, (parsed, stats) in second.items():
        js = json.loads(stats)
        assert parsed["numRecords"] == js["numRecords"]
        assert parsed["minValues"]["id"] == js["minValues"]["id"] and parsed["maxValues"]["name"] == js["maxValues"]["name"]
        assert parsed["nullCount"]["st"]["x"] == js["nullCount"]["st"]["x"]
        if path in first:
            assert parsed == first[path][0]
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, 5)
    ids = _ids_deltars(table_dir)
    assert len(ids) == 7 and _ids_deltars(copy) == ids  # one of the first six rows deleted, two appended
    assert sorted(kernel_rows(copy).column("id").to_pylist()) == ids


def test_struct_stats_are_parsed_again_when_the_schema_changed(table_dir):
    """A checkpoint written before a column was added holds a struct of another type: the next
    checkpoint parses every file's JSON into the new type instead of carrying it."""
    t = _build(table_dir, 2)
    write_checkpoint(t)
    schema = json.loads(t.snapshot().metadata.schema_string)
    schema["fields"].append({"name": "extra", "type": "long", "nullable": True, "metadata": {}})
    _commit_schema(t, schema)
    snap = t.snapshot()
    written = _stats_parsed_by_path(table_dir, 2)
    typ = stats_parsed_type(snap.schema, partition_columns=snap.partition_columns)
    assert [p for _, p in snap.iter_stats_with_struct(typ)] == [None]
    write_checkpoint(t)
    after = _stats_parsed_by_path(table_dir, 3)
    assert set(after) == set(written)
    for path, (parsed, _) in after.items():
        assert "extra" in parsed["nullCount"] and parsed["nullCount"]["extra"] is None
        assert parsed["minValues"]["id"] == written[path][0]["minValues"]["id"]


def test_struct_only_stats(table_dir):
    t = _build(table_dir, 2, **{"delta.checkpoint.writeStatsAsStruct": "true",
                                "delta.checkpoint.writeStatsAsJson": "false"})
    write_checkpoint(t)
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{2:020d}.checkpoint.parquet"))
    adds = [a for a in cp.column("add").to_pylist() if a]
    assert all(a["stats"] is None for a in adds)
    assert sum(a["stats_parsed"]["numRecords"] for a in adds) == 4


def test_expired_tombstones_and_txns_are_dropped(table_dir):
    t = _build(table_dir, 2, **{"delta.deletedFileRetentionDuration": "interval 1 days",
                                "delta.setTransactionRetentionDuration": "interval 2 days"})
    append(t, _data([50]), app_id="old-app", app_version=1)
    delete_files(t, [t.snapshot().file_paths[0]])
    append(t, _data([51]), app_id="new-app", app_version=1)
    res = write_checkpoint(t)
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    assert sum(1 for r in cp.column("remove").to_pylist() if r) == 1
    assert sorted(x["appId"] for x in cp.column("txn").to_pylist() if x) == ["new-app", "old-app"]
    # 1.5 days later the tombstone has expired; txns live 2 days
    later = time.time() + 1.5 * 86400
    res = write_checkpoint(t, clock=lambda: int(later * 1000))
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    assert sum(1 for r in cp.column("remove").to_pylist() if r) == 0
    assert len([x for x in cp.column("txn").to_pylist() if x]) == 2
    much_later = time.time() + 3 * 86400
    res = write_checkpoint(t, clock=lambda: int(much_later * 1000))
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    assert [x for x in cp.column("txn").to_pylist() if x] == []


def test_last_checkpoint_never_moves_backwards(table_dir):
    t = _build(table_dir, 3)
    write_checkpoint(t)
    write_checkpoint(t, version=1)
    last = json.loads(open(os.path.join(table_dir, "_delta_log", "_last_checkpoint")).read())
    assert last["version"] == 3
    assert os.path.exists(os.path.join(table_dir, "_delta_log", f"{1:020d}.checkpoint.parquet"))


def test_deltars_checkpoint_readable_and_ours_after_it(tmp_path):
    import deltalake

    path = str(tmp_path / "rs")
    for i in range(3):
        deltalake.write_deltalake(path, _data([i]).drop_columns(["st"]), mode="append")
    deltalake.DeltaTable(path).create_checkpoint()
    t = DeltaTable(path)
    assert t.snapshot().log_segment.checkpoint_version == 2
    append(t, _data([7]).drop_columns(["st"]))
    write_checkpoint(t)
    assert _ids_deltars(path) == [0, 1, 2, 7]
    assert t.snapshot().log_segment.checkpoint_version == 3


@pytest.mark.parametrize("mode", ["name", "id"])
def test_checkpoint_with_column_mapping(table_dir, tmp_path, mode):
    t = create_table(table_dir, SCHEMA, partition_columns=["day"],
                     properties={"delta.columnMapping.mode": mode, "delta.checkpoint.writeStatsAsStruct": "true"})
    append(t, _data([1, 2, 3]))
    kernel_before = kernel_rows(table_dir)
    write_checkpoint(t)
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{1:020d}.checkpoint.parquet"))
    phys = {f.name: f.physical_name for f in t.snapshot().schema.fields}
    add_type = cp.schema.field("add").type
    assert add_type.field("partitionValues_parsed").type.names == [phys["day"]]
    assert phys["id"] in add_type.field("stats_parsed").type.field("minValues").type.names
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, 1)
    assert DeltaTable(copy).snapshot().num_records == 3
    assert kernel_rows(copy) == kernel_before


def test_v2_checkpoint_feature_gets_one_v2_spec_file(table_dir):
    import deltalake

    from delta_core.model.actions import Protocol
    from delta_core.write.transaction import Transaction

    t = create_table(table_dir, pa.schema([("id", pa.int64())]))
    append(t, pa.table({"id": [1]}))
    txn = Transaction(t, operation="UPGRADE PROTOCOL")
    txn.add_action(Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint")))
    txn.commit()
    append(t, pa.table({"id": [2]}))
    kernel_before = kernel_rows(table_dir)
    res = write_checkpoint(t)  # at most the sidecar threshold of file actions: one V2-spec file
    assert res.sidecars == 0
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{3:020d}.checkpoint.parquet"))
    assert [r for r in cp.column("checkpointMetadata").to_pylist() if r] == [{"version": 3, "tags": None}]
    for v in range(3):
        os.unlink(os.path.join(table_dir, "_delta_log", f"{v:020d}.json"))
    assert DeltaTable(table_dir).snapshot().num_records == 2
    dl = deltalake.DeltaTable(table_dir)  # delta-rs replays it (its pyarrow reader refuses the feature)
    assert dl.version() == 3 and pa.table(dl.get_add_actions(flatten=False)).num_rows == 2
    assert kernel_rows(table_dir) == kernel_before


def test_struct_only_stats_keep_tight_bounds(table_dir, tmp_path):
    """Issue 21 §7: a stats_parsed-only checkpoint keeps tightBounds=false (wide bounds stay wide)."""
    t = _build(table_dir, 2, **{"delta.checkpoint.writeStatsAsStruct": "true",
                                "delta.checkpoint.writeStatsAsJson": "false"})
    wide = sorted(t.snapshot().add_actions(), key=lambda a: a.path)[0]
    stats = json.loads(wide.stats)
    stats["tightBounds"] = False
    stats["minValues"]["id"] -= 10  # bounds of a file whose rows were partly deleted
    txn = Transaction(t, operation="UPDATE STATS")
    txn.add_action(replace(wide, stats=json.dumps(stats), data_change=False))
    version = txn.commit().version
    write_checkpoint(t)
    cp = pq.read_table(os.path.join(table_dir, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    assert cp.schema.field("add").type.field("stats_parsed").type.field("tightBounds").type == pa.bool_()
    flags = {a["path"]: a["stats_parsed"]["tightBounds"] for a in cp.column("add").to_pylist() if a}
    assert flags[wide.path] is False and all(v is None for p, v in flags.items() if p != wide.path)
    copy = str(tmp_path / "copy")
    _strip_commits(table_dir, copy, version)  # only the checkpoint is left to read
    snap = DeltaTable(copy).snapshot()
    read = {a.path: json.loads(a.stats) for a in snap.add_actions()}
    assert read[wide.path]["tightBounds"] is False
    assert read[wide.path]["minValues"]["id"] == stats["minValues"]["id"]
    assert all("tightBounds" not in s for p, s in read.items() if p != wide.path)
    by_path = dict(zip(snap.file_stats().column("path").to_pylist(),
                       snap.file_stats().column("tight_bounds").to_pylist()))
    assert by_path[wide.path] is False
    assert _ids_deltars(copy) == list(range(4))
    assert __import__("deltalake").DeltaTable(copy).version() == version
