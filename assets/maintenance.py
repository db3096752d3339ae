"""Maintenance assets: per table, one asset per enabled operation, grouped by table name.

Each asset runs one registry entry (``delta_core.maintenance.operations``: ``Operation.run``,
through ``recorded_run.run_recorded`` as the command line does, so each run is a row of the
maintenance history, its trigger read from the run's tags) and turns its report into UI metadata: the summary line every surface
shows, the report's values, file statistics and health before and after. One factory serves
every entry. The assets form a chain in the order a full maintenance run does them (the order
of ``OPERATIONS``), starting from the table's observable asset, so a job that selects several
runs them in that order; one-offs (restore) stand beside the chain. Each asset is named after its
registry entry, and ``ASSET_FACTORIES`` maps every entry configured in tables.yaml to its factory.

Every asset takes a ``Config`` with the fields of the entry's option record
(``delta_core.maintenance.options``), defaulting to ``None``, meaning "use the table's policy
from tables.yaml"; a value given at launch (Launchpad, schedule, sensor) wins. A run started by
automation fills what the policy leaves to it (``delta_core.config.automated_runs``: a purge
without a ratio rewrites only the files over the policy's ratio).

A ``DeltaError`` (bad config, unsafe store, permission denied, a failed Spark task, ...) is
logged by the op at error level with its kind and message before it fails the step, so the
run's log says what went wrong and what to do without opening the stack trace.

Each asset carries its automation condition from the table's policy (``assets.automation``), and
each Spark step (``Operation.uses_spark``) runs in the Dagster concurrency pool of tables.yaml's
``spark: {pool: ...}`` (default ``delta_spark``), whose instance limit bounds the Spark steps
running at once; the other steps run in no pool.
"""


from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster import Field as DagsterField

from assets.automation import TRIGGER_TAG, maintenance_condition
from assets.health_view import health_before_after, health_cache, table_health_report
from assets.metadata import FileStats, before_after_markdown, before_after_metadata, scalar_metadata, summary_markdown
from assets.metrics_view import listed_markdown, report_json, report_lines, report_values
from assets.operation_config import config_class, options_from_config
from assets.table import table_asset_key
from delta_core.config.automated_runs import run_options
from delta_core.config.records import DEFAULT_SPARK_POOL, HistoryConfig
from delta_core.config.table_checks import check_operation
from delta_core.errors import ConfigError, DeltaError
from delta_core.health.report import HealthReport
from delta_core.log.log_segment import LogSegment
from delta_core.log.snapshot import Snapshot
from delta_core.maintenance.history_records import HistoryLocation
from delta_core.maintenance.operations import ONE_OFFS, REGISTRY, Operation
from delta_core.maintenance.recorded_run import RunOrigin, run_recorded
from delta_core.maintenance.report import Report, summary_line
from resources import SPARK_RESOURCE_KEY, DeltaTableResource, resource_key_of, table_resource
from resources.config import TableConfig

OPERATION_TAG = "delta_maintenance/operation"
TABLE_TAG = "delta_maintenance/table"
SCHEDULE_NAME_TAG, SENSOR_NAME_TAG = "dagster/schedule_name", "dagster/sensor_name"  # Dagster's own run tags
SUMMARY_LINE_KEY = "summary_line"  # the report's one line (``report.summary_line``), as the CLI prints it


def maintenance_asset_key(table_name: str, operation: str) -> AssetKey:
    return AssetKey([table_name, operation])


# --- config (None = the table's policy) -----------------------------------------------------


# Each asset's Config, generated from its registry entry's options record.
CONFIGS: dict[str, type[Config]] = {op.name: config_class(op) for op in REGISTRY if not op.configured_in}
# Each Config's Dagster schema, inferred once per operation and given to every table's asset as
# ``config_schema``: inferring it from a ``config: <Config>`` parameter costs ~45% of creating an
# asset, paid again for each of thousands of discovered tables' assets.
CONFIG_SCHEMAS: dict[str, dict[str, DagsterField]] = {name: config.to_fields_dict() for name, config in CONFIGS.items()}


# --- one factory per operation ----------------------------------------------------------------

