"""The ``tables.yaml`` file as pydantic models: what the file may hold, field by field.

These models describe the file as written (sizes as ``128MB``, secrets as ``{env: NAME}``,
sections as ``true``/``false`` or a mapping) and check it; ``to_config`` then converts a
validated document into the frozen records of ``resources.config``, whose per-operation
options are delta_core's own option records (``delta_core.maintenance.options``), the config
types of the operation registry. Each operation's section is named by its registry
``policy_key``. ``tables.schema.json`` is exported from ``TablesFile`` (``python -m
resources.config_schema``), so editors complete and check the file.

Every model forbids unknown keys and is strict (no ``"yes"`` for a boolean, no ``1`` for a
string): a typo fails at load, named by table and field, not in a scheduled run.
"""

from __future__ import annotations

import pathlib
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.maintenance.options import (
    DEFAULT_MAX_DELETED_ROWS_RATIO,
    CheckpointOptions,
    ClusterOptions,
    CompactLogOptions,
    CompactOptions,
    ManifestOptions,
    PurgeOptions,
    VacuumOptions,
    ZOrderOptions,
)
from delta_core.maintenance.policy_values import parse_retention_hours, resolve_table_uri
from delta_core.maintenance.predicate import parse_predicate_syntax
from delta_core.model.clustering import MAX_CLUSTERING_COLUMNS
from delta_core.model.sizes import parse_size
from delta_core.model.table_properties import (
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_DELETED_FILE_RETENTION,
)
from resources.config_records import (
    DEFAULT_ADVISOR_COOLDOWN_MINUTES,
    DEFAULT_ADVISOR_INTERVAL_SECONDS,
    DEFAULT_COMPACT_CRON,
    DEFAULT_MAX_COMMITS_PER_TICK,
    DEFAULT_SENSOR_INTERVAL_SECONDS,
    DEFAULT_VACUUM_CRON,
    DEFAULT_VACUUM_MIN_INTERVAL_HOURS,
    AdvisorPolicy,
    CheckpointPolicy,
    ClusterPolicy,
    CompactLogPolicy,
    CompactPolicy,
    DailySummary,
    DownstreamPolicy,
    EnvRef,
    MaintenanceConfig,
    ManifestPolicy,
    OptionValue,
    PurgePolicy,
    SensorPolicy,
    SparkSettings,
    TableConfig,
    VacuumPolicy,
    ZOrderPolicy,
)

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_ASSET_KEY = re.compile(r"^[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*$")
_CRON_FIELD = re.compile(r"^(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*$")
_CRON_ALIASES = ("@hourly", "@daily", "@weekly", "@monthly")


def _invalid(message: str) -> PydanticCustomError:
    """A validation error whose message is ours, verbatim (pydantic prefixes ValueErrors)."""
    return PydanticCustomError("tables_yaml", message)


# --- field types: input as written, output as the records want it ------------------------


def _size(value: Any) -> int:
    try:
        return parse_size(value)
    except ConfigError as exc:
        raise _invalid(str(exc)) from None
    except TypeError:
        raise _invalid(f"must be a size in bytes like 134217728 or '128MB', got {value!r}") from None


def _hours(value: Any) -> float:
    try:  # shared with the command line's reader of this file (delta_core.cli.policy)
        return parse_retention_hours(value)
    except ConfigError as exc:
        raise _invalid(str(exc)) from None


def is_valid_cron(expr: str) -> bool:
    """Five-field cron (minute hour day month weekday) or @hourly/@daily/@weekly/@monthly."""
    expr = expr.strip()
    if expr in _CRON_ALIASES:
        return True
    fields = expr.split()
    return len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields)


def _cron(value: str) -> str:
    if not is_valid_cron(value):
        raise _invalid(f"must be a 5-field cron string like '0 2 * * *', got {value!r}")
    return value.strip()


def _predicate(value: str) -> str:
    """A partition predicate, parsed now so a typo fails at load, not in a scheduled run."""
    try:
        parse_predicate_syntax(value)
    except ConfigError as exc:
        raise _invalid(str(exc)) from None
    return value


