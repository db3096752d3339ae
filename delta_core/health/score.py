"""The 0–100 health score, built from named parts (each: its weight, the figure it saw and
its own 0–1 score), so a reader sees why a table scores what it does.

Parts scale against the table's policy: a ratio at its policy threshold scores 0.5 and twice
the threshold scores 0, so "needs maintenance" sits in the same place for score and advice; a
share with a floor (skip ratio, stats coverage) scores its fraction of the floor.
Parts whose figure was not computed (no clustering columns, manifests not asked) are left out
rather than scored as perfect.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta_core.health.metrics import HealthMetrics
from delta_core.health.policy import HealthPolicy

# The parts' names (some read like operations': they name what a part judges, not who repairs it).
PART_FILE_SIZES = "file_sizes"
PART_DELETED_ROWS = "deleted_rows"
PART_CHECKPOINT = "checkpoint"
PART_SKIPPING = "skipping"
PART_TOMBSTONES = "tombstones"
PART_STATS_COVERAGE = "stats_coverage"
PART_MANIFEST = "manifest"
WEIGHTS = {
    PART_FILE_SIZES: 30.0,
    PART_DELETED_ROWS: 20.0,
    PART_CHECKPOINT: 15.0,
    PART_SKIPPING: 15.0,
    PART_TOMBSTONES: 10.0,
    PART_STATS_COVERAGE: 10.0,
    PART_MANIFEST: 5.0,
}


@dataclass(frozen=True, slots=True)
class ScorePart:
    """One named part: ``score`` in [0, 1] from ``value``, counted with ``weight``."""

    name: str
    weight: float
    value: float | int
    score: float


def _clamp(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 4)


def _against(value: float, threshold: float) -> float:
    """1 at 0, 0.5 at the threshold, 0 at twice it (a zero threshold: any value scores 0)."""
    if threshold <= 0:
        return 1.0 if value <= 0 else 0.0
    return _clamp(1.0 - value / (2 * threshold))


def score_parts(metrics: HealthMetrics, policy: HealthPolicy) -> tuple[ScorePart, ...]:
    m = metrics
    compactable = round(m.compactable_files / m.num_files, 6) if m.num_files else 0.0
    parts = [
        # Small files count only when compaction could merge them: one small file per
        # partition is as compact as that partition gets.
        ScorePart(PART_FILE_SIZES, WEIGHTS[PART_FILE_SIZES], compactable,
                  _against(compactable, policy.compact_small_file_ratio)),
        ScorePart(PART_DELETED_ROWS, WEIGHTS[PART_DELETED_ROWS], m.deleted_rows_ratio,
                  _against(m.deleted_rows_ratio, policy.purge_deleted_rows_ratio)),
        ScorePart(PART_CHECKPOINT, WEIGHTS[PART_CHECKPOINT], m.versions_since_checkpoint,
                  _against(m.versions_since_checkpoint, m.checkpoint_interval)),
    ]
    if m.skip_ratio is not None:
        floor = policy.skip_ratio_floor
        parts.append(ScorePart(PART_SKIPPING, WEIGHTS[PART_SKIPPING], m.skip_ratio,
                               _clamp(m.skip_ratio / floor) if floor > 0 else 1.0))
    held = m.reclaimable_bytes + m.total_bytes
    parts.append(ScorePart(PART_TOMBSTONES, WEIGHTS[PART_TOMBSTONES], m.reclaimable_bytes,
                           _clamp(1.0 - m.reclaimable_bytes / held) if held else 1.0))
    # A file without stats covers nothing, so this part also counts the files lacking numRecords.
    coverage_floor = policy.stats_coverage_floor
    parts.append(ScorePart(PART_STATS_COVERAGE, WEIGHTS[PART_STATS_COVERAGE], m.stats_coverage,
                           _clamp(m.stats_coverage / coverage_floor) if coverage_floor > 0 else 1.0))
    if m.manifest_versions_behind is not None:
        parts.append(ScorePart(PART_MANIFEST, WEIGHTS[PART_MANIFEST], m.manifest_versions_behind,
                               1.0 if m.manifest_versions_behind == 0 else 0.0))
    return tuple(parts)


def total_score(parts: tuple[ScorePart, ...]) -> int:
    """The weighted mean of the parts, 0–100 (100 for a table with nothing to judge)."""
    weight = sum(p.weight for p in parts)
    return round(100 * sum(p.weight * p.score for p in parts) / weight) if weight else 100
