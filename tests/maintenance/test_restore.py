"""RESTORE on real tables (ours, delta-rs's, Delta Spark's with deletion vectors, in-commit timestamps,
row tracking, clustering): after a restore every reader sees the rows it saw at the version restored
(delta-rs, through ``QueryBuilder`` where deletion vectors need it, and delta-kernel-rs through
``polars_deltalake``); the commit is Delta Spark's; refusals write nothing."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time

import polars_deltalake
import pyarrow as pa
import pytest

from delta_core.errors import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    ConfigError,
    RestoreBeyondRetentionError,
    RestoreFilesMissingError,
    VersionNotFoundError,
)
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.restore import restore
from delta_core.maintenance.restore_plan import plan_restore
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, create_table, delete_files, overwrite, set_properties
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.core_write.conftest import listing
from tests.dv_files import rows_applying_dvs
from tests.maintenance.conftest import (
    SCHEMA,
    batch,
    commit_info,
    commit_lines,
    deltars_rows,
    file_actions,
    make_deltars_table,
    make_table,
    multiset,
)
from tests.path_spelling import add_commit, deltars_table, remove_json
from tests.row_tracking_tables import high_water_mark, row_id_ranges, stable_ids, turn_on_row_tracking

RESTORE_METRICS = ("tableSizeAfterRestore", "numOfFilesAfterRestore", "numRemovedFiles", "numRestoredFiles",
                   "removedFilesSize", "restoredFilesSize")


def copy_table(src: str, dst: str) -> str:
    """A writable copy whose files are new (copies get fresh modification times, so a table
    without in-commit timestamps has commits from now, inside the deleted-file retention)."""
    shutil.copytree(src, dst, copy_function=shutil.copy)
    return dst


def kernel_rows(uri: str, version: int | None = None) -> pa.Table:
    """The rows delta-kernel-rs reads (deletion vectors applied), strings as plain strings."""
    table = polars_deltalake.read_delta(uri, version=version).to_arrow()
    return table.cast(pa.schema([pa.field(f.name, pa.string()) if pa.types.is_large_string(f.type)
                                 or pa.types.is_string_view(f.type) else f for f in table.schema]))


def assert_reads_as(uri: str, version: int, *, dvs: bool = False) -> None:
    """delta-rs and delta-kernel-rs read the latest version exactly as they read ``version``."""
    def rs(at: int | None = None) -> pa.Table:
        return rows_applying_dvs(uri, at) if dvs else deltars_rows(uri, version=at)

    then = multiset(rs(version))
    assert multiset(rs()) == then
    assert multiset(kernel_rows(uri)) == multiset(kernel_rows(uri, version)) == then


def check_restore_commit(table: DeltaTable, metrics, *, target: int) -> None:
    """The commit is Delta Spark's RESTORE: parameters, metrics, and dataChange=true actions equal
    to the target's adds and the removed files' adds."""
    info = commit_info(table, metrics.version)
    assert info["operation"] == "RESTORE" and info["readVersion"] == metrics.read_version
    assert info["isBlindAppend"] is False
    assert info["operationParameters"] == ({"version": str(target)} if metrics.timestamp is None
                                           else {"timestamp": metrics.timestamp})
    assert info["operationMetrics"] == {
        "tableSizeAfterRestore": str(metrics.bytes_after), "numOfFilesAfterRestore": str(metrics.num_files_after),
        "numRemovedFiles": str(metrics.num_removed_files), "numRestoredFiles": str(metrics.num_added_files),
        "removedFilesSize": str(metrics.removed_bytes), "restoredFilesSize": str(metrics.added_bytes)}
    adds, removes = file_actions(table, metrics.version)
    assert (len(adds), len(removes)) == (metrics.num_added_files, metrics.num_removed_files)
    assert all(a["dataChange"] is True for a in adds + removes)
    assert all(r["extendedFileMetadata"] is True and r["deletionTimestamp"] > 0 for r in removes)
    then = {(a.path, a.dv_unique_id): a for a in table.snapshot(target).add_actions()}
    for add in adds:  # each re-added file exactly as the target holds it (dataChange aside)
        dv = add.get("deletionVector")
        key = (add["path"], None if dv is None else dv["storageType"] + dv["pathOrInlineDv"]
               + (f"@{dv['offset']}" if dv.get("offset") is not None else ""))
        held = then[key]
        assert (add["size"], add["modificationTime"], add.get("stats"), add["partitionValues"]) == (
            held.size, held.modification_time, held.stats, dict(held.partition_values))
    now = table.snapshot()
    assert (now.num_files, now.size_in_bytes) == (metrics.num_files_after, metrics.bytes_after)


# --- our tables, delta-rs tables, Delta Spark's ----------------------------------------------


def test_restores_our_table_after_appends_deletes_and_an_overwrite(table_uri):
    table = make_table(table_uri, appends=4, rows=30)  # versions 0 (create) .. 4
    delete_files(table, table.snapshot().file_paths[1:4])  # 5
    append(table, batch(500, 20))  # 6
    overwrite(table, batch(900, 10))  # 7: every file replaced
    append(table, batch(1000, 10))  # 8
    for target in (5, 2, 7):
        metrics = restore(table, version=target)
        assert metrics.restored_version == target and metrics.version == table.latest_version()
        check_restore_commit(table, metrics, target=target)
        assert_reads_as(table_uri, target)
        assert not metrics.metadata_restored and not metrics.protocol_upgraded
    # the restores are history too: restoring to one of them brings its state back
    assert restore(table, version=9).num_added_files > 0
    assert_reads_as(table_uri, 9)


def test_restores_a_table_written_by_delta_rs(table_uri):
    import deltalake

    make_deltars_table(table_uri, appends=3, rows=30)  # versions 0 .. 2
    deltalake.DeltaTable(table_uri).delete("id < 45")  # 3: delta-rs rewrites the files it touches
    deltalake.write_deltalake(table_uri, batch(300, 10), partition_by=["region"], mode="append")  # 4
    table = DeltaTable(table_uri)
    metrics = restore(table, version=2)
    check_restore_commit(table, metrics, target=2)
    assert_reads_as(table_uri, 2)
    assert deltalake.DeltaTable(table_uri).history(1)[0]["operation"] == "RESTORE"


def test_restores_a_deletion_vector_table_keyed_by_path_and_vector(tmp_path):
    root = copy_table(str(MODERN_DIR / "golden-dv-partitioned-with-checkpoint"), str(tmp_path / "dv"))
    table = DeltaTable(root)
    now, then = table.snapshot(), table.snapshot(7)
    plan = plan_restore(now, then)
    # a file whose vector changed after version 7 is removed with its new vector and re-added
    # with the old one: same path, two logical files
    changed = set(plan.removed.column("path").to_pylist()) & set(plan.restored.column("path").to_pylist())
    assert changed
    metrics = restore(table, version=7)
    check_restore_commit(table, metrics, target=7)
    adds, removes = file_actions(table, metrics.version)
    for path in changed:
        (gone,) = [r for r in removes if r["path"] == path]
        (back,) = [a for a in adds if a["path"] == path]
        held = next(a for a in then.add_actions() if a.path == path)
        assert gone["deletionVector"] != back.get("deletionVector")
        assert (back.get("deletionVector") or {}).get("pathOrInlineDv") == (
            held.deletion_vector.path_or_inline_dv if held.deletion_vector else None)
    assert_reads_as(root, 7, dvs=True)


def test_the_commit_equals_the_one_delta_spark_wrote(tmp_path):
    """golden-basic-with-inserts-overwrite-restore holds Delta Spark's own RESTORE (version 3, to
    version 1): cut the table back to version 2 and restore it here."""
    source = CONFORMANCE_DIR / "golden-basic-with-inserts-overwrite-restore"
    root = copy_table(str(source), str(tmp_path / "t"))
    theirs = [json.loads(line) for line in (source / "_delta_log" / f"{3:020d}.json").read_text().splitlines()]
    for name in (f"{3:020d}.json", f"{3:020d}.checkpoint.parquet", "_last_checkpoint"):
        os.remove(os.path.join(root, "_delta_log", name))
    table = DeltaTable(root)
    metrics = restore(table, version=1)
    assert metrics.version == 3
    ours = commit_lines(table, 3)

    def files(lines, kind, keys):
        return sorted(tuple(json.dumps(a[kind].get(k), sort_keys=True) for k in keys) for a in lines if kind in a)

    add_keys = ("path", "partitionValues", "size", "modificationTime", "dataChange", "stats")
    remove_keys = ("path", "dataChange", "extendedFileMetadata", "partitionValues", "size", "stats")
    assert files(ours, "add", add_keys) == files(theirs, "add", add_keys)
    assert files(ours, "remove", remove_keys) == files(theirs, "remove", remove_keys)
    info, their_info = commit_info(table, 3), theirs[0]["commitInfo"]
    assert info["operation"] == their_info["operation"] == "RESTORE"
    assert info["operationMetrics"] == their_info["operationMetrics"]
    assert info["operationParameters"]["version"] == str(their_info["operationParameters"]["version"])
    assert_reads_as(root, 1)


def test_a_file_spelled_another_way_is_the_same_file(tmp_path):
    """The target names a file relative, the live table absolute (another engine re-added it):
    one file, so the restore neither re-adds nor removes it."""
    import deltalake

    root = str(tmp_path / "t")
    name = deltars_table(root)  # 0: one file, relative
    ts = int(time.time() * 1000)
    add = next(a for a in DeltaTable(root).snapshot().add_actions())
    add_commit(root, 1, remove_json(name, deletion_timestamp=ts, size=add.size))
    readd = json.dumps({"add": {"path": f"file://{root}/{name}", "partitionValues": {}, "size": add.size,
                                "modificationTime": add.modification_time, "dataChange": True}})
    add_commit(root, 2, readd + "\n")
    deltalake.write_deltalake(root, pa.table({"id": pa.array([7], pa.int64())}), mode="append")  # 3
    metrics = restore(DeltaTable(root), version=0)
    assert (metrics.num_added_files, metrics.num_removed_files) == (0, 1)
    adds, removes = file_actions(DeltaTable(root), metrics.version)
    assert adds == [] and name not in removes[0]["path"]
    # delta-rs cannot open a file logged as a file:// URI (it prefixes the table root), kernel can
    assert multiset(kernel_rows(root)) == multiset(kernel_rows(root, 0)) == multiset(deltars_rows(root, version=0))


@pytest.mark.spark
def test_restores_across_compaction_commits(spark, table_uri):
    from delta_core.maintenance.spark.compaction import compact

    table = make_table(table_uri, appends=5, rows=20)  # 0 .. 5
    delete_files(table, table.snapshot().file_paths[:2])  # 6
    compacted = compact(table, spark)  # 7
    assert compacted.version == 7
    append(table, batch(800, 20))  # 8
    metrics = restore(table, version=6)  # before the compaction: its inputs come back
    check_restore_commit(table, metrics, target=6)
    assert metrics.num_removed_files == compacted.num_added_files + 2  # its outputs and the append's
    assert_reads_as(table_uri, 6)
    metrics = restore(table, version=7)  # and after it again
    check_restore_commit(table, metrics, target=7)
    assert_reads_as(table_uri, 7)


# --- nothing to do, bad input, refusals ------------------------------------------------------


def test_restoring_the_current_version_commits_nothing(table_uri):
    table = make_table(table_uri, appends=2)
    latest = table.latest_version()
    before = listing(table_uri)
    metrics = restore(table, version=latest)
    assert metrics.version is None and metrics.restored_version == latest == metrics.read_version
    assert (metrics.num_added_files, metrics.num_removed_files) == (0, 0)
    assert metrics.num_files_after == table.snapshot().num_files
    assert listing(table_uri) == before
    json.dumps(metrics.to_dict())  # JSON-ready


@pytest.mark.parametrize("kwargs,error,match", [
    ({}, ConfigError, "exactly one"),
    ({"version": 1, "timestamp": "2024-01-01"}, ConfigError, "exactly one"),
    ({"version": -1}, ConfigError, "not a table version"),
    ({"version": 99}, VersionNotFoundError, "latest is 2"),
    ({"timestamp": "yesterday"}, ConfigError, "ISO-8601"),
    ({"timestamp": "2001-01-01T00:00:00Z"}, VersionNotFoundError, "no version"),
])
def test_bad_targets_are_refused_with_nothing_written(table_uri, kwargs, error, match):
    table = make_table(table_uri, appends=2)
    before = listing(table_uri)
    with pytest.raises(error, match=match):
        restore(table, **kwargs)
    assert listing(table_uri) == before


def test_refused_naming_the_files_vacuum_deleted(table_uri):
    table = make_table(table_uri, appends=3)
    doomed = table.snapshot().file_paths[:2]
    delete_files(table, doomed)  # 4
    vacuum(table, retention_hours=0, force=True)  # deletes both files (VACUUM START/END: 5, 6)
    assert not any(os.path.exists(os.path.join(table_uri, url_decode_path(p))) for p in doomed)
    latest, before = table.latest_version(), listing(table_uri)
    with pytest.raises(RestoreFilesMissingError, match="2 file\\(s\\) it needs are gone") as err:
        restore(table, version=3)
    assert sorted(err.value.missing) == sorted(doomed) and err.value.kind == "restore_files_missing"
    assert all(p in str(err.value) for p in doomed) and "Nothing was written" in str(err.value)
    assert table.latest_version() == latest and listing(table_uri) == before
    assert restore(table, version=4).version is None  # files of version 4 are all there: nothing to do


def test_refused_when_a_deletion_vector_file_is_gone(tmp_path):
    root = copy_table(str(MODERN_DIR / "golden-dv-partitioned-with-checkpoint"), str(tmp_path / "dv"))
    table = DeltaTable(root)
    plan = plan_restore(table.snapshot(), table.snapshot(7))
    with_dv = next(a for a in plan.adds() if a.deletion_vector is not None and a.deletion_vector.storage_type == "u")
    from delta_core.log.deletion_vectors import dv_file_key

    key = dv_file_key(with_dv.deletion_vector, root)
    os.remove(os.path.join(root, key))
    before = listing(root)
    with pytest.raises(RestoreFilesMissingError, match="deletion vector of") as err:
        restore(table, version=7)
    assert any(key in m for m in err.value.missing)
    assert listing(root) == before and table.latest_version() == 15


def test_refused_beyond_the_deleted_file_retention(table_uri):
    created = int(time.time() * 1000)
    table = make_table(table_uri, appends=2)
    delete_files(table, table.snapshot().file_paths[:1])
    later = DeltaTable(table_uri, clock=lambda: created + 8 * 86_400_000)  # 8 days on; retention 7
    before = listing(table_uri)
    with pytest.raises(RestoreBeyondRetentionError, match="deletedFileRetentionDuration \\(168 h\\)"):
        restore(later, version=1)
    assert listing(table_uri) == before
    set_properties(table, {"delta.deletedFileRetentionDuration": "interval 30 days"})  # what it advises
    assert restore(DeltaTable(table_uri, clock=later.clock), version=1).version is not None


class CommitsDuringTheFileCheck:
    """The table's real storage; the first existence check of a restore (after its plan, before its
    commit) lets another writer append, so the restore meets a commit it did not plan for."""

    def __init__(self, inner, other_writer) -> None:
        self._inner, self._other_writer, self._lock, self.fired = inner, other_writer, threading.Lock(), False

    def exists(self, key: str) -> bool:
        with self._lock:
            if not self.fired:
                self.fired = True
                self._other_writer()
        return self._inner.exists(key)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def test_a_concurrent_append_makes_the_restore_fail_not_keep_it(table_uri):
    table = make_table(table_uri, appends=3)
    delete_files(table, table.snapshot().file_paths[:1])  # 4
    storage = CommitsDuringTheFileCheck(table.storage, lambda: append(DeltaTable(table_uri), batch(900, 5)))
    with pytest.raises(ConcurrentAppendError):
        restore(DeltaTable(storage=storage), version=3)
    assert storage.fired and table.latest_version() == 5  # the append landed, the restore did not
    assert commit_info(table, 5)["operation"] == "WRITE"
    assert restore(table, version=3).version == 6  # planned again, it removes the appended file too
    assert_reads_as(table_uri, 3)


def test_append_only_table_is_refused_before_anything_is_written(table_uri):
    table = make_table(table_uri, appends=2, properties={"delta.appendOnly": "true"})
    append(table, batch(900, 10))
    before = listing(table_uri)
    with pytest.raises(AppendOnlyViolationError):
        restore(table, version=1)
    assert listing(table_uri) == before


# --- metadata, protocol, clustering, in-commit timestamps, row tracking ------------------------


def test_metadata_comes_back_and_the_protocol_is_never_downgraded(table_uri):
    table = make_table(table_uri, appends=2)
    old = table.snapshot()
    set_properties(table, {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "50"})  # 3
    upgraded = table.snapshot().protocol
    assert upgraded != old.protocol
    append(table, batch(700, 10))  # 4
    metrics = restore(table, version=2)
    assert metrics.metadata_restored and not metrics.protocol_upgraded
    now = table.snapshot()
    assert dict(now.metadata.configuration) == dict(old.metadata.configuration)
    assert now.protocol == upgraded  # deletion vectors stay supported: older readers stay out
    lines = commit_lines(table, metrics.version)
    assert [next(iter(line)) for line in lines[:2]] == ["commitInfo", "metaData"]
    assert not any("protocol" in line for line in lines)
    assert_reads_as(table_uri, 2, dvs=True)  # delta-rs's plain reader refuses the deletionVectors feature


def test_clustering_columns_come_back_as_delta_spark_writes_them(tmp_path):
    root = str(tmp_path / "t")
    table = make_table(root, appends=2, partition_columns=())  # 0 .. 2
    cluster_by(table, ["id"])  # 3
    append(table, batch(100, 10))  # 4
    cluster_by(table, ["x", "name"])  # 5

    def columns(version=None):
        return json.loads(DeltaTable(root).snapshot(version).domain_metadata["delta.clustering"].configuration)

    restore(table, version=4)
    assert columns() == columns(4) == {"clusteringColumns": [["id"]]}
    restore(table, version=1)  # before the table was clustered: no columns, the feature stays
    assert columns() == {"clusteringColumns": []}
    assert "clustering" in (table.snapshot().protocol.writer_features or ())
    metrics = restore(table, version=4)
    assert columns() == {"clusteringColumns": [["id"]]} and not metrics.protocol_upgraded
    assert_reads_as(root, 4)


def test_in_commit_timestamps_as_delta_spark_handles_them(tmp_path):
    """A table that turned in-commit timestamps on at version 3: restoring to before turns them
    off with the target's metadata; restoring to after turns them on again, recording the restore
    commit as where they start; a restore by timestamp finds versions by them."""
    root = str(tmp_path / "t")
    now = [int(time.time() * 1000) - 3_600_000]

    def clock() -> int:
        now[0] += 60_000  # a minute per commit
        return now[0]

    create_table(root, SCHEMA, partition_columns=("region",), clock=clock)
    table = DeltaTable(root, clock=clock)
    append(table, batch(0, 10))  # 1
    append(table, batch(10, 10))  # 2
    set_properties(table, {"delta.enableInCommitTimestamps": "true"})  # 3
    append(table, batch(20, 10))  # 4
    at_4 = commit_info(table, 4)["inCommitTimestamp"]
    append(table, batch(30, 10))  # 5
    conf = table.snapshot().configuration
    assert conf["delta.inCommitTimestampEnablementVersion"] == "3"

    by_time = restore(table, timestamp=f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(at_4 / 1000))}.{at_4 % 1000:03d}Z")
    assert by_time.restored_version == 4 and by_time.version == 6
    assert commit_info(table, 6)["operationParameters"] == {"timestamp": by_time.timestamp}
    assert "inCommitTimestamp" in commit_lines(table, 6)[0]["commitInfo"]  # first line, as ICT requires
    assert not by_time.metadata_restored  # the enablement version/timestamp of version 4 are current
    assert_reads_as(root, 4)

    off = restore(table, version=2)  # 7: version 2 had no in-commit timestamps
    assert off.metadata_restored
    assert "inCommitTimestamp" not in commit_info(table, 7)
    assert "delta.enableInCommitTimestamps" not in table.snapshot().configuration
    on = restore(table, version=5)  # 8: on again, starting at this commit
    conf = table.snapshot().configuration
    assert on.metadata_restored and conf["delta.inCommitTimestampEnablementVersion"] == "8"
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(commit_info(table, 8)["inCommitTimestamp"])
    assert_reads_as(root, 5)


def test_delta_spark_in_commit_timestamp_table(tmp_path):
    """rs-cdc_ict_table (Delta Spark 4.1, in-commit timestamps from its creation in July 2026)."""
    root = copy_table(str(MODERN_DIR / "rs-cdc_ict_table"), str(tmp_path / "ict"))
    before = listing(root)
    with pytest.raises(RestoreBeyondRetentionError):  # its commits are older than 7 days
        restore(DeltaTable(root), version=2)
    assert listing(root) == before
    last = commit_info(DeltaTable(root), 3)["inCommitTimestamp"]
    table = DeltaTable(root, clock=lambda: last + 3_600_000)  # an hour after its last commit
    metrics = restore(table, version=2)
    assert metrics.version == 4 and not metrics.metadata_restored
    assert (metrics.num_added_files, metrics.num_removed_files) == (2, 2)
    info = commit_lines(table, 4)[0]["commitInfo"]
    assert info["inCommitTimestamp"] == last + 3_600_000 > last
    assert table.snapshot().timestamp == info["inCommitTimestamp"]
    assert_reads_as(root, 2)


def test_row_tracking_ids_come_back_with_the_files(table_uri):
    table = make_table(table_uri, appends=2, rows=20)  # 0 .. 2
    turn_on_row_tracking(table_uri)  # 3: every file gets its ids
    append(table, batch(500, 20))  # 4
    delete_files(table, table.snapshot().file_paths[:2])  # 5: ids of version 3's files leave
    append(table, batch(700, 20))  # 6
    mark = high_water_mark(table_uri)
    ids_at_4 = stable_ids(table_uri, 4, key_columns=("id",))
    metrics = restore(table, version=4)
    adds, _ = file_actions(table, metrics.version)
    held = {a.path: a for a in table.snapshot(4).add_actions()}
    assert adds and all((a["baseRowId"], a["defaultRowCommitVersion"]) == (
        held[a["path"]].base_row_id, held[a["path"]].default_row_commit_version) for a in adds)
    assert high_water_mark(table_uri) == mark  # no id handed out, none handed out twice
    assert not any("domainMetadata" in line for line in commit_lines(table, metrics.version))
    assert stable_ids(table_uri, key_columns=("id",)) == ids_at_4
    assert row_id_ranges(table_uri) == row_id_ranges(table_uri, 4)
    assert_reads_as(table_uri, 4)


def test_files_from_before_row_tracking_get_fresh_ids(table_uri):
    table = make_table(table_uri, appends=2, rows=20)  # 0 .. 2
    doomed = table.snapshot().file_paths[:1]
    delete_files(table, doomed)  # 3
    turn_on_row_tracking(table_uri)  # 4
    mark = high_water_mark(table_uri)
    metrics = restore(table, version=2)  # the deleted file comes back without ids
    adds, _ = file_actions(table, metrics.version)
    assert [a["path"] for a in adds] == doomed
    assert adds[0]["baseRowId"] == mark + 1 and adds[0]["defaultRowCommitVersion"] == metrics.version
    assert high_water_mark(table_uri) == mark + json.loads(adds[0]["stats"])["numRecords"]
    # as Delta Spark does, the target's metadata (no row tracking properties) comes back; the
    # feature stays in the protocol, so ids are still assigned
    assert metrics.metadata_restored and "delta.enableRowTracking" not in table.snapshot().configuration
    assert_reads_as(table_uri, 2)