def short_retention_error(retention_hours: float | None, floor_hours: float, *, opted_in: bool,
                          whose: str) -> str | None:
    """Why a vacuum retention below ``floor_hours`` is refused without ``allow_short_retention: true``."""
    if retention_hours is None or retention_hours >= floor_hours or opted_in:
        return None
    return (f"retention_hours {retention_hours:g} is below {whose} deleted-file retention "
                       f"({floor_hours:g} hours): files still needed by readers of recent versions or by "
                       "running writers could be deleted. Raise it, or add allow_short_retention: true "
            "if nothing else reads or writes the table")


def _asset_key(value: str) -> str:
    if not _ASSET_KEY.match(value):
        raise _invalid(f"must be an asset key like 'team/report' (one of the asset keys), got {value!r}")
    return value


Size = Annotated[int, PlainValidator(_size, json_schema_input_type=int | str)]
Hours = Annotated[float, PlainValidator(_hours, json_schema_input_type=float | str)]
Cron = Annotated[str, AfterValidator(_cron)]
Predicate = Annotated[str, Field(min_length=1), AfterValidator(_predicate)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_absent(cls, data: Any) -> Any:
        """``key:`` with nothing after it (YAML null) means the key is absent: its default."""
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class Env(_Model):
    """``{env: NAME}``: the value is read from the environment variable NAME at run time."""

    env: str = Field(pattern=NAME_PATTERN, description="Environment variable name.")

    def ref(self) -> EnvRef:
        return EnvRef(self.env)


StrOrEnv = NonEmpty | Env


def _section(value: Any) -> Any:
    """A policy section may be ``true`` (on, defaults), ``false`` (off) or a mapping."""
    return {"enabled": value} if isinstance(value, bool) else value


class _OnOff:
    """``OnOff[Section]``: the section, also written as ``true``/``false`` (schema says so too)."""

    def __class_getitem__(cls, model: type[_Model]) -> Any:
        return Annotated[model, BeforeValidator(_section, json_schema_input_type=bool | model)]


if TYPE_CHECKING:  # to mypy the field holds the section itself
    from typing import TypeVar

    _S = TypeVar("_S")
    OnOff = Annotated[_S, ...]
else:
    OnOff = _OnOff


# --- sections ------------------------------------------------------------------------------


class CompactSection(_Model):
    """Bin-pack small files (OPTIMIZE). On by default."""

    enabled: bool = True
    target_size: Size | None = Field(default=None, description="Target file size: bytes or '128MB'/'64MiB'. "
                                                               "Default: delta.targetFileSize.")
    min_file_size: Size | None = Field(default=None, description="Only smaller files are packed. "
                                                                 "Default: 3/4 of the target.")
    where: Predicate | None = Field(default=None, description="Partition predicate.")
    cron: Cron = Field(default=DEFAULT_COMPACT_CRON, description="Schedule (UTC).")
    max_deleted_rows_ratio: float = Field(
        default=DEFAULT_MAX_DELETED_ROWS_RATIO, ge=0, le=1,
        description="Also rewrite files whose deletion vectors delete more than this share of their rows.")

    def to_policy(self) -> CompactPolicy:
        return CompactPolicy(enabled=self.enabled, cron=self.cron, options=CompactOptions(
            target_size=self.target_size, where=self.where, min_file_size=self.min_file_size,
            max_deleted_rows_ratio=self.max_deleted_rows_ratio))


class ZOrderSection(_Model):
    """Cluster files along a Z-order or Hilbert curve. On when the section is given."""

    enabled: bool = True
    columns: list[NonEmpty] = Field(default_factory=list, validate_default=True,
                                    description="Data columns to cluster on.")
    curve: Literal["zorder", "hilbert"] = "zorder"
    where: Predicate | None = None
    target_size: Size | None = None
    cron: Cron | None = Field(default=None, description="Schedule (UTC); none unless given.")

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str], info: ValidationInfo) -> list[str]:
        if info.data.get("enabled", True) and not columns:
            raise _invalid("z-order is enabled but names no columns")
        if len(set(columns)) != len(columns):
            raise _invalid(f"lists a column twice: {columns!r}")
        return columns

    def to_policy(self) -> ZOrderPolicy:
        return ZOrderPolicy(enabled=self.enabled, cron=self.cron, options=ZOrderOptions(
            columns=tuple(self.columns), curve=self.curve, where=self.where, target_size=self.target_size))


