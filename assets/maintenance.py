"""Maintenance assets: per table, one asset per enabled operation, grouped by table name.

Each asset calls one ``delta_core.maintenance`` operation (or the checkpoint writer) and turns
its typed metrics record into UI metadata. The assets form a chain in the order a full
maintenance run does them (the order of ``delta_core.maintenance.operations.OPERATIONS``),
starting from the table's observable asset, so a job that selects several runs them in that
order. Each asset is named after its registry entry (``compact``, ``zorder``, ...), and
``ASSET_FACTORIES`` maps every entry configured in tables.yaml to its factory.

Every asset takes a ``Config`` with the fields of the entry's option record
(``delta_core.maintenance.options``), defaulting to ``None``, meaning "use the table's policy
from tables.yaml"; a value given at launch (Launchpad, schedule, sensor) wins.

A ``DeltaError`` (bad config, unsafe store, permission denied, a failed Spark task, ...) is
logged by the op at error level with its kind and message before it fails the step, so the
run's log says what went wrong and what to do without opening the stack trace.

Each asset carries its automation condition from the table's policy (``assets.automation``), and
each Spark step (``Operation.uses_spark``) runs in the Dagster concurrency pool of tables.yaml's
``spark: {pool: ...}`` (default ``delta_spark``), whose instance limit bounds the Spark steps
running at once; the other steps run in no pool.
"""


import time
from collections.abc import Callable
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
from pydantic import Field

from assets.automation import maintenance_condition
from assets.health_view import health_before_after, table_health_report
from assets.metadata import (
    FileStats,
    before_after_markdown,
    before_after_metadata,
    human_bytes,
    scalar_metadata,
    summary_markdown,
)
from assets.metrics_view import describe, metrics_for_json
from assets.operation_config import config_class, options_from_config
from assets.table import table_asset_key
from delta_core.config.records import DEFAULT_SPARK_POOL
from delta_core.errors import DeltaError
from delta_core.maintenance.operations import (
    CHECKPOINT,
    COMPACT_LOG,
    ONE_OFFS,
    REGISTRY,
    ZORDER,
    Operation,
)
from delta_core.maintenance.skipping import probe_values, skipped_file_ratio
from resources import SPARK_RESOURCE_KEY, DeltaTableResource, resource_key_of, table_resource
from resources.config import TableConfig

OPERATION_TAG = "delta_maintenance/operation"
TABLE_TAG = "delta_maintenance/table"


def maintenance_asset_key(table_name: str, operation: str) -> AssetKey:
    return AssetKey([table_name, operation])


# --- config (None = the table's policy) -----------------------------------------------------


# Each asset's Config, generated from its registry entry (checkpoint's has its own `force`).
CONFIGS: dict[str, type[Config]] = {
    op.name: config_class(op, **({"force": (bool | None, Field(
        default=None, description="Write a checkpoint even when fewer commits than the table's checkpoint interval "
                                  "follow the last one."))} if op is CHECKPOINT else {}))
    for op in REGISTRY if op.policy_key
}
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


AssetFactory = Callable[[TableConfig, list[AssetKey], Placement], AssetsDefinition]


def _common(table: TableConfig, operation: Operation, deps: list[AssetKey], *, placement: Placement,
            description: str) -> dict:
    spark = operation.uses_spark
    keys = {resource_key_of(table)} | ({SPARK_RESOURCE_KEY} if spark else set())
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


_Config = TypeVar("_Config", bound=Config)
_Body = Callable[[AssetExecutionContext, _Config], MaterializeResult]


def _op_body(config_type: type[_Config]) -> Callable[[_Body[_Config]], Callable[[AssetExecutionContext], MaterializeResult]]:
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


def _measured(context: AssetExecutionContext, table: TableConfig, title: str,
              run: Callable[[Any], Any]) -> MaterializeResult:
    """Run an operation on the table; report its metrics, the file statistics and the health
    before and after."""
    dt = _delta(context, table).open()
    snapshot = dt.snapshot()
    before, health = FileStats.of(snapshot), table_health_report(dt, table, snapshot=snapshot)
    metrics = run(dt)
    snapshot = dt.snapshot()
    return _result(table.name, title, metrics, before, FileStats.of(snapshot),
                   health=health_before_after(health, table_health_report(dt, table, snapshot=snapshot)))


