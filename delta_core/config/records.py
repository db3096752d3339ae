"""The frozen records ``tables.yaml`` becomes (``delta_core.config.reader`` builds them).

The command line and the Dagster code location read these, never the raw YAML. An operation's
policy (``OperationPolicy``) holds when it runs (``enabled``, ``cron``) and its options record
(``delta_core.maintenance.options``); ``TableConfig.policies`` holds one per registry entry with
a section of its own, by the entry's name, and ``TableConfig.options`` reads one typed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.maintenance.history_records import HistoryLocation
from delta_core.maintenance.operations import OPERATIONS, REGISTRY, VACUUM, Operation, operation
from delta_core.model.table_properties import DEFAULT_CHECKPOINT_INTERVAL

if TYPE_CHECKING:
    from delta_core.log.discovery import DiscoverRule

_Options = TypeVar("_Options")
DEFAULT_SENSOR_INTERVAL_SECONDS = 30
DEFAULT_MAX_COMMITS_PER_TICK = 1000
DEFAULT_ADVISOR_INTERVAL_SECONDS = 300
DEFAULT_ADVISOR_COOLDOWN_MINUTES = 60.0
DEFAULT_VACUUM_MIN_INTERVAL_HOURS = 24.0  # vacuum at most daily
DEFAULT_FLEET_REPORT_CRON = "0 * * * *"  # the fleet report, hourly
DEFAULT_SPARK_POOL = "delta_spark"  # the Dagster concurrency pool of every Spark step
# tables.yaml ``fleet.discovered_as``: each discovered table its own assets, or one partition of the fleet's
DISCOVERED_AS_ASSETS, DISCOVERED_AS_PARTITIONS = "assets", "partitions"
DISCOVERED_SHAPES = (DISCOVERED_AS_ASSETS, DISCOVERED_AS_PARTITIONS)
_WINDOW = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])$")


class TableConfigError(ConfigError):
    """The table config file is invalid; ``table`` and ``field`` say where."""

    def __init__(self, message: str, *, path: str | None = None, table: str | None = None,
                 field: str | None = None) -> None:
        where = " ".join(p for p in (
            f"{path}:" if path else "",
            f"table {table!r}:" if table else "",
            f"field {field!r}:" if field else "",
        ) if p)
        super().__init__(" ".join(f"{where} {message}".split()), path=path)  # one line, whatever the cause
        self.table = table
        self.field = field


@dataclass(frozen=True, slots=True)
class EnvRef:
    """A value read from an environment variable at run time (``{env: NAME}`` in YAML)."""

    name: str


Scalar = str | int | float | bool
OptionValue = Scalar | EnvRef


def nested_options(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Storage options with dotted keys (``client_kwargs.endpoint_url``) as fsspec's nested mapping."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


@dataclass(frozen=True, slots=True)
class OperationPolicy:
    """One registry operation's policy, from its tables.yaml section: on or off, its options
    record (the entry's ``options_type``), its schedule (``cron``; scheduled entries only) and,
    for checkpoints, the ``interval`` of versions after which the log sensor requests one."""

    enabled: bool
    options: Any
    cron: str | None = None
    interval: int = DEFAULT_CHECKPOINT_INTERVAL

    @classmethod
    def default(cls, op: Operation) -> OperationPolicy:
        """The policy of a table whose tables.yaml has no section for ``op``."""
        return cls(enabled=op.on_by_default, options=op.options_type(), cron=op.default_cron)


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
class MaintenanceWindow:
    """A daily time span (UTC) in which automated maintenance may start: ``22:00-06:00``.
    A span whose end is not after its start wraps past midnight."""

    start_minute: int  # minutes after 00:00 UTC
    end_minute: int

    @classmethod
    def parse(cls, text: str) -> MaintenanceWindow:
        match = _WINDOW.match(text.strip())
        if match is None:
            raise ConfigError(f"a maintenance window must look like '22:00-06:00' (HH:MM-HH:MM, UTC, 24-hour), got {text!r}")
        start_h, start_m, end_h, end_m = (int(g) for g in match.groups())
        return cls(start_minute=start_h * 60 + start_m, end_minute=end_h * 60 + end_m)

    def __post_init__(self) -> None:
        for m in (self.start_minute, self.end_minute):
            if not 0 <= m < 24 * 60:
                raise ConfigError(f"a maintenance window's times are minutes of a day (0-1439), got {m}")
        if self.start_minute == self.end_minute:
            raise ConfigError(f"maintenance window {self} is empty: it starts and ends at the same time; "
                              "leave out windows to allow maintenance at any time")

    def contains(self, minute_of_day: int) -> bool:
        if self.start_minute < self.end_minute:
            return self.start_minute <= minute_of_day < self.end_minute
        return minute_of_day >= self.start_minute or minute_of_day < self.end_minute

    def __str__(self) -> str:
        return "-".join(f"{m // 60:02d}:{m % 60:02d}" for m in (self.start_minute, self.end_minute))


@dataclass(frozen=True, slots=True)
class AdvisorPolicy:
    """When maintenance is requested by health: ``health`` holds the thresholds
    (``delta_core.health``'s own policy record), the rest its pacing; ``windows`` (empty: any
    time) bound when automation may start a run."""

    mode: str = "schedule"  # "auto": the advisor sensor requests the runs that pay off
    interval_seconds: int = DEFAULT_ADVISOR_INTERVAL_SECONDS
    cooldown_minutes: float = DEFAULT_ADVISOR_COOLDOWN_MINUTES
    vacuum_min_interval_hours: float = DEFAULT_VACUUM_MIN_INTERVAL_HOURS
    health: HealthPolicy = HealthPolicy()
    windows: tuple[MaintenanceWindow, ...] = ()

    @property
    def auto(self) -> bool:
        return self.mode == "auto"

    def cooldown_minutes_for(self, operation: str) -> float:
        """Minutes after a run of ``operation`` before the next; vacuum's is at least
        ``vacuum_min_interval_hours``."""
        if operation == VACUUM.name:
            return max(self.cooldown_minutes, self.vacuum_min_interval_hours * 60.0)
        return self.cooldown_minutes


@dataclass(frozen=True, slots=True)
class TableConfig:
    """One table of tables.yaml. Each registry operation with a section of its own has its policy
    in ``policies[name]`` (its default when the file has no section for it)."""

    name: str
    uri: str | EnvRef
    storage_options: tuple[tuple[str, OptionValue], ...] = ()  # dotted keys for nesting
    description: str | None = None
    policies: Mapping[str, OperationPolicy] = field(default_factory=dict, hash=False)
    sensor: SensorPolicy = field(default_factory=SensorPolicy)
    downstream: DownstreamPolicy = field(default_factory=DownstreamPolicy)
    advisor: AdvisorPolicy = field(default_factory=AdvisorPolicy)
    discovered_under: str | None = None  # the discover root it was found under; None: listed under tables:

    def __post_init__(self) -> None:
        """Every entry with a section of its own has a policy: its default when none was given."""
        given = dict(self.policies)
        object.__setattr__(self, "policies", {op.name: given.get(op.name) or OperationPolicy.default(op)
                                              for op in REGISTRY if op.configured_in is None})

    def policy(self, name: str) -> OperationPolicy | None:
        """The policy of registry operation ``name``; None for an entry configured inside
        another's section (cleanup_log: ``checkpoint.cleanup_log``)."""
        return self.policies.get(operation(name).name)  # KeyError naming the known operations

    def options(self, options_type: type[_Options]) -> _Options:
        """The options record of type ``options_type`` (``table.options(ZOrderOptions).columns``)."""
        for op in REGISTRY:
            if op.options_type is options_type and op.configured_in is None:
                found: _Options = self.policies[op.name].options
                return found
        raise KeyError(f"{options_type.__name__} is no operation's section in tables.yaml")

    def enabled(self, name: str) -> bool:
        """Whether registry operation ``name`` is on for this table."""
        policy = self.policy(name)
        return policy is not None and policy.enabled

    @property
    def operations(self) -> tuple[str, ...]:
        """Enabled maintenance operations (registry names), in the order a full run does them."""
        return tuple(op.name for op in OPERATIONS if self.enabled(op.name))


@dataclass(frozen=True, slots=True)
class FleetPolicy:
    """The limits across all tables (tables.yaml ``fleet``; ``fleet.budget`` applies them). None:
    no limit; no windows: maintenance at any time."""

    max_concurrent_runs: int | None = None
    max_bytes_per_hour: int | None = None  # bytes rewritten in the last 60 minutes
    max_bytes_per_day: int | None = None  # ... in the last 24 hours
    windows: tuple[MaintenanceWindow, ...] = ()  # UTC
    report_cron: str = DEFAULT_FLEET_REPORT_CRON
    discovered_as: str = DISCOVERED_AS_PARTITIONS  # DISCOVERED_SHAPES

    @property
    def partitioned(self) -> bool:
        """Whether discovered tables are partitions of the fleet assets (``fleet.discovered_as``)."""
        return self.discovered_as == DISCOVERED_AS_PARTITIONS


@dataclass(frozen=True, slots=True)
class SparkSettings:
    master: str | EnvRef | None = None  # None: $SPARK_MASTER or local[*]
    app_name: str = "delta-maintenance"
    conf: tuple[tuple[str, str | EnvRef], ...] = ()
    pool: str = DEFAULT_SPARK_POOL  # Dagster concurrency pool of the Spark steps


@dataclass(frozen=True, slots=True)
class HistoryConfig:
    """Where the maintenance history table lives (tables.yaml ``history``), as written."""

    uri: str | EnvRef
    storage_options: tuple[tuple[str, OptionValue], ...] = ()  # dotted keys for nesting

    def location(self) -> HistoryLocation:
        """The table's location with every ``{env: NAME}`` read from the environment now."""
        storage = {k: env_value(v, f"tables.yaml history.storage_options.{k}") for k, v in self.storage_options}
        return HistoryLocation(env_value(self.uri, "tables.yaml history.uri"), nested_options(storage))


def env_value(value: object, where: str) -> Any:
    """``value``, or the environment variable an ``EnvRef`` names, read now (``where``: its place
    in the file, for the message when it is not set)."""
    if not isinstance(value, EnvRef):
        return value
    if value.name not in os.environ:
        raise ConfigError(f"{where} reads the environment variable {value.name!r}, which is not set; "
                          "set it, or give the value on the command line")
    return os.environ[value.name]


@dataclass(frozen=True, slots=True)
class DiscoverRoot:
    """One ``discover:`` entry as read: where to walk (``rule``) and the policy every table found
    there takes (``template``: its ``defaults``, renamed per table), so a table found after the
    file was read gets the same record."""

    rule: DiscoverRule
    template: TableConfig

    def table(self, name: str, uri: str) -> TableConfig:
        """The record of the table ``name`` found at ``uri`` under this root."""
        return dataclasses.replace(self.template, name=name, uri=uri, discovered_under=self.rule.root)


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    tables: tuple[TableConfig, ...]
    spark: SparkSettings = field(default_factory=SparkSettings)
    fleet: FleetPolicy = field(default_factory=FleetPolicy)
    source: str | None = None
    history: HistoryConfig | None = None  # None: runs are not recorded
    discover: tuple[DiscoverRoot, ...] = ()  # the discover: entries, in the file's order

    def table(self, name: str) -> TableConfig:
        for t in self.tables:
            if t.name == name:
                return t
        raise TableConfigError("no such table in the config", path=self.source, table=name)