class VacuumSection(_Model):
    """Delete unreferenced files older than the retention. On by default."""

    enabled: bool = True
    # Before retention_hours, whose validator reads it.
    allow_short_retention: bool = Field(
        default=False, description="Opt in to a retention_hours below the table's "
                                   "delta.deletedFileRetentionDuration (default 7 days): files that readers "
                                   "of recent versions or running writers still need may be deleted.")
    retention_hours: Hours | None = Field(default=None, description="Hours, or an interval like '7 days'. "
                                                                    "Default: delta.deletedFileRetentionDuration.")
    dry_run: bool = False
    cron: Cron = Field(default=DEFAULT_VACUUM_CRON, description="Schedule (UTC).")
    mode: Literal["full", "lite"] = Field(default="full", description=(
        "full lists the table; lite deletes what the log removed since the last vacuum without listing "
        "(Delta's VACUUM LITE) and refuses when log cleanup dropped commits it needs."))
    inventory: NonEmpty | None = Field(default=None, description=(
        "Plan from this storage inventory instead of listing the table (Delta's VACUUM ... USING INVENTORY): "
        "a Delta table or Parquet/CSV files with path, length, isDir, modificationTime; read with the "
        "table's storage_options."))

    @field_validator("retention_hours")
    @classmethod
    def _short_retention_needs_opt_in(cls, hours: float | None, info: ValidationInfo) -> float | None:
        # The table's own retention is checked at definitions load (resources.table_checks); the
        # file alone can already refuse one below the protocol's default.
        error = short_retention_error(hours, DEFAULT_DELETED_FILE_RETENTION.total_seconds() / 3600.0,
                                      opted_in=info.data.get("allow_short_retention", False), whose="the default")
        if error is not None:
            raise _invalid(error)
        return hours

    def to_policy(self) -> VacuumPolicy:
        return VacuumPolicy(enabled=self.enabled, cron=self.cron, options=VacuumOptions(
            retention_hours=self.retention_hours, dry_run=self.dry_run, force=self.allow_short_retention,
            mode=self.mode, inventory=self.inventory))


class CheckpointSection(_Model):
    """Checkpoint when this many versions landed since the last one. On by default."""

    enabled: bool = True
    interval: int = Field(default=DEFAULT_CHECKPOINT_INTERVAL, gt=0)
    cleanup_log: bool = Field(default=False, description="Also delete expired log files.")
    sidecar_threshold: int | None = Field(
        default=None, gt=0, description="v2Checkpoint tables with more file actions than this get a UUID-named "
                                        "checkpoint with sidecars (written on Spark). Default: 100000.")

    def to_policy(self) -> CheckpointPolicy:
        return CheckpointPolicy(enabled=self.enabled, interval=self.interval,
                                options=CheckpointOptions(cleanup_log=self.cleanup_log,
                                                          sidecar_threshold=self.sidecar_threshold))


class ManifestSection(_Model):
    """Symlink manifests for Hive/Presto/Athena. Off by default."""

    enabled: bool = True
    incremental: bool = False

    def to_policy(self) -> ManifestPolicy:
        return ManifestPolicy(enabled=self.enabled, options=ManifestOptions(incremental=self.incremental))


