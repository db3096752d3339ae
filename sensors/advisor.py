"""The fleet advisor: one sensor for every table with ``advisor: {mode: auto}`` in tables.yaml,
requesting the maintenance that pays off most across the fleet, within the fleet budget.

Declarative automation (``assets.automation``, ``default_automation_condition_sensor``) is the
default way to run maintenance by health; this sensor is kept for what a condition cannot express:

- a run that says why: its tags carry the reason, the estimated gain and the health figures
  (a condition launches a run of the asset selection with the sensor's fixed tags only);
- a decision across tables: ranking by estimated gain per byte and a fleet budget need every
  table's candidates at once, while a condition is evaluated per asset, in graph order;
- a run key per table version, and ``TABLE_OPERATION_TAG`` for the run queue's per
  table-operation limit (conditions hold back with "not in progress" instead).

Turn on one of the two for a table, not both (README, "Automation").

Each tick computes every such table's health from its log alone (``delta_core.health.table_health``,
the report ``delta-core health`` prints; PROTOCOL.md "Action Reconciliation" gives the live
files and tombstones it counts) with the table's thresholds (``AdvisorPolicy.health``, a
``HealthPolicy``). Each *enabled* operation it recommends is a candidate, except when

- a run of that operation's job on that table has not finished (one at a time);
- the last one ended less than ``cooldown_minutes`` ago (vacuum: ``vacuum_min_interval_hours``,
  if longer: at most daily by default);
- the sensor already requested it at this table version (cursor ``{table: {operation:
  version}}``; the run key says the same, so the daemon also drops a repeat);
- it is a checkpoint and the table's log sensor is on: that sensor requests checkpoints as
  the commits land (``checkpoint.interval``, else ``delta.checkpointInterval`` here).

A table's report is reused from the previous tick while its version has not moved (for at most
``REPORT_MAX_AGE_SECONDS``; ``sensors.report_cache``), so a tick over thousands of tables replays
only the logs that moved. A tick stops computing reports after ``TICK_BUDGET_SECONDS`` (well
inside Dagster's 60 s sensor timeout): the tables not reached (those evaluated longest ago go
first) wait for the next tick, which the log says.

The candidates of all tables are ranked by health points restored per byte rewritten
(``delta_core.health.priority``) and requested in that order until the fleet budget
(``fleet.budget``: windows, concurrent runs, bytes per hour and day, from tables.yaml ``fleet``)
holds one; it and the rest wait for a later tick. The run's tags carry the reason, the
estimated gain (its own unit and in health points), the bytes it would rewrite and the health
figures. Schedules stay for fixed times. ``advisor_run_limits`` gives the matching run-queue
section of the instance's ``dagster.yaml`` (``fleet.budget`` says how the two fit together).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetsDefinition,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.health_view import health_cache
from assets.maintenance import TABLE_TAG
from delta_core.config.generated_names import DISCOVERED_PARTITIONS, DISCOVERED_TABLES_RESOURCE_KEY
from delta_core.errors import ConfigError, NotADeltaTableError
from delta_core.health.cache import HealthCache
from delta_core.health.priority import Candidate, candidate, rank
from delta_core.health.report import HealthReport, table_health
from delta_core.log.table import DeltaTable
from delta_core.maintenance.operations import CHECKPOINT, MANIFEST, ZORDER
from delta_core.maintenance.options import ZOrderOptions
from delta_core.model.sizes import format_size
from fleet.budget import admit
from fleet.usage import ESTIMATED_BYTES_TAG, FleetScope, fleet_usage, max_bytes_bound
from jobs import AssetJob, TableJobs, partition_jobs
from resources import resource_key_of, table_resource
from resources.config import FleetPolicy, TableConfig
from resources.delta_table import DiscoveredTables
from schedules import op_run_config, policy_run_config
from sensors.report_cache import ReportCache

ADVISOR_TAG = "delta_maintenance/advisor"
TABLE_OPERATION_TAG = "delta_maintenance/table_operation"  # "<table>.<operation>": one at a time
TRIGGER_TAG = "delta_maintenance/trigger"
VERSION_TAG = "delta_maintenance/version"
REASON_TAG = "delta_maintenance/reason"
GAIN_TAG = "delta_maintenance/estimated_gain"
POINTS_TAG = "delta_maintenance/estimated_points"  # the gain in health points (the fleet's ranking)
HEALTH_TAG_PREFIX = "delta_maintenance/health_"  # + a HealthReport.headline() key

_FINISHED = (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)

FLEET_ADVISOR_SENSOR = "fleet_advisor_sensor"
REPORT_MAX_AGE_SECONDS = 3600.0  # how stale the time-dependent figures of an unmoved table may get
TICK_BUDGET_SECONDS = 40.0  # computing reports stops here; Dagster's sensor timeout is 60 s
AdvisedTable = tuple[TableConfig, TableJobs, dict[str, AssetsDefinition]]  # a table, its jobs, its assets by op


def advisor_run_limits(*, max_concurrent_runs: int) -> dict[str, Any]:
    """The ``concurrency`` section of the instance's ``dagster.yaml`` that bounds advised runs:
    at most ``max_concurrent_runs`` in progress across tables, and one per table and operation.
    Dagster's run queue (the default ``QueuedRunCoordinator``) enforces it; give tables.yaml's
    ``fleet.max_concurrent_runs`` the same number (``fleet.budget``)."""
    if max_concurrent_runs <= 0:
        raise ConfigError(f"max_concurrent_runs must be positive, got {max_concurrent_runs}")
    return {"runs": {"tag_concurrency_limits": [
        {"key": ADVISOR_TAG, "limit": max_concurrent_runs},
        {"key": TABLE_OPERATION_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1},
    ]}}


def _is_version(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_advisor_cursor(cursor: str | None) -> dict[str, dict[str, int]]:
    """``{table: {operation: version it was last requested at}}``."""
    if not cursor:
        return {}
    try:
        raw = json.loads(cursor)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict) or not all(
            isinstance(ops, dict) and all(_is_version(v) for v in ops.values()) for ops in raw.values()):
        raise ConfigError(f"advisor sensor cursor {cursor!r} is not a mapping of table to operation to version; "
                          "clear the sensor's cursor in the UI to start afresh")
    return raw


def health_tags(report: HealthReport) -> dict[str, str]:
    """The report's plotted figures as run tags (absent figures left out)."""
    return {f"{HEALTH_TAG_PREFIX}{k}": f"{v:g}" if isinstance(v, float) else str(v)
            for k, v in report.headline().items() if v is not None}


