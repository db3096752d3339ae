"""Purge (Delta's ``REORG TABLE ... APPLY (PURGE)``) executed on Spark.

``plan_purge`` (pure, in ``purge_plan``) selects the files: those whose deletion vector deletes
rows and, under column mapping, those that still hold a dropped column (their footers are read
first, by ``dropped_columns``, and only when the schema says a column can have been dropped).
``purge`` pairs that plan with the bin-rewrite executor (``spark.bin_rewrite``; its reader
applies the file's deletion vector and reads only the table's columns), one task per file, and
runs it through the rewrite driver (``spark.driver``) as Delta Spark commits a purge: operation
``REORG``, parameters ``predicate`` and ``applyPurge: true``, OPTIMIZE's metrics,
``dataChange=false``.

A plan with no work commits nothing and starts no Spark. A file missing from storage, or a
deletion vector that cannot be read, fails its batch before the commit; the batch's new files
are deleted, so nothing is written.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from delta_core.maintenance.compaction_plan import check_deleted_rows_ratio
from delta_core.maintenance.dropped_columns import files_with_dropped_columns
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import DEFAULT_BOUNDS, RewriteBounds
from delta_core.maintenance.purge_plan import (
    PURGE_COLUMNS,
    REORG_DELETED_ROWS_RATIO,
    PurgePlan,
    plan_purge,
    select_files,
)
from delta_core.maintenance.rewrite_metrics import PurgeMetrics
from delta_core.maintenance.spark.bin_rewrite import BinRewrite
from delta_core.maintenance.spark.driver import Rewrite, SparkSource, gated_snapshot, run_rewrite
from delta_core.model.delta_operations import REORG

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

__all__ = ["PurgeMetrics", "PurgePlan", "plan_purge", "purge"]


def purge(
    table: DeltaTable,
    spark: SparkSource,
    *,
    where: str | None = None,
    max_deleted_rows_ratio: float | None = None,
    bounds: RewriteBounds = DEFAULT_BOUNDS,
    dry_run: bool = False,
) -> PurgeMetrics:
    """Purge ``table`` on ``spark`` (a SparkSession, or a factory called only when there is
    something to rewrite); ``max_deleted_rows_ratio`` None: every file with a deleted row (REORG)."""
    watch = Stopwatch()
    if max_deleted_rows_ratio is None:
        max_deleted_rows_ratio = REORG_DELETED_ROWS_RATIO
    check_deleted_rows_ratio(max_deleted_rows_ratio)
    snapshot = gated_snapshot(table)
    candidates, _ = select_files(snapshot, where, PURGE_COLUMNS)
    dropped = files_with_dropped_columns(table.storage, snapshot.metadata, candidates.column("path").to_pylist())
    plan = plan_purge(snapshot, where=where, max_deleted_rows_ratio=max_deleted_rows_ratio,
                      dropped_column_paths=dropped)
    log.info("table=%s version=%d purge plan: %d files (%d bytes; %d with deletion vectors, %d with dropped "
             "columns)", table.uri, snapshot.version, plan.num_input_files, plan.input_bytes,
             plan.files_with_deletion_vectors, plan.files_with_dropped_columns)
    run = run_rewrite(table, spark, snapshot, Rewrite(plan, BinRewrite(), "purge", operation=REORG),
                      bounds=bounds, watch=watch, dry_run=dry_run)
    return run.metrics(
        PurgeMetrics, predicate=plan.predicate, max_deleted_rows_ratio=plan.max_deleted_rows_ratio,
        files_considered=plan.files_considered, files_with_deletion_vectors=plan.files_with_deletion_vectors,
        files_with_dropped_columns=plan.files_with_dropped_columns, deleted_rows=plan.deleted_rows)
