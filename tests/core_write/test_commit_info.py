"""commitInfo built from typed records: Delta Spark's exact key names and order, string values
(PROTOCOL.md "Commit Provenance Information"), committed through a real transaction."""

from __future__ import annotations

import json

import deltalake
import pyarrow as pa

from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.write.commit_info import build_commit_info
from delta_core.write.operation_records import (
    OptimizeMetrics,
    OptimizeParameters,
    OptimizeScan,
    VacuumEndMetrics,
    VacuumEndParameters,
    VacuumStartMetrics,
    VacuumStartParameters,
)
from delta_core.write.table_writes import append, create_table, delete_files, overwrite, set_properties
from delta_core.write.transaction import Transaction


def committed_info(table: DeltaTable, version: int) -> dict:
    lines = [json.loads(line) for line in table.storage.read(commit_key(version)).splitlines() if line.strip()]
    return next(a["commitInfo"] for a in lines if "commitInfo" in a)


def info(parameters, metrics) -> dict:
    built = build_commit_info(timestamp=1, operation="OPTIMIZE", operation_parameters=parameters,
                              operation_metrics=metrics, read_version=0, isolation_level="SnapshotIsolation",
                              is_blind_append=False, txn_id="t")
    return built.values


def test_optimize_records_use_delta_spark_keys_in_order():
    scan = OptimizeScan(total_considered_files=9, total_files_skipped=2, preserve_insertion_order=True)
    values = info(OptimizeParameters(predicate="region = 'eu'", z_order_by=("x", "id"), curve="hilbert"),
                  OptimizeMetrics(num_removed_files=7, num_added_files=4, num_removed_bytes=700, num_added_bytes=410,
                                  added_file_sizes=(120, 80, 110, 100), scan=scan))
    assert list(values["operationParameters"].items()) == [
        ("predicate", '["region = \'eu\'"]'), ("zOrderBy", '["x", "id"]'), ("clusterBy", "[]"),
        ("auto", "false"), ("curve", "hilbert")]
    assert list(values["operationMetrics"].items()) == [
        ("numRemovedFiles", "7"), ("numAddedFiles", "4"), ("numRemovedBytes", "700"), ("numAddedBytes", "410"),
        ("minFileSize", "80"), ("maxFileSize", "120"), ("p25FileSize", "100"), ("p50FileSize", "110"),
        ("p75FileSize", "120"), ("numBatches", "1"), ("numDeletionVectorsRemoved", "0"),
        ("totalConsideredFiles", "9"), ("totalFilesSkipped", "2"),
        ("preserveInsertionOrder", "True")]  # str(bool), as we have always written it


def test_bin_packing_records_leave_out_what_does_not_apply():
    values = info(OptimizeParameters(predicate=None),
                  OptimizeMetrics(num_removed_files=0, num_added_files=0, num_removed_bytes=0, num_added_bytes=0))
    assert values["operationParameters"] == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": "false"}
    assert list(values["operationMetrics"]) == ["numRemovedFiles", "numAddedFiles", "numRemovedBytes",
                                                "numAddedBytes", "numBatches", "numDeletionVectorsRemoved"]


def test_transaction_commits_typed_vacuum_records(tmp_path):
    uri = str(tmp_path / "t")
    create_table(uri, pa.schema([("id", pa.int64())]))
    table = DeltaTable(uri)
    start = Transaction(table, operation="VACUUM START",
                        operation_parameters=VacuumStartParameters(retention_check_enabled=False,
                                                                   default_retention_millis=604_800_000,
                                                                   specified_retention_millis=0))
    start.set_operation_metrics(VacuumStartMetrics(num_files_to_delete=3, size_of_data_to_delete=30))
    v1 = start.commit().version
    end = Transaction(table, operation="VACUUM END", operation_parameters=VacuumEndParameters())
    end.set_operation_metrics(VacuumEndMetrics(num_deleted_files=3, num_vacuumed_directories=1))
    v2 = end.commit().version
    first, second = committed_info(table, v1), committed_info(table, v2)
    assert list(first["operationParameters"].items()) == [
        ("retentionCheckEnabled", "false"), ("defaultRetentionMillis", "604800000"), ("specifiedRetentionMillis", "0")]
    assert first["operationMetrics"] == {"numFilesToDelete": "3", "sizeOfDataToDelete": "30"}
    assert second["operationParameters"] == {"status": "COMPLETED"}
    assert second["operationMetrics"] == {"numDeletedFiles": "3", "numVacuumedDirectories": "1",
                                             "sizeOfDeletedData": "0", "numMissingFiles": "0", "numFailedDeletes": "0"}
    # another engine reads the same provenance
    history = {h["version"]: h for h in deltalake.DeltaTable(uri).history()}
    assert history[v1]["operation"] == "VACUUM START"
    assert history[v2]["operationMetrics"] == {"numDeletedFiles": "3", "numVacuumedDirectories": "1",
                                             "sizeOfDeletedData": "0", "numMissingFiles": "0", "numFailedDeletes": "0"}


def test_plain_writes_commit_their_records_under_delta_spark_keys(tmp_path):
    uri = str(tmp_path / "w")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = create_table(uri, schema, partition_columns=["p"], description="demo")
    rows = pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}, schema=schema)
    v_append = append(table, rows).version
    v_over = overwrite(table, rows).version
    live = table.snapshot().file_paths
    v_delete = delete_files(table, live[:1]).version
    v_props = set_properties(table, {"delta.appendOnly": "false"}).version
    create, app = committed_info(table, 0), committed_info(table, v_append)
    assert list(create["operationParameters"].items()) == [
        ("isManaged", "false"), ("description", "demo"), ("partitionBy", '["p"]'), ("properties", "{}")]
    assert app["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert list(app["operationMetrics"]) == ["numFiles", "numOutputRows", "numOutputBytes"]
    assert app["operationMetrics"]["numFiles"] == "2" and app["operationMetrics"]["numOutputRows"] == "3"
    over = committed_info(table, v_over)
    assert over["operationParameters"] == {"mode": "Overwrite"}
    assert list(over["operationMetrics"]) == ["numFiles", "numOutputRows", "numOutputBytes", "numRemovedFiles"]
    assert over["operationMetrics"]["numRemovedFiles"] == "2"
    deleted = committed_info(table, v_delete)
    assert deleted["operationParameters"] == {"predicate": "[]"}
    assert deleted["operationMetrics"]["numRemovedFiles"] == "1"
    assert committed_info(table, v_props)["operationParameters"] == {"properties": '{"delta.appendOnly":"false"}'}