def _held_back(context: SensorEvaluationContext, job_name: str, *, cooldown_seconds: float, now: float,
               tags: dict[str, str] | None = None) -> str | None:
    """Why no run of ``job_name`` (with ``tags``: of a shared job, for one table) may start now, or None."""
    records = context.instance.get_run_records(filters=RunsFilter(job_name=job_name, tags=tags or {}), limit=1)
    if not records:
        return None
    record = records[0]
    if record.dagster_run.status not in _FINISHED:
        return f"run {record.dagster_run.run_id} is {record.dagster_run.status.value}"
    # No end time means the run never started (e.g. canceled in the queue): count from its creation.
    ended = record.end_time if record.end_time is not None else record.create_timestamp.timestamp()
    left = ended + cooldown_seconds - now
    return f"cool-down: {left / 60:.0f} more minutes" if left > 0 else None


def _candidates(context: SensorEvaluationContext, advised: AdvisedTable, report: HealthReport,
                requested: dict[str, int], *, now: float) -> tuple[list[Candidate], list[str]]:
    """The table's candidate runs, and why its other recommendations are not candidates."""
    table, jobs, _ = advised
    out: list[Candidate] = []
    held: list[str] = []
    for rec in report.recommendations:
        op = rec.operation  # a registry name, as jobs are named
        job = jobs.operations.get(op)
        if job is None:
            continue  # not enabled for this table (or not a job, like cleanup_log)
        where = f"{table.name}.{op}"
        if op == CHECKPOINT.name and table.sensor.enabled:
            # The log sensor requests checkpoints as the commits land; two requesters would race.
            held.append(f"{where}: left to the log sensor")
            continue
        if requested.get(op) == report.version:
            held.append(f"{where}: already requested at version {report.version}")
            continue
        # a fleet or partitioned job: its runs for this table carry the table's tag
        why_not = _held_back(context, job.name, cooldown_seconds=table.advisor.cooldown_minutes_for(op) * 60.0,
                             now=now, tags={TABLE_OPERATION_TAG: f"{table.name}.{op}"} if jobs.shares(job) else None)
        if why_not is not None:
            held.append(f"{where}: {why_not}")
            continue
        out.append(candidate(table.name, rec, report.parts, max_bytes=max_bytes_bound(table, op)))
    return out, held


