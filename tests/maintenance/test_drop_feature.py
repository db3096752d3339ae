"""DROP FEATURE on real tables (tests/data/modern-tables copies, and tables our writes build).

After each drop: the protocol no longer lists the feature; delta-rs (``QueryBuilder``, which
applies deletion vectors) and delta-kernel-rs read the rows they read before; and delta-rs's
plain reader (``to_pyarrow_table()``), which refuses the reader features dropped here, reads the
table. Refusals write nothing; a concurrent writer that brings deletion vectors back between the
pre-downgrade and the protocol commit stops the drop, naming the commits that landed.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import shutil
import time
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake.exceptions import DeltaProtocolError

from delta_core.log.log_path import LogFileKind
from delta_core.log.log_segment import list_log
from delta_core.log.table import DeltaTable
from delta_core.maintenance.drop_feature import drop_feature
from delta_core.maintenance.drop_feature_errors import (
    DropFeatureHistoryError,
    DropFeatureIncompleteError,
    FeatureNotDroppableError,
    FeatureNotPresentError,
)
from delta_core.maintenance.restore import restore
from delta_core.model.actions import Remove
from delta_core.model.table_features import reader_features, writer_features
from delta_core.model.table_properties import REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION
from delta_core.model.type_widening import type_changes
from delta_core.write.feature_enablement import upgrade_protocol
from delta_core.write.table_writes import append, create_table
from delta_core.write.transaction import Transaction
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info


def copy(name: str, tmp_path) -> str:
    uri = str(tmp_path / "t")
    shutil.copytree(MODERN_DIR / name, uri)
    return uri


def query_rows(uri: str) -> collections.Counter:
    """delta-rs's query engine (deletion vectors applied), as a multiset of rows."""
    table = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute("SELECT * FROM t")
                     .read_all())
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def plain_rows(uri: str) -> collections.Counter:
    """delta-rs's plain reader, which refuses reader features it does not know."""
    table = deltalake.DeltaTable(uri).to_pyarrow_table()
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def features(table: DeltaTable) -> set[str]:
    protocol = table.snapshot().protocol
    return set(reader_features(protocol)) | set(writer_features(protocol))


def operations(table: DeltaTable, versions: list[int]) -> list[str]:
    return [commit_info(table, v)["operation"] for v in versions]


def assert_fast_drop(table: DeltaTable, metrics: Any, feature: str) -> None:
    """A reader-writer feature's fast drop: three barrier checkpoints on empty commits, then the
    protocol commit adding checkpointProtection at its own version, checkpointed."""
    snap = table.snapshot()
    assert feature not in features(table) and "checkpointProtection" in writer_features(snap.protocol)
    assert snap.metadata.configuration[REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION] == str(metrics.version)
    empties = [v for s, v in metrics.steps if s == "empty commit"]
    assert len(empties) == 3 and metrics.checkpoints == (*empties, metrics.version)
    assert operations(table, empties) == ["Empty Commit"] * 3
    info = commit_info(table, metrics.version)
    assert (info["operation"], info["operationParameters"]) == (
        "DROP FEATURE", {"featureName": feature, "truncateHistory": "false"})
    kinds = {f.version: f.kind for f in list_log(table.storage) if f.is_checkpoint}
    assert all(kinds[v] is LogFileKind.CHECKPOINT for v in metrics.checkpoints)


