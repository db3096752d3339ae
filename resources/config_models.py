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

import dataclasses
import pathlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from delta_core.errors import ConfigError
from delta_core.health.policy import ADVISOR_THRESHOLDS, HealthPolicy, table_health_policy
from delta_core.log.discovery import TABLE_NAME, DiscoverRule, discover_all
from delta_core.maintenance.operations import CHECKPOINT, REGISTRY, Operation, operation
from delta_core.maintenance.option_fields import Kind, OptionField, parse_option, policy_fields
from delta_core.maintenance.policy_values import parse_retention_hours, resolve_env, resolve_table_uri
from delta_core.model.sizes import parse_size
from delta_core.model.table_properties import (
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_DELETED_FILE_RETENTION,
)
from resources.config_records import (
    DEFAULT_ADVISOR_COOLDOWN_MINUTES,
    DEFAULT_ADVISOR_INTERVAL_SECONDS,
    DEFAULT_FLEET_REPORT_CRON,
    DEFAULT_MAX_COMMITS_PER_TICK,
    DEFAULT_SENSOR_INTERVAL_SECONDS,
    DEFAULT_SPARK_POOL,
    DEFAULT_VACUUM_MIN_INTERVAL_HOURS,
    AdvisorPolicy,
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
)

NAME_PATTERN = TABLE_NAME.pattern  # table names, discovered ones too, and env variables
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


def short_retention_error(retention_hours: float | None, floor_hours: float, *, opted_in: bool,
                          whose: str) -> str | None:
    """Why a vacuum retention below ``floor_hours`` is refused without ``allow_short_retention: true``."""
    if retention_hours is None or retention_hours >= floor_hours or opted_in:
        return None
    return (f"retention_hours {retention_hours:g} is below {whose} deleted-file retention "
                       f"({floor_hours:g} hours): files still needed by readers of recent versions or by "
                       "running writers could be deleted. Raise it, or add allow_short_retention: true "
            "if nothing else reads or writes the table")


def _window(value: str) -> str:
    try:
        MaintenanceWindow.parse(value)
    except ConfigError as exc:
        raise _invalid(str(exc)) from None
    return value.strip()


def _asset_key(value: str) -> str:
    if not _ASSET_KEY.match(value):
        raise _invalid(f"must be an asset key like 'team/report' (one of the asset keys), got {value!r}")
    return value


Size = Annotated[int, PlainValidator(_size, json_schema_input_type=int | str)]
Hours = Annotated[float, PlainValidator(_hours, json_schema_input_type=float | str)]
Cron = Annotated[str, AfterValidator(_cron)]
Window = Annotated[str, AfterValidator(_window), Field(pattern=r"^\s*[0-9]{2}:[0-9]{2}-[0-9]{2}:[0-9]{2}\s*$")]
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


# --- operation sections: generated from the registry ------------------------------------------
#
# One section per registry entry with a policy_key: ``enabled``, the code location's scheduling
# keys (``cron``; ``interval`` for checkpoints) and one field per described option of the entry's
# options record (``delta_core.maintenance.option_fields``), each parsed by the registry's own
# parser, the one the command line uses: both readers accept and refuse the same values.

_JSON_INPUT: dict[Kind, Any] = {
    Kind.SIZE: int | str, Kind.RATIO: float, Kind.HOURS: float | str, Kind.MINUTES: float | str, Kind.PREDICATE: str,
    Kind.COLUMNS: list[str], Kind.FLAG: bool, Kind.COUNT: int, Kind.TEXT: str,
}


def _option_annotation(f: OptionField) -> Any:
    """The pydantic type of one described option: the value as written, parsed by the registry."""
    if f.spec.kind is Kind.CHOICE:
        return Literal[f.spec.choices]  # type: ignore[valid-type]

    def parse(value: Any) -> Any:
        try:
            return parse_option(f, value, where=None)
        except ConfigError as exc:
            raise _invalid(str(exc)) from None

    bounds = {k: v for k, v in (("minimum", f.spec.minimum), ("maximum", f.spec.maximum)) if v is not None}
    if f.spec.kind is Kind.COLUMNS:
        bounds = {"maxItems": bounds["maximum"]} if "maximum" in bounds else {}
    return Annotated[Any, PlainValidator(parse, json_schema_input_type=_JSON_INPUT[f.spec.kind]),
                     WithJsonSchema({**_schema_of(_JSON_INPUT[f.spec.kind]), **bounds})]