def _request(advised: AdvisedTable, report: HealthReport, c: Candidate) -> RunRequest:
    table, jobs, assets_by_op = advised
    op = c.operation
    rec = c.recommendation
    return RunRequest(
        run_key=f"{table.name}:advisor:{op}:v{report.version}",
        job_name=jobs.operations[op].name,
        asset_selection=jobs.selection(jobs.operations[op]),
        asset_check_keys=jobs.check_selection(jobs.operations[op]),
        run_config=op_run_config(assets_by_op[op], policy_run_config(table, op)),
        tags={TABLE_TAG: table.name, TRIGGER_TAG: "advisor", VERSION_TAG: str(report.version),
              ADVISOR_TAG: "true", TABLE_OPERATION_TAG: f"{table.name}.{op}",
              REASON_TAG: rec.reason, GAIN_TAG: f"{rec.estimated_gain:g} {rec.unit}",
              POINTS_TAG: f"{c.points:g}", ESTIMATED_BYTES_TAG: str(c.rewrite_bytes),
              **health_tags(report), **jobs.run_tags},
    )


def _report(table: TableConfig, dt: DeltaTable, cache: HealthCache | None) -> HealthReport:
    # None: the table's clustering columns
    columns = table.options(ZOrderOptions).columns if table.enabled(ZORDER.name) else None
    return table_health(dt, policy=table.advisor.health, columns=columns, manifests=table.enabled(MANIFEST.name),
                        cache=cache)


@dataclass(frozen=True, slots=True)
class AdvisedPartitions:
    """The discovered tables as partitions (``assets.discovered``) the advisor ranks with the
    listed ones: the partitions of the instance at each tick whose root says ``advisor: {mode: auto}``."""

    tables: DiscoveredTables
    jobs: Mapping[str, AssetJob]  # the discovered jobs by name
    assets_by_op: dict[str, AssetsDefinition]
    interval_seconds: int

    def advised(self, instance: DagsterInstance) -> list[AdvisedTable]:
        out = []
        for name in sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)):
            try:
                table = self.tables.record(name)
            except ConfigError:
                continue  # gone since the discovery sensor's last tick
            if table.advisor.auto and table.operations:
                out.append((table, partition_jobs(table, self.jobs), self.assets_by_op))
        return out


