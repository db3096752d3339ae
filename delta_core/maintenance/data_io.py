"""Reading and rewriting data files inside Spark tasks, with pyarrow over ``delta_core.storage``.

The executors of compaction and Z-order call these functions; nothing here imports Spark.

- ``DataFileReader`` (and ``read_data_file``) opens files of the table (paths as found in the
  log) and returns their rows with the table's *logical* column names and types: under column
  mapping the files hold physical names (nested too), which are mapped back here so that the
  writer can map them forward again (in mode ``id`` columns are found by Parquet field id at
  every depth, ``field_ids``; a file without field ids is refused); columns added to the schema
  after a file was written come back as nulls; widened types (PROTOCOL.md "Type Widening") and
  other timestamp units are cast to the table's type (a column holding another kind of value is
  refused: ``type_widening.readable_as``), and INT96 timestamps are decoded at microseconds, so rewrites write them
  as the protocol's ``timestamp`` (PROTOCOL.md "Primitive Types": microseconds,
  ``isAdjustedToUTC`` true). Variants are read by field name, ``value`` and ``metadata`` in either
  order; shredded ones are rebuilt unshredded first (``variant_shredding``), so files of one table
  with different shredding schemas read alike and rewrites never shred; any other layout is
  refused rather than cast (``model.variant``).
  Partition columns are not stored in files and are not returned. A file's deletion vector
  (PROTOCOL.md "Deletion Vectors", read by ``delta_core.log.deletion_vectors``) is applied:
  the rows at the physical indexes it marks are dropped, in whole-file reads and row-group
  chunks alike (a running physical row offset places each chunk). On request each chunk also
  carries the physical row index of every kept row (``row_index_column``), which row tracking
  needs (PROTOCOL.md "Row Tracking": a row's id is ``baseRowId`` + its physical index). A file up to
  ``WHOLE_FILE_BYTES`` is fetched in one request and decoded from memory (small files are
  latency-bound, and one read beats the footer-then-columns round trips); a larger one is read
  row group by row group.
- ``rewrite_files`` streams a bin of files of one partition into one new file with
  ``dataChange=false``, carrying the partition values exactly as the log had them: a few threads
  fetch and decode the next files (at most ``READ_AHEAD_BYTES`` ahead) while the writer encodes
  full row groups, so neither the inputs nor the output are ever held whole in memory.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.errors import DeletionVectorError, MaintenanceError
from delta_core.log.deletion_vectors import read_deletion_vector
from delta_core.maintenance.field_ids import FieldIdResolver
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.model.actions import Add, DeletionVectorDescriptor, Metadata
from delta_core.model.partition_values import deserialize_partition_value
from delta_core.model.schema import DataType, StructType, schema_to_arrow
from delta_core.model.table_properties import TableProperties
from delta_core.model.type_widening import readable_as
from delta_core.model.variant import has_variant, stored_layout_problem
from delta_core.model.variant_shredding import has_shredded, unshred_column
from delta_core.storage.base import Storage
from delta_core.write.data_writer import DataFileWriter, data_fields, new_data_file_key, table_schema
from delta_core.write.row_tracking import FileRowIds, materialized_columns, materialized_fields, stable_row_tracking

# Reader threads per bin. Object-store reads are latency-bound, so many requests in flight pay;
# local (and in-memory) reads are CPU-bound decoding, which runs beside the writer on a thread or
# two, and every extra thread costs allocator arenas for nothing.
READ_THREADS = 8
LOCAL_READ_THREADS = 2
READ_AHEAD_BYTES = 16 * 1024 * 1024  # input bytes fetched ahead of the writer
WHOLE_FILE_BYTES = 32 * 1024 * 1024  # files up to this size are fetched in one request
# INT96 timestamps (Spark's default for years) hold any date from year 1 to 9999; pyarrow decodes
# them as nanoseconds by default, which overflows outside 1677-2262 (the values wrap silently).
# Microseconds are the protocol's own precision and cover the whole range.
INT96_UNIT = "us"


def logical_data_schema(metadata: Metadata, *, row_tracking: bool = False,
                        schema: StructType | None = None) -> pa.Schema:
    """Arrow schema (logical names) of what data files hold: all but the partition columns (and,
    with ``row_tracking``, the table's materialized row tracking columns, when it has them)."""
    hidden = materialized_fields(metadata) if row_tracking else ()
    return schema_to_arrow(StructType(tuple(data_fields(metadata, schema=schema)) + hidden))


class DataFileReader:
    """Reads data files of a table with the given ``metadata`` as logical rows (only the
    top-level ``columns`` given, logical names, when set). Schemas are derived once.

    Every read method takes the file's ``deletion_vector`` (the descriptor of its live ``add``;
    ``None``: no vector) and drops the rows it deletes. ``row_index_column``, when set, is the
    name of an int64 column appended last to every chunk (and to ``schema``): the *physical*
    index in its file (0-based, deleted rows counted) of each row returned.

    ``row_ids`` (path as in the log -> the file's ``FileRowIds``) asks for rows' stable row ids
    and row commit versions when the table has row tracking enabled: every chunk then also holds
    the table's materialized row tracking columns (hidden, not in the schema; after the data
    columns), filled per ``row_tracking.stable_row_tracking``, so a rewrite that writes them
    keeps each row's ids. On other tables it changes nothing.

    ``schema`` is ``table_schema(metadata)`` when the caller parsed it already (a rewrite parses
    it once on the driver and ships it with every task)."""

    def __init__(self, storage: Storage, metadata: Metadata, *, columns: Sequence[str] | None = None,
                 row_index_column: str | None = None, row_ids: Mapping[str, FileRowIds] | None = None,
                 schema: StructType | None = None) -> None:
        self.storage = storage
        fields = StructType(tuple(data_fields(metadata, schema=schema)))
        physical, logical = schema_to_arrow(fields, physical=True), schema_to_arrow(fields)
        if columns is not None:
            keep = [i for i, f in enumerate(logical) if f.name in set(columns)]
            physical = pa.schema([physical.field(i) for i in keep])
            logical = pa.schema([logical.field(i) for i in keep])
        # In id mode a file's columns are found by Parquet field id, not by name (row tracking's
        # hidden columns have no id: they are found by name).
        id_mode = TableProperties(metadata.configuration).column_mapping_mode == "id"
        self._ids = FieldIdResolver(physical, table=storage.root) if id_mode else None
        self._tracking = materialized_columns(metadata) if row_ids is not None else None
        self._row_ids = row_ids if self._tracking is not None else None
        if self._tracking is not None:
            hidden = schema_to_arrow(StructType(materialized_fields(metadata)))
            physical = pa.schema(list(physical) + list(hidden))
            logical = pa.schema(list(logical) + list(hidden))
        self.physical = physical
        self.logical = logical
        # Delta types (physical names) of the columns holding variants, to check files' layout
        self._variants = {f.name: f.type for f in fields.physical() if has_variant(f.type)}
        self._data_schema = pa.schema([f.with_nullable(True) for f in logical])
        self.schema = self._data_schema
        self.row_index_column = row_index_column
        if row_index_column is not None:
            self.schema = self.schema.append(pa.field(row_index_column, pa.int64(), nullable=False))

    def read(self, path: str, *, size: int | None = None,
             deletion_vector: DeletionVectorDescriptor | None = None) -> pa.Table:
        """All live rows of the file at ``path`` (as in the log)."""
        chunks = list(self.chunks(path, size=size, deletion_vector=deletion_vector))
        if len(chunks) == 1:
            return chunks[0]
        return pa.concat_tables(chunks) if chunks else self.schema.empty_table()

    def chunks(self, path: str, *, size: int | None = None,
               deletion_vector: DeletionVectorDescriptor | None = None) -> Iterator[pa.Table]:
        """The live rows of the file at ``path``: the whole file at once when it is small, else
        one row group at a time. ``size`` (bytes, as in the log) saves a metadata request."""
        key = log_path_to_key(path, self.storage.root)
        ids = self._file_row_ids(path)
        # Read the vector first: a missing or corrupt one fails before any row is handed on.
        deleted = _deleted_rows(self.storage, deletion_vector)
        if size is None:
            size = self.storage.head(key).size
        start = 0  # physical index of the chunk's first row in the file
        if size <= WHOLE_FILE_BYTES:
            pf = pq.ParquetFile(pa.BufferReader(pa.py_buffer(self.storage.read(key))),
                                coerce_int96_timestamp_unit=INT96_UNIT)
            wanted = self._wanted(pf, key)
            raw = pf.read(columns=wanted, use_threads=False)
            yield self._live(self._to_logical(raw, wanted, key), start, deleted, ids, key)
            start += raw.num_rows
        else:
            with self.storage.open_input(key) as fh:
                pf = pq.ParquetFile(fh, pre_buffer=True, coerce_int96_timestamp_unit=INT96_UNIT)
                wanted = self._wanted(pf, key)
                if pf.num_row_groups == 0:
                    yield self._live(self._to_logical(pf.schema_arrow.empty_table().select(wanted), wanted, key),
                                     start, deleted, ids, key)
                for i in range(pf.num_row_groups):
                    raw = pf.read_row_group(i, columns=wanted, use_threads=False)
                    yield self._live(self._to_logical(raw, wanted, key), start, deleted, ids, key)
                    start += raw.num_rows
        if deleted is not None and len(deleted) and int(deleted[-1]) >= start:
            # The vector names rows the file does not have: it belongs to another file.
            raise DeletionVectorError(
                f"the deletion vector of {self.storage.uri(key)} deletes row {int(deleted[-1])}, but the file "
                f"has {start} rows: the vector or the file is not the one the log means",
                path=self.storage.uri(key))

    @property
    def row_ids(self) -> Mapping[str, FileRowIds] | None:
        """The inputs' row ids when chunks carry stable row ids (row tracking enabled), else None."""
        return self._row_ids

    def _file_row_ids(self, path: str) -> FileRowIds | None:
        if self._row_ids is None:
            return None
        ids = self._row_ids.get(path)
        if ids is None:
            raise MaintenanceError(f"no row ids were given for {path!r}, an input of this rewrite of a "
                                   "row-tracking table; pass every input's FileRowIds", path=self.storage.root)
        return ids

    def _live(self, chunk: pa.Table, start: int, deleted: np.ndarray | None, ids: FileRowIds | None = None,
              key: str = "") -> pa.Table:
        """``chunk`` (physical rows ``start``...) without the deleted rows, with the row index
        column when asked for and stable row ids filled in when ``ids`` are given."""
        n = chunk.num_rows
        if ids is not None and self._tracking is not None:
            chunk = stable_row_tracking(chunk, pa.array(np.arange(start, start + n, dtype=np.int64)), ids,
                                        columns=self._tracking, file=self.storage.uri(key))
        keep: np.ndarray | None = None
        if deleted is not None:
            lo, hi = np.searchsorted(deleted, [start, start + n])
            if hi > lo:
                keep = np.ones(n, dtype=bool)
                keep[deleted[lo:hi] - start] = False
        if self.row_index_column is not None:
            chunk = chunk.append_column(self.schema.field(self.row_index_column),
                                        pa.array(np.arange(start, start + n, dtype=np.int64)))
        return chunk.filter(pa.array(keep)) if keep is not None else chunk

    def read_ahead(self, paths: Sequence[str], sizes: Sequence[int | None] | None = None,
                   deletion_vectors: Sequence[DeletionVectorDescriptor | None] | None = None) -> Iterator[pa.Table]:
        """The live rows of ``paths`` in order (``sizes`` and ``deletion_vectors`` aligned with
        them), chunk by chunk; up to ``READ_AHEAD_BYTES`` of the next small files are fetched and
        decoded on a few threads meanwhile."""
        sizes = list(sizes) if sizes is not None else [None] * len(paths)
        dvs = list(deletion_vectors) if deletion_vectors is not None else [None] * len(paths)
        local = self.storage.root.startswith(("file:", "memory:"))
        threads = LOCAL_READ_THREADS if local else READ_THREADS
        pool = ThreadPoolExecutor(max_workers=max(1, min(threads, len(paths))))
        queue: deque[tuple[str, int | None, DeletionVectorDescriptor | None, Future[pa.Table] | None]] = deque()
        ahead = 0  # bytes of the small files submitted and not yet handed on
        try:
            for path, size, dv in zip(paths, sizes, dvs):
                if size is None or size > WHOLE_FILE_BYTES:
                    queue.append((path, size, dv, None))  # read in turn, row group by row group
                    continue
                while queue and ahead + size > READ_AHEAD_BYTES:
                    ahead -= yield from self._take(queue.popleft())
                queue.append((path, size, dv, pool.submit(self.read, path, size=size, deletion_vector=dv)))
                ahead += size
            while queue:
                yield from self._take(queue.popleft())
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _take(
        self, entry: tuple[str, int | None, DeletionVectorDescriptor | None, Future[pa.Table] | None],
    ) -> Generator[pa.Table, None, int]:
        """Yield one queued file's rows; returns the read-ahead bytes it released."""
        path, size, dv, future = entry
        if future is None:
            yield from self.chunks(path, size=size, deletion_vector=dv)
            return 0
        yield future.result()
        return size or 0

    def _wanted(self, pf: pq.ParquetFile, key: str) -> list[str]:
        if self._ids is not None:
            hidden = [n for n in self._tracking or () if n in pf.schema_arrow.names]
            return self._ids.file_columns(pf.schema_arrow, file=self.storage.uri(key)) + hidden
        present = set(pf.schema_arrow.names)
        return [f.name for f in self.physical if f.name in present]

    def _to_logical(self, raw: pa.Table, wanted: Sequence[str], key: str) -> pa.Table:
        if self._ids is not None:  # file names -> the table's physical names, by field id
            aligned = self._ids.align(raw, file=self.storage.uri(key))
            for name in self._tracking or ():  # hidden columns: by name
                if name in raw.column_names:
                    aligned = aligned.append_column(raw.schema.field(name), raw.column(name))
            raw = aligned
            wanted = raw.column_names
        present = set(wanted)
        arrays = []
        for phys, logi in zip(self.physical, self.logical):
            if phys.name in present:
                col = raw.column(phys.name)
                if pa.types.is_dictionary(col.type):
                    col = col.cast(col.type.value_type)
                if has_shredded(col.type):  # PROTOCOL.md "Variant Shredding": rewrites write unshredded
                    col = unshred_column(col, phys.type)
                if col.type != phys.type:
                    if phys.name in self._variants:
                        self._check_variant_layout(self._variants[phys.name], col.type, logi.name, key)
                    if not readable_as(col.type, phys.type):
                        raise MaintenanceError(
                            f"column {logi.name!r} of {self.storage.uri(key)} holds {col.type} values, but the "
                            f"table's schema says {phys.type} and {col.type} is neither a layout of it nor a type "
                            "it widens from (PROTOCOL.md \"Type Widening\"): the file and the schema disagree, so "
                            "this rewrite stops with nothing written. Find the commit that added the file "
                            "(delta-core history) and ask its writer's maintainers; the table is unchanged",
                            path=self.storage.root)
                    try:
                        col = col.cast(phys.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise MaintenanceError(
                            f"column {logi.name!r} of {self.storage.uri(key)} is {col.type}, which cannot be "
                            f"read as the table's {phys.type}: {exc}", path=self.storage.root,
                        ) from exc
                if phys.type != logi.type:  # nested physical names -> logical: same layout
                    col = pa.chunked_array([c.view(logi.type) for c in col.chunks], type=logi.type)
            else:
                col = pa.chunked_array([pa.nulls(raw.num_rows, logi.type)], type=logi.type)
            arrays.append(col)
        return pa.Table.from_arrays(arrays, schema=self._data_schema)

    def _check_variant_layout(self, delta_type: DataType, stored: pa.DataType, column: str, key: str) -> None:
        """Refuse a file whose variants are not unshredded (a cast would drop shredded values)."""
        why = stored_layout_problem(delta_type, stored, column=column)
        if why is not None:
            raise MaintenanceError(
                f"{self.storage.uri(key)}: {why}; this rewrite stops with nothing written. Maintain the "
                "table with a Delta engine that reads shredded variants (e.g. Delta Spark 4)",
                path=self.storage.root)


def _deleted_rows(storage: Storage, dv: DeletionVectorDescriptor | None) -> np.ndarray | None:
    """The sorted physical row indexes ``dv`` deletes (``None`` without a vector)."""
    if dv is None:
        return None
    # int64: row indexes fit, and arithmetic with Python ints stays integral (uint64 would not)
    return np.frombuffer(read_deletion_vector(storage, dv).to_array(), dtype=np.uint64).astype(np.int64)


def read_data_file(
    storage: Storage, path: str, metadata: Metadata, *, columns: Sequence[str] | None = None,
    size: int | None = None, deletion_vector: DeletionVectorDescriptor | None = None,
) -> pa.Table:
    """The live rows of the data file at ``path`` (as in the log; ``deletion_vector`` applied),
    logical names, no partition columns; only the top-level ``columns`` given (logical names) when set."""
    return DataFileReader(storage, metadata, columns=columns).read(path, size=size, deletion_vector=deletion_vector)


def logical_partition_values(metadata: Metadata, partition_values: Mapping[str, str | None], *,
                             schema: StructType | None = None) -> dict[str, Any]:
    """``partitionValues`` as the log holds them (physical keys, strings) -> logical name: value
    (``schema``: ``table_schema(metadata)``, when parsed already)."""
    schema = schema if schema is not None else table_schema(metadata)
    out: dict[str, Any] = {}
    for name in metadata.partition_columns:
        f = schema[name]
        text = partition_values.get(f.physical_name, partition_values.get(name))
        out[name] = deserialize_partition_value(text, f.type, column=name)
    return out


def rewrite_output_key(metadata: Metadata, partition_values: Mapping[str, str | None], *,
                       schema: StructType | None = None) -> str:
    """A fresh key for a rewrite's new file in the partition whose ``partitionValues`` (as the log
    holds them) are given. The driver picks every key before the tasks write, so it can delete
    whatever a failed batch wrote without listing the table. ``schema``: ``table_schema(metadata)``,
    when parsed already."""
    schema = schema if schema is not None else table_schema(metadata)
    return new_data_file_key(metadata, logical_partition_values(metadata, partition_values, schema=schema),
                             schema=schema)


def write_rewritten(
    storage: Storage,
    data: pa.Table | Iterable[pa.Table | pa.RecordBatch],
    *,
    metadata: Metadata,
    partition_values: Mapping[str, str | None],
    key: str | None = None,
    schema: StructType | None = None,
    partition_columns: bool = False,
) -> Add:
    """Write rows of one partition (a table, or chunks streamed in order) as a new file with
    ``dataChange=false`` (at ``key`` when given, from ``rewrite_output_key``); the ``add`` keeps
    the exact ``partitionValues`` strings of the files it replaces. On a table with row tracking
    enabled the file also stores the materialized row tracking columns the rows carry (read with
    ``DataFileReader(row_ids=...)``), so rows keep their stable ids. ``schema``:
    ``table_schema(metadata)``, when parsed already. ``partition_columns``: the file also holds
    the partition columns (``materialized_partitions.stores_partition_columns``)."""
    chunks = [data] if isinstance(data, pa.Table) else data
    writer = DataFileWriter(
        storage, metadata=metadata,
        partition_values=logical_partition_values(metadata, partition_values, schema=schema), data_change=False,
        key=key, row_tracking_columns=True, partition_columns=partition_columns, schema=schema,
    )
    add = writer.write_all(chunks)
    return dataclasses.replace(add, partition_values=dict(partition_values))


def rewrite_files(
    storage: Storage,
    paths: Sequence[str],
    *,
    metadata: Metadata,
    partition_values: Mapping[str, str | None],
    sizes: Sequence[int | None] | None = None,
    reader: DataFileReader | None = None,
    key: str | None = None,
    deletion_vectors: Sequence[DeletionVectorDescriptor | None] | None = None,
    row_ids: Mapping[str, FileRowIds] | None = None,
    schema: StructType | None = None,
    partition_columns: bool = False,
) -> Add | None:
    """Stream the live rows of ``paths`` (files of one partition; ``sizes`` and
    ``deletion_vectors`` as in the log, when known) into one new file with ``dataChange=false``
    and no deletion vector (at ``key`` when given); returns its ``add``, whose stats count the
    rows written, or ``None`` when the inputs have no live row (no empty file is left). Row order follows ``paths``. ``reader`` (for this table's ``metadata``)
    replaces the default one, e.g. to summarise inputs; ``row_ids`` (``row_tracking.input_row_ids``)
    are the default reader's, to keep rows' stable ids (a given ``reader`` must have them);
    ``schema``: ``table_schema(metadata)``, when parsed already; ``partition_columns`` as for
    ``write_rewritten``."""
    reader = reader if reader is not None else DataFileReader(storage, metadata, row_ids=row_ids, schema=schema)
    if reader.row_ids is None and materialized_columns(metadata) is not None:
        # Without them every row would silently get a new stable id: refuse before writing.
        raise MaintenanceError(
            "the table has row tracking enabled, so a rewrite must keep each row's stable row id: "
            "read the inputs with their row ids (row_ids=row_tracking.input_row_ids(snapshot, paths))",
            path=storage.root)
    add = write_rewritten(storage, reader.read_ahead(paths, sizes, deletion_vectors), metadata=metadata,
                          partition_values=partition_values, key=key, schema=schema,
                          partition_columns=partition_columns)
    if json.loads(add.stats or "{}").get("numRecords") == 0:
        # Deletion vectors deleted every input row: the inputs are removed and nothing replaces them.
        storage.delete(log_path_to_key(add.path, storage.root))
        return None
    return add
