"""``table_health``: one table's health report — metrics, score and recommendations.

Reads the latest snapshot (or the one given), the ``commitInfo`` of recent commits to find
the last OPTIMIZE (PROTOCOL.md "Commit Provenance Information"; newest first, at most
``policy.optimize_lookback`` commits, stopping at the first hit), and, only when asked, the
manifest state file and a listing of ``_delta_log`` for log cleanup (PROTOCOL.md "Metadata
Cleanup"). The first part, a version's figures whatever the clock (``version_health``), comes
from the health cache when one is given and holds it (``cache``). Writes nothing to the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from delta_core.errors import ConfigError, UnsupportedTableForOperationError, VersionNotFoundError
from delta_core.health.advice import Recommendation, recommend
from delta_core.health.cache import CacheKey, HealthCache
from delta_core.health.checkpoint_coverage import keep_coverage, reused_coverage
from delta_core.health.layout_estimate import estimate_layout, skip_target
from delta_core.health.metrics import HealthMetrics, TombstoneCurve, compute_metrics, expiry_cutoff
from delta_core.health.overlap import clustering_columns
from delta_core.health.policy import HealthPolicy
from delta_core.health.score import ScorePart, score_parts, total_score
from delta_core.health.version_figures import VersionHealth
from delta_core.log.history import ICT_ENABLEMENT_VERSION, read_commit_info
from delta_core.log.log_path import commit_key
from delta_core.log.log_segment import build_log_segment, list_log
from delta_core.log.snapshot import load_snapshot
from delta_core.maintenance.manifest import check_manifest_supported, manifest_state_version
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.stats_coverage import snapshot_coverage
from delta_core.model.delta_operations import OPTIMIZE
from delta_core.model.table_properties import TableProperties
from delta_core.write.log_cleanup import plan_log_cleanup

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable
    from delta_core.storage.base import Storage

SYMLINK_MANIFEST_ENABLED = "delta.compatibility.symlinkFormatManifest.enabled"
_READ_AHEAD = 8  # commitInfo reads in flight while searching for the last OPTIMIZE


@dataclass(frozen=True, slots=True)
class HealthReport:
    table: str
    version: int
    score: int
    parts: tuple[ScorePart, ...]
    metrics: HealthMetrics
    recommendations: tuple[Recommendation, ...]
    duration_seconds: float
    policy: HealthPolicy  # the thresholds it was judged by (the named checks judge by them too)

    def headline(self) -> dict[str, int | float | None]:
        """The figures worth plotting over time (numeric; None where not computed): what the
        table's observable asset reports on each version."""
        m = self.metrics
        return {
            "score": self.score, "num_files": m.num_files, "small_file_ratio": m.small_file_ratio,
            "deleted_rows_ratio": m.deleted_rows_ratio, "versions_since_checkpoint": m.versions_since_checkpoint,
            "tombstone_bytes": m.tombstone_bytes, "skip_ratio": m.skip_ratio,
        }

    def to_dict(self) -> dict[str, Any]:
        """The ``health --json`` document: ``score``, ``metrics``, ``recommendations`` and the
        score's parts."""
        return {
            "table": self.table,
            "version": self.version,
            "score": self.score,
            "score_parts": [{"name": p.name, "weight": p.weight, "value": p.value, "score": p.score}
                            for p in self.parts],
            "metrics": self.metrics.to_dict(),
            "recommendations": [{"operation": r.operation, "reason": r.reason,
                                 "estimated_gain": r.estimated_gain, "unit": r.unit}
                                for r in self.recommendations],
            "duration_seconds": self.duration_seconds,
        }


