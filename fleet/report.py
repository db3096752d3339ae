"""The fleet report: one asset (``fleet/report``, group ``fleet``) listing every table with its
health score, failing checks, last and next maintenance and the gain its advised runs would bring,
as a Dagster table (``MetadataValue.table``, a few words a cell), with the counts as numbers
Dagster plots.

Cheap: each table's health and failing checks come from its log alone
(``delta_core.health.checks.evaluate_checks``, the functions of the table's asset checks, with the
thresholds the UI and the advisor use; no data file read, no Spark). The last maintenance is the
table's newest row of the maintenance history (tables.yaml ``history``: whoever ran it), else the
instance's latest materialization of its maintenance assets. The next comes only from what runs
in the instance: the table's running schedules (their crons, ``schedules.next_tick``), the
automation or advisor sensors for an advised table, its log sensor for checkpoints and manifests;
with none of them, "nothing scheduled". The ``fleet_report`` job refreshes it from the UI; the
``fleet_report_schedule`` (``fleet.report_cron``, hourly by default; stopped at first) on a cadence.

No ``from __future__ import annotations``: Dagster reads the asset's ``context`` annotation as a type.
"""

import dataclasses
import datetime
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetRecordsFilter,
    AssetsDefinition,
    AssetSelection,
    DagsterInstance,
    DefaultScheduleStatus,
    MaterializeResult,
    MetadataValue,
    ScheduleDefinition,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
    define_asset_job,
)

from assets.automation import DEFAULT_SENSOR_NAME as AUTOMATION_SENSOR_NAME
from assets.discovered import discovered_asset_key
from assets.health_view import health_cache, health_columns, health_policy
from assets.maintenance import maintenance_asset_key
from delta_core.config.generated_names import (
    DISCOVERED_PARTITIONS,
    DISCOVERED_TABLES_RESOURCE_KEY,
    FLEET_GROUP,
    FLEET_REPORT_ASSET_NAME,
    FLEET_REPORT_JOB,
)
from delta_core.errors import ConfigError, DeltaError, NotADeltaTableError
from delta_core.health.checks import TableChecks, evaluate_checks
from delta_core.health.priority import restored_points
from delta_core.health.report import HealthReport
from delta_core.maintenance.history_records import HistoryRow, location_key
from delta_core.maintenance.operations import CHECKPOINT, MANIFEST
from delta_core.model.sizes import format_size
from fleet.budget import DAY_SECONDS
from jobs import AssetJob
from resources import resource_key_of, table_resource
from resources.config import MaintenanceConfig, TableConfig
from schedules import SCHEDULE_TIMEZONE, schedule_name
from schedules.next_tick import next_tick
from sensors import sensor_name
from sensors.advisor import FLEET_ADVISOR_SENSOR
from sensors.discovered_log import DISCOVERED_LOG_SENSOR

FLEET_REPORT_KEY = AssetKey([FLEET_GROUP, FLEET_REPORT_ASSET_NAME])
FLEET_REPORT_SCHEDULE = "fleet_report_schedule"
# Recommendations name the CLI command (``cleanup-log``); checks' remedies name registry entries.


def failing_checks(checks: TableChecks) -> tuple[str, ...]:
    """The named health checks (``delta_core.health.checks``, the asset checks' own functions)
    that fail on the table, with their severity: ``small_files (ERROR)``."""
    return tuple(f"{c.name} ({c.status.name})" for c in checks.checks if not c.passed)


