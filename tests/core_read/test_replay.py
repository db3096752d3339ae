"""Action Reconciliation on hand-made logs (PROTOCOL.md "Action Reconciliation")."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa

from delta_core.log.commit_read import CommitBatch, build_batch, read_commits
from delta_core.log.log_segment import build_log_segment, list_log
from delta_core.log.replay import ReplayState, expire_tombstones_before, live_txns, reconcile
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Txn
from tests.core_read.conftest import add, commit_info, metadata, protocol, remove

DV1 = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40, "cardinality": 6}
DV2 = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40,
       "cardinality": 6}


def _open(log_writer):
    return DeltaTable(str(log_writer.root)).snapshot()


def test_newest_action_per_key_wins(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a", records=1), add("b", records=2))
    log_writer.commit(1, commit_info(), remove("a"), add("c", records=3))
    log_writer.commit(2, commit_info(), add("a", records=10))  # re-added: tombstone goes away
    snap = _open(log_writer)
    assert sorted(snap.file_paths) == ["a", "b", "c"]
    assert snap.num_records == 15
    assert snap.tombstones.num_rows == 0
    # the re-added file carries its newest stats
    a = next(x for x in snap.add_actions() if x.path == "a")
    assert '"numRecords": 10' in a.stats


def test_remove_after_add_becomes_tombstone(log_writer) -> None:
    log_writer.commit(0, protocol(), metadata(), add("a"), add("b"))
    log_writer.commit(1, remove("a", ts=5), remove("zzz", ts=6))
    snap = _open(log_writer)
    assert snap.file_paths == ["b"]
    assert sorted(snap.tombstones["path"].to_pylist()) == ["a", "zzz"]
    assert [r.deletion_timestamp for r in sorted(snap.remove_actions(), key=lambda r: r.path)] == [5, 6]


def test_deletion_vector_keys(log_writer) -> None:
    log_writer.commit(0, protocol(3, 7, readerFeatures=["deletionVectors"], writerFeatures=["deletionVectors"]),
                      metadata(), add("f"))
    log_writer.commit(1, add("f", dv=DV1), remove("f"))
    log_writer.commit(2, add("f", dv=DV2), remove("f", dv=DV1))
    snap = _open(log_writer)
    assert snap.file_paths == ["f"]
    (only,) = list(snap.add_actions())
    assert only.deletion_vector is not None and only.deletion_vector.storage_type == "i"
    assert only.dv_unique_id == "i" + DV2["pathOrInlineDv"]
    # tombstones: (f, NULL) and (f, u...@4), the same data file with different DVs
    assert snap.tombstones.num_rows == 2
    ids = {r.dv_unique_id for r in snap.remove_actions()}
    assert ids == {None, "u" + DV1["pathOrInlineDv"] + "@4"}


def test_add_set_is_unique_by_path(log_writer) -> None:
    # An (invalid) commit that re-adds a path with a new DV without removing the old pair:
    # the add set still holds one entry per path, the newest.
    log_writer.commit(0, protocol(3, 7, readerFeatures=["deletionVectors"], writerFeatures=["deletionVectors"]),
                      metadata(), add("f", dv=DV1))
    log_writer.commit(1, add("f", dv=DV2))
    snap = _open(log_writer)
    assert snap.num_files == 1
    assert next(snap.add_actions()).deletion_vector.storage_type == "i"


def test_latest_protocol_metadata_txn_and_domains(log_writer) -> None:
    log_writer.commit(0, protocol(), metadata(), {"txn": {"appId": "app", "version": 1}},
                      {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}},
                      {"domainMetadata": {"domain": "d2", "configuration": "{\"x\":1}", "removed": False}})
    log_writer.commit(1, protocol(1, 3), metadata(configuration={"k": "v"}),
                      {"txn": {"appId": "app", "version": 7, "lastUpdated": 5}},
                      {"txn": {"appId": "other", "version": 2}},
                      {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}},
                      {"someFutureAction": {"x": 1}})
    snap = _open(log_writer)
    assert snap.protocol.min_writer_version == 3
    assert snap.configuration == {"k": "v"}
    assert {k: t.version for k, t in snap.txns.items()} == {"app": 7, "other": 2}
    assert list(snap.domain_metadata) == ["d2"] and snap.domain_metadata["d2"].configuration == '{"x":1}'


def test_txn_retention_applies_only_when_configured(log_writer) -> None:
    day = 86_400_000
    now = 100 * day
    log_writer.commit(0, protocol(), metadata(configuration={"delta.setTransactionRetentionDuration": "interval 2 days"}),
                      {"txn": {"appId": "old", "version": 1, "lastUpdated": now - 3 * day}},
                      {"txn": {"appId": "new", "version": 2, "lastUpdated": now - day}},
                      {"txn": {"appId": "undated", "version": 3}})
    snap = DeltaTable(str(log_writer.root), clock=lambda: now).snapshot()
    assert sorted(snap.txns) == ["new", "undated"]
    assert sorted(snap.all_txns) == ["new", "old", "undated"]
    txns = {"a": Txn("a", 1, last_updated=0)}
    assert live_txns(txns, retention=None, now_ms=now) == txns
    assert live_txns(txns, retention=dt.timedelta(days=1), now_ms=now) == {}


def test_expire_tombstones_before(log_writer) -> None:
    log_writer.commit(0, protocol(), metadata(), add("a"), add("b"), add("c"))
    log_writer.commit(1, remove("a", ts=100), remove("b", ts=200), {"remove": {"path": "c", "dataChange": True}})
    tombstones = _open(log_writer).tombstones
    kept = expire_tombstones_before(tombstones, 150)
    assert kept["path"].to_pylist() == ["b"]
    assert expire_tombstones_before(tombstones, 0).num_rows == 2  # no timestamp counts as 0


def test_files_table_schema(log_writer) -> None:
    log_writer.commit(0, protocol(), metadata(partition_columns=("part",)),
                      add("part=x/a", partitionValues={"part": "x"}, tags={"t": "1"}, baseRowId=4,
                          defaultRowCommitVersion=0),
                      add("part=__HIVE_DEFAULT_PARTITION__/b", partitionValues={"part": None}, stats=None))
    snap = _open(log_writer)
    files = snap.files
    assert files.column_names[:11] == [
        "path", "partition_values", "size", "modification_time", "data_change", "stats", "tags",
        "deletion_vector", "base_row_id", "default_row_commit_version", "num_records"]
    assert files.schema.field("partition_values").type == pa.map_(pa.string(), pa.string())
    rows = {r["path"]: r for r in files.to_pylist()}
    assert rows["part=x/a"]["tags"] == [("t", "1")] and rows["part=x/a"]["base_row_id"] == 4
    assert rows["part=__HIVE_DEFAULT_PARTITION__/b"]["partition_values"] == [("part", None)]
    assert snap.num_records is None  # one file has no stats
    typed = snap.partition_values_typed()
    assert dict(zip(typed["path"].to_pylist(), typed["part"].to_pylist())) == {
        "part=x/a": "x", "part=__HIVE_DEFAULT_PARTITION__/b": None}
    stats = snap.file_stats()
    assert stats.column_names[:2] == ["path", "num_records"]


def test_replay_that_frees_each_commit_as_it_selects_gives_the_same_state(log_writer) -> None:
    # Snapshot loading hands the commits' adds over (consume=True) and frees them commit chunk by
    # commit chunk; the result must be the copying replay's, and the batch keeps no adds.
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a", records=1), add("b", records=2))
    log_writer.commit(1, commit_info(), remove("a"), add("c", records=3), add("d", records=4))
    log_writer.commit(2, commit_info(), add("a", records=10), remove("d"))
    log_writer.commit(3, commit_info(), add("e", records=5))
    storage = DeltaTable(str(log_writer.root)).storage
    segment = build_log_segment(storage)

    def replayed(consume: bool) -> tuple[ReplayState, CommitBatch]:
        batch = build_batch(read_commits(storage, segment.commit_files), source=storage.root)
        return reconcile(ReplayState.empty(), batch, table_root=storage.root, consume=consume), batch

    (copied, _), (freed, handed) = replayed(False), replayed(True)
    assert freed.rows.equals(copied.rows) and freed.tombstones.equals(copied.tombstones)
    assert freed.rows["path"].to_pylist() == ["b", "c", "a", "e"]
    assert handed.adds.num_rows == 0
    snap = _open(log_writer)
    assert snap.file_paths == ["b", "c", "a", "e"] and snap.commit_info is not None


def test_paths_whose_hashes_collide_are_still_told_apart(log_writer) -> None:
    # Repeated keys are found by 64-bit hashes; two distinct paths with one hash (a Thue-Morse
    # string and its complement collide for every odd base) make replay use exact string sets.
    bits = [bin(i).count("1") % 2 for i in range(2048)]
    one, other = "".join("ab"[b] for b in bits), "".join("ba"[b] for b in bits)
    log_writer.commit(0, commit_info(), protocol(), metadata(), add(one, records=1), add(other, records=2))
    log_writer.commit(1, commit_info(), remove(one), add("c", records=3))
    snap = _open(log_writer)
    assert snap.file_paths == [other, "c"] and snap.num_records == 5
    assert [r.path for r in snap.remove_actions()] == [one]


def test_commits_reconciled_onto_packed_stats_are_packed_too(log_writer) -> None:
    # A transaction reconciles its commits (parsed with their stats) onto the snapshot it read,
    # whose commit stats are packed: the new rows' stats are packed after them, in row order.
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a", records=1), add("b", records=2),
                      add("e", records=5))
    log_writer.commit(1, commit_info(), remove("a"), add("c", records=3))
    snap = _open(log_writer)
    assert snap.replay_state.commit_stats is not None
    storage = DeltaTable(str(log_writer.root)).storage
    log_writer.commit(2, commit_info(), add("d", records=4), remove("b"), add("c", records=30))
    own = build_batch(read_commits(storage, list_log(storage, start_version=2)), source=storage.root)
    assert own.add_stats is None
    state = reconcile(snap.replay_state, own, table_root=storage.root)
    assert state.rows["path"].to_pylist() == ["e", "d", "c"]
    assert [json.loads(s)["numRecords"] for p in state.iter_stats() for s in p.to_pylist()] == [5, 4, 30]
    assert [json.loads(s)["numRecords"] for s in state.stats.to_pylist()] == [5, 4, 30]
