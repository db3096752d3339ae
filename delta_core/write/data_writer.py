"""Writing data files: Arrow rows -> Parquet files in the table -> ``add`` actions
(PROTOCOL.md "Data Files", "Add File and Remove File", "Per-file Statistics", "Partition Value
Serialization", "Column Mapping").

- Rows are conformed to the table schema first (same columns, compatible types, no nulls in
  non-nullable columns); anything else raises ``SchemaMismatchError`` before a byte is written.
- Partition values go to ``partitionValues`` serialised per the protocol, and files land in
  Hive-style directories (``a=1/b=x/``). The files hold the partition columns only where the
  table asks for it (``materialized_partitions``); otherwise they are not stored.
- Under column mapping the files carry physical column names (and Parquet field ids in ``id``
  mode), ``partitionValues`` and stats are keyed by physical names; in mode ``none`` leftover
  mapping metadata in the schema is ignored.
- Every file gets full stats (``stats_collect``), collected row group by row group.
- Files are streamed: ``DataFileWriter`` takes rows chunk by chunk (``write``, or ``write_all``
  for an iterable) and encodes each full row group straight into the table's ``Storage`` output
  stream (``parquet_stream``; same code path for local disk and object stores), so memory stays at
  about one row group however large the file. ``write_data_file`` is the one-table case.
  An ``add.path`` is the URI-encoded key relative to the table root.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import PartitionValueError, SchemaMismatchError
from delta_core.model.actions import Add, Metadata
from delta_core.model.arrow_kinds import is_list_like, same_primitive_kind
from delta_core.model.partition_values import partition_path, serialize_partition_value, url_encode_path
from delta_core.model.schema import StructField, StructType, schema_to_arrow, to_physical_path, without_column_mapping
from delta_core.model.stats_collect import StatsCollector, split_column_name
from delta_core.model.table_properties import TableProperties
from delta_core.storage.base import Storage
from delta_core.write.materialized_partitions import PartitionColumns
from delta_core.write.parquet_stream import ParquetStream
from delta_core.write.row_tracking import materialized_fields
from delta_core.write.void_columns import check_void_writable, drop_void, without_void


def _same_family(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        # timestamp (UTC) and timestamp_ntz are different Delta types: never mix them.
        return (a.tz is None) == (b.tz is None)
    if pa.types.is_null(a) or same_primitive_kind(a, b):
        return True
    return any(f(a) and f(b) for f in (is_list_like, pa.types.is_map, pa.types.is_struct))


def table_schema(metadata: Metadata) -> StructType:
    """The table schema as data files, ``partitionValues`` and stats name it: in column mapping
    mode ``none`` any leftover physical names and ids (Delta Spark leaves them behind after
    mapping is dropped) are ignored, so files and keys use logical names."""
    schema = StructType.from_json(metadata.schema_string)
    if TableProperties(metadata.configuration).column_mapping_mode == "none":
        return without_column_mapping(schema)
    return schema


def data_fields(metadata: Metadata, *, schema: StructType | None = None) -> list[StructField]:
    """Table fields stored in data files (everything except partition columns); ``schema`` is
    ``table_schema(metadata)`` when the caller has parsed it already."""
    parts = set(metadata.partition_columns)
    return [f for f in (schema if schema is not None else table_schema(metadata)).fields if f.name not in parts]


def _conform_column(name: str, col: pa.ChunkedArray, target: pa.Field) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if col.type != target.type:
        if not _same_family(col.type, target.type):
            raise SchemaMismatchError(
                f"column {name!r} has type {col.type} but the table stores {target.type}; "
                "cast the data to the table's type"
            )
        try:
            col = col.cast(target.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaMismatchError(
                f"column {name!r} ({col.type}) cannot be stored as {target.type}: {exc}"
            ) from exc
    if not target.nullable and col.null_count:
        raise SchemaMismatchError(
            f"column {name!r} is NOT NULL in the table but the data has {col.null_count} null(s)"
        )
    return col


def conform_to_schema(data: pa.Table, metadata: Metadata, *, keep_partition_columns: bool = True) -> pa.Table:
    """``data`` with the table's column order and logical Arrow types, or ``SchemaMismatchError``.

    Missing nullable columns are filled with nulls (as Delta does for appends); unknown
    columns and incompatible types are refused.
    """
    schema = table_schema(metadata)
    return _conform(data, schema, schema_to_arrow(schema), tuple(metadata.partition_columns),
                    keep_partition_columns=keep_partition_columns)


def _conform(
    data: pa.Table, schema: StructType, logical: pa.Schema, partition_columns: Sequence[str], *,
    keep_partition_columns: bool,
) -> pa.Table:
    known = {f.name for f in schema.fields}
    lower = {n.lower(): n for n in known}
    extra = [c for c in data.column_names if c not in known]
    if extra:
        hint = [f"{c!r} (did you mean {lower[c.lower()]!r}?)" for c in extra if c.lower() in lower]
        raise SchemaMismatchError(
            f"data has column(s) {extra} that the table does not have{' ' + ', '.join(hint) if hint else ''}; "
            "change the table schema first or drop the columns"
        )
    if len(set(data.column_names)) != len(data.column_names):
        raise SchemaMismatchError(f"data has duplicate column names: {data.column_names}")
    parts = set(partition_columns)
    arrays: list[pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for target in logical:
        if target.name in parts and not keep_partition_columns:
            continue
        if target.name in data.column_names:
            col = _conform_column(target.name, data.column(target.name), target)
        elif target.name in parts:
            raise PartitionValueError(
                f"data has no column for partition column {target.name!r}; every row needs a value "
                "(null is allowed) for each partition column"
            )
        elif target.nullable:
            col = pa.chunked_array([pa.nulls(data.num_rows, target.type)], type=target.type)
        else:
            raise SchemaMismatchError(f"data lacks column {target.name!r}, which is NOT NULL in the table")
        arrays.append(col)
        fields.append(target)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def to_physical(data: pa.Table, physical: pa.Schema) -> pa.Table:
    """Rename (nested) columns of ``data`` to the names of ``physical`` (the same columns in the same
    order, e.g. from ``schema_to_arrow(..., physical=True)``); buffers are reused, not copied."""
    if physical.names == data.column_names and all(
        p.type == c.type for p, c in zip(physical, data.columns)
    ):
        return pa.Table.from_arrays(data.columns, schema=physical)
    arrays = []
    for col, target in zip(data.columns, physical):
        # Same layout, only (nested) field names differ: a zero-copy view is enough.
        chunks = [chunk.view(target.type) for chunk in col.chunks]
        arrays.append(pa.chunked_array(chunks, type=target.type))
    return pa.Table.from_arrays(arrays, schema=physical)


def _serialise_partition_values(
    metadata: Metadata, partition_values: Mapping[str, Any], schema: StructType
) -> dict[str, str | None]:
    """Logical partition values (Python values or already-serialised strings) -> log form
    (``schema``: ``table_schema(metadata)``)."""
    out: dict[str, str | None] = {}
    missing = [c for c in metadata.partition_columns if c not in partition_values]
    if missing:
        raise PartitionValueError(
            f"partition value(s) missing for {missing}; pass a value (or None) for every "
            f"partition column {list(metadata.partition_columns)}"
        )
    unknown = [c for c in partition_values if c not in metadata.partition_columns]
    if unknown:
        raise PartitionValueError(f"{unknown} are not partition columns of this table")
    for name in metadata.partition_columns:
        f = schema[name]
        value = partition_values[name]
        try:
            text = serialize_partition_value(value, f.type)
        except (TypeError, ValueError) as exc:
            raise PartitionValueError(
                f"partition value {value!r} for {name!r} cannot be serialised: {exc}") from exc
        # Delta Spark stores an empty string partition value as null (same directory, same meaning).
        out[f.physical_name] = None if text == "" else text
    return out


def new_data_file_key(metadata: Metadata, partition_values: Mapping[str, Any], *, directory: str | None = None,
                      schema: StructType | None = None) -> str:
    """A fresh key for a new data file: ``directory`` (default: the Hive-style directory of the
    logical ``partition_values``) and a unique name. Callers that must be able to delete what a
    distributed write left behind pick keys with this before the write and pass them on.
    ``schema`` is ``table_schema(metadata)`` when the caller has parsed it already."""
    if directory is None:
        schema = schema if schema is not None else table_schema(metadata)
        cols = [schema[c].physical_name for c in metadata.partition_columns]
        directory = partition_path(cols, _serialise_partition_values(metadata, partition_values, schema)) \
            if cols else ""
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    return f"{directory.strip('/')}/{name}" if directory and directory.strip("/") else name


class DataFileWriter:
    """One new data file of the table, written chunk by chunk; ``close`` returns its ``add``.

    Every chunk (a ``Table`` or ``RecordBatch`` with logical names) is conformed to the table
    schema, renamed to physical names and streamed into Parquet (``ParquetStream``) while its
    stats are collected per row group (``StatsCollector``): memory stays at about one row group
    whatever the file's size. ``partition_values`` maps logical partition column names to Python
    values; partition columns present in a chunk are dropped from the file. ``key`` (from
    ``new_data_file_key``) fixes where the file goes; by default a fresh key is chosen.
    ``row_tracking_columns``: the file also stores row tracking's materialized row id and row
    commit version columns (``row_tracking.materialized_fields``; rewrites preserving stable ids).
    ``partition_columns``: the file also stores the partition columns, last, filled with
    ``partition_values`` and without stats (``materialized_partitions.stores_partition_columns``).
    ``schema`` is ``table_schema(metadata)`` when the caller has parsed it already.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        metadata: Metadata,
        partition_values: Mapping[str, Any],
        directory: str | None = None,
        data_change: bool = True,
        tags: Mapping[str, str] | None = None,
        row_group_rows: int | None = None,
        row_group_bytes: int | None = None,
        key: str | None = None,
        row_tracking_columns: bool = False,
        partition_columns: bool = False,
        schema: StructType | None = None,
    ) -> None:
        parsed = schema if schema is not None else table_schema(metadata)
        self._serialised = _serialise_partition_values(metadata, partition_values, parsed)
        self._schema = parsed
        self._logical = schema_to_arrow(self._schema)
        self._partition_columns = tuple(metadata.partition_columns)
        check_void_writable(self._schema, partition_columns=self._partition_columns)
        parts = set(self._partition_columns)
        self._stored = StructType(tuple(f for f in self._schema.fields if f.name not in parts))
        # void columns are never materialised in data files (nor in their stats)
        self._physical = schema_to_arrow(without_void(self._stored), physical=True)
        self._stats = file_stats_collector(metadata)
        hidden = materialized_fields(metadata) if row_tracking_columns else ()
        if hidden:
            # Row tracking's materialized columns are stored but hidden (not in the schema): the
            # chunks may carry them (nulls where absent); the stats above do not cover them.
            self._schema = StructType(self._schema.fields + hidden)
            self._logical = schema_to_arrow(self._schema)
            self._stored = StructType(self._stored.fields + hidden)
            self._physical = schema_to_arrow(without_void(self._stored), physical=True)
        self._in_file: PartitionColumns | None = None
        if partition_columns and self._partition_columns:
            # after the data (and hidden) columns, as Delta Spark writes them; no stats (the
            # collector above covers the data columns only)
            self._in_file = PartitionColumns([parsed[c] for c in self._partition_columns], self._serialised)
            self._stored = StructType(self._stored.fields + self._in_file.fields)
            self._physical = schema_to_arrow(without_void(self._stored), physical=True)
        self.key = key if key is not None else new_data_file_key(metadata, partition_values, directory=directory,
                                                                 schema=parsed)
        self._data_change = data_change
        self._tags = dict(tags) if tags else None
        self._stream = ParquetStream(storage, self.key, self._physical, row_group_rows=row_group_rows,
                                     row_group_bytes=row_group_bytes, on_row_group=self._stats.update)

    @property
    def num_row_groups(self) -> int:
        return self._stream.num_row_groups

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        conformed = _conform(data, self._schema, self._logical, self._partition_columns,
                             keep_partition_columns=False)
        if self._in_file is not None:
            conformed = self._in_file.append_to(conformed)
        self._stream.write(to_physical(drop_void(conformed, self._stored), self._physical))

    def close(self) -> Add:
        size = self._stream.close()
        return Add(
            path=url_encode_path(self.key),
            partition_values=self._serialised,
            size=size,
            modification_time=int(time.time() * 1000),
            data_change=self._data_change,
            stats=self._stats.json(),
            tags=self._tags,
        )

    def abort(self) -> None:
        self._stream.abort()

    def write_all(self, batches: Iterable[pa.Table | pa.RecordBatch]) -> Add:
        """Write ``batches`` (consumed one at a time) and close the file; return its ``add``. A
        failure part-way removes the file."""
        try:
            for batch in batches:
                self.write(batch)
            return self.close()
        except BaseException:
            self.abort()
            raise


