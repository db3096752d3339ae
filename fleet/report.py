"""The fleet report: one asset (``fleet/report``, group ``fleet``) listing every table with its
health score, failing checks, last and next maintenance and the gain its advised runs would bring,
as a Markdown table in the UI, with the counts as numbers Dagster plots.

Cheap: each table's health and failing checks come from its log alone
(``delta_core.health.checks.evaluate_checks``, the functions of the table's asset checks, with the
thresholds the UI and the advisor use; no data file read, no Spark), the last maintenance from the
instance's latest materializations of the table's maintenance assets, the next from the crons
in tables.yaml (``schedules.next_tick``). The ``fleet_report`` job refreshes it from the UI; the
``fleet_report_schedule`` (``fleet.report_cron``, hourly by default; stopped at first) on a cadence.

No ``from __future__ import annotations``: Dagster reads the asset's ``context`` annotation as a type.
"""

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    DagsterInstance,
    DefaultScheduleStatus,
    MaterializeResult,
    MetadataValue,
    ScheduleDefinition,
    asset,
    define_asset_job,
)

from assets.health_view import health_columns, health_policy
from assets.maintenance import maintenance_asset_key
from delta_core.config.generated_names import FLEET_GROUP, FLEET_REPORT_ASSET_NAME, FLEET_REPORT_JOB
from delta_core.errors import NotADeltaTableError
from delta_core.health.checks import TableChecks, evaluate_checks
from delta_core.health.priority import restored_points, rewrite_bytes
from delta_core.health.report import HealthReport
from delta_core.model.sizes import format_size
from jobs import AssetJob
from resources import resource_key_of, table_resource
from resources.config import MaintenanceConfig, TableConfig
from schedules import SCHEDULE_TIMEZONE
from schedules.next_tick import next_tick

FLEET_REPORT_KEY = AssetKey([FLEET_GROUP, FLEET_REPORT_ASSET_NAME])
FLEET_REPORT_SCHEDULE = "fleet_report_schedule"
# Recommendations name the CLI command (``cleanup-log``); checks' remedies name registry entries.


def failing_checks(checks: TableChecks) -> tuple[str, ...]:
    """The named health checks (``delta_core.health.checks``, the asset checks' own functions)
    that fail on the table, with their severity: ``small_files (ERROR)``."""
    return tuple(f"{c.name} ({c.status.name})" for c in checks.checks if not c.passed)


def _utc(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def last_maintenance(instance: DagsterInstance, table: TableConfig) -> str:
    """The table's newest maintenance materialization: ``"<operation> <time>"``, or ``"never"``."""
    keys = [maintenance_asset_key(table.name, op) for op in table.operations]
    latest = [(entry.timestamp, key.path[-1]) for key, entry in instance.get_latest_materialization_events(keys).items()
              if entry is not None]
    if not latest:
        return "never"
    when, op = max(latest)
    return f"{op} {_utc(when)}"


def next_maintenance(table: TableConfig, now: float) -> str:
    """The table's earliest schedule tick after ``now`` (``"<operation> <time>"``; its schedule
    must be running); else ``"on health"`` when the fleet advisor watches it, else ``"by hand"``."""
    after = datetime.datetime.fromtimestamp(now, tz=datetime.UTC)
    ticks = [(next_tick(cron, after), op) for op in table.operations
             if (cron := getattr(table.policy(op), "cron", None)) is not None]
    if ticks:
        when, op = min(ticks)
        return f"{op} {when.strftime('%Y-%m-%d %H:%M')} {SCHEDULE_TIMEZONE}" + (
            "; on health" if table.advisor.auto else "")
    return "on health" if table.advisor.auto else "by hand"


def gain_summary(report: HealthReport) -> tuple[float, str]:
    """Health points the recommended runs would restore in total, and each run's gain in its own
    unit, points and the bytes it would rewrite (``delta_core.health.priority``)."""
    total = 0.0
    runs = []
    for r in report.recommendations:
        points = restored_points(report.parts, r.part)
        total += points
        runs.append(f"{r.operation}: {r.estimated_gain:g} {r.unit}, +{points:.1f} pts, "
                    f"rewrites {format_size(rewrite_bytes(r))}")
    return round(total, 1), "; ".join(runs) or "nothing to do"


@dataclass(frozen=True, slots=True)
class TableRow:
    """One table's line of the report (``report`` None: the log could not be read)."""

    name: str
    checks: TableChecks | None
    problem: str | None
    last: str
    next: str

    @property
    def report(self) -> HealthReport | None:
        return self.checks.report if self.checks is not None else None

    def cells(self) -> list[str]:
        if self.checks is None or self.report is None:
            failing = ", ".join(failing_checks(self.checks)) if self.checks is not None else ""
            return [self.name, "n/a", failing or self.problem or "", self.last, self.next, "n/a"]
        points, runs = gain_summary(self.report)
        checks = ", ".join(failing_checks(self.checks)) or "none"
        return [self.name, str(self.report.score), checks, self.last, self.next, f"+{points:g} pts ({runs})"]


def report_markdown(rows: list[TableRow]) -> str:
    lines = ["| table | health | failing checks | last maintenance | next maintenance | estimated gain |",
             "|---|---:|---|---|---|---|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def build_fleet_report(config: MaintenanceConfig, *, clock: Callable[[], float] = time.time
                       ) -> tuple[AssetsDefinition, AssetJob, ScheduleDefinition]:
    """The report asset, its job (``fleet_report``) and its schedule (``fleet_report_schedule``)."""
    tables = config.tables

    # No "delta" kind: the all-tables maintenance job selects assets of that kind.
    @asset(key=FLEET_REPORT_KEY, group_name=FLEET_GROUP,
           required_resource_keys={resource_key_of(t) for t in tables},
           description="Every managed table with its health, failing checks, last and next maintenance and "
                       "the gain of its advised runs (from the Delta logs and this instance; no Spark).")
    def fleet_report(context: AssetExecutionContext) -> MaterializeResult:
        now = clock()
        rows = []
        for table in tables:
            last, upcoming = last_maintenance(context.instance, table), next_maintenance(table, now)
            dt = table_resource(context.resources, table).open()
            try:
                checks = evaluate_checks(dt, policy=health_policy(table), columns=health_columns(table))
            except NotADeltaTableError as missing:
                rows.append(TableRow(table.name, None, f"not readable: {missing}", last, upcoming))
                continue
            rows.append(TableRow(table.name, checks, None, last, upcoming))
        failing = sum(1 for r in rows if r.checks is None or failing_checks(r.checks))
        scores = [r.report.score for r in rows if r.report is not None]
        return MaterializeResult(metadata={
            "report": MetadataValue.md(report_markdown(rows)),
            "tables": MetadataValue.int(len(rows)),
            "failing_tables": MetadataValue.int(failing),
            "lowest_score": MetadataValue.int(min(scores)) if scores else MetadataValue.text("n/a"),
        })

    job = define_asset_job(FLEET_REPORT_JOB, selection=AssetSelection.assets(FLEET_REPORT_KEY),
                           description="Refresh the fleet report (fleet/report).")
    schedule = ScheduleDefinition(
        name=FLEET_REPORT_SCHEDULE, cron_schedule=config.fleet.report_cron, execution_timezone=SCHEDULE_TIMEZONE,
        job=job, default_status=DefaultScheduleStatus.STOPPED,
        description=f"Refresh the fleet report on '{config.fleet.report_cron}' ({SCHEDULE_TIMEZONE}).")
    return fleet_report, job, schedule