def _schema_of(python_type: Any) -> dict[str, Any]:
    return TypeAdapter(python_type).json_schema()


class _Section(_Model):
    """An operation's section; ``_op`` names its registry entry."""

    _op: ClassVar[str]
    enabled: bool = True

    @model_validator(mode="after")
    def _checks(self) -> _Section:
        op = operation(self._op)
        for f in policy_fields(op.options_type):
            if f.spec.required and self.enabled and not getattr(self, f.policy_key):
                raise _invalid(f"{op.name} is enabled but names no {f.policy_key}")
        return self

    def to_policy(self) -> Any:
        op = operation(self._op)
        options = op.options_type(**{f.name: getattr(self, f.policy_key) for f in policy_fields(op.options_type)
                                     if getattr(self, f.policy_key) is not None or f.default is None})
        extras = {k: getattr(self, k) for k in ("cron", "interval") if k in type(self).model_fields}
        return OperationPolicy(enabled=self.enabled, options=options, **extras)


def _short_retention_needs_opt_in(cls: type, hours: float | None, info: ValidationInfo) -> float | None:
    # The table's own retention is checked at definitions load (resources.table_checks); the
    # file alone can already refuse one below the protocol's default.
    error = short_retention_error(hours, DEFAULT_DELETED_FILE_RETENTION.total_seconds() / 3600.0,
                                  opted_in=info.data.get("allow_short_retention", False), whose="the default")
    if error is not None:
        raise _invalid(error)
    return hours


# Rules across an operation's fields, checked where the file names the field.
_FIELD_CHECKS: dict[str, dict[str, Any]] = {
    "vacuum": {"_short_retention": field_validator("retention_hours")(_short_retention_needs_opt_in)},
}


def _section_model(op: Operation) -> type[_Section]:
    """The tables.yaml section model of registry entry ``op``."""
    fields: dict[str, Any] = {}
    if op.scheduled:
        fields["cron"] = (Cron | None, Field(default=op.default_cron, description="Schedule (UTC)" + (
            "." if op.default_cron else "; none unless given.")))
    if op is CHECKPOINT:  # the log sensor requests a checkpoint after this many versions
        fields["interval"] = (int, Field(default=DEFAULT_CHECKPOINT_INTERVAL, gt=0, description=(
            "Request a checkpoint when this many versions landed since the last one.")))
    for f in policy_fields(op.options_type):
        annotation = _option_annotation(f)
        fields[f.policy_key] = (annotation if f.default is not None else annotation | None,
                                Field(default=f.default, description=f.spec.help))
    name = "".join(part.title() for part in op.name.split("_")) + "Section"
    model: type[_Section] = create_model(name, __base__=_Section, __doc__=f"{op.summary[:1].upper()}{op.summary[1:]}.",
                                         __validators__=_FIELD_CHECKS.get(op.name), **fields)
    model._op = op.name
    return model


SECTIONS: dict[str, type[_Section]] = {op.name: _section_model(op) for op in REGISTRY if op.policy_key}


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
    stats_coverage_floor: Ratio = Field(default=_HEALTH_DEFAULTS.stats_coverage_floor,
                                        description="Analyze when fewer than this share of files have stats "
                                                    "covering the indexed columns.")
    vacuum_min_interval_hours: Hours = Field(default=DEFAULT_VACUUM_MIN_INTERVAL_HOURS,
                                             description="Vacuum at most this often (default daily).")
    windows: list[Window] = Field(default_factory=list, description=(
        "Daily spans (UTC, 'HH:MM-HH:MM', wrapping past midnight when the end is earlier) in which "
        "automation may start this table's maintenance; none: any time."))

    def to_policy(self, *, target_size: int | None, min_file_size: int | None,
                  checkpoint_interval: int | None) -> AdvisorPolicy:
        """The record; ``checkpoint_interval`` None: the table's delta.checkpointInterval."""
        health = table_health_policy({k: getattr(self, k) for k in ADVISOR_THRESHOLDS}, target_size=target_size,
                                     min_file_size=min_file_size, checkpoint_interval=checkpoint_interval)
        return AdvisorPolicy(mode=self.mode, interval_seconds=self.interval_seconds,
                             cooldown_minutes=self.cooldown_minutes,
                             vacuum_min_interval_hours=self.vacuum_min_interval_hours, health=health,
                             windows=tuple(MaintenanceWindow.parse(w) for w in self.windows))


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