def build_fleet_advisor_sensor(tables: Sequence[AdvisedTable], fleet: FleetPolicy, scope: FleetScope, *,
                               clock: Callable[[], float] = time.time,
                               tick_budget_seconds: float = TICK_BUDGET_SECONDS,
                               partitions: AdvisedPartitions | None = None) -> SensorDefinition | None:
    """The fleet advisor over the tables whose ``advisor.mode`` is ``auto`` (None if there are
    none) and the ``partitions`` that are; it ticks at the shortest of their ``interval_seconds``.
    ``scope``: what counts as a maintenance run or a rewrite (``fleet.usage.fleet_scope`` of every
    table); ``clock``: POSIX seconds now (windows, cool-downs, the byte limits' hour and day, the
    reports' age); ``tick_budget_seconds``: wall-clock time after which a tick computes no more reports."""
    advised = [a for a in tables if a[0].advisor.auto and a[1].operations]
    if not advised and partitions is None:
        return None
    cache = ReportCache(REPORT_MAX_AGE_SECONDS)
    listed = ", ".join(t.name for t, _, _ in advised)
    whose = " and ".join(filter(None, [listed, "the discovered tables whose root says so" if partitions else ""]))

    @sensor(
        name=FLEET_ADVISOR_SENSOR,
        jobs=[job for _, jobs, _ in advised for job in jobs.operations.values()]
        + (list(partitions.jobs.values()) if partitions is not None else []),
        minimum_interval_seconds=min([t.advisor.interval_seconds for t, _, _ in advised]
                                     + ([partitions.interval_seconds] if partitions is not None else [])),
        required_resource_keys={resource_key_of(t) for t, _, _ in advised}
        | ({DISCOVERED_TABLES_RESOURCE_KEY} if partitions is not None else set()),
        default_status=DefaultSensorStatus.STOPPED,
        description=("Requests the maintenance that pays off most across the tables with advisor mode auto "
                     f"({whose}), best gain per byte rewritten first, "
                     "within the fleet budget of tables.yaml (fleet section)."),
    )
    def _advisor(context: SensorEvaluationContext) -> SensorResult:
        now = clock()
        requested = parse_advisor_cursor(context.cursor)
        reports: dict[str, HealthReport] = {}
        candidates: list[Candidate] = []
        held: list[str] = []
        stop_at = time.monotonic() + tick_budget_seconds
        figures = health_cache(context.instance)  # what other processes computed of each version
        not_reached = 0
        every = advised + (partitions.advised(context.instance) if partitions is not None else [])
        names = [a[0].name for a in every]
        for entry in cache.tables_oldest_first(names, every):
            table = entry[0]
            if time.monotonic() >= stop_at:
                not_reached += 1
                continue
            dt = table_resource(context.resources, table).open()
            try:
                report = cache.report(table.name, dt, functools.partial(_report, table, dt, figures), now=now)
            except (NotADeltaTableError, ConfigError) as unjudged:  # gone, or its policy misfits its schema
                held.append(f"{table.name}: {unjudged}")
                continue
            reports[table.name] = report
            found, not_now = _candidates(context, entry, report, requested.get(table.name, {}), now=now)
            candidates.extend(found)
            held.extend(not_now)
        admission = admit(rank(candidates), fleet_usage(context.instance, scope, now=now), fleet, now=now)
        by_name = {a[0].name: a for a in every}
        requests = []
        for c in admission.admitted:
            report = reports[c.table]
            requests.append(_request(by_name[c.table], report, c))
            requested.setdefault(c.table, {})[c.operation] = report.version
        if not_reached:
            held.append(f"{not_reached} table(s) not evaluated within this tick's {tick_budget_seconds:g} s: next tick")
        if admission.held:
            waiting = ", ".join(f"{c.table}.{c.operation} ({format_size(c.rewrite_bytes)})"
                                for c in admission.held)
            held.append(f"fleet budget: {admission.reason}; waiting: {waiting}")
        if held:
            context.log.info(f"not requested: {'; '.join(held)}")
        cursor = json.dumps(requested, sort_keys=True)
        if not requests:
            scores = ", ".join(f"{name} {r.score}" for name, r in reports.items())
            return SensorResult(skip_reason="; ".join(held) if held else f"nothing pays off (scores: {scores})",
                                cursor=cursor)
        return SensorResult(run_requests=requests, cursor=cursor)

    return _advisor