# (table, deps, Spark pool) -> the operation's asset
@dataclass(frozen=True, slots=True)
class Placement:
    """What every maintenance asset of a code location shares: the Dagster pool of its Spark
    steps (tables.yaml ``spark.pool``) and the fleet budget its automation condition honours
    (``fleet.automation.WithinFleetBudget``; None: no budget)."""

    spark_pool: str = DEFAULT_SPARK_POOL
    budget: AutomationCondition | None = None
    history: HistoryConfig | None = None  # tables.yaml ``history``: where every run is recorded


def run_trigger(tags: Mapping[str, str]) -> str:
    """Who started the run (``history_records.TRIGGERS``), from its tags: a schedule, the automation
    sensor and the advisor tag their runs (``TRIGGER_TAG``); the log sensor tags its reason; a run
    launched by hand (UI, ``materialize``, a job) has none."""
    tag = tags.get(TRIGGER_TAG)
    if tag in ("schedule", "automation", "advisor"):
        return tag
    if tag is not None or SENSOR_NAME_TAG in tags:
        return "sensor"
    return "schedule" if SCHEDULE_NAME_TAG in tags else "job"


def _history(placement: Placement, context: AssetExecutionContext) -> HistoryLocation | None:
    """The history table of the code location; None (a warning) when its location cannot be read:
    the run goes on unrecorded."""
    if placement.history is None:
        return None
    try:
        return placement.history.location()
    except ConfigError as exc:
        context.log.warning(f"maintenance history not recorded: {exc}")
        return None


AssetFactory = Callable[[TableConfig, list[AssetKey], Placement], AssetsDefinition]


def _common(table: TableConfig, operation: Operation, deps: list[AssetKey], *, placement: Placement,
            description: str) -> dict:
    spark = operation.uses_spark
    keys = {resource_key_of(table)} | spark_keys(operation)
    return dict(
        key=maintenance_asset_key(table.name, operation.name),
        group_name=table.name,
        deps=deps,
        kinds={"delta", "spark"} if spark else {"delta"},
        tags={OPERATION_TAG: operation.name, TABLE_TAG: table.name},
        required_resource_keys=keys,
        description=description,
        pool=placement.spark_pool if spark else None,
        automation_condition=maintenance_condition(table, operation.name, budget=placement.budget),
        config_schema=CONFIG_SCHEMAS[operation.name],
    )


def spark_keys(op: Operation) -> set[str]:
    """The Spark resource's key when ``op`` can use Spark (the session starts only for work that needs it)."""
    return {SPARK_RESOURCE_KEY} if _can_use_spark(op) else set()


_Config = TypeVar("_Config", bound=Config)
_Body = Callable[[AssetExecutionContext, _Config], MaterializeResult]


def op_body(config_type: type[_Config]) -> Callable[[_Body[_Config]], Callable[[AssetExecutionContext], MaterializeResult]]:
    """The asset's compute function from ``body(context, config)``: the run's config (validated
    against ``CONFIG_SCHEMAS``) made into ``config_type``, as Dagster does for a ``config``
    parameter, and a ``DeltaError`` logged at error level (kind and message) before it fails
    the step."""

    def decorate(body: _Body[_Config]) -> Callable[[AssetExecutionContext], MaterializeResult]:
        def run(context: AssetExecutionContext) -> MaterializeResult:
            config = config_type(**(context.op_execution_context.op_config or {}))
            try:
                return body(context, config)
            except DeltaError as exc:
                context.log.error(f"{type(exc).__name__} ({exc.kind}): {exc}")
                raise

        return run

    return decorate


def _delta(context: AssetExecutionContext, table: TableConfig) -> DeltaTableResource:
    return table_resource(context.resources, table)


def _spark(context: AssetExecutionContext) -> Callable[[], Any]:
    """A factory for the run's SparkSession: operations plan first and start Spark (a JVM, seconds)
    only when there is work, so a run with nothing to do costs about a ``describe``."""
    return lambda: context.resources.spark.spark_session


def _can_use_spark(op: Operation) -> bool:
    """Whether ``op`` is given a Spark factory: the command line's --spark-master says it can use one."""
    return op.cli_spark != "none"


