"""Transactions on real local tables: validation before any write, idempotent txns, retries,
conflict errors, clean-up of uncommitted files, ambiguous failures."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pytest

from delta_core.errors import (
    AppendOnlyViolationError,
    CommitRetriesExhaustedError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    InvalidTransactionError,
    MetadataChangedError,
    PartitionValueError,
    SchemaMismatchError,
    UnsupportedWriterFeatureError,
)
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, Protocol, encode_actions
from delta_core.storage import FsspecStorage
from delta_core.write.commit_outcome import RetryPolicy
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import append, commit_rewrite, create_table, delete_files, overwrite, set_properties
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])


def data(ids, p="a") -> pa.Table:
    return pa.table({"id": ids, "s": [f"v{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.fixture()
def table(table_dir) -> DeltaTable:
    t = create_table(table_dir, SCHEMA, partition_columns=["p"])
    append(t, data([1, 2]))
    return t


# --- bad input: typed error, nothing written ------------------------------------------------


def test_unsupported_writer_feature_refused_before_writing(table, table_dir):
    snap = table.snapshot()
    upgraded = Protocol(1, 7, None, ("appendOnly", "someFutureFeature"))
    table.storage.put_if_absent(commit_key(2), encode_actions([upgraded]))
    before = listing(table_dir)
    with pytest.raises(UnsupportedWriterFeatureError) as e:
        append(table, data([3]))
    assert "someFutureFeature" in str(e.value)
    with pytest.raises(UnsupportedWriterFeatureError):
        delete_files(table, snap.file_paths[:1])
    assert listing(table_dir) == before


def test_schema_mismatch_on_append_writes_nothing(table, table_dir):
    before = listing(table_dir)
    with pytest.raises(SchemaMismatchError):
        append(table, pa.table({"id": ["not a number"], "s": ["x"], "p": ["a"]}))
    with pytest.raises(SchemaMismatchError):
        append(table, pa.table({"id": [1], "s": ["x"], "p": ["a"], "extra": [1]}))
    assert listing(table_dir) == before
    assert table.latest_version() == 1


def test_missing_partition_value_writes_nothing(table, table_dir):
    before = listing(table_dir)
    with pytest.raises(PartitionValueError):
        append(table, pa.table({"id": [1], "s": ["x"]}))
    txn = Transaction(table, operation="WRITE")
    txn.add_action(Add("p=a/x.parquet", {}, 1, 0, True))
    with pytest.raises(PartitionValueError):
        txn.commit()
    assert listing(table_dir) == before


def test_append_only_violation_writes_nothing(table, table_dir):
    set_properties(table, {"delta.appendOnly": "true"})
    before = listing(table_dir)
    path = table.snapshot().file_paths[0]
    with pytest.raises(AppendOnlyViolationError):
        delete_files(table, [path])
    with pytest.raises(AppendOnlyViolationError):
        overwrite(table, data([9]))
    txn = Transaction(table, operation="DELETE")
    txn.add_action(next(table.snapshot().add_actions()).to_remove(0))
    with pytest.raises(AppendOnlyViolationError):
        txn.commit()
    assert listing(table_dir) == before
    # a dataChange=false rewrite is allowed on an append-only table
    snap = table.snapshot()
    old = next(snap.add_actions())
    new = write_data_file(table.storage, data([1, 2]), metadata=snap.metadata, partition_values={"p": "a"},
                          data_change=False)
    assert commit_rewrite(table, removed=[old], added=[new]).version == snap.version + 1


def test_structural_rules(table):
    md = table.snapshot().metadata
    txn = Transaction(table, operation="X")
    txn.add_actions([md, md])
    with pytest.raises(InvalidTransactionError):
        txn.commit()
    a = Add("p=a/f.parquet", {"p": "a"}, 1, 0, True)
    txn = Transaction(table, operation="X")
    txn.add_actions([a, a])
    with pytest.raises(InvalidTransactionError, match="'p=a/f.parquet' is added twice in one commit"):
        txn.commit()
    rm = next(table.snapshot().add_actions()).to_remove(0)
    txn = Transaction(table, operation="DELETE")
    txn.add_actions([rm, rm])
    with pytest.raises(InvalidTransactionError, match=f"{rm.path!r} is removed twice in one commit"):
        txn.commit()
    # a rewrite claiming dataChange=false must keep the row count
    snap = table.snapshot()
    old = next(snap.add_actions())
    bigger = write_data_file(table.storage, data([1, 2, 3, 4]), metadata=snap.metadata,
                             partition_values={"p": "a"}, data_change=False)
    with pytest.raises(InvalidTransactionError):
        commit_rewrite(table, removed=[old], added=[bigger])
    assert not table.storage.exists(bigger.path)  # the rejected rewrite's file is cleaned up


# --- idempotent writes ------------------------------------------------------------------


def test_same_app_id_and_version_is_a_noop(table):
    r1 = append(table, data([10]), app_id="etl", app_version=1)
    r2 = append(table, data([10]), app_id="etl", app_version=1)
    assert not r1.skipped and r2.skipped and r2.version == r1.version
    assert table.snapshot().txns["etl"].version == 1
    r3 = append(table, data([11]), app_id="etl", app_version=2)
    assert r3.version == r1.version + 1
    assert table.snapshot().num_records == 4


def test_concurrent_same_app_id_conflicts(table):
    snap = table.snapshot()
    append(table, data([5]), app_id="job", app_version=7)
    with pytest.raises(ConcurrentTransactionError):
        append(table, data([5]), app_id="job", app_version=8, read_snapshot=snap)


# --- retries and conflicts ----------------------------------------------------------------


def test_non_conflicting_loser_retries_on_next_version(table):
    snap = table.snapshot()
    append(table, data([3]))
    append(table, data([4]))
    r = append(table, data([5]), read_snapshot=snap)
    assert r.version == snap.version + 3 and r.attempts == 2
    assert table.history(1)[0].commit_info["readVersion"] == snap.version


def test_conflict_cleans_up_written_files(table):
    snap = table.snapshot()
    victim = snap.file_paths[0]
    delete_files(table, [victim])
    old = next(a for a in snap.add_actions() if a.path == victim)
    new = write_data_file(table.storage, data([1, 2]), metadata=snap.metadata, partition_values={"p": "a"},
                          data_change=False)
    assert table.storage.exists(new.path)
    with pytest.raises(ConcurrentDeleteReadError):
        commit_rewrite(table, removed=[old], added=[new], read_snapshot=snap)
    assert not table.storage.exists(new.path)


def test_delete_delete_and_metadata_conflicts(table):
    snap = table.snapshot()
    path = snap.file_paths[0]
    delete_files(table, [path])
    with pytest.raises(ConcurrentDeleteDeleteError):
        delete_files(table, [path], read_snapshot=snap)
    snap = table.snapshot()
    set_properties(table, {"delta.checkpointInterval": "100"})
    with pytest.raises(MetadataChangedError):
        append(table, data([1]), read_snapshot=snap)


def test_retries_are_bounded_and_clean_up(table, table_dir):
    snap = table.snapshot()
    append(table, data([3]))
    txn = Transaction(table, read_snapshot=snap, operation="WRITE")
    add = write_data_file(table.storage, data([9]), metadata=snap.metadata, partition_values={"p": "a"})
    txn.add_written_files([add])
    with pytest.raises(CommitRetriesExhaustedError):
        txn.commit(retry=RetryPolicy(max_attempts=1, sleep=lambda s: None))
    assert not table.storage.exists(add.path)
    assert table.latest_version() == snap.version + 1


class _FlakyStorage(FsspecStorage):
    """Local storage whose next commit write lands but reports a network-style failure."""

    fail_next = True

    def put_if_absent(self, key: str, data: bytes) -> None:
        super().put_if_absent(key, data)
        if key.endswith(".json") and self.fail_next:
            self.fail_next = False
            raise OSError("connection reset after the write")


def test_ambiguous_failure_finds_its_own_commit(table_dir):
    create_table(table_dir, SCHEMA, partition_columns=["p"])
    t = DeltaTable(table_dir, storage=_FlakyStorage(table_dir))
    r = append(t, data([1]), app_id="a", app_version=1)
    assert r.version == 1
    assert t.latest_version() == 1  # landed exactly once
    assert t.snapshot().num_records == 1


def test_commit_logs_carry_table_version_attempt(table, caplog):
    caplog.set_level(logging.INFO, logger="delta_core.write.transaction")
    snap = table.snapshot()
    append(table, data([3]))
    append(table, data([4]), read_snapshot=snap)
    msgs = [r.getMessage() for r in caplog.records]
    assert any(f"table={table.uri}" in m and "version=3" in m and "attempt=2" in m for m in msgs)


def test_automatic_checkpoint_at_interval(table_dir):
    t = create_table(table_dir, SCHEMA, partition_columns=["p"],
                     properties={"delta.checkpointInterval": "3"})
    results = [append(t, data([i])) for i in range(7)]
    assert [r.checkpoint_version for r in results] == [None, None, 3, None, None, 6, None]
    log_dir = os.path.join(table_dir, "_delta_log")
    assert os.path.exists(os.path.join(log_dir, f"{3:020d}.checkpoint.parquet"))
    last = json.loads(open(os.path.join(log_dir, "_last_checkpoint")).read())
    assert last["version"] == 6 and last["numOfAddFiles"] == 6 and "checksum" in last
    assert t.snapshot().log_segment.checkpoint_version == 6


def test_create_table_twice_refused(table_dir):
    create_table(table_dir, SCHEMA)
    with pytest.raises(InvalidTransactionError):
        create_table(table_dir, SCHEMA)


def test_first_commit_needs_protocol_and_metadata(table_dir):
    t = DeltaTable(table_dir)
    txn = Transaction(t, new_table=True, operation="CREATE TABLE")
    txn.add_action(Protocol(1, 2))
    with pytest.raises(InvalidTransactionError):
        txn.commit()
    assert not os.path.exists(os.path.join(table_dir, "_delta_log", f"{0:020d}.json"))


def test_in_commit_timestamps_increase_strictly(table_dir):
    import deltalake

    t = create_table(table_dir, SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    p = t.snapshot().protocol
    assert p.min_writer_version == 7 and "inCommitTimestamp" in p.writer_features
    snap = t.snapshot()
    for i in range(3):
        append(t, data([i]))
    append(t, data([9]), read_snapshot=snap)  # a retry must still move the timestamp forward
    icts = []
    for v in range(t.latest_version() + 1):
        first = json.loads(t.storage.read(commit_key(v)).splitlines()[0])
        icts.append(first["commitInfo"]["inCommitTimestamp"])
    assert icts == sorted(icts) and len(set(icts)) == len(icts)
    assert t.snapshot().timestamp == icts[-1]
    assert deltalake.DeltaTable(table_dir).version() == 4


def test_empty_append_and_file_splitting(table_dir):
    t = create_table(table_dir, SCHEMA)
    r = append(t, data([]))
    assert r.version == 1 and t.snapshot().num_files == 0
    big = data(list(range(5000)))
    append(t, big, target_file_size=big.nbytes // 4)
    snap = t.snapshot()
    assert snap.num_files >= 4 and snap.num_records == 5000


class _DiskFullStorage(FsspecStorage):
    """Local storage that fails writing the second data file of a write."""

    outputs = 0

    def open_output(self, key: str):
        self.outputs += 1
        if self.outputs == 2:
            raise OSError(28, "No space left on device")
        return super().open_output(key)


def test_failure_half_way_through_writing_leaves_nothing(table_dir):
    create_table(table_dir, SCHEMA, partition_columns=["p"])
    before = listing(table_dir)
    t = DeltaTable(table_dir, storage=_DiskFullStorage(table_dir))
    two_partitions = pa.concat_tables([data([1], "a"), data([2], "b")])
    with pytest.raises(OSError):
        append(t, two_partitions)
    t.storage.remove_empty_dirs()
    assert listing(table_dir) == before


class _LostWriteStorage(FsspecStorage):
    """The first commit write fails without landing (a timeout before the request was sent)."""

    failed = False

    def put_if_absent(self, key: str, data: bytes) -> None:
        if key.endswith(".json") and not self.failed:
            self.failed = True
            raise OSError("timed out")
        super().put_if_absent(key, data)


def test_unclear_attempt_resolved_by_another_winner(table_dir):
    t0 = create_table(table_dir, SCHEMA, partition_columns=["p"])
    snap = t0.snapshot()
    append(t0, data([1]))  # takes version 1 first
    t = DeltaTable(table_dir, storage=_LostWriteStorage(table_dir))
    victim = Transaction(t, read_snapshot=snap, operation="WRITE")
    victim.read_whole_table()
    add = write_data_file(t.storage, data([2]), metadata=snap.metadata, partition_values={"p": "a"})
    victim.add_written_files([add])
    # the retry of version 1 finds another writer's commit there: our attempt surely did not
    # land, so the append conflict that follows may clean up our file
    with pytest.raises(ConcurrentAppendError):
        victim.commit(retry=RetryPolicy(sleep=lambda s: None))
    assert not t.storage.exists(add.path)
