"""Dagster resources: thin wrappers over delta_core tables and a Spark session."""

from typing import Any

from delta_core.config.generated_names import DISCOVERED_TABLES_RESOURCE_KEY, SPARK_RESOURCE_KEY, table_resource_key
from resources.config import MaintenanceConfig, TableConfig, TableConfigError, load_config
from resources.delta_table import DeltaTableResource
from resources.spark import SparkResource


def resource_key_of(table: TableConfig) -> str:
    """The key of the resource that serves ``table``: its own, or the discovered tables' one."""
    return table_resource_key(table.name) if table.discovered_under is None else DISCOVERED_TABLES_RESOURCE_KEY


def table_resource(resources: Any, table: TableConfig) -> DeltaTableResource:
    """``table``'s ``DeltaTableResource`` from a run's or a tick's ``context.resources``."""
    found = getattr(resources, resource_key_of(table))
    return found if table.discovered_under is None else found.table(table.name)


__all__ = [
    "DISCOVERED_TABLES_RESOURCE_KEY",
    "SPARK_RESOURCE_KEY",
    "DeltaTableResource",
    "MaintenanceConfig",
    "SparkResource",
    "TableConfig",
    "TableConfigError",
    "load_config",
    "resource_key_of",
    "table_resource",
    "table_resource_key",
]