def _zorder(table: TableConfig, deps: list[AssetKey], placement: Placement) -> AssetsDefinition:
    policy = table.policies[ZORDER.name]

    @asset(**_common(table, ZORDER, deps, placement=placement, description=(
        f"Cluster `{table.name}` on {', '.join(policy.options.columns)} along a "
        f"{policy.options.curve} curve so min/max statistics skip files.")))
    @_op_body(CONFIGS[ZORDER.name])
    def _asset(context: AssetExecutionContext, config: Any) -> MaterializeResult:
        options = options_from_config(config, policy.options)
        dt = _delta(context, table).open()
        columns = list(options.columns)
        snapshot = dt.snapshot()
        before, health_before = FileStats.of(snapshot), table_health_report(dt, table, snapshot=snapshot)
        probes = probe_values(snapshot, columns)
        ratio_before = skipped_file_ratio(snapshot, probes)
        # through the registry entry, as the command line runs it: every option, bounds included
        metrics = ZORDER.run(dt, options, _spark(context))
        snapshot = dt.snapshot()
        after = FileStats.of(snapshot)
        ratio_after = skipped_file_ratio(snapshot, probes)
        health = health_before_after(health_before, table_health_report(dt, table, snapshot=snapshot))
        return _result(table.name, "Z-order", metrics, before, after, health=health, extra={
            "skipped_file_ratio_before": ratio_before,
            "skipped_file_ratio_after": ratio_after,
        }, extra_lines=[
            "point-query skipped-file ratio on the clustering columns: "
            f"{_ratio(ratio_before)} before, {_ratio(ratio_after)} after",
        ])

    return _asset


def _operation_asset(op: Operation,
                     config_type: type[Config]) -> AssetFactory:
    """The factory of ``op``'s asset: the registry entry run with the table's policy and the
    launch's values (``op.run``), its metrics, file statistics and health before and after."""

    def factory(table: TableConfig, deps: list[AssetKey], placement: Placement) -> AssetsDefinition:
        policy = table.policy(op.name)
        assert policy is not None  # only tables with the section get the asset

        @asset(**_common(table, op, deps, placement=placement,
                         description=f"{op.description} Table `{table.name}`."))
        @_op_body(config_type)
        def _asset(context: AssetExecutionContext, config: Config) -> MaterializeResult:
            options = options_from_config(config, policy.options)
            spark = _spark(context) if op.uses_spark else None  # a factory: Spark starts only with work
            return _measured(context, table, op.title, lambda dt: op.run(dt, options, spark))

        return _asset

    return factory


def _checkpoint(table: TableConfig, deps: list[AssetKey], placement: Placement) -> AssetsDefinition:
    policy = table.policies[CHECKPOINT.name]
    spec = _common(table, CHECKPOINT, deps, placement=placement, description=(
        f"Write a checkpoint of `{table.name}` at its latest version once the checkpoint interval's "
        "commits follow the last one (and optionally clean up expired log files)."))
    # Sidecars of a large v2Checkpoint table are written by Spark tasks; the session starts only
    # when the checkpoint turns out to need them.
    spec["required_resource_keys"] = spec["required_resource_keys"] | {SPARK_RESOURCE_KEY}

    @asset(**spec)
    @_op_body(CONFIGS[CHECKPOINT.name])
    def _asset(context: AssetExecutionContext, config: Any) -> MaterializeResult:
        from delta_core.maintenance.spark.checkpoint_sidecars import spark_sidecar_writer
        from delta_core.write.checkpoint_write import write_checkpoint

        started = time.monotonic()
        options = options_from_config(config, policy.options, exclude=frozenset({"force"}))
        dt = _delta(context, table).open()
        checkpoint_before = dt.last_checkpoint_version()
        health = table_health_report(dt, table)
        # The table's checkpoint interval decides, as the health advice does: a run (schedule,
        # full maintenance job) right after a checkpoint writes nothing.
        due = any(r.operation == CHECKPOINT.cli_command for r in health.recommendations)
        result = None
        if due or config.force:
            result = write_checkpoint(dt, sidecar_threshold=options.sidecar_threshold,
                                      sidecar_writer=spark_sidecar_writer(_spark(context)))
        cleanup = None
        if options.cleanup_log:
            from delta_core.write.log_cleanup import cleanup_log

            cleanup = cleanup_log(dt)
        skipped = None if result is not None else (
            f"{health.metrics.versions_since_checkpoint} commit(s) since the last checkpoint, fewer than "
            f"the interval {health.metrics.checkpoint_interval}; launch with force: true to write one anyway")
        after = table_health_report(dt, table) if result is not None or cleanup is not None else health
        return _checkpoint_result(table.name, checkpoint_before, result, cleanup,
                                  round(time.monotonic() - started, 3), skipped_reason=skipped,
                                  health=health_before_after(health, after))

    return _asset


