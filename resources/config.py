"""The code location's table config file: which ``tables.yaml`` it loads.

The file is read by delta_core's one reader (``delta_core.config``), the one the command line
uses, into frozen records re-exported here for the code location's factories. The file is
``$DELTA_MAINTENANCE_TABLES`` or ``tables.yaml`` beside ``definitions.py``.
"""

from __future__ import annotations

import os
import pathlib

from delta_core.config import reader
from delta_core.config.reader import CONFIG_ENV_VAR
from delta_core.config.records import (
    EnvRef,
    FleetPolicy,
    MaintenanceConfig,
    MaintenanceWindow,
    OperationPolicy,
    OptionValue,
    SparkSettings,
    TableConfig,
    TableConfigError,
)

DEFAULT_CONFIG_PATH = pathlib.Path(__file__).resolve().parent.parent / "tables.yaml"

__all__ = [
    "CONFIG_ENV_VAR", "DEFAULT_CONFIG_PATH", "EnvRef", "FleetPolicy", "MaintenanceConfig", "MaintenanceWindow",
    "OperationPolicy", "OptionValue", "SparkSettings", "TableConfig", "TableConfigError", "config_path",
    "load_config",
]


def config_path(path: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The config file to use: ``path``, else ``$DELTA_MAINTENANCE_TABLES``, else the repo's."""
    chosen = path or os.environ.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH
    return pathlib.Path(chosen).expanduser().resolve()


def load_config(path: str | os.PathLike[str] | None = None) -> MaintenanceConfig:
    """Read and check the table config file (``config_path`` says which)."""
    return reader.load_config(config_path(path))
