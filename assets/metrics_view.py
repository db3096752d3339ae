"""What each operation's metrics record says, as UI values and one-line facts.

The four rewrites share one renderer (``_rewrite``: the ``RewriteMetrics`` fields once, then
the record's own fields and facts); other records have a function each. The records' fields
are read by name here and nowhere else in the Dagster layer.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assets.metadata import human_bytes
from delta_core.maintenance.operations import VACUUM
from delta_core.maintenance.rewrite_metrics import (
    ClusterMetrics,
    CompactionMetrics,
    PurgeMetrics,
    RewriteMetrics,
    ZOrderMetrics,
)

Value = int | float | str | bool | None
# The bytes of the files an operation removed: for a rewrite (compact, zorder, cluster, purge)
# the bytes it rewrote, which the fleet budget counts (``fleet.usage``).
BYTES_REMOVED_KEY = "bytes_removed"


@dataclass(frozen=True, slots=True)
class MetricsView:
    values: dict[str, Value]
    headline: list[str]
    duration_seconds: float
    partitions_touched: int | None = None
    extra_lines: list[str] = field(default_factory=list)


def _files_line(m: Any) -> str:
    return (f"{m.num_removed_files} files ({human_bytes(m.removed_bytes)}) replaced by "
            f"{m.num_added_files} files ({human_bytes(m.added_bytes)})")


def _common(m: Any) -> dict[str, Value]:
    return {
        "committed_version": m.version,
        "files_removed": m.num_removed_files,
        "files_added": m.num_added_files,
        BYTES_REMOVED_KEY: m.removed_bytes,
        "bytes_added": m.added_bytes,
    }


def _committed(m: Any) -> str:
    return "nothing to commit" if m.version is None else f"committed version {m.version}"


# Own fields of a rewrite's record shown under another name (the UI's plots keep their keys).
_SHOWN_AS = {"partitions_compacted": "partitions_touched", "partitions_optimized": "partitions_touched",
             "deleted_rows": "deleted_rows_purged"}
_SHARED = frozenset(f.name for f in dataclasses.fields(RewriteMetrics))


def _rewrite(m: RewriteMetrics) -> MetricsView:
    """Any rewrite's record (compact, zorder, cluster, purge): the shared fields once, then the
    record's own fields and its own facts."""
    own: dict[str, Value] = {}
    for f in dataclasses.fields(m):
        if f.name not in _SHARED:
            value = getattr(m, f.name)
            own[_SHOWN_AS.get(f.name, f.name)] = ", ".join(value) if isinstance(value, tuple) else value
    values = _common(m) | own | {"commits": len(m.versions), "batches_committed": m.batches_committed,
                                 "batches_retried": m.batches_retried, "batches_aborted": m.batches_aborted,
                                 "abandoned_reasons": "; ".join(m.abandoned_reasons),
                                 "groups_left": m.groups_left, "files_left": m.files_left,
                                 "bytes_left": m.bytes_left, "stopped_by": m.stopped_by,
                                 "partitions_skipped_busy": m.partitions_skipped_busy,
                                 "files_skipped_busy": m.files_skipped_busy, "dry_run": m.dry_run}
    if m.dry_run:  # the plan only: what a run would rewrite
        headline = [f"dry run, nothing written: {m.num_removed_files} files ({human_bytes(m.removed_bytes)}) in "
                    f"{m.num_batches} batch(es) would be rewritten", *_facts(m)]
    else:
        headline = [_committed(m), _files_line(m), *_facts(m)]
    headline.extend(_progress_lines(m))
    touched = own.get("partitions_touched")
    return MetricsView(values, headline, m.duration_seconds, touched if isinstance(touched, int) else None)


def _progress_lines(m: RewriteMetrics) -> list[str]:
    """A rewrite's partial progress: batches retried and abandoned (with why), what it left for
    the next run, and the busy partitions it skipped."""
    lines = []
    if m.batches_retried:
        lines.append(f"{m.batches_retried} batch(es) re-planned and retried after losing a conflict")
    if m.batches_aborted:
        lines.append(f"{m.batches_aborted} batch(es) abandoned by concurrent changes: {'; '.join(m.abandoned_reasons)}")
    if m.stopped_by is not None:
        lines.append(f"stopped by {m.stopped_by}: {m.groups_left} group(s), {m.files_left} files "
                     f"({human_bytes(m.bytes_left)}) left for the next run")
    if m.files_skipped_busy:
        where = f"{m.partitions_skipped_busy} busy partition(s)" if m.partitions_skipped_busy else "busy files"
        lines.append(f"{m.files_skipped_busy} files skipped in {where} (quiet_minutes)")
    return lines


