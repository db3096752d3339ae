"""The code location: one ``Definitions`` built from the table config file.

``dagster dev -w workspace.yaml`` (or ``dagster dev -f definitions.py``) serves ``defs``. The
code location is not installed: ``workspace.yaml`` makes the repository root the working
directory, so ``resources``, ``assets``, ``jobs``, ``schedules`` and ``sensors`` import from
here (only ``delta_core`` is a package in site-packages). The config file is
``$DELTA_MAINTENANCE_TABLES`` or ``tables.yaml`` beside this file.
"""

from __future__ import annotations

from dagster import AssetsDefinition, Definitions, in_process_executor

from assets import build_daily_summary_asset, build_maintenance_assets, build_table_asset
from jobs import build_cross_table_jobs, build_table_jobs
from resources import DISCOVERED_TABLES_RESOURCE_KEY, SPARK_RESOURCE_KEY, SparkResource, table_resource_key
from resources.config import MaintenanceConfig, load_config
from resources.delta_table import discovered_tables_definition, table_resource_definition
from resources.table_checks import check_tables
from schedules import build_table_schedules
from sensors import build_sensors


def build_resources(config: MaintenanceConfig) -> dict[str, object]:
    """The Spark resource, one ``DeltaTableResource`` per listed table (key ``delta_<table>``;
    ``table_resource_definition``: without run config) and one for all discovered tables."""
    resources: dict[str, object] = {SPARK_RESOURCE_KEY: SparkResource.from_settings(config.spark)}
    discovered = [t for t in config.tables if t.discovered_under is not None]
    for table in config.tables:
        if table.discovered_under is None:
            resources[table_resource_key(table.name)] = table_resource_definition(table)
    if discovered:
        resources[DISCOVERED_TABLES_RESOURCE_KEY] = discovered_tables_definition(discovered)
    return resources


def build_definitions(config: MaintenanceConfig) -> Definitions:
    """Assets, jobs, schedules, sensors and resources for every table in ``config``.

    The policies are first checked against each readable table's schema (``check_tables``),
    so ``dagster definitions validate`` rejects an unknown Z-order column or a bad predicate."""
    check_tables(config)
    assets: list = []
    fleet = build_cross_table_jobs(config)
    jobs = dict(fleet)  # by name: discovered tables share the fleet's jobs (jobs.TableJobs)
    schedules: list = []
    sensor_inputs = []
    for table in config.tables:
        maintenance = build_maintenance_assets(table)
        by_op: dict[str, AssetsDefinition] = {key.path[-1]: a for a in maintenance for key in a.keys}
        assets.append(build_table_asset(table))
        assets.extend(maintenance)
        if table.downstream.daily_summary is not None:
            assets.append(build_daily_summary_asset(table))
        table_jobs = build_table_jobs(table, fleet)
        for job in (table_jobs.maintenance, *table_jobs.operations.values(), table_jobs.downstream, table_jobs.observe):
            if job is not None:
                jobs[job.name] = job
        schedules.extend(build_table_schedules(table, table_jobs, by_op))
        sensor_inputs.append((table, table_jobs, by_op))
    return Definitions(
        assets=assets,
        jobs=list(jobs.values()),
        schedules=schedules,
        sensors=build_sensors(sensor_inputs),
        resources=build_resources(config),
        executor=in_process_executor,
    )


defs = build_definitions(load_config())