def last_optimize(
    storage: Storage, version: int, *, lookback: int, ict_from: int | None = None,
) -> tuple[int | None, int | None]:
    """``(version, timestamp ms)`` of the newest OPTIMIZE commit among the ``lookback`` newest
    commits; ``(None, None)`` if there is none there (or log cleanup removed the rest).

    The timestamp is the commit's ``inCommitTimestamp`` from version ``ict_from`` on (in-commit
    timestamps enabled), else the commit file's modification time, as ``history`` reports it.
    """
    versions = list(range(version, max(-1, version - lookback), -1))
    with ThreadPoolExecutor(max_workers=_READ_AHEAD) as pool:
        for start in range(0, len(versions), _READ_AHEAD):
            chunk = versions[start:start + _READ_AHEAD]
            try:
                infos = list(pool.map(lambda v: read_commit_info(storage, v), chunk))
            except VersionNotFoundError:
                return None, None  # older commits were cleaned up: nothing more to learn
            for v, info in zip(chunk, infos):
                if info.get("operation") == OPTIMIZE:
                    ict = info.get("inCommitTimestamp")
                    if ict_from is not None and v >= ict_from and isinstance(ict, int) and not isinstance(ict, bool):
                        return v, ict
                    return v, storage.head(commit_key(v)).modification_time
    return None, None


def _ict_from(snapshot: Snapshot) -> int | None:
    """First version whose commit time is its in-commit timestamp; None when they are off."""
    if not snapshot.properties.in_commit_timestamps:
        return None
    raw = snapshot.configuration.get(ICT_ENABLEMENT_VERSION)
    return int(raw) if raw is not None else 0


def _check_columns(snapshot: Snapshot, columns: Sequence[str], *, uri: str) -> None:
    """A column to judge clustering on must be one of the table's data columns."""
    for col in columns:
        try:
            snapshot.schema.find(col.split("."))
        except KeyError:
            raise ConfigError(
                f"column {col!r} is not in the schema of {uri} at version {snapshot.version}; "
                f"choose among {', '.join(snapshot.schema.field_names)}",
                path=uri, version=snapshot.version) from None
        if col in snapshot.partition_columns:
            raise ConfigError(
                f"column {col!r} is a partition column of {uri}: partitioning already skips on it; "
                "judge clustering on data columns", path=uri, version=snapshot.version)


def _manifests_possible(snapshot: Snapshot) -> bool:
    """Whether ``manifest`` would run at all (it refuses deletion vectors and column mapping):
    a lag it cannot fix is not reported, so it is never recommended."""
    try:
        check_manifest_supported(snapshot)
    except UnsupportedTableForOperationError:
        return False
    return True


def _expired_log_files(storage: Storage, properties: TableProperties, now_ms: int) -> int:
    """How many log files a log cleanup would delete now (0 when the table disables it)."""
    if not properties.expired_log_cleanup:
        return 0
    cutoff = now_ms - int(properties.log_retention.total_seconds() * 1000)
    _, doomed = plan_log_cleanup(list_log(storage), cutoff_ms=cutoff)
    return len(doomed)


def compute_version_health(table: DeltaTable, snapshot: Snapshot, *, policy: HealthPolicy,
                           columns: Sequence[str] | None, now_ms: int,
                           cache: HealthCache | None = None) -> VersionHealth:
    """The figures of ``snapshot`` that do not depend on the time of asking (the tombstones'
    expiry is kept as a curve: ``metrics.TombstoneCurve``); ``cache`` serves (and keeps) the
    stats coverage of the checkpoint's files (``checkpoint_coverage``)."""
    clustered = clustering_columns(snapshot)
    measured = tuple(columns) if columns is not None else clustered
    _check_columns(snapshot, measured, uri=table.uri)
    reused = reused_coverage(snapshot, cache)
    coverage = reused if reused is not None or cache is None else snapshot_coverage(snapshot, count_records=True)
    metrics = compute_metrics(snapshot, policy=policy, now_ms=now_ms, columns=measured, coverage=coverage)
    if reused is None and coverage is not None:
        keep_coverage(snapshot, cache, coverage)
    opt_version, opt_time = last_optimize(table.storage, snapshot.version, lookback=policy.optimize_lookback,
                                          ict_from=_ict_from(snapshot))
    metrics = replace(metrics, last_optimize_version=opt_version, last_optimize_timestamp=opt_time)
    if metrics.skip_ratio is not None and metrics.skip_ratio < policy.skip_ratio_floor:
        estimate = estimate_layout(snapshot, measured, clustered=bool(clustered) and measured == clustered,
                                   target_size=policy.zorder_target_size)
        metrics = replace(metrics, predicted_skip_ratio=estimate.skip_ratio,
                          skip_unreachable=skip_target(estimate, metrics.skip_ratio, policy.skip_ratio_floor))
    return VersionHealth(snapshot.version, snapshot.protocol, snapshot.metadata, clustered, metrics,
                         TombstoneCurve.of(snapshot.tombstones), _manifests_possible(snapshot))


