"""Dagster resources: thin wrappers over delta_core tables and a Spark session."""

from resources.config import MaintenanceConfig, TableConfig, TableConfigError, load_config
from resources.delta_table import DeltaTableResource
from resources.spark import SparkResource

SPARK_RESOURCE_KEY = "spark"


def table_resource_key(table_name: str) -> str:
    """Resource key of a table's ``DeltaTableResource``."""
    return f"delta_{table_name}"


__all__ = [
    "SPARK_RESOURCE_KEY",
    "DeltaTableResource",
    "MaintenanceConfig",
    "SparkResource",
    "TableConfig",
    "TableConfigError",
    "load_config",
    "table_resource_key",
]
