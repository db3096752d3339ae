"""The one rewrite driver: gate → plan → batches → Spark tasks → rewrite proof → commit → metrics.

Every data rewrite (compact, zorder, cluster, purge) goes through here, as Delta's OPTIMIZE
goes through one executor whatever its strategy. An operation module only pairs a plan with a
task executor (a ``Rewrite``) and adds its own metrics fields:

1. *Gate* — ``gated_snapshot``: the table's latest snapshot, once the write protocol allows a
   rewrite (``check_write_supported``, rewrite-only) and no column is void
   (``check_void_writable``); nothing is written otherwise.
2. *Plan* — the operation's, pure (``compaction_plan``, ``zorder_plan``, ``cluster_plan``,
   ``purge_plan``): any ``file_groups.RewritePlan``.
3. *Bounds and batches* — the plan's groups without quiet partitions' (``quiet_minutes``), in
   the asked ``order``, as many as fit ``max_bytes``/``max_files`` (``run_bounds``; the rest is
   left for the next run and reported), in batches of ``batch_size`` input bytes; a plan without
   one starts no Spark (``spark`` may be a factory, called only here and only when there is work).
4. *Spark tasks* — the ``TaskExecutor`` rewrites one batch: ``spark.bin_rewrite`` (one file per
   group: compaction, purge) or ``spark.curve_rewrite`` (rows along a curve: Z-order,
   clustering). Its Spark jobs run under ``settled_on_failure``, so a failed batch's files are
   deleted only once no task still writes.
5. *Rewrite proof and commit* — ``rewrite_commit.run_rewrite_batches``: each batch is proven
   to keep the data and committed (``dataChange=false``, ``operation`` with Delta's OPTIMIZE
   metrics), each batch (the first too) only with the groups whose inputs are still live when
   it starts; a batch that loses a conflict is re-planned on the new snapshot and retried
   (``max_batch_retries``), and no batch starts once ``max_duration`` has passed.
6. *Metrics* — a ``RewriteRun``; ``RewriteRun.metrics`` fills the shared ``RewriteMetrics``
   fields of the operation's record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeAlias, TypeVar

from delta_core.maintenance.column_bounds import column_bounds
from delta_core.maintenance.file_groups import FileGroup, RewritePlan, batch_groups, group_paths
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES, RewriteBounds
from delta_core.maintenance.rewrite_commit import RewriteOutput, RewriteTally, deletion_vectors, run_rewrite_batches
from delta_core.maintenance.rewrite_metrics import RewriteRun
from delta_core.maintenance.run_bounds import ordered_groups, quiet_groups, take_within
from delta_core.maintenance.skipping import probe_values, skipped_file_ratio
from delta_core.maintenance.spark.tasks import resolve_spark, settled_on_failure
from delta_core.model.delta_operations import OPTIMIZE
from delta_core.model.table_features import check_write_supported
from delta_core.write.operation_records import OptimizeScan
from delta_core.write.void_columns import check_void_writable

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

# A SparkSession, or a factory called only once a plan has work (starting Spark takes seconds).
SparkSource: TypeAlias = "SparkSession | Callable[[], SparkSession]"
G = TypeVar("G", bound=FileGroup)
G_contra = TypeVar("G_contra", bound=FileGroup, contravariant=True)


class TaskExecutor(Protocol[G_contra]):
    """Rewrites one batch of file groups with Spark tasks."""

    @property
    def preserves_insertion_order(self) -> bool:
        """Whether rows keep their order (OPTIMIZE's ``preserveInsertionOrder`` metric)."""

    def rewrite(self, spark: SparkSession, table: DeltaTable, snapshot: Snapshot, batch: Sequence[G_contra],
                *, label: str, outputs: list[str]) -> RewriteOutput:
        """Rewrite ``batch``, reading each input with its deletion vector in ``snapshot``; append
        to ``outputs`` the key of every file it may write before any task writes it; return the
        new ``add`` actions (``label`` names the Spark jobs)."""


@dataclass(frozen=True, slots=True)
class Rewrite(Generic[G]):
    """A plan paired with the executor of its groups, as the driver runs it. ``label`` names
    the progress stage, the batches in the log and the Spark jobs; ``operation`` is the commits'
    ``commitInfo.operation``; ``skipping_columns``: measure the point-query skipped-file ratio
    on them before and after (``skipping_bounds``: their ``column_bounds`` in the planned
    snapshot, when the operation parsed them already for its plan)."""

    plan: RewritePlan[G]
    executor: TaskExecutor[G]
    label: str
    operation: str = OPTIMIZE
    skipping_columns: tuple[str, ...] = ()
    skipping_bounds: pa.Table | None = None


def gated_snapshot(table: DeltaTable) -> Snapshot:
    """The latest snapshot of ``table``, once a rewrite may write to it (the module docstring's
    step 1)."""
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    check_void_writable(snapshot.schema, partition_columns=tuple(snapshot.partition_columns), path=table.uri,
                        version=snapshot.version)
    return snapshot


def run_rewrite(
    table: DeltaTable,
    spark: SparkSource,
    snapshot: Snapshot,
    rewrite: Rewrite[G],
    *,
    bounds: RewriteBounds,
    watch: Stopwatch,
    dry_run: bool = False,
) -> RewriteRun:
    """Run ``rewrite`` (planned on ``snapshot``) within ``bounds``, batch by batch (the module
    docstring's steps 3-6). ``spark`` is a SparkSession, or a factory called only when there is
    something to rewrite; ``watch`` was started when the operation was called (``max_duration``
    counts from then). ``dry_run``: stop after the batches, reporting what they hold as a run on the
    unchanged table would commit it (no Spark, nothing written)."""
    plan = rewrite.plan
    groups, quiet = quiet_groups(snapshot, plan.groups, bounds.quiet_minutes, now_ms=int(time.time() * 1000))
    groups, left = take_within(ordered_groups(groups, bounds.order), max_bytes=bounds.max_bytes,
                               max_files=bounds.max_files)
    batches = batch_groups(groups, bounds.batch_size or DEFAULT_BATCH_BYTES)
    columns = rewrite.skipping_columns
    ranges = rewrite.skipping_bounds  # parsed once for both (and for the plan, when it needed them)
    if ranges is None and columns:
        ranges = column_bounds(snapshot, [(c,) for c in columns])
    probes = probe_values(snapshot, columns, bounds=ranges) if columns else None
    ratio_before = skipped_file_ratio(snapshot, probes, bounds=ranges) if probes is not None else None
    if dry_run:
        # The inputs' paths are cut from the plan only to count their deletion vectors, when
        # some file has one: no Python string per input file either way.
        vectors = snapshot.file_columns("deletion_vector").column(0)
        planned = RewriteTally(versions=(), batches_aborted=0, num_removed_files=sum(g.num_files for g in groups),
                               num_added_files=0, removed_bytes=sum(g.total_size for g in groups), added_bytes=0,
                               num_deletion_vectors_removed=len(deletion_vectors(snapshot, group_paths(groups)))
                               if vectors.null_count < len(vectors) else 0)
        log.info("table=%s version=%d %s dry run: %d batch(es), %d file(s), %d bytes", table.uri, snapshot.version,
                 rewrite.label, len(batches), planned.num_removed_files, planned.removed_bytes)
        return RewriteRun(snapshot.version, len(batches), planned, watch, ratio_before, ratio_before, dry_run=True,
                          left=left, quiet=quiet)
    session = resolve_spark(spark) if batches else None

    def run_batch(current: Snapshot, batch: Sequence[G], label: str, outputs: list[str]) -> RewriteOutput:
        assert session is not None  # batches exist, so Spark was started
        with settled_on_failure(session):  # no task still writes once the batch's files are deleted
            return rewrite.executor.rewrite(session, table, current, batch, label=label, outputs=outputs)

    max_seconds = bounds.max_duration * 60 if bounds.max_duration is not None else None
    tally = run_rewrite_batches(
        table, snapshot, batches, rewrite=run_batch, label=rewrite.label, operation=rewrite.operation,
        operation_parameters=plan.operation_parameters(),
        scan=OptimizeScan(total_considered_files=plan.files_considered,
                          total_files_skipped=plan.files_considered - plan.num_input_files,
                          preserve_insertion_order=rewrite.executor.preserves_insertion_order),
        max_batch_retries=bounds.max_batch_retries,
        keep_going=(lambda: watch.seconds() < max_seconds) if max_seconds is not None else None,
    )
    ratio_after = ratio_before
    if probes is not None and tally.versions:
        ratio_after = skipped_file_ratio(table.snapshot(), probes)
    return RewriteRun(snapshot.version, len(batches), tally, watch, ratio_before, ratio_after, left=left,
                      quiet=quiet)
