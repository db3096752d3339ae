"""What the four rewrites (compact, zorder, cluster, purge) report: one base, one filler.

``RewriteMetrics`` declares the fields every rewrite reports, and the rewrite driver
(``spark.driver``) is the only code that fills them: it returns a ``RewriteRun`` (what it
committed, batch by batch), and ``RewriteRun.metrics(SomeMetrics, **own)`` builds an
operation's record from the shared fields plus the operation's own. Each operation's record
adds only its own fields. ``to_dict()`` (``MetricsRecord``) is the CLI's ``--json`` output and
the Dagster assets' metadata source, so field names are part of the interface.

No Spark and no IO here: the Dagster layer imports these types to render them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO
from delta_core.maintenance.rewrite_commit import RewriteTally
from delta_core.maintenance.run_bounds import Leftover, QuietSkip
from delta_core.model.sizes import format_size

if TYPE_CHECKING:
    from delta_core.maintenance.cluster_plan import ClusterPlan


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteMetrics(OperationMetrics):
    """The fields every rewrite reports (filled by ``RewriteRun.metrics``). Of the base fields,
    ``num_removed_files``/``removed_bytes`` are the data files the committed batches replaced
    (what the history records as read: each read whole, once by compaction and purge, twice by
    Z-order and clustering; a retried or abandoned batch's reads are not in them) and
    ``num_added_files``/``added_bytes`` those they added (the commits' ``add`` sizes)."""

    versions: tuple[int, ...]  # one commit per batch committed
    read_version: int  # the snapshot the plan was made on
    num_batches: int  # batches planned
    batches_committed: int
    batches_aborted: int  # abandoned because a concurrent commit changed their inputs
    batches_retried: int  # re-planned on a newer snapshot after losing a conflict (each counted once)
    abandoned_reasons: tuple[str, ...]  # why each aborted batch was abandoned: "batch 2/3: ConcurrentDeleteRead"
    num_deletion_vectors_removed: int  # inputs whose deletion vector the rewrite applied
    # Left for the next run by max_bytes/max_files (not started) or max_duration (batches not
    # started): file groups, their input files and bytes, and the bound that stopped the run.
    groups_left: int = 0
    files_left: int = 0
    bytes_left: int = 0
    stopped_by: str | None = None
    # Skipped by quiet_minutes: planned partitions with a recent file, and the input files not rewritten.
    partitions_skipped_busy: int = 0
    files_skipped_busy: int = 0
    # A dry run: the plan's numbers (files, bytes, batches, deletion vectors: what a run on the
    # unchanged table commits), nothing written, no Spark; the added side is not known before a run.
    dry_run: bool = False

    def outcome(self) -> str:
        if self.dry_run:  # the plan only: what a run would rewrite
            return (f"dry run, nothing written: {self.num_removed_files} files in {self.num_batches} batch(es) "
                    "would be rewritten")
        if self.version is None:
            return "nothing to commit"
        commits = len(self.versions)
        return f"committed version {self.version}" + (f" ({commits} commits)" if commits > 1 else "")

    def details(self) -> list[str]:
        """The record's own facts, then its partial progress: batches retried and abandoned (with
        why), what it left for the next run, and the busy partitions it skipped."""
        lines = self.facts()
        if self.batches_retried:
            lines.append(f"{self.batches_retried} batch(es) re-planned and retried after losing a conflict")
        if self.batches_aborted:
            lines.append(f"{self.batches_aborted} batch(es) abandoned by concurrent changes: "
                         f"{'; '.join(self.abandoned_reasons)}")
        if self.stopped_by is not None:
            lines.append(f"stopped by {self.stopped_by}: {self.groups_left} group(s), {self.files_left} files "
                         f"({format_size(self.bytes_left)}) left for the next run")
        if self.files_skipped_busy:
            where = f"{self.partitions_skipped_busy} busy partition(s)" if self.partitions_skipped_busy else "busy files"
            lines.append(f"{self.files_skipped_busy} files skipped in {where} (quiet_minutes)")
        return lines

    def facts(self) -> list[str]:
        """One-line facts about the operation's own fields (each rewrite says its own)."""
        return []


def _skipping(before: float | None, after: float | None) -> str:
    ratio = "n/a" if after is None else f"{before or 0:.0%} before, {after:.0%} after"
    return f"point-query skipped-file ratio on the clustering columns: {ratio}"


M = TypeVar("M", bound=RewriteMetrics)


@dataclass(frozen=True, slots=True)
class RewriteRun:
    """What the rewrite driver did: the plan's ``read_version`` and ``num_batches``, the
    ``tally`` of the batches committed, and the point-query skipped-file ratio on the columns
    the rewrite asked for, before and after (``None`` when not measured)."""

    read_version: int
    num_batches: int
    tally: RewriteTally
    watch: Stopwatch  # started when the operation was called
    skipped_file_ratio_before: float | None = None
    skipped_file_ratio_after: float | None = None
    dry_run: bool = False
    left: Leftover = Leftover()  # left by the caps before any batch started (the tally has the rest)
    quiet: QuietSkip = QuietSkip()

    def metrics(self, record: type[M], /, *, committed_before: int | None = None, **own: Any) -> M:
        """``record`` with the shared fields of this run and the operation's ``own`` fields;
        ``committed_before`` is a version the operation committed before the rewrite (its
        ``version`` when the rewrite itself commits nothing)."""
        tally = self.tally
        left = self.left + tally.left
        return record(
            version=tally.versions[-1] if tally.versions else committed_before,
            versions=tally.versions,
            read_version=self.read_version,
            num_batches=self.num_batches,
            batches_committed=len(tally.versions),
            batches_aborted=tally.batches_aborted,
            batches_retried=tally.batches_retried,
            abandoned_reasons=tally.abandoned_reasons,
            groups_left=left.groups,
            files_left=left.files,
            bytes_left=left.bytes,
            stopped_by=left.stopped_by,
            partitions_skipped_busy=self.quiet.partitions,
            files_skipped_busy=self.quiet.files,
            num_removed_files=tally.num_removed_files,
            num_added_files=tally.num_added_files,
            removed_bytes=tally.removed_bytes,
            added_bytes=tally.added_bytes,
            num_deletion_vectors_removed=tally.num_deletion_vectors_removed,
            duration_seconds=self.watch.seconds(),
            dry_run=self.dry_run,
            **own,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionMetrics(RewriteMetrics):
    target_size: int
    min_file_size: int
    predicate: str | None
    files_considered: int
    partitions_considered: int
    partitions_compacted: int
    num_bins: int
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO

    def facts(self) -> list[str]:
        return [f"{self.partitions_compacted} of {self.partitions_considered} partitions touched",
                f"target file size {format_size(self.target_size)}"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ZOrderMetrics(RewriteMetrics):
    columns: tuple[str, ...]
    curve: str
    target_size: int
    predicate: str | None
    partitions_optimized: int
    files_considered: int
    skipped_file_ratio_before: float | None = None  # point queries on ``columns``
    skipped_file_ratio_after: float | None = None

    def facts(self) -> list[str]:
        return [f"clustered on {', '.join(self.columns)} ({self.curve} curve), "
                f"{self.partitions_optimized} partition(s) rewritten",
                _skipping(self.skipped_file_ratio_before, self.skipped_file_ratio_after)]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMetrics(RewriteMetrics):
    cluster_by_version: int | None  # the CLUSTER BY commit that set the columns first, if any
    columns: tuple[str, ...]
    full: bool
    target_size: int
    files_considered: int
    unclustered_files: int
    clustered_files_rewritten: int
    clustered_files_kept: int
    other_provider_files: int
    zcube_id: str | None  # the ZCube the new files form (None: nothing written)
    skipped_file_ratio_before: float | None
    skipped_file_ratio_after: float | None

    def facts(self) -> list[str]:
        return [f"clustered on {', '.join(self.columns)} (hilbert curve{', full' if self.full else ''}): "
                f"{self.unclustered_files} unclustered file(s), {self.clustered_files_rewritten} clustered merged, "
                f"{self.clustered_files_kept} kept",
                _skipping(self.skipped_file_ratio_before, self.skipped_file_ratio_after),
                *([f"clustering columns set at version {self.cluster_by_version}"]
                  if self.cluster_by_version is not None else [])]

    @classmethod
    def of(cls, plan: ClusterPlan, run: RewriteRun, *, zcube_id: str | None,
           cluster_by_version: int | None = None) -> ClusterMetrics:
        """The record of a clustering ``run`` of ``plan`` whose new files form ``zcube_id``
        (after the CLUSTER BY commit ``cluster_by_version``, when there was one)."""
        return run.metrics(
            cls, committed_before=cluster_by_version, cluster_by_version=cluster_by_version, columns=plan.names,
            full=plan.full, target_size=plan.rewrite.target_size, files_considered=plan.files_considered,
            unclustered_files=plan.unclustered_files, clustered_files_rewritten=plan.clustered_files_rewritten,
            clustered_files_kept=plan.clustered_files_kept, other_provider_files=plan.other_provider_files,
            zcube_id=zcube_id if run.tally.versions else None,
            skipped_file_ratio_before=run.skipped_file_ratio_before,
            skipped_file_ratio_after=run.skipped_file_ratio_after)


@dataclass(frozen=True, slots=True, kw_only=True)
class PurgeMetrics(RewriteMetrics):
    predicate: str | None
    max_deleted_rows_ratio: float
    files_considered: int
    files_with_deletion_vectors: int
    files_with_dropped_columns: int
    deleted_rows: int  # rows the purged deletion vectors deleted (as planned)

    def facts(self) -> list[str]:
        return [f"{self.files_with_deletion_vectors} file(s) with deletion vectors ({self.deleted_rows} deleted rows), "
                f"{self.files_with_dropped_columns} with dropped columns"]