def write_data_file(
    storage: Storage,
    data: pa.Table,
    *,
    metadata: Metadata,
    partition_values: Mapping[str, Any],
    directory: str | None = None,
    data_change: bool = True,
    tags: Mapping[str, str] | None = None,
    partition_columns: bool = False,
) -> Add:
    """Write one Parquet file for rows that all share ``partition_values``; return its ``add``.

    ``partition_values`` maps logical partition column names to Python values. Partition
    columns present in ``data`` are dropped from the file, unless ``partition_columns`` asks to
    store them (as for ``DataFileWriter``).
    """
    writer = DataFileWriter(storage, metadata=metadata, partition_values=partition_values, directory=directory,
                            data_change=data_change, tags=tags, partition_columns=partition_columns)
    return writer.write_all([data])


def write_parquet(storage: Storage, key: str, data: pa.Table) -> int:
    """Write ``data`` as one Parquet file at ``key``; returns its size in bytes."""
    stream = ParquetStream(storage, key, data.schema)
    try:
        stream.write(data)
        return stream.close()
    except BaseException:
        stream.abort()
        raise


def file_stats_collector(metadata: Metadata) -> StatsCollector:
    """A fresh ``StatsCollector`` for one data file of the table, as our writer keeps stats: over
    the stored columns (no partition or void column) by physical name, for the leaves
    ``delta.dataSkippingStatsColumns`` or ``delta.dataSkippingNumIndexedCols`` select."""
    schema = table_schema(metadata)
    parts = set(metadata.partition_columns)
    stored = StructType(tuple(f for f in schema.fields if f.name not in parts))
    props = TableProperties(metadata.configuration)
    return StatsCollector(schema_to_arrow(without_void(stored), physical=True), num_indexed_cols=props.num_indexed_cols,
                          stats_columns=_physical_stats_columns(schema, props))