class ClusterSection(_Model):
    """Liquid clustering: set the clustering columns (when they differ) and cluster. On when the
    section is given."""

    enabled: bool = True
    columns: list[NonEmpty] = Field(default_factory=list, description="Clustering columns (at most "
                                    f"{MAX_CLUSTERING_COLUMNS}); none: keep the table's own.")
    full: bool = Field(default=False, description="Recluster every file, not only new data (OPTIMIZE FULL).")
    target_size: Size | None = None
    cron: Cron | None = Field(default=None, description="Schedule (UTC); none unless given.")

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str]) -> list[str]:
        if len(set(columns)) != len(columns):
            raise _invalid(f"lists a column twice: {columns!r}")
        if len(columns) > MAX_CLUSTERING_COLUMNS:
            raise _invalid(f"at most {MAX_CLUSTERING_COLUMNS} clustering columns, got {len(columns)}")
        return columns

    def to_policy(self) -> ClusterPolicy:
        return ClusterPolicy(enabled=self.enabled, cron=self.cron, options=ClusterOptions(
            columns=tuple(self.columns), full=self.full, target_size=self.target_size))


class CompactLogSection(_Model):
    """Log compaction files (x.y.compacted.json) for the commits after the newest checkpoint. Off unless given."""

    enabled: bool = True
    min_commits: int = Field(default=2, ge=2, description="Write one only when this many commits follow the checkpoint.")

    def to_policy(self) -> CompactLogPolicy:
        return CompactLogPolicy(enabled=self.enabled, options=CompactLogOptions(min_commits=self.min_commits))


class PurgeSection(_Model):
    """Rewrite files with deletion vectors or dropped columns (REORG ... APPLY (PURGE)). On when
    the section is given."""

    enabled: bool = True
    where: Predicate | None = Field(default=None, description="Partition predicate.")
    max_deleted_rows_ratio: float = Field(
        default=0.0, ge=0, le=1,
        description="Only rewrite files with more than this share of rows deleted. Default 0: every file "
                    "with a deleted row.")
    cron: Cron | None = Field(default=None, description="Schedule (UTC); none unless given.")

    def to_policy(self) -> PurgePolicy:
        return PurgePolicy(enabled=self.enabled, cron=self.cron, options=PurgeOptions(
            where=self.where, max_deleted_rows_ratio=self.max_deleted_rows_ratio))


_HEALTH_DEFAULTS = HealthPolicy()
Ratio = Annotated[float, Field(ge=0, le=1)]


class AdvisorSection(_Model):
    """Policy-driven maintenance: with ``mode: auto`` the table's advisor sensor requests a run
    of each enabled operation whose threshold is crossed (``delta_core.health``); ``schedule``
    (default) leaves it to the crons."""

    mode: Literal["schedule", "auto"] = "schedule"
    interval_seconds: int = Field(default=DEFAULT_ADVISOR_INTERVAL_SECONDS, gt=0,
                                  description="Seconds between the advisor's health checks.")
    cooldown_minutes: float = Field(default=DEFAULT_ADVISOR_COOLDOWN_MINUTES, ge=0,
                                    description="Minutes after an advised run of an operation before "
                                                "the next of the same operation on this table.")
    compact_small_file_ratio: Ratio = Field(default=_HEALTH_DEFAULTS.compact_small_file_ratio,
                                            description="Compact when more than this share of files is small ...")
    compact_min_small_files: int = Field(default=_HEALTH_DEFAULTS.compact_min_small_files, ge=0,
                                         description="... or when more files than this are small.")
    purge_deleted_rows_ratio: Ratio = Field(default=_HEALTH_DEFAULTS.purge_deleted_rows_ratio,
                                            description="Purge when deletion vectors delete more than "
                                                        "this share of rows.")
    skip_ratio_floor: Ratio = Field(default=_HEALTH_DEFAULTS.skip_ratio_floor,
                                    description="Z-order/cluster when the point-query skip ratio on the "
                                                "configured columns is below this.")
    vacuum_min_reclaimable_bytes: Size = Field(default=_HEALTH_DEFAULTS.vacuum_min_reclaimable_bytes,
                                               description="Vacuum when at least this much is reclaimable.")
    vacuum_min_interval_hours: Hours = Field(default=DEFAULT_VACUUM_MIN_INTERVAL_HOURS,
                                             description="Vacuum at most this often (default daily).")

    def to_policy(self, *, target_size: int | None, min_file_size: int | None,
                  checkpoint_interval: int | None) -> AdvisorPolicy:
        """The record; ``checkpoint_interval`` None: the table's delta.checkpointInterval."""
        health = HealthPolicy(
            target_file_size=target_size, min_file_size=min_file_size,
            compact_small_file_ratio=self.compact_small_file_ratio,
            compact_min_small_files=self.compact_min_small_files,
            purge_deleted_rows_ratio=self.purge_deleted_rows_ratio, skip_ratio_floor=self.skip_ratio_floor,
            checkpoint_interval=checkpoint_interval,
            vacuum_min_reclaimable_bytes=self.vacuum_min_reclaimable_bytes)
        return AdvisorPolicy(mode=self.mode, interval_seconds=self.interval_seconds,
                             cooldown_minutes=self.cooldown_minutes,
                             vacuum_min_interval_hours=self.vacuum_min_interval_hours, health=health)