@pytest.mark.spark
def test_drop_deletion_vectors_disables_purges_tombstones_then_drops(spark, tmp_path):
    uri = copy("krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    before, kernel_before = query_rows(uri), kernel_rows(uri)
    with pytest.raises(DeltaProtocolError):
        plain_rows(uri)

    metrics = drop_feature(table, "deletionVectors", spark=lambda: spark)

    steps = dict(metrics.steps)
    assert [s for s, _ in metrics.steps[:3]] == ["disable deletion vectors", "purge", "deletion vector tombstones"]
    assert commit_info(table, steps["disable deletion vectors"])["operationParameters"] == {
        "properties": '["delta.enableDeletionVectors"]', "ifExists": "true"}
    assert operations(table, [steps["purge"]]) == ["REORG"]
    assert (metrics.num_removed_files, metrics.num_added_files) == (1, 1)
    (tombstones,) = [v for s, v in metrics.steps if s == "deletion vector tombstones"]
    removed = [a for a in table.commit_actions(tombstones) if isinstance(a, Remove)]
    assert [a.path.startswith("deletion_vector_") and not a.data_change for a in removed] == [True]
    assert operations(table, [tombstones]) == ["Deletion Vector Tombstones"]
    assert_fast_drop(table, metrics, "deletionVectors")
    assert metrics.protocol_after["minReaderVersion"] == 1  # no reader feature left
    assert query_rows(uri) == before and kernel_rows(uri) == kernel_before
    assert plain_rows(uri) == before  # a reader without deletion vectors reads it


# golden-v2-checkpoint-*: V2 checkpoints with sidecars, policy v2. (rs-checkpoint-v2-table has identity
# columns, which the write gate refuses before anything is written.)
V2_TABLES = [MODERN_DIR / "krs-v2-checkpoints-parquet-with-sidecars",
             *(CONFORMANCE_DIR / n for n in ("golden-v2-checkpoint-json", "golden-v2-checkpoint-parquet"))]


@pytest.mark.parametrize("root", V2_TABLES, ids=lambda p: p.name)
def test_drop_v2_checkpoint_after_a_classic_checkpoint(tmp_path, root):
    uri = str(tmp_path / "t")
    shutil.copytree(root, uri)
    table = DeltaTable(uri)
    kernel_before = kernel_rows(uri)
    with pytest.raises(DeltaProtocolError):
        plain_rows(uri)

    metrics = drop_feature(table, "v2Checkpoint")

    (policy,) = [v for s, v in metrics.steps if s == "classic checkpoint policy"]
    assert commit_info(table, policy)["operationParameters"] == {"properties": '{"delta.checkpointPolicy":"classic"}'}
    assert_fast_drop(table, metrics, "v2Checkpoint")
    latest = table.snapshot()
    (cp,) = latest.log_segment.checkpoint_files
    assert cp.kind is LogFileKind.CHECKPOINT
    assert "checkpointMetadata" not in pq.read_schema(f"{uri}/{cp.key}").names  # V1 spec
    assert kernel_rows(uri) == kernel_before
    assert sum(plain_rows(uri).values()) == kernel_before.num_rows
    assert query_rows(uri) == plain_rows(uri)


@pytest.mark.spark
def test_drop_type_widening_rewrites_old_types_and_clears_type_changes(spark, tmp_path):
    uri = copy("golden-type-widening-nested", tmp_path)
    table = DeltaTable(uri)
    kernel_before = kernel_rows(uri)
    assert list(type_changes(table.snapshot().metadata))
    with pytest.raises(DeltaProtocolError):
        plain_rows(uri)

    metrics = drop_feature(table, "typeWidening-preview", spark=lambda: spark)

    assert metrics.num_removed_files == metrics.num_added_files > 0
    assert [s for s, _ in metrics.steps][-4:-3] == ["remove delta.typeChanges"]
    assert not list(type_changes(table.snapshot().metadata))
    assert "delta.enableTypeWidening" not in table.snapshot().metadata.configuration
    assert_fast_drop(table, metrics, "typeWidening-preview")
    assert kernel_rows(uri) == kernel_before
    assert plain_rows(uri) == query_rows(uri) and sum(plain_rows(uri).values()) == kernel_before.num_rows


def test_drop_in_commit_timestamps_turns_them_off_then_drops(tmp_path):
    uri = copy("rs-cdc_ict_table", tmp_path)
    table = DeltaTable(uri)
    before, kernel_before = plain_rows(uri), kernel_rows(uri)

    metrics = drop_feature(table, "inCommitTimestamp")

    ((_, disabled),) = metrics.steps
    assert commit_info(table, disabled)["operation"] == "UNSET TBLPROPERTIES"  # as Delta Spark names it
    conf = table.snapshot().metadata.configuration
    assert conf["delta.enableInCommitTimestamps"] == "false"
    assert not {"delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"} & set(conf)
    assert "inCommitTimestamp" not in features(table) and "checkpointProtection" not in features(table)
    assert metrics.checkpoints == ()  # a writer feature: no barrier
    assert "inCommitTimestamp" not in commit_info(table, metrics.version)  # nor in its own commit
    assert plain_rows(uri) == before and kernel_rows(uri) == kernel_before


def _table_with_vacuum_protocol_check(tmp_path) -> str:
    """A table our writes built, then given vacuumProtocolCheck by a protocol commit."""
    uri = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(20), pa.int64()), "name": [f"n{i}" for i in range(20)]})
    table = create_table(uri, data.schema)
    append(table, data.slice(0, 10))
    append(table, data.slice(10))
    txn = Transaction(table, operation="SET TBLPROPERTIES")
    txn.add_action(upgrade_protocol(table.snapshot().protocol, {"vacuumProtocolCheck"}))
    txn.commit()
    return uri


def test_drop_vacuum_protocol_check_then_checkpoint_protection(tmp_path):
    uri = _table_with_vacuum_protocol_check(tmp_path)
    table = DeltaTable(uri)
    with pytest.raises(DeltaProtocolError):
        plain_rows(uri)
    kernel_before = kernel_rows(uri)

    metrics = drop_feature(table, "vacuumProtocolCheck")

    assert [s for s, _ in metrics.steps] == ["empty commit"] * 3  # nothing to remove first
    assert_fast_drop(table, metrics, "vacuumProtocolCheck")
    assert metrics.protocol_after == {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                                      "writerFeatures": ["appendOnly", "checkpointProtection", "invariants"]}
    assert sum(plain_rows(uri).values()) == 20 and kernel_rows(uri) == kernel_before

    # checkpointProtection: only with --truncate-history, and only once history before the
    # protected version can be truncated (commits older than 24 hours); the error says when.
    latest = table.latest_version()
    with pytest.raises(FeatureNotDroppableError, match="--truncate-history"):
        drop_feature(table, "checkpointProtection")
    assert table.latest_version() == latest
    with pytest.raises(DropFeatureHistoryError) as waited:
        drop_feature(table, "checkpointProtection", truncate_history=True)
    err = waited.value
    assert [s for s, _ in err.landed] == ["empty commit"]
    when = dt.datetime.fromisoformat(err.possible_at)
    assert dt.timedelta(hours=23) < when - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=24)
    assert "checkpointProtection" in features(table)

    two_days_later = DeltaTable(uri, clock=lambda: int(time.time() * 1000) + 48 * 3600 * 1000)
    done = drop_feature(two_days_later, "checkpointProtection", truncate_history=True)

    protocol = table.snapshot().protocol  # back to the legacy (1, 2) our table was created with
    assert (protocol.min_reader_version, protocol.min_writer_version, protocol.writer_features) == (1, 2, None)
    assert REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION not in table.snapshot().metadata.configuration
    commits = [f.version for f in list_log(table.storage) if f.kind is LogFileKind.COMMIT]
    assert min(commits) >= metrics.version  # the history before the protected version is gone
    assert commit_info(table, done.version)["operationParameters"]["truncateHistory"] == "true"
    assert sum(plain_rows(uri).values()) == 20 and kernel_rows(uri) == kernel_before


