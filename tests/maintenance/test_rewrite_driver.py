"""The rewrite driver's shape: every rewrite (compact, zorder, cluster, purge) reports the shared
``RewriteMetrics`` fields, filled in one place, plus its own, under the ``to_dict`` keys the CLI's
``--json`` output has always had; a plan without work starts no Spark. Run on real tables where
each operation finds nothing to do, so Spark is never asked for."""

from __future__ import annotations

import dataclasses
import pathlib

from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.rewrite_metrics import (
    ClusterMetrics,
    CompactionMetrics,
    PurgeMetrics,
    RewriteMetrics,
    ZOrderMetrics,
)
from delta_core.maintenance.spark.cluster import cluster
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.purge import purge
from delta_core.maintenance.spark.zorder import zorder
from tests.maintenance.conftest import make_table

SHARED = {"version", "versions", "read_version", "num_batches", "batches_committed", "batches_aborted",
          "num_removed_files", "num_added_files", "removed_bytes", "added_bytes", "num_deletion_vectors_removed",
          "duration_seconds", "batches_retried", "abandoned_reasons", "groups_left", "files_left", "bytes_left",
          "stopped_by", "partitions_skipped_busy", "files_skipped_busy", "dry_run"}
# Each record's keys besides the shared ones, as the CLI printed them before the driver existed
# (ClusterMetrics has num_deletion_vectors_removed now, like the others).
OWN = {
    CompactionMetrics: {"target_size", "min_file_size", "predicate", "files_considered", "partitions_considered",
                        "partitions_compacted", "num_bins", "max_deleted_rows_ratio"},
    ZOrderMetrics: {"columns", "curve", "target_size", "predicate", "partitions_optimized", "files_considered",
                    "skipped_file_ratio_before", "skipped_file_ratio_after"},
    ClusterMetrics: {"cluster_by_version", "columns", "full", "target_size", "files_considered",
                     "unclustered_files", "clustered_files_rewritten", "clustered_files_kept",
                     "other_provider_files", "zcube_id", "skipped_file_ratio_before", "skipped_file_ratio_after"},
    PurgeMetrics: {"predicate", "max_deleted_rows_ratio", "files_considered", "files_with_deletion_vectors",
                   "files_with_dropped_columns", "deleted_rows"},
}


def no_spark():
    raise AssertionError("a rewrite with nothing to do asked for Spark")


def idle_rewrites(root: pathlib.Path) -> dict[type, tuple[RewriteMetrics, DeltaTable]]:
    """Each rewrite run on a real table where it has nothing to rewrite, with its table."""
    single = make_table(str(root / "single"), appends=1)  # one file per partition: no bin, no vector
    empty = make_table(str(root / "empty"), appends=0, partition_columns=())
    return {
        CompactionMetrics: (compact(single, no_spark), single),
        ZOrderMetrics: (zorder(single, no_spark, ["id", "x"], where="region = 'nowhere'"), single),
        PurgeMetrics: (purge(single, no_spark), single),
        # CLUSTER BY commits; the clustering run itself finds no file
        ClusterMetrics: (cluster(empty, no_spark, columns=["id"]), empty),
    }


def test_every_rewrite_reports_the_shared_fields_and_only_its_own(tmp_path):
    shared = {f.name for f in dataclasses.fields(RewriteMetrics)}
    assert shared == SHARED
    for record, (metrics, table) in idle_rewrites(tmp_path).items():
        assert type(metrics) is record and isinstance(metrics, RewriteMetrics)
        assert set(metrics.to_dict()) == SHARED | OWN[record], record.__name__
        assert metrics.read_version == table.snapshot().version
        assert (metrics.versions, metrics.num_batches, metrics.batches_committed, metrics.num_removed_files,
                metrics.num_added_files, metrics.removed_bytes, metrics.added_bytes) == ((), 0, 0, 0, 0, 0, 0)
        assert metrics.duration_seconds >= 0


def test_a_run_that_only_sets_clustering_columns_reports_that_commit(tmp_path):
    table = make_table(str(tmp_path / "t"), appends=0, partition_columns=())
    metrics = cluster(table, no_spark, columns=["x"])
    assert metrics.cluster_by_version == metrics.version == table.latest_version() == 1
    assert metrics.versions == () and metrics.zcube_id is None
    again = cluster_by(table, ["x"])  # already the columns: nothing committed
    assert again.version is None and table.latest_version() == 1