def _physical_stats_columns(schema: StructType, props: TableProperties) -> list[str] | None:
    cols = props.stats_columns
    if cols is None:
        return None
    out: list[str] = []
    for c in cols:
        try:
            out.append(".".join(f"`{p}`" for p in to_physical_path(schema, split_column_name(c))))
        except KeyError:
            continue  # a stats column that no longer exists collects nothing
    return out


def _split_rows(data: pa.Table, target_file_size: int | None) -> list[pa.Table]:
    if not target_file_size or data.num_rows == 0 or data.nbytes <= target_file_size:
        return [data]
    per_row = max(1, data.nbytes // data.num_rows)
    rows = max(1, target_file_size // per_row)
    return [data.slice(i, rows) for i in range(0, data.num_rows, rows)]


def partition_groups(data: pa.Table, columns: Sequence[str]) -> list[tuple[dict[str, Any], pa.Table]]:
    """Split rows by the values of ``columns``: [(values, rows)], in value order."""
    if not columns:
        return [({}, data)]
    if data.num_rows == 0:
        return []
    keys = data.select(list(columns))
    order = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in columns])
    sorted_data = data.take(order)
    sorted_keys = sorted_data.select(list(columns))
    # Run boundaries: a row starts a new group when any key differs from the previous row.
    change = None
    for c in columns:
        col = sorted_keys.column(c).combine_chunks()
        prev, cur = col.slice(0, len(col) - 1), col.slice(1)
        differs = pc.fill_null(pc.not_equal(prev, cur), True)
        both_null = pc.and_(prev.is_null(), cur.is_null())
        differs = pc.and_(differs, pc.invert(both_null))
        change = differs if change is None else pc.or_(change, differs)
    starts = [0] + [i + 1 for i in pc.indices_nonzero(change).to_pylist()] if change is not None else [0]
    bounds = starts + [sorted_data.num_rows]
    out: list[tuple[dict[str, Any], pa.Table]] = []
    for lo, hi in zip(bounds, bounds[1:]):
        rows = sorted_data.slice(lo, hi - lo)
        values = {c: rows.column(c)[0].as_py() for c in columns}
        out.append((values, rows))
    return out


