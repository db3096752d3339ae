"""Compaction (Delta's OPTIMIZE bin-packing) executed on Spark.

``compact`` pairs ``plan_compaction`` (pure, in ``compaction_plan``: which small files, and
which files with too many deleted rows, are packed together) with the bin-rewrite executor
(``spark.bin_rewrite``: each bin is one Spark task writing one file) and runs them through the
rewrite driver (``spark.driver``): bins commit in batches (``bounds.batch_size`` of input per
commit), so a failure loses at most the batch in flight; later batches keep only bins whose
inputs are still live; every commit is an ``OPTIMIZE`` with ``dataChange=false``, proven to keep
the data. Each task applies its inputs' deletion vectors as the batch's snapshot has them.

On a clustered table with clustering columns, OPTIMIZE clusters instead, as Delta Spark's does
(its ``OptimizeTableStrategy``): ``compact`` then pairs the clustering plan with the curve
executor's liquid form, exactly as ``cluster`` does, and returns ``ClusterMetrics``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from delta_core.errors import ConfigError
from delta_core.maintenance.cluster_plan import clustering_bounds, plan_clustering, table_clustering_columns
from delta_core.maintenance.compaction_plan import CompactionPlan, plan_compaction
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import (
    BIN_PACK,
    DEFAULT_BOUNDS,
    DEFAULT_MAX_DELETED_ROWS_RATIO,
    EXPLICIT_MIN_INPUT_FILES,
    RewriteBounds,
)
from delta_core.maintenance.rewrite_metrics import ClusterMetrics, CompactionMetrics
from delta_core.maintenance.spark.bin_rewrite import BinRewrite
from delta_core.maintenance.spark.curve_rewrite import CurveRewrite
from delta_core.maintenance.spark.driver import Rewrite, SparkSource, gated_snapshot, run_rewrite
from delta_core.model.clustering import is_clustered_table

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

__all__ = ["ClusterMetrics", "CompactionMetrics", "CompactionPlan", "compact", "plan_compaction"]


def compact(
    table: DeltaTable,
    spark: SparkSource,
    *,
    where: str | None = None,
    target_size: int | None = None,
    min_file_size: int | None = None,
    bounds: RewriteBounds = DEFAULT_BOUNDS,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    min_input_files: int | None = None,
    selection: str | None = None,
    full: bool = False,
    dry_run: bool = False,
) -> CompactionMetrics | ClusterMetrics:
    """Bin-pack the small files of ``table`` on ``spark`` (a SparkSession, or a factory called
    only when there is something to compact), and rewrite the files whose deletion vectors
    delete more than ``max_deleted_rows_ratio`` of their rows. ``selection`` (None: ``BIN_PACK``,
    as OPTIMIZE) says which bins are rewritten; a bin of fewer than ``min_input_files`` (None:
    ``EXPLICIT_MIN_INPUT_FILES``, any two) waits unless it makes a file that is no longer small
    (``compaction_plan``). Automation passes ``AUTOMATED`` and the policy's count
    (``config.automated_runs``).

    On a clustered table with clustering columns this clusters instead (the module docstring;
    ``full`` reclusters every file, ``min_file_size`` does not apply, and a ``where`` predicate
    is refused: a clustered table has no partitions). ``dry_run``: the plan only (``spark.driver``).
    """
    watch = Stopwatch()
    snapshot = gated_snapshot(table)
    if is_clustered_table(snapshot.protocol):
        if where is not None:
            raise ConfigError("a clustered table has no partitions to select with --where; compact it whole "
                              "(it is clustered incrementally)", path=table.uri, version=snapshot.version)
        if table_clustering_columns(snapshot):
            ranges = clustering_bounds(snapshot)  # parsed once: the plan's merge rule and the skipped-file ratio
            clustering = plan_clustering(snapshot, full=full, target_size=target_size, bounds=ranges)
            executor = CurveRewrite.liquid(clustering)
            run = run_rewrite(table, spark, snapshot,
                              Rewrite(clustering, executor, "clustering", skipping_columns=clustering.rewrite.columns,
                                      skipping_bounds=ranges),
                              bounds=bounds, watch=watch, dry_run=dry_run)
            return ClusterMetrics.of(clustering, run, zcube_id=executor.zcube_id)
    if full:
        raise ConfigError("--full reclusters a clustered table, and this table has no clustering columns; "
                          "set them with delta-core cluster-by TABLE --columns a,b", path=table.uri,
                          version=snapshot.version)
    plan = plan_compaction(snapshot, target_size=target_size, min_file_size=min_file_size, where=where,
                           max_deleted_rows_ratio=max_deleted_rows_ratio,
                           min_input_files=EXPLICIT_MIN_INPUT_FILES if min_input_files is None else min_input_files,
                           selection=BIN_PACK if selection is None else selection)
    log.info("table=%s version=%d compaction plan: %d bins over %d files (%d bytes) in %d partitions",
             table.uri, snapshot.version, len(plan.bins), plan.num_input_files, plan.input_bytes,
             plan.partitions_compacted)
    run = run_rewrite(table, spark, snapshot, Rewrite(plan, BinRewrite(), "compaction"),
                      bounds=bounds, watch=watch, dry_run=dry_run)
    return run.metrics(
        CompactionMetrics, target_size=plan.target_size, min_file_size=plan.min_file_size, predicate=plan.predicate,
        files_considered=plan.files_considered, partitions_considered=plan.partitions_considered,
        partitions_compacted=plan.partitions_compacted, num_bins=len(plan.bins),
        max_deleted_rows_ratio=plan.max_deleted_rows_ratio)