def _compact_log(table: TableConfig, deps: list[AssetKey], placement: Placement) -> AssetsDefinition:
    policy = table.policies[COMPACT_LOG.name]

    @asset(**_common(table, COMPACT_LOG, deps, placement=placement, description=(
        f"Write a log compaction file for the commits of `{table.name}` after its newest checkpoint, "
        "so snapshots read one file instead of each commit.")))
    @_op_body(CONFIGS[COMPACT_LOG.name])
    def _asset(context: AssetExecutionContext, config: Any) -> MaterializeResult:
        from delta_core.write.log_compaction import compact_log

        options = options_from_config(config, policy.options)
        dt = _delta(context, table).open()
        health = table_health_report(dt, table)
        result = compact_log(dt, start_version=options.start_version,
                             end_version=options.end_version, min_commits=options.min_commits)
        if result.path is None:
            headline = [f"table `{table.name}`", f"nothing written: {result.skipped_reason}"]
        else:
            headline = [f"table `{table.name}`",
                        f"commits {result.start_version}..{result.end_version} compacted into "
                        f"{result.actions} actions ({human_bytes(result.size_in_bytes)})"]
        metadata: dict[str, MetadataValue] = {
            "summary": MetadataValue.md(summary_markdown(f"Log compaction of {table.name}", headline))}
        metadata.update(scalar_metadata({k: v for k, v in result.to_dict().items() if k != "path"}))
        metadata.update(health_before_after(health, table_health_report(dt, table)))
        return MaterializeResult(metadata=metadata)

    return _asset


# Registry name -> asset factory, for every entry with a tables.yaml section (cleanup_log has
# none: the checkpoint asset runs it when its policy says cleanup_log): the registry-driven one,
# or an operation's own where its asset reports more.
_OWN_FACTORIES: dict[str, AssetFactory] = {
    ZORDER.name: _zorder,  # also measures the point-query skipped-file ratio on its columns
    CHECKPOINT.name: _checkpoint,  # writes only when due (force), then log cleanup
    COMPACT_LOG.name: _compact_log,  # a log file, not data: no file statistics
}
ASSET_FACTORIES: dict[str, AssetFactory] = {
    op.name: _OWN_FACTORIES.get(op.name) or _operation_asset(op, CONFIGS[op.name]) for op in REGISTRY if op.policy_key
}

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


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _result(table_name: str, title: str, metrics, before: FileStats, after: FileStats, *,
            health: dict[str, MetadataValue],
            extra: dict[str, int | float | str | bool | None] | None = None,
            extra_lines: list[str] | None = None) -> MaterializeResult:
    view = describe(metrics)
    headline = [f"table `{table_name}`", *view.headline, *(extra_lines or []),
                f"duration {view.duration_seconds:.1f} s"]
    body = before_after_markdown(before, after) + ([""] + view.extra_lines if view.extra_lines else [])
    # Insertion order is display order: the summary first, raw JSON last.
    metadata: dict[str, MetadataValue] = {
        "summary": MetadataValue.md(summary_markdown(f"{title} of {table_name}", headline, body))}
    metadata.update(scalar_metadata(extra or {}))
    metadata.update(before_after_metadata(before, after))
    metadata.update(scalar_metadata(view.values))
    metadata["duration_seconds"] = MetadataValue.float(float(view.duration_seconds))
    metadata.update(health)
    metadata["metrics"] = MetadataValue.json(metrics_for_json(metrics))
    return MaterializeResult(metadata=metadata)


def _checkpoint_result(table_name: str, checkpoint_before: int | None, result, cleanup,
                       duration_seconds: float, *, skipped_reason: str | None,
                       health: dict[str, MetadataValue]) -> MaterializeResult:
    """``result`` is None when no checkpoint was due (``skipped_reason`` says why)."""
    values: dict[str, int | float | str | bool | None] = {"checkpoint_version_before": checkpoint_before}
    if result is None:
        values.update({"checkpoint_written": False, "checkpoint_skipped_reason": skipped_reason})
        written = f"no checkpoint written: {skipped_reason}"
    else:
        values.update({"checkpoint_written": True, "checkpoint_version": result.version,
                       "checkpoint_sidecars": result.sidecars, "checkpoint_actions": result.size,
                       "checkpoint_bytes": result.size_in_bytes})
        written = (f"checkpoint written at version {result.version} ({result.size} actions, "
                   f"{result.sidecars} sidecar(s), {human_bytes(result.size_in_bytes)})")
    values["duration_seconds"] = duration_seconds
    headline = [f"table `{table_name}`", written,
                "previous checkpoint: " + ("none" if checkpoint_before is None else f"version {checkpoint_before}")]
    if cleanup is not None:
        values["log_files_deleted"] = cleanup.files_deleted
        if cleanup.skipped_reason is not None:
            # e.g. delta.enableExpiredLogCleanup=false: the asset never overrides the owner
            values["log_cleanup_skipped_reason"] = cleanup.skipped_reason
            headline.append(f"log cleanup skipped: {cleanup.skipped_reason}")
        else:
            headline.append(f"log cleanup: {cleanup.files_deleted} expired log file(s) deleted")
    headline.append(f"duration {duration_seconds:.1f} s")
    metadata: dict[str, MetadataValue] = {
        "summary": MetadataValue.md(summary_markdown(f"Checkpoint of {table_name}", headline))}
    metadata.update(scalar_metadata(values))
    metadata.update(health)
    return MaterializeResult(metadata=metadata)