class SensorSection(_Model):
    """The table's log sensor. On by default."""

    enabled: bool = True
    interval_seconds: int = Field(default=DEFAULT_SENSOR_INTERVAL_SECONDS, gt=0)
    max_commits_per_tick: int = Field(default=DEFAULT_MAX_COMMITS_PER_TICK, gt=0)


class DailySummarySection(_Model):
    date_column: NonEmpty


class DownstreamSection(_Model):
    daily_summary: DailySummarySection | None = None
    assets: list[Annotated[str, AfterValidator(_asset_key)]] = Field(
        default_factory=list, description="Asset keys ('team/report') refreshed on dataChange commits.")


if TYPE_CHECKING:  # mypy cannot follow the recursive alias below
    OptionNode = Any
else:
    OptionNode = TypeAliasType(  # a named recursive type: nested storage options
        "OptionNode", Annotated[bool | int | float | str | Env | dict[str, "OptionNode"],
                                Field(union_mode="left_to_right")])  # {env: X} is an Env, not a mapping


class TableSection(_Model):
    """One managed Delta table; its name is the Dagster group name."""

    uri: StrOrEnv = Field(description="Table root: a local path (relative to this file) or an fsspec URI.")
    description: NonEmpty | None = None
    storage_options: dict[str, OptionNode] = Field(
        default_factory=dict, description="fsspec options; nested mappings allowed; secrets as {env: NAME}.")
    # One section per registry entry, named by its policy_key (tests/dagster/test_operation_registry.py).
    compact: OnOff[CompactSection] = Field(default_factory=CompactSection)
    zorder: OnOff[ZOrderSection] | None = None  # on when given
    vacuum: OnOff[VacuumSection] = Field(default_factory=VacuumSection)
    checkpoint: OnOff[CheckpointSection] = Field(default_factory=CheckpointSection)
    manifest: OnOff[ManifestSection] | None = None  # off unless given
    sensor: OnOff[SensorSection] = Field(default_factory=SensorSection)
    downstream: DownstreamSection = Field(default_factory=DownstreamSection)
    cluster: OnOff[ClusterSection] | None = None  # on when given
    compact_log: OnOff[CompactLogSection] | None = None  # off unless given
    purge: OnOff[PurgeSection] | None = None  # on when given
    advisor: AdvisorSection = Field(default_factory=AdvisorSection)


class SparkSection(_Model):
    master: StrOrEnv | None = Field(default=None, description="Default: $SPARK_MASTER, else local[*].")
    app_name: NonEmpty = "delta-maintenance"
    conf: dict[str, str | int | float | bool | Env] = Field(default_factory=dict)


TableName = Annotated[str, Field(pattern=NAME_PATTERN)]


