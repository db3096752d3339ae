"""What each operation's metrics record says, as UI values and one-line facts.

One function per metrics record type; the record's fields are read by name here and nowhere
else in the Dagster layer.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assets.metadata import human_bytes
from delta_core.maintenance.operations import VACUUM

Value = int | float | str | bool | None


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
        "bytes_removed": m.removed_bytes,
        "bytes_added": m.added_bytes,
    }


def _committed(m: Any) -> str:
    return "nothing to commit" if m.version is None else f"committed version {m.version}"


def _compaction(m: Any) -> MetricsView:
    values = _common(m) | {
        "partitions_touched": m.partitions_compacted,
        "partitions_considered": m.partitions_considered,
        "files_considered": m.files_considered,
        "target_size": m.target_size,
        "min_file_size": m.min_file_size,
        "predicate": m.predicate or "none",
        "commits": len(m.versions),
        "batches_aborted": m.batches_aborted,
    }
    headline = [_committed(m), _files_line(m),
                f"{m.partitions_compacted} of {m.partitions_considered} partitions touched",
                f"target file size {human_bytes(m.target_size)}"]
    if m.batches_aborted:
        headline.append(f"{m.batches_aborted} batch(es) aborted by concurrent changes")
    return MetricsView(values, headline, m.duration_seconds, m.partitions_compacted)


def _zorder(m: Any) -> MetricsView:
    values = _common(m) | {
        "partitions_touched": m.partitions_optimized,
        "files_considered": m.files_considered,
        "columns": ", ".join(m.columns),
        "curve": m.curve,
        "target_size": m.target_size,
        "predicate": m.predicate or "none",
        "commits": len(m.versions),
        "batches_aborted": m.batches_aborted,
    }
    headline = [_committed(m), _files_line(m),
                f"clustered on {', '.join(m.columns)} ({m.curve} curve), "
                f"{m.partitions_optimized} partition(s) rewritten"]
    if m.batches_aborted:
        headline.append(f"{m.batches_aborted} batch(es) aborted by concurrent changes")
    return MetricsView(values, headline, m.duration_seconds, m.partitions_optimized)


def _cluster(m: Any) -> MetricsView:
    values = _common(m) | {
        "columns": ", ".join(m.columns),
        "full": m.full,
        "files_considered": m.files_considered,
        "unclustered_files": m.unclustered_files,
        "clustered_files_rewritten": m.clustered_files_rewritten,
        "clustered_files_kept": m.clustered_files_kept,
        "target_size": m.target_size,
        "commits": len(m.versions),
        "batches_aborted": m.batches_aborted,
        "skipped_file_ratio_before": m.skipped_file_ratio_before,
        "skipped_file_ratio_after": m.skipped_file_ratio_after,
    }
    ratio = ("n/a" if m.skipped_file_ratio_after is None else
             f"{m.skipped_file_ratio_before or 0:.0%} before, {m.skipped_file_ratio_after:.0%} after")
    headline = [_committed(m), _files_line(m),
                f"clustered on {', '.join(m.columns)} (hilbert curve{', full' if m.full else ''}): "
                f"{m.unclustered_files} unclustered file(s), {m.clustered_files_rewritten} clustered merged, "
                f"{m.clustered_files_kept} kept",
                f"point-query skipped-file ratio on the clustering columns: {ratio}"]
    if m.cluster_by_version is not None:
        headline.append(f"clustering columns set at version {m.cluster_by_version}")
    if m.batches_aborted:
        headline.append(f"{m.batches_aborted} batch(es) aborted by concurrent changes")
    return MetricsView(values, headline, m.duration_seconds, None)


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


def _purge(m: Any) -> MetricsView:
    values = _common(m) | {
        "files_considered": m.files_considered,
        "files_with_deletion_vectors": m.files_with_deletion_vectors,
        "files_with_dropped_columns": m.files_with_dropped_columns,
        "deleted_rows_purged": m.deleted_rows,
        "max_deleted_rows_ratio": m.max_deleted_rows_ratio,
        "predicate": m.predicate or "none",
        "commits": len(m.versions),
        "batches_aborted": m.batches_aborted,
    }
    headline = [_committed(m), _files_line(m),
                f"{m.files_with_deletion_vectors} file(s) with deletion vectors ({m.deleted_rows} deleted rows), "
                f"{m.files_with_dropped_columns} with dropped columns"]
    if m.batches_aborted:
        headline.append(f"{m.batches_aborted} batch(es) aborted by concurrent changes")
    return MetricsView(values, headline, m.duration_seconds, None)


def _generic(m: Any) -> MetricsView:
    return MetricsView(_common(m), [_committed(m), _files_line(m)], m.duration_seconds)


def _describers() -> dict[type, Callable[[Any], MetricsView]]:
    from delta_core.maintenance.manifest import ManifestMetrics
    from delta_core.maintenance.spark.cluster import ClusterMetrics
    from delta_core.maintenance.spark.compaction import CompactionMetrics
    from delta_core.maintenance.spark.purge import PurgeMetrics
    from delta_core.maintenance.spark.vacuum import VacuumMetrics
    from delta_core.maintenance.spark.zorder import ZOrderMetrics

    return {CompactionMetrics: _compaction, ManifestMetrics: _manifest, VacuumMetrics: _vacuum,
            ZOrderMetrics: _zorder, ClusterMetrics: _cluster, PurgeMetrics: _purge}


# Fields too long for the metadata JSON (the Markdown summary shows a sample instead).
_BULKY_FIELDS = ("paths",)


def metrics_for_json(metrics: Any) -> dict[str, Any]:
    data = metrics.to_dict()
    for name in _BULKY_FIELDS:
        if isinstance(data.get(name), list):
            data[name] = f"{len(data[name])} entries (see summary)"
    return data


def describe(metrics: Any) -> MetricsView:
    return _describers().get(type(metrics), _generic)(metrics)
