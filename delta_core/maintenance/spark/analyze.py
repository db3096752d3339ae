"""Analyze (ANALYZE TABLE ... COMPUTE DELTA STATISTICS) executed on Spark.

The write gate runs first (``check_write_supported``, before anything is read); ``plan_analyze``
(pure, ``analyze_plan``) selects the live files whose stats do not cover the table's stats
columns. Each batch of files is split into task payloads of a few files (``AnalyzeFilesTask``);
``spark.tasks.run_tasks`` runs them, and each task reads only the needed columns of its files with
pyarrow over the table's ``Storage`` and recomputes their stats exactly as our writer collects
them (``stats_recompute``, which also says how files with deletion vectors are handled). The
driver then commits the batch as Delta Spark's ``COMPUTE STATS``: the same adds with the new stats
and ``dataChange=false`` (``analyze_commit``: proof, conflicts, retries).

Nothing is written to storage but the commits, so a failed task leaves nothing behind and needs
no settling. A plan with no work commits nothing and starts no Spark.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from delta_core.log.file_actions import iter_adds
from delta_core.maintenance.analyze_commit import commit_stats, still_live
from delta_core.maintenance.analyze_plan import AnalyzePlan, plan_analyze
from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.spark.tasks import resolve_spark, run_tasks
from delta_core.maintenance.stats_recompute import files_stats_json
from delta_core.model import progress
from delta_core.model.actions import Add, DeletionVectorDescriptor, Metadata
from delta_core.model.table_features import check_write_supported, has_feature
from delta_core.storage.base import Storage

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

__all__ = ["AnalyzeFilesTask", "AnalyzeMetrics", "AnalyzePlan", "analyze", "plan_analyze"]

# Files per task: small files cost a task's ~0.1 s start-up each, large ones are split by bytes.
TASK_FILES = 64
TASK_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalyzeMetrics(OperationMetrics):  # version: the last committed; no data file written or removed
    versions: tuple[int, ...]
    read_version: int
    predicate: str | None
    full: bool
    columns: tuple[str, ...]  # the stats columns the new stats cover
    files_considered: int  # live files inside the predicate
    files_covered: int  # of those, already covered before the run
    files_analyzed: int  # files whose stats were recomputed (as planned)
    bytes_analyzed: int  # their size
    files_updated: int  # adds committed with new stats
    files_changed_meanwhile: int  # analyzed files another commit changed; left for the next run
    num_batches: int
    batches_committed: int
    batches_aborted: int

    def outcome(self) -> str:
        done = f"stats recomputed for {self.files_analyzed} of {self.files_considered} files"
        return done + ("" if self.version is None else f", {self.files_updated} re-added, committed version "
                                                           f"{self.version}")

    def details(self) -> list[str]:
        kept = [f"{self.files_covered} file(s) already covered on {', '.join(self.columns) or 'numRecords'}"]
        if self.files_changed_meanwhile:
            kept.append(f"{self.files_changed_meanwhile} file(s) changed by another commit meanwhile: next run")
        return kept


@dataclass(frozen=True, slots=True)
class AnalyzeFilesTask:
    """One task's files: their stats are recomputed from the top-level ``columns``."""

    storage: Storage
    metadata: Metadata
    columns: tuple[str, ...]
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    deletion_vectors: tuple[DeletionVectorDescriptor | None, ...]
    tight_bounds: bool  # write tightBounds (the table's protocol has deletion vectors)


def analyze_task(task: AnalyzeFilesTask) -> list[str]:
    """Run on an executor: one JSON line ``{"path", "stats"}`` per file of ``task``."""
    stats = files_stats_json(task.storage, task.metadata, task.paths, columns=task.columns, sizes=task.sizes,
                             deletion_vectors=task.deletion_vectors, tight_bounds=task.tight_bounds)
    return [json.dumps({"path": p, "stats": s}, separators=(",", ":")) for p, s in zip(task.paths, stats)]


