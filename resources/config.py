"""The table config file (``tables.yaml``): which Delta tables are managed and their policy.

The file is parsed once, here, into frozen records; everything downstream (resources, asset,
job, schedule and sensor factories) reads those records and never the raw YAML. Invalid
config fails at load with ``TableConfigError`` naming the table and the field.

Layout (every section but ``tables`` optional)::

    spark:
      master: local[*]                # or {env: SPARK_MASTER}
      conf: {spark.sql.shuffle.partitions: "8"}
    tables:
      events:                         # table name = Dagster group name
        uri: demo_data/events         # relative paths resolve against this file's folder
        storage_options:              # passed to fsspec; nested mappings allowed
          key: {env: AWS_ACCESS_KEY_ID}
          secret: {env: AWS_SECRET_ACCESS_KEY}
          client_kwargs: {endpoint_url: "http://127.0.0.1:9000"}
        compaction: {target_size: 128MB, where: "date >= '2024-01-01'", cron: "0 2 * * *"}
        zorder: {columns: [user_id, ts], curve: zorder, cron: "0 4 * * 6"}
        vacuum: {retention_hours: 168, dry_run: false, cron: "0 3 * * 0"}
        checkpoint: {interval: 10, cleanup_log: false}
        manifest: {enabled: true}
        sensor: {interval_seconds: 30}
        downstream:
          daily_summary: {date_column: event_date}
          assets: ["other/asset"]

A section may be ``false`` (disabled) or ``true`` (enabled with defaults). Secrets are only
ever referenced as ``{env: NAME}`` and become Dagster ``EnvVar``s, read at run time.

``where`` predicates are parsed here (syntax); what needs the table's schema (partition
columns, Z-order columns) is checked at definitions load by ``resources.table_checks``.
"""

from __future__ import annotations

import os
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

import yaml

from delta_core.errors import ConfigError
from delta_core.maintenance.predicate import parse_predicate_syntax
from delta_core.model.table_properties import DEFAULT_CHECKPOINT_INTERVAL, parse_interval

CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"
DEFAULT_CONFIG_PATH = pathlib.Path(__file__).resolve().parent.parent / "tables.yaml"

DEFAULT_COMPACTION_CRON = "0 2 * * *"  # daily 02:00
DEFAULT_VACUUM_CRON = "0 3 * * 0"  # weekly, Sunday 03:00
DEFAULT_SENSOR_INTERVAL_SECONDS = 30
DEFAULT_MAX_COMMITS_PER_TICK = 1000
ZORDER_CURVES = ("zorder", "hilbert")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSET_KEY = re.compile(r"^[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
               "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "t": 1000**4,
               "tb": 1000**4, "tib": 1024**4}
_CRON_FIELD = re.compile(r"^(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*$")
_CRON_ALIASES = ("@hourly", "@daily", "@weekly", "@monthly")


class TableConfigError(ConfigError):
    """The table config file is invalid; ``table`` and ``field`` say where."""

    def __init__(self, message: str, *, path: str | None = None, table: str | None = None,
                 field: str | None = None):
        where = " ".join(p for p in (
            f"{path}:" if path else "",
            f"table {table!r}:" if table else "",
            f"field {field!r}:" if field else "",
        ) if p)
        super().__init__(f"{where} {message}".strip(), path=path)
        self.table = table
        self.field = field


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvRef:
    """A value read from an environment variable at run time (``{env: NAME}`` in YAML)."""

    name: str


Scalar = Union[str, int, float, bool]
OptionValue = Union[Scalar, EnvRef]


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    enabled: bool = True
    target_size: int | None = None  # None: the table's delta.targetFileSize
    where: str | None = None
    cron: str = DEFAULT_COMPACTION_CRON


@dataclass(frozen=True, slots=True)
class ZOrderPolicy:
    enabled: bool = False
    columns: tuple[str, ...] = ()
    curve: str = "zorder"
    where: str | None = None
    target_size: int | None = None
    cron: str | None = None  # no schedule unless given


