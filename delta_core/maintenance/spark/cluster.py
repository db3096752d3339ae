"""Liquid clustering executed on Spark (Delta Spark's ``OPTIMIZE`` on a clustered table).

``cluster`` sets the clustering columns first when asked (``cluster_by``), then pairs
``plan_clustering`` (incremental by default, every file with ``full``) with the curve executor's
liquid form (``spark.curve_rewrite``: rows along a Hilbert curve over the clustering columns,
every new file tagged ``clusteringProvider: "liquid"`` and with the run's ZCube) and runs them
through the rewrite driver (``spark.driver``). Every new file has full stats. The commit is an
``OPTIMIZE`` with ``clusterBy`` and ``isFull`` in its parameters, under the rewrite rules of
``rewrite_commit``. The point-query skipped-file ratio on the clustering columns is measured
before and after, from the log: the clustering columns' statistics are parsed once for the
plan and that ratio (``clustering_bounds``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delta_core.errors import ConfigError
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.cluster_plan import (
    ClusterPlan,
    clustering_bounds,
    plan_clustering,
    table_clustering_columns,
)
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import DEFAULT_BOUNDS, RewriteBounds
from delta_core.maintenance.rewrite_metrics import ClusterMetrics
from delta_core.maintenance.spark.curve_rewrite import DEFAULT_SAMPLE_ROWS, CurveRewrite
from delta_core.maintenance.spark.driver import Rewrite, SparkSource, gated_snapshot, run_rewrite

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

__all__ = ["ClusterMetrics", "ClusterPlan", "cluster", "plan_clustering"]


def cluster(
    table: DeltaTable,
    spark: SparkSource,
    *,
    columns: Sequence[str] | None = None,
    full: bool = False,
    target_size: int | None = None,
    bounds: RewriteBounds = DEFAULT_BOUNDS,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    dry_run: bool = False,
) -> ClusterMetrics:
    """Cluster ``table`` on its clustering columns: its unclustered files (and the few clustered
    ones ``plan_clustering`` merges with them), or every file with ``full``. ``columns``, when
    given, are made the clustering columns first (``cluster_by``; no commit when they already are).

    ``spark`` is a SparkSession, or a factory called only when there is something to rewrite.
    """
    watch = Stopwatch()
    if dry_run:  # commits nothing, CLUSTER BY included: plan on the table's own columns
        snapshot = gated_snapshot(table)
        if columns and list(columns) != [c.name for c in table_clustering_columns(snapshot)]:
            raise ConfigError(f"a dry run commits nothing, so it cannot plan on clustering columns the table does not "
                              f"have yet ({', '.join(columns)}); set them with delta-core cluster-by first, or dry-run "
                              "without --columns", path=table.uri, version=snapshot.version)
        cluster_by_version = None
    else:
        cluster_by_version = cluster_by(table, columns).version if columns else None
        snapshot = gated_snapshot(table)
    ranges = clustering_bounds(snapshot)  # for the plan's merge rule and the skipped-file ratio alike
    plan = plan_clustering(snapshot, full=full, target_size=target_size, bounds=ranges)
    log.info("table=%s version=%d clustering on %s%s: %d unclustered file(s), %d clustered merged, %d kept",
             table.uri, snapshot.version, ",".join(plan.names), " (full)" if full else "", plan.unclustered_files,
             plan.clustered_files_rewritten, plan.clustered_files_kept)
    executor = CurveRewrite.liquid(plan, sample_rows=sample_rows)
    run = run_rewrite(table, spark, snapshot, Rewrite(plan, executor, "clustering",
                                                      skipping_columns=plan.rewrite.columns, skipping_bounds=ranges),
                      bounds=bounds, watch=watch, dry_run=dry_run)
    return ClusterMetrics.of(plan, run, zcube_id=executor.zcube_id, cluster_by_version=cluster_by_version)
