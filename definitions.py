"""The code location: one ``Definitions`` built from the table config file.

``dg dev`` from the repository root (``[tool.dg]`` in pyproject.toml) or
``dagster-webserver -w workspace.yaml`` serves ``defs``. The code location is not installed: both
make the repository root the working directory, so ``resources``, ``assets``, ``jobs``, ``schedules`` and ``sensors`` import from
here (only ``delta_core`` is a package in site-packages). The config file is
``$DELTA_MAINTENANCE_TABLES`` or ``tables.yaml`` beside this file.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dagster import (
    AssetKey,
    AssetsDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
)

from assets import build_daily_summary_asset, build_maintenance_assets, build_table_asset
from assets.automation import build_automation_sensors
from assets.health_checks import build_table_checks
from assets.maintenance import Placement
from delta_core.config.table_checks import check_tables
from delta_core.model.clock import Clock, system_clock
from fleet.automation import WithinFleetBudget
from fleet.report import build_fleet_report
from fleet.usage import fleet_scope
from jobs import build_cross_table_jobs, build_table_jobs
from resources import DISCOVERED_TABLES_RESOURCE_KEY, SPARK_RESOURCE_KEY, SparkResource, table_resource_key
from resources.config import MaintenanceConfig, load_config
from resources.delta_table import discovered_tables_definition, table_resource_definition
from schedules import build_table_schedules
from sensors import build_sensors


def build_resources(config: MaintenanceConfig, *, clock: Clock = system_clock) -> dict[str, object]:
    """The Spark resource, one ``DeltaTableResource`` per listed table (key ``delta_<table>``;
    ``table_resource_definition``: without run config) and one for all discovered tables, their
    commits, retention and expiry timed by ``clock`` (epoch milliseconds)."""
    resources: dict[str, object] = {SPARK_RESOURCE_KEY: SparkResource.from_settings(config.spark)}
    discovered = [t for t in config.tables if t.discovered_under is not None]
    for table in config.tables:
        if table.discovered_under is None:
            resources[table_resource_key(table.name)] = table_resource_definition(table, clock=clock)
    if discovered:
        resources[DISCOVERED_TABLES_RESOURCE_KEY] = discovered_tables_definition(discovered, clock=clock)
    return resources


def build_definitions(config: MaintenanceConfig, *, clock: Callable[[], float] = time.time) -> Definitions:
    """Assets, asset checks, jobs, schedules, sensors (the tables' log sensors, the fleet advisor,
    and the automation sensors that evaluate the maintenance assets' conditions) and resources
    for every table in ``config``, and the fleet report over them; ``clock`` (POSIX seconds) is
    the fleet's now (the advisor's windows, cool-downs and byte limits, the report's next schedule ticks)
    and the tables' (their commits' timestamps, retention and expiry).

    The policies are first checked against each readable table's schema (``check_tables``),
    so ``dg check defs`` rejects an unknown Z-order column or a bad predicate."""
    check_tables(config)
    assets: list = []
    checks: list = []
    fleet = build_cross_table_jobs(config)
    jobs = dict(fleet)  # by name: discovered tables share the fleet's jobs (jobs.TableJobs)
    schedules: list = []
    sensor_inputs = []
    scope = fleet_scope(config.tables)  # what counts as maintenance: the budget's and the advisor's
    placement = Placement(spark_pool=config.spark.pool,
                          budget=WithinFleetBudget(config, scope) if config.tables else None, history=config.history)
    automated: list[list[AssetKey]] = []  # per table, the maintenance assets that carry a condition
    for table in config.tables:
        maintenance = build_maintenance_assets(table, placement)
        automated.append([k for a in maintenance for k, c in a.automation_conditions_by_key.items() if c is not None])
        by_op: dict[str, AssetsDefinition] = {key.path[-1]: a for a in maintenance for key in a.keys}
        assets.append(build_table_asset(table))
        assets.extend(maintenance)
        checks.append(build_table_checks(table, [key for a in maintenance for key in a.keys]))
        if table.downstream.daily_summary is not None:
            assets.append(build_daily_summary_asset(table))
        table_jobs = build_table_jobs(table, fleet)
        for job in (table_jobs.maintenance, *table_jobs.operations.values(), table_jobs.downstream, table_jobs.observe,
                    table_jobs.checks):
            if job is not None:
                jobs[job.name] = job
        schedules.extend(build_table_schedules(table, table_jobs, by_op))
        sensor_inputs.append((table, table_jobs, by_op))
    sensors = [*build_sensors(sensor_inputs, config.fleet, scope, clock=clock), *build_automation_sensors(automated)]
    if config.tables:
        running = frozenset({s.name for s in schedules if s.default_status == DefaultScheduleStatus.RUNNING}
                            | {s.name for s in sensors if s.default_status == DefaultSensorStatus.RUNNING})
        report, report_job, report_schedule = build_fleet_report(config, running_by_default=running, clock=clock)
        assets.append(report)
        jobs[report_job.name] = report_job
        schedules.append(report_schedule)
    return Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=list(jobs.values()),
        schedules=schedules,
        sensors=sensors,
        resources=build_resources(config, clock=lambda: int(clock() * 1000)),
        executor=in_process_executor,
    )


defs = build_definitions(load_config())