@dataclass(frozen=True, slots=True)
class VacuumPolicy:
    enabled: bool = True
    retention_hours: float | None = None  # None: the table's delta.deletedFileRetentionDuration
    dry_run: bool = False
    cron: str = DEFAULT_VACUUM_CRON


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    enabled: bool = True
    interval: int = DEFAULT_CHECKPOINT_INTERVAL
    cleanup_log: bool = False


@dataclass(frozen=True, slots=True)
class ManifestPolicy:
    enabled: bool = False
    incremental: bool = False


@dataclass(frozen=True, slots=True)
class SensorPolicy:
    enabled: bool = True
    interval_seconds: int = DEFAULT_SENSOR_INTERVAL_SECONDS
    max_commits_per_tick: int = DEFAULT_MAX_COMMITS_PER_TICK


@dataclass(frozen=True, slots=True)
class DailySummary:
    """The example downstream asset ``<table>/daily_summary``: row counts per day."""

    date_column: str


@dataclass(frozen=True, slots=True)
class DownstreamPolicy:
    daily_summary: DailySummary | None = None
    assets: tuple[str, ...] = ()  # asset keys ("a/b") refreshed on dataChange commits


@dataclass(frozen=True, slots=True)
class TableConfig:
    name: str
    uri: str | EnvRef
    storage_options: tuple[tuple[str, OptionValue], ...] = ()  # dotted keys for nesting
    description: str | None = None
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    zorder: ZOrderPolicy = field(default_factory=ZOrderPolicy)
    vacuum: VacuumPolicy = field(default_factory=VacuumPolicy)
    checkpoint: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    manifest: ManifestPolicy = field(default_factory=ManifestPolicy)
    sensor: SensorPolicy = field(default_factory=SensorPolicy)
    downstream: DownstreamPolicy = field(default_factory=DownstreamPolicy)

    @property
    def operations(self) -> tuple[str, ...]:
        """Enabled maintenance operations, in the order a full maintenance run does them."""
        enabled = {
            "compaction": self.compaction.enabled,
            "zorder": self.zorder.enabled,
            "vacuum": self.vacuum.enabled,
            "checkpoint": self.checkpoint.enabled,
            "manifest": self.manifest.enabled,
        }
        return tuple(op for op in OPERATIONS if enabled[op])


OPERATIONS = ("compaction", "zorder", "vacuum", "checkpoint", "manifest")


@dataclass(frozen=True, slots=True)
class SparkSettings:
    master: str | EnvRef | None = None  # None: $SPARK_MASTER or local[*]
    app_name: str = "delta-maintenance"
    conf: tuple[tuple[str, str | EnvRef], ...] = ()


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    tables: tuple[TableConfig, ...]
    spark: SparkSettings = field(default_factory=SparkSettings)
    source: str | None = None

    def table(self, name: str) -> TableConfig:
        for t in self.tables:
            if t.name == name:
                return t
        raise TableConfigError("no such table in the config", path=self.source, table=name)


# --- parsing -----------------------------------------------------------------------------


class _Ctx:
    """Where we are in the file, for error messages."""

    def __init__(self, path: str | None, table: str | None = None):
        self.path = path
        self.table = table

    def fail(self, field_name: str | None, message: str) -> TableConfigError:
        return TableConfigError(message, path=self.path, table=self.table, field=field_name)