def maintain(context: AssetExecutionContext, config: Config, op: Operation, table: TableConfig,
             placement: Placement) -> MaterializeResult:
    """One run of ``op`` on ``table``: the registry entry run with the table's policy and the
    launch's values (``op.run``); its report, the file statistics and health before and after."""
    policy = table.policy(op.name)
    assert policy is not None  # only tables with the section get the asset
    trigger = run_trigger(context.run.tags)
    options = run_options(table, options_from_config(config, policy.options), trigger=trigger)
    spark = _spark(context) if _can_use_spark(op) else None  # a factory: Spark starts only with work
    dt = _delta(context, table).open()
    # by log segment (a checkpoint moves it, not the version): the history's scores are the metadata's
    health: dict[LogSegment, HealthReport] = {}

    def health_at(snapshot: Snapshot) -> HealthReport:
        if snapshot.log_segment not in health:
            health[snapshot.log_segment] = table_health_report(dt, table, snapshot=snapshot,
                                                               cache=health_cache(context.instance))
        return health[snapshot.log_segment]

    snapshot = dt.snapshot()
    check_operation(table, op.name, snapshot.metadata)  # the load checked listed tables only, and the schema may move
    before, health_before = FileStats.of(snapshot), health_at(snapshot)
    origin = RunOrigin(trigger=trigger, history=_history(placement, context),
                       table_name=table.name, dagster_run_id=context.run.run_id,
                       score=lambda d: health_at(d.snapshot()).score)
    report = run_recorded(op, dt, options, spark, origin=origin)
    snapshot = dt.snapshot()
    return _result(table.name, op, report, before, FileStats.of(snapshot),
                   health=health_before_after(health_before, health_at(snapshot)))


def _operation_asset(op: Operation) -> AssetFactory:
    """The factory of ``op``'s asset on one table (``maintain``)."""

    def factory(table: TableConfig, deps: list[AssetKey], placement: Placement) -> AssetsDefinition:
        @asset(**_common(table, op, deps, placement=placement,
                         description=f"{op.description} Table `{table.name}`."))
        @op_body(CONFIGS[op.name])
        def _asset(context: AssetExecutionContext, config: Config) -> MaterializeResult:
            return maintain(context, config, op, table, placement)

        return _asset

    return factory


# Registry name -> asset factory, for every entry with a tables.yaml section (cleanup_log has
# none: the checkpoint asset runs it when its policy says cleanup_log).
ASSET_FACTORIES: dict[str, AssetFactory] = {op.name: _operation_asset(op) for op in REGISTRY if not op.configured_in}


def build_maintenance_assets(table: TableConfig, placement: Placement = Placement()) -> list[AssetsDefinition]:
    """The table's enabled maintenance assets, chained in run order after the table asset;
    the Spark ones in ``placement.spark_pool``, the automation bounded by ``placement.budget``."""
    out: list[AssetsDefinition] = []
    upstream = table_asset_key(table.name)
    for operation in table.operations:
        definition = ASSET_FACTORIES[operation](table, [upstream], placement)
        out.append(definition)
        upstream = maintenance_asset_key(table.name, operation)
    for op in ONE_OFFS:  # launched by hand (restore): beside the chain, not in it
        if (policy := table.policy(op.name)) is not None and policy.enabled:
            out.append(ASSET_FACTORIES[op.name](table, [table_asset_key(table.name)], placement))
    return out


# --- results -------------------------------------------------------------------------------------


def _result(table_name: str, op: Operation, report: Report, before: FileStats, after: FileStats, *,
            health: dict[str, MetadataValue]) -> MaterializeResult:
    body = before_after_markdown(before, after) + listed_markdown(report)
    # Insertion order is display order: the summary first, raw JSON last.
    metadata: dict[str, MetadataValue] = {
        "summary": MetadataValue.md(summary_markdown(f"{op.title} of {table_name}",
                                                     [f"table `{table_name}`", *report_lines(op.title, report)], body)),
        SUMMARY_LINE_KEY: MetadataValue.text(summary_line(op.title, report))}
    metadata.update(before_after_metadata(before, after))
    metadata.update(scalar_metadata(report_values(report)))
    metadata.update(health)
    metadata["metrics"] = MetadataValue.json(report_json(report))
    return MaterializeResult(metadata=metadata)
