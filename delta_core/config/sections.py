"""What tables.yaml may hold, section by section, described with ``delta_core.config.shape``.

Each registry operation with a section of its own (``Operation.configured_in`` None) gets one
named after it, built from its options record's described fields
(``delta_core.maintenance.option_fields``): one key per field written in tables.yaml, read by
``parse_option``, the parser of the command line and the Dagster launch config; plus
``enabled`` and ``cron`` for scheduled operations (the checkpoint's ``interval`` is an option). The other
sections (storage options, sensor, advisor, downstream, discover, spark, fleet) are described
here. ``TABLES_FILE`` is the whole file; ``tables.schema.json`` is its ``schema()``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from delta_core.config.records import (
    DEFAULT_ADVISOR_COOLDOWN_MINUTES,
    DEFAULT_ADVISOR_INTERVAL_SECONDS,
    DEFAULT_FLEET_REPORT_CRON,
    DEFAULT_MAX_COMMITS_PER_TICK,
    DEFAULT_SENSOR_INTERVAL_SECONDS,
    DEFAULT_SPARK_POOL,
    DEFAULT_VACUUM_MIN_INTERVAL_HOURS,
    DISCOVERED_AS_PARTITIONS,
    DISCOVERED_SHAPES,
    EnvRef,
    MaintenanceWindow,
    OptionValue,
)
from delta_core.config.shape import (
    NAME_PATTERN,
    Either,
    Env,
    Flag,
    Invalid,
    Key,
    Keys,
    ListOf,
    MapOf,
    Number,
    OneOf,
    Parsed,
    Schema,
    Section,
    Text,
    Value,
    Whole,
)
from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.maintenance.operations import REGISTRY, Operation
from delta_core.maintenance.option_fields import MAX_RETENTION_HOURS, Kind, OptionField, parse_option, policy_fields
from delta_core.maintenance.policy_values import parse_retention_hours
from delta_core.model.sizes import parse_size

_CRON_FIELD = re.compile(r"^(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*$")
_CRON_ALIASES = ("@hourly", "@daily", "@weekly", "@monthly")
_ASSET_KEY = r"^[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*$"
_NUMBER_OR_TEXT: Schema = {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "minLength": 1}]}


def is_valid_cron(expr: str) -> bool:
    """Five-field cron (minute hour day month weekday) or @hourly/@daily/@weekly/@monthly."""
    expr = expr.strip()
    fields = expr.split()
    return expr in _CRON_ALIASES or (len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields))


def _cron(value: object) -> str:
    if not isinstance(value, str) or not is_valid_cron(value):
        raise ConfigError(f"must be a 5-field cron string like '0 2 * * *' (or @hourly, @daily, @weekly, @monthly), "
                          f"got {value!r}")
    return value.strip()


def _window(value: object) -> MaintenanceWindow:
    if not isinstance(value, str):
        raise ConfigError(f"must be a time span like '22:00-06:00' (HH:MM-HH:MM, UTC), got {value!r}")
    return MaintenanceWindow.parse(value)


def _hours(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value < float("inf"):
        raise ConfigError(f"{value!r} hours is out of range: give a number of hours from 0, or an interval like "
                          "'7 days'")
    return parse_retention_hours(value, key="the value")


def _size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"must be a size like 134217728 or '128MB', got {value!r}")
    return parse_size(value)


CRON = Parsed(_cron, {"type": "string", "minLength": 1})
WINDOWS = ListOf(Parsed(_window, {"type": "string", "pattern": r"^\s*[0-9]{2}:[0-9]{2}-[0-9]{2}:[0-9]{2}\s*$"}))
SIZE = Parsed(_size, {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]})
HOURS = Parsed(_hours, _NUMBER_OR_TEXT)
RATIO = Number(0, 1)
TEXT_OR_ENV = Either((Text(), Env()), "a non-empty string or {env: VARIABLE_NAME}")


# --- operation sections: from the registry ----------------------------------------------------

_KIND_SCHEMA: dict[Kind, Schema] = {
    Kind.SIZE: SIZE.json, Kind.HOURS: _NUMBER_OR_TEXT, Kind.MINUTES: _NUMBER_OR_TEXT,
    Kind.PREDICATE: {"type": "string", "minLength": 1}, Kind.TEXT: {"type": "string", "minLength": 1},
    Kind.FLAG: {"type": "boolean"}, Kind.RATIO: {"type": "number", "minimum": 0, "maximum": 1},
}


def _option_schema(f: OptionField) -> Schema:
    spec = f.spec
    if spec.kind is Kind.CHOICE:
        return {"enum": list(spec.choices)}
    if spec.kind is Kind.COUNT:
        return {"type": "integer", **{k: v for k, v in (("minimum", spec.minimum), ("maximum", spec.maximum))
                                      if v is not None}}
    if spec.kind is Kind.COLUMNS:
        return {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": True,
                **({"maxItems": spec.maximum} if spec.maximum is not None else {})}
    if spec.kind is Kind.HOURS:
        return {"anyOf": [{"type": "number", "minimum": 0, "maximum": MAX_RETENTION_HOURS},
                          {"type": "string", "minLength": 1}]}
    return _KIND_SCHEMA[spec.kind]


def _option(f: OptionField) -> Value:
    return Parsed(lambda value: parse_option(f, value, where=None), _option_schema(f))


def operation_section(op: Operation) -> Section:
    """The tables.yaml section of registry entry ``op``."""
    keys: dict[str, Key] = {"enabled": Key(Flag(), True, "Run this operation (false: off).")}
    if op.scheduled:
        keys["cron"] = Key(CRON, op.default_cron, "Schedule (UTC)" + ("." if op.default_cron else
                                                                       "; none unless given."))
    for f in policy_fields(op.options_type):
        keys[f.policy_key] = Key(_option(f), None, f.help)
    name = "".join(part.title() for part in op.name.split("_")) + "Section"
    return Section(keys, help=f"{op.summary[:1].upper()}{op.summary[1:]}.", on_off=True, name=name)


OPERATION_SECTIONS: dict[str, Section] = {op.name: operation_section(op) for op in REGISTRY if op.configured_in is None}


# --- the rest of a table's policy -------------------------------------------------------------


class StorageOptions(Value):
    """fsspec options: values, nested mappings and ``{env: NAME}``, read flat with dotted keys."""

    _WHAT = "a string, number, boolean, mapping or {env: VARIABLE_NAME}"

    def read(self, value: object, keys: Keys) -> tuple[tuple[str, OptionValue], ...]:
        if not isinstance(value, Mapping):
            raise Invalid(keys, f"must be a mapping, got {value!r}")
        out: list[tuple[str, OptionValue]] = []
        self._flatten(value, keys, "", out)
        return tuple(out)

    def _flatten(self, node: Mapping[Any, Any], keys: Keys, prefix: str, out: list[tuple[str, OptionValue]]) -> None:
        for name, item in node.items():
            at, dotted = (*keys, str(name)), f"{prefix}.{name}" if prefix else str(name)
            if "." in str(name):
                raise Invalid(at, "option names must not contain '.'")
            if isinstance(item, Mapping) and "env" in item and len(item) == 1:
                out.append((dotted, Env().read(item, at)))
            elif isinstance(item, Mapping):
                self._flatten(item, at, dotted, out)
            elif isinstance(item, (bool, int, float, str)):
                out.append((dotted, item))
            else:
                raise Invalid(at, f"must be {self._WHAT}, got {item!r}")

    def schema(self) -> Schema:
        return {"type": "object", "additionalProperties": {"$ref": "#/$defs/StorageOption"}}


STORAGE_OPTION_SCHEMA: Schema = {"anyOf": [{"type": ["boolean", "integer", "number", "string"]}, Env().schema(),
                                           {"type": "object", "additionalProperties": {"$ref": "#/$defs/StorageOption"}}]}

class SparkConfValue(Value):
    """A Spark conf value: written as a string, number or boolean (``true`` -> ``"true"``), or
    ``{env: NAME}``."""

    def read(self, value: object, keys: Keys) -> str | EnvRef:
        if isinstance(value, Mapping) and "env" in value and len(value) == 1:
            return Env().read(value, keys)
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, (int, float, str)):
            return str(value)
        raise Invalid(keys, f"must be a string, number, boolean or {{env: VARIABLE_NAME}}, got {value!r}")

    def schema(self) -> Schema:
        return {"anyOf": [{"type": ["boolean", "integer", "number", "string"]}, Env().schema()]}


_HEALTH = HealthPolicy()
ADVISOR = Section({
    "mode": Key(OneOf(("schedule", "auto")), "schedule",
                "auto: the table's advisor sensor requests the runs whose thresholds are crossed."),
    "interval_seconds": Key(Whole(1), DEFAULT_ADVISOR_INTERVAL_SECONDS, "Seconds between the advisor's checks."),
    "cooldown_minutes": Key(Number(0), DEFAULT_ADVISOR_COOLDOWN_MINUTES,
                            "Minutes after an advised run of an operation before the next of the same operation."),
    "compact_small_file_ratio": Key(RATIO, _HEALTH.compact_small_file_ratio,
                                    "Compact when more than this share of files is small ..."),
    "compact_min_small_files": Key(Whole(0), _HEALTH.compact_min_small_files, "... or when more files than this are small."),
    "purge_deleted_rows_ratio": Key(RATIO, _HEALTH.purge_deleted_rows_ratio,
                                    "Purge when deletion vectors delete more than this share of rows."),
    "skip_ratio_floor": Key(RATIO, _HEALTH.skip_ratio_floor,
                            "Z-order/cluster when the point-query skip ratio on the configured columns is below this."),
    "vacuum_min_reclaimable_bytes": Key(SIZE, _HEALTH.vacuum_min_reclaimable_bytes,
                                        "Vacuum when at least this much is reclaimable."),
    "stats_coverage_floor": Key(RATIO, _HEALTH.stats_coverage_floor,
                                "Analyze when fewer than this share of files have stats covering the indexed columns."),
    "vacuum_min_interval_hours": Key(HOURS, DEFAULT_VACUUM_MIN_INTERVAL_HOURS, "Vacuum at most this often."),
    "windows": Key(WINDOWS, (), "Daily spans (UTC, 'HH:MM-HH:MM') in which automation may start this table's "
                                "maintenance; none: any time."),
}, help="Policy-driven maintenance (delta_core.health thresholds).", name="AdvisorSection")

SENSOR = Section({
    "enabled": Key(Flag(), True),
    "interval_seconds": Key(Whole(1), DEFAULT_SENSOR_INTERVAL_SECONDS),
    "max_commits_per_tick": Key(Whole(1), DEFAULT_MAX_COMMITS_PER_TICK),
}, help="The table's log sensor. On by default.", on_off=True, name="SensorSection")

DOWNSTREAM = Section({
    "daily_summary": Key(Section({"date_column": Key(Text(), required=True)})),
    "assets": Key(ListOf(Text(_ASSET_KEY, "an asset key like 'team/report' (one of the asset keys)")), (),
                  "Asset keys ('team/report') refreshed on dataChange commits."),
}, name="DownstreamSection")



def _filled(section: Section, help: str | None = None) -> Key:
    """A key holding ``section``, whose default is the section with every default."""
    return Key(section, section.read({}, ()), help)


POLICY_KEYS: dict[str, Key] = {  # absent operation sections stay None: the entry's defaults
    **{name: Key(section) for name, section in OPERATION_SECTIONS.items()},
    "description": Key(Text()),
    "storage_options": Key(StorageOptions(), (), "fsspec options; nested mappings allowed; secrets as {env: NAME}."),
    "sensor": _filled(SENSOR),
    "downstream": _filled(DOWNSTREAM),
    "advisor": _filled(ADVISOR),
}
TABLE = Section({"uri": Key(TEXT_OR_ENV, required=True,
                            help="Table root: a local path (relative to this file) or an fsspec URI."),
                 **POLICY_KEYS}, help="One managed Delta table; its name is the Dagster group name.")
DISCOVER = Section({
    "root": Key(Text(), required=True, help="A local path (relative to this file) or an fsspec URI."),
    "include": Key(ListOf(Text()), (), "fnmatch globs over the relative path ('*' also matches '/'); none: all."),
    "exclude": Key(ListOf(Text()), (), "fnmatch globs over the relative path; a match is skipped with all below it."),
    "defaults": _filled(Section(POLICY_KEYS), "The policy of every discovered table (a table entry without uri)."),
}, help="Every Delta table under root becomes a table named by its path under it, '/' written '__'.")

SPARK = Section({
    "master": Key(TEXT_OR_ENV, help="Default: $SPARK_MASTER, else local[*]."),
    "app_name": Key(Text(), "delta-maintenance"),
    "conf": Key(MapOf(SparkConfValue()), {}),
    "pool": Key(Text(), DEFAULT_SPARK_POOL, "Dagster concurrency pool of every Spark step."),
})

FLEET = Section({
    "max_concurrent_runs": Key(Whole(1), help="Maintenance runs in progress at once, across tables; none: no limit."),
    "max_bytes_per_hour": Key(SIZE, help="Bytes rewritten by maintenance in any 60 minutes; none: no limit."),
    "max_bytes_per_day": Key(SIZE, help="Bytes rewritten by maintenance in any 24 hours; none: no limit."),
    "windows": Key(WINDOWS, (), "UTC time spans ('22:00-06:00') in which advised runs may start; none: any time."),
    "report_cron": Key(CRON, DEFAULT_FLEET_REPORT_CRON, "Schedule (UTC) of the fleet report."),
    "discovered_as": Key(OneOf(DISCOVERED_SHAPES), DISCOVERED_AS_PARTITIONS,
                         "How discovered tables appear in Dagster: 'partitions' (one partition each of a handful of "
                         "fleet assets: the definitions do not grow with the tables) or 'assets' (each its own "
                         "assets, jobs, schedules, sensor; up to a few thousand tables); docs/fleet.md."),
}, help="Limits across all tables, for the fleet advisor.")

HISTORY = Section({
    "uri": Key(TEXT_OR_ENV, required=True,
               help="The history table's root: a local path (relative to this file) or an fsspec URI."),
    "storage_options": Key(StorageOptions(), (), "fsspec options; nested mappings allowed; secrets as {env: NAME}."),
}, help="The maintenance history: a Delta table with one row per maintenance run; none: runs are not recorded.",
    name="HistorySection")

TABLE_NAME_ERROR = ("table names must be letters, digits and underscores, not starting with a digit "
                    "(they become Dagster group names)")
TABLES_FILE = Section({
    "spark": _filled(SPARK),
    "fleet": _filled(FLEET),
    "history": Key(HISTORY),
    "discover": Key(ListOf(DISCOVER), (), "Roots whose Delta tables are all managed, each with a default policy."),
    "tables": Key(MapOf(TABLE, Text(NAME_PATTERN), TABLE_NAME_ERROR), {},
                  "Table name (letters, digits, _; the Dagster group name) to its settings."),
}, help="The Delta tables under management and their maintenance policy.",
    title="Delta maintenance tables (tables.yaml)")
