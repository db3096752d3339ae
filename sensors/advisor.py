"""The advisor sensor: maintenance when it pays off (``advisor: {mode: auto}`` in tables.yaml).

Each tick computes the table's health from its log alone (``delta_core.health.table_health``,
the report ``delta-core health`` prints; PROTOCOL.md "Action Reconciliation" gives the live
files and tombstones it counts) with the table's thresholds (``AdvisorPolicy.health``, a
``HealthPolicy``), and requests one run of each *enabled* operation it recommends, except when

- a run of that operation's job on that table has not finished (one at a time);
- the last one ended less than ``cooldown_minutes`` ago (vacuum: ``vacuum_min_interval_hours``,
  if longer: at most daily by default);
- the sensor already requested it at this table version (cursor; the run key says the same,
  so the daemon also drops a repeat);
- it is a checkpoint and the table's log sensor is on: that sensor requests checkpoints as
  the commits land (``checkpoint.interval``, else ``delta.checkpointInterval`` here).

The run's tags carry the reason, the estimated gain and the health figures. Schedules stay for
fixed times. A global limit on advised runs is Dagster's own run queue: each advised run carries
``ADVISOR_TAG`` and ``TABLE_OPERATION_TAG``, which ``advisor_run_limits`` limits in the
instance's ``dagster.yaml`` (``concurrency: runs: tag_concurrency_limits``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from dagster import (
    AssetsDefinition,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.maintenance import TABLE_TAG
from delta_core.errors import ConfigError, NotADeltaTableError
from delta_core.health.report import HealthReport, table_health
from delta_core.maintenance.operations import CHECKPOINT, OPERATIONS, VACUUM
from jobs import TableJobs
from resources import resource_key_of, table_resource
from resources.config import TableConfig
from schedules import op_run_config, policy_run_config

ADVISOR_TAG = "delta_maintenance/advisor"
TABLE_OPERATION_TAG = "delta_maintenance/table_operation"  # "<table>.<operation>": one at a time
TRIGGER_TAG = "delta_maintenance/trigger"
VERSION_TAG = "delta_maintenance/version"
REASON_TAG = "delta_maintenance/reason"
GAIN_TAG = "delta_maintenance/estimated_gain"
HEALTH_TAG_PREFIX = "delta_maintenance/health_"  # + a HealthReport.headline() key

_FINISHED = (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
# Recommendations name the CLI command (``cleanup-log``); jobs are named by the registry name.
_BY_COMMAND = {op.cli_command: op.name for op in OPERATIONS}


def advisor_sensor_name(table_name: str) -> str:
    return f"{table_name}_advisor_sensor"


def advisor_run_limits(*, max_concurrent_runs: int) -> dict[str, Any]:
    """The ``concurrency`` section of the instance's ``dagster.yaml`` that bounds advised runs:
    at most ``max_concurrent_runs`` in progress across tables, and one per table and operation.
    Dagster's run queue (the default ``QueuedRunCoordinator``) enforces it."""
    if max_concurrent_runs <= 0:
        raise ConfigError(f"max_concurrent_runs must be positive, got {max_concurrent_runs}")
    return {"runs": {"tag_concurrency_limits": [
        {"key": ADVISOR_TAG, "limit": max_concurrent_runs},
        {"key": TABLE_OPERATION_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1},
    ]}}


def parse_advisor_cursor(cursor: str | None) -> dict[str, int]:
    """``{operation: version it was last requested at}``."""
    if not cursor:
        return {}
    try:
        raw = json.loads(cursor)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        raise ConfigError(f"advisor sensor cursor {cursor!r} is not a mapping of operation to version; "
                          "clear the sensor's cursor in the UI to start afresh")
    return raw


def health_tags(report: HealthReport) -> dict[str, str]:
    """The report's plotted figures as run tags (absent figures left out)."""
    return {f"{HEALTH_TAG_PREFIX}{k}": f"{v:g}" if isinstance(v, float) else str(v)
            for k, v in report.headline().items() if v is not None}


def _held_back(context: SensorEvaluationContext, job_name: str, *, cooldown_seconds: float,
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
    left = ended + cooldown_seconds - time.time()
    return f"cool-down: {left / 60:.0f} more minutes" if left > 0 else None


def build_advisor_sensor(table: TableConfig, jobs: TableJobs,
                         assets_by_op: dict[str, AssetsDefinition]) -> SensorDefinition | None:
    """The table's advisor sensor; None unless ``advisor.mode`` is ``auto``."""
    policy = table.advisor
    if not policy.auto or not jobs.operations:
        return None
    resource_key = resource_key_of(table)
    columns = table.zorder.options.columns if table.zorder.enabled else None  # None: clustering columns

    @sensor(
        name=advisor_sensor_name(table.name),
        jobs=list(jobs.operations.values()),
        minimum_interval_seconds=policy.interval_seconds,
        required_resource_keys={resource_key},
        default_status=DefaultSensorStatus.STOPPED,
        description=(f"Requests the maintenance of `{table.name}` that pays off now, by its health and "
                     "the thresholds in tables.yaml (advisor section)."),
    )
    def _advisor(context: SensorEvaluationContext) -> SensorResult:
        requested = parse_advisor_cursor(context.cursor)
        dt = table_resource(context.resources, table).open()
        try:
            report = table_health(dt, policy=policy.health, columns=columns, manifests=table.manifest.enabled)
        except NotADeltaTableError as missing:
            return SensorResult(skip_reason=f"{table.name}: {missing}")
        requests: list[RunRequest] = []
        held: list[str] = []
        for rec in report.recommendations:
            op = _BY_COMMAND.get(rec.operation)
            job = jobs.operations.get(op) if op is not None else None
            if op is None or job is None:
                continue  # not enabled for this table (or not a job, like cleanup-log)
            if op == CHECKPOINT.name and table.sensor.enabled:
                # The log sensor requests checkpoints as the commits land; two requesters would race.
                held.append(f"{op}: left to the log sensor")
                continue
            if requested.get(op) == report.version:
                held.append(f"{op}: already requested at version {report.version}")
                continue
            cooldown = policy.cooldown_minutes * 60.0
            if op == VACUUM.name:
                cooldown = max(cooldown, policy.vacuum_min_interval_hours * 3600.0)
            shared = jobs.selection(job)  # a fleet job: its runs for this table carry the table's tag
            why_not = _held_back(context, job.name, cooldown_seconds=cooldown,
                                 tags={TABLE_OPERATION_TAG: f"{table.name}.{op}"} if shared else None)
            if why_not is not None:
                held.append(f"{op}: {why_not}")
                continue
            requested[op] = report.version
            requests.append(RunRequest(
                run_key=f"{table.name}:advisor:{op}:v{report.version}",
                job_name=job.name,
                asset_selection=shared,
                run_config=op_run_config(assets_by_op[op], policy_run_config(table, op)),
                tags={TABLE_TAG: table.name, TRIGGER_TAG: "advisor", VERSION_TAG: str(report.version),
                      ADVISOR_TAG: "true", TABLE_OPERATION_TAG: f"{table.name}.{op}",
                      REASON_TAG: rec.reason, GAIN_TAG: f"{rec.estimated_gain:g} {rec.unit}",
                      **health_tags(report)},
            ))
        if held:
            context.log.info(f"{table.name}: not requested: {'; '.join(held)}")
        cursor = json.dumps(requested, sort_keys=True)
        if not requests:
            reason = "; ".join(held) if held else f"nothing pays off at version {report.version} (score {report.score})"
            return SensorResult(skip_reason=reason, cursor=cursor)
        return SensorResult(run_requests=requests, cursor=cursor)

    return _advisor
