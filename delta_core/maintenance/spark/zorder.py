"""Z-order (and Hilbert) clustering executed on Spark.

``zorder`` pairs ``plan_zorder`` (pure, in ``zorder_plan``: every file of the selected
partitions, the validated columns, the output file count) with the curve executor
(``spark.curve_rewrite``: sample, key, shuffle, write) and runs them through the rewrite driver
(``spark.driver``): ``OPTIMIZE`` commits with ``zOrderBy`` in ``operationParameters``,
``dataChange=false``, under the same conflict rules and proof of kept data as compaction
(``rewrite_commit``). A clustered table is refused, as Delta Spark refuses it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delta_core.errors import UnsupportedTableForOperationError
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import DEFAULT_BOUNDS, RewriteBounds
from delta_core.maintenance.rewrite_metrics import ZOrderMetrics
from delta_core.maintenance.spark.curve_rewrite import DEFAULT_SAMPLE_ROWS, CurveRewrite
from delta_core.maintenance.spark.driver import Rewrite, SparkSource, gated_snapshot, run_rewrite
from delta_core.maintenance.zorder_plan import ZOrderPlan, plan_zorder
from delta_core.model.clustering import is_clustered_table

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

__all__ = ["ZOrderMetrics", "ZOrderPlan", "plan_zorder", "zorder"]


def zorder(
    table: DeltaTable,
    spark: SparkSource,
    columns: Sequence[str],
    *,
    curve: str = "zorder",
    where: str | None = None,
    target_size: int | None = None,
    bounds: RewriteBounds = DEFAULT_BOUNDS,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    dry_run: bool = False,
) -> ZOrderMetrics:
    """Cluster ``table``'s selected partitions along a Z-order (or Hilbert) curve over ``columns``.

    ``spark`` is a SparkSession, or a factory called only when there is something to rewrite.
    """
    watch = Stopwatch()
    snapshot = gated_snapshot(table)
    if is_clustered_table(snapshot.protocol):
        # Delta Spark refuses OPTIMIZE ZORDER BY on a clustered table too: Z-ordering would undo
        # the clustering that later incremental runs build on.
        raise UnsupportedTableForOperationError(
            "the table is clustered (liquid clustering), so it cannot be Z-ordered; cluster it with "
            "delta-core compact (or delta-core cluster), or change its clustering columns with "
            "delta-core cluster-by TABLE --columns a,b", path=table.uri, version=snapshot.version)
    plan = plan_zorder(snapshot, columns, curve=curve, where=where, target_size=target_size)
    log.info("table=%s version=%d %s on %s: %d files in %d partitions", table.uri, snapshot.version, curve,
             ",".join(plan.columns), plan.num_input_files, len(plan.partitions))
    run = run_rewrite(table, spark, snapshot, Rewrite(plan, CurveRewrite(plan, sample_rows), curve,
                                                     skipping_columns=plan.columns),
                      bounds=bounds, watch=watch, dry_run=dry_run)
    return run.metrics(
        ZOrderMetrics, columns=plan.columns, curve=plan.curve, target_size=plan.target_size, predicate=plan.predicate,
        partitions_optimized=len(plan.partitions), files_considered=plan.files_considered,
        skipped_file_ratio_before=run.skipped_file_ratio_before, skipped_file_ratio_after=run.skipped_file_ratio_after)
