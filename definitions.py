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
from dataclasses import dataclass

from dagster import (
    AssetChecksDefinition,
    AssetKey,
    AssetsDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    SensorDefinition,
    in_process_executor,
)

from assets import build_daily_summary_asset, build_maintenance_assets, build_table_asset
from assets.automation import build_automation_sensors, discovered_condition
from assets.discovered import (
    DISCOVERED_TABLE_KEY,
    build_discovered_checks,
    build_discovered_maintenance_assets,
    build_discovered_table_asset,
    discovered_operations,
)
from assets.health_checks import build_table_checks
from assets.maintenance import Placement
from delta_core.config.reader import discovered_tables
from delta_core.config.table_checks import check_tables
from delta_core.model.clock import Clock, system_clock
from fleet.automation import WithinFleetBudget
from fleet.report import build_fleet_report
from fleet.usage import FleetScope, fleet_scope
from jobs import AssetJob, build_cross_table_jobs, build_discovered_jobs, build_table_jobs
from resources import DISCOVERED_TABLES_RESOURCE_KEY, SPARK_RESOURCE_KEY, SparkResource, table_resource_key
from resources.config import MaintenanceConfig, TableConfig, load_config
from resources.delta_table import DiscoveredTables, discovered_tables_definition, table_resource_definition
from schedules import build_table_schedules
from sensors import build_sensors
from sensors.advisor import AdvisedPartitions
from sensors.discovered_log import build_discovered_log_sensor
from sensors.discovery import build_discovery_sensor


def build_resources(config: MaintenanceConfig, *, clock: Clock = system_clock,
                    partitions: DiscoveredTables | None = None) -> dict[str, object]:
    """The Spark resource, one ``DeltaTableResource`` per listed table (key ``delta_<table>``;
    ``table_resource_definition``: without run config) and one for all discovered tables (with
    discovered tables as partitions: ``partitions``, shared by the runs and ticks of a process),
    their commits, retention and expiry timed by ``clock`` (epoch milliseconds)."""
    resources: dict[str, object] = {SPARK_RESOURCE_KEY: SparkResource.from_settings(config.spark)}
    discovered = [t for t in config.tables if t.discovered_under is not None]
    for table in config.tables:
        if table.discovered_under is None:
            resources[table_resource_key(table.name)] = table_resource_definition(table, clock=clock)
    if partitions is not None:
        resources[DISCOVERED_TABLES_RESOURCE_KEY] = discovered_tables_definition(partitions)
    elif discovered:
        resources[DISCOVERED_TABLES_RESOURCE_KEY] = discovered_tables_definition(discovered, clock=clock)
    return resources


@dataclass(frozen=True, slots=True)
class DiscoveredPartitions:
    """What the discovered tables as partitions add to the definitions (``assets.discovered``)."""

    tables: DiscoveredTables
    assets: list
    checks: AssetChecksDefinition
    jobs: dict[str, AssetJob]
    automated: list[AssetKey]
    sensors: list[SensorDefinition]
    advised: AdvisedPartitions | None  # None: no root says advisor: {mode: auto}


def build_discovered_partitions(config: MaintenanceConfig, placement: Placement, scope: FleetScope, *,
                                clock: Clock = system_clock) -> DiscoveredPartitions:
    """The partitioned assets, checks and jobs of the discovered tables, the discovery sensor, and
    the records they look partitions up in (their tables timed by ``clock``, epoch milliseconds);
    as many whatever the number of tables."""
    listed = [t for t in config.tables if t.discovered_under is None]

    def find() -> list[TableConfig]:
        return discovered_tables(config.discover, listed)

    tables = DiscoveredTables({t.name: t for t in config.tables if t.discovered_under is not None},
                              clock=clock, find=find)
    operations = discovered_operations([root.template for root in config.discover])
    conditions = {op: discovered_condition(
        config.discover, op, root_of=tables.root_of, checked=DISCOVERED_TABLE_KEY,
        budget=lambda defaults: WithinFleetBudget(config, scope, discovered=defaults) if placement.budget else None)
        for op in operations}
    maintenance = build_discovered_maintenance_assets(operations, placement, conditions)
    keys = [key for a in maintenance for key in a.keys]
    jobs = build_discovered_jobs(operations)
    by_op = {key.path[-1]: a for a in maintenance for key in a.keys}
    interval = min(root.template.sensor.interval_seconds for root in config.discover)
    return DiscoveredPartitions(
        tables=tables, assets=[build_discovered_table_asset(), *maintenance],
        checks=build_discovered_checks(keys), jobs=jobs,
        automated=[k for a in maintenance for k, c in a.automation_conditions_by_key.items() if c is not None],
        sensors=[build_discovery_sensor(find, tables),
                 build_discovered_log_sensor(tables, jobs, by_op, interval_seconds=interval)],
        advised=AdvisedPartitions(tables, jobs, by_op, interval_seconds=min(
            r.template.advisor.interval_seconds for r in config.discover)) if any(
            r.template.advisor.auto for r in config.discover) else None)


def build_definitions(config: MaintenanceConfig, *, clock: Callable[[], float] = time.time) -> Definitions:
    """Assets, asset checks, jobs, schedules, sensors (the tables' log sensors, the fleet advisor,
    and the automation sensors that evaluate the maintenance assets' conditions) and resources
    for every table in ``config``, and the fleet report over them; ``clock`` (POSIX seconds) is
    the fleet's now (the advisor's windows, cool-downs and byte limits, the report's next schedule ticks)
    and the tables' (their commits' timestamps, retention and expiry).

    The policies are first checked against each readable table's schema (``check_tables``),
    so ``dg check defs`` rejects an unknown Z-order column or a bad predicate."""
    check_tables(config)

    def table_clock() -> int:  # the tables' clock, epoch milliseconds
        return int(clock() * 1000)

    partitioned = config.fleet.partitioned
    listed = [t for t in config.tables if not (partitioned and t.discovered_under is not None)]
    assets: list = []
    checks: list = []
    fleet = build_cross_table_jobs(config)
    jobs = dict(fleet)  # by name: discovered tables share the fleet's jobs (jobs.TableJobs)
    schedules: list = []
    sensor_inputs = []
    scope = fleet_scope(config.tables, partitioned=partitioned)  # maintenance: the budget's and the advisor's
    placement = Placement(spark_pool=config.spark.pool,
                          budget=WithinFleetBudget(config, scope) if config.tables or config.discover else None,
                          history=config.history)
    automated: list[list[AssetKey]] = []  # per table, the maintenance assets that carry a condition
    partitions = build_discovered_partitions(config, placement, scope, clock=table_clock) if partitioned and config.discover else None
    if partitions is not None:
        assets.extend(partitions.assets)
        checks.append(partitions.checks)
        jobs.update(partitions.jobs)
        automated.append(partitions.automated)
    for table in listed:
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
    sensors = [*build_sensors(sensor_inputs, config.fleet, scope, clock=clock,
                              partitions=partitions.advised if partitions is not None else None),
               *build_automation_sensors(automated),
               *(partitions.sensors if partitions is not None else [])]
    if config.tables or partitions is not None:  # partitions: tables may be found after the load
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
        resources=build_resources(config, clock=table_clock,
                                  partitions=partitions.tables if partitions is not None else None),
        executor=in_process_executor,
    )


defs = build_definitions(load_config())
