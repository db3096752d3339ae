"""The names the Dagster code location generates from each table's name, spelled in one place.

The code location names its jobs, resources, asset groups and asset keys with these functions,
and the reader (``delta_core.config.reader``) refuses a file in which two of them coincide (a
table called ``all_tables``, ``discovered_tables`` or ``fleet``; ``a`` beside ``a_downstream``),
naming the table, so the location never fails to load on a duplicate name or, worse, loads and
fails its runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from delta_core.maintenance.operations import OPERATIONS, REGISTRY

SPARK_RESOURCE_KEY = "spark"
# One resource serves every discovered table (a resource per table would be bound to every asset).
DISCOVERED_TABLES_RESOURCE_KEY = "delta_discovered_tables"
TABLE_ASSET_NAME = "delta_table"  # <table>/delta_table: the observable table asset
DAILY_SUMMARY_ASSET_NAME = "daily_summary"
DOWNSTREAM_GROUP_SUFFIX = "_downstream"
FLEET_GROUP = "fleet"
FLEET_REPORT_ASSET_NAME = "report"
FLEET_REPORT_JOB = "fleet_report"
ALL_TABLES_MAINTENANCE_JOB = "all_tables_maintenance"
ALL_TABLES_OBSERVE_JOB = "all_tables_observe"
ALL_TABLES_CHECKS_JOB = "all_tables_checks"
# With ``fleet.discovered_as: partitions`` every discovered table is a partition (keyed by its name)
# of the assets of one group: ``discovered_tables/delta_table``, ``discovered_tables/<operation>``.
DISCOVERED_GROUP = "discovered_tables"
DISCOVERED_PARTITIONS = "discovered_tables"  # the DynamicPartitionsDefinition's name
DISCOVERED_MAINTENANCE_JOB = "discovered_maintenance"
DISCOVERED_CHECKS_JOB = "discovered_checks"


def table_resource_key(table_name: str) -> str:
    """Resource key of a listed table's ``DeltaTableResource``."""
    return f"delta_{table_name}"


def maintenance_job_name(table_name: str) -> str:
    return f"{table_name}_maintenance"


def operation_job_name(table_name: str, operation: str) -> str:
    return f"{table_name}_{operation}"


def downstream_job_name(table_name: str) -> str:
    return f"{table_name}_downstream_refresh"


def observe_job_name(table_name: str) -> str:
    return f"{table_name}_observe"


def checks_job_name(table_name: str) -> str:
    return f"{table_name}_checks"


def all_tables_job_name(operation: str) -> str:
    return f"all_tables_{operation}"


def discovered_job_name(operation: str) -> str:
    """The job of one operation over the discovered tables' partitions (a run: one partition)."""
    return f"discovered_{operation}"


def downstream_group(table_name: str) -> str:
    return f"{table_name}{DOWNSTREAM_GROUP_SUFFIX}"


def location_names(*, partitioned: bool = False) -> set[tuple[str, str]]:
    """The code location's own names, as (kind, name): fleet jobs, resources, group and report;
    ``partitioned`` (``fleet.discovered_as: partitions``): also the discovered tables' group, assets
    and jobs."""
    jobs = {ALL_TABLES_MAINTENANCE_JOB, ALL_TABLES_OBSERVE_JOB, ALL_TABLES_CHECKS_JOB, FLEET_REPORT_JOB,
            *(all_tables_job_name(op.name) for op in OPERATIONS)}
    names = {("resource", SPARK_RESOURCE_KEY), ("resource", DISCOVERED_TABLES_RESOURCE_KEY),
             ("group", FLEET_GROUP), ("asset key", f"{FLEET_GROUP}/{FLEET_REPORT_ASSET_NAME}")}
    if partitioned:
        jobs |= {DISCOVERED_MAINTENANCE_JOB, DISCOVERED_CHECKS_JOB, *(discovered_job_name(op.name) for op in REGISTRY)}
        names |= {("group", DISCOVERED_GROUP), *(("asset key", f"{DISCOVERED_GROUP}/{asset}") for asset in
                                                (TABLE_ASSET_NAME, *(op.name for op in REGISTRY)))}
    return names | {("job", j) for j in jobs}


def table_names(table_name: str, *, discovered: bool, partitioned: bool = False) -> set[tuple[str, str]]:
    """The names generated for a table, as (kind, name). A discovered table has no jobs or
    resource of its own (it shares the fleet's); ``partitioned``, it is a partition key of the
    fleet's assets and has no names of its own (discovery refuses two tables of one name)."""
    if discovered and partitioned:
        return set()
    names = {("group", table_name), ("group", downstream_group(table_name)),
             *(("asset key", f"{table_name}/{asset}") for asset in
               (TABLE_ASSET_NAME, DAILY_SUMMARY_ASSET_NAME, *(op.name for op in REGISTRY)))}
    if not discovered:
        names |= {("resource", table_resource_key(table_name)), *(("job", job) for job in (
            maintenance_job_name(table_name), downstream_job_name(table_name), observe_job_name(table_name),
            checks_job_name(table_name), *(operation_job_name(table_name, op.name) for op in REGISTRY)))}
    return names


def collision(tables: Iterable[tuple[str, bool]], *, partitioned: bool = False) -> tuple[str, str] | None:
    """The first table (in order) whose generated names include the location's own or an
    earlier table's, and why it cannot be loaded; ``tables`` are (name, discovered);
    ``partitioned``: discovered tables are partitions (``location_names``). None: no collision."""
    owner: dict[tuple[str, str], str | None] = dict.fromkeys(location_names(partitioned=partitioned))
    for name, discovered in tables:
        mine = table_names(name, discovered=discovered, partitioned=partitioned)
        for kind, generated in sorted(mine):
            if (kind, generated) in owner:
                other = owner[kind, generated]
                whose = f"table {other!r}'s" if other is not None else "the code location's own"
                return name, (f"the {kind} {generated!r} generated for it is already {whose}: rename the "
                              "table (or exclude it from its discover root)")
        owner.update(dict.fromkeys(mine, name))
    return None
