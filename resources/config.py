"""The table config file (``tables.yaml``): which Delta tables are managed and their policy.

A thin loader: the file is read here, validated by the pydantic models of
``resources.config_models`` (whose JSON Schema is ``tables.schema.json``) and converted into
the frozen records of ``resources.config_records``, re-exported here. Invalid config fails at
load with ``TableConfigError`` naming the file, the table and the field. Layout (every
section optional; an operation's section is named by its registry
``policy_key``)::

    spark:
      master: local[*]                # or {env: SPARK_MASTER}
      conf: {spark.sql.shuffle.partitions: "8"}
    fleet:                            # limits across tables (fleet.budget; the fleet advisor)
      max_concurrent_runs: 4
      max_bytes_per_hour: 50GB        # bytes rewritten, rolling 60 minutes
      max_bytes_per_day: 500GB        # ... rolling 24 hours
      windows: ["22:00-06:00"]        # UTC; advised runs start only inside one
    discover:                         # every Delta table under a root (delta_core.log.discovery)
      - root: s3://lake/warehouse     # area0/orders becomes the table area0__orders
        include: ["area*/*"]          # fnmatch globs over the path under root
        exclude: ["*/tmp_*"]
        defaults: {compact: {target_size: 256MB}}   # a table entry without uri
    tables:
      events:                         # table name = Dagster group name
        uri: demo_data/events         # relative paths resolve against this file's folder
        storage_options:              # passed to fsspec; nested mappings allowed
          key: {env: AWS_ACCESS_KEY_ID}
          client_kwargs: {endpoint_url: "http://127.0.0.1:9000"}
        compact: {target_size: 128MB, where: "date >= '2024-01-01'", cron: "0 2 * * *"}
        zorder: {columns: [user_id, ts], curve: zorder, cron: "0 4 * * 6"}
        vacuum: {retention_hours: 168, dry_run: false, cron: "0 3 * * 0"}  # shorter than the
                                      # table's needs allow_short_retention: true
        checkpoint: {interval: 10, cleanup_log: false}
        manifest: {enabled: true}
        sensor: {interval_seconds: 30}
        advisor: {mode: auto, cooldown_minutes: 60, compact_small_file_ratio: 0.3}  # sensors/advisor.py
        downstream:
          daily_summary: {date_column: event_date}
          assets: ["other/asset"]

Discovery runs when the file is loaded; explicit ``tables`` entries of the same name or location
win. A section may be ``false`` (disabled) or ``true`` (enabled with defaults). Secrets are only
ever referenced as ``{env: NAME}`` and become Dagster ``EnvVar``s, read at run time. Sizes
are bytes or ``128MB``/``64MiB`` (``delta_core.model.sizes.parse_size``).

``where`` predicates are parsed here (syntax); what needs the table's schema (partition
columns, Z-order columns) is checked at definitions load by ``resources.table_checks``.

The ``delta-core`` command line reads the same file without pydantic (``--config FILE --table
NAME``, ``delta_core.cli.policy``); tests/cli/test_cli_policy.py keeps the two in agreement.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import yaml
from pydantic import ValidationError

from delta_core.errors import ConfigError
from delta_core.maintenance.operations import OPERATIONS
from resources.config_models import OptionError, TablesFile, is_valid_cron, to_config
from resources.config_records import (
    DEFAULT_COMPACT_CRON,
    DEFAULT_MAX_COMMITS_PER_TICK,
    DEFAULT_SENSOR_INTERVAL_SECONDS,
    DEFAULT_VACUUM_CRON,
    DailySummary,
    DownstreamPolicy,
    EnvRef,
    FleetPolicy,
    MaintenanceConfig,
    MaintenanceWindow,
    OperationPolicy,
    OptionValue,
    SensorPolicy,
    SparkSettings,
    TableConfig,
    TableConfigError,
)

CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"
DEFAULT_CONFIG_PATH = pathlib.Path(__file__).resolve().parent.parent / "tables.yaml"

__all__ = [
    "CONFIG_ENV_VAR", "DEFAULT_COMPACT_CRON", "DEFAULT_CONFIG_PATH", "DEFAULT_MAX_COMMITS_PER_TICK",
    "DEFAULT_SENSOR_INTERVAL_SECONDS", "DEFAULT_VACUUM_CRON", "DailySummary", "DownstreamPolicy", "EnvRef",
    "FleetPolicy", "MaintenanceConfig", "MaintenanceWindow", "OperationPolicy", "OptionValue", "SensorPolicy", "SparkSettings", "TableConfig",
    "TableConfigError", "config_path", "is_valid_cron", "load_config", "parse_config",
]


def _file_keys(raw: Any, loc: tuple[int | str, ...]) -> tuple[list[str], bool]:
    """The part of an error location that is keys of the file, and whether a union added more.

    pydantic puts union branches and validator wrappers into ``loc`` ("str", "Env",
    "function-before[...]"); walking the document tells keys from those, even for a storage
    option called ``str``.
    """
    keys: list[str] = []
    union = False
    node = raw
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            keys.append(str(part))
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            keys.append(str(part))
        elif part == "[key]":
            keys.append(str(part))
        else:
            union = True
    return keys, union


_SECTIONS = {op.policy_key for op in OPERATIONS if op.policy_key} | {"sensor"}


def _in_table(keys: list[str]) -> list[str] | None:
    """The keys inside a table's policy: ``tables.NAME.…`` or ``discover.N.defaults.…``."""
    if keys[:1] == ["tables"]:
        return keys[2:]
    if keys[:1] == ["discover"] and keys[2:3] == ["defaults"]:
        return keys[3:]
    return None