def _section_field(op: Operation) -> tuple[Any, Any]:
    """A table's field for ``op``'s section: present by default when the operation is on by default."""
    section = SECTIONS[op.name]
    given = Annotated[section, BeforeValidator(_section, json_schema_input_type=bool | section)]  # type: ignore[valid-type]
    return (given, Field(default_factory=section)) if op.on_by_default else (given | None, None)


_SECTION_FIELDS: dict[str, Any] = {op.policy_key: _section_field(op) for op in REGISTRY if op.policy_key}
_TableBase: type[_Model] = create_model("_TableBase", __base__=_Model, **_SECTION_FIELDS)


class TablePolicySection(_TableBase):  # type: ignore[misc,valid-type]
    """A table's policy: one section per registry entry (generated: ``SECTIONS``), plus the code
    location's own keys. A discover entry's ``defaults``; a table adds its ``uri``."""

    description: NonEmpty | None = None
    storage_options: dict[str, OptionNode] = Field(
        default_factory=dict, description="fsspec options; nested mappings allowed; secrets as {env: NAME}.")
    sensor: OnOff[SensorSection] = Field(default_factory=SensorSection)
    downstream: DownstreamSection = Field(default_factory=DownstreamSection)
    advisor: AdvisorSection = Field(default_factory=AdvisorSection)


class TableSection(TablePolicySection):
    """One managed Delta table; its name is the Dagster group name."""

    uri: StrOrEnv = Field(description="Table root: a local path (relative to this file) or an fsspec URI.")


class DiscoverSection(_Model):
    """Every Delta table under ``root`` (a directory holding ``_delta_log/``) becomes a table named
    by its path relative to the root, ``/`` written ``__`` (``area0/orders`` -> ``area0__orders``).
    Explicit ``tables:`` entries of the same name or location win (``delta_core.log.discovery``)."""

    root: NonEmpty = Field(description="A local path (relative to this file) or an fsspec URI like s3://bucket/lake.")
    include: list[NonEmpty] = Field(default_factory=list, description=(
        "fnmatch globs over the relative path ('*' also matches '/'); none: every table."))
    exclude: list[NonEmpty] = Field(default_factory=list, description=(
        "fnmatch globs over the relative path; a matching table or directory is skipped with all below it."))
    defaults: TablePolicySection = Field(default_factory=TablePolicySection, description=(
        "The policy of every discovered table: a table entry without uri (storage_options also walk the root)."))


class SparkSection(_Model):
    master: StrOrEnv | None = Field(default=None, description="Default: $SPARK_MASTER, else local[*].")
    app_name: NonEmpty = "delta-maintenance"
    conf: dict[str, str | int | float | bool | Env] = Field(default_factory=dict)
    pool: NonEmpty = Field(default=DEFAULT_SPARK_POOL, description=(
        "Dagster concurrency pool of every Spark step; its limit (instance dagster.yaml "
        "`concurrency: pools:` or `dagster instance concurrency set`) bounds the Spark steps running at once."))


class FleetSection(_Model):
    """Limits across all tables, for the fleet advisor (``fleet.budget``): it requests the runs
    that pay off most per byte rewritten first, until a limit is reached."""

    max_concurrent_runs: int | None = Field(default=None, gt=0, description=(
        "Maintenance runs in progress (queued or running) at once, across tables; none: no limit."))
    max_bytes_per_hour: Size | None = Field(default=None, description=(
        "Bytes rewritten by maintenance in any 60 minutes, across tables; none: no limit."))
    max_bytes_per_day: Size | None = Field(default=None, description=(
        "Bytes rewritten by maintenance in any 24 hours, across tables; none: no limit."))
    windows: list[Window] = Field(default_factory=list, description=(
        "UTC time spans ('22:00-06:00') in which advised runs may start; none: at any time."))
    report_cron: Cron = Field(default=DEFAULT_FLEET_REPORT_CRON,
                              description="Schedule (UTC) of the fleet report (fleet_report_schedule).")

    def to_policy(self) -> FleetPolicy:
        windows = tuple(MaintenanceWindow.parse(w) for w in self.windows)
        return FleetPolicy(max_concurrent_runs=self.max_concurrent_runs, max_bytes_per_hour=self.max_bytes_per_hour,
                           max_bytes_per_day=self.max_bytes_per_day, windows=windows, report_cron=self.report_cron)


TableName = Annotated[str, Field(pattern=NAME_PATTERN)]


