"""Recommendations: which maintenance operation pays off now, why, and by how much.

An operation is recommended when the table's policy threshold is crossed *and* its estimated
gain is positive, so the advice never asks for work that changes nothing: a partition holding
one small file has nothing to compact (the compaction plan drops single-file bins), a fresh
checkpoint needs no other, a single file cannot be clustered better. The rewrites are judged by
what their own plans predict: compaction and purge must bring their figure within the threshold
or move it by a stated minimum (``rewrite_targets``), Z-order and clustering likewise (below).

Gains, each in its own unit: compact — files fewer after the rewrite; purge — deleted rows
dropped (of the files over the per-file ratio an automated purge rewrites); analyze — files whose stats it completes; zorder/cluster — rise of the point-query skip
ratio to what the run's own plan predicts (``layout_estimate``), advised only when it reaches the
floor or rises by ``MIN_SKIP_RISE`` (``metrics.skip_unreachable`` says why not otherwise); checkpoint — commits a reader no longer
replays; vacuum — bytes of expired tombstones; cleanup_log — log files deletable; manifest —
versions the manifests lag behind. Each recommendation names its operation by its registry name
(``delta_core.maintenance.operations``), the score part (``score``) its run raises, and the bytes
it would rewrite, read from the log: a compaction the files its plan packs, a purge the files
over the per-file ratio, a Z-order or
clustering every live file (an upper bound: a ``where`` or clustered files kept narrow it); the
others rewrite no data file.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta_core.health.metrics import HealthMetrics
from delta_core.health.policy import HealthPolicy
from delta_core.health.rewrite_targets import (
    compaction_unreachable,
    deleted_ratio_after,
    deleted_rows_crossed,
    purge_unreachable,
    small_files_after,
    small_files_crossed,
)
from delta_core.health.score import (
    PART_CHECKPOINT,
    PART_DELETED_ROWS,
    PART_FILE_SIZES,
    PART_MANIFEST,
    PART_SKIPPING,
    PART_STATS_COVERAGE,
    PART_TOMBSTONES,
)
from delta_core.maintenance.operations import (
    ANALYZE,
    CHECKPOINT,
    CLEANUP_LOG,
    CLUSTER,
    COMPACT,
    MANIFEST,
    PURGE,
    VACUUM,
    ZORDER,
)
from delta_core.model.sizes import format_size
from delta_core.write.checkpoint_cadence import checkpoint_due


@dataclass(frozen=True, slots=True)
class Recommendation:
    operation: str  # the operation's registry name
    reason: str
    estimated_gain: float
    unit: str  # what the gain counts
    part: str | None = None  # the score part its run raises (``score``); None: no scored part
    rewrite_bytes: int = 0  # the bytes its run would rewrite, by the module's estimate


def recommend(metrics: HealthMetrics, policy: HealthPolicy, *, clustered: bool = False) -> tuple[Recommendation, ...]:
    """What to run, in the order a maintenance run would (rewrites, then deletes, then log)."""
    m = metrics
    out: list[Recommendation] = []
    if small_files_crossed(m, policy) and compaction_unreachable(m, policy) is None:
        small, files = small_files_after(m)
        out.append(Recommendation(
            COMPACT.name,
            f"{m.small_files} of {m.num_files} files ({m.small_file_ratio:.0%}) are under "
            f"{format_size(m.min_file_size)}; compaction would rewrite {m.compactable_files} files "
            f"into {m.compaction_output_files}, leaving {small} of {files} small",
            float(m.compactable_files - m.compaction_output_files), "files", PART_FILE_SIZES, m.compactable_bytes))
    if deleted_rows_crossed(m, policy) and purge_unreachable(m, policy) is None:
        out.append(Recommendation(
            PURGE.name, f"{m.deleted_rows} of {m.num_records} rows ({m.deleted_rows_ratio:.1%}) are deleted "
                        f"by deletion vectors in {m.files_with_deletion_vectors} files, above "
                        f"{policy.purge_deleted_rows_ratio:.1%}; purging the {m.purgeable_files} files with more "
                        f"than {policy.purge_file_ratio:.1%} of their rows deleted leaves "
                        f"{deleted_ratio_after(m):.1%}", float(m.purgeable_deleted_rows), "rows", PART_DELETED_ROWS,
            m.purgeable_bytes))
    uncovered = m.num_files - m.stats_covered_files
    if uncovered > 0 and m.stats_coverage < policy.stats_coverage_floor:
        out.append(Recommendation(
            ANALYZE.name, f"{uncovered} of {m.num_files} files ({1 - m.stats_coverage:.0%}) lack stats for some of the "
                     f"columns the table indexes ({', '.join(m.stats_columns) or 'numRecords only'}), so queries "
                     f"cannot skip them; coverage {m.stats_coverage:.0%} is under {policy.stats_coverage_floor:.0%}",
            float(uncovered), "files", PART_STATS_COVERAGE))
    if m.skip_ratio is not None and m.skip_ratio < policy.skip_ratio_floor and m.skip_unreachable is None \
            and m.predicted_skip_ratio is not None:
        rise = round(m.predicted_skip_ratio - m.skip_ratio, 4)
        if rise > 0:
            out.append(Recommendation(
                (CLUSTER if clustered else ZORDER).name,
                f"point queries on {', '.join(m.columns)} skip {m.skip_ratio:.0%} of files "
                f"(floor {policy.skip_ratio_floor:.0%}; average overlap depth {m.overlap_depth}); its plan "
                f"predicts {m.predicted_skip_ratio:.0%}",
                rise, "skip ratio", PART_SKIPPING, m.total_bytes))
    if m.reclaimable_bytes > 0 and m.reclaimable_bytes >= policy.vacuum_min_reclaimable_bytes:
        out.append(Recommendation(
            VACUUM.name, f"{m.reclaimable_tombstones} removed files ({format_size(m.reclaimable_bytes)}) "
                         "are past the deleted-file retention", float(m.reclaimable_bytes), "bytes", PART_TOMBSTONES))
    if checkpoint_due(m.versions_since_checkpoint, m.checkpoint_interval):
        out.append(Recommendation(
            CHECKPOINT.name, f"{m.versions_since_checkpoint} commits ({format_size(m.log_bytes_since_checkpoint)}) "
                             f"since the last checkpoint, interval {m.checkpoint_interval}",
            float(m.versions_since_checkpoint), "commits", PART_CHECKPOINT))
    if m.expired_log_files:
        out.append(Recommendation(
            CLEANUP_LOG.name, f"{m.expired_log_files} log files are past delta.logRetentionDuration "
                              "and covered by a checkpoint", float(m.expired_log_files), "files"))
    if m.manifest_versions_behind:
        out.append(Recommendation(
            MANIFEST.name, f"the symlink manifests are {m.manifest_versions_behind} versions behind",
            float(m.manifest_versions_behind), "versions", PART_MANIFEST))
    return tuple(out)
