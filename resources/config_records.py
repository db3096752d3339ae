"""The frozen records a validated ``tables.yaml`` becomes (``resources.config_models`` builds them).

Everything downstream of the loader (resources, asset, job, schedule and sensor factories)
reads these and never the raw YAML. An operation's policy holds when it runs (``enabled``,
``cron``) and its options, delta_core's own option record for that registry entry
(``delta_core.maintenance.options``); ``TableConfig`` names each policy by the entry's
``policy_key``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.maintenance.operations import OPERATIONS, operation
from delta_core.maintenance.options import (
    AnalyzeOptions,
    CheckpointOptions,
    ClusterOptions,
    CompactLogOptions,
    CompactOptions,
    ManifestOptions,
    PurgeOptions,
    RestoreOptions,
    VacuumOptions,
    ZOrderOptions,
)
from delta_core.model.table_properties import DEFAULT_CHECKPOINT_INTERVAL

DEFAULT_COMPACT_CRON = "0 2 * * *"  # daily 02:00
DEFAULT_VACUUM_CRON = "0 3 * * 0"  # weekly, Sunday 03:00
DEFAULT_SENSOR_INTERVAL_SECONDS = 30
DEFAULT_MAX_COMMITS_PER_TICK = 1000
DEFAULT_ADVISOR_INTERVAL_SECONDS = 300
DEFAULT_ADVISOR_COOLDOWN_MINUTES = 60.0
DEFAULT_VACUUM_MIN_INTERVAL_HOURS = 24.0  # the "vacuum at most daily"


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


@dataclass(frozen=True, slots=True)
class EnvRef:
    """A value read from an environment variable at run time (``{env: NAME}`` in YAML)."""

    name: str


Scalar = str | int | float | bool
OptionValue = Scalar | EnvRef


@dataclass(frozen=True, slots=True)
class CompactPolicy:
    enabled: bool = True
    cron: str = DEFAULT_COMPACT_CRON
    options: CompactOptions = CompactOptions()


@dataclass(frozen=True, slots=True)
class ZOrderPolicy:
    enabled: bool = False
    cron: str | None = None  # no schedule unless given
    options: ZOrderOptions = ZOrderOptions()


@dataclass(frozen=True, slots=True)
class VacuumPolicy:
    enabled: bool = True
    cron: str = DEFAULT_VACUUM_CRON
    options: VacuumOptions = VacuumOptions()


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    enabled: bool = True
    interval: int = DEFAULT_CHECKPOINT_INTERVAL  # the sensor requests one after this many versions
    options: CheckpointOptions = CheckpointOptions()


@dataclass(frozen=True, slots=True)
class ManifestPolicy:
    enabled: bool = False
    options: ManifestOptions = ManifestOptions()


@dataclass(frozen=True, slots=True)
class CompactLogPolicy:
    enabled: bool = False
    options: CompactLogOptions = CompactLogOptions()


@dataclass(frozen=True, slots=True)
class PurgePolicy:
    enabled: bool = False
    cron: str | None = None  # no schedule unless given
    options: PurgeOptions = PurgeOptions()


@dataclass(frozen=True, slots=True)
class AnalyzePolicy:
    enabled: bool = False
    cron: str | None = None  # no schedule unless given
    options: AnalyzeOptions = AnalyzeOptions()


@dataclass(frozen=True, slots=True)
class RestorePolicy:
    enabled: bool = False  # a <table>_restore job, launched by hand with a version or timestamp
    options: RestoreOptions = RestoreOptions()


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
class ClusterPolicy:
    enabled: bool = False
    cron: str | None = None  # no schedule unless given
    options: ClusterOptions = ClusterOptions()


@dataclass(frozen=True, slots=True)
class AdvisorPolicy:
    """When the advisor sensor requests maintenance: ``health`` holds the thresholds
    (``delta_core.health``'s own policy record), the rest its pacing."""

    mode: str = "schedule"  # "auto": the advisor sensor requests the runs that pay off
    interval_seconds: int = DEFAULT_ADVISOR_INTERVAL_SECONDS
    cooldown_minutes: float = DEFAULT_ADVISOR_COOLDOWN_MINUTES
    vacuum_min_interval_hours: float = DEFAULT_VACUUM_MIN_INTERVAL_HOURS
    health: HealthPolicy = HealthPolicy()

    @property
    def auto(self) -> bool:
        return self.mode == "auto"


Policy = CompactPolicy | ZOrderPolicy | VacuumPolicy | CheckpointPolicy | ManifestPolicy | ClusterPolicy | \
    CompactLogPolicy | PurgePolicy | RestorePolicy | AnalyzePolicy


@dataclass(frozen=True, slots=True)
class TableConfig:
    name: str
    uri: str | EnvRef
    storage_options: tuple[tuple[str, OptionValue], ...] = ()  # dotted keys for nesting
    description: str | None = None
    compact: CompactPolicy = field(default_factory=CompactPolicy)
    zorder: ZOrderPolicy = field(default_factory=ZOrderPolicy)
    vacuum: VacuumPolicy = field(default_factory=VacuumPolicy)
    checkpoint: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    manifest: ManifestPolicy = field(default_factory=ManifestPolicy)
    sensor: SensorPolicy = field(default_factory=SensorPolicy)
    downstream: DownstreamPolicy = field(default_factory=DownstreamPolicy)
    cluster: ClusterPolicy = field(default_factory=ClusterPolicy)
    compact_log: CompactLogPolicy = field(default_factory=CompactLogPolicy)
    purge: PurgePolicy = field(default_factory=PurgePolicy)
    restore: RestorePolicy = field(default_factory=RestorePolicy)
    analyze: AnalyzePolicy = field(default_factory=AnalyzePolicy)
    advisor: AdvisorPolicy = field(default_factory=AdvisorPolicy)

    def policy(self, name: str) -> Policy | None:
        """The policy of registry operation ``name``; None when tables.yaml has no section for it."""
        key = operation(name).policy_key  # KeyError naming the known operations
        policy: Policy | None = None if key is None else getattr(self, key)
        return policy

    @property
    def operations(self) -> tuple[str, ...]:
        """Enabled maintenance operations (registry names), in the order a full run does them."""
        return tuple(op.name for op in OPERATIONS
                     if op.policy_key is not None and getattr(self, op.policy_key).enabled)


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
