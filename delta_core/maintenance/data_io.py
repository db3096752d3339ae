"""Reading and rewriting data files inside Spark tasks, with pyarrow over ``delta_core.storage``.

The executors of compaction and Z-order call these functions; nothing here imports Spark.

- ``read_data_file`` opens one file of the table (a path as found in the log), and returns its
  rows with the table's *logical* column names and types: under column mapping the file holds
  physical names (nested too), which are mapped back here so that ``write_data_file`` can map
  them forward again; columns added to the schema after the file was written come back as
  nulls; widened types and other timestamp units are cast to the table's type. Partition
  columns are not stored in files and are not returned.
- ``rewrite_files`` reads a bin of files of one partition and writes them as one new file with
  ``dataChange=false``, carrying the partition values exactly as the log had them.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.actions import Add, Metadata
from delta_core.data_writer import data_fields, table_schema, write_data_file
from delta_core.errors import MaintenanceError
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.partition_values import deserialize_partition_value
from delta_core.schema import StructType, schema_to_arrow
from delta_core.storage.base import Storage


READ_THREADS = 8


def logical_data_schema(metadata: Metadata) -> pa.Schema:
    """Arrow schema (logical names) of what data files hold: all but the partition columns."""
    return schema_to_arrow(StructType(tuple(data_fields(metadata))))


def _physical_and_logical(metadata: Metadata) -> tuple[pa.Schema, pa.Schema]:
    fields = StructType(tuple(data_fields(metadata)))
    return schema_to_arrow(fields, physical=True), schema_to_arrow(fields)


def read_data_file(
    storage: Storage, path: str, metadata: Metadata, *, columns: Sequence[str] | None = None,
) -> pa.Table:
    """The rows of the data file at ``path`` (as in the log), logical names, no partition columns;
    only the top-level ``columns`` given (logical names) when set."""
    key = log_path_to_key(path, storage.root)
    physical, logical = _physical_and_logical(metadata)
    if columns is not None:
        keep = [i for i, f in enumerate(logical) if f.name in set(columns)]
        physical = pa.schema([physical.field(i) for i in keep])
        logical = pa.schema([logical.field(i) for i in keep])
    with storage.open_input(key) as fh:
        pf = pq.ParquetFile(fh)
        present = set(pf.schema_arrow.names)
        wanted = [f.name for f in physical if f.name in present]
        raw = pf.read(columns=wanted)
    arrays = []
    for phys, logi in zip(physical, logical):
        if phys.name in present:
            col = raw.column(phys.name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            if col.type != phys.type:
                try:
                    col = col.cast(phys.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise MaintenanceError(
                        f"column {logi.name!r} of {storage.uri(key)} is {col.type}, which cannot be "
                        f"read as the table's {phys.type}: {exc}", path=storage.root,
                    ) from exc
            if phys.type != logi.type:  # nested physical names -> logical: same layout
                col = pa.chunked_array([c.view(logi.type) for c in col.chunks], type=logi.type)
        else:
            col = pa.chunked_array([pa.nulls(raw.num_rows, logi.type)], type=logi.type)
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema([f.with_nullable(True) for f in logical]))


def logical_partition_values(metadata: Metadata, partition_values: Mapping[str, str | None]) -> dict[str, Any]:
    """``partitionValues`` as the log holds them (physical keys, strings) -> logical name: value."""
    schema = table_schema(metadata)
    out: dict[str, Any] = {}
    for name in metadata.partition_columns:
        f = schema[name]
        text = partition_values.get(f.physical_name, partition_values.get(name))
        out[name] = deserialize_partition_value(text, f.type, column=name)
    return out


def write_rewritten(
    storage: Storage,
    data: pa.Table,
    *,
    metadata: Metadata,
    partition_values: Mapping[str, str | None],
) -> Add:
    """Write rows of one partition as a new file with ``dataChange=false``; the ``add`` keeps the
    exact ``partitionValues`` strings of the files it replaces."""
    add = write_data_file(
        storage, data, metadata=metadata,
        partition_values=logical_partition_values(metadata, partition_values), data_change=False,
    )
    return dataclasses.replace(add, partition_values=dict(partition_values))


def rewrite_files(
    storage: Storage,
    paths: Sequence[str],
    *,
    metadata: Metadata,
    partition_values: Mapping[str, str | None],
) -> Add:
    """Read ``paths`` (files of one partition) and write them as one file; returns its ``add``.

    Files are read on a few threads: small-file reads are latency-bound (object stores above
    all) and pyarrow decodes without holding the GIL. Row order follows ``paths``.
    """
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(paths)))) as pool:
        tables = list(pool.map(lambda p: read_data_file(storage, p, metadata), paths))
    data = pa.concat_tables(tables) if tables else logical_data_schema(metadata).empty_table()
    return write_rewritten(storage, data, metadata=metadata, partition_values=partition_values)
