"""Discovered tables as partitions (tables.yaml ``fleet: {discovered_as: partitions}``): every table
a ``discover:`` root finds is one partition, keyed by its name, of the assets of the group
``discovered_tables``, so the definitions do not grow with the tables (docs/fleet.md).

- ``discovered_tables/delta_table``: the tables themselves (an external asset: the discovered
  tables' log sensor records their observations), carrying the eight health checks per partition;
- ``discovered_tables/<operation>``: one asset per registry operation some root enables, chained
  in run order as a table's are; a run materializes one partition, i.e. maintains one table,
  with that table's policy (its root's ``defaults``), looked up from the partition key when the
  run starts (``resources.delta_table.DiscoveredTables``). A table whose root leaves the
  operation off gets a materialization that says so and does nothing.

The partitions are Dagster's dynamic partitions (``DISCOVERED_TABLES``): the discovery sensor
(``sensors.discovery``) adds a partition for each new table and removes a vanished table's.
"""

import warnings
from collections.abc import Iterator, Sequence

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    BackfillPolicy,
    BetaWarning,
    Config,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    PreviewWarning,
    asset,
    multi_asset_check,
)

from assets.health_checks import check_results, spec_description
from assets.maintenance import (
    CONFIG_SCHEMAS,
    CONFIGS,
    OPERATION_TAG,
    SUMMARY_LINE_KEY,
    Placement,
    maintain,
    op_body,
    spark_keys,
)
from delta_core.config.generated_names import (
    DISCOVERED_GROUP,
    DISCOVERED_PARTITIONS,
    DISCOVERED_TABLES_RESOURCE_KEY,
    TABLE_ASSET_NAME,
)
from delta_core.health.check_names import CHECK_REMEDIES
from delta_core.maintenance.operations import ONE_OFFS, OPERATIONS, operation
from resources.config import TableConfig
from resources.delta_table import DiscoveredTables

DISCOVERED_TABLES = DynamicPartitionsDefinition(name=DISCOVERED_PARTITIONS)
# The run tag naming a run's partition. A job of checks alone has no partitions definition of its
# own, so its runs name the table by this tag (Dagster's ``partition_key=`` would refuse them);
# Dagster exports no public constant for it.
PARTITION_TAG = "dagster/partition"


def partition_tags(table_name: str) -> dict[str, str]:
    """The tags that make a run of a discovered job one table's (any of them, checks alone too)."""
    return {PARTITION_TAG: table_name}


def discovered_asset_key(name: str) -> AssetKey:
    """``discovered_tables/<name>``: the tables (``delta_table``) or one operation's asset."""
    return AssetKey([DISCOVERED_GROUP, name])


DISCOVERED_TABLE_KEY = discovered_asset_key(TABLE_ASSET_NAME)
DISCOVERED_CHECKS_NAME = "discovered_tables_health_checks"


def discovered_operations(templates: Sequence[TableConfig]) -> tuple[str, ...]:
    """The operations some discover root enables (its ``defaults``), in run order, then the one-offs."""
    return tuple(op.name for op in (*OPERATIONS, *ONE_OFFS) if any(t.enabled(op.name) for t in templates))


def discovered_table(context: AssetExecutionContext | AssetCheckExecutionContext) -> TableConfig:
    """The record of the table a run's partition is (``ConfigError`` when no root holds it now)."""
    tables: DiscoveredTables = getattr(context.resources, DISCOVERED_TABLES_RESOURCE_KEY)
    return tables.record(context.partition_key)


def build_discovered_table_asset() -> AssetSpec:
    return AssetSpec(
        DISCOVERED_TABLE_KEY, group_name=DISCOVERED_GROUP, partitions_def=DISCOVERED_TABLES,
        description="The Delta tables found by discover: in tables.yaml, one partition each (keyed by the "
                    "table's name); the discovered tables' log sensor records each new version.")


def _disabled(op_name: str, table: TableConfig) -> MaterializeResult:
    line = f"{op_name} is not enabled for {table.name} (its discover root's defaults): nothing done"
    return MaterializeResult(metadata={SUMMARY_LINE_KEY: MetadataValue.text(line),
                                       "summary": MetadataValue.md(line)})


def _discovered_operation_asset(op_name: str, deps: list[AssetKey], placement: Placement,
                                condition: AutomationCondition | None) -> AssetsDefinition:
    op = operation(op_name)
    # backfill_policy is beta in Dagster 1.13; it is the API for one run per partition.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)

        @asset(key=discovered_asset_key(op.name), group_name=DISCOVERED_GROUP, deps=deps,
               partitions_def=DISCOVERED_TABLES, kinds={"delta", "spark"} if op.uses_spark else {"delta"},
               tags={OPERATION_TAG: op.name}, required_resource_keys={DISCOVERED_TABLES_RESOURCE_KEY} | spark_keys(op),
               description=f"{op.description} One partition per discovered table.",
               pool=placement.spark_pool if op.uses_spark else None, automation_condition=condition,
               # several partitions requested at once (a cron tick) are a backfill of one run per table
               backfill_policy=BackfillPolicy.multi_run(1),
               config_schema=CONFIG_SCHEMAS[op.name])
        @op_body(CONFIGS[op.name])
        def _asset(context: AssetExecutionContext, config: Config) -> MaterializeResult:
            table = discovered_table(context)
            if not table.enabled(op.name):
                return _disabled(op.name, table)
            return maintain(context, config, op, table, placement)

    return _asset


def build_discovered_maintenance_assets(operations: Sequence[str], placement: Placement,
                                        conditions: dict[str, AutomationCondition | None]) -> list[AssetsDefinition]:
    """One partitioned asset per operation of ``operations`` (``discovered_operations``), chained
    in run order after the tables' asset, one-offs beside the chain; ``conditions`` by operation."""
    one_offs = {op.name for op in ONE_OFFS}
    out: list[AssetsDefinition] = []
    upstream = DISCOVERED_TABLE_KEY
    for name in operations:
        deps = [DISCOVERED_TABLE_KEY] if name in one_offs else [upstream]
        out.append(_discovered_operation_asset(name, deps, placement, conditions.get(name)))
        if name not in one_offs:
            upstream = discovered_asset_key(name)
    return out


def discovered_check_keys() -> tuple[AssetCheckKey, ...]:
    return tuple(AssetCheckKey(DISCOVERED_TABLE_KEY, name) for name in CHECK_REMEDIES)


def build_discovered_checks(maintenance_keys: Sequence[AssetKey]):  # -> AssetChecksDefinition
    """The eight health checks of every discovered table, per partition, after ``maintenance_keys``
    (as a listed table's, ``assets.health_checks``)."""
    # Partitioned asset checks are marked preview in Dagster 1.13; they are the API for checks per partition.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        specs = [AssetCheckSpec(name, asset=DISCOVERED_TABLE_KEY, description=spec_description(name),
                                additional_deps=maintenance_keys, partitions_def=DISCOVERED_TABLES)
                 for name in CHECK_REMEDIES]

    @multi_asset_check(name=DISCOVERED_CHECKS_NAME, specs=specs, can_subset=True,
                       required_resource_keys={DISCOVERED_TABLES_RESOURCE_KEY},
                       description="Health checks of a discovered table (the run's partition) from its Delta log.")
    def _checks(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        table = discovered_table(context)
        dt = getattr(context.resources, DISCOVERED_TABLES_RESOURCE_KEY).table(table.name).open()
        yield from check_results(context, table, dt, DISCOVERED_TABLE_KEY)

    return _checks