def _mapping(ctx: _Ctx, value: Any, name: str | None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.fail(name, f"must be a mapping, got {type(value).__name__}")
    for k in value:
        if not isinstance(k, str):
            raise ctx.fail(name, f"keys must be strings, got {k!r}")
    return value


def _check_keys(ctx: _Ctx, value: Mapping[str, Any], name: str | None, allowed: tuple[str, ...]) -> None:
    for k in value:
        if k not in allowed:
            where = f"{name}.{k}" if name else k
            raise ctx.fail(where, f"unknown field; expected one of: {', '.join(allowed)}")


def _section(ctx: _Ctx, raw: Mapping[str, Any], name: str, allowed: tuple[str, ...],
             default_enabled: bool) -> tuple[bool, Mapping[str, Any]]:
    """A policy section: absent, a bool, or a mapping (with optional ``enabled``)."""
    value = raw.get(name)
    if value is None:
        return default_enabled, {}
    if isinstance(value, bool):
        return value, {}
    section = _mapping(ctx, value, name)
    _check_keys(ctx, section, name, ("enabled",) + allowed)
    enabled = section.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ctx.fail(f"{name}.enabled", f"must be true or false, got {enabled!r}")
    return enabled, section


def _str(ctx: _Ctx, value: Any, name: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ctx.fail(name, f"must be a non-empty string, got {value!r}")
    return value


def _opt_str(ctx: _Ctx, value: Any, name: str) -> str | None:
    return None if value is None else _str(ctx, value, name)


def _predicate(ctx: _Ctx, value: Any, name: str) -> str | None:
    """A partition predicate, parsed now so a typo fails at load, not in a scheduled run."""
    text = _opt_str(ctx, value, name)
    if text is not None:
        try:
            parse_predicate_syntax(text)
        except ConfigError as e:
            raise ctx.fail(name, str(e)) from None
    return text


def _bool(ctx: _Ctx, value: Any, name: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ctx.fail(name, f"must be true or false, got {value!r}")
    return value


def _positive_int(ctx: _Ctx, value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ctx.fail(name, f"must be a whole number greater than zero, got {value!r}")
    return value


def parse_size(value: Any) -> int:
    """Bytes from an int or a string like ``128MB``, ``64 MiB``, ``1g``; ``ValueError`` if bad."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        n = value
    else:
        m = _SIZE.match(str(value))
        unit = (m[2] or "").lower() if m else ""
        if not m or unit not in _SIZE_UNITS:
            raise ValueError(value)
        n = int(float(m[1]) * _SIZE_UNITS[unit])
    if n <= 0:
        raise ValueError(value)
    return n


def _size(ctx: _Ctx, value: Any, name: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError:
        raise ctx.fail(name, f"must be a size in bytes like 134217728 or '128MB', got {value!r}") from None


def _hours(ctx: _Ctx, value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ctx.fail(name, f"must not be negative, got {value!r}")
        return float(value)
    if isinstance(value, str):
        try:
            return parse_interval(value, key=name).total_seconds() / 3600.0
        except ConfigError as e:
            raise ctx.fail(name, str(e)) from None
    raise ctx.fail(name, f"must be hours (a number) or an interval like '7 days', got {value!r}")


def is_valid_cron(expr: str) -> bool:
    """Five-field cron (minute hour day month weekday) or @hourly/@daily/@weekly/@monthly."""
    expr = expr.strip()
    if expr in _CRON_ALIASES:
        return True
    fields = expr.split()
    return len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields)


def _cron(ctx: _Ctx, value: Any, name: str, default: str | None) -> str | None:
    if value is None:
        return default
    if not isinstance(value, str) or not is_valid_cron(value):
        raise ctx.fail(name, f"must be a 5-field cron string like '0 2 * * *', got {value!r}")
    return value.strip()


def _env_ref(ctx: _Ctx, value: Mapping[str, Any], name: str) -> EnvRef:
    if set(value) != {"env"} or not isinstance(value["env"], str) or not _NAME.match(value["env"]):
        raise ctx.fail(name, "an environment reference must look like {env: VARIABLE_NAME}")
    return EnvRef(value["env"])


def _str_or_env(ctx: _Ctx, value: Any, name: str) -> str | EnvRef:
    if isinstance(value, Mapping):
        return _env_ref(ctx, value, name)
    return _str(ctx, value, name)


def _storage_options(ctx: _Ctx, value: Any, name: str) -> tuple[tuple[str, OptionValue], ...]:
    if value is None:
        return ()
    out: list[tuple[str, OptionValue]] = []

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, item in _mapping(ctx, node, prefix or name).items():
            dotted = f"{prefix}.{key}" if prefix else key
            if "." in key:
                raise ctx.fail(f"{name}.{dotted}", "option names must not contain '.'")
            if isinstance(item, Mapping) and set(item) == {"env"}:
                out.append((dotted, _env_ref(ctx, item, f"{name}.{dotted}")))
            elif isinstance(item, Mapping):
                walk(item, dotted)
            elif isinstance(item, (str, int, float, bool)):
                out.append((dotted, item))
            else:
                raise ctx.fail(f"{name}.{dotted}", f"must be a string, number, boolean, "
                                                   f"mapping or {{env: NAME}}, got {item!r}")

    walk(_mapping(ctx, value, name), "")
    return tuple(out)


def _resolve_uri(uri: str, base_dir: pathlib.Path | None) -> str:
    if "://" in uri or base_dir is None:
        return uri
    p = pathlib.Path(os.path.expanduser(uri))
    return str(p if p.is_absolute() else (base_dir / p).resolve())


def _parse_table(ctx: _Ctx, raw: Any, base_dir: pathlib.Path | None) -> TableConfig:
    entry = _mapping(ctx, raw, None)
    _check_keys(ctx, entry, None, ("uri", "description", "storage_options", "compaction",
                                   "zorder", "vacuum", "checkpoint", "manifest", "sensor",
                                   "downstream"))
    if "uri" not in entry:
        raise ctx.fail("uri", "is required (a local path or an fsspec URI like s3://bucket/t)")
    uri = _str_or_env(ctx, entry["uri"], "uri")
    if isinstance(uri, str):
        uri = _resolve_uri(uri, base_dir)

    on, s = _section(ctx, entry, "compaction", ("target_size", "where", "cron"), True)
    compaction = CompactionPolicy(
        enabled=on,
        target_size=_size(ctx, s.get("target_size"), "compaction.target_size"),
        where=_predicate(ctx, s.get("where"), "compaction.where"),
        cron=_cron(ctx, s.get("cron"), "compaction.cron", DEFAULT_COMPACTION_CRON) or DEFAULT_COMPACTION_CRON,
    )

    on, s = _section(ctx, entry, "zorder", ("columns", "curve", "where", "target_size", "cron"),
                     "zorder" in entry)
    cols = s.get("columns", [])
    if not isinstance(cols, list) or not all(isinstance(c, str) and c for c in cols):
        raise ctx.fail("zorder.columns", f"must be a list of column names, got {cols!r}")
    if on and not cols:
        raise ctx.fail("zorder.columns", "z-order is enabled but names no columns")
    if len(set(cols)) != len(cols):
        raise ctx.fail("zorder.columns", f"lists a column twice: {cols!r}")
    curve = s.get("curve", "zorder")
    if curve not in ZORDER_CURVES:
        raise ctx.fail("zorder.curve", f"must be one of {', '.join(ZORDER_CURVES)}, got {curve!r}")
    zorder = ZOrderPolicy(
        enabled=on, columns=tuple(cols), curve=curve,
        where=_predicate(ctx, s.get("where"), "zorder.where"),
        target_size=_size(ctx, s.get("target_size"), "zorder.target_size"),
        cron=_cron(ctx, s.get("cron"), "zorder.cron", None),
    )

    on, s = _section(ctx, entry, "vacuum", ("retention_hours", "dry_run", "cron"), True)
    vacuum = VacuumPolicy(
        enabled=on,
        retention_hours=_hours(ctx, s.get("retention_hours"), "vacuum.retention_hours"),
        dry_run=_bool(ctx, s.get("dry_run"), "vacuum.dry_run", False),
        cron=_cron(ctx, s.get("cron"), "vacuum.cron", DEFAULT_VACUUM_CRON) or DEFAULT_VACUUM_CRON,
    )

    on, s = _section(ctx, entry, "checkpoint", ("interval", "cleanup_log"), True)
    checkpoint = CheckpointPolicy(
        enabled=on,
        interval=_positive_int(ctx, s.get("interval"), "checkpoint.interval", DEFAULT_CHECKPOINT_INTERVAL),
        cleanup_log=_bool(ctx, s.get("cleanup_log"), "checkpoint.cleanup_log", False),
    )

    on, s = _section(ctx, entry, "manifest", ("incremental",), False)
    manifest = ManifestPolicy(enabled=on, incremental=_bool(ctx, s.get("incremental"),
                                                            "manifest.incremental", False))

    on, s = _section(ctx, entry, "sensor", ("interval_seconds", "max_commits_per_tick"), True)
    sensor = SensorPolicy(
        enabled=on,
        interval_seconds=_positive_int(ctx, s.get("interval_seconds"), "sensor.interval_seconds",
                                       DEFAULT_SENSOR_INTERVAL_SECONDS),
        max_commits_per_tick=_positive_int(ctx, s.get("max_commits_per_tick"),
                                           "sensor.max_commits_per_tick", DEFAULT_MAX_COMMITS_PER_TICK),
    )

    raw_down = entry.get("downstream") or {}
    down = _mapping(ctx, raw_down, "downstream")
    _check_keys(ctx, down, "downstream", ("daily_summary", "assets"))
    summary = None
    if down.get("daily_summary") is not None:
        ds = _mapping(ctx, down["daily_summary"], "downstream.daily_summary")
        _check_keys(ctx, ds, "downstream.daily_summary", ("date_column",))
        if "date_column" not in ds:
            raise ctx.fail("downstream.daily_summary.date_column", "is required")
        summary = DailySummary(_str(ctx, ds["date_column"], "downstream.daily_summary.date_column"))
    assets = down.get("assets", [])
    if not isinstance(assets, list) or not all(isinstance(a, str) and _ASSET_KEY.match(a) for a in assets):
        raise ctx.fail("downstream.assets", f"must be a list of asset keys like 'team/report', got {assets!r}")

    return TableConfig(
        name=ctx.table or "",
        uri=uri,
        storage_options=_storage_options(ctx, entry.get("storage_options"), "storage_options"),
        description=_opt_str(ctx, entry.get("description"), "description"),
        compaction=compaction, zorder=zorder, vacuum=vacuum, checkpoint=checkpoint,
        manifest=manifest, sensor=sensor,
        downstream=DownstreamPolicy(daily_summary=summary, assets=tuple(assets)),
    )


def _parse_spark(ctx: _Ctx, raw: Any) -> SparkSettings:
    if raw is None:
        return SparkSettings()
    s = _mapping(ctx, raw, "spark")
    _check_keys(ctx, s, "spark", ("master", "app_name", "conf"))
    master = None if s.get("master") is None else _str_or_env(ctx, s["master"], "spark.master")
    conf_raw = _mapping(ctx, s.get("conf") or {}, "spark.conf")
    conf: list[tuple[str, str | EnvRef]] = []
    for key, value in conf_raw.items():
        name = f"spark.conf.{key}"
        if isinstance(value, Mapping):
            conf.append((key, _env_ref(ctx, value, name)))
        elif isinstance(value, (str, int, float, bool)):
            conf.append((key, str(value).lower() if isinstance(value, bool) else str(value)))
        else:
            raise ctx.fail(name, f"must be a string, number, boolean or {{env: NAME}}, got {value!r}")
    app_name = _str(ctx, s.get("app_name", "delta-maintenance"), "spark.app_name")
    return SparkSettings(master=master, app_name=app_name, conf=tuple(conf))


def parse_config(raw: Any, *, source: str | None = None,
                 base_dir: pathlib.Path | None = None) -> MaintenanceConfig:
    """Validate a loaded YAML document into a ``MaintenanceConfig``."""
    ctx = _Ctx(source)
    if raw is None:
        raise ctx.fail("tables", "the file is empty; it needs a 'tables' mapping")
    doc = _mapping(ctx, raw, "(top level)")
    _check_keys(ctx, doc, None, ("tables", "spark"))
    if "tables" not in doc:
        raise ctx.fail("tables", "is required: a mapping of table name to its settings")
    tables_raw = _mapping(ctx, doc["tables"] or {}, "tables")
    tables = []
    for name, entry in tables_raw.items():
        if not _NAME.match(name):
            raise TableConfigError("table names must be letters, digits and underscores, not "
                                   "starting with a digit (they become Dagster group names)",
                                   path=source, table=name, field="name")
        tables.append(_parse_table(_Ctx(source, name), entry, base_dir))
    return MaintenanceConfig(tables=tuple(tables), spark=_parse_spark(ctx, doc.get("spark")),
                             source=source)


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