class TablesFile(_Model):
    """tables.yaml: the Delta tables under management and their maintenance policy."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True,
                              title="Delta maintenance tables (tables.yaml)")

    spark: SparkSection = Field(default_factory=SparkSection)
    fleet: FleetSection = Field(default_factory=FleetSection)
    discover: list[DiscoverSection] = Field(
        default_factory=list, description="Roots whose Delta tables are all managed, each with a default policy.")
    tables: dict[TableName, TableSection] = Field(
        default_factory=dict,
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


def table_record(name: str, t: TablePolicySection, uri: str | EnvRef) -> TableConfig:
    """The frozen record of one validated table policy, for the table at ``uri`` (resolved)."""
    options: list[tuple[str, OptionValue]] = []
    try:
        _flatten(t.storage_options, "", options)
    except OptionError as exc:
        raise OptionError(exc.field, str(exc), table=name) from None
    summary = t.downstream.daily_summary
    policies = {op.name: (section.to_policy() if (section := getattr(t, op.policy_key)) is not None
                          else OperationPolicy.default(op)) for op in REGISTRY if op.policy_key}
    return TableConfig(
        name=name, uri=uri, storage_options=tuple(options), description=t.description, policies=policies,
        sensor=SensorPolicy(enabled=t.sensor.enabled, interval_seconds=t.sensor.interval_seconds,
                            max_commits_per_tick=t.sensor.max_commits_per_tick),
        downstream=DownstreamPolicy(
            daily_summary=DailySummary(summary.date_column) if summary is not None else None,
            assets=tuple(t.downstream.assets)),
        # An interval written in tables.yaml wins; else the advisor follows delta.checkpointInterval.
        advisor=t.advisor.to_policy(
            target_size=t.compact.target_size, min_file_size=t.compact.min_file_size,
            checkpoint_interval=t.checkpoint.interval if "interval" in t.checkpoint.model_fields_set else None),
    )


def _table_uri(t: TableSection, base_dir: pathlib.Path | None) -> str | EnvRef:
    return t.uri.ref() if isinstance(t.uri, Env) else resolve_table_uri(t.uri, base_dir)


def discovered_records(doc: TablesFile, explicit: Sequence[TableConfig], *,
                       base_dir: pathlib.Path | None) -> list[TableConfig]:
    """The records of the tables ``doc.discover`` finds (``delta_core.log.discovery``), each
    with its rule's ``defaults``; an explicit table of the same name or location wins. The walk
    uses the defaults' storage options, ``{env: NAME}`` read now (``ConfigError`` if unset)."""
    rules = [DiscoverRule(root=resolve_table_uri(d.root, base_dir), include=tuple(d.include),
                          exclude=tuple(d.exclude),
                          storage_options=resolve_env(d.defaults.model_dump(mode="python")["storage_options"],
                                                      f"discover[{i}].defaults.storage_options") or None)
             for i, d in enumerate(doc.discover)]
    # One record per rule, renamed per table: 2,000 tables must not validate 2,000 policies.
    templates = [table_record("discovered", d.defaults, "") for d in doc.discover]
    explicit_uris = {t.name: t.uri if isinstance(t.uri, str) else None for t in explicit}
    return [dataclasses.replace(templates[i], name=found.name, uri=found.uri, discovered_under=found.root)
            for i, found in discover_all(rules, explicit_uris)]


def spark_record(s: SparkSection) -> SparkSettings:
    def conf_value(v: str | int | float | bool | Env) -> str | EnvRef:
        if isinstance(v, Env):
            return v.ref()
        return str(v).lower() if isinstance(v, bool) else str(v)

    master = s.master.ref() if isinstance(s.master, Env) else s.master
    return SparkSettings(master=master, app_name=s.app_name,
                         conf=tuple((k, conf_value(v)) for k, v in s.conf.items()), pool=s.pool)


def to_config(doc: TablesFile, *, source: str | None, base_dir: pathlib.Path | None) -> MaintenanceConfig:
    """``MaintenanceConfig`` of a validated file (``OptionError`` for a malformed storage option);
    the tables under each ``discover`` root are found now (``discovered_records``)."""
    explicit = [table_record(name, t, _table_uri(t, base_dir)) for name, t in doc.tables.items()]
    return MaintenanceConfig(tables=(*explicit, *discovered_records(doc, explicit, base_dir=base_dir)),
                             spark=spark_record(doc.spark), fleet=doc.fleet.to_policy(), source=source)
