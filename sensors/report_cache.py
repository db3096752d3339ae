"""The fleet advisor's health reports kept between its ticks, so a tick over thousands of tables
replays only the logs that moved.

A table's report (``delta_core.health.report.table_health``, a replay of its log) is reused
while the table's latest version (one listing of ``_delta_log``) is the version it was computed
at and it is younger than ``max_age_seconds``; else it is computed again. The figures that
change without a commit (tombstone ages: vacuum due; time since the last optimize) are thus at
most ``max_age_seconds`` old. The reports live in the code server's memory: a restart computes
every table again, as the first tick does.

``tables_oldest_first`` orders a tick's tables so that, when the tick's time budget runs out
before every table is evaluated (``sensors.advisor``), the tables never evaluated or evaluated
longest ago go first and the next tick takes up the rest. A table counts as evaluated when its
report is computed or found current (its log listed), so the ticks take the tables in turn:
each is reached within ``ceil(tables / tables one tick reaches)`` ticks, even when listing
every unmoved table takes longer than one tick.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from delta_core.health.report import HealthReport
from delta_core.log.table import DeltaTable

_Entry = TypeVar("_Entry")


@dataclass(frozen=True, slots=True)
class _Cached:
    version: int
    computed_at: float  # the advisor's clock, POSIX seconds
    report: HealthReport


@dataclass(slots=True)
class ReportCache:
    """Each table's latest health report, by table name (module docstring)."""

    max_age_seconds: float
    _reports: dict[str, _Cached] = field(default_factory=dict)
    _evaluated_at: dict[str, float] = field(default_factory=dict)  # computed or found current

    def report(self, name: str, table: DeltaTable, compute: Callable[[], HealthReport], *,
               now: float) -> HealthReport:
        """``name``'s report at its latest version: the cached one, or ``compute()``'s."""
        cached = self._reports.get(name)
        self._evaluated_at[name] = now
        if cached is not None and now - cached.computed_at < self.max_age_seconds \
                and table.latest_version() == cached.version:
            return cached.report
        report = compute()
        self._reports[name] = _Cached(report.version, now, report)
        return report

    def tables_oldest_first(self, names: Sequence[str], entries: Sequence[_Entry]) -> list[_Entry]:
        """``entries`` (one per table of ``names``, same order): never evaluated first, then by age."""
        order = sorted(range(len(names)), key=lambda i: self._evaluated_at.get(names[i], float("-inf")))
        return [entries[i] for i in order]