def write_table_data(
    storage: Storage,
    data: pa.Table,
    *,
    metadata: Metadata,
    target_file_size: int | None = None,
    data_change: bool = True,
    on_file: Callable[[Add], None] | None = None,
    partition_columns: bool = False,
) -> list[Add]:
    """Write ``data`` (logical names) as one or more files per partition; return the adds.

    ``on_file`` sees each file as soon as it exists, so a caller can clean up after a failure
    half-way (``Transaction.track_written_file``); ``partition_columns`` as for ``DataFileWriter``.
    """
    conformed = conform_to_schema(data, metadata)
    adds: list[Add] = []
    if target_file_size is None:
        target_file_size = TableProperties(metadata.configuration).target_file_size
    if conformed.num_rows == 0:
        return adds  # no rows, no files: an empty commit still records the operation
    for values, rows in partition_groups(conformed, list(metadata.partition_columns)):
        for chunk in _split_rows(rows, target_file_size):
            add = write_data_file(storage, chunk, metadata=metadata, partition_values=values,
                                  data_change=data_change, partition_columns=partition_columns)
            if on_file is not None:
                on_file(add)
            adds.append(add)
    return adds


__all__ = [
    "DataFileWriter", "conform_to_schema", "data_fields", "partition_groups", "table_schema",
    "write_data_file", "write_parquet", "write_table_data",
]
