"""Purge (Delta's ``REORG TABLE ... APPLY (PURGE)``) executed on Spark.

``plan_purge`` (pure, in ``purge_plan``) selects the files: those whose deletion vector deletes
rows and, under column mapping, those that still hold a dropped column (their footers are read
first, by ``dropped_columns``, and only when the schema says a column can have been dropped).
``purge`` rewrites each selected file into one new file without the deleted rows and without
the dropped columns: the compaction tasks do it (``spark.compaction``; their reader applies the
file's deletion vector and reads only the table's columns), one task per file, and the batches
commit through ``rewrite_commit.run_rewrite_batches`` as Delta Spark does: operation ``REORG``,
parameters ``predicate`` and ``applyPurge: true``, OPTIMIZE's metrics, ``dataChange=false``.

A plan with no work commits nothing and starts no Spark. A file missing from storage, or a
deletion vector that cannot be read, fails its batch before the commit; the batch's new files
are deleted, so nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from delta_core.maintenance.compaction_plan import check_deleted_rows_ratio
from delta_core.maintenance.dropped_columns import files_with_dropped_columns
from delta_core.maintenance.file_groups import DEFAULT_BATCH_BYTES
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.purge_plan import PurgePlan, plan_purge, select_files
from delta_core.maintenance.rewrite_commit import RewriteOutput, run_rewrite_batches
from delta_core.maintenance.spark.compaction import rewrite_bins
from delta_core.maintenance.spark.tasks import resolve_spark, settled_on_failure
from delta_core.model.delta_operations import REORG
from delta_core.model.table_features import check_write_supported
from delta_core.write.operation_records import OptimizeScan
from delta_core.write.void_columns import check_void_writable

log = logging.getLogger(__name__)

__all__ = ["PurgeMetrics", "PurgePlan", "plan_purge", "purge"]


@dataclass(frozen=True, slots=True)
class PurgeMetrics(MetricsRecord):
    version: int | None  # last version committed, None when nothing was committed
    versions: tuple[int, ...]
    read_version: int
    predicate: str | None
    max_deleted_rows_ratio: float
    files_considered: int
    files_with_deletion_vectors: int
    files_with_dropped_columns: int
    deleted_rows: int  # rows the purged deletion vectors deleted (as planned)
    num_batches: int
    batches_committed: int
    batches_aborted: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    duration_seconds: float
    num_deletion_vectors_removed: int = 0


def purge(
    table: Any,
    spark: Any,
    *,
    where: str | None = None,
    max_deleted_rows_ratio: float = 0.0,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
) -> PurgeMetrics:
    """Purge ``table`` (a ``delta_core.log.table.DeltaTable``) on ``spark`` (a SparkSession, or a
    factory called only when there is something to rewrite)."""
    watch = Stopwatch()
    check_deleted_rows_ratio(max_deleted_rows_ratio)
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    check_void_writable(snapshot.schema, partition_columns=tuple(snapshot.partition_columns), path=table.uri,
                        version=snapshot.version)
    candidates, _ = select_files(snapshot, where)
    dropped = files_with_dropped_columns(table.storage, snapshot.metadata, candidates.column("path").to_pylist())
    plan = plan_purge(snapshot, where=where, max_deleted_rows_ratio=max_deleted_rows_ratio,
                      dropped_column_paths=dropped)
    log.info("table=%s version=%d purge plan: %d files (%d bytes; %d with deletion vectors, %d with dropped "
             "columns)", table.uri, snapshot.version, plan.num_input_files, plan.input_bytes,
             plan.files_with_deletion_vectors, plan.files_with_dropped_columns)
    batches = plan.batches(batch_size_bytes)
    if batches:
        spark = resolve_spark(spark)

    def rewrite(current: Any, batch: Any, label: str, outputs: list[str]) -> RewriteOutput:
        with settled_on_failure(spark):  # no task still writes once the batch's files are deleted
            return rewrite_bins(spark, table, current, batch, label, outputs)

    tally = run_rewrite_batches(
        table, snapshot, batches, rewrite=rewrite, label="purge", operation=REORG,
        operation_parameters=plan.operation_parameters(),
        scan=OptimizeScan(total_considered_files=plan.files_considered,
                          total_files_skipped=plan.files_considered - plan.num_input_files,
                          preserve_insertion_order=True),
    )
    return PurgeMetrics(
        version=tally.versions[-1] if tally.versions else None,
        versions=tally.versions,
        read_version=snapshot.version,
        predicate=plan.predicate,
        max_deleted_rows_ratio=plan.max_deleted_rows_ratio,
        files_considered=plan.files_considered,
        files_with_deletion_vectors=plan.files_with_deletion_vectors,
        files_with_dropped_columns=plan.files_with_dropped_columns,
        deleted_rows=plan.deleted_rows,
        num_batches=len(batches),
        batches_committed=len(tally.versions),
        batches_aborted=tally.batches_aborted,
        num_removed_files=tally.num_removed_files,
        num_added_files=tally.num_added_files,
        removed_bytes=tally.removed_bytes,
        added_bytes=tally.added_bytes,
        duration_seconds=watch.seconds(),
        num_deletion_vectors_removed=tally.num_deletion_vectors_removed,
    )
