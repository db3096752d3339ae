"""Asset jobs: per table (full maintenance, one per operation, downstream refresh, observation of
the table, its health checks) and across tables (all maintenance, one per operation).

Every maintenance job also selects the health checks of the tables it maintains
(``assets.health_checks``): they depend on the maintenance assets, so they run last and judge
what the run left. ``<table>_checks`` runs the checks alone (the log sensor requests it on each
new version).

Every job runs on the in-process executor by default: one process, one SparkSession for all
its steps, and steps in dependency order (compact before zorder before vacuum ...). Run config
can choose the multiprocess executor instead (``execution: {config: {multiprocess:
{max_concurrent: 4}}}``): steps of different tables then run in parallel processes, each with
its own Spark resource, which should point at a cluster or a Spark Connect server (README,
"Running on a cluster"). Job names follow the registry names (``<table>_compact``,
``all_tables_vacuum``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from dagster import AssetKey, AssetSelection, define_asset_job, multi_or_in_process_executor

from assets.downstream import daily_summary_key
from assets.maintenance import OPERATION_TAG, maintenance_asset_key
from assets.table import table_asset_key
from delta_core.maintenance.operations import ONE_OFFS, OPERATIONS, operation
from resources.config import MaintenanceConfig, TableConfig

# What ``define_asset_job`` returns: Dagster 1.13 does not export that class publicly, and the
# code location imports public Dagster API only.
AssetJob: TypeAlias = Any

ALL_TABLES_MAINTENANCE_JOB = "all_tables_maintenance"
# multi_or_in_process_executor defaults to multiprocess; ours default to one process.
IN_PROCESS_RUN_CONFIG: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}


def maintenance_job_name(table_name: str) -> str:
    return f"{table_name}_maintenance"


def operation_job_name(table_name: str, operation: str) -> str:
    return f"{table_name}_{operation}"


def downstream_job_name(table_name: str) -> str:
    return f"{table_name}_downstream_refresh"


def observe_job_name(table_name: str) -> str:
    return f"{table_name}_observe"


def checks_job_name(table_name: str) -> str:
    return f"{table_name}_checks"


def all_tables_job_name(operation: str) -> str:
    return f"all_tables_{operation}"


def downstream_keys(table: TableConfig) -> list[AssetKey]:
    keys = [daily_summary_key(table.name)] if table.downstream.daily_summary else []
    keys += [AssetKey(a.split("/")) for a in table.downstream.assets]
    return keys


@dataclass(frozen=True, slots=True)
class TableJobs:
    maintenance: AssetJob
    operations: dict[str, AssetJob]
    downstream: AssetJob | None
    observe: AssetJob
    checks: AssetJob


def _job(name: str, selection: AssetSelection, description: str) -> AssetJob:
    return define_asset_job(name, selection=selection, executor_def=multi_or_in_process_executor,
                            config=IN_PROCESS_RUN_CONFIG, description=description)


def _checks_of(*tables: TableConfig) -> AssetSelection:
    """The health checks of ``tables``' assets (they run after the maintenance a job selects)."""
    return AssetSelection.checks_for_assets(*(table_asset_key(t.name) for t in tables))


def build_table_jobs(table: TableConfig) -> TableJobs:
    # one-offs (restore) are launched by hand with their options: never part of a full run
    one_offs = [op.name for op in ONE_OFFS if (policy := table.policy(op.name)) is not None and policy.enabled]
    checks = _checks_of(table)
    maintenance = _job(
        maintenance_job_name(table.name),
        ((AssetSelection.groups(table.name) & AssetSelection.kind("delta"))
         - AssetSelection.assets(*(maintenance_asset_key(table.name, op) for op in one_offs))) | checks,
        f"Full maintenance of `{table.name}`: {', '.join(table.operations)}, then its health checks.",
    )
    operations = {
        op: _job(operation_job_name(table.name, op),
                 AssetSelection.assets(maintenance_asset_key(table.name, op)) | checks,
                 f"{operation(op).title} of `{table.name}`" + (
                     " (launched by hand with its options in the run config)." if op in one_offs else "."))
        for op in (*table.operations, *one_offs)
    }
    keys = downstream_keys(table)
    downstream = _job(downstream_job_name(table.name), AssetSelection.assets(*keys),
                      f"Refresh assets downstream of `{table.name}` after data changes.") if keys else None
    # What the log sensor records on each new version, on demand (the demo runs it; so can a person).
    observe = _job(observe_job_name(table.name), AssetSelection.assets(table_asset_key(table.name)),
                   f"Observe `{table.name}`: record its Delta version, data version and health.")
    checks_job = _job(checks_job_name(table.name), checks,
                      f"Check `{table.name}`'s health from its log: the asset checks of its table asset.")
    return TableJobs(maintenance=maintenance, operations=operations, downstream=downstream, observe=observe,
                     checks=checks_job)


def build_cross_table_jobs(config: MaintenanceConfig) -> list[AssetJob]:
    jobs = [_job(ALL_TABLES_MAINTENANCE_JOB, AssetSelection.kind("delta") | _checks_of(*config.tables),
                 "Full maintenance of every managed table, then their health checks.")] if config.tables else []
    for op in OPERATIONS:
        tables = [t for t in config.tables if op.name in t.operations]
        if tables:
            jobs.append(_job(all_tables_job_name(op.name), AssetSelection.tag(OPERATION_TAG, op.name) | _checks_of(*tables),
                             f"{op.name} of every managed table that enables it, then their health checks."))
    return jobs