class TablesFile(_Model):
    """tables.yaml: the Delta tables under management and their maintenance policy."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True,
                              title="Delta maintenance tables (tables.yaml)")

    spark: SparkSection = Field(default_factory=SparkSection)
    tables: dict[TableName, TableSection] = Field(
        description="Table name (letters, digits, _; the Dagster group name) to its settings.",
        json_schema_extra={"additionalProperties": False})  # a name outside the pattern is refused


# --- conversion into the records ---------------------------------------------------------


class OptionError(ValueError):
    """A storage option that is neither a value, a mapping nor a well-formed ``{env: NAME}``."""

    def __init__(self, field: str, message: str, *, table: str | None = None):
        super().__init__(message)
        self.field = field
        self.table = table


def _flatten(node: dict[str, Any], prefix: str, out: list[tuple[str, OptionValue]]) -> None:
    for key, item in node.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if "." in key:
            raise OptionError(dotted, "option names must not contain '.'")
        if isinstance(item, Env):
            out.append((dotted, item.ref()))
        elif isinstance(item, dict):
            if "env" in item and len(item) == 1:  # an {env: ...} the Env model refused
                raise OptionError(dotted, "an environment reference must look like {env: VARIABLE_NAME}")
            _flatten(item, dotted, out)
        else:
            out.append((dotted, item))


def table_record(name: str, t: TableSection, *, base_dir: pathlib.Path | None) -> TableConfig:
    """The frozen record of one validated table section."""
    options: list[tuple[str, OptionValue]] = []
    try:
        _flatten(t.storage_options, "", options)
    except OptionError as exc:
        raise OptionError(exc.field, str(exc), table=name) from None
    uri = t.uri.ref() if isinstance(t.uri, Env) else resolve_table_uri(t.uri, base_dir)
    summary = t.downstream.daily_summary
    return TableConfig(
        name=name, uri=uri, storage_options=tuple(options), description=t.description,
        compact=t.compact.to_policy(),
        zorder=t.zorder.to_policy() if t.zorder is not None else ZOrderPolicy(),
        vacuum=t.vacuum.to_policy(),
        checkpoint=t.checkpoint.to_policy(),
        manifest=t.manifest.to_policy() if t.manifest is not None else ManifestPolicy(),
        sensor=SensorPolicy(enabled=t.sensor.enabled, interval_seconds=t.sensor.interval_seconds,
                            max_commits_per_tick=t.sensor.max_commits_per_tick),
        downstream=DownstreamPolicy(
            daily_summary=DailySummary(summary.date_column) if summary is not None else None,
            assets=tuple(t.downstream.assets)),
        cluster=t.cluster.to_policy() if t.cluster is not None else ClusterPolicy(),
        compact_log=t.compact_log.to_policy() if t.compact_log is not None else CompactLogPolicy(),
        purge=t.purge.to_policy() if t.purge is not None else PurgePolicy(),
        # An interval written in tables.yaml wins; else the advisor follows delta.checkpointInterval.
        advisor=t.advisor.to_policy(
            target_size=t.compact.target_size, min_file_size=t.compact.min_file_size,
            checkpoint_interval=t.checkpoint.interval if "interval" in t.checkpoint.model_fields_set else None),
    )


def spark_record(s: SparkSection) -> SparkSettings:
    def conf_value(v: str | int | float | bool | Env) -> str | EnvRef:
        if isinstance(v, Env):
            return v.ref()
        return str(v).lower() if isinstance(v, bool) else str(v)

    master = s.master.ref() if isinstance(s.master, Env) else s.master
    return SparkSettings(master=master, app_name=s.app_name,
                         conf=tuple((k, conf_value(v)) for k, v in s.conf.items()))


def to_config(doc: TablesFile, *, source: str | None, base_dir: pathlib.Path | None) -> MaintenanceConfig:
    """``MaintenanceConfig`` of a validated file (``OptionError`` for a malformed storage option)."""
    return MaintenanceConfig(
        tables=tuple(table_record(name, t, base_dir=base_dir) for name, t in doc.tables.items()),
        spark=spark_record(doc.spark), source=source)
