"""The maintenance history as a Delta table: its schema, appending rows, reading them back.

Its columns are Databricks Predictive Optimization's operations history (start and end time,
table, operation, status, a metrics map) and what this platform knows beside them
(``history_records.HistoryRow``). Rows are blind appends through ``delta_core``'s own
transactions (PROTOCOL.md "Add File and Remove File": an append reads no data, so concurrent
appends never conflict), so any Delta reader sees a row as soon as its commit lands. The table is
created by its first row; it is a table like any other, compacted, checkpointed and vacuumed.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from delta_core.errors import InvalidTransactionError, NotADeltaTableError
from delta_core.maintenance.history_records import HistoryLocation, HistoryRow, same_location

_TIME = pa.timestamp("us", tz="UTC")
HISTORY_SCHEMA = pa.schema([
    pa.field("start_time", _TIME, nullable=False),
    pa.field("end_time", _TIME, nullable=False),
    pa.field("table_name", pa.string()),  # its name in tables.yaml; null: given by URI only
    pa.field("table_uri", pa.string(), nullable=False),
    pa.field("operation", pa.string(), nullable=False),  # the registry entry's name
    pa.field("status", pa.string(), nullable=False),  # SUCCEEDED or FAILED
    pa.field("trigger", pa.string(), nullable=False),  # one of TRIGGERS
    pa.field("dagster_run_id", pa.string()),
    pa.field("version", pa.int64()),  # the version the run committed; null: none
    pa.field("files_read", pa.int64(), nullable=False),
    pa.field("bytes_read", pa.int64(), nullable=False),
    pa.field("files_written", pa.int64(), nullable=False),
    pa.field("bytes_written", pa.int64(), nullable=False),
    pa.field("health_before", pa.int32()),
    pa.field("health_after", pa.int32()),
    pa.field("health_note", pa.string()),  # why a health score is null
    pa.field("error_kind", pa.string()),  # DeltaError.kind, or the exception's class
    pa.field("error_message", pa.string()),
    pa.field("core_seconds", pa.float64(), nullable=False),
    pa.field("operation_metrics", pa.map_(pa.string(), pa.string())),  # the report's scalar fields
])


def rows_table(rows: list[HistoryRow]) -> pa.Table:
    """``rows`` as an Arrow table of ``HISTORY_SCHEMA``."""
    columns: dict[str, list[Any]] = {name: [getattr(r, name) for r in rows] for name in HISTORY_SCHEMA.names}
    columns["operation_metrics"] = [list(r.operation_metrics.items()) for r in rows]
    return pa.Table.from_pydict(columns, schema=HISTORY_SCHEMA)


def append_rows(location: HistoryLocation, rows: list[HistoryRow]) -> int:
    """Append ``rows`` in one commit (creating the table first when it does not exist yet);
    the version committed."""
    from delta_core.write.table_writes import append, create_table  # deferred: the CLI's --help

    table = location.open()
    try:
        table.snapshot()
    except NotADeltaTableError:
        try:
            create_table(location.uri, HISTORY_SCHEMA, storage_options=dict(location.storage_options) or None,
                         name="maintenance_history", description="One row per maintenance run (delta_core).")
        except InvalidTransactionError:  # another run created it first: append to theirs
            pass
        table = location.open()
    return append(table, rows_table(rows)).version


def read_rows(location: HistoryLocation, *, table: str | None = None, limit: int | None = None) -> list[HistoryRow]:
    """The recorded runs, newest first (``table``: of the table of that name or URI only;
    ``limit``: the newest that many). A table not created yet holds none."""
    from delta_core.maintenance.data_io import read_data_file  # deferred: pyarrow.parquet and numpy

    try:
        snapshot = location.open().snapshot()
    except NotADeltaTableError:
        return []
    parts = [read_data_file(snapshot.storage, add.path, snapshot.metadata, size=add.size,
                            deletion_vector=add.deletion_vector) for add in snapshot.add_actions()]
    rows = [_row(r) for part in parts for r in part.to_pylist()]
    if table is not None:
        rows = [r for r in rows if r.table_name == table or same_location(r.table_uri, table)]
    rows.sort(key=lambda r: r.end_time, reverse=True)
    return rows[:limit] if limit is not None else rows


def _row(values: dict[str, Any]) -> HistoryRow:
    known: dict[str, Any] = {name: values.get(name) for name in HISTORY_SCHEMA.names}
    known["operation_metrics"] = dict(known["operation_metrics"] or [])
    return HistoryRow(**known)