def _facts(m: RewriteMetrics) -> list[str]:
    """One-line facts about a rewrite's own fields."""
    if isinstance(m, CompactionMetrics):
        return [f"{m.partitions_compacted} of {m.partitions_considered} partitions touched",
                f"target file size {human_bytes(m.target_size)}"]
    if isinstance(m, ZOrderMetrics):
        return [f"clustered on {', '.join(m.columns)} ({m.curve} curve), "
                f"{m.partitions_optimized} partition(s) rewritten"]
    if isinstance(m, ClusterMetrics):
        ratio = ("n/a" if m.skipped_file_ratio_after is None else
                 f"{m.skipped_file_ratio_before or 0:.0%} before, {m.skipped_file_ratio_after:.0%} after")
        return [f"clustered on {', '.join(m.columns)} (hilbert curve{', full' if m.full else ''}): "
                f"{m.unclustered_files} unclustered file(s), {m.clustered_files_rewritten} clustered merged, "
                f"{m.clustered_files_kept} kept",
                f"point-query skipped-file ratio on the clustering columns: {ratio}",
                *([f"clustering columns set at version {m.cluster_by_version}"]
                  if m.cluster_by_version is not None else [])]
    if isinstance(m, PurgeMetrics):
        return [f"{m.files_with_deletion_vectors} file(s) with deletion vectors ({m.deleted_rows} deleted rows), "
                f"{m.files_with_dropped_columns} with dropped columns"]
    return []


DRY_RUN_PATHS_SHOWN = 20


def _vacuum(m: Any) -> MetricsView:
    values = _common(m) | {
        "dry_run": m.dry_run,
        "retention_hours": m.retention_hours,
        "retention_check_enabled": m.retention_check_enabled,
        "files_listed": m.files_listed,
        "files_to_delete": m.num_files_to_delete,
        "bytes_to_delete": m.bytes_to_delete,
        "files_deleted": m.num_deleted_files,
        "bytes_deleted": m.bytes_deleted,
        "files_already_gone": m.num_missing_files,
        "inventory_shape": m.inventory_shape,
        "inventory_age_hours": m.inventory_age_hours,
        "directories_removed": m.num_vacuumed_directories,
        "ignored_log_paths": m.ignored_log_paths,
    }
    if m.dry_run:
        headline = [f"dry run: {m.num_files_to_delete} of {m.files_listed} listed files would be deleted "
                    f"({human_bytes(m.bytes_to_delete)})"]
    else:
        headline = [f"{m.num_deleted_files} unreferenced files deleted "
                    f"({human_bytes(m.removed_bytes)}) of {m.files_listed} listed",
                    " and ".join(VACUUM.delta_operations) + " committed"
                    + ("" if m.version is None else f" (version {m.version})")]
    headline.append(f"retention {m.retention_hours:g} hours"
                    + ("" if m.retention_check_enabled else " (retention check overridden)"))
    extra = []
    if m.dry_run and m.paths:
        shown = [f"- `{p}`" for p in m.paths[:DRY_RUN_PATHS_SHOWN]]
        more = len(m.paths) - len(shown)
        extra = ["**Would delete**", "", *shown] + ([f"- ... and {more} more"] if more > 0 else [])
    return MetricsView(values, headline, m.duration_seconds, None, extra)


def _manifest(m: Any) -> MetricsView:
    values = _common(m) | {
        "snapshot_version": m.snapshot_version,
        "mode": m.mode,
        "partitions": m.num_partitions,
        "manifests_written": m.manifests_written,
        "manifests_removed": m.manifests_removed,
        "data_files_listed": m.data_files_listed,
    }
    headline = [f"manifests of version {m.snapshot_version} ({m.mode})",
                f"{m.manifests_written} manifest(s) written, {m.manifests_removed} stale removed, "
                f"{m.data_files_listed} data files listed"]
    return MetricsView(values, headline, m.duration_seconds, m.manifests_written)


def _generic(m: Any) -> MetricsView:
    return MetricsView(_common(m), [_committed(m), _files_line(m)], m.duration_seconds)


def _describers() -> dict[type, Callable[[Any], MetricsView]]:
    from delta_core.maintenance.manifest import ManifestMetrics
    from delta_core.maintenance.spark.vacuum import VacuumMetrics

    return {ManifestMetrics: _manifest, VacuumMetrics: _vacuum}


# Fields too long for the metadata JSON (the Markdown summary shows a sample instead).
_BULKY_FIELDS = ("paths",)


def metrics_for_json(metrics: Any) -> dict[str, Any]:
    data = metrics.to_dict()
    for name in _BULKY_FIELDS:
        if isinstance(data.get(name), list):
            data[name] = f"{len(data[name])} entries (see summary)"
    return data


def describe(metrics: Any) -> MetricsView:
    if isinstance(metrics, RewriteMetrics):
        return _rewrite(metrics)
    return _describers().get(type(metrics), _generic)(metrics)
