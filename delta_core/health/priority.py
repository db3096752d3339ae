"""Which maintenance run pays off most per byte it rewrites: the fleet's ranking of candidate runs.

A recommendation's ``estimated_gain`` counts in its operation's own unit (files fewer, rows
purged, skip-ratio rise, bytes reclaimed, commits a reader no longer replays), so gains of
different operations cannot be compared directly. The ranking puts every gain in one unit, the
**health points** the fix restores: the weight of the score part the operation repairs times how
far that part is from perfect, over the table's total weight, times 100 — what the table's 0-100
score (``health.score``) would rise by if the operation fixed its part. The part scores already
judge each figure against the table's own thresholds, so a table whose policy tolerates more
small files gains fewer points from a compaction.

The cost is the bytes the run would rewrite, as the recommendation estimates them from the log
(``advice``; no data file read). A rewrite's ``max_bytes`` bound (its tables.yaml section) caps
the estimate: the run stops there.

Candidates rank by points per byte, highest first, counting a run that rewrites nothing as one
byte: such runs come first, by their points; then rewrites, cheapest benefit first. Ties go to
the larger gain, then to table and operation names, so the order is stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from delta_core.health.advice import Recommendation
from delta_core.health.score import ScorePart
from delta_core.maintenance.operations import REGISTRY

# The registry names of the operations that rewrite data files (the fleet's byte budgets count them).
REWRITES = frozenset(op.name for op in REGISTRY if op.rewrites_data)


def restored_points(parts: Iterable[ScorePart], part: str | None) -> float:
    """Health points (0-100 scale) the table regains when a run repairs score part ``part``; 0
    for a run that repairs no scored part (``None``: log cleanup, log compaction)."""
    parts = tuple(parts)
    total = sum(p.weight for p in parts)
    lost = sum(p.weight * (1.0 - p.score) for p in parts if p.name == part)
    return round(100.0 * lost / total, 4) if total else 0.0


def rewrite_bytes(recommendation: Recommendation, *, max_bytes: int | None = None) -> int:
    """Bytes the recommended run would rewrite, capped at ``max_bytes`` (the run's bound) when given."""
    estimate = recommendation.rewrite_bytes
    return min(estimate, max_bytes) if max_bytes is not None else estimate


@dataclass(frozen=True, slots=True)
class Candidate:
    """One run the fleet could request: ``operation`` is the registry name (as the
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


def candidate(table: str, recommendation: Recommendation, parts: Iterable[ScorePart], *,
              max_bytes: int | None = None) -> Candidate:
    """The candidate run of one recommendation of ``table``'s health report."""
    return Candidate(table, recommendation.operation, restored_points(parts, recommendation.part),
                     rewrite_bytes(recommendation, max_bytes=max_bytes), recommendation)


def rank(candidates: Iterable[Candidate]) -> list[Candidate]:
    """``candidates`` best first: highest gain per byte, then most points, then by name."""
    return sorted(candidates, key=lambda c: (-c.gain_per_byte, -c.points, c.table, c.operation))
