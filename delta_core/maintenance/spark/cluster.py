"""Liquid clustering executed on Spark (Delta Spark's ``OPTIMIZE`` on a clustered table).

``plan_clustering`` picks the files (incremental by default, every file with ``full``); the
Z-order executor rewrites them along a Hilbert curve over the clustering columns (sample,
key, shuffle, write: ``spark.zorder``), and every new file is tagged before the commit as
PROTOCOL.md "Clustered Table" asks (``clusteringProvider: "liquid"``) and as Delta Spark groups
its own clustered files (``ZCUBE_ID``, one UUID per run; ``ZCUBE_ZORDER_BY``, the columns), so
Delta Spark's next OPTIMIZE counts them as clustered. Every new file has full stats. The commit
is an ``OPTIMIZE`` with ``clusterBy`` and ``isFull`` in its parameters, under the rewrite rules
of ``rewrite_commit``. The point-query skipped-file ratio on the clustering columns is measured
before and after, from the log, as for Z-order.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.cluster_plan import ClusterPlan, plan_clustering
from delta_core.maintenance.file_groups import DEFAULT_BATCH_BYTES
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.rewrite_commit import RewriteOutput, run_rewrite_batches
from delta_core.maintenance.skipping import probe_values, skipped_file_ratio
from delta_core.maintenance.spark.tasks import resolve_spark, settled_on_failure
from delta_core.maintenance.spark.zorder import DEFAULT_SAMPLE_ROWS, _run_batch
from delta_core.maintenance.zorder_plan import PartitionFiles
from delta_core.model.clustering import LIQUID_PROVIDER, zcube_tags
from delta_core.model.table_features import check_write_supported
from delta_core.write.operation_records import OptimizeScan
from delta_core.write.void_columns import check_void_writable

log = logging.getLogger(__name__)

__all__ = ["ClusterMetrics", "ClusterPlan", "cluster", "plan_clustering"]


@dataclass(frozen=True, slots=True)
class ClusterMetrics(MetricsRecord):
    version: int | None
    versions: tuple[int, ...]  # the OPTIMIZE commits
    cluster_by_version: int | None  # the CLUSTER BY commit that set the columns first, if any
    read_version: int
    columns: tuple[str, ...]
    full: bool
    target_size: int
    files_considered: int
    unclustered_files: int
    clustered_files_rewritten: int
    clustered_files_kept: int
    other_provider_files: int
    zcube_id: str | None  # the ZCube the new files form (None: nothing written)
    num_batches: int
    batches_committed: int
    batches_aborted: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    skipped_file_ratio_before: float | None
    skipped_file_ratio_after: float | None
    duration_seconds: float


def cluster(
    table: Any,
    spark: Any,
    *,
    columns: Sequence[str] | None = None,
    full: bool = False,
    target_size: int | None = None,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
) -> ClusterMetrics:
    """Cluster ``table`` on its clustering columns: its unclustered files (and the few clustered
    ones ``plan_clustering`` merges with them), or every file with ``full``. ``columns``, when
    given, are made the clustering columns first (``cluster_by``; no commit when they already are).

    ``spark`` is a SparkSession, or a factory called only when there is something to rewrite.
    """
    watch = Stopwatch()
    cluster_by_version = cluster_by(table, columns).version if columns else None
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    check_void_writable(snapshot.schema, partition_columns=tuple(snapshot.partition_columns), path=table.uri,
                        version=snapshot.version)
    plan = plan_clustering(snapshot, full=full, target_size=target_size)
    rewrite_plan = plan.rewrite
    batches = rewrite_plan.batches(batch_size_bytes)
    probes = probe_values(snapshot, rewrite_plan.columns)
    ratio_before = skipped_file_ratio(snapshot, probes)
    log.info("table=%s version=%d clustering on %s%s: %d unclustered file(s), %d clustered merged, %d kept",
             table.uri, snapshot.version, ",".join(plan.names), " (full)" if full else "", plan.unclustered_files,
             plan.clustered_files_rewritten, plan.clustered_files_kept)
    cube_id = str(uuid.uuid4()) if batches else None
    tags = zcube_tags(cube_id, plan.columns) if cube_id is not None else {}
    if batches:
        spark = resolve_spark(spark)

    def rewrite(current: Any, batch: Sequence[PartitionFiles], label: str, outputs: list[str]) -> RewriteOutput:
        with settled_on_failure(spark):  # no task still writes once the batch's files are deleted
            out = _run_batch(spark, table, current, rewrite_plan, batch, sample_rows=sample_rows, label=label,
                             outputs=outputs)
        tagged = tuple(replace(a, clustering_provider=LIQUID_PROVIDER, tags={**(a.tags or {}), **tags})
                       for a in out.adds)
        return RewriteOutput(tagged, out.input_summaries, tags=out.tags)

    tally = run_rewrite_batches(
        table, snapshot, batches, rewrite=rewrite, label="clustering",
        operation_parameters=plan.operation_parameters(),
        scan=OptimizeScan(total_considered_files=rewrite_plan.files_considered,
                          total_files_skipped=rewrite_plan.files_considered - rewrite_plan.num_input_files,
                          preserve_insertion_order=False),
    )
    ratio_after = skipped_file_ratio(table.snapshot(), probes) if tally.versions else ratio_before
    return ClusterMetrics(
        version=tally.versions[-1] if tally.versions else cluster_by_version, versions=tally.versions,
        cluster_by_version=cluster_by_version,
        read_version=snapshot.version, columns=plan.names, full=full, target_size=rewrite_plan.target_size,
        files_considered=rewrite_plan.files_considered, unclustered_files=plan.unclustered_files,
        clustered_files_rewritten=plan.clustered_files_rewritten, clustered_files_kept=plan.clustered_files_kept,
        other_provider_files=plan.other_provider_files, zcube_id=cube_id if tally.versions else None,
        num_batches=len(batches), batches_committed=len(tally.versions), batches_aborted=tally.batches_aborted,
        num_removed_files=tally.num_removed_files, num_added_files=tally.num_added_files,
        removed_bytes=tally.removed_bytes, added_bytes=tally.added_bytes,
        skipped_file_ratio_before=ratio_before, skipped_file_ratio_after=ratio_after,
        duration_seconds=watch.seconds(),
    )
