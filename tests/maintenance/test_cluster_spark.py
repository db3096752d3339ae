"""Liquid clustering on Spark over real tables (issue 18 items 2 and 3): ``compact`` on a
clustered table clusters it, incrementally, tagging files the way the protocol and Delta Spark
do; delta-rs and delta-kernel-rs read every version with the same rows."""

from __future__ import annotations

import json

import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.spark.cluster import ClusterMetrics, cluster
from delta_core.maintenance.spark.compaction import compact
from delta_core.write.table_writes import append
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import batch, commit_info, file_actions, make_table, multiset

pytestmark = pytest.mark.spark


def deltars_rows(uri: str, *, version: int | None = None):
    """The rows delta-rs reads through its SQL engine: its ``to_pyarrow_table`` returns nulls for
    column-mapped tables (delta-rs 1.6), its DataFusion scan maps physical names."""
    import deltalake
    import pyarrow as pa

    table = deltalake.DeltaTable(uri, version=version)
    return pa.table(deltalake.QueryBuilder().register("t", table).execute("select * from t").read_all())


def _check_clustered_commit(table, metrics, *, columns, full=False):
    adds, removes = file_actions(table, metrics.version)
    assert len(adds) == metrics.num_added_files and len(removes) == metrics.num_removed_files
    assert all(a["dataChange"] is False for a in adds + removes)
    assert {a["clusteringProvider"] for a in adds} == {"liquid"}
    assert {a["tags"]["ZCUBE_ID"] for a in adds} == {metrics.zcube_id}  # one ZCube per run
    assert {a["tags"]["ZCUBE_ZORDER_BY"] for a in adds} == {json.dumps(columns, separators=(",", ":"))}
    physical = {f.name: f.physical_name for f in table.snapshot().schema.fields}
    for a in adds:  # stats on every new file, clustering columns included
        stats = json.loads(a["stats"])
        assert stats["numRecords"] > 0
        assert all(physical[c] in stats["minValues"] and physical[c] in stats["maxValues"] for c in columns)
    params = commit_info(table, metrics.version)["operationParameters"]
    assert json.loads(params["clusterBy"]) == columns and json.loads(params["zOrderBy"]) == []
    assert params["isFull"] == json.dumps(full)  # Delta writes parameter values as strings


def test_compact_clusters_incrementally_and_delta_rs_reads_every_version(spark, table_uri):
    table = make_table(table_uri, appends=6, rows=60, partition_columns=(),
                       properties={"delta.columnMapping.mode": "name"})
    rows = multiset(deltars_rows(table_uri))
    cluster_by(table, ["x", "id"])
    first = table.latest_version() + 1
    target = table.snapshot().size_in_bytes // 4

    metrics = compact(table, spark, target_size=target)
    assert isinstance(metrics, ClusterMetrics) and metrics.version == first
    assert metrics.num_removed_files == 6 and metrics.num_added_files >= 3
    _check_clustered_commit(table, metrics, columns=["x", "id"])
    assert metrics.skipped_file_ratio_after > metrics.skipped_file_ratio_before

    again = compact(table, spark, target_size=target)  # every file clustered: nothing to do
    assert again.version is None and again.num_removed_files == 0 and table.latest_version() == first

    append(table, batch(1000, 30))  # new data: only it (and the few files it overlaps most) is rewritten
    rows += multiset(batch(1000, 30))
    after_append = compact(table, spark, target_size=target)
    assert after_append.unclustered_files == 1
    assert after_append.num_removed_files == 1 + after_append.clustered_files_rewritten
    assert after_append.clustered_files_kept >= metrics.num_added_files - after_append.clustered_files_rewritten
    _check_clustered_commit(table, after_append, columns=["x", "id"])

    full = cluster(table, spark, full=True, target_size=target)  # OPTIMIZE FULL: every file
    assert full.num_removed_files == table.snapshot(version=full.version - 1).num_files
    _check_clustered_commit(table, full, columns=["x", "id"], full=True)
    for v in range(first, full.version + 1):
        expected = rows if v > first else rows - multiset(batch(1000, 30))  # first + 1 is the append
        assert multiset(deltars_rows(table_uri, version=v)) == expected
    appended = first + 1
    assert kernel_rows(table_uri, version=first) == kernel_rows(table_uri, version=first - 1)
    for v in range(appended + 1, full.version + 1):
        assert kernel_rows(table_uri, version=v) == kernel_rows(table_uri, version=appended)


def test_one_column_is_a_range_sort_with_disjoint_file_ranges(spark, table_uri):
    table = make_table(table_uri, appends=4, rows=50, partition_columns=())
    kernel_before = kernel_rows(table_uri)
    metrics = cluster(table, spark, columns=["id"], target_size=table.snapshot().size_in_bytes // 4)
    assert kernel_rows(table_uri) == kernel_before
    assert metrics.cluster_by_version == metrics.version - 1  # --columns set them first
    ranges = sorted((r["min.id"], r["max.id"]) for r in table.snapshot().file_stats().to_pylist())
    assert len(ranges) >= 3
    assert all(hi < lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))


def test_cli_cluster_by_and_cluster(spark, capsys, table_uri):
    make_table(table_uri, appends=3, partition_columns=())

    def run(*argv: str) -> tuple[int, dict]:
        status = main(list(argv))
        return status, json.loads(capsys.readouterr().out)

    status, out = run("cluster-by", table_uri, "--columns", "x,name", "--json")
    assert status == 0 and out["version"] == 4 and out["new_columns"] == ["x", "name"]
    status, out = run("cluster", table_uri, "--json", "--spark-master", "local[2]")
    assert status == 0 and out["version"] == 5 and out["columns"] == ["x", "name"] and out["unclustered_files"] == 3
    assert kernel_rows(table_uri) == kernel_rows(table_uri, version=3)
    status, out = run("compact", table_uri, "--json", "--spark-master", "local[2]")
    assert status == 0 and out["version"] is None  # already clustered
    status, out = run("zorder", table_uri, "--columns", "x", "--json")
    assert status == 2 and out["error"]["kind"] == "unsupported_for_operation"
    status, out = run("cluster-by", table_uri, "--none", "--json")
    assert status == 0 and out["old_columns"] == ["x", "name"] and out["new_columns"] == []
    assert DeltaTable(table_uri).latest_version() == 6
