"""The table config file (``tables.yaml``): which Delta tables are managed and their policy.

A thin loader: the file is read here, validated by the pydantic models of
``resources.config_models`` (whose JSON Schema is ``tables.schema.json``) and converted into
the frozen records of ``resources.config_records``, re-exported here. Invalid config fails at
load with ``TableConfigError`` naming the file, the table and the field. Layout (every
section but ``tables`` optional; an operation's section is named by its registry
``policy_key``)::

    spark:
      master: local[*]                # or {env: SPARK_MASTER}
      conf: {spark.sql.shuffle.partitions: "8"}
    tables:
      events:                         # table name = Dagster group name
        uri: demo_data/events         # relative paths resolve against this file's folder
        storage_options:              # passed to fsspec; nested mappings allowed
          key: {env: AWS_ACCESS_KEY_ID}
          client_kwargs: {endpoint_url: "http://127.0.0.1:9000"}
        compact: {target_size: 128MB, where: "date >= '2024-01-01'", cron: "0 2 * * *"}
        zorder: {columns: [user_id, ts], curve: zorder, cron: "0 4 * * 6"}
        vacuum: {retention_hours: 168, dry_run: false, cron: "0 3 * * 0"}
        checkpoint: {interval: 10, cleanup_log: false}
        manifest: {enabled: true}
        sensor: {interval_seconds: 30}
        downstream:
          daily_summary: {date_column: event_date}
          assets: ["other/asset"]

A section may be ``false`` (disabled) or ``true`` (enabled with defaults). Secrets are only
ever referenced as ``{env: NAME}`` and become Dagster ``EnvVar``s, read at run time. Sizes
are bytes or ``128MB``/``64MiB`` (``delta_core.model.sizes.parse_size``).

``where`` predicates are parsed here (syntax); what needs the table's schema (partition
columns, Z-order columns) is checked at definitions load by ``resources.table_checks``.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import yaml
from pydantic import ValidationError

from resources.config_models import OptionError, TablesFile, is_valid_cron, to_config
from resources.config_records import (
    DEFAULT_COMPACT_CRON,
    DEFAULT_MAX_COMMITS_PER_TICK,
    DEFAULT_SENSOR_INTERVAL_SECONDS,
    DEFAULT_VACUUM_CRON,
    CheckpointPolicy,
    CompactPolicy,
    DailySummary,
    DownstreamPolicy,
    EnvRef,
    MaintenanceConfig,
    ManifestPolicy,
    OptionValue,
    SensorPolicy,
    SparkSettings,
    TableConfig,
    TableConfigError,
    VacuumPolicy,
    ZOrderPolicy,
)

CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"
DEFAULT_CONFIG_PATH = pathlib.Path(__file__).resolve().parent.parent / "tables.yaml"

__all__ = [
    "CONFIG_ENV_VAR", "DEFAULT_COMPACT_CRON", "DEFAULT_CONFIG_PATH", "DEFAULT_MAX_COMMITS_PER_TICK",
    "DEFAULT_SENSOR_INTERVAL_SECONDS", "DEFAULT_VACUUM_CRON", "CheckpointPolicy", "CompactPolicy",
    "DailySummary", "DownstreamPolicy", "EnvRef", "MaintenanceConfig", "ManifestPolicy",
    "OptionValue", "SensorPolicy", "SparkSettings", "TableConfig", "TableConfigError",
    "VacuumPolicy", "ZOrderPolicy", "config_path", "is_valid_cron", "load_config", "parse_config",
]


def _error(exc: ValidationError, source: str | None) -> TableConfigError:
    """The first validation error, as ``TableConfigError`` naming the table and the field."""
    errors = exc.errors(include_url=False)
    # An unknown key first: a misspelt `tabels` explains the missing `tables`.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    # Union branches and validator wrappers add loc parts that are no keys of the file
    # ("str", "Env", "function-before[...]"); keep the keys, and list indexes.
    loc = [str(p) for p in err["loc"] if isinstance(p, int) or ("[" not in p and p[:1].islower())]
    table = None
    if loc[:1] == ["tables"] and len(loc) > 1:
        table, loc = loc[1], loc[2:]
    if loc == ["[key]"] or (err["loc"][-1:] == ("[key]",)):
        return TableConfigError("table names must be letters, digits and underscores, not starting "
                                "with a digit (they become Dagster group names)",
                                path=source, table=table, field="name")
    message = {
        "extra_forbidden": "unknown field (a typo?); tables.schema.json lists the fields allowed here",
        "missing": "is required",
    }.get(err["type"], err["msg"])
    if err["type"] == "missing" and loc == ["uri"]:
        message += " (a local path or an fsspec URI like s3://bucket/t)"
    return TableConfigError(message, path=source, table=table, field=".".join(loc) or None)


def parse_config(raw: Any, *, source: str | None = None,
                 base_dir: pathlib.Path | None = None) -> MaintenanceConfig:
    """Validate a loaded YAML document into a ``MaintenanceConfig``."""
    if raw is None:
        raise TableConfigError("the file is empty; it needs a 'tables' mapping", path=source, field="tables")
    try:
        doc = TablesFile.model_validate(raw)
    except ValidationError as exc:
        raise _error(exc, source) from None
    try:
        return to_config(doc, source=source, base_dir=base_dir)
    except OptionError as exc:
        raise TableConfigError(str(exc), path=source, table=exc.table,
                               field=f"storage_options.{exc.field}") from None


def config_path(path: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The config file to use: ``path``, else ``$DELTA_MAINTENANCE_TABLES``, else the repo's."""
    chosen = path or os.environ.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH
    return pathlib.Path(chosen).expanduser().resolve()


def load_config(path: str | os.PathLike[str] | None = None) -> MaintenanceConfig:
    """Read and validate the table config file (see ``config_path`` for which one)."""
    p = config_path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TableConfigError(f"cannot read the table config file ({e.strerror}); set "
                               f"{CONFIG_ENV_VAR} to its path", path=str(p)) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise TableConfigError(f"is not valid YAML: {e}", path=str(p)) from None
    return parse_config(raw, source=str(p), base_dir=p.parent)
