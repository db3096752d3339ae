"""Compaction (Delta's OPTIMIZE bin-packing) executed on Spark.

``plan_compaction`` (pure, in ``compaction_plan``) decides the bins; ``compact`` runs them:
each bin is one Spark task that reads its files with pyarrow over the table's storage and
writes one new file (full stats, same schema, physical names and partition values) — rows
never pass through the JVM. Bins are committed in batches (``batch_size_bytes`` of input per
commit), so a failure loses at most the batch in flight; before each batch the snapshot is
refreshed and bins whose inputs were removed meanwhile are dropped. Commits follow
``rewrite_commit``: ``OPTIMIZE`` with ``dataChange=false``, retried only while every input is
still live.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from delta_core.errors import UnsupportedTableForOperationError
from delta_core.maintenance.compaction_plan import (
    DEFAULT_BATCH_BYTES,
    Bin,
    CompactionPlan,
    plan_compaction,
)
from delta_core.maintenance.data_io import rewrite_files
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.rewrite_commit import all_live, commit_rewrite, file_size_metrics, live_subset
from delta_core.maintenance.spark_exec import add_from_json, add_to_json, resolve_spark, run_tasks
from delta_core.table_features import check_write_supported

log = logging.getLogger(__name__)

__all__ = ["CompactionMetrics", "CompactionPlan", "compact", "plan_compaction"]


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


def _compact_bin(payload: dict[str, Any]) -> list[str]:
    """Spark task: rewrite one bin into one file; returns the new ``add`` as JSON."""
    add = rewrite_files(payload["storage"], payload["paths"], metadata=payload["metadata"],
                        partition_values=payload["partition_values"], sizes=payload["sizes"])
    return [add_to_json(add)]


def compact(
    table: Any,
    spark: Any,
    *,
    where: str | None = None,
    target_size: int | None = None,
    min_file_size: int | None = None,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
) -> CompactionMetrics:
    """Bin-pack the small files of ``table`` (a ``delta_core.table.DeltaTable``) on ``spark``
    (a SparkSession, or a factory called only when there is something to compact)."""
    watch = Stopwatch()
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    plan = plan_compaction(snapshot, target_size=target_size, min_file_size=min_file_size, where=where)
    log.info("table=%s version=%d compaction plan: %d bins over %d files (%d bytes) in %d partitions",
             table.uri, snapshot.version, len(plan.bins), plan.num_input_files, plan.input_bytes,
             plan.partitions_compacted)
    batches = plan.batches(batch_size_bytes)
    if batches:
        spark = resolve_spark(spark)
    versions: list[int] = []
    removed_files = added_files = removed_bytes = added_bytes = aborted = 0
    current = snapshot
    for index, batch in enumerate(batches, 1):
        if index > 1:
            current = table.snapshot()
            live = tuple(b for b in batch if all_live(current, b.paths))
            if len(live) < len(batch):
                log.info("table=%s batch %d: %d bin(s) dropped, their inputs changed", table.uri, index,
                         len(batch) - len(live))
            batch = live
            if not batch:
                continue
        _refuse_dv_bins(current, batch, table.uri)
        payloads = [
            {"storage": table.storage, "metadata": current.metadata, "paths": b.paths,
             "sizes": [f.size for f in b.files], "partition_values": b.partition_dict}
            for b in sorted(batch, key=lambda b: -b.total_size)
        ]
        results = run_tasks(spark, _compact_bin, payloads,
                            description=f"compaction batch {index}/{len(batches)} of {table.uri}")
        adds = [add_from_json(r) for rs in results for r in rs]
        inputs = [p for b in batch for p in b.paths]
        in_bytes = sum(b.total_size for b in batch)
        out_bytes = sum(a.size for a in adds)
        metrics = {
            "numRemovedFiles": len(inputs), "numAddedFiles": len(adds),
            "numRemovedBytes": in_bytes, "numAddedBytes": out_bytes,
            **file_size_metrics(adds),
            "numBatches": 1, "totalConsideredFiles": plan.files_considered,
            "totalFilesSkipped": plan.files_considered - plan.num_input_files,
            "numDeletionVectorsRemoved": 0, "preserveInsertionOrder": True,
        }
        outcome = commit_rewrite(table, current, input_paths=inputs, adds=adds,
                                 operation_parameters=plan.operation_parameters(), operation_metrics=metrics)
        if outcome.version is None:
            aborted += 1
            log.warning("table=%s compaction batch %d/%d not committed: %s", table.uri, index, len(batches),
                        outcome.reason)
            continue
        versions.append(outcome.version)
        removed_files += len(inputs)
        added_files += len(adds)
        removed_bytes += in_bytes
        added_bytes += out_bytes
        log.info("table=%s version=%d compaction batch %d/%d committed: %d -> %d files",
                 table.uri, outcome.version, index, len(batches), len(inputs), len(adds))
    return CompactionMetrics(
        version=versions[-1] if versions else None,
        versions=tuple(versions),
        read_version=snapshot.version,
        target_size=plan.target_size,
        min_file_size=plan.min_file_size,
        predicate=plan.predicate,
        files_considered=plan.files_considered,
        partitions_considered=plan.partitions_considered,
        partitions_compacted=plan.partitions_compacted,
        num_bins=len(plan.bins),
        num_batches=len(batches),
        batches_committed=len(versions),
        batches_aborted=aborted,
        num_removed_files=removed_files,
        num_added_files=added_files,
        removed_bytes=removed_bytes,
        added_bytes=added_bytes,
        duration_seconds=watch.seconds(),
    )


def _refuse_dv_bins(snapshot: Any, batch: tuple[Bin, ...], uri: str) -> None:
    live = live_subset(snapshot, [p for b in batch for p in b.paths])
    if "deletion_vector" in live.column_names and live.column("deletion_vector").null_count < live.num_rows:
        raise UnsupportedTableForOperationError(
            "files selected for compaction gained deletion vectors meanwhile; compaction does not apply "
            "them. Purge them first (REORG TABLE ... APPLY (PURGE)) and re-run",
            path=uri, version=snapshot.version,
        )
