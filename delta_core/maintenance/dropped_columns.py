"""Data files that still hold columns the table schema has dropped (column mapping).

PROTOCOL.md "Column Mapping": under column mapping a column is dropped from the schema without
rewriting any data file; the files keep its values under its physical name (or field id), and
readers skip them because the schema no longer names them. Delta Spark's ``REORG TABLE ...
APPLY (PURGE)`` rewrites such files so the values really go (``DeltaPurgeOperation`` /
``ReorgTableHelper.fileHasExtraColumns``): a file needs it when its Parquet schema holds a field,
at any depth, that the table's physical schema does not, the materialized row-tracking columns
excepted (they are not in the schema but belong in the files).

``columns_were_dropped(metadata)`` answers from the schema alone whether any column can have been
dropped: column mapping hands out ids 1..``delta.columnMapping.maxColumnId`` (nested element/key/
value ids included) and never reuses one, so when every id up to the maximum is still in the
schema nothing was dropped, and no footer needs reading. Otherwise ``files_with_dropped_columns``
reads the footers of the candidate files (one small read each, a few threads at a time).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.errors import MaintenanceError, MissingDataFileError
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.model.actions import Metadata
from delta_core.model.schema import (
    NESTED_IDS_KEY,
    PARQUET_FIELD_ID,
    ArrayType,
    DataType,
    MapType,
    StructType,
    schema_to_arrow,
)

# Row tracking keeps row ids and commit versions in hidden file columns these properties name.
from delta_core.model.table_properties import (
    MATERIALIZED_ROW_COMMIT_VERSION_COLUMN,
    MATERIALIZED_ROW_ID_COLUMN,
    TableProperties,
)
from delta_core.storage.base import Storage
from delta_core.write.data_writer import table_schema

MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
FOOTER_THREADS = 8  # footer reads are latency-bound on object stores


def _ids(t: DataType) -> Iterator[int]:
    """Column mapping ids of every field under ``t`` (struct fields and nested element/key/value ids)."""
    if isinstance(t, StructType):
        for f in t.fields:
            if f.field_id is not None:
                yield f.field_id
            nested = f.metadata.get(NESTED_IDS_KEY)
            if isinstance(nested, Mapping):
                yield from (v for v in nested.values() if isinstance(v, int) and not isinstance(v, bool))
            yield from _ids(f.type)
    elif isinstance(t, ArrayType):
        yield from _ids(t.element_type)
    elif isinstance(t, MapType):
        yield from _ids(t.key_type)
        yield from _ids(t.value_type)


def columns_were_dropped(metadata: Metadata) -> bool:
    """Whether files of a column-mapped table may hold a column the schema dropped (conservative:
    true whenever an id up to ``maxColumnId`` is missing, or the property is absent)."""
    properties = TableProperties(metadata.configuration)
    if properties.column_mapping_mode == "none":
        return False  # without column mapping no column can be dropped
    raw = metadata.configuration.get(MAX_COLUMN_ID)
    try:
        max_id = int(raw) if raw is not None else None
    except ValueError:
        max_id = None
    if max_id is None:
        return True
    present = set(_ids(table_schema(metadata)))
    return not present.issuperset(range(1, max_id + 1))


def _field_id(f: pa.Field) -> bytes | None:
    return (f.metadata or {}).get(PARQUET_FIELD_ID)


def _extra_field(file_type: pa.DataType, table_type: pa.DataType) -> str | None:
    """The first field of ``file_type`` the table's ``table_type`` lacks (dotted), else None.
    Fields match by name, case-insensitively as Delta Spark does, or by Parquet field id; a type
    that differs in kind is left alone (it is not a dropped column)."""
    if pa.types.is_struct(file_type) and pa.types.is_struct(table_type):
        by_name = {table_type.field(i).name.lower(): table_type.field(i) for i in range(table_type.num_fields)}
        by_id = {fid: table_type.field(i) for i in range(table_type.num_fields)
                 if (fid := _field_id(table_type.field(i))) is not None}
        for i in range(file_type.num_fields):
            child = file_type.field(i)
            fid = _field_id(child)
            match = by_name.get(child.name.lower()) or (by_id.get(fid) if fid is not None else None)
            if match is None:
                return str(child.name)
            extra = _extra_field(child.type, match.type)
            if extra is not None:
                return f"{child.name}.{extra}"
        return None
    if pa.types.is_map(file_type) and pa.types.is_map(table_type):
        return (_extra_field(file_type.key_type, table_type.key_type)
                or _extra_field(file_type.item_type, table_type.item_type))
    if (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)) and \
            (pa.types.is_list(table_type) or pa.types.is_large_list(table_type)):
        return _extra_field(file_type.value_type, table_type.value_type)
    return None


def dropped_column_in(file_schema: pa.Schema, metadata: Metadata) -> str | None:
    """The physical name (dotted) of a column ``file_schema`` holds that the table of ``metadata``
    has dropped, else None."""
    table = schema_to_arrow(table_schema(metadata), physical=True)  # partition columns too: some writers store them
    keep = {metadata.configuration.get(k) for k in (MATERIALIZED_ROW_ID_COLUMN, MATERIALIZED_ROW_COMMIT_VERSION_COLUMN)}
    fields = [f for f in file_schema if f.name not in keep]
    return _extra_field(pa.struct(fields), pa.struct(list(table)))


def files_with_dropped_columns(
    storage: Storage, metadata: Metadata, paths: Sequence[str], *, threads: int = FOOTER_THREADS,
) -> set[str]:
    """The ``paths`` (as in the log) whose Parquet footer holds a column the table dropped.
    Reads no footer when ``columns_were_dropped`` says none can (``footer_schemas`` raises for a
    missing file or an unreadable footer)."""
    if not paths or not columns_were_dropped(metadata):
        return set()
    schemas = footer_schemas(storage, paths, threads=threads)
    return {p for p, schema in zip(paths, schemas) if dropped_column_in(schema, metadata) is not None}


def footer_schemas(storage: Storage, paths: Sequence[str], *, threads: int = FOOTER_THREADS) -> list[pa.Schema]:
    """The Arrow schema of each data file's Parquet footer (``paths`` as in the log), read a few
    threads at a time. A file missing from storage raises ``MissingDataFileError``, an unreadable
    footer ``MaintenanceError``."""
    if not paths:
        return []

    def schema_of(path: str) -> pa.Schema:
        key = log_path_to_key(path, storage.root)
        try:
            with storage.open_input(key) as fh:
                schema: pa.Schema = pq.ParquetFile(fh).schema_arrow
                return schema
        except FileNotFoundError:
            raise MissingDataFileError(
                f"data file {storage.uri(key)} referenced by the log is missing from storage (deleted outside "
                "the Delta log?). Restore it, or remove it from the table (Delta Spark: FSCK REPAIR TABLE), "
                "then re-run", path=storage.uri(key)) from None
        except pa.ArrowInvalid as exc:
            raise MaintenanceError(
                f"cannot read the Parquet footer of {storage.uri(key)}: {exc}. Nothing was written; restore "
                "the file from a backup or remove it from the table, then re-run", path=storage.uri(key)) from exc

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(paths)))) as pool:
        return list(pool.map(schema_of, paths))
