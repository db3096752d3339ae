"""Compaction (Delta's OPTIMIZE bin-packing) executed on Spark.

``plan_compaction`` (pure, in ``compaction_plan``) decides the bins; ``compact`` runs them:
each bin is one Spark task that reads its files with pyarrow over the table's storage and
writes one new file (full stats, same schema, physical names and partition values) — rows
never pass through the JVM. Bins are committed in batches (``batch_size_bytes`` of input per
commit), so a failure loses at most the batch in flight; before each batch the snapshot is
refreshed and bins whose inputs were removed meanwhile are dropped. Each task applies its
inputs' deletion vectors as the batch's snapshot has them (PROTOCOL.md "Deletion Vectors"):
deleted rows are not written, and the new file has no vector and stats of its live rows only.
Commits follow ``rewrite_commit``: ``OPTIMIZE`` with ``dataChange=false``, retried only while
every input is still live.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from delta_core.errors import ConfigError
from delta_core.maintenance.cluster_plan import table_clustering_columns
from delta_core.maintenance.compaction_plan import Bin, CompactionPlan, plan_compaction
from delta_core.maintenance.data_io import rewrite_files, rewrite_output_key
from delta_core.maintenance.file_groups import DEFAULT_BATCH_BYTES, FileGroup
from delta_core.maintenance.input_summary import SummarisingReader, paths_to_summarise, split_results
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO
from delta_core.maintenance.rewrite_commit import RewriteOutput, deletion_vectors, run_rewrite_batches
from delta_core.maintenance.spark.cluster import ClusterMetrics, cluster
from delta_core.maintenance.spark.tasks import (
    add_from_json,
    add_to_json,
    resolve_spark,
    run_tasks,
    settled_on_failure,
)
from delta_core.model.actions import DeletionVectorDescriptor, Metadata
from delta_core.model.clustering import is_clustered_table
from delta_core.model.table_features import check_write_supported
from delta_core.storage.base import Storage
from delta_core.write.operation_records import OptimizeScan
from delta_core.write.row_tracking import FileRowIds, input_row_ids, preserved_tags
from delta_core.write.void_columns import check_void_writable

log = logging.getLogger(__name__)

__all__ = ["CompactBinTask", "CompactionMetrics", "CompactionPlan", "compact", "plan_compaction"]


@dataclass(frozen=True, slots=True)
class CompactBinTask:
    """What one Spark task needs to rewrite one bin (pickled to the executor): the table's
    ``storage`` (it carries its own options, nothing more is added), its ``metadata``, the
    bin's input ``paths`` (as in the log) with their ``sizes``, the bin's ``partition_values``,
    the output ``key`` chosen on the driver, the inputs to ``summarise`` for the proof, the
    ``deletion_vectors`` of the inputs (aligned with ``paths``; ``None``: no vector), and
    ``row_ids``: the inputs' ``FileRowIds`` when rows' stable ids must be kept (row tracking)."""

    storage: Storage
    metadata: Metadata
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    partition_values: Mapping[str, str | None]
    key: str
    summarise: tuple[str, ...]
    deletion_vectors: tuple[DeletionVectorDescriptor | None, ...] = ()
    row_ids: Mapping[str, FileRowIds] | None = None


@dataclass(frozen=True, slots=True)
class CompactionMetrics(MetricsRecord):
    version: int | None  # last version committed, None when nothing was committed
    versions: tuple[int, ...]
    read_version: int
    target_size: int
    min_file_size: int
    predicate: str | None
    files_considered: int
    partitions_considered: int
    partitions_compacted: int
    num_bins: int
    num_batches: int
    batches_committed: int
    batches_aborted: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    duration_seconds: float
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO
    num_deletion_vectors_removed: int = 0


def _compact_bin(task: CompactBinTask) -> list[str]:
    """Spark task: rewrite one bin into one file; returns the new ``add`` as JSON (none when
    deletion vectors deleted every row of the bin), then the summaries of the inputs in
    ``summarise`` (``InputSummary`` JSON)."""
    reader = SummarisingReader(task.storage, task.metadata, summarise=task.summarise, row_ids=task.row_ids)
    add = rewrite_files(task.storage, task.paths, metadata=task.metadata,
                        partition_values=task.partition_values, sizes=task.sizes, reader=reader,
                        key=task.key, deletion_vectors=task.deletion_vectors or None)
    return [*([add_to_json(add)] if add is not None else []), *(s.to_json() for s in reader.summaries())]


def rewrite_bins(spark: Any, table: Any, snapshot: Any, batch: Sequence[FileGroup], label: str,
                  outputs: list[str]) -> RewriteOutput:
    """One compaction batch: one Spark task per bin, each writing one file at a key chosen here
    (and recorded in ``outputs`` first, so the driver can delete them if the batch fails)."""
    summarise = paths_to_summarise(snapshot, [p for b in batch for p in b.paths])
    row_ids = input_row_ids(snapshot, [p for b in batch for p in b.paths])
    dvs = deletion_vectors(snapshot, [p for b in batch for p in b.paths])
    tasks = []
    for b in sorted(batch, key=lambda b: -b.total_size):
        key = rewrite_output_key(snapshot.metadata, b.partition_dict)
        outputs.append(key)
        tasks.append(CompactBinTask(storage=table.storage, metadata=snapshot.metadata, paths=tuple(b.paths),
                                    sizes=b.sizes, partition_values=b.partition_dict,
                                    key=key, summarise=tuple(p for p in b.paths if p in summarise),
                                    deletion_vectors=tuple(dvs.get(p) for p in b.paths),
                                    row_ids=None if row_ids is None else {p: row_ids[p] for p in b.paths}))
    results = run_tasks(spark, _compact_bin, tasks, description=label)
    adds, summaries = split_results(r for rs in results for r in rs)
    return RewriteOutput(tuple(add_from_json(a) for a in adds), tuple(summaries),
                         tags=preserved_tags(snapshot.protocol, snapshot.metadata))


def compact(
    table: Any,
    spark: Any,
    *,
    where: str | None = None,
    target_size: int | None = None,
    min_file_size: int | None = None,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    full: bool = False,
) -> CompactionMetrics | ClusterMetrics:
    """Bin-pack the small files of ``table`` (a ``delta_core.log.table.DeltaTable``) on ``spark``
    (a SparkSession, or a factory called only when there is something to compact), and rewrite
    the files whose deletion vectors delete more than ``max_deleted_rows_ratio`` of their rows.

    On a clustered table with clustering columns this clusters instead, as Delta Spark's
    ``OPTIMIZE`` does (``spark.cluster.cluster``; ``full`` reclusters every file, ``min_file_size``
    does not apply, and a ``where`` predicate is refused: a clustered table has no partitions).
    """
    watch = Stopwatch()
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    if is_clustered_table(snapshot.protocol):
        if where is not None:
            raise ConfigError("a clustered table has no partitions to select with --where; compact it whole "
                              "(it is clustered incrementally)", path=table.uri, version=snapshot.version)
        if table_clustering_columns(snapshot):
            return cluster(table, spark, full=full, target_size=target_size, batch_size_bytes=batch_size_bytes)
    if full:
        raise ConfigError("--full reclusters a clustered table, and this table has no clustering columns; "
                          "set them with delta-core cluster-by TABLE --columns a,b", path=table.uri,
                          version=snapshot.version)
    check_void_writable(snapshot.schema, partition_columns=tuple(snapshot.partition_columns), path=table.uri,
                        version=snapshot.version)
    plan = plan_compaction(snapshot, target_size=target_size, min_file_size=min_file_size, where=where,
                           max_deleted_rows_ratio=max_deleted_rows_ratio)
    log.info("table=%s version=%d compaction plan: %d bins over %d files (%d bytes) in %d partitions",
             table.uri, snapshot.version, len(plan.bins), plan.num_input_files, plan.input_bytes,
             plan.partitions_compacted)
    batches = plan.batches(batch_size_bytes)
    if batches:
        spark = resolve_spark(spark)

    def rewrite(current: Any, batch: Sequence[Bin], label: str, outputs: list[str]) -> RewriteOutput:
        with settled_on_failure(spark):  # no task still writes once the batch's files are deleted
            return rewrite_bins(spark, table, current, batch, label, outputs)

    tally = run_rewrite_batches(
        table, snapshot, batches, rewrite=rewrite, label="compaction",
        operation_parameters=plan.operation_parameters(),
        scan=OptimizeScan(total_considered_files=plan.files_considered,
                          total_files_skipped=plan.files_considered - plan.num_input_files,
                          preserve_insertion_order=True),
    )
    return CompactionMetrics(
        version=tally.versions[-1] if tally.versions else None,
        versions=tally.versions,
        read_version=snapshot.version,
        target_size=plan.target_size,
        min_file_size=plan.min_file_size,
        predicate=plan.predicate,
        files_considered=plan.files_considered,
        partitions_considered=plan.partitions_considered,
        partitions_compacted=plan.partitions_compacted,
        num_bins=len(plan.bins),
        num_batches=len(batches),
        batches_committed=len(tally.versions),
        batches_aborted=tally.batches_aborted,
        num_removed_files=tally.num_removed_files,
        num_added_files=tally.num_added_files,
        removed_bytes=tally.removed_bytes,
        added_bytes=tally.added_bytes,
        duration_seconds=watch.seconds(),
        max_deleted_rows_ratio=plan.max_deleted_rows_ratio,
        num_deletion_vectors_removed=tally.num_deletion_vectors_removed,
    )