def analyze(
    table: DeltaTable,
    spark: Any,
    *,
    where: str | None = None,
    full: bool = False,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
) -> AnalyzeMetrics:
    """Recompute the stats of ``table``'s files that lack some (all selected files with ``full``)
    on ``spark`` (a SparkSession, or a factory called only when there is work)."""
    watch = Stopwatch()
    snapshot = table.snapshot()
    # dataChange=false adds only: no row is added, so row constraints do not bind.
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    plan = plan_analyze(snapshot, where=where, full=full)
    log.info("table=%s version=%d analyze plan: %d of %d files (%d bytes), columns %s", table.uri, snapshot.version,
             plan.num_files, plan.files_considered, plan.input_bytes, ", ".join(plan.columns) or "-")
    batches = plan.batches(batch_size_bytes)
    if batches:
        spark = resolve_spark(spark)
    tight = has_feature(snapshot.protocol, "deletionVectors")
    versions: list[int] = []
    updated = changed = aborted = 0
    current = snapshot
    reported = progress.tracked("analyze", batches, items_of=len,
                                bytes_of=lambda b: int(pc.sum(b.column("size")).as_py() or 0))
    for index, batch in enumerate(reported, 1):
        label = f"analyze batch {index}/{len(batches)} of {table.uri}"
        adds = list(iter_adds(snapshot.files_of(batch.column("path").to_pylist())))  # as planned
        if index > 1:
            current = current.update()  # the commits since the last batch only
            if current.metadata != snapshot.metadata:
                # The stats columns may differ now: the plan no longer says what to read.
                aborted += len(batches) - index + 1
                log.warning("table=%s metadata changed at version %d: %d analyze batch(es) not run; run analyze "
                            "again", table.uri, current.version, len(batches) - index + 1)
                break
            adds = still_live(current, adds)
            changed += len(batch) - len(adds)
            if not adds:
                continue
        tasks = _tasks(plan, current.metadata, table.storage, adds, tight_bounds=tight)
        lines = [line for out in run_tasks(spark, analyze_task, tasks, description=label) for line in out]
        stats = {body["path"]: body["stats"] for body in map(json.loads, lines)}
        new = [replace(a, stats=stats[a.path], data_change=False) for a in adds]
        outcome = commit_stats(table, current, adds, new, parameters=plan.operation_parameters())
        changed += outcome.dropped
        if outcome.version is None:
            aborted += 1
            log.warning("table=%s %s not committed: %s", table.uri, label, outcome.reason)
            continue
        versions.append(outcome.version)
        updated += outcome.files
        log.info("table=%s version=%d attempt=%d %s committed: %d files", table.uri, outcome.version,
                 outcome.attempts, label, outcome.files)
    return AnalyzeMetrics(
        version=versions[-1] if versions else None,
        versions=tuple(versions),
        read_version=snapshot.version,
        predicate=plan.predicate,
        full=full,
        columns=plan.columns,
        files_considered=plan.files_considered,
        files_covered=plan.files_covered,
        files_analyzed=plan.num_files,
        bytes_analyzed=plan.input_bytes,
        files_updated=updated,
        files_changed_meanwhile=changed,
        num_batches=len(batches),
        batches_committed=len(versions),
        batches_aborted=aborted,
        num_removed_files=0, num_added_files=0, removed_bytes=0, added_bytes=0,  # stats only: no data file
        duration_seconds=watch.seconds(),
    )


def _tasks(plan: AnalyzePlan, metadata: Metadata, storage: Storage, adds: Sequence[Add], *,
           tight_bounds: bool) -> list[AnalyzeFilesTask]:
    """Payloads of at most ``TASK_FILES`` files and about ``TASK_BYTES``, largest first (the task
    runner deals them round-robin, so the long ones start early)."""
    groups: list[list[Add]] = []
    size = 0
    for add in sorted(adds, key=lambda a: a.size, reverse=True):
        if not groups or len(groups[-1]) >= TASK_FILES or (size + add.size > TASK_BYTES and groups[-1]):
            groups.append([])
            size = 0
        groups[-1].append(add)
        size += add.size
    return [AnalyzeFilesTask(storage, metadata, plan.read_columns, tuple(a.path for a in g), tuple(a.size for a in g),
                             tuple(a.deletion_vector for a in g), tight_bounds) for g in groups]
