"""tables.yaml checked against the tables themselves, by the kind of each option field.

For every operation section of every table (``option_fields.Kind``): a PREDICATE field must
parse and name only partition columns of the table's schema (``parse_predicate``, as the plans
bind it), a COLUMNS field must name data columns with statistics (``validate_columns``), and an
HOURS field with a ``floor`` may go below that table property only when its ``floor_override``
flag is set (vacuum's retention below ``delta.deletedFileRetentionDuration`` needs
``allow_short_retention: true``). Each misfit is a ``TableConfigError`` naming the file, the
table and the field. The command line and the code location run the same checks.

``check_tables`` (the load) reads the tables listed under ``tables:`` only: protocol and metadata
(no file actions), ``READ_THREADS`` tables at a time. A table that cannot be read now is skipped
with a log line: it may not exist yet, or its URI or secrets may come from the environment of a
run. Discovered tables are not read at load (10,000 of them would be ~30,000 requests on S3 at
every load): a run checks its own operation's section before any work (``check_operation``,
the load's message), and their log sensor names a misfit on the table's observation
(``table_misfit``) when it first sees the table and at each new version.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_core.config.records import EnvRef, MaintenanceConfig, TableConfig, TableConfigError, nested_options
from delta_core.errors import ConfigError, NotADeltaTableError
from delta_core.maintenance.operations import REGISTRY
from delta_core.maintenance.option_fields import Kind, policy_fields
from delta_core.model.table_properties import TableProperties

if TYPE_CHECKING:
    from delta_core.model.actions import Metadata

log = logging.getLogger(__name__)
READ_THREADS = 16


def short_retention_error(options: Any, properties: TableProperties, *, whose: str) -> tuple[str, str] | None:
    """(key, why) when an HOURS field of ``options`` is below its ``floor`` table property
    (``whose``: "the table's", or "the default" when the table is not read) and its
    ``floor_override`` flag is off; None when every such field is allowed."""
    for f in policy_fields(type(options)):
        hours, floor = getattr(options, f.name), f.spec.floor
        if f.spec.kind is not Kind.HOURS or floor is None or hours is None or f.spec.floor_override is None:
            continue
        floor_hours = getattr(properties, floor).total_seconds() / 3600.0
        if hours < floor_hours and not getattr(options, f.spec.floor_override):
            override = next(o.policy_key for o in policy_fields(type(options)) if o.name == f.spec.floor_override)
            return f.policy_key, (
                f"{f.policy_key} {hours:g} is below {whose} {floor.replace('_', ' ')} ({floor_hours:g} hours): "
                f"files still needed by readers of recent versions or by running writers could be deleted. Raise "
                f"it, or add {override}: true if nothing else reads or writes the table")
    return None


def check_tables(config: MaintenanceConfig) -> None:
    """Check the policy of every readable table listed under ``tables:`` against its schema;
    ``TableConfigError`` on the first misfit (discovered tables: module docstring)."""
    listed = [t for t in config.tables if t.discovered_under is None]
    with ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="table-checks") as pool:
        read = list(pool.map(_read_metadata, listed))  # in order: the first misfit is the first table's
    for table, metadata in zip(listed, read, strict=True):
        if metadata is not None:
            check_table(table, metadata, source=config.source)


def table_misfit(table: TableConfig, metadata: Metadata, *, source: str | None = None) -> TableConfigError | None:
    """The first misfit of ``table``'s policy with its ``metadata`` (``check_table``), or None."""
    try:
        check_table(table, metadata, source=source)
    except TableConfigError as misfit:
        return misfit
    return None


def check_table(table: TableConfig, metadata: Metadata, *, source: str | None) -> None:
    """Every operation section's fields against the table's ``metadata``, by their kind (a section
    turned off too: a run launched by hand takes its values)."""
    shape = _Shape.of(metadata)
    for op in REGISTRY:
        if op.configured_in is None:  # else configured in another's section: checked with it
            _check_section(table, op.name, shape, source=source)


def check_operation(table: TableConfig, op_name: str, metadata: Metadata, *, source: str | None = None) -> None:
    """``op_name``'s section of ``table`` against its ``metadata``, as ``check_table`` checks it: a
    run checks its own before any work, with the message the load gives."""
    _check_section(table, op_name, _Shape.of(metadata), source=source)


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the checks need of a table's metadata, parsed once: its properties and a check per
    option kind (``parse_predicate``, ``validate_columns``)."""

    properties: TableProperties
    checks: dict[Kind, Callable[[Any, str], object]]

    @classmethod
    def of(cls, metadata: Metadata) -> _Shape:
        from delta_core.maintenance.predicate import parse_predicate
        from delta_core.maintenance.zorder_plan import validate_columns
        from delta_core.model.schema import StructType

        schema = StructType.from_json(metadata.schema_string)
        partitions = list(metadata.partition_columns)
        properties = TableProperties(metadata.configuration)
        return cls(properties, {
            Kind.PREDICATE: lambda where, _: parse_predicate(where, partitions, schema_columns=schema.field_names),
            Kind.COLUMNS: lambda columns, op: validate_columns(
                schema, columns, partition_columns=partitions, num_indexed_cols=properties.num_indexed_cols,
                stats_columns=properties.stats_columns, operation=op),
        })


def _check_section(table: TableConfig, op_name: str, shape: _Shape, *, source: str | None) -> None:
    policy = table.policy(op_name)
    if policy is None:
        return
    for f in policy_fields(type(policy.options)):
        value, check = getattr(policy.options, f.name), shape.checks.get(f.spec.kind)
        if check is None or value is None or value == ():
            continue
        try:
            check(value, op_name)
        except ConfigError as exc:
            raise TableConfigError(str(exc), path=source, table=table.name, field=f"{op_name}.{f.policy_key}") \
                from None
    short = short_retention_error(policy.options, shape.properties, whose="the table's")
    if short is not None:
        raise TableConfigError(short[1], path=source, table=table.name, field=f"{op_name}.{short[0]}")


def _read_metadata(table: TableConfig) -> Metadata | None:
    """The table's current metadata, or ``None`` (logged) when it cannot be read now."""
    from delta_core.log.table import DeltaTable

    if isinstance(table.uri, EnvRef):
        log.info("table %r: uri comes from $%s at run time; schema checks skipped", table.name, table.uri.name)
        return None
    options: dict[str, Any] = {}
    for key, value in table.storage_options:
        if isinstance(value, EnvRef):
            if value.name not in os.environ:
                log.info("table %r: storage option %s needs $%s, unset here; schema checks skipped",
                         table.name, key, value.name)
                return None
            value = os.environ[value.name]
        options[key] = value
    try:
        return DeltaTable(table.uri, nested_options(options) or None).protocol_and_metadata()[1]
    except NotADeltaTableError:
        log.info("table %r: no Delta table at %s yet; schema checks skipped", table.name, table.uri)
    except Exception as exc:  # noqa: BLE001 - a probe: any store failure (s3fs raises botocore's, not
        # OSError) means "not checkable from here"; the table's runs check the same before any work
        log.warning("table %r: cannot read %s now (%s: %s); schema checks skipped", table.name, table.uri,
                    type(exc).__name__, exc)
    return None
