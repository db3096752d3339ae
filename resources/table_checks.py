"""tables.yaml checked against the tables themselves, when the definitions load.

``resources.config`` checks what the file alone can tell (predicate syntax included). What
needs a table's schema is checked here, with the very functions the runs use, so a typo fails
``dagster definitions validate`` instead of a scheduled run: a ``where`` predicate may only
name partition columns (``parse_predicate``), and Z-order and clustering columns must be data
columns of the schema with statistics (``zorder_plan.validate_columns``), and a vacuum retention below the table's
``delta.deletedFileRetentionDuration`` needs ``allow_short_retention: true``. Each failure is a
``TableConfigError`` naming the file, the table and the field.

Only protocol and metadata are read (``DeltaTable.protocol_and_metadata``: no file actions),
``READ_THREADS`` tables at a time: with thousands of discovered tables on an object store the
reads are round trips, not work.
A table that cannot be read now is skipped with a log line, not refused: it may not exist yet
(its runs report that when they start), its URI or a storage secret may come from an
environment variable that only the run has, or its store may be out of reach from where the
definitions load. Its runs still check the same things before any work.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from delta_core.errors import ConfigError, DeltaError, NotADeltaTableError
from delta_core.maintenance.operations import CLUSTER, COMPACT, PURGE, VACUUM, ZORDER
from delta_core.maintenance.predicate import parse_predicate
from delta_core.maintenance.zorder_plan import validate_columns
from delta_core.model.actions import Metadata
from delta_core.model.schema import StructType
from delta_core.model.table_properties import TableProperties
from resources.config import EnvRef, MaintenanceConfig, TableConfig, TableConfigError
from resources.config_models import short_retention_error
from resources.delta_table import DeltaTableResource

log = logging.getLogger(__name__)
READ_THREADS = 16


def check_tables(config: MaintenanceConfig) -> None:
    """Check every table's policy against its schema; ``TableConfigError`` on the first misfit of
    a table listed under ``tables:``. A discovered table's misfit (its root's ``defaults`` name a
    Z-order column it lacks) is logged instead: one table of a fleet must not keep the others
    from loading, and its runs refuse the same misfit before any work."""
    with ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="table-checks") as pool:
        read = list(pool.map(_read_metadata, config.tables))  # in order: the first misfit is the first table's
    for table, metadata in zip(config.tables, read, strict=True):
        if metadata is None:
            continue
        try:
            _check_table(table, metadata, source=config.source)
        except TableConfigError as misfit:
            if table.discovered_under is None:
                raise
            log.warning("discovered table %r (root %s): %s; its runs of that operation will refuse it",
                        table.name, table.discovered_under, misfit)


def _check_table(table: TableConfig, metadata: Metadata, *, source: str | None) -> None:
    partition_columns = list(metadata.partition_columns)
    checks: list[tuple[str, Callable[[], object]]] = [
        (field, functools.partial(parse_predicate, where, partition_columns))
        for field, where in ((f"{COMPACT.policy_key}.where", table.compact.options.where),
                             (f"{ZORDER.policy_key}.where", table.zorder.options.where),
                             (f"{PURGE.policy_key}.where", table.purge.options.where))
        if where is not None
    ]
    if table.zorder.options.columns:
        props = TableProperties(metadata.configuration)
        checks.append((f"{ZORDER.policy_key}.columns", functools.partial(
            validate_columns, StructType.from_json(metadata.schema_string), table.zorder.options.columns,
            partition_columns=partition_columns, num_indexed_cols=props.num_indexed_cols,
            stats_columns=props.stats_columns)))
    if table.cluster.options.columns:
        props = TableProperties(metadata.configuration)
        checks.append((f"{CLUSTER.policy_key}.columns", functools.partial(
            validate_columns, StructType.from_json(metadata.schema_string), table.cluster.options.columns,
            partition_columns=partition_columns, num_indexed_cols=props.num_indexed_cols,
            stats_columns=props.stats_columns, operation="cluster")))
    for field, check in checks:
        try:
            check()
        except ConfigError as exc:
            raise TableConfigError(str(exc), path=source, table=table.name, field=field) from None
    if table.vacuum.enabled:
        # A table may keep removed files longer than the protocol's default: a shorter
        # retention in tables.yaml needs the same opt-in against the table's own.
        table_hours = TableProperties(metadata.configuration).deleted_file_retention.total_seconds() / 3600.0
        error = short_retention_error(table.vacuum.options.retention_hours, table_hours,
                                      opted_in=table.vacuum.options.force, whose="the table's")
        if error is not None:
            raise TableConfigError(error, path=source, table=table.name, field=f"{VACUUM.policy_key}.retention_hours")


def _read_metadata(table: TableConfig) -> Metadata | None:
    """The table's current metadata, or ``None`` (logged) when it cannot be read now."""
    if isinstance(table.uri, EnvRef):
        log.info("table %r: uri comes from $%s at run time; schema checks skipped",
                 table.name, table.uri.name)
        return None
    options = []
    for key, value in table.storage_options:
        if isinstance(value, EnvRef):
            if value.name not in os.environ:
                log.info("table %r: storage option %s needs $%s, unset here; schema checks skipped",
                         table.name, key, value.name)
                return None
            value = os.environ[value.name]
        options.append((key, value))
    resolved = dataclasses.replace(table, storage_options=tuple(options))
    resource = DeltaTableResource.from_table_config(resolved)
    try:
        return resource.open().protocol_and_metadata()[1]
    except NotADeltaTableError:
        log.info("table %r: no Delta table at %s yet; schema checks skipped", table.name, table.uri)
    except (DeltaError, OSError) as exc:
        log.warning("table %r: cannot read %s now (%s); schema checks skipped", table.name, table.uri, exc)
    return None