def test_refusals_write_nothing(tmp_path):
    uri = copy("rs-cdc_ict_table", tmp_path)
    table = DeltaTable(uri)
    latest = table.latest_version()
    with pytest.raises(FeatureNotDroppableError, match="drops are"):
        drop_feature(table, "rowTracking")
    with pytest.raises(FeatureNotDroppableError, match="table property"):
        drop_feature(table, "delta.enableInCommitTimestamps")
    with pytest.raises(FeatureNotPresentError, match="does not list 'deletionVectors'"):
        drop_feature(table, "deletionVectors")
    with pytest.raises(FeatureNotDroppableError, match="without --truncate-history"):
        drop_feature(table, "inCommitTimestamp", truncate_history=True)
    assert table.latest_version() == latest


@pytest.mark.spark
def test_a_concurrent_writer_bringing_deletion_vectors_back_stops_the_drop(spark, tmp_path):
    uri = copy("krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    before, kernel_before = query_rows(uri), kernel_rows(uri)
    read = table.latest_version()
    concurrent: list[int] = []

    def writer_between_steps(step: str, version: int) -> None:
        if step == "purge":  # another writer restores the files with deletion vectors
            concurrent.append(restore(DeltaTable(uri), version=read).version)

    with pytest.raises(DropFeatureIncompleteError) as stopped:
        drop_feature(table, "deletionVectors", spark=lambda: spark, after_step=writer_between_steps)

    err = stopped.value
    assert "live file(s) have deletion vectors" in str(err)
    landed = dict(err.landed)
    assert landed["purge"] < concurrent[0] < min(v for s, v in err.landed if s == "empty commit")
    assert f"{landed['purge']} (purge)" in str(err) and "disable deletion vectors" in landed
    assert [s for s, _ in err.landed].count("empty commit") == 3
    assert "deletionVectors" in features(table)  # no protocol commit
    assert "DROP FEATURE" not in operations(table, list(range(read + 1, table.latest_version() + 1)))
    assert query_rows(uri) == before and kernel_rows(uri) == kernel_before  # still valid, same rows


def test_truncate_history_drops_without_checkpoint_protection_when_history_is_clean(tmp_path):
    uri = _table_with_vacuum_protocol_check(tmp_path)
    table = DeltaTable(uri)

    metrics = drop_feature(table, "vacuumProtocolCheck", truncate_history=True)

    assert [s for s, _ in metrics.steps] == ["empty commit"] and metrics.checkpoints == (metrics.steps[0][1],)
    assert features(table) == {"appendOnly", "invariants"}  # no checkpointProtection on this path
    assert metrics.protected_before_version is None
    assert commit_info(table, metrics.version)["operationParameters"]["truncateHistory"] == "true"
    assert sum(plain_rows(uri).values()) == 20


@pytest.mark.spark
def test_truncate_history_waits_24_hours_after_removing_deletion_vectors(spark, tmp_path):
    uri = copy("krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    before = query_rows(uri)

    with pytest.raises(DropFeatureHistoryError, match="Run drop-feature again with --truncate-history after") as waited:
        drop_feature(table, "deletionVectors", truncate_history=True, spark=lambda: spark)
    assert [s for s, _ in waited.value.landed] == ["disable deletion vectors", "purge", "deletion vector tombstones",
                                                   "empty commit"]
    assert "deletionVectors" in features(table)

    later = DeltaTable(uri, clock=lambda: int(time.time() * 1000) + 48 * 3600 * 1000)
    metrics = drop_feature(later, "deletionVectors", truncate_history=True, spark=lambda: spark)

    assert [s for s, _ in metrics.steps] == ["empty commit"]  # nothing left to remove
    assert not {"deletionVectors", "checkpointProtection"} & features(table)
    commits = [f.version for f in list_log(table.storage) if f.kind is LogFileKind.COMMIT]
    assert min(commits) == metrics.steps[0][1]  # the log truncated to the checkpoint after the cleanup
    assert plain_rows(uri) == before == query_rows(uri)
