"""``DeltaTable``: history, commit actions, changes since a version, time travel by
timestamp, ``Snapshot.update()``."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from delta_core.errors import LogGapError, TimestampAfterLatestCommitError, VersionNotFoundError
from delta_core.log.log_path import LOG_DIR
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, CommitInfo, Remove
from delta_core.storage import open_storage
from tests.core_read.conftest import RecordingStorage, add, commit_info, metadata, protocol, remove

T0 = 1_700_000_000_000  # epoch ms


def _set_mtime(path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def _five_commits(log_writer) -> None:
    paths = [
        log_writer.commit(0, commit_info("CREATE"), protocol(), metadata(), add("a")),
        log_writer.commit(1, commit_info("WRITE"), add("b")),
        log_writer.commit(2, commit_info("DELETE"), remove("a")),
        log_writer.commit(3, commit_info("WRITE"), add("c")),
        log_writer.commit(4, commit_info("OPTIMIZE"), remove("b"), remove("c"), add("bc")),
    ]
    for i, p in enumerate(paths):
        _set_mtime(p, T0 + i * 60_000)


def test_history_newest_first_reads_only_needed_commits(log_writer) -> None:
    _five_commits(log_writer)
    storage = RecordingStorage(log_writer.storage())
    table = DeltaTable(storage=storage)
    records = table.history(limit=2)
    assert [(r.version, r.commit_info["operation"]) for r in records] == [(4, "OPTIMIZE"), (3, "WRITE")]
    assert [r.timestamp for r in records] == [T0 + 4 * 60_000, T0 + 3 * 60_000]
    commit_reads = [k for k in storage.reads if k.endswith(".json")]
    assert sorted(commit_reads) == [f"{LOG_DIR}/{v:020d}.json" for v in (3, 4)]
    assert [r.version for r in table.history()] == [4, 3, 2, 1, 0]
    assert table.history(limit=0) == []


def test_commit_actions(log_writer) -> None:
    _five_commits(log_writer)
    table = DeltaTable(str(log_writer.root))
    actions = table.commit_actions(4)
    assert isinstance(actions[0], CommitInfo)
    assert [type(a) for a in actions[1:]] == [Remove, Remove, Add]
    with pytest.raises(VersionNotFoundError):
        table.commit_actions(9)


def test_changes_since_lists_from_the_version(log_writer) -> None:
    _five_commits(log_writer)
    storage = RecordingStorage(log_writer.storage())
    table = DeltaTable(storage=storage)
    changes = list(table.changes_since(2))
    assert [v for v, _ in changes] == [3, 4]
    assert [(d, s) for d, s in storage.list_calls] == [(LOG_DIR, "00000000000000000003")]
    assert list(table.changes_since(4)) == []


def test_changes_since_detects_a_gap(log_writer) -> None:
    _five_commits(log_writer)
    (log_writer.log / "00000000000000000003.json").unlink()
    with pytest.raises(LogGapError) as info:
        list(DeltaTable(str(log_writer.root)).changes_since(1))
    assert info.value.version == 3 and "resynchronise" in str(info.value)


def test_time_travel_by_file_time(log_writer) -> None:
    _five_commits(log_writer)
    table = DeltaTable(str(log_writer.root))
    assert table.snapshot(timestamp=T0).version == 0
    assert table.snapshot(timestamp=T0 + 60_000 + 1).version == 1
    assert table.snapshot(timestamp=T0 + 4 * 60_000).version == 4
    with pytest.raises(TimestampAfterLatestCommitError, match=r"committed 2023-11-14T22:17:20\.000\+00:00"):
        table.snapshot(timestamp=T0 + 4 * 60_000 + 1)  # after the latest commit, as Delta Spark refuses
    as_datetime = dt.datetime.fromtimestamp((T0 + 2 * 60_000) / 1000, tz=dt.UTC)
    snap = table.snapshot(timestamp=as_datetime)
    assert snap.version == 2 and sorted(snap.file_paths) == ["b"]
    assert table.snapshot(timestamp=as_datetime.isoformat()).version == 2
    assert snap.timestamp == T0 + 2 * 60_000
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=T0 - 1)


def test_time_travel_with_out_of_order_file_times(log_writer) -> None:
    _five_commits(log_writer)
    # a writer with a slow clock: commit 3's file time is before commit 2's
    _set_mtime(log_writer.log / "00000000000000000003.json", T0 + 60_000)
    table = DeltaTable(str(log_writer.root))
    # times are made increasing, so commit 3 counts as just after commit 2
    assert table.snapshot(timestamp=T0 + 2 * 60_000).version == 2
    assert table.snapshot(timestamp=T0 + 2 * 60_000 + 1).version == 3


def test_time_travel_by_in_commit_timestamp(log_writer) -> None:
    conf = {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "2",
            "delta.inCommitTimestampEnablementTimestamp": str(T0 + 500)}
    p0 = log_writer.commit(0, commit_info(), protocol(), metadata(), add("a"))
    p1 = log_writer.commit(1, commit_info(), add("b"))
    p2 = log_writer.commit(2, commit_info(inCommitTimestamp=T0 + 500),
                           protocol(1, 7, writerFeatures=["inCommitTimestamp"]), metadata(configuration=conf))
    p3 = log_writer.commit(3, commit_info(inCommitTimestamp=T0 + 900), add("c"))
    p4 = log_writer.commit(4, commit_info(inCommitTimestamp=T0 + 2000), add("d"))
    for p, ms in ((p0, T0 + 100), (p1, T0 + 200)):
        _set_mtime(p, ms)
    for p in (p2, p3, p4):  # file times that disagree: they must not be used
        _set_mtime(p, T0 + 10_000_000)
    table = DeltaTable(str(log_writer.root))
    assert table.snapshot(timestamp=T0 + 150).version == 0
    assert table.snapshot(timestamp=T0 + 499).version == 1
    assert table.snapshot(timestamp=T0 + 500).version == 2
    assert table.snapshot(timestamp=T0 + 1999).version == 3
    assert table.snapshot(timestamp=T0 + 2000).version == 4
    with pytest.raises(TimestampAfterLatestCommitError):  # the in-commit timestamp bounds it, not the file time
        table.snapshot(timestamp=T0 + 2001)
    assert table.snapshot().timestamp == T0 + 2000
    assert [r.timestamp for r in table.history(limit=3)] == [T0 + 2000, T0 + 900, T0 + 500]


def test_update_reads_only_new_commits(log_writer) -> None:
    _five_commits(log_writer)
    storage = RecordingStorage(log_writer.storage())
    table = DeltaTable(storage=storage)
    old = table.snapshot(2)
    assert old.update().version == 4 and old.version == 2
    storage.reads.clear()
    storage.list_calls.clear()
    snap = table.snapshot(3)
    storage.reads.clear()
    storage.list_calls.clear()
    newer = snap.update()
    assert storage.list_calls == [(LOG_DIR, "00000000000000000004")]
    assert storage.reads == [f"{LOG_DIR}/00000000000000000004.json"]
    assert newer.version == 4 and newer.file_paths == ["bc"]
    assert sorted(newer.tombstones["path"].to_pylist()) == ["a", "b", "c"]
    assert [c.version for c in newer.log_segment.commit_files] == [0, 1, 2, 3, 4]
    assert newer.update() is newer


def test_update_matches_fresh_load_on_real_table(copy_table) -> None:
    root = copy_table("golden-basic-with-inserts-deletes-checkpoint")
    table = DeltaTable(str(root))
    fresh = table.snapshot()
    for start in (3, 10, 12):
        updated = table.snapshot(start).update()
        assert updated.version == fresh.version
        assert sorted(updated.file_paths) == sorted(fresh.file_paths)
        assert updated.tombstones.num_rows == fresh.tombstones.num_rows
        assert updated.num_records == fresh.num_records


def test_latest_and_checkpoint_versions(conformance_dir) -> None:
    table = DeltaTable(str(conformance_dir / "rs-checkpoint-v2-table"))
    assert table.latest_version() == 9 and table.last_checkpoint_version() == 8
    assert DeltaTable(str(conformance_dir / "rs-simple_table")).last_checkpoint_version() is None


def test_storage_is_passed_in(log_writer) -> None:
    _five_commits(log_writer)
    storage = open_storage(str(log_writer.root))
    table = DeltaTable(storage=storage)
    assert table.storage is storage and table.snapshot().storage is storage


def test_protocol_and_metadata_without_file_replay(conformance_dir) -> None:
    storage = RecordingStorage(open_storage(str(conformance_dir / "golden-log-replay-latest-metadata-protocol")))
    protocol, meta = DeltaTable(storage=storage).protocol_and_metadata()
    assert protocol.min_reader_version == 3 and protocol.writer_features == ("appendOnly", "invariants")
    assert "col2" in meta.schema_string
    table = DeltaTable(str(conformance_dir / "dat-no_replay"))  # both only in the checkpoint
    protocol, meta = table.protocol_and_metadata()
    assert protocol.min_reader_version == 1 and meta.partition_columns == ()


def test_commit_actions_with_domain_metadata(conformance_dir) -> None:
    table = DeltaTable(str(conformance_dir / "rs-table_with_liquid_clustering"))
    actions = table.commit_actions(0)
    domains = [a for a in actions if type(a).__name__ == "DomainMetadata"]
    assert {d.domain for d in domains} == {"delta.liquid", "delta.rowTracking"}
    assert all(isinstance(d.configuration, str) for d in domains)