def _utc(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def last_maintenance(instance: DagsterInstance, table: TableConfig, history: Sequence[HistoryRow] | None, *,
                     partitioned: bool = False) -> str:
    """The table's newest maintenance: its newest history row (``"<operation> <status> <time>
    (<trigger>)"``), else (no history kept, or none recorded yet) its newest maintenance
    materialization (``"<operation> <time>"``; ``partitioned``: of its partition of the discovered
    tables' assets); ``"never"``."""
    mine = [r for r in history or () if r.table_name == table.name]
    if mine:
        last = max(mine, key=lambda r: r.end_time)
        return f"{last.operation} {last.status} {_utc(last.end_time.timestamp())} ({last.trigger})"
    if partitioned:
        latest = [(record.timestamp, op) for op in table.operations for record in instance.fetch_materializations(
            AssetRecordsFilter(asset_key=discovered_asset_key(op), asset_partitions=[table.name]), limit=1).records]
    else:
        keys = [maintenance_asset_key(table.name, op) for op in table.operations]
        latest = [(entry.timestamp, key.path[-1])
                  for key, entry in instance.get_latest_materialization_events(keys).items() if entry is not None]
    if not latest:
        return "never"
    when, op = max(latest)
    return f"{op} {_utc(when)}"


def written_last_day(history: Sequence[HistoryRow] | None, table: TableConfig, now: float) -> int | None:
    """Bytes the table's maintenance wrote in the 24 hours before ``now`` (its history rows); None
    without a history."""
    if history is None:
        return None
    return sum(r.bytes_written for r in history
               if r.table_name == table.name and 0 <= now - r.end_time.timestamp() <= DAY_SECONDS)


def running_instigators(instance: DagsterInstance, *, running_by_default: frozenset[str]) -> frozenset[str]:
    """Names of the schedules and sensors running in ``instance``: those whose stored state is not
    stopped, and those running by default (``running_by_default``) never switched in the UI."""
    states = {state.name: state for state in instance.all_instigator_state()}
    return frozenset({name for name, state in states.items() if state.is_running}
                     | {name for name in running_by_default if name not in states})


def next_maintenance(table: TableConfig, now: float, running: frozenset[str], *, partitioned: bool = False) -> str:
    """What maintains the table next, from the schedules and sensors in ``running`` only: its
    earliest running schedule's tick after ``now`` (``"<operation> <time>"``; ``partitioned``, a
    discovered table as a partition: its crons are its automation conditions', so an automation
    sensor must run), ``"on health"`` when it is advised and an automation or advisor sensor runs,
    ``"on commits (<operations>)"`` when its log sensor runs; ``"nothing scheduled"`` without any of them."""
    after = datetime.datetime.fromtimestamp(now, tz=datetime.UTC)
    automation = any(name.startswith(AUTOMATION_SENSOR_NAME) for name in running)
    ticks = [(next_tick(cron, after), op) for op in table.operations
             if (cron := getattr(table.policy(op), "cron", None)) is not None
             and (automation if partitioned else schedule_name(table.name, op) in running)]
    parts = []
    if ticks:
        when, op = min(ticks)
        parts.append(f"{op} {when.strftime('%Y-%m-%d %H:%M')} {SCHEDULE_TIMEZONE}")
    if table.advisor.auto and any(name == FLEET_ADVISOR_SENSOR or name.startswith(AUTOMATION_SENSOR_NAME)
                                  for name in running):
        parts.append("on health")
    on_commits = [op for op in (CHECKPOINT.name, MANIFEST.name) if table.enabled(op)]
    if on_commits and (DISCOVERED_LOG_SENSOR if partitioned else sensor_name(table.name)) in running:
        parts.append(f"on commits ({', '.join(on_commits)})")
    return "; ".join(parts) or "nothing scheduled"


def gain_summary(report: HealthReport) -> tuple[float, str]:
    """Health points the recommended runs would restore in total, and each run with its points
    (``compact +12.3``; ``delta_core.health.priority``)."""
    total = 0.0
    runs = []
    for r in report.recommendations:
        points = restored_points(report.parts, r.part)
        total += points
        runs.append(f"{r.operation} +{points:.1f}")
    return round(total, 1), ", ".join(runs) or "none"


# The report's columns, each cell a few words, so that the table fits the asset page.
REPORT_SCHEMA = TableSchema(columns=[
    TableColumn("table", "string"),
    TableColumn("health", "int", description="0-100, from the log (empty: not readable)"),
    TableColumn("failing_checks", "string", description="failing health checks, with their severity"),
    TableColumn("last_maintenance", "string", description="newest run: the maintenance history, else Dagster's"),
    TableColumn("next_maintenance", "string", description="from running schedules and sensors only"),
    TableColumn("written_24h", "string", description="bytes maintenance wrote in 24 hours (maintenance history)"),
    TableColumn("gain_points", "float", description="health points the advised runs would restore"),
    TableColumn("advised", "string", description="the advised runs, each with its points"),
])


@dataclass(frozen=True, slots=True)
class TableRow:
    """One table's line of the report (``checks`` None: the log could not be read)."""

    name: str
    checks: TableChecks | None
    problem: str | None
    last: str
    next: str
    written: int | None = None  # bytes maintenance wrote in the last day; None: no history

    @property
    def report(self) -> HealthReport | None:
        return self.checks.report if self.checks is not None else None

    def record(self) -> TableRecord:
        common = {"table": self.name, "last_maintenance": self.last, "next_maintenance": self.next,
                  "written_24h": format_size(self.written) if self.written is not None else "n/a"}
        if self.checks is None or self.report is None:
            failing = ", ".join(failing_checks(self.checks)) if self.checks is not None else ""
            return TableRecord({**common, "health": None, "failing_checks": failing or self.problem or "",
                                "gain_points": None, "advised": "n/a"})
        points, runs = gain_summary(self.report)
        return TableRecord({**common, "health": self.report.score,
                            "failing_checks": ", ".join(failing_checks(self.checks)) or "none",
                            "gain_points": points, "advised": runs})


def report_text(records: Sequence[TableRecord]) -> str:
    """The report as lines of ``|``-separated cells under a header row (the demo prints it)."""
    names = [c.name for c in REPORT_SCHEMA.columns]
    lines = [" | ".join(names), " | ".join("-" * len(n) for n in names)]
    lines += [" | ".join("n/a" if r.data[n] is None else str(r.data[n]) for n in names) for r in records]
    return "\n".join(lines)


def build_fleet_report(config: MaintenanceConfig, *, running_by_default: frozenset[str] = frozenset(),
                       clock: Callable[[], float] = time.time) -> tuple[AssetsDefinition, AssetJob, ScheduleDefinition]:
    """The report asset, its job (``fleet_report``) and its schedule (``fleet_report_schedule``);
    ``running_by_default``: the code location's schedules and sensors that run unless stopped.
    With discovered tables as partitions, the report lists the partitions at its run."""
    partitioned = config.fleet.partitioned and bool(config.discover)
    listed = [t for t in config.tables if not (partitioned and t.discovered_under is not None)]

    # No "delta" kind: the all-tables maintenance job selects assets of that kind.
    @asset(key=FLEET_REPORT_KEY, group_name=FLEET_GROUP,
           required_resource_keys={resource_key_of(t) for t in listed}
           | ({DISCOVERED_TABLES_RESOURCE_KEY} if partitioned else set()),
           description="Every managed table with its health, failing checks, last and next maintenance and "
                       "the gain of its advised runs (from the Delta logs and this instance; no Spark).")
    def fleet_report(context: AssetExecutionContext) -> MaterializeResult:
        now = clock()
        running = running_instigators(context.instance, running_by_default=running_by_default)
        history = _history_rows(config, context)
        rows = []
        tables = [(t, False) for t in listed]
        if partitioned:
            tables += [(t, True) for t in _partition_tables(context)]
        for table, partition in tables:
            last = last_maintenance(context.instance, table, history, partitioned=partition)
            upcoming = next_maintenance(table, now, running, partitioned=partition)
            written = written_last_day(history, table, now)
            dt = table_resource(context.resources, table).open()
            try:
                checks = evaluate_checks(dt, policy=health_policy(table), columns=health_columns(table),
                                         cache=health_cache(context.instance))
            except NotADeltaTableError as missing:
                rows.append(TableRow(table.name, None, f"not readable: {missing}", last, upcoming, written))
                continue
            rows.append(TableRow(table.name, checks, None, last, upcoming, written))
        failing = sum(1 for r in rows if r.checks is None or failing_checks(r.checks))
        scores = [r.report.score for r in rows if r.report is not None]
        return MaterializeResult(metadata={
            "report": MetadataValue.table([r.record() for r in rows], schema=REPORT_SCHEMA),
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


def _partition_tables(context: AssetExecutionContext) -> list[TableConfig]:
    """The records of the discovered tables' partitions now (a table gone since: left out)."""
    store = getattr(context.resources, DISCOVERED_TABLES_RESOURCE_KEY)
    out = []
    for name in sorted(context.instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)):
        try:
            out.append(store.record(name))
        except ConfigError as gone:
            context.log.info(str(gone))
    return out


def _history_rows(config: MaintenanceConfig, context: AssetExecutionContext) -> list[HistoryRow] | None:
    """Every row of the maintenance history; None when tables.yaml keeps none, or (a warning)
    when it cannot be read: the report then falls back on Dagster's materializations."""
    from delta_core.maintenance.history_table import read_rows

    if config.history is None:
        return None
    try:
        return named_rows(read_rows(config.history.location()), config.tables)
    except DeltaError as exc:
        context.log.warning(f"maintenance history not read: {exc}")
        return None


def named_rows(rows: Sequence[HistoryRow], tables: Sequence[TableConfig]) -> list[HistoryRow]:
    """``rows``, those recorded without a table name (a CLI run given a URI) named after the table
    of tables.yaml at that location (a URI read from the environment is not matched)."""
    by_location = {location_key(t.uri): t.name for t in tables if isinstance(t.uri, str)}
    return [dataclasses.replace(r, table_name=by_location[key])
            if r.table_name is None and (key := location_key(r.table_uri)) in by_location else r for r in rows]