def _message(err: Any, keys: list[str], union: bool) -> str:
    got = f", got {err.get('input')!r}"
    policy = _in_table(keys)
    if err["type"] == "extra_forbidden":
        return "unknown field (a typo?); tables.schema.json lists the fields allowed here"
    if err["type"] == "missing":
        hint = " (a local path or an fsspec URI like s3://bucket/t)" if keys[-1:] == ["uri"] else ""
        return "is required" + hint
    if err["type"] in ("model_type", "dict_type", "model_attributes_type"):
        if policy is not None and len(policy) == 1 and policy[0] in _SECTIONS:
            return "must be true, false or a mapping of its settings" + got
        return "must be a mapping" + got
    if union and policy is not None and policy[:1] == ["storage_options"]:
        return "must be a string, number, boolean, mapping or {env: VARIABLE_NAME}" + got
    if union and keys[:2] == ["spark", "conf"]:
        return "must be a string, number, boolean or {env: VARIABLE_NAME}" + got
    if union:  # uri, spark.master: text or a secret
        return "must be a non-empty string or {env: VARIABLE_NAME}" + got
    return str(err["msg"])


def _error(exc: ValidationError, raw: Any, source: str | None) -> TableConfigError:
    """The first validation error, as ``TableConfigError`` naming the table and the field."""
    errors = exc.errors(include_url=False)
    # An unknown key first: a misspelt `tabels` explains the missing `tables`.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    keys, union = _file_keys(raw, err["loc"][:-1] if err["type"] == "missing" else err["loc"])
    if err["type"] == "missing":  # the last key is the one not in the file
        keys.append(str(err["loc"][-1]))
    message = _message(err, keys, union)
    table = None
    loc = keys
    if loc[:1] == ["tables"] and len(loc) > 1:
        table, loc = loc[1], loc[2:]
    if loc == ["[key]"]:
        return TableConfigError("table names must be letters, digits and underscores, not starting "
                                "with a digit (they become Dagster group names)",
                                path=source, table=table, field="name")
    return TableConfigError(message, path=source, table=table, field=".".join(loc) or None)


def parse_config(raw: Any, *, source: str | None = None,
                 base_dir: pathlib.Path | None = None) -> MaintenanceConfig:
    """Validate a loaded YAML document into a ``MaintenanceConfig``."""
    if raw is None:
        raise TableConfigError("the file is empty; it needs a 'tables' mapping or a 'discover' list",
                               path=source, field="tables")
    if isinstance(raw, dict) and "tables" in raw and raw["tables"] is None:
        raw = {**raw, "tables": {}}  # `tables:` with nothing under it: no tables yet, as before
    try:
        doc = TablesFile.model_validate(raw)
    except ValidationError as exc:
        raise _error(exc, raw, source) from None
    try:
        return to_config(doc, source=source, base_dir=base_dir)
    except OptionError as exc:
        raise TableConfigError(str(exc), path=source, table=exc.table,
                               field=f"storage_options.{exc.field}") from None
    except ConfigError as exc:  # from discovery: a bad root, two tables of one name
        raise TableConfigError(str(exc), path=source, field="discover") from None


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