def version_health(table: DeltaTable, *, policy: HealthPolicy, columns: Sequence[str] | None = None,
                   snapshot: Snapshot | None = None, cache: HealthCache | None = None,
                   now_ms: int | None = None) -> VersionHealth:
    """The time-independent health figures of ``table`` at ``snapshot`` (default: the latest),
    from ``cache`` when it holds them (then the latest version costs one listing of the log and
    no replay), else computed (and stored there)."""
    now_ms = table.clock() if now_ms is None else now_ms
    if cache is None:
        return compute_version_health(table, snapshot or table.snapshot(), policy=policy, columns=columns,
                                      now_ms=now_ms)
    segment = snapshot.log_segment if snapshot is not None else build_log_segment(table.storage)
    key = CacheKey.of(table.storage.root, segment, policy=policy, columns=columns)
    found = cache.load(key)
    if found is not None:
        return found
    snapshot = snapshot or load_snapshot(table.storage, segment=segment, clock=table.clock)
    figures = compute_version_health(table, snapshot, policy=policy, columns=columns, now_ms=now_ms, cache=cache)
    cache.store(key, figures)
    return figures


def health_report(table: DeltaTable, figures: VersionHealth, *, policy: HealthPolicy, now_ms: int,
                  manifests: bool = False, log_listing: bool = False, watch: Stopwatch | None = None) -> HealthReport:
    """The report of ``figures`` at ``now_ms``: tombstones past retention, and (when asked, or
    always for manifests when the table declares them) the manifests' lag and the log files a
    cleanup would delete, then the score and the advice."""
    properties = TableProperties(figures.metadata.configuration)
    reclaimable, reclaimable_bytes = figures.tombstones.expired(expiry_cutoff(properties, now_ms))
    metrics = replace(figures.metrics, reclaimable_tombstones=reclaimable, reclaimable_bytes=reclaimable_bytes)
    # Tables that declare symlink manifests (Delta's compatibility property) are always judged on them.
    if (manifests or figures.metadata.configuration.get(SYMLINK_MANIFEST_ENABLED, "").lower() == "true") \
            and figures.manifests_possible:
        generated = manifest_state_version(table.storage, table_id=figures.metadata.id)
        behind = figures.version - generated if generated is not None else figures.version + 1
        metrics = replace(metrics, manifest_version=generated, manifest_versions_behind=max(0, behind))
    if log_listing:
        metrics = replace(metrics, expired_log_files=_expired_log_files(table.storage, properties, now_ms))
    parts = score_parts(metrics, policy)
    return HealthReport(
        table=table.uri, version=figures.version, score=total_score(parts), parts=parts, metrics=metrics,
        recommendations=recommend(metrics, policy, clustered=bool(figures.clustered)),
        duration_seconds=(watch or Stopwatch()).seconds(), policy=policy,
    )


def table_health(
    table: DeltaTable,
    *,
    policy: HealthPolicy | None = None,
    columns: Sequence[str] | None = None,
    manifests: bool = False,
    log_listing: bool = False,
    snapshot: Snapshot | None = None,
    cache: HealthCache | None = None,
) -> HealthReport:
    """Health of ``table`` at ``snapshot`` (default: the latest).

    ``columns``: Z-order columns to judge clustering on (default: the table's liquid clustering
    columns, if any). ``manifests``: also read how far the symlink manifests lag (always, when the table
    sets ``delta.compatibility.symlinkFormatManifest.enabled``; never where ``manifest`` refuses
    the table).
    ``log_listing``: also list ``_delta_log`` to count what log cleanup would delete.
    ``cache``: where the version's figures are kept between evaluations (``cache``).
    """
    watch = Stopwatch()
    policy = policy or HealthPolicy()
    now_ms = table.clock()
    figures = version_health(table, policy=policy, columns=columns, snapshot=snapshot, cache=cache, now_ms=now_ms)
    return health_report(table, figures, policy=policy, now_ms=now_ms, manifests=manifests, log_listing=log_listing,
                         watch=watch)
