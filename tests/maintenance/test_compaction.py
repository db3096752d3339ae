"""Compaction on Spark over real tables (ours, delta-rs's, column mapping, S3)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.options import RewriteBounds
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.partition_values import url_decode_path
from tests.maintenance.conftest import (
    assert_versions_readable,
    commit_info,
    deltars_rows,
    file_actions,
    make_deltars_table,
    make_table,
    multiset,
    rows_kept,
)

pytestmark = pytest.mark.spark


def check_rewrite_commit(table, version, *, removed: int, added: int) -> None:
    adds, removes = file_actions(table, version)
    assert (len(removes), len(adds)) == (removed, added)
    assert all(a["dataChange"] is False for a in adds + removes)
    for a in adds:
        stats = json.loads(a["stats"])
        assert stats["numRecords"] > 0 and stats["minValues"] and stats["maxValues"] and "nullCount" in stats
    info = commit_info(table, version)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationMetrics"]["numRemovedFiles"] == str(removed)
    assert info["operationMetrics"]["numAddedFiles"] == str(added)
    assert info["isBlindAppend"] is False


def test_compacts_each_partition_and_is_idempotent(spark, table_uri):
    table = make_table(table_uri, appends=6)
    before = multiset(deltars_rows(table_uri))
    v0 = table.latest_version()
    metrics = compact(table, spark)
    assert metrics.version == v0 + 1 and metrics.num_removed_files == 12 and metrics.num_added_files == 2
    assert metrics.partitions_compacted == 2 and metrics.batches_aborted == 0
    check_rewrite_commit(table, metrics.version, removed=12, added=2)
    assert json.loads(commit_info(table, metrics.version)["operationParameters"]["predicate"]) == []
    snap = table.snapshot()
    assert snap.num_files == 2
    assert sorted(a.partition_values["region"] for a in snap.add_actions()) == ["eu", "us"]
    assert multiset(deltars_rows(table_uri)) == before
    assert_versions_readable(table_uri, range(metrics.version + 1))
    again = compact(table, spark)
    assert again.version is None and again.num_removed_files == 0
    assert table.latest_version() == metrics.version
    d = again.to_dict()
    assert json.loads(json.dumps(d)) == d


def test_where_and_batches(spark, table_uri):
    table = make_table(table_uri, appends=4, partition_columns=("region", "day"))
    before = multiset(deltars_rows(table_uri))

    def selected(a) -> bool:
        return a.partition_values["region"] == "eu" and a.partition_values["day"] >= "2024-01-02"

    old = table.snapshot()
    outside = sorted(a.path for a in old.add_actions() if not selected(a))
    inside_partitions = {tuple(sorted(a.partition_values.items())) for a in old.add_actions() if selected(a)}
    metrics = compact(table, spark, where="region = 'eu' AND day >= '2024-01-02'", bounds=RewriteBounds(batch_size=1),
                      min_input_files=2)
    assert metrics.num_bins == len(inside_partitions) >= 2
    assert metrics.num_batches == metrics.batches_committed == len(metrics.versions) == metrics.num_bins
    snap = table.snapshot()
    assert sorted(a.path for a in snap.add_actions() if not selected(a)) == outside
    assert len([a for a in snap.add_actions() if selected(a)]) == len(inside_partitions)
    assert "region = 'eu'" in commit_info(table, metrics.versions[0])["operationParameters"]["predicate"]
    assert multiset(deltars_rows(table_uri)) == before


def test_deltars_table(spark, table_uri):
    make_deltars_table(table_uri, appends=5)
    table = DeltaTable(table_uri)
    before = multiset(deltars_rows(table_uri))
    metrics = compact(table, spark)
    assert metrics.num_removed_files == 10 and metrics.num_added_files == 2
    check_rewrite_commit(table, metrics.version, removed=10, added=2)
    assert multiset(deltars_rows(table_uri)) == before
    assert_versions_readable(table_uri, range(metrics.version + 1))


def test_unpartitioned_table(spark, table_uri):
    table = make_table(table_uri, appends=5, partition_columns=())
    before = multiset(deltars_rows(table_uri))
    metrics = compact(table, spark, target_size=1 << 20)
    assert (metrics.num_removed_files, metrics.num_added_files) == (5, 1)
    assert multiset(deltars_rows(table_uri)) == before


def test_column_mapping_keeps_physical_names(spark, table_uri):
    table = make_table(table_uri, appends=3, properties={"delta.columnMapping.mode": "name"})
    snap = table.snapshot()
    physical = {f.name: f.physical_name for f in snap.schema.fields}
    assert physical["x"] != "x"
    with rows_kept(table_uri):
        metrics = compact(table, spark, min_input_files=3)
    assert metrics.num_added_files == 2
    snap = table.snapshot()
    for add in snap.add_actions():
        assert add.partition_values.keys() == {physical["region"]}
        names = pq.read_schema(table.storage.local_path(url_decode_path(add.path))).names
        assert set(names) == {physical[c] for c in ("id", "x", "name", "day", "ts")}
        assert set(json.loads(add.stats)["minValues"]) <= set(names)


@pytest.mark.s3
def test_on_s3(spark, s3_table_uri, s3_storage_options, deltalake_s3_options):
    table = make_table(s3_table_uri, appends=4, storage_options=s3_storage_options)
    before = multiset(deltars_rows(s3_table_uri, storage_options=deltalake_s3_options))
    metrics = compact(table, spark, min_input_files=4)
    assert (metrics.num_removed_files, metrics.num_added_files) == (8, 2)
    check_rewrite_commit(table, metrics.version, removed=8, added=2)
    assert multiset(deltars_rows(s3_table_uri, storage_options=deltalake_s3_options)) == before
    assert_versions_readable(s3_table_uri, range(metrics.version + 1), storage_options=deltalake_s3_options)


def test_compaction_ignores_an_unreconciled_log_compaction_file(spark, table_uri):
    """A log compaction file whose commits were concatenated newest first adds back files that a
    later commit removed; read as the table's state it would make compaction rewrite deleted
    rows into new live files. Ignored, the commits are read and no row comes back."""
    import os

    import polars_deltalake

    from delta_core.write.table_writes import delete_files

    table = make_table(table_uri, appends=4)
    paths = sorted(table.snapshot().file_paths)
    delete_files(table, [paths[0], paths[-1]])  # one file of each partition
    table = DeltaTable(table_uri)
    latest = table.latest_version()
    log_dir = os.path.join(table_uri, "_delta_log")
    lines = []
    for v in range(latest, 0, -1):  # newest first: each remove precedes the add it undoes
        with open(os.path.join(log_dir, f"{v:020d}.json")) as fh:
            lines += [ln for ln in fh.read().splitlines() if '"add"' in ln[:8] or '"remove"' in ln[:12]]
    with open(os.path.join(log_dir, f"{1:020d}.{latest:020d}.compacted.json"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    before = multiset(deltars_rows(table_uri))
    assert table.snapshot().num_files == 8 - 2
    metrics = compact(table, spark, min_input_files=3)
    assert metrics.num_removed_files == 6 and metrics.num_added_files == 2
    assert multiset(deltars_rows(table_uri)) == before
    kernel = polars_deltalake.read_delta(table_uri).to_arrow()
    assert multiset(kernel.select(deltars_rows(table_uri).column_names)) == before
