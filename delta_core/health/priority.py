"""Which maintenance run pays off most per byte it rewrites: the fleet's ranking of candidate runs.

A recommendation's ``estimated_gain`` counts in its operation's own unit (files fewer, rows
purged, skip-ratio rise, bytes reclaimed, commits a reader no longer replays), so gains of
different operations cannot be compared directly. The ranking puts every gain in one unit, the
**health points** the fix restores: the weight of the score part the operation repairs times how
far that part is from perfect, over the table's total weight, times 100 — what the table's 0-100
score (``health.score``) would rise by if the operation fixed its part. The part scores already
judge each figure against the table's own thresholds, so a table whose policy tolerates more
small files gains fewer points from a compaction.

The cost is the bytes the run would rewrite, read from the log (no data file read):

- compact: the files the compaction plan would rewrite (``compactable_bytes``, as
  ``plan_compaction`` packs them);
- purge: the files carrying deletion vectors (an upper bound: files under the purge's ratio stay);
- zorder, cluster: every live file (an upper bound: a ``where`` or clustered files kept narrow it);
- vacuum, checkpoint, cleanup-log, manifest, compact-log, analyze: nothing rewritten (they delete
  files, write log files or re-add files with new statistics).

A rewrite's ``max_bytes`` bound (its tables.yaml section) caps the estimate: the run stops there.

Candidates rank by points per byte, highest first, counting a run that rewrites nothing as one
byte: such runs come first, by their points; then rewrites, cheapest benefit first. Ties go to
the larger gain, then to table and operation names, so the order is stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from delta_core.health.advice import ANALYZE, CLUSTER, PURGE, Recommendation
from delta_core.health.metrics import HealthMetrics
from delta_core.health.score import ScorePart
from delta_core.maintenance.operations import CHECKPOINT, COMPACT, MANIFEST, VACUUM, ZORDER

# The operations that rewrite data files (their CLI command and registry names are the same).
REWRITES = frozenset({COMPACT.name, ZORDER.name, CLUSTER, PURGE})
# Recommended operation (CLI command name) -> the score part its run repairs.
REPAIRED_PART: dict[str, str] = {
    COMPACT.cli_command: "file_sizes",
    PURGE: "deleted_rows",
    CHECKPOINT.cli_command: "checkpoint",
    ZORDER.cli_command: "skipping",
    CLUSTER: "skipping",
    VACUUM.cli_command: "tombstones",
    ANALYZE: "stats_coverage",
    MANIFEST.cli_command: "manifest",
}


def restored_points(parts: Iterable[ScorePart], operation: str) -> float:
    """Health points (0-100 scale) the table regains when ``operation`` repairs its part; 0 for
    an operation that repairs no scored part (cleanup-log, compact-log)."""
    parts = tuple(parts)
    total = sum(p.weight for p in parts)
    name = REPAIRED_PART.get(operation)
    lost = sum(p.weight * (1.0 - p.score) for p in parts if p.name == name)
    return round(100.0 * lost / total, 4) if total else 0.0


def rewrite_bytes(metrics: HealthMetrics, operation: str, *, max_bytes: int | None = None) -> int:
    """Bytes a run of ``operation`` (CLI command name) would rewrite, by the module's estimate,
    capped at ``max_bytes`` (the run's bound) when given."""
    if operation == COMPACT.cli_command:
        estimate = metrics.compactable_bytes
    elif operation == PURGE:
        estimate = metrics.deletion_vector_file_bytes
    elif operation in (ZORDER.cli_command, CLUSTER):
        estimate = metrics.total_bytes
    else:
        return 0
    return min(estimate, max_bytes) if max_bytes is not None else estimate


@dataclass(frozen=True, slots=True)
class Candidate:
    """One run the fleet could request: ``operation`` is the CLI command name (as the
    recommendation names it), ``points`` its gain in health points, ``rewrite_bytes`` its cost."""

    table: str
    operation: str
    points: float
    rewrite_bytes: int
    recommendation: Recommendation

    @property
    def gain_per_byte(self) -> float:
        """Health points per byte rewritten (a run that rewrites nothing counts one byte)."""
        return self.points / max(1, self.rewrite_bytes)


def candidate(table: str, recommendation: Recommendation, parts: Iterable[ScorePart], metrics: HealthMetrics,
              *, max_bytes: int | None = None) -> Candidate:
    """The candidate run of one recommendation of ``table``'s health report."""
    op = recommendation.operation
    return Candidate(table, op, restored_points(parts, op), rewrite_bytes(metrics, op, max_bytes=max_bytes),
                     recommendation)


def rank(candidates: Iterable[Candidate]) -> list[Candidate]:
    """``candidates`` best first: highest gain per byte, then most points, then by name."""
    return sorted(candidates, key=lambda c: (-c.gain_per_byte, -c.points, c.table, c.operation))
