"""Schedules from each table's policy: compact and vacuum always (defaults: compact daily
02:00 UTC, vacuum Sundays 03:00 UTC), zorder when the policy gives a cron.

Each schedule launches the table's one-operation job with the policy spelled out as run
config, so the run's Launchpad shows exactly what it did.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetsDefinition,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    schedule,
)

from assets.maintenance import TABLE_TAG
from delta_core.maintenance.option_fields import policy_fields
from jobs import TableJobs
from resources.config import TableConfig

SCHEDULE_TIMEZONE = "UTC"


def schedule_name(table_name: str, operation: str) -> str:
    return f"{table_name}_{operation}_schedule"


def policy_run_config(table: TableConfig, operation: str) -> dict[str, Any]:
    """The asset config that spells out the table's policy for one operation: its option record."""
    policy = table.policy(operation)
    if policy is None:
        raise KeyError(f"operation {operation!r} has no tables.yaml section")
    values = {f.name: getattr(policy.options, f.name) for f in policy_fields(type(policy.options))}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None}


def op_run_config(assets_def: AssetsDefinition, config: dict[str, Any]) -> dict[str, Any]:
    return {"ops": {assets_def.node_def.name: {"config": config}}}


def build_table_schedules(table: TableConfig, jobs: TableJobs,
                          assets_by_op: dict[str, AssetsDefinition]) -> list[ScheduleDefinition]:
    """One schedule per operation with a cron; a run of a shared fleet job (a discovered table)
    selects this table's asset only (``TableJobs.selection``)."""
    out = []
    for op in table.operations:
        cron = getattr(table.policy(op), "cron", None)  # checkpoint and manifest are sensor-driven
        if cron is None:
            continue
        job = jobs.operations[op]
        request = RunRequest(run_config=op_run_config(assets_by_op[op], policy_run_config(table, op)),
                             tags={TABLE_TAG: table.name, "delta_maintenance/trigger": "schedule"},
                             asset_selection=jobs.selection(job), asset_check_keys=jobs.check_selection(job))

        def run(_context: ScheduleEvaluationContext, request: RunRequest = request) -> RunRequest:
            return request

        out.append(schedule(
            name=schedule_name(table.name, op),
            cron_schedule=cron,
            execution_timezone=SCHEDULE_TIMEZONE,
            job=job,
            default_status=DefaultScheduleStatus.STOPPED,
            description=f"{op} of `{table.name}` on '{cron}' ({SCHEDULE_TIMEZONE}).",
        )(run))
    return out
