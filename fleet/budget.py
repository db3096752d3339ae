"""The fleet budget: which of the ranked candidate runs may start now, under the limits across
all tables in tables.yaml's ``fleet`` section (``delta_core.config.records.FleetPolicy``).

Pure decisions over a ``FleetUsage`` (read from the instance by ``fleet.usage``) and a clock
value; the ranking itself is ``delta_core.health.priority`` (health points restored per byte
rewritten). The limits:

- ``windows``: advised runs start only when ``now`` (UTC) falls in one of the daily spans; a
  span whose end is before its start wraps past midnight (``22:00-06:00``). No windows: any time.
- ``max_concurrent_runs``: maintenance runs in progress (queued, starting, running, canceling),
  whoever started them (advisor, schedules, the log sensor, a person), plus those admitted in
  this decision.
- ``max_bytes_per_hour`` / ``max_bytes_per_day``: bytes rewritten in the rolling 60 minutes /
  24 hours before ``now`` — the ``bytes_removed`` of the rewrites' materializations — plus the
  estimates of rewrites in progress and of those admitted here. A run that rewrites nothing
  (vacuum, checkpoint, ...) is never held by a byte limit; a rewrite whose estimate does not fit
  is held, and so is everything ranked after it (runs start in rank order, so a cheaper run
  never overtakes a better one). A rewrite larger than a whole limit never fits: give its
  tables.yaml section a ``max_bytes`` bound, which caps its estimate and the run alike.

How this maps onto Dagster: the fleet advisor applies these limits when it *requests* runs.
Dagster's run queue still decides when requested runs *start*: the ``concurrency: runs:
tag_concurrency_limits`` of the instance's ``dagster.yaml`` (``sensors.advisor.advisor_run_limits``
writes the section: the same ``max_concurrent_runs`` on the advisor's tag, one run per table and
operation) or ``max_concurrent_runs`` of the run coordinator for every run. Use the same number
in both places: the queue then holds runs started by others too, and the budget keeps the
advisor from filling the queue with work that could not start. Bytes and windows have no
Dagster counterpart, so only the budget enforces them. Dagster pools (``pool=`` on the Spark
steps, ``concurrency: pools`` in dagster.yaml) bound *steps* on a cluster, not runs: a run the
budget admits may still wait for a pool slot.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from delta_core.config.records import FleetPolicy
from delta_core.health.priority import Candidate
from delta_core.model.sizes import format_size

HOUR_SECONDS = 3600.0
DAY_SECONDS = 24 * HOUR_SECONDS


@dataclass(frozen=True, slots=True)
class FleetUsage:
    """What maintenance uses now: runs in progress and bytes rewritten (or reserved by rewrites
    in progress) in the last hour and day."""

    runs_in_progress: int = 0
    bytes_last_hour: int = 0
    bytes_last_day: int = 0

    def plus(self, rewrite_bytes: int) -> FleetUsage:
        """The usage once one more run, rewriting ``rewrite_bytes``, is admitted."""
        return FleetUsage(self.runs_in_progress + 1, self.bytes_last_hour + rewrite_bytes,
                          self.bytes_last_day + rewrite_bytes)


def minute_of_day(now: float) -> int:
    """Minutes after UTC midnight of the POSIX time ``now``."""
    t = datetime.datetime.fromtimestamp(now, tz=datetime.UTC)
    return t.hour * 60 + t.minute


def outside_windows(policy: FleetPolicy, now: float) -> str | None:
    """Why no run may start at ``now`` by the maintenance windows, or None."""
    if not policy.windows or any(w.contains(minute_of_day(now)) for w in policy.windows):
        return None
    at = datetime.datetime.fromtimestamp(now, tz=datetime.UTC).strftime("%H:%M")
    return f"outside the maintenance windows ({', '.join(str(w) for w in policy.windows)} UTC; now {at} UTC)"


def held_by(policy: FleetPolicy, usage: FleetUsage, *, rewrite_bytes: int, now: float) -> str | None:
    """Why a run rewriting ``rewrite_bytes`` may not start at ``now`` under ``usage``, or None."""
    window = outside_windows(policy, now)
    if window is not None:
        return window
    limit = policy.max_concurrent_runs
    if limit is not None and usage.runs_in_progress >= limit:
        return f"max_concurrent_runs {limit} reached ({usage.runs_in_progress} maintenance runs in progress)"
    if rewrite_bytes:
        for name, limit_bytes, used, span in (("max_bytes_per_hour", policy.max_bytes_per_hour,
                                               usage.bytes_last_hour, "hour"),
                                              ("max_bytes_per_day", policy.max_bytes_per_day,
                                               usage.bytes_last_day, "24 hours")):
            if limit_bytes is not None and used + rewrite_bytes > limit_bytes:
                return (f"{name} {format_size(limit_bytes)}: {format_size(used)} rewritten in the last {span}, "
                        f"this run would rewrite {format_size(rewrite_bytes)} more")
    return None


@dataclass(frozen=True, slots=True)
class Admission:
    """The candidates that may start, in rank order, and those held (with why)."""

    admitted: tuple[Candidate, ...]
    held: tuple[Candidate, ...]
    reason: str | None  # why the first held candidate (and so the rest) is held


def admit(ranked: Sequence[Candidate], usage: FleetUsage, policy: FleetPolicy, *, now: float) -> Admission:
    """Admit ``ranked`` (best first) in order until a limit holds one; it and the rest wait."""
    admitted: list[Candidate] = []
    for i, c in enumerate(ranked):
        reason = held_by(policy, usage, rewrite_bytes=c.rewrite_bytes, now=now)
        if reason is not None:
            return Admission(tuple(admitted), tuple(ranked[i:]), reason)
        admitted.append(c)
        usage = usage.plus(c.rewrite_bytes)
    return Admission(tuple(admitted), (), None)
